"""Fetch the git repositories Applications render from, as Argo CD's repo-server clones repoURL.

Each repository URL gets one bare, partial mirror in the cache directory
(`<cache>/git/<key>.git`, `<key>` from the normalized URL, so `https://host/org/repo.git` and
`git@host:org/repo` share one). Only the revision a source needs is fetched, with
`--filter=blob:none`: commits and trees of its history (which `git log -- path` needs to name the
commit behind a field), and then the blobs of that one commit's tree (what rendering reads).

Revisions are resolved like the repo-server (`util/git/client.go` lsRemote): a full commit id is
used as it is, and is not fetched when the mirror has it (a second run of an app Argo CD has
compared makes no network access at all); `HEAD`, a branch or a tag is looked up with
`git ls-remote` (a branch before a tag of the same name, symbolic refs followed, annotated tags
peeled); a shorter hex string that names no ref is a commit id prefix, looked up after fetching
every branch and tag. A semver constraint on tags (`>=1.2 <2`), which recent Argo CD resolves to
the highest matching tag, is not resolved yet: an error says so.

git runs as the user: their environment and configuration (credential helpers, the SSH agent,
`url.<base>.insteadOf`), never Argo CD's repository Secrets; with `GIT_TERMINAL_PROMPT=0`, in
its own session (no terminal to prompt on) and under a time limit. The mirror stores no URL
(each fetch passes it), so a later read of an object the mirror lacks fails instead of quietly
fetching it: `--offline` is kept by construction.

Safe for concurrent runs: a lock file per mirror (`<key>.lock`, flock) while fetching; a new
mirror is built in a temporary directory and renamed into place once it holds its first
revision; git writes packs and refs atomically, and lock files a killed git left behind are
removed under our lock. A failed fetch leaves the mirror as it was (or no mirror).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kubectl_gitdrift.errors import GitDriftError, SourceError, UsageError
from kubectl_gitdrift.model import Application, AppSource
from kubectl_gitdrift.settings import FETCH_TIMEOUT_ENV, Settings
from kubectl_gitdrift.sources import charts, git
from kubectl_gitdrift.sources.cache import CacheMiss
from kubectl_gitdrift.sources.render import (
    WORKING_TREE,
    Checkout,
    Exports,
    _normalize_url,
    _top,
)

_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_SHORT_SHA = re.compile(r"[0-9a-f]{7,63}")
_SCP_URL = re.compile(r"^(?:[\w.-]+@)?[\w.-]+:(?!//)")
_USERINFO = re.compile(r"(://[^/@:\s]+):[^/@\s]*@")
_NO_COMMAND_TRANSPORTS = ("-c", "protocol.ext.allow=never", "-c", "protocol.fd.allow=never")
"""A repoURL comes from the cluster: `ext::<command>` would run it. git forbids `ext` by default;
this keeps it forbidden whatever the user's config says (command-line config wins)."""
_CONSTRAINT = re.compile(r"[*^~<>=|, ]|\.[xX](\.|$)")
"""What makes a targetRevision a semver constraint (`1.2.*`, `>=1.0 <2`, `^1.2`, `1.x`)."""
_HEAD = "refs/gitdrift/HEAD"
"""The server's HEAD as last fetched (a symbolic ref to its branch, or to _DETACHED)."""
_DETACHED = "refs/gitdrift/detached-HEAD"
_REFUSED = re.compile(r"not our ref|unadvertised object|want .* not valid", re.IGNORECASE)
_ALL_REFS = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
_MIRROR_CONFIG = (
    ("core.repositoryformatversion", "1"),
    ("extensions.partialClone", "origin"),
    ("remote.origin.promisor", "true"),
    ("remote.origin.partialCloneFilter", "blob:none"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("fetch.writeCommitGraph", "false"),
)


#: Every fetch into a mirror: only the objects asked for, blobs on demand, no tags, no
#: submodules, no FETCH_HEAD.
_FETCH_OPTIONS = (
    "--quiet",
    "--no-tags",
    "--no-write-fetch-head",
    "--recurse-submodules=no",
    "--filter=blob:none",
)


@dataclass(frozen=True, slots=True)
class RepoRoot:
    """One `--repo-root` value: a clone for every source (`DIR`), or for one repository
    (`URL=DIR`)."""

    path: Path
    url: str | None = None


def parse_repo_root(text: str) -> RepoRoot:
    """`DIR`, or `URL=DIR` when what comes before the first `=` is a URL (`scheme://…` or
    `user@host:path`)."""
    left, eq, right = text.partition("=")
    if eq and ("://" in left or _SCP_URL.match(left)):
        if not right:
            raise ValueError(f"{text!r}: no directory after {left}=")
        return RepoRoot(Path(right).expanduser(), left)
    return RepoRoot(Path(text).expanduser())


def check_roots(roots: Sequence[RepoRoot], *, local: bool) -> None:
    """At most one plain `--repo-root DIR`; `--local` needs a clone to take the working tree of."""
    plain = [r for r in roots if r.url is None]
    if len(plain) > 1:
        raise UsageError(
            f"--repo-root {plain[0].path} and --repo-root {plain[1].path}: one clone for "
            "every source at most",
            hint="map each repository to its clone: --repo-root URL=DIR",
        )
    if local and not roots:
        raise UsageError(
            "--local renders a clone's working tree: it needs --repo-root DIR",
            hint="without --repo-root, gitdrift fetches repoURL at the revision Argo CD compared",
        )


def mirror_key(url: str) -> str:
    """The mirror's directory name for `url`: readable, and one per repository however its URL
    is written (scheme, user, `.git`, scp form), with the path's case kept (two repositories
    differing only in case must not share branches)."""
    norm = _key_url(url)
    slug = re.sub(r"[^a-z0-9._-]+", "-", norm.rsplit("/", 1)[-1].lower()).strip(".-")[:40] or "repo"
    return f"{slug}-{hashlib.sha256(norm.encode()).hexdigest()[:16]}"


class Repos:
    """Where each git source's files come from, for one run: a local clone given with
    `--repo-root` (for every source, or `URL=DIR` for one repository), else a mirror fetched into
    `directory`. Resolutions are remembered for the run; safe to use from several threads.
    Network git commands run under `timeout` seconds, by default the fetch time-out of
    `settings` (default: this process's environment, read now)."""

    def __init__(
        self,
        directory: Path,
        *,
        roots: Sequence[RepoRoot] = (),
        offline: bool = False,
        local: bool = False,
        exports: Exports | None = None,
        timeout: float | None = None,
        settings: Settings | None = None,
    ) -> None:
        self.directory = directory
        self.offline, self.local, self.exports = offline, local, exports
        if timeout is None:
            timeout = (settings or Settings.from_environ()).fetch_timeout()
        self.timeout = timeout
        check_roots(roots, local=local)
        plain = [r for r in roots if r.url is None]
        self.default = plain[0].path if plain else None
        self.mapped = {_normalize_url(r.url): r.path for r in roots if r.url is not None}
        self._lock = threading.Lock()
        self._done: dict[tuple[str, str, bool], Checkout] = {}
        self._mirrors: dict[str, Mirror] = {}
        self._pending: dict[tuple[str, str, bool], threading.Lock] = {}
        self._failed: dict[tuple[str, str, bool], GitDriftError] = {}  # said once per run
        self._remotes: set[str] | None = None  # of the plain --repo-root clone, read once

    def clone_for(self, source: AppSource, app_urls: Sequence[str]) -> Path | None:
        """The local clone that serves `source`: its `URL=DIR` mapping, else the plain
        `--repo-root DIR` when the app renders from one repository or DIR is a clone of it (a
        DIR that is a clone of none of a multi-repository app's repositories is an error)."""
        norm = _normalize_url(source.repo_url)
        if norm in self.mapped:
            return self.mapped[norm]
        if self.default is None:
            return None
        urls = {_normalize_url(u) for u in app_urls}
        if len(urls) < 2:
            return self.default
        with self._lock:
            if self._remotes is None:
                self._remotes = _remotes(self.default)
            remotes = self._remotes
        if norm in remotes:
            return self.default
        if not urls & remotes:
            raise SourceError(
                f"--repo-root {self.default} is a clone of none of the repositories this "
                f"Application renders from ({', '.join(sorted(set(app_urls)))})",
                hint="map each to its clone with --repo-root URL=DIR, or leave --repo-root out "
                "to fetch them",
            )
        return None  # another repository of the app: fetched

    def checkout(
        self,
        app: Application,
        source: AppSource,
        revision: str,
        prefer_remote: bool,
        *,
        cached_only: bool = False,
    ) -> Checkout:
        clone = self.clone_for(source, _git_urls(app))
        if clone is not None:
            return self._local(clone, revision, prefer_remote)
        if self.local:
            raise UsageError(
                f"--local renders a working tree, and {app.qualified_name}'s source "
                f"{redact(source.repo_url)} has no clone given",
                hint=f"add --repo-root {redact(source.repo_url)}=DIR",
            )
        if not source.repo_url:
            raise SourceError(f"application {app.qualified_name}: a source has no repoURL")
        if any(ord(c) < 32 or c == "\x7f" for c in source.repo_url):
            raise SourceError(
                f"application {app.qualified_name}: repoURL {source.repo_url!r} has control "
                "characters"
            )
        key = (_key_url(source.repo_url), revision, False)
        with self._lock:
            mirror = self._mirrors.setdefault(  # per URL as written (its transport, its creds)
                source.repo_url,
                Mirror(self.directory, source.repo_url, offline=self.offline, timeout=self.timeout),
            )
            pending = self._pending.setdefault(key, threading.Lock())
        with pending:  # apps of one run sharing a repository and revision resolve it once
            with self._lock:
                known, failed = self._done.get(key), self._failed.get(key)
            if failed is not None:
                raise failed
            if known is None:
                try:
                    sha = mirror.commit(revision, app=app.qualified_name, cached_only=cached_only)
                except GitDriftError as exc:
                    with self._lock:
                        self._failed[key] = exc
                    raise
                known = Checkout(mirror.path, sha, mirror.shown, fetched=True)
                with self._lock:
                    self._done[key] = known
        return known

    def to_fetch(self, app: Application, source: AppSource, revision: str) -> str | None:
        """What `checkout` would fetch for `source` at `revision` (one key per repository and
        revision), or None: a local clone serves it, the mirror has the commit already, or the
        source cannot be fetched (`checkout` says why when rendering)."""
        if not source.repo_url or self.local:
            return None
        try:
            if charts.classify(source.repo_url, source.chart) is not None:
                return None  # a chart pulled from a Helm repository or an OCI registry
            if self.clone_for(source, _git_urls(app)) is not None:
                return None
        except GitDriftError:
            return None
        key = (_key_url(source.repo_url), revision, False)
        with self._lock:
            if key in self._done or key in self._failed:
                return None
        try:  # a commit the mirror has: remembered, nothing to fetch
            self.checkout(app, source, revision, False, cached_only=True)
            return None
        except (CacheMiss, GitDriftError):
            return f"{key[0]} {revision}"

    def _local(self, clone: Path, revision: str, prefer_remote: bool) -> Checkout:
        key = (str(clone), revision, prefer_remote)
        with self._lock:
            known = self._done.get(key)
        if known is not None:
            return known
        if self.exports is not None:
            top = self.exports.top(clone, self.local)
        else:
            top = _top(clone, self.local)
        if self.local:
            known = Checkout(top, WORKING_TREE, str(clone))
        elif self.exports is not None:
            known = Checkout(top, self.exports.resolve(top, revision, prefer_remote), str(clone))
        else:
            sha = git.resolve_revision(top, revision, prefer_remote=prefer_remote)
            known = Checkout(top, sha, str(clone))
        with self._lock:
            self._done[key] = known
        return known


class Mirror:
    """The bare partial mirror of one repository URL (see the module docstring)."""

    def __init__(self, directory: Path, url: str, *, offline: bool, timeout: float) -> None:
        self.directory = directory
        self.url = url
        self.shown = redact(url)  # for messages: no password
        self.offline = offline
        self.timeout = timeout
        key = mirror_key(url)
        self.path = directory / f"{key}.git"
        self.lock_path = directory / f"{key}.lock"

    def commit(self, revision: str, *, app: str, cached_only: bool = False) -> str:
        """The commit `revision` names in the repository, present in the mirror with the files
        of its tree; fetched when missing (SourceError naming `app`, the URL and git's cause).
        `cached_only` raises CacheMiss rather than go to the network."""
        rev = revision.strip() or "HEAD"
        if rev.startswith("-") or any(c in rev for c in "\0\n\r\t"):
            raise SourceError(
                f"{app}: revision {rev!r} of {self.shown} is not a valid git revision"
            )
        if self.path.is_dir():  # a full commit id the mirror holds: no lock, no network
            full = rev.lower() if _FULL_SHA.fullmatch(rev.lower()) else None
            if full and self._has_commit(self.path, full) and not self._missing(self.path, full):
                return full
        if cached_only and not self.offline:
            raise CacheMiss(self.url)
        _private(self.directory)
        with _locked(self.lock_path):
            return self._commit_locked(rev, app)

    # ------------------------------------------------------------------ under the lock

    def _commit_locked(self, rev: str, app: str) -> str:
        existing = self.path.is_dir()
        if existing:
            _remove_stale_locks(self.path)
            found = self._local_commit(self.path, rev, exact_only=not self.offline)
            if found is not None and not self._missing(self.path, found):
                return found
        if self.offline:
            where = f"the cache ({self.path})" if existing else "the cache"
            raise SourceError(
                f"{app}: --offline: source {self.shown} at revision {rev} is not in {where}",
                hint="run once without --offline to fetch it, or give a clone: "
                f"--repo-root {self.shown}=DIR",
            )
        target = self.path if existing else self._new_mirror()
        try:
            sha = self._fetch(target, rev, app)
            missing = self._missing(target, sha)
            if missing:
                self._net(
                    target,
                    app,
                    "-c",
                    "fetch.negotiationAlgorithm=noop",
                    "fetch",
                    *_FETCH_OPTIONS,
                    "--stdin",
                    "origin",
                    stdin="".join(f"{oid}\n" for oid in missing).encode("ascii"),
                )
                if self._missing(target, sha):
                    raise SourceError(
                        f"{app}: fetching {self.shown} at {rev}: the server did not send every "
                        "file of the commit"
                    )
            if not existing:
                target.rename(self.path)
        finally:
            if not existing:
                shutil.rmtree(target, ignore_errors=True)
        return sha

    def _new_mirror(self) -> Path:
        _prune_scratch(self.directory)
        scratch = Path(tempfile.mkdtemp(dir=self.directory, prefix=".tmp-", suffix=".git"))
        _git(scratch, "init", "--quiet", "--bare", timeout=self.timeout)
        for key, value in _MIRROR_CONFIG:
            _git(scratch, "config", key, value, timeout=self.timeout)
        return scratch

    def _fetch(self, repo: Path, rev: str, app: str) -> str:
        """Fetch what `rev` needs into `repo`; the commit it names."""
        low = rev.lower()
        if _FULL_SHA.fullmatch(low):
            if self._has_commit(repo, low):
                return low
            try:
                self._fetch_refs(repo, app, f"+{low}:refs/gitdrift/{low}")
            except _GitFailed as exc:
                if not _REFUSED.search(exc.stderr):
                    raise
                self._fetch_refs(repo, app, *_ALL_REFS)  # no unadvertised commits: every ref
            if not self._has_commit(repo, low):
                raise SourceError(
                    f"{app}: revision {rev} not found in {self.shown}",
                    hint="is the commit pushed? (a commit id that no branch or tag reaches "
                    "cannot be fetched from most servers)",
                )
            if not _ref_exists(repo, f"refs/gitdrift/{low}"):
                _git(repo, "update-ref", f"refs/gitdrift/{low}", low, timeout=self.timeout)
            return low
        refs, symrefs = self._ls_remote(repo, app)
        name = _match_ref(rev, refs, symrefs)
        if name is not None:
            sha = refs.get(f"{name}^{{}}", refs[name])
            local = _DETACHED if name == "HEAD" else name  # a server whose HEAD is detached
            if not self._has_commit(repo, sha):
                self._fetch_refs(repo, app, f"+{name}:{local}")
                fetched = _rev_parse(repo, f"{local}^{{commit}}", self.timeout)
                sha = fetched or sha  # the branch may have moved since ls-remote: the newer
            else:  # remembered for --offline runs
                _git(repo, "update-ref", "--no-deref", local, sha, timeout=self.timeout)
            if rev == "HEAD":
                target = symrefs.get("HEAD", _DETACHED)
                _git(repo, "symbolic-ref", _HEAD, target, timeout=self.timeout)
            if not self._has_commit(repo, sha):
                raise SourceError(f"{app}: fetching {self.shown} at {rev} gave no commit {sha}")
            return sha
        if _SHORT_SHA.fullmatch(low):  # a commit id prefix, as Argo CD allows
            self._fetch_refs(repo, app, *_ALL_REFS)
            found = self._local_commit(repo, low, exact_only=False)
            if found is not None:
                return found
        hint = (
            "Argo CD resolves a semver constraint on git tags to the highest matching tag; "
            "gitdrift does not yet: pick the tag with --revision"
            if _CONSTRAINT.search(rev)
            else "check the source's targetRevision (a branch, a tag, HEAD or a commit id), or "
            "pick another with --revision"
        )
        raise SourceError(
            f"{app}: revision {rev} not found in {self.shown}: unable to resolve {rev!r} to a "
            "commit SHA",
            hint=hint,
        )

    def _ls_remote(self, repo: Path, app: str) -> tuple[dict[str, str], dict[str, str]]:
        """(ref -> object id, symbolic ref -> its target) as the server advertises them."""
        out = self._net(repo, app, "ls-remote", "--symref", "origin").stdout
        refs: dict[str, str] = {}
        symrefs: dict[str, str] = {}
        for line in out.decode("utf-8", "replace").splitlines():
            left, _, name = line.partition("\t")
            if left.startswith("ref: "):
                symrefs[name] = left.removeprefix("ref: ").strip()
            elif name:
                refs[name] = left.strip()
        return refs, symrefs

    def _fetch_refs(self, repo: Path, app: str, *refspecs: str) -> None:
        self._net(
            repo,
            app,
            "fetch",
            *_FETCH_OPTIONS,
            "origin",
            *refspecs,
        )

    def _net(
        self, repo: Path, app: str, *args: str, stdin: bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        """A git command that talks to the server (the URL given for this command only)."""
        cmd = [*_NO_COMMAND_TRANSPORTS, "-c", f"remote.origin.url={self.url}", *args]
        try:
            proc = _run(repo, cmd, timeout=self.timeout, stdin=stdin, network=True)
        except _TimedOut as exc:
            raise SourceError(
                f"{app}: cannot fetch {self.shown}: {exc.message}", hint=exc.hint
            ) from None
        if proc.returncode != 0:
            raise _GitFailed(
                f"{app}: cannot fetch {self.shown}: {_last_line(proc.stderr)}",
                hint="gitdrift runs git as you: check that `git ls-remote "
                f"{self.shown}` works here (credentials, SSH agent, network)",
                stderr=proc.stderr.decode("utf-8", "replace"),
            )
        return proc

    def _has_commit(self, repo: Path, sha: str) -> bool:
        return _rev_parse(repo, f"{sha}^{{commit}}", self.timeout) == sha

    def _local_commit(self, repo: Path, rev: str, *, exact_only: bool) -> str | None:
        """The commit `rev` names in the mirror already: a full commit id it holds, or (unless
        `exact_only`) what an earlier fetch recorded for HEAD, a branch, a tag or an id prefix."""
        low = rev.lower()
        if _FULL_SHA.fullmatch(low):
            return low if self._has_commit(repo, low) else None
        if exact_only:
            return None
        if rev == "HEAD":
            candidates = [_HEAD]
        elif rev.startswith("refs/"):
            candidates = [rev]
        else:
            candidates = [f"refs/heads/{rev}", f"refs/tags/{rev}"]
            if _SHORT_SHA.fullmatch(low):
                candidates.append(low)
        for candidate in candidates:
            sha = _rev_parse(repo, f"{candidate}^{{commit}}", self.timeout)
            if sha is not None:
                return sha
        return None

    def _missing(self, repo: Path, sha: str) -> list[str]:
        """The objects of commit `sha`'s tree the mirror lacks (blobs, after a filtered fetch)."""
        proc = _run(
            repo,
            ["rev-list", "--objects", "--missing=print", f"{sha}^{{tree}}"],
            timeout=self.timeout,
        )
        if proc.returncode != 0:
            raise SourceError(
                f"cannot list the files of {sha[:12]} in {repo}: {_last_line(proc.stderr)}"
            )
        return sorted(
            line[1:].strip()
            for line in proc.stdout.decode("ascii", "replace").splitlines()
            if line.startswith("?")
        )


class _TimedOut(SourceError):
    pass


class _GitFailed(SourceError):
    def __init__(self, message: str, *, hint: str, stderr: str) -> None:
        super().__init__(message, hint=hint)
        self.stderr = stderr


def _git_urls(app: Application) -> list[str]:
    return [
        s.repo_url
        for s in app.sources
        if s.repo_url and not charts.is_registry(s.repo_url, s.chart)  # no clone: not git
    ]


def _match_ref(rev: str, refs: Mapping[str, str], symrefs: Mapping[str, str]) -> str | None:
    """The advertised ref `rev` names, as Argo CD's lsRemote matches: the full name, or the short
    name of a branch (first) or tag; `HEAD` (or another symbolic ref) as its target."""
    if rev in symrefs:
        target = symrefs[rev]
        return target if target in refs else None
    if rev == "HEAD":
        return "HEAD" if "HEAD" in refs else None
    for name in (rev, f"refs/heads/{rev}", f"refs/tags/{rev}"):
        if name in refs and not name.endswith("^{}"):
            return name
    return None


def _key_url(url: str) -> str:
    """`_normalize_url` without lower-casing the path: `host/org/Repo`."""
    lowered = _normalize_url(url)
    host, _, _path = lowered.partition("/")
    text = url.strip()
    scp = _SCP_URL.match(text)
    if scp and "://" not in text:
        text = text[scp.end() :]
    else:
        text = re.sub(r"^[A-Za-z+]+://[^/]*", "", text)
    path = text.strip("/").removesuffix("/").removesuffix(".git").removesuffix("/")
    return f"{host}/{path}" if path.lower() == _path else lowered


def redact(text: str) -> str:
    """`text` with the password of any `scheme://user:password@` URL in it masked."""
    return _USERINFO.sub(r"\1:***@", text)


def _remotes(clone: Path) -> set[str]:
    try:
        proc = git.run_git(clone, "remote", "-v", check=False)
    except SourceError:
        return set()
    return {
        _normalize_url(fields[1])
        for fields in (line.split() for line in proc.stdout.decode("utf-8", "replace").splitlines())
        if len(fields) >= 2
    }


def _rev_parse(repo: Path, spec: str, timeout: float) -> str | None:
    proc = _run(
        repo, ["rev-parse", "--verify", "--quiet", "--end-of-options", spec], timeout=timeout
    )
    out = proc.stdout.decode("ascii", "replace").strip()
    return out if proc.returncode == 0 and _FULL_SHA.fullmatch(out) else None


def _ref_exists(repo: Path, ref: str) -> bool:
    return _run(repo, ["show-ref", "--verify", "--quiet", ref], timeout=30.0).returncode == 0


def _git(repo: Path, *args: str, timeout: float) -> None:
    proc = _run(repo, list(args), timeout=timeout)
    if proc.returncode != 0:
        raise SourceError(f"git {args[0]} in {repo} failed: {_last_line(proc.stderr)}")


def _run(
    repo: Path,
    args: list[str],
    *,
    timeout: float,
    stdin: bytes | None = None,
    network: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """`git -C repo args`: the user's environment and config, hooks off, never a prompt (no
    terminal: its own session), killed with its children after `timeout` seconds."""
    cmd = ["git", "-C", str(repo), "-c", "core.hooksPath=/dev/null", "--no-pager", *args]
    env = git.git_env()
    if network:
        env["GCM_INTERACTIVE"] = "never"  # Git Credential Manager: fail rather than ask
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
    except FileNotFoundError:
        raise SourceError(
            "git is not installed (needed to fetch repoURL)",
            hint="install git, or render from a clone with --repo-root",
        ) from None
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise _TimedOut(
            f"git {_subcommand(args)} timed out after {timeout:g}s",
            hint=f"a slow or unreachable server? ${FETCH_TIMEOUT_ENV} sets the limit",
        ) from None
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _subcommand(args: Sequence[str]) -> str:
    """`fetch` of `-c k=v fetch --quiet …`."""
    rest = list(args)
    while len(rest) > 1 and rest[0] == "-c":
        rest = rest[2:]
    return rest[0] if rest else "git"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive flock on `path` (created), held while the block runs: other runs, and other
    threads of this run, wait their turn."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


_STALE_SECONDS = 3600


def _prune_scratch(directory: Path) -> None:
    """Remove new mirrors that killed runs left half-built (`.tmp-*`), once an hour old: a
    younger one may be another run's, building right now."""
    now = time.time()
    for scratch in directory.glob(".tmp-*"):
        with contextlib.suppress(OSError):
            if now - scratch.stat().st_mtime > _STALE_SECONDS:
                shutil.rmtree(scratch, ignore_errors=True)


def _remove_stale_locks(repo: Path) -> None:
    """Lock files a killed git left in the mirror (we hold the mirror's lock, so no git of ours
    is running in it): they would make every later fetch fail."""
    for lock in [*repo.glob("*.lock"), *(repo / "refs").rglob("*.lock")]:
        with contextlib.suppress(OSError):
            lock.unlink()
    for scratch in (repo / "objects" / "pack").glob("tmp_*"):
        with contextlib.suppress(OSError):
            scratch.unlink()


def _private(directory: Path) -> None:
    """The mirrors' directory and the cache directory above it, created owner-only (they hold
    what the repositories hold); existing ones are left as the user set them."""
    for path in (directory.parent, directory):
        if not path.is_dir():
            path.mkdir(mode=0o700, parents=True, exist_ok=True)


def _last_line(stderr: bytes) -> str:
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    return redact(lines[-1]) if lines else "no error output"
