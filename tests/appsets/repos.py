"""Real git repositories for the ApplicationSet tests: a tree of files committed in a tmp dir,
and the `GitRepo` over it that maps every repoURL to that commit (or to the commit a
revision names)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from kubectl_gitdrift.run.appset_inputs import GitRepo
from kubectl_gitdrift.sources import git

_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "A",
    "GIT_AUTHOR_EMAIL": "a@example.com",
    "GIT_COMMITTER_NAME": "A",
    "GIT_COMMITTER_EMAIL": "a@example.com",
    "GIT_AUTHOR_DATE": "2026-11-20T09:00:00Z",
    "GIT_COMMITTER_DATE": "2026-11-20T09:00:00Z",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], env=_ENV, check=True, capture_output=True, text=True
    )
    return proc.stdout.strip()


def commit(repo: Path, files: Mapping[str, str | bytes], message: str = "x") -> str:
    """Write `files` (relative path -> content) into `repo` (made a repository first if it is
    none), commit everything, and return the commit's sha."""
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        _git(repo, "init", "-q", "-b", "main")
    for rel, content in files.items():
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def symlink(repo: Path, rel: str, target: str) -> None:
    link = repo / rel
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


def git_repo(tmp_path: Path, files: Mapping[str, str | bytes]) -> Path:
    """A repository at tmp_path/repo with `files` in one commit on main."""
    repo = tmp_path / "repo"
    commit(repo, files)
    return repo


def repo_of(repo: Path) -> GitRepo:
    """`GitRepo` reading `repo` for every repoURL, each revision resolved in it."""
    return GitRepo(lambda url, revision: (repo, git.resolve_revision(repo, revision)))
