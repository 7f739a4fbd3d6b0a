from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.sources import git


def run(repo: Path, *args: str, date: str = "2024-01-01T10:00:00+00:00") -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Alice Example",
        "GIT_AUTHOR_EMAIL": "alice@example.com",
        "GIT_COMMITTER_NAME": "Alice Example",
        "GIT_COMMITTER_EMAIL": "alice@example.com",
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True
    )
    return proc.stdout.strip()


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    run(root, "init", "-q", "-b", "main")
    write(root, "app/cm.yaml", "kind: ConfigMap\n# v1\n")
    write(root, "README.md", "hello\n")
    run(root, "add", "-A")
    run(root, "commit", "-q", "-m", "first")
    run(root, "tag", "v1")
    write(root, "app/cm.yaml", "kind: ConfigMap\n# v2\n")
    write(root, "tools/run.sh", "#!/bin/sh\necho hi\n")
    (root / "tools/run.sh").chmod(0o755)
    (root / "app/link.yaml").symlink_to("cm.yaml")
    write(root, ".gitattributes", "README.md export-ignore\n*.yaml filter=nope\n")
    run(root, "add", "-A")
    run(root, "commit", "-q", "-m", "second: bump cm", date="2024-02-01T10:00:00+00:00")
    run(root, "branch", "feature", "v1")
    return root


def test_resolve_revision_forms(repo: Path) -> None:
    head = run(repo, "rev-parse", "HEAD")
    first = run(repo, "rev-parse", "v1")
    assert git.resolve_revision(repo, "HEAD") == head
    assert git.resolve_revision(repo, "main") == head
    assert git.resolve_revision(repo, "") == head
    assert git.resolve_revision(repo, "v1") == first
    assert git.resolve_revision(repo, "feature") == first
    assert git.resolve_revision(repo, first[:8]) == first
    assert git.resolve_revision(repo / "app", first) == first  # a subdirectory works too


def test_resolve_revision_prefers_the_remote_branch(repo: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    run(tmp_path, "clone", "-q", str(repo), str(clone))
    remote_head = run(clone, "rev-parse", "origin/main")
    run(clone, "reset", "-q", "--hard", "v1")  # the local branch is behind origin/main
    assert git.resolve_revision(clone, "main") == run(repo, "rev-parse", "v1")
    assert git.resolve_revision(clone, "main", prefer_remote=True) == remote_head


def test_missing_revision(repo: Path) -> None:
    with pytest.raises(SourceError) as info:
        git.resolve_revision(repo, "release-9")
    assert info.value.message == f"revision release-9 is not in {repo}"
    assert info.value.hint == f"run: git -C {repo} fetch origin release-9"


def test_option_like_revision_is_refused(repo: Path) -> None:
    with pytest.raises(SourceError, match="not a valid git revision"):
        git.resolve_revision(repo, "--output=/tmp/x")


def test_not_a_git_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(SourceError, match=rf"^--repo-root {plain}: not a git repository") as info:
        git.resolve_revision(plain, "HEAD")
    assert info.value.hint
    with pytest.raises(SourceError, match="no such directory"):
        git.toplevel(tmp_path / "missing")


def test_export_tree(repo: Path, tmp_path: Path) -> None:
    dest = tmp_path / "export"
    tree = git.export_tree(repo, "HEAD", dest)
    assert tree == run(repo, "rev-parse", "HEAD^{tree}")
    assert (dest / "app/cm.yaml").read_text() == "kind: ConfigMap\n# v2\n"
    assert (dest / "README.md").exists()  # export-ignore does not apply
    assert os.access(dest / "tools/run.sh", os.X_OK)
    assert (dest / "app/link.yaml").is_symlink()
    assert (dest / "app/link.yaml").read_text() == "kind: ConfigMap\n# v2\n"
    assert not (dest / ".git").exists()


def test_export_old_revision_leaves_work_tree_and_index_alone(repo: Path, tmp_path: Path) -> None:
    write(repo, "app/cm.yaml", "kind: ConfigMap\n# staged\n")
    run(repo, "add", "app/cm.yaml")
    write(repo, "app/cm.yaml", "kind: ConfigMap\n# unstaged\n")
    before = run(repo, "status", "--porcelain")
    git.export_tree(repo, "v1", tmp_path / "old")
    assert (tmp_path / "old/app/cm.yaml").read_text() == "kind: ConfigMap\n# v1\n"
    assert not (tmp_path / "old/tools").exists()
    assert run(repo, "status", "--porcelain") == before
    assert (repo / "app/cm.yaml").read_text() == "kind: ConfigMap\n# unstaged\n"
    assert run(repo, "diff", "--cached", "--name-only") == "app/cm.yaml"


def test_export_refuses_a_symlink_out_of_the_tree(repo: Path, tmp_path: Path) -> None:
    (repo / "app/passwd").symlink_to("../../../../etc/passwd")
    run(repo, "add", "-A")
    run(repo, "commit", "-q", "-m", "evil")
    with pytest.raises(SourceError, match=r"app/passwd: symlink to .* points outside"):
        git.export_tree(repo, "HEAD", tmp_path / "evil")


def test_export_into_a_non_empty_directory_is_refused(repo: Path, tmp_path: Path) -> None:
    dest = tmp_path / "busy"
    dest.mkdir()
    (dest / "x").write_text("x")
    with pytest.raises(SourceError, match="not empty"):
        git.export_tree(repo, "HEAD", dest)


def test_last_commit_touching(repo: Path) -> None:
    info = git.last_commit_touching(repo, "HEAD", "app/cm.yaml")
    assert info == git.CommitInfo(
        sha=run(repo, "rev-parse", "HEAD"),
        author="Alice Example <alice@example.com>",
        date="2024-02-01T10:00:00+00:00",
        subject="second: bump cm",
    )
    old = git.last_commit_touching(repo, "v1", "app")
    assert old is not None
    assert old.subject == "first"
    assert git.last_commit_touching(repo, "HEAD", "no/such/file.yaml") is None


def test_history_is_kept_per_commit(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last commit touching a file, as of a commit, is read back by a later run (a new
    process: the in-memory copy is dropped) without running git; the working tree is not kept."""
    from kubectl_gitdrift import engine
    from kubectl_gitdrift.run import workflow
    from kubectl_gitdrift.sources import cache as source_cache
    from kubectl_gitdrift.sources import render as source_render

    head = run(repo, "rev-parse", "HEAD")

    def callbacks(revision: str) -> engine.Options:
        rendered = source_render.Rendered((), revision, repo, "app")
        store = source_cache.HistoryCache(tmp_path / "cache")
        return workflow.with_source_callbacks(engine.Options(), rendered, repo, store)

    history = callbacks(head).history
    assert history is not None
    first = history("app/cm.yaml")
    assert first is not None
    assert first.subject == "second: bump cm"
    assert history("no/such/file.yaml") is None
    source_cache.HistoryCache(tmp_path / "cache").flush()  # as run_all does once all apps ran

    monkeypatch.setattr(source_cache, "_histories", {})
    calls: list[str] = []
    real = git.commit_touching
    monkeypatch.setattr(
        git,
        "commit_touching",
        lambda *a: calls.append(a[-1]) or real(*a),  # type: ignore[func-returns-value]
    )
    again = callbacks(head).history
    assert again is not None
    assert again("app/cm.yaml") == first
    assert again("no/such/file.yaml") is None
    assert calls == []
    working = callbacks(source_render.WORKING_TREE).history
    assert working is not None
    assert working("app/cm.yaml") == first
    assert calls == ["app/cm.yaml"]


def _partial_clone(repo: Path, tmp_path: Path) -> Path:
    """A `--filter=blob:none --no-checkout` clone of `repo` (no blobs yet), whose promisor
    remote is then gone."""
    run(repo, "config", "uploadpack.allowFilter", "true")
    served = tmp_path / "served"
    repo.rename(served)
    clone = tmp_path / "clone"
    run(tmp_path, "clone", "-q", "--filter=blob:none", "--no-checkout", served.as_uri(), "clone")
    served.rename(tmp_path / "gone")
    return clone


def test_export_names_a_blob_a_partial_clone_cannot_fetch(repo: Path, tmp_path: Path) -> None:
    clone = _partial_clone(repo, tmp_path)
    with pytest.raises(SourceError) as info:
        git.export_tree(clone, "main", tmp_path / "out")
    message = info.value.message
    assert message.startswith(".gitattributes at main: blob ")  # the first file
    assert "is not in the clone: " in message
    assert "a partial clone (--filter=blob:none) fetches its files from the promisor remote " in (
        message
    )
    assert "does not appear to be a git repository" in message  # git's own reason
    assert "unexpected output" not in message
    assert f"git -C {clone} show " in (info.value.hint or "")  # the hint names the clone
    assert "clone without --filter" in (info.value.hint or "")


def test_tree_size_of_a_partial_clone_names_the_blob_it_cannot_fetch(
    repo: Path, tmp_path: Path
) -> None:
    # `ls-tree -l` reads each blob's size: before the export, the render cache asks it; its
    # "could not fetch <id> from promisor remote" becomes the file's own error
    clone = _partial_clone(repo, tmp_path)
    with pytest.raises(SourceError) as info:
        git.tree_bytes(clone, git.resolve_revision(clone, "main"))
    message = info.value.message
    assert message.startswith(".gitattributes at ")
    assert "is not in the clone: a partial clone (--filter=blob:none) " in message
    assert "does not appear to be a git repository" in message
    assert "promisor remote" in message
    assert "could not fetch" not in message


def test_a_fetch_that_dies_before_naming_the_blob_still_names_the_file(
    repo: Path, tmp_path: Path
) -> None:
    # git's failed lazy fetch can end it by SIGPIPE before "could not fetch <id>" is written
    # (seen under load): the clone is then asked which blobs it lacks, fetching none
    clone = _partial_clone(repo, tmp_path)
    head = git.resolve_revision(clone, "main")
    error = git._unreadable_tree(clone, head, "fatal: '/gone' does not appear to be a git repo\n")
    assert error.message.startswith(".gitattributes at ")
    assert "a partial clone (--filter=blob:none) fetches its files" in error.message
    assert "does not appear to be a git repo" in error.message


def test_export_of_a_mirror_without_url_says_run_online(repo: Path, tmp_path: Path) -> None:
    # gitdrift's own mirrors keep no URL (sources/fetch.py): a blob they lack needs a fetch
    clone = _partial_clone(repo, tmp_path)
    run(clone, "config", "--unset", "remote.origin.url")
    with pytest.raises(SourceError) as info:
        git.export_tree(clone, "main", tmp_path / "out")
    assert "without a URL for its promisor remote origin" in info.value.message
    assert info.value.hint == (
        "run without --offline: gitdrift fetches the files of the commit it renders"
    )
