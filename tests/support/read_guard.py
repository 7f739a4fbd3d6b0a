"""Tests read nothing outside the repository (issue 16): a plain clone is the whole suite.

An audit hook (``sys.addaudithook``, installed when tests/conftest.py is imported, so collection is
covered too) sees every ``open`` (``open``, ``Path.read_text``, ``os.open``, in any mode) and
every directory listing (``os.listdir``, ``os.scandir``: ``glob``, ``Path.iterdir``) this pytest
process makes, in any thread. A path is fine when it lies in the repository, a temporary
directory, the Python installation (venv and base) or a system directory; anything else (the
team's ``../shared`` above all, also ``$HOME``) is a violation. tests/conftest.py fails the test
during which it happened; `fail_session` fails the run for those outside a tests/ test (plugins/,
collection). Child processes are not audited: tests start the CLI in-process.

Checking a path's existence (``os.stat``: ``Path.exists``, ``is_dir``) raises no audit event, so
a test that *skips* when a fixture is missing would go unseen: `skip_for_missing_file` turns
such a skip into a failure.
"""

# ruff: noqa: PTH100 - the hook runs on every file open: plain strings, no Path objects

from __future__ import annotations

import os
import re
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Never read by a test, whatever else is allowed (the team's reference material: only explicit
#: targets such as `make parity` may use it).
FORBIDDEN = (str(ROOT.parent / "shared"),)
SYSTEM = (
    "/usr",
    "/etc",
    "/dev",
    "/proc",
    "/sys",
    "/lib",
    "/lib32",
    "/lib64",
    "/bin",
    "/sbin",
    "/run",
)
EVENTS = frozenset({"open", "os.listdir", "os.scandir"})
#: Skip reasons that mean "a file is missing": the fixture belongs in the repository instead.
MISSING_FILE = re.compile(
    r"not (?:found|present)|is missing|missing (?:file|fixture)|no such file|does not exist",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Violation:
    test: str
    event: str
    path: str

    def __str__(self) -> str:
        return f"{self.test}: {self.event} {self.path}"


def _roots() -> set[str]:
    roots = {str(ROOT), tempfile.gettempdir(), *SYSTEM}
    roots |= {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots |= {p for p in sysconfig.get_paths().values() if p}
    roots |= {os.path.realpath(r) for r in roots}
    return roots


_allowed: set[str] = _roots()
_lock = threading.Lock()
_watchers: list[list[Violation]] = []  # innermost last: a violation goes to the innermost one
_unclaimed: list[Violation] = []  # seen while no test watched (plugins/ tests, collection)
_BETWEEN = "(collection, or between tests)"
_current = _BETWEEN
_installed = False


def _inside(path: str, roots: set[str] | tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def outside(path: str) -> bool:
    """Is reading `path` (absolute or relative to the working directory) a violation?"""
    absolute = os.path.abspath(path)
    if _inside(absolute, FORBIDDEN):
        return True
    if _inside(absolute, _allowed):
        return False
    real = os.path.realpath(absolute)  # only now: imports open thousands of files
    return _inside(real, FORBIDDEN) or not _inside(real, _allowed)


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event not in EVENTS:
        return
    path = args[0] if args else None
    if path is None and event != "open":
        path = "."
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str) or not outside(path):
        return  # file descriptors and allowed paths
    violation = Violation(_current, event, os.path.abspath(path))
    with _lock:
        (_watchers[-1] if _watchers else _unclaimed).append(violation)


def install() -> None:
    """Start auditing this process (once; an audit hook cannot be removed)."""
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True


def allow(path: Path | str) -> None:
    """Also allow `path` (pytest's --basetemp when it is not under the system tmp dir)."""
    _allowed.add(os.path.abspath(path))
    _allowed.add(os.path.realpath(path))


def label(test: str | None) -> None:
    """Name the test running now in violation messages (None: between tests)."""
    global _current
    _current = test or _BETWEEN


@contextmanager
def watch() -> Iterator[list[Violation]]:
    """Collect the violations made inside the block; they are nobody else's."""
    seen: list[Violation] = []
    with _lock:
        _watchers.append(seen)
    try:
        yield seen
    finally:
        with _lock:
            _watchers.remove(seen)


def describe(violations: list[Violation]) -> str:
    paths = sorted({f"{v.event} {v.path}" for v in violations})
    return (
        "the test read outside the repository (copy the fixture into testdata/; "
        "tests/support/read_guard.py): " + "; ".join(paths[:10])
    )


def fail_session(session: pytest.Session) -> None:
    """At the end of the run: fail it if something outside a watched test read outside."""
    with _lock:
        found, _unclaimed[:] = list(_unclaimed), []
    if not found:
        return
    sys.stderr.write("\nread_guard: reads outside the repository (tests/support/read_guard.py):\n")
    for violation in sorted(set(found), key=str)[:20]:
        sys.stderr.write(f"  {violation}\n")
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def skip_for_missing_file(report: pytest.TestReport) -> None:
    """Turn a skip whose reason says a file is missing into a failure (fixtures live in the
    repository; a missing one fails). Other skips (an optional platform, a tool) stay."""
    if not report.skipped or hasattr(report, "wasxfail") or not isinstance(report.longrepr, tuple):
        return
    reason = str(report.longrepr[2])
    if MISSING_FILE.search(reason):
        report.outcome = "failed"
        report.longrepr = (
            f"skipped for a missing file ({reason}): a missing fixture fails; copy it into "
            "testdata/ (tests/support/read_guard.py)"
        )
