"""No test reads outside the repository, and no test skips because a file is missing (issue 16).

The guard itself is tests/support/read_guard.py, armed by tests/conftest.py for the whole run; these
tests prove it is armed and that it fails a test reading ../shared, in a real pytest run.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import ROOT, TESTDATA
from tests.support import read_guard

SHARED = ROOT.parent / "shared" / "reference" / "apiserver"


def test_the_guard_sees_reads_of_shared_in_any_form() -> None:
    with read_guard.watch() as seen:
        for read in (
            lambda: (SHARED / "README.md").read_text(),
            lambda: (SHARED / "list-04-clusterroles.json").open("rb").close(),
            lambda: os.listdir(SHARED),  # noqa: PTH208 - the os-level call is audited too
            lambda: os.scandir(SHARED).close(),
            lambda: list(SHARED.glob("*.json")),  # scans only if ../shared exists
            lambda: os.close(os.open(SHARED / "discovery-01-version.json", os.O_RDONLY)),
        ):
            with contextlib.suppress(OSError):  # a plain clone has no ../shared
                read()  # the attempt is what counts
    assert {v.event for v in seen} == {"open", "os.listdir", "os.scandir"}
    assert all(v.path.startswith(str(ROOT.parent / "shared")) for v in seen), seen
    assert len(seen) >= 5


def test_the_guard_allows_the_repo_tmp_dirs_and_python(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("x")
    with read_guard.watch() as seen:
        (TESTDATA / "apiserver" / "discovery-01-version.json").read_bytes()
        (tmp_path / "x.txt").read_text()
        Path(os.__file__).read_bytes()
        os.listdir(ROOT / "tests")  # noqa: PTH208
    assert seen == []
    assert read_guard.outside(str(Path.home() / ".kube" / "config"))
    assert read_guard.outside(str(ROOT.parent / "shared"))


def test_skips_for_a_missing_file_fail_other_skips_stay(tmp_path: Path) -> None:
    """A real pytest run with this suite's conftest: reading ../shared fails the test, a skip for
    a missing fixture fails, a skip for another reason stays a skip, a read outside any test
    (at collection) fails the run."""
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        textwrap.dedent(
            f"""
            from pathlib import Path

            import pytest

            SHARED = Path({str(SHARED)!r})
            try:
                (SHARED / "discovery-02-api.json").read_text()  # at collection
            except OSError:
                pass


            def test_reads_shared():
                try:
                    (SHARED / "README.md").read_text()
                except OSError:
                    pass


            def test_reads_testdata():
                assert Path({str(TESTDATA / "apiserver" / "README.md")!r}).read_text()


            @pytest.mark.skipif(not SHARED.is_dir() or 1, reason="reference recordings not found")
            def test_skips_for_a_file():
                pass


            def test_skips_for_a_platform():
                pytest.skip("needs a linux x86_64 host")
            """
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider",
         "-p", "no:randomly", "--rootdir", str(tmp_path), "-o", "addopts=-rA", str(probe)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    summary = {
        (line.split()[0], line.rsplit("::", 1)[-1].split(" - ", 1)[0])  # CI=true: untruncated
        for line in out.splitlines()
        if "test_probe.py::" in line and line.split()[0] in ("PASSED", "ERROR", "FAILED")
    }
    assert summary == {
        ("PASSED", "test_reads_shared"),  # the call passed, the guard fails it at teardown:
        ("ERROR", "test_reads_shared"),
        ("PASSED", "test_reads_testdata"),
        ("ERROR", "test_skips_for_a_file"),  # skipif runs at setup: a setup error
    }, out
    assert f"tests/support/read_guard.py): open {SHARED / 'README.md'}" in out
    assert "skipped for a missing file (Skipped: reference recordings not found)" in out
    assert any(line.startswith("SKIPPED") and "linux x86_64" in line for line in out.splitlines())
    assert f"open {SHARED / 'discovery-02-api.json'}" in out  # the collection-time read


def test_recordings_readme_names_every_file() -> None:
    folder = TESTDATA / "apiserver"
    readme = (folder / "README.md").read_text(encoding="utf-8")
    files = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name != "README.md")
    assert files
    assert [name for name in files if f"`{name}`" not in readme] == []
