"""Turn a scenario's plain-folder git history into a real git repository, deterministically.

Usage: ``python testdata/make_repo.py SRC DEST``

``SRC/commits.yaml`` lists the commits, oldest first::

    - dir: 01-initial
      message: "guestbook: initial base and prod overlay"
      author: "Sam Platform <sam@example.com>"
      date: "2026-11-23T09:00:00Z"

``SRC/<dir>/`` holds the *full* tree of that commit. Author and committer, dates, file modes
(0644, or 0755 when the source file has any exec bit), branch (``main``), object format (SHA-1)
and configuration are all pinned, and no user or system git config, hooks or templates are read,
so the commit SHAs are identical on every machine.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import yaml

_AUTHOR = re.compile(r"^\s*(?P<name>[^<>]+?)\s*<(?P<email>[^<>\s]+)>\s*$")
_GIT_CONFIG = (
    "-c", "user.useConfigOnly=false",
    "-c", "commit.gpgsign=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.autocrlf=false",
    "-c", "core.fileMode=true",
    "-c", "core.symlinks=true",
)  # fmt: skip


@dataclass(frozen=True)
class Commit:
    dir: str
    message: str
    name: str
    email: str
    date: str  # git's internal format: "<unix seconds> <+hhmm>"


def _git_date(value: object) -> str:
    """ISO 8601 (``2026-11-20T09:00:00Z``) -> git's ``"<epoch> +0000"``; a timezone is required."""
    if isinstance(value, datetime):
        moment = value
    else:
        moment = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    offset = moment.utcoffset()
    if offset is None:
        raise ValueError(f"date {value!r} has no timezone")
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    epoch = int(moment.astimezone(timezone.utc).timestamp())
    return f"{epoch} {sign}{abs(minutes) // 60:02d}{abs(minutes) % 60:02d}"


def load_commits(src: Path) -> list[Commit]:
    """Read and check ``src/commits.yaml``."""
    entries = yaml.safe_load((src / "commits.yaml").read_text(encoding="utf-8"))
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{src / 'commits.yaml'}: expected a non-empty list of commits")
    commits = []
    for index, entry in enumerate(entries):
        where = f"{src / 'commits.yaml'}: commit {index}"
        if not isinstance(entry, dict) or not {"dir", "message", "author", "date"} <= entry.keys():
            raise ValueError(f"{where}: needs dir, message, author and date")
        author = _AUTHOR.match(str(entry["author"]))
        if author is None:
            raise ValueError(f"{where}: author must look like 'Name <email>'")
        tree = src / str(entry["dir"])
        if not tree.is_dir() or tree.resolve().parent != src.resolve():
            raise ValueError(f"{where}: {entry['dir']!r} is not a folder directly inside {src}")
        commits.append(
            Commit(
                dir=str(entry["dir"]),
                message=str(entry["message"]),
                name=author["name"],
                email=author["email"],
                date=_git_date(entry["date"]),
            )
        )
    return commits


def _replace_work_tree(tree: Path, dest: Path) -> None:
    """Make ``dest`` (minus ``.git``) an exact copy of ``tree``, with normalised modes."""
    for child in dest.iterdir():
        if child.name == ".git":
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    for source in sorted(tree.rglob("*")):
        target = dest / source.relative_to(tree)
        if source.name == ".git":
            raise ValueError(f"{source}: a commit tree must not contain .git")
        if source.is_symlink():
            target.symlink_to(source.readlink())
        elif source.is_dir():
            target.mkdir()
        else:
            target.write_bytes(source.read_bytes())
            target.chmod(0o755 if source.stat().st_mode & 0o111 else 0o644)


def build_repo(src: Path, dest: Path) -> list[str]:
    """Build the repository described by ``src`` in ``dest``; return commit SHAs, oldest first."""
    src, dest = Path(src), Path(dest)
    commits = load_commits(src)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ValueError(f"destination {dest} exists and is not an empty directory")
    dest.mkdir(parents=True, exist_ok=True)

    base_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    base_env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, LC_ALL="C", TZ="UTC")

    def git(*args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            ["git", *_GIT_CONFIG, *args],
            cwd=dest,
            env=env or base_env,
            check=True,
            capture_output=True,
            text=True,
        )
        return done.stdout.strip()

    git("init", "-q", "-b", "main", "--template=", "--object-format=sha1", ".")
    shas = []
    for commit in commits:
        _replace_work_tree(src / commit.dir, dest)
        git("add", "-A")
        env = dict(base_env)
        env.update(
            GIT_AUTHOR_NAME=commit.name,
            GIT_AUTHOR_EMAIL=commit.email,
            GIT_AUTHOR_DATE=commit.date,
            GIT_COMMITTER_NAME=commit.name,
            GIT_COMMITTER_EMAIL=commit.email,
            GIT_COMMITTER_DATE=commit.date,
        )
        git("commit", "-q", "--no-verify", "--allow-empty", "-m", commit.message, env=env)
        shas.append(git("rev-parse", "HEAD"))
    return shas


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: make_repo.py SRC DEST", file=sys.stderr)
        return 2
    try:
        shas = build_repo(Path(args[0]), Path(args[1]))
    except (OSError, ValueError, yaml.YAMLError) as error:
        print(f"make_repo: {error}".splitlines()[0], file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as error:
        detail = (error.stderr or "").strip().splitlines()
        print(f"make_repo: git failed: {detail[0] if detail else error}", file=sys.stderr)
        return 1
    print(shas[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
