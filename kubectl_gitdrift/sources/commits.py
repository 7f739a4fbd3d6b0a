"""Reads two commits of a clone as `preview` compares them: the files of a commit and their
bytes (one `ls-tree`, one `cat-file --batch`), the names changed between two commits, the
merge base with the default branch, and the work tree made into a commit.

Never touches the user's index, refs or work tree: the work tree's commit is made with a copy
of the index (`GIT_INDEX_FILE`), `git add -A`, `write-tree` and `commit-tree`, which only add
objects to the repository. Its author, committer and dates are fixed (HEAD's committer date),
so the same work tree on the same HEAD is the same commit, and its renders are cached.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.sources import git

DEFAULT_BRANCHES = ("origin/main", "main", "origin/master", "master")
"""Tried in order when origin/HEAD names no branch."""
_IDENT = ("kubectl-gitdrift", "kubectl-gitdrift@localhost")


def files(top: Path, sha: str) -> list[tuple[str, str]]:
    """(path, blob id) of every file of commit `sha`, sorted by path (submodules left out)."""
    return sorted((path, obj) for path, (_, obj) in tree(top, sha).items())


def tree(top: Path, sha: str) -> dict[str, tuple[str, str]]:
    """Every file of commit `sha` (submodules left out): path -> (mode, blob id), the mode
    telling a symlink (120000) from a file."""
    listing = git.run_git(top, "ls-tree", "-r", "-z", "--full-tree", sha).stdout
    out: dict[str, tuple[str, str]] = {}
    for record in listing.split(b"\0"):
        meta, _, raw = record.partition(b"\t")
        fields = meta.split()
        if len(fields) == 3 and fields[1] == b"blob":
            path = raw.decode("utf-8", "surrogateescape")
            out[path] = (fields[0].decode("ascii"), fields[2].decode("ascii"))
    return out


def read_blobs(top: Path, ids: Iterable[str]) -> dict[str, bytes]:
    """The bytes of each blob in `ids`, read by one `git cat-file --batch`."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    batch = b"".join(i.encode() + b"\n" for i in wanted)
    proc = git.run_git(top, "cat-file", "--batch", input=batch)
    data, out, at = proc.stdout, {}, 0
    for obj in wanted:
        end = data.index(b"\n", at)
        header = data[at:end].split()
        if len(header) != 3 or header[0].decode("ascii") != obj:
            raise SourceError(f"git cat-file in {top}: object {obj[:12]} is missing")
        size = int(header[2])
        out[obj] = data[end + 1 : end + 1 + size]
        at = end + 1 + size + 1
    return out


def changed(top: Path, base: str, head: str) -> list[str]:
    """The paths that differ between commits `base` and `head` (a rename: both names)."""
    if base == head:
        return []
    proc = git.run_git(top, "diff", "--name-only", "-z", "--no-renames", base, head, "--")
    return sorted({p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p})


def default_branch(top: Path) -> str:
    """The branch a change merges into: origin/HEAD's target, else the first of
    DEFAULT_BRANCHES that exists; SourceError when there is none."""
    proc = git.run_git(top, "symbolic-ref", "--quiet", "refs/remotes/origin/HEAD", check=False)
    target = proc.stdout.decode("utf-8", "replace").strip()
    candidates = [target.removeprefix("refs/remotes/")] if target else []
    for name in [*candidates, *DEFAULT_BRANCHES]:
        found = git.run_git(
            top, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}", check=False
        )
        if found.returncode == 0:
            return name
    raise SourceError(
        f"{top}: no default branch to compare with (origin/HEAD, {', '.join(DEFAULT_BRANCHES)})",
        hint="name the base revision: --base REV",
    )


def merge_base(top: Path, one: str, other: str) -> str:
    """The best common ancestor of two commits; SourceError when they share none."""
    proc = git.run_git(top, "merge-base", one, other, check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise SourceError(f"{one[:12]} and {other} have no common ancestor in {top}",
                          hint="name the base revision: --base REV")  # fmt: skip
    return proc.stdout.decode("ascii").strip()


def work_tree_commit(top: Path) -> str:
    """The work tree of `top` as a commit whose parent is HEAD (untracked files included,
    ignored ones not, as `git add -A` sees them); HEAD itself when the tree is clean."""
    head = git.run_git(top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    parent = head.stdout.decode("ascii").strip() if head.returncode == 0 else ""
    index = git.run_git(top, "rev-parse", "--path-format=absolute", "--git-path", "index")
    with tempfile.TemporaryDirectory(prefix="gitdrift-index-") as scratch:
        temp = Path(scratch) / "index"
        user_index = Path(index.stdout.decode("utf-8", "surrogateescape").strip())
        if user_index.is_file():
            shutil.copyfile(user_index, temp)  # its stat data: `add -A` hashes changed files only
        env = {"GIT_INDEX_FILE": str(temp)}
        git.run_git(top, "add", "-A", "--", ".", env=env)
        tree = git.run_git(top, "write-tree", env=env).stdout.decode("ascii").strip()
    if parent and git.tree_id(top, parent) == tree:
        return parent
    date = "0 +0000"
    if parent:
        date = git.run_git(top, "show", "-s", "--format=%cd", "--date=raw", parent).stdout.decode(
            "ascii"
        ).strip()  # fmt: skip
    name, email = _IDENT
    ident = {
        "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": date,
    }  # fmt: skip
    args = ["commit-tree", "--no-gpg-sign", tree, *(["-p", parent] if parent else [])]
    proc = git.run_git(top, *args, env=ident, input=b"work tree (kubectl gitdrift preview)\n")
    return proc.stdout.decode("ascii").strip()
