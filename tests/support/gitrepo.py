"""A real git repository in a tmp dir, written commit by commit (tests of `preview`).

Author, committer and dates are fixed and no user or system git config is read, so the same
files make the same commits on every machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

_ENV = {
    "GIT_AUTHOR_NAME": "Alice Example",
    "GIT_AUTHOR_EMAIL": "alice@example.com",
    "GIT_COMMITTER_NAME": "Alice Example",
    "GIT_COMMITTER_EMAIL": "alice@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
URL = "https://git.example.com/org/deploy.git"


class Repo:
    """A clone of URL (its origin) on branch main."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._day = 0
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("remote", "add", "origin", URL)

    def git(self, *args: str) -> str:
        date = f"2026-01-{self._day + 1:02d}T10:00:00+00:00"
        env = {**os.environ, **_ENV, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        proc = subprocess.run(
            ["git", "-C", str(self.path), *args],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        return proc.stdout.strip()

    def write(self, files: dict[str, str | None]) -> None:
        """Write (None: delete) files, relative to the top."""
        for rel, text in files.items():
            target = self.path / rel
            if text is None:
                if target.is_dir():
                    shutil.rmtree(target)
                else:
                    target.unlink(missing_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")

    def commit(self, files: dict[str, str | None], message: str = "change") -> str:
        """Write `files`, commit everything, and return the commit's sha."""
        self.write(files)
        self._day += 1
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")


def application(
    name: str,
    path: str,
    *,
    namespace: str = "argocd",
    dest: str = "prod",
    extra_source: str = "",
    repo_url: str = URL,
) -> str:
    """An Application manifest of one source (`extra_source`: YAML lines added to it)."""
    lines = [
        "apiVersion: argoproj.io/v1alpha1",
        "kind: Application",
        "metadata:",
        f"  name: {name}",
        f"  namespace: {namespace}",
        "spec:",
        "  project: default",
        "  destination:",
        "    server: https://kubernetes.default.svc",
        f"    namespace: {dest}",
        "  source:",
        f"    repoURL: {repo_url}",
        f"    path: {path}",
        "    targetRevision: main",
    ]
    lines += [f"    {line}" for line in extra_source.splitlines() if line]
    return "\n".join(lines) + "\n"


def configmap(name: str, **data: str) -> str:
    body = "".join(f"  {k}: {v!r}\n" for k, v in data.items())
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n{body}"
