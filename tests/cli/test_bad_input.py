"""Hostile and broken input (testdata/bad/<case>/): a clear one-line error, the right exit code,
no traceback, nothing on stdout and nothing written; or, for input that is bad but not fatal
(a malformed tracking-id, a garbage audit log), a report that says so.

Adding a case is adding a directory (testdata/bad/_base/README.md describes expected.yaml).
Inputs that are large, binary or need a real symlink are generated here by a named `setup`.
"""

from __future__ import annotations

import gzip
import random
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import ExitCode
from tests.conftest import TESTDATA, Result

BAD = TESTDATA / "bad"
BASE = BAD / "_base"
CASES = sorted(p for p in BAD.iterdir() if p.is_dir() and not p.name.startswith("_"))
_GIT = ("git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false")


def _git(repo: Path, *args: str) -> None:
    subprocess.run([*_GIT, "-C", str(repo), *args], check=True, capture_output=True)


def make_repo(src: Path, dest: Path) -> Path:
    """A git repository at `dest` holding the files of `src`, in one commit."""
    shutil.copytree(src, dest, symlinks=True)
    _git(dest, "init", "-q", "-b", "main")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "init")
    return dest


# --------------------------------------------------------------------------- setups


def _padded_yaml(size: int) -> bytes:
    """A valid ConfigMap followed by a comment, `size` bytes in all."""
    head = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n# "
    return head + b"x" * (size - len(head))


def oversized_snapshot(case: Path, tmp: Path, repo: Path) -> None:
    (tmp / "big.yaml").write_bytes(_padded_yaml(yamlio.MAX_BYTES + 1))


def gzip_bomb(case: Path, tmp: Path, repo: Path) -> None:
    """A few hundred KiB that expand past yamlio.MAX_BYTES."""
    with gzip.open(tmp / "bomb.yaml.gz", "wb", compresslevel=1) as handle:
        handle.write(_padded_yaml(yamlio.MAX_BYTES + 1))


def truncated_gzip(case: Path, tmp: Path, repo: Path) -> None:
    data = gzip.compress((BASE / "snapshot.yaml").read_bytes(), mtime=0)
    (tmp / "cut.yaml.gz").write_bytes(data[: len(data) // 2])


def binary_junk(case: Path, tmp: Path, repo: Path) -> None:
    (tmp / "junk.yaml").write_bytes(random.Random(9).randbytes(4096))


def oversized_manifest(case: Path, tmp: Path, repo: Path) -> None:
    (repo / "app" / "big.yaml").write_bytes(_padded_yaml(yamlio.MAX_BYTES + 1))


def symlink_escape(case: Path, tmp: Path, repo: Path) -> None:
    """app/passwd.yaml -> ../../../../../../etc/passwd, committed."""
    (repo / "app" / "passwd.yaml").symlink_to("../../../../../../../../etc/passwd")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "symlink out of the repository")


def symlink_escape_absolute(case: Path, tmp: Path, repo: Path) -> None:
    """app/hosts.yaml -> /etc/hosts, in the working tree only (read with --local)."""
    (repo / "app" / "hosts.yaml").symlink_to("/etc/hosts")


SETUPS: dict[str, Callable[[Path, Path, Path], None]] = {
    "oversized-snapshot": oversized_snapshot,
    "gzip-bomb": gzip_bomb,
    "truncated-gzip": truncated_gzip,
    "binary-junk": binary_junk,
    "oversized-manifest": oversized_manifest,
    "symlink-escape": symlink_escape,
    "symlink-escape-absolute": symlink_escape_absolute,
}


# --------------------------------------------------------------------------- the runner


def _expand(value: str, places: dict[str, Path]) -> str:
    for name, path in places.items():
        value = value.replace("{" + name + "}", str(path))
    return value


def prepare(case: Path, tmp: Path) -> tuple[dict[str, Any], list[str]]:
    spec: dict[str, Any] = yaml.safe_load((case / "expected.yaml").read_text())
    repo = make_repo(case / "repo" if (case / "repo").is_dir() else BASE / "repo", tmp / "repo")
    if spec.get("setup"):
        SETUPS[spec["setup"]](case, tmp, repo)
    places = {"case": case, "base": BASE, "tmp": tmp, "repo": repo}
    args = [_expand(str(a), places) for a in spec["args"]]
    spec["absent"] = [_expand(str(a), places) for a in spec.get("absent", ())]
    if args[0] != "snapshot":
        args.append("--no-entry-points")
    return spec, args


def assert_one_line_error(result: Result, expected: str) -> None:
    assert result.stdout == "", "a failed run printed a report"
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines, "no error message"
    assert lines[0].startswith("error: "), result.stderr
    assert expected in lines[0], f"{expected!r} not in {lines[0]!r}"
    assert len(lines) <= 2, f"more than error + hint:\n{result.stderr}"
    if len(lines) == 2:
        assert lines[1].startswith("  hint: "), result.stderr
    assert len(lines[0]) < 600, "the error line quotes too much input"


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_bad_input(case: Path, tmp_path: Path, run_cli: Callable[..., Result]) -> None:
    spec, args = prepare(case, tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = run_cli(args)
    assert result.exit_code == spec["exit_code"], result.stderr
    if spec["exit_code"] >= ExitCode.USAGE_ERROR:
        assert_one_line_error(result, spec["stderr"])
    else:
        assert "Traceback" not in result.stderr
        assert spec.get("stderr", "") in result.stderr
        assert spec["stdout"] in result.stdout
    for path in spec["absent"]:
        assert not Path(path).exists(), f"{path} was written"
    after = sorted(p.name for p in tmp_path.iterdir())
    assert after == before, "a failed run left files behind"


def test_every_case_is_well_formed() -> None:
    assert len(CASES) >= 25
    for case in CASES:
        spec = yaml.safe_load((case / "expected.yaml").read_text())
        assert set(spec) <= {"description", "args", "exit_code", "stderr", "stdout", "setup",
                             "absent"}, case.name  # fmt: skip
        assert spec["description"], case.name
        assert spec["args"], case.name
        assert spec.get("setup") in (None, *SETUPS), case.name
        assert ("stdout" in spec) == (spec["exit_code"] < ExitCode.USAGE_ERROR), case.name


def test_debug_shows_the_traceback(tmp_path: Path, run_cli: Callable[..., Result]) -> None:
    spec, args = prepare(BAD / "snapshot-alias-bomb", tmp_path)
    plain = run_cli(args)
    debug = run_cli([*args, "--debug"])
    assert debug.exit_code == plain.exit_code == spec["exit_code"]
    assert "Traceback (most recent call last)" in debug.stderr
    assert "SnapshotError" in debug.stderr
    assert debug.stderr.rstrip().endswith(plain.stderr.rstrip())  # then the same error lines


def test_debug_reraises_a_plugin_crash(tmp_path: Path, run_cli: Callable[..., Result]) -> None:
    _spec, args = prepare(BAD / "plugin-raises", tmp_path)
    result = run_cli([*args, "--debug"])
    assert result.exit_code == ExitCode.PLUGIN_ERROR
    assert "Traceback (most recent call last)" in result.stderr
    assert "ZeroDivisionError" in result.stderr
