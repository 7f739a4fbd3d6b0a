"""Read a local clone, or a bare mirror sources/fetch.py fetched, with git: resolve revisions,
export a tree, find the commit behind a file.

Never touches the user's working tree, index or refs. git runs with hooks off, no pager, no
prompts, `LC_ALL=C` and a timeout; the tree is exported from objects (`ls-tree` + `cat-file`), so
`.gitattributes` filters and `export-ignore` do not change what is rendered.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from kubectl_gitdrift.errors import SourceError

GIT_TIMEOUT = 120.0
"""Seconds any one git command may run."""

_HEX = re.compile(r"[0-9a-f]{7,64}")
_SCRUBBED_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_CEILING_DIRECTORIES",
)


@dataclass(frozen=True, slots=True)
class CommitInfo:
    sha: str
    author: str  # "Name <email>"
    date: str  # ISO 8601, author date
    subject: str


def run_git(
    repo_root: Path,
    *args: str,
    timeout: float = GIT_TIMEOUT,
    check: bool = True,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run `git -C repo_root args…` safely, with `env` over git_env() (an index of the caller's
    own, an identity) and `input` on its stdin; a failure (when `check`) is a SourceError."""
    cmd = [
        "git",
        "-C",
        str(repo_root),
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
        "--no-pager",
        "--literal-pathspecs",
        *args,
    ]
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            env={**git_env(), **(env or {})},
            timeout=timeout,
            check=False,
            input=input,
            stdin=subprocess.DEVNULL if input is None else None,
        )
    except FileNotFoundError:
        raise SourceError(
            "git is not installed (needed to read --repo-root)", hint="install git, or use --local"
        ) from None
    except subprocess.TimeoutExpired:
        raise SourceError(f"git {args[0]} in {repo_root} timed out after {timeout:g}s") from None
    if check and proc.returncode != 0:
        raise SourceError(f"git {args[0]} in {repo_root} failed: {_last_line(proc.stderr)}")
    return proc


def git_env() -> dict[str, str]:
    """The user's environment (credential helpers, SSH agent, `~/.gitconfig` all apply) without
    what would point git at another repository, with no pager and never a prompt."""
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED_ENV}
    env.update(LC_ALL="C", GIT_PAGER="cat", PAGER="cat", GIT_TERMINAL_PROMPT="0")
    return env


def toplevel(repo_root: Path) -> Path:
    """The top of the work tree holding `repo_root`, or the repository itself when it is bare (a
    fetched mirror); SourceError when it is not a git repo."""
    if not repo_root.is_dir():
        raise SourceError(f"--repo-root {repo_root}: no such directory")
    proc = run_git(repo_root, "rev-parse", "--is-bare-repository", "--show-toplevel", check=False)
    if proc.stdout.startswith(b"true\n"):
        return repo_root.resolve()
    if proc.returncode != 0:
        raise SourceError(
            f"--repo-root {repo_root}: not a git repository ({_last_line(proc.stderr)})",
            hint="pass --repo-root pointing at a clone of the Application's repoURL",
        )
    return Path(proc.stdout.decode("utf-8", "replace").splitlines()[-1].strip())


def resolve_revision(repo_root: Path, rev: str, *, prefer_remote: bool = False) -> str:
    """The full commit sha `rev` (HEAD, branch, tag, full or short sha) names in `repo_root`.

    `prefer_remote` looks up `origin/<rev>` before a local branch of that name (and `origin/HEAD`
    for HEAD), which is what Argo CD sees for a targetRevision (a local branch may be behind or
    ahead of the remote one).
    """
    top = toplevel(repo_root)
    rev = rev.strip() or "HEAD"
    if rev.startswith("-") or any(c in rev for c in "\0\n"):
        raise SourceError(f"revision {rev!r} is not a valid git revision")
    candidates = [rev]
    if prefer_remote and not rev.startswith("refs/") and not _HEX.fullmatch(rev):
        candidates.insert(0, f"refs/remotes/origin/{rev}")
    for candidate in candidates:
        proc = run_git(
            top,
            "rev-parse",
            "--verify",
            "--quiet",
            f"{candidate}^{{commit}}",
            check=False,
        )
        if proc.returncode == 0:
            return proc.stdout.decode("ascii").strip()
    raise SourceError(
        f"revision {rev} is not in {repo_root}", hint=f"run: git -C {repo_root} fetch origin {rev}"
    )


def tree_bytes(repo_root: Path, sha: str) -> int:
    """The size of every file of commit `sha` (what exporting it writes), from one `ls-tree`.
    Sizes are read from the blobs: a blob the clone lacks (a partial clone whose promisor
    remote cannot be reached) is the error `export_tree` gives for it, naming the file."""
    proc = run_git(repo_root, "ls-tree", "-r", "-l", "-z", "--full-tree", sha, check=False)
    if proc.returncode != 0:
        raise _unreadable_tree(repo_root, sha, proc.stderr.decode("utf-8", "replace"))
    listing = proc.stdout
    total = 0
    for record in listing.split(b"\0"):
        size = record.partition(b"\t")[0].split()[-1:]
        if size and size[0].isdigit():  # submodules ("commit") list "-"
            total += int(size[0])
    return total


def tree_id(repo_root: Path, sha: str) -> str:
    """The tree object id of commit `sha`."""
    proc = run_git(repo_root, "rev-parse", "--verify", f"{sha}^{{tree}}")
    return proc.stdout.decode("ascii").strip()


def export_tree(repo_root: Path, rev: str, dest: Path) -> str:
    """Write the files of `rev` into `dest` (created; must be empty) and return the tree id.

    Reads git objects only: the user's working tree and index are untouched. Submodules are left
    out; a symlink that points outside the tree is refused (as Argo CD's repo-server does).
    """
    top = toplevel(repo_root)
    sha = resolve_revision(top, rev)
    tree = tree_id(top, sha)
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise SourceError(f"cannot export {rev} into {dest}: the directory is not empty")

    listing = run_git(top, "ls-tree", "-r", "-z", "--full-tree", tree).stdout
    entries: list[tuple[int, str, PurePosixPath]] = []
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode_text, kind, obj = meta.decode("ascii").split(" ")
        if kind != "blob":  # "commit" = submodule
            continue
        path = _safe_path(raw_path.decode("utf-8", "surrogateescape"), rev)
        entries.append((int(mode_text, 8), obj, path))

    with (
        tempfile.TemporaryFile(dir=dest.parent) as request,
        tempfile.TemporaryFile(dir=dest.parent) as response,
    ):
        request.write(b"".join(obj.encode("ascii") + b"\n" for _, obj, _ in entries))
        request.seek(0)
        failure = _cat_file(top, request, response)
        response.seek(0)
        for mode, obj, path in entries:
            header = response.readline().split()
            if header == [obj.encode("ascii"), b"missing"] or (failure and obj in failure):
                raise _missing_blob(top, rev, str(path), obj, failure)
            if len(header) != 3 or header[0].decode("ascii") != obj:
                lacking = _lacking(top, sha) if failure else set()
                missing = next(((o, p) for _, o, p in entries if o in lacking), None)
                if missing is not None:  # git died of its failed fetch before naming it
                    raise _missing_blob(top, rev, str(missing[1]), missing[0], failure)
                if failure:
                    detail = _last_line(failure.encode())
                    raise SourceError(f"git cat-file in {top} failed: {detail}")
                raise SourceError(f"git cat-file gave unexpected output for {path} at {rev}")
            data = response.read(int(header[2]))
            response.read(1)  # the newline after each object
            _write_entry(dest, path, mode, data, rev)
    return tree


def last_commit_touching(repo_root: Path, rev: str, path: str) -> CommitInfo | None:
    """The newest commit reachable from `rev` that changed `path` (a repo-relative file or dir)."""
    top = toplevel(repo_root)
    return commit_touching(top, resolve_revision(top, rev), path)


def commit_touching(top: Path, sha: str, path: str) -> CommitInfo | None:
    """`last_commit_touching` once the work tree's top and the commit are known (one git call)."""
    proc = run_git(
        top,
        "log",
        "-1",
        "--no-show-signature",
        "--format=%H%x00%an <%ae>%x00%aI%x00%s",
        sha,
        "--",
        path or ".",
    )
    out = proc.stdout.decode("utf-8", "replace").strip()
    if not out:
        return None
    commit, author, date, subject = [*out.split("\0"), "", "", ""][:4]
    return CommitInfo(sha=commit, author=author, date=date, subject=subject)


# --------------------------------------------------------------------------- internals


def _cat_file(top: Path, request: IO[bytes], response: IO[bytes]) -> str:
    """`git cat-file --batch` over the object ids in `request`, into `response`. Returns its
    stderr when it failed ("could not fetch <id> from promisor remote": the caller names the
    file), else ""."""
    env = git_env()
    try:
        proc = subprocess.run(
            ["git", "-C", str(top), "-c", "core.hooksPath=/dev/null", "cat-file", "--batch"],
            stdin=request,
            stdout=response,
            stderr=subprocess.PIPE,
            env=env,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SourceError(f"git cat-file in {top} timed out after {GIT_TIMEOUT:g}s") from None
    if proc.returncode != 0:
        return proc.stderr.decode("utf-8", "replace") or "no error output"
    return ""


def _unreadable_tree(top: Path, sha: str, failure: str) -> SourceError:
    """Why `ls-tree -l` of commit `sha` failed: a blob the clone lacks (`_missing_blob`, the
    file found by a listing that reads no blob), else git's last line. git names the blob
    ("could not fetch <id> from promisor remote") unless its failed fetch killed it first
    (SIGPIPE): then the clone is asked which blobs it lacks (`_lacking`)."""
    named = set(re.findall(r"\b[0-9a-f]{40}(?:[0-9a-f]{24})?\b", failure)) or _lacking(top, sha)
    if named:
        listing = run_git(top, "ls-tree", "-r", "-z", "--full-tree", sha, check=False).stdout
        for record in listing.split(b"\0"):
            meta, _, raw_path = record.partition(b"\t")
            fields = meta.decode("ascii", "replace").split(" ")
            if len(fields) == 3 and fields[1] == "blob" and fields[2] in named:
                path = raw_path.decode("utf-8", "surrogateescape")
                return _missing_blob(top, sha, path, fields[2], failure)
    return SourceError(f"git ls-tree in {top} failed: {_last_line(failure.encode())}")


def _lacking(top: Path, sha: str) -> set[str]:
    """The objects of commit `sha`'s tree that the clone lacks, found without fetching any
    (`rev-list --missing=print` lists them as `?<id>`)."""
    proc = run_git(
        top, "rev-list", "--objects", "--missing=print", "--no-walk", sha, "--", check=False
    )
    lines = proc.stdout.decode("ascii", "replace").splitlines()
    return {line[1:].strip() for line in lines if line.startswith("?")}


def _missing_blob(top: Path, rev: str, path: str, obj: str, failure: str) -> SourceError:
    """Why the clone at `top` lacks the blob `obj` of `path` at `rev`, and what to do: a partial
    clone (`--filter=blob:none`) reads blobs from its promisor remote when they are needed, which
    fails offline or when the remote is gone; a shallow clone or a damaged object store lacks
    them for good."""
    # the clone's path is in each hint: the message stays short enough to name the file first
    where = (
        f"{path} at {rev[:12] if _HEX.fullmatch(rev) else rev}: blob {obj[:12]} is not in the clone"
    )
    config = run_git(top, "config", "--get-regexp", r"^(remote\..*|extensions\.partialclone)$",
                     check=False).stdout.decode("utf-8", "replace")  # fmt: skip
    values = dict(line.split(" ", 1) for line in config.splitlines() if " " in line)
    promisor = values.get("extensions.partialclone") or next(
        (k.split(".")[1] for k, v in values.items() if k.endswith(".promisor") and v == "true"),
        "",
    )
    if promisor:
        filt = values.get(f"remote.{promisor}.partialclonefilter", "")
        kind = f"a partial clone (--filter={filt})" if filt else "a partial clone"
        url = values.get(f"remote.{promisor}.url", "")
        lines = [ln.strip().removeprefix("fatal: ") for ln in failure.splitlines() if ln.strip()]
        cause = lines[0] if lines else "git printed: missing"  # why git could not fetch it
        if not url:  # gitdrift's own mirrors store no URL (sources/fetch.py): --offline
            return SourceError(
                f"{where}: {kind} without a URL for its promisor remote {promisor} ({cause})",
                hint="run without --offline: gitdrift fetches the files of the commit it renders",
            )
        return SourceError(
            f"{where}: {kind} fetches its files from the promisor remote {promisor} when they "
            f"are read, and that failed ({cause})",
            hint=f"run where {url} is reachable (git -C {top} show {rev}:{path} fetches this "
            "one), or clone without --filter",
        )
    shallow = run_git(top, "rev-parse", "--is-shallow-repository", check=False).stdout
    if shallow.strip() == b"true":
        return SourceError(
            f"{where}: a shallow clone", hint=f"git -C {top} fetch --unshallow, or clone in full"
        )
    return SourceError(
        f"{where}: the clone's object store is incomplete (damaged, or an alternate is gone)",
        hint=f"git -C {top} fsck shows what is missing; clone the repository again",
    )


def _safe_path(text: str, rev: str) -> PurePosixPath:
    path = PurePosixPath(text)
    if path.is_absolute() or any(part in ("", ".", "..", ".git") for part in path.parts):
        raise SourceError(f"refusing to export {text!r} from {rev}: unsafe path in the tree")
    return path


def _write_entry(dest: Path, path: PurePosixPath, mode: int, data: bytes, rev: str) -> None:
    target = dest.joinpath(*path.parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    if stat.S_ISLNK(mode):
        link = data.decode("utf-8", "surrogateescape")
        resolved = Path(os.path.normpath(target.parent / link))
        if Path(link).is_absolute() or not resolved.is_relative_to(dest):
            raise SourceError(
                f"{path}: symlink to {link!r} points outside the repository at {rev}",
                hint="Argo CD refuses such repositories too; make the link relative and inside",
            )
        target.symlink_to(link)
        return
    target.write_bytes(data)
    if mode & 0o111:
        target.chmod(0o755)


def _last_line(stderr: bytes) -> str:
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1] if lines else "no error output"
