"""testdata/make_repo.py builds the same repository, with the same SHAs, on every machine."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import TESTDATA, load_make_repo

INCIDENT = TESTDATA / "incident"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git on PATH")


make_repo = load_make_repo()


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)


@pytest.fixture
def src(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    _write(root / "01-a" / "README.md", "one\n")
    _write(root / "01-a" / "deep" / "dir" / "x.yaml", "x: 1\n", mode=0o600)
    _write(root / "02-b" / "README.md", "two\n")
    _write(root / "02-b" / "run.sh", "#!/bin/sh\necho hi\n", mode=0o750)
    _write(
        root / "commits.yaml",
        "- {dir: 01-a, message: first, author: A One <a@example.com>,\n"
        "   date: '2026-11-20T09:00:00Z'}\n"
        "- {dir: 02-b, message: second, author: B Two <b@example.com>,\n"
        "   date: '2026-11-21T10:30:00+02:00'}\n",
    )
    return root


def _tree_at(repo: Path, sha: str) -> dict[str, tuple[str, bytes]]:
    """path -> (git mode, content) of every blob at ``sha``."""
    tree = {}
    for line in _git(repo, "ls-tree", "-r", sha).splitlines():
        meta, path = line.split("\t", 1)
        mode, _kind, blob = meta.split()
        content = subprocess.run(
            ["git", "-C", str(repo), "cat-file", "blob", blob], check=True, capture_output=True
        ).stdout
        tree[path] = (mode, content)
    return tree


def _tree_of(folder: Path) -> dict[str, tuple[str, bytes]]:
    return {
        path.relative_to(folder).as_posix(): (
            "100755" if path.stat().st_mode & 0o111 else "100644",
            path.read_bytes(),
        )
        for path in folder.rglob("*")
        if path.is_file()
    }


def test_same_source_gives_same_shas(src: Path, tmp_path: Path) -> None:
    first = make_repo.build_repo(src, tmp_path / "one")
    second = make_repo.build_repo(src, tmp_path / "two")
    assert first == second
    assert len(first) == 2
    assert len(set(first)) == 2


def test_tree_at_each_commit_matches_its_folder(src: Path, tmp_path: Path) -> None:
    dest = tmp_path / "repo"
    shas = make_repo.build_repo(src, dest)
    for sha, folder in zip(shas, ["01-a", "02-b"], strict=True):
        assert _tree_at(dest, sha) == _tree_of(src / folder)
    assert _git(dest, "rev-list", "--reverse", "main").split() == shas
    assert _git(dest, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    log = _git(dest, "log", "--reverse", "--format=%an <%ae>|%aI|%cn <%ce>|%cI|%s", "main")
    one = "A One <a@example.com>"
    two = "B Two <b@example.com>"
    assert log.splitlines() == [
        f"{one}|2026-11-20T09:00:00+00:00|{one}|2026-11-20T09:00:00+00:00|first",
        f"{two}|2026-11-21T10:30:00+02:00|{two}|2026-11-21T10:30:00+02:00|second",
    ]
    assert _git(dest, "status", "--porcelain") == ""


def test_empty_destination_is_accepted(src: Path, tmp_path: Path) -> None:
    dest = tmp_path / "empty"
    dest.mkdir()
    assert make_repo.build_repo(src, dest) == make_repo.build_repo(src, tmp_path / "fresh")


def test_refuses_non_empty_destination(
    src: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "busy"
    _write(dest / "keep.txt", "mine\n")
    with pytest.raises(ValueError, match="not an empty directory"):
        make_repo.build_repo(src, dest)
    assert make_repo.main([str(src), str(dest)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "not an empty directory" in err
    assert sorted(p.name for p in dest.iterdir()) == ["keep.txt"]


def test_main_prints_head_sha(
    src: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert make_repo.main([str(src), str(tmp_path / "repo")]) == 0
    head = _git(tmp_path / "repo", "rev-parse", "HEAD").strip()
    assert capsys.readouterr().out == head + "\n"


def test_incident_snapshot_pins_the_built_shas(tmp_path: Path) -> None:
    """The Application in the incident snapshot must name the SHAs that repo-src really builds."""
    initial, head = make_repo.build_repo(INCIDENT / "repo-src", tmp_path / "guestbook-gitops")
    snapshot = yaml.safe_load((INCIDENT / "snapshot.yaml").read_text(encoding="utf-8"))
    (app,) = [item for item in snapshot["items"] if item["kind"] == "Application"]
    status = app["status"]
    assert status["sync"]["revision"] == head
    assert [entry["revision"] for entry in status["history"]] == [initial, head]
    assert status["operationState"]["operation"]["sync"]["revision"] == head
    assert status["operationState"]["syncResult"]["revision"] == head
