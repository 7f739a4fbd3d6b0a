"""Charts from Helm repositories and OCI registries, and chart dependencies, fetched the way Argo
CD's repo-server fetches them, with the real helm, into the cache.

What a chart source is (Argo CD's `ApplicationSource.IsHelm`/`IsHelmOci`, util/helm/client.go):

- `chart:` with an `https://` (or `http://`) repoURL: a Helm repository (`index.yaml`);
- `chart:` with a repoURL that has no scheme (`ghcr.io/org/charts`): an OCI registry, pulled
  as `oci://<repoURL>/<chart>` (Argo CD's `enableOCI` repositories, which are written without
  the scheme);
- an `oci://` repoURL: the OCI artifact itself is the chart (Argo CD 3.1+ OCI sources: its
  runRepoOperation takes `IsOCI` before `IsHelm`, so a `chart:` beside it is never read; a
  failed pull says so); `path` selects a directory inside it. The digest Argo CD compared
  (`status.sync.revision`) is pulled by digest.

`targetRevision` is a version (used as written, as Argo CD's `versions.IsVersion` does) or a
semver constraint (`1.2.*`, `>=1.0 <2`, `^1.2`), which helm resolves to the highest matching
version from the repository's index or the registry's tags, as Argo CD's `MaxVersion` does (both
use Masterminds/semver). A pulled chart is kept in the cache under `charts/<key>/`, keyed by
(repository, chart, version): the `.tgz` as pulled, its digest and its extracted tree, renamed
into place complete. A version already there is used without any network access; a constraint
asks the repository each run (the newest match may have changed).

Credentials come from the user's own helm configuration only (Argo CD's repository Secrets are
never read): the registry config (`$HELM_REGISTRY_CONFIG`, else `<helm config
home>/registry/config.json`, as `helm registry login` writes it; then docker's, as helm falls
back to it) for OCI, and the entry of the
user's `repositories.yaml` with the same URL (or, for a dependency declared `@name` /
`alias:name`, that name) for Helm repositories. helm verifies TLS against the system CAs and
`$SSL_CERT_FILE`/`$SSL_CERT_DIR`. Plain HTTP to an OCI registry only for hosts named in
`$KUBECTL_GITDRIFT_INSECURE_REGISTRIES` (comma-separated `host[:port]`); `http://` Helm
repositories are used as written. `helm.passCredentials` passes the repository's credentials to
chart URLs on other hosts (helm's `--pass-credentials`).

Dependencies of a chart from git that are not vendored in `charts/` are built as `helm
dependency build` builds them (Chart.lock when there is one), on a copy of the chart (the
exported tree is never written): the archives it downloads replace outdated ones in `charts/` as
helm's own build does. The downloaded archives are cached by the chart's dependency files (and
by commit when a `file://` dependency or a version range without a lock file makes the commit
decide them). The AppProject's `sourceRepos` governs dependency repositories as in Argo CD: the
repo-server is only given the credentials of repositories the project permits, and a failed
build that involves a repository the project does not permit is reported as "helm repos … are
not permitted in project '…'" (the error Argo CD's e2e tests assert).

helm runs in the run's work directory (its repositories.yaml holds the user's credentials); only
finished cache entries go below the cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.settings import INSECURE_ENV
from kubectl_gitdrift.sources import process
from kubectl_gitdrift.sources.chart_credentials import (
    helm_environment,
    permitted_credentials,
    repository_entry,
    write_repositories,
)
from kubectl_gitdrift.sources.chart_deps import (
    copy_local,
    dependencies,
    dependency_aliases,
    dependency_repo,
    for_policy,
    keep_built,
    merge_charts,
    repo_name,
)

PULL_TIMEOUT = 120.0
"""Seconds one `helm pull`, `helm repo update` or `helm dependency build` may run."""
MAX_EXTRACTED = 256 * 1024 * 1024
"""Bytes a chart archive may expand to (Argo CD bounds it too: manifestMaxExtractedSize)."""
CHARTS_KEPT = 64
"""Pulled charts and built dependency sets kept; the least recently used go first (once an
hour unused)."""

# Patterns only a chart pull or a dependency build uses, compiled by `re` when first used: most
# runs never need them (issue 18).
# Masterminds/semver v3 `NewVersion` (what Argo CD's versions.IsVersion accepts)
_SEMVER = (
    r"^v?(0|[1-9]\d*)(?:\.(0|[1-9]\d*))?(?:\.(0|[1-9]\d*))?"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
_DIGEST = r"sha256:[0-9a-f]{64}"
# compiled now: every app's sources are classified, and their URLs shown redacted
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
_USERINFO = re.compile(r"(://)[^/\s\"']*@")
_BARE_USERINFO = re.compile(r"(^|[\s\"'(])[^/\s\"'(:@]+:[^/\s\"']*@")
_LOCK = threading.Lock()
_KEY_LOCKS: dict[str, threading.Lock] = {}
"""One lock per cache entry, shared by every Charts of the process (renders run in threads)."""


def redact(text: str) -> str:
    """Credentials written into a URL (`https://user:token@host`, or `user:token@host/path`
    with no scheme, as OCI repoURLs are written) are never shown; an `@` in the password
    too."""
    return _BARE_USERINFO.sub(r"\1***@", _USERINFO.sub(r"\1***@", text))


def is_version(text: str) -> bool:
    """A version, not a constraint: Masterminds/semver's NewVersion accepts it."""
    return bool(re.match(_SEMVER, text.strip()))


@dataclass(frozen=True, slots=True)
class ChartSource:
    """Where a chart comes from."""

    kind: str  # "repo" (a Helm repository over http(s)) | "oci"
    repo: str  # the repoURL as written
    chart: str  # the chart's name ("" for an oci:// artifact that is itself the chart)
    ignored_chart: str = ""  # a `chart:` written beside an oci:// repoURL (Argo CD ignores it)

    @property
    def ref(self) -> str:
        """What helm pulls: the repository URL (with `chart` as the name) or `oci://…`."""
        if self.kind == "repo":
            return self.repo.rstrip("/")
        base = self.repo if self.repo.startswith("oci://") else f"oci://{self.repo}"
        return f"{base.rstrip('/')}/{self.chart}" if self.chart else base.rstrip("/")

    @property
    def host(self) -> str:
        return urlsplit(self.ref).netloc.lower()

    def describe(self, version: str = "") -> str:
        at = f" {version}" if version else ""
        if self.chart:
            return f"helm chart {self.chart}{at} from {redact(self.repo)}"
        return f"helm chart {redact(self.repo)}{at}"


def is_registry(repo_url: str, chart: str) -> bool:
    """A source pulled from a Helm repository or an OCI registry, never from a git clone:
    `chart:` set, or an `oci://` repoURL (the artifact is the chart). Such a source has no
    clone: `--repo-root` never has to be one of it."""
    return bool(chart) or repo_url.strip().lower().startswith("oci://")


def classify(repo_url: str, chart: str) -> ChartSource | None:
    """The chart source an Application source names, or None when it is a git source."""
    repo = repo_url.strip()
    scheme = _SCHEME.match(repo)
    if not chart:
        if scheme and scheme.group(1).lower() == "oci":
            return ChartSource("oci", repo, "")
        return None
    if scheme is None:
        if repo.startswith("git@") or re.match(r"^[\w.-]+@", repo):
            raise SourceError(
                f"helm chart {chart}: repoURL {redact(repo)} is a git URL; a chart needs a Helm "
                "repository (https://…) or an OCI registry (host/path)",
            )
        return ChartSource("oci", repo, chart)  # Argo CD: no scheme means OCI (enableOCI)
    name = scheme.group(1).lower()
    if name in ("http", "https"):
        return ChartSource("repo", repo, chart)
    if name == "oci":
        # Argo CD 3.1+ (runRepoOperation tests IsOCI before IsHelm): an oci:// repoURL is the
        # artifact itself and `chart:` is never read
        return ChartSource("oci", repo, "", ignored_chart=chart)
    raise SourceError(
        f"helm chart {chart}: repoURL {redact(repo)} is neither a Helm repository (https://…) "
        "nor an "
        "OCI registry (host/path or oci://host/path)"
    )


@dataclass(frozen=True, slots=True)
class Pulled:
    """A chart pulled and extracted."""

    directory: Path  # the chart's directory (holds Chart.yaml)
    version: str  # the version pulled (resolved when a constraint was asked for)
    digest: str  # sha256 of the chart archive


@dataclass(frozen=True, slots=True)
class RepoPolicy:
    """An AppProject's `sourceRepos` (Argo CD's `AppProject.IsSourcePermitted`)."""

    project: str
    source_repos: tuple[str, ...]

    def permits(self, url: str) -> bool:
        value = _normalize(url)
        matched = False
        for pattern in self.source_repos:
            deny = pattern.startswith("!")
            norm = _normalize(pattern[1:] if deny else pattern)
            if deny:
                if _glob(norm, value):
                    return False  # a deny pattern that matches: never permitted
                continue
            if norm == "*" or _glob(norm, value):
                matched = True
        return matched


def policy_for(
    project: str, bodies: Iterable[Mapping[str, Any]], namespaces: Sequence[str]
) -> RepoPolicy | None:
    """The sourceRepos of AppProject `project` among `bodies` (the first found in `namespaces`,
    in order: Argo CD's own namespace, then the app's); None when it was not read."""
    found: dict[tuple[str, str], Mapping[str, Any]] = {}
    for body in bodies:
        md = body.get("metadata") or {}
        if body.get("kind") == "AppProject" and isinstance(md, Mapping):
            found[(str(md.get("namespace") or ""), str(md.get("name") or ""))] = body
    for namespace in namespaces:
        project_body = found.get((namespace, project))
        if project_body is not None:
            spec = project_body.get("spec")
            repos = (spec.get("sourceRepos") if isinstance(spec, Mapping) else None) or []
            return RepoPolicy(project, tuple(str(r) for r in repos if isinstance(r, str)))
    return None


class Charts:
    """Pulls charts and builds dependencies for one run; safe to use from several threads.
    `directory` is the cache directory (None: keep nothing, work in `workdir`); `insecure`
    the registry hosts (lower case, `host[:port]`) that may be reached over plain HTTP
    (Settings.insecure_registries)."""

    def __init__(
        self,
        directory: Path | None,
        workdir: Path,
        helm: str,
        *,
        offline: bool = False,
        insecure: frozenset[str] = frozenset(),
    ) -> None:
        self.directory = directory
        self.workdir = workdir
        self.helm = helm
        self.offline = offline  # --offline: only what the cache holds
        self.insecure = insecure

    # ------------------------------------------------------------------ pulling a chart

    def pull(self, source: ChartSource, version: str, *, pass_credentials: bool = False) -> Pulled:
        """The chart `source` at `version` (a version or a constraint), from the cache when
        that exact version was pulled before."""
        version = version.strip()
        what = source.describe(version)
        if not version:
            raise SourceError(
                f"{what}: targetRevision is empty; Argo CD needs a chart version or a semver "
                "range (e.g. 1.2.3, 1.2.*, >=1.0 <2)"
            )
        digest = source.kind == "oci" and bool(re.fullmatch(_DIGEST, version))
        exact = digest or is_version(version)
        key = _key("chart", source.kind, source.ref, version)
        with self._key_lock(key):
            if exact:
                found = self._cached(key)
                if found is not None:
                    return found
            if self.offline:
                raise SourceError(
                    f"{what}: --offline, and the cache does not hold it"
                    + ("" if exact else " (a version range needs the repository's versions)"),
                    hint="run once without --offline to pull it into the cache",
                )
            with self._scratch("pull-") as scratch:  # helm's config, credentials included
                try:
                    archive = self._download(source, version, scratch, pass_credentials, what)
                except SourceError as exc:
                    if not source.ignored_chart:
                        raise
                    raise SourceError(
                        exc.message,
                        hint=f"Argo CD 3.1+ pulls an oci:// repoURL as the chart itself and "
                        f"ignores chart: {source.ignored_chart}; for a chart in a registry write "
                        f"the repoURL without oci:// (Argo CD's enableOCI form)",
                    ) from None
                staging = self._staging()
                try:
                    pulled = _unpack(archive, staging / "entry", what)
                except SourceError:
                    shutil.rmtree(staging, ignore_errors=True)
                    raise
            if not exact:  # keep it under the version it resolved to
                key = _key("chart", source.kind, source.ref, pulled.version)
                found = self._cached(key)
                if found is not None:
                    shutil.rmtree(staging, ignore_errors=True)
                    return found
            return self._keep(key, staging, pulled)

    def _download(
        self,
        source: ChartSource,
        version: str,
        scratch: Path,
        pass_credentials: bool,
        what: str,
    ) -> Path:
        out = scratch / "out"
        out.mkdir()
        if source.kind == "oci":
            if re.fullmatch(_DIGEST, version):  # the digest Argo CD compared: that exact artifact
                args = ["pull", f"{source.ref}@{version}", "--destination", str(out)]
            else:
                args = ["pull", source.ref, "--version", version, "--destination", str(out)]
            if source.host in self.insecure:
                args.append("--plain-http")
            self._helm(args, scratch, what)
        else:
            entry = repository_entry(source.ref, name="gitdrift")
            if pass_credentials:
                entry["pass_credentials_all"] = True
            write_repositories(scratch, [entry])
            self._helm(["repo", "update", "gitdrift"], scratch, what)
            args = ["pull", f"gitdrift/{source.chart}", "--version", version, "-d", str(out)]
            self._helm(args, scratch, what)
        archives = sorted(out.glob("*.tgz"))
        if len(archives) != 1:
            raise SourceError(f"{what} {version}: helm pull wrote {len(archives)} archives")
        return archives[0]

    # ------------------------------------------------------------------ dependencies

    def build_dependencies(
        self,
        chart_dir: Path,
        tree: Path,
        display: str,
        *,
        policy: RepoPolicy | None,
        pass_credentials: bool,
        revision: str | None,
    ) -> Path:
        """A copy of the chart at `chart_dir` with every dependency in `charts/`, as `helm
        dependency build` leaves it. `revision` is the commit the tree is at, or the pulled
        chart's digest (None: the working tree; nothing is cached)."""
        deps = dependencies(chart_dir)
        local = [d for d in deps if str(d.get("repository") or "").startswith("file://")]
        repos: list[str] = []  # in the order the chart declares them (as Argo CD lists them)
        for dep in deps:
            url = dependency_repo(dep)
            if url is not None and not url.startswith("file://") and url not in repos:
                repos.append(url)
        aliases = dependency_aliases(deps)
        denied = [r for r in repos if policy is not None and not policy.permits(for_policy(r))]
        files = [
            (name, (chart_dir / name).read_bytes())
            for name in ("Chart.yaml", "Chart.lock", "requirements.yaml", "requirements.lock")
            if (chart_dir / name).is_file()
        ]
        locked = any(n in ("Chart.lock", "requirements.lock") for n, _ in files) or all(
            is_version(str(d.get("version") or "")) for d in deps
        )
        key = None
        if revision is not None:
            key = _key(
                "deps-built",  # the archives helm built, not the whole charts/
                [(n, hashlib.sha256(b).hexdigest()) for n, b in files],
                sorted(denied),
                # file:// dependencies are files of the commit, and without a lock file a
                # version range resolves to what the repository has when that commit is
                # rendered (Argo CD caches manifests per commit): the commit decides them
                [revision, display] if local or not locked else [],
            )
        what = f"source path {display}: helm dependency build"
        dest = Path(tempfile.mkdtemp(prefix="chart-", dir=self._work()))
        built = dest / "chart"
        shutil.copytree(chart_dir, built, symlinks=False)
        lock = self._key_lock(key) if key is not None else contextlib.nullcontext()
        with lock:
            cached = self._cached_charts(key) if key is not None else None
            if cached is None and self.offline:
                raise SourceError(
                    f"{what}: --offline, and the cache does not hold its dependencies "
                    f"({', '.join(redact(r) for r in repos) or 'file:// only'})",
                    hint="run once without --offline to build them into the cache",
                )
            if cached is None:
                with self._scratch("deps-") as scratch:
                    work = scratch / "tree" / display
                    shutil.copytree(chart_dir, work, symlinks=False)
                    for dep in local:  # file:// dependencies keep their place beside the chart
                        copy_local(dep, chart_dir, tree, scratch / "tree", display, what)
                    entries = [
                        repository_entry(
                            url,
                            name=repo_name(url),
                            credentials=policy is None or policy.permits(for_policy(url)),
                        )
                        for url in repos
                        if not url.startswith("oci://")
                    ]
                    for alias, url in aliases.items():
                        entry = repository_entry(
                            url,
                            name=alias,
                            credentials=policy is None or policy.permits(for_policy(url)),
                        )
                        entries = [e for e in entries if e["url"] != entry["url"]] + [entry]
                    for entry in entries:
                        if pass_credentials:
                            entry["pass_credentials_all"] = True
                    write_repositories(scratch, entries)
                    oci = [r for r in repos if r.startswith("oci://")]
                    args = ["dependency", "build", str(work)]
                    if any(urlsplit(r).netloc.lower() in self.insecure for r in oci):
                        args.append("--plain-http")  # helm: one setting for the whole build
                    overrides = (
                        permitted_credentials(scratch, [r for r in oci if r not in denied])
                        if denied
                        else {}
                    )
                    try:
                        self._helm(args, scratch, what, overrides=overrides)
                    except SourceError as exc:
                        if denied and policy is not None:
                            raise SourceError(
                                f"{what}: helm repos "
                                f"{', '.join(redact(for_policy(r)) for r in denied)} "
                                f"are not permitted in project '{policy.project}'",
                                hint="add them to the AppProject's spec.sourceRepos, or vendor "
                                "the dependencies in charts/",
                            ) from exc
                        raise
                    staging = self._staging()
                    keep_built(work / "charts", chart_dir / "charts", staging / "entry" / "charts")
                cached = self._keep_charts(key, staging) if key is not None else None
                merge_charts(cached or staging / "entry" / "charts", built / "charts", deps)
                if cached is not None or key is None:
                    shutil.rmtree(staging, ignore_errors=True)
                return built
            merge_charts(cached, built / "charts", deps)
        return built

    # ------------------------------------------------------------------ internals

    def _helm(
        self,
        args: list[str],
        scratch: Path,
        what: str,
        *,
        overrides: Mapping[str, str] | None = None,
    ) -> None:
        env = {**helm_environment(scratch), **(overrides or {})}
        proc = process.run_tool(
            [self.helm, *args],
            cwd=scratch,
            env=env,
            timeout=PULL_TIMEOUT,
            what=what,
        )
        if proc.returncode != 0:
            cause = _cause(proc.stdout, proc.stderr, scratch)
            raise SourceError(f"{what}: {cause}", hint=_hint(cause))

    def _work(self) -> Path:
        self.workdir.mkdir(parents=True, exist_ok=True)
        return self.workdir

    @contextlib.contextmanager
    def _scratch(self, prefix: str) -> Iterator[Path]:
        """A private directory for one helm run, in the run's work directory (it holds the
        repositories.yaml with the user's credentials), removed afterwards."""
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=self._work()))
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)

    def _staging(self) -> Path:
        """Where a new cache entry (`<staging>/entry`) is put together: below the cache, so one
        rename puts it in place; in the work directory without a cache (or one that cannot be
        written), where it stays for the run."""
        if self.directory is not None:
            try:
                root = self._root()
                root.mkdir(parents=True, exist_ok=True)
                return Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
            except OSError:
                pass
        return Path(tempfile.mkdtemp(prefix="entry-", dir=self._work()))

    def _root(self) -> Path:
        assert self.directory is not None
        if not self.directory.is_dir():
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        return self.directory / "charts"

    def _key_lock(self, key: str) -> threading.Lock:
        with _LOCK:
            return _KEY_LOCKS.setdefault(key, threading.Lock())

    def _cached(self, key: str) -> Pulled | None:
        if self.directory is None:
            return None
        entry = self._root() / key
        try:
            meta = json.loads((entry / "meta.json").read_bytes())
            directory = entry / str(meta["directory"])
            pulled = Pulled(directory, str(meta["version"]), str(meta["digest"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not (directory / "Chart.yaml").is_file():
            return None
        with contextlib.suppress(OSError):
            os.utime(entry)
        return pulled

    def _keep(self, key: str, staging: Path, pulled: Pulled) -> Pulled:
        """Put `staging/entry` in place as the cache entry `key` (or use it where it is)."""
        entry = staging / "entry"
        meta = {
            "directory": pulled.directory.relative_to(entry).as_posix(),
            "version": pulled.version,
            "digest": pulled.digest,
        }
        (entry / "meta.json").write_text(json.dumps(meta, sort_keys=True), encoding="utf-8")
        if self.directory is None or staging.parent != self._root():
            return pulled
        self._place(entry, key)
        found = self._cached(key)
        if found is None:
            return pulled  # not placed: used from the staging directory (pruned later)
        shutil.rmtree(staging, ignore_errors=True)
        return found

    def _cached_charts(self, key: str) -> Path | None:
        if self.directory is None:
            return None
        entry = self._root() / key / "charts"
        if not entry.is_dir():
            return None
        with contextlib.suppress(OSError):
            os.utime(entry.parent)
        return entry

    def _keep_charts(self, key: str, staging: Path) -> Path | None:
        """Put `staging/entry` (holding `charts/`) in place as the cache entry `key`; None when
        it could not be."""
        if self.directory is None or staging.parent != self._root():
            return None
        self._place(staging / "entry", key)
        return self._cached_charts(key)

    def _place(self, entry: Path, key: str) -> None:
        """Rename a complete entry into place (another run may have put it first)."""
        with contextlib.suppress(OSError):
            entry.rename(self._root() / key)
        self._prune(keep=key)

    def _prune(self, keep: str) -> None:
        now = time.time()
        entries = []
        for path in self._root().iterdir():
            with contextlib.suppress(OSError):
                age = now - path.stat().st_mtime
                if path.name.startswith(".tmp-"):
                    if age > 3600:
                        shutil.rmtree(path, ignore_errors=True)
                elif path.name != keep:
                    entries.append((age, path))
        entries.sort()
        for age, path in entries[CHARTS_KEPT - 1 :]:
            if age > 3600:  # one in use by a render of this or another run is recent
                shutil.rmtree(path, ignore_errors=True)


# ---------------------------------------------------------------------- helpers


def _key(*parts: Any) -> str:
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _normalize(url: str) -> str:
    """Argo CD's git.NormalizeGitURL, as far as chart repositories need it."""
    return url.strip().lower().removesuffix(".git")


def _glob(pattern: str, value: str) -> bool:
    """gobwas/glob with `/` as the separator: `*` stays in a segment, `**` crosses them."""
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        elif c == "{":
            end = pattern.find("}", i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                alts = pattern[i + 1 : end].split(",")
                out.append("(?:" + "|".join(re.escape(a) for a in alts) + ")")
                i = end
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return re.fullmatch("".join(out), value) is not None


# An HTTP status as its own number: not part of a port (127.0.0.1:40121), a digest or a version.
_STATUS_401 = r"(?<![\w:.])401(?![\w.])"
_STATUS_403 = r"(?<![\w:.])403(?![\w.])"


def _cause(stdout: bytes, stderr: bytes, scratch: Path) -> str:
    """helm's own reason, on one line."""
    out = stdout.decode("utf-8", "replace").splitlines()
    err = stderr.decode("utf-8", "replace").splitlines()
    detail = [ln.strip() for ln in out if ln.startswith("\t") and ln.strip()]  # repo update
    errors = [ln.strip() for ln in err if ln.strip().lower().startswith("error")]
    lines = [ln.strip() for ln in err if ln.strip() and not ln.startswith("level=")]
    line = (detail or errors or lines or ["no error output"])[-1]
    line = re.sub(r"^(?:Error|error):\s*", "", line)
    for prefix in {str(scratch), str(scratch.resolve())}:
        line = line.replace(prefix + "/", "").replace(prefix, ".")
    line = redact(re.sub(r'failed to perform "\w+" on source: ', "", line))
    line = re.sub(r"\s*\(try 'helm repo update'\)", "", line)
    low = line.lower()
    if "basic credential not found" in low or "no basic auth credentials" in low:
        return f"401 Unauthorized: no credentials for this registry in your helm config ({line})"
    if re.search(_STATUS_401, low) or "unauthorized" in low:
        return f"401 Unauthorized: credentials missing or rejected ({line})"
    if re.search(_STATUS_403, low) and "forbidden" in low:
        return f"403 Forbidden ({line})"
    found = re.search(r"no chart version found for (\S+)", line)
    if found:
        return f"version not found: the repository index has no {found.group(1)}"
    found = re.search(r'chart "([^"]+)" matching .* no chart name found', line)
    if found:
        return f"chart not found: the repository index has no chart {found.group(1)}"
    found = re.search(r"(\S+:\S+): not found$", line)
    if found:
        return f"version not found: the registry has no {found.group(1)}"
    return line


def _hint(cause: str) -> str | None:
    low = cause.lower()
    if low.startswith("401"):
        return (
            "log in with your own credentials: `helm registry login HOST` (OCI) or `helm repo "
            "add NAME URL --username …` (Helm repositories)"
        )
    if "http response to https client" in low:
        return f"a registry that only speaks plain HTTP must be listed in ${INSECURE_ENV}"
    if "x509" in low or "certificate" in low:
        return "trust its CA: put it in the system trust store or point $SSL_CERT_FILE at it"
    if "not found:" in low:
        return "check spec.source.targetRevision against the versions the repository has"
    return None


def _unpack(archive: Path, entry: Path, what: str) -> Pulled:
    """Extract a chart archive into `entry/chart-tree` (bounded, no links out, no devices)."""
    import tarfile  # only a pulled chart is unpacked: most runs never need it

    data = archive.read_bytes()
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    target = entry / "tree"
    target.mkdir(parents=True)
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = tar.getmembers()
            if sum(m.size for m in members) > MAX_EXTRACTED:
                raise SourceError(f"{what}: the chart expands to more than {MAX_EXTRACTED} bytes")
            tar.extractall(target, filter="data")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise SourceError(
            f"{what}: {archive.name} is not a readable chart archive: {exc}"
        ) from None
    tops = [p for p in target.iterdir() if (p / "Chart.yaml").is_file()]
    if len(tops) != 1:
        raise SourceError(f"{what}: {archive.name} does not hold one chart")
    shutil.copyfile(archive, entry / "chart.tgz")
    try:
        meta = yaml.safe_load((tops[0] / "Chart.yaml").read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, OSError):
        meta = None
    version = str(meta.get("version") or "") if isinstance(meta, Mapping) else ""
    return Pulled(tops[0], version, digest)
