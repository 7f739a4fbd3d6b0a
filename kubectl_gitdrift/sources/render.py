"""Turn an Application's git source(s) into desired Manifests, locally, like Argo CD's repo-server.

Which revision: the `revision` argument, else what Argo CD last compared against
(`status.sync.revision(s)`), else the source's targetRevision, else HEAD; `local=True` renders the
working tree as it is. The tree at that revision is exported into `workdir` (the user's checkout is
never touched) and kept there for `locate`. The source type is detected as Argo CD does
(argocd-semantics.md §4.1): an explicit helm/kustomize/directory/plugin block, else `Chart.yaml`
⇒ Helm, a kustomization file ⇒ Kustomize, else a plain directory; `.argocd-source.yaml` and
`.argocd-source-<app>.yaml` in the source path are merged over the options first. Each type's
renderer (RENDERERS) then renders one RenderContext (sources/context.py).
"""

from __future__ import annotations

import functools
import posixpath
import re
import shutil
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import SourceError, UsageError
from kubectl_gitdrift.model import Application, AppSource, Manifest, VaryingRender
from kubectl_gitdrift.settings import Settings
from kubectl_gitdrift.sources import charts as chart_fetch
from kubectl_gitdrift.sources import (
    cmp,
    directory,
    git,
    helm,
    jsonnet,
    kustomize,
    nondeterminism,
    tools,
)
from kubectl_gitdrift.sources import config as render_config
from kubectl_gitdrift.sources.buildenv import build_env
from kubectl_gitdrift.sources.cache import CacheMiss, RenderCache, TreeCache
from kubectl_gitdrift.sources.context import RenderContext, Renderer
from kubectl_gitdrift.sources.kustomize_closure import find_kustomization

WORKING_TREE = "working tree"
SOURCE_TYPES = ("helm", "kustomize", "directory", "plugin")
RENDERERS: Mapping[str, Renderer] = {
    "directory": directory.Directory(),
    "kustomize": kustomize.Kustomize(),
    "helm": helm.Helm(),
    "plugin": cmp.Plugins(),
}
"""The renderer of each source type."""
JSONNET = jsonnet.Jsonnet()
"""Evaluates the `*.jsonnet` files of directory sources (unless argocd-cm turns it off)."""


@dataclass(frozen=True, slots=True)
class RenderedSource:
    """One source of the Application as rendered."""

    index: int  # position in spec.sources (0 for spec.source)
    repo_url: str
    path: str  # repo-relative source path, "." for the repo root
    kind: str  # kustomize | directory | helm
    revision: str  # commit sha, or "working tree"
    tree: Path  # the exported tree (or the working tree with local=True)
    varying: tuple[VaryingRender, ...] = ()  # where it renders differently each time (helm)
    # what locating a Helm value needs (sources/helm_locate.py): the tool block as rendered
    # (`.argocd-source*.yaml` merged), the build environment, and the keys rendered
    options: Mapping[str, Any] | None = None
    env: Mapping[str, str] | None = None
    keys: frozenset[tuple[str, str, str]] = frozenset()  # (group, kind, name) of each object
    pulled: bool = False  # a chart pulled from a Helm repository or an OCI registry
    # what its renderer noted (a duplicate key in a manifest; which helm rendered it)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Rendered:
    manifests: tuple[Manifest, ...]
    revision: str  # the sha rendered (first source), or "working tree"
    tree: Path  # the exported tree of the first source, for locate
    source_path: str  # the first source's path
    sources: tuple[RenderedSource, ...] = ()
    repo: Path | None = None  # the first source's repository (a clone's top, or a fetched mirror)
    fetched: bool = False  # the first source came from a fetched mirror, not --repo-root
    refs: Mapping[str, Path] | None = None  # `ref` name → that source's tree (exported on use)

    @property
    def varying(self) -> tuple[VaryingRender, ...]:
        """Where the sources render differently on every render (sources/nondeterminism.py)."""
        return tuple(v for s in self.sources for v in s.varying)

    @property
    def notes(self) -> tuple[str, ...]:
        """What the sources' renderers noted, for the report's notes."""
        return tuple(n for s in self.sources for n in s.notes)


@dataclass(frozen=True, slots=True)
class Checkout:
    """Where one source's files come from: a repository and the commit in it."""

    top: Path  # a clone's work tree top, or a bare mirror fetched into the cache
    sha: str  # the commit, or WORKING_TREE
    where: str  # for messages: the --repo-root directory, or the repoURL fetched
    fetched: bool = False


class Repos(Protocol):
    """Finds the repository and commit each git source renders from (sources/fetch.py fetches
    repoURLs; LocalClone below is one --repo-root clone for every source)."""

    def checkout(
        self,
        app: Application,
        source: AppSource,
        revision: str,
        prefer_remote: bool,
        *,
        cached_only: bool = False,
    ) -> Checkout:
        """Where `source` at `revision` is; `cached_only` raises CacheMiss rather than fetch."""


class Exports:
    """What the renders of one run share: the work tree's top and revisions resolved once per
    (repo, revision), and one exported tree per commit (not one per Application). Safe to use
    from several threads."""

    def __init__(self, root: Path, store: TreeCache | None = None) -> None:
        self.root = root
        self.store = store  # exported trees kept between runs (the render cache's directory)
        self._lock = threading.Lock()
        self._tops: dict[tuple[Path, bool], Path] = {}
        self._revisions: dict[tuple[str, str, bool], str] = {}
        self._trees: dict[str, threading.Lock] = {}

    def top(self, repo_root: Path, local: bool) -> Path:
        with self._lock:
            found = self._tops.get((repo_root, local))
        if found is None:
            found = _top(repo_root, local)
            with self._lock:
                self._tops[(repo_root, local)] = found
        return found

    def resolve(self, top: Path, rev: str, prefer_remote: bool) -> str:
        key = (str(top), rev, prefer_remote)
        with self._lock:
            sha = self._revisions.get(key)
        if sha is None:
            sha = git.resolve_revision(top, rev, prefer_remote=prefer_remote)
            with self._lock:
                self._revisions[key] = sha
        return sha

    def export(self, top: Path, sha: str) -> Path:
        with self._lock:
            lock = self._trees.setdefault(sha, threading.Lock())
        with lock:
            if self.store is not None:
                kept = self.store.get(sha) or self.store.put(
                    sha, lambda dest: git.export_tree(top, sha, dest), git.tree_bytes(top, sha)
                )
                if kept is not None:
                    return kept
            self.root.mkdir(parents=True, exist_ok=True)
            return _export(top, sha, self.root)


def render(
    app: Application,
    repo_root: Path | None,
    *,
    revision: str | None = None,
    local: bool = False,
    workdir: Path,
    build_options: Sequence[str] = (),
    exports: Exports | None = None,
    cache: RenderCache | None = None,
    cached_only: bool = False,
    repos: Repos | None = None,
    policy: chart_fetch.RepoPolicy | None = None,
    config: render_config.RenderConfig | None = None,
    offline: bool = False,
    settings: Settings | None = None,
) -> Rendered:
    """Render every source of `app` that has a path (ref-only sources are skipped).

    `repos` says where each source's repository is (fetched mirrors, `--repo-root URL=DIR`);
    without it every source comes from the one clone at `repo_root`. `exports` shares resolved
    revisions and exported trees between the renders of one run (`--all`); `cache` reads and
    stores kustomize renders on disk (never for `local`). `cached_only` raises CacheMiss rather
    than run kustomize or helm. Charts from Helm repositories and OCI registries are pulled
    (sources/charts.py), dependencies under the AppProject's `policy` (its sourceRepos);
    `offline` allows only what the chart cache holds. `settings` are the run's knobs (default:
    this process's environment, read now)."""
    if revision and local:
        raise UsageError("--revision and --local cannot be used together")
    settings = settings or Settings.from_environ()
    todo = [(i, s) for i, s in enumerate(app.sources) if not (s.ref and not s.path and not s.chart)]
    if not todo:
        raise SourceError(f"application {app.qualified_name} has no source with a path to render")
    if repos is None and repo_root is None:
        raise UsageError("--repo-root DIR is required: a local clone of the Application's repoURL")
    found: Repos = repos or LocalClone(
        repo_root or Path(), [s for _, s in todo], local=local, exports=exports
    )

    def checkout(index: int, source: AppSource) -> tuple[Checkout, Path]:
        rev, prefer_remote = _revision_for(app, index, source, revision)
        co = found.checkout(app, source, rev, prefer_remote, cached_only=cached_only)
        if co.sha == WORKING_TREE:
            return co, co.top
        if exports is not None:
            return co, exports.export(co.top, co.sha)
        return co, _export(co.top, co.sha, workdir)

    def ref_tree(index: int, source: AppSource) -> Path:
        # a `ref` source's tree, for `$<ref>/…` Helm value files; exported only when used
        return checkout(index, source)[1]

    refs = helm.RefTrees(app, ref_tree)
    manifests: list[Manifest] = []
    parts: list[RenderedSource] = []
    repo: Checkout | None = None
    for index, source in todo:
        registry = chart_fetch.classify(source.repo_url, source.chart)
        if registry is not None:  # a chart from a Helm repository or an OCI registry: no git
            part, objs = _render_chart(
                app, index, source, registry, revision, workdir, cache, refs, cached_only, policy,
                offline, config, settings,
            )  # fmt: skip
            parts.append(part)
            manifests.extend(objs)
            continue
        co, tree = checkout(index, source)
        repo = repo or co
        part, objs = _render_source(
            app, index, source, tree, co.sha, co.where, workdir, build_options, cache, refs,
            cached_only, policy, config, offline, settings,
        )  # fmt: skip
        parts.append(part)
        manifests.extend(objs)
    first = parts[0]
    return Rendered(
        manifests=tuple(manifests),
        revision=first.revision,
        tree=first.tree,
        source_path=first.path,
        sources=tuple(parts),
        repo=repo.top if repo is not None else None,
        fetched=repo.fetched if repo is not None else False,
        refs=refs,
    )


class LocalClone:
    """Every source from the one clone at `--repo-root` (a source of another repository is
    refused unless the clone has it as a remote)."""

    def __init__(
        self,
        root: Path,
        sources: Sequence[AppSource],
        *,
        local: bool = False,
        exports: Exports | None = None,
    ) -> None:
        self.root, self.local, self.exports = root, local, exports
        self.sources = list(sources)
        self.top = exports.top(root, local) if exports is not None else _top(root, local)
        _check_repo_urls(self.sources, self.top, root, local)

    def checkout(
        self,
        app: Application,
        source: AppSource,
        revision: str,
        prefer_remote: bool,
        *,
        cached_only: bool = False,
    ) -> Checkout:
        if source not in self.sources:  # a `ref` source, asked for by a `$ref/…` value file
            _check_repo_urls([*self.sources, source], self.top, self.root, self.local)
        if self.local:
            return Checkout(self.top, WORKING_TREE, str(self.root))
        if self.exports is not None:
            sha = self.exports.resolve(self.top, revision, prefer_remote)
        else:
            sha = git.resolve_revision(self.top, revision, prefer_remote=prefer_remote)
        return Checkout(self.top, sha, str(self.root))


def source_options(source: AppSource) -> dict[str, Any]:
    """The source's tool blocks as `{"kustomize": {...}, ...}`, whichever form `options` uses
    (the outer Application form, or the inner block of the type named by `kind`)."""
    raw = dict(source.options or {})
    if any(key in SOURCE_TYPES for key in raw):
        blocks = {k: dict(v or {}) for k, v in raw.items() if k in SOURCE_TYPES and v is not None}
    elif source.kind:
        blocks = {source.kind: raw}
    else:
        blocks = {}
    if source.kind and source.kind not in blocks:
        blocks[source.kind] = {}
    return blocks


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (null deletes a key)."""
    if not isinstance(patch, Mapping):
        return patch
    out = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def detect_type(blocks: Mapping[str, Any], app_dir: Path, *, explicit_kind: str = "") -> str:
    """helm | kustomize | directory | plugin, as Argo CD's ExplicitType / discovery.AppType."""
    explicit = sorted(
        k for k, v in blocks.items() if k in SOURCE_TYPES and (v or k == explicit_kind)
    )
    if len(explicit) > 1:
        raise SourceError(f"multiple application sources defined: {', '.join(explicit)}")
    if explicit:
        return explicit[0]
    if (app_dir / "Chart.yaml").is_file():
        return "helm"
    if find_kustomization(app_dir) is not None:
        return "kustomize"
    return "directory"


def _explicit_type(blocks: Mapping[str, Any], explicit_kind: str) -> bool:
    """The source names its type (a non-empty tool block, or the block the Application has)."""
    return any(k in SOURCE_TYPES and (v or k == explicit_kind) for k, v in blocks.items())


# --------------------------------------------------------------------------- internals


def _top(repo_root: Path, local: bool) -> Path:
    try:
        return git.toplevel(repo_root)
    except SourceError:
        if local and repo_root.is_dir():
            return repo_root.resolve()  # --local works on a plain directory too
        raise


def _revision_for(
    app: Application, index: int, source: AppSource, revision: str | None
) -> tuple[str, bool]:
    """(revision, prefer the remote branch) for one source."""
    if revision:
        return revision, False
    revs = app.revisions
    if len(app.sources) == 1 and revs and revs[0]:
        return revs[0], False
    if len(app.sources) > 1 and len(revs) == len(app.sources) and revs[index]:
        return revs[index], False
    if source.target_revision:
        return source.target_revision, True
    return "HEAD", True


def _export(top: Path, sha: str, workdir: Path) -> Path:
    tree = workdir / f"tree-{sha[:16]}"
    done = workdir / f"tree-{sha[:16]}.done"
    if done.exists() and tree.is_dir():
        return tree
    if tree.exists():
        shutil.rmtree(tree)
    git.export_tree(top, sha, tree)
    done.write_text(sha + "\n", encoding="utf-8")
    return tree


def _render_source(
    app: Application,
    index: int,
    source: AppSource,
    tree: Path,
    sha: str,
    repo_root: Path | str,
    workdir: Path,
    build_options: Sequence[str],
    cache: RenderCache | None,
    refs: Mapping[str, Path] | None,
    cached_only: bool,
    policy: chart_fetch.RepoPolicy | None,
    config: render_config.RenderConfig | None,
    offline: bool,
    settings: Settings,
) -> tuple[RenderedSource, list[Manifest]]:
    """Detect the type of a git source and render it with that type's renderer."""
    conf = config or render_config.RenderConfig()
    path = _clean_path(source.path)
    app_dir = tree if path == "." else tree / path
    at = "the working tree" if sha == WORKING_TREE else sha[:12]
    env = build_env(app, source, "" if sha == WORKING_TREE else sha)
    blocks: dict[str, Any] = {}
    if source.chart and not source.path:
        kind = "helm"
    else:
        if not app_dir.is_dir():
            what = "is not a directory" if app_dir.exists() else "does not exist"
            raise SourceError(
                f"source path {path} {what} in {repo_root} at {at}",
                hint="check spec.source.path, or pick another revision with --revision",
            )
        blocks = _with_overrides(source_options(source), app_dir, app.name, tree)
        kind = detect_type(blocks, app_dir, explicit_kind=source.kind)
        if conf.plugins and not _explicit_type(blocks, source.kind):
            # Argo CD's discovery.AppType asks the plugins first
            if cached_only and any(p.discover_command for p in conf.plugins):
                raise CacheMiss(path)
            claimed = cmp.discover(
                conf.plugins, app_dir, env, conf.allow_plugins, tree=tree, workdir=workdir,
                display=path, settings=settings,
            )  # fmt: skip
            if claimed is not None:
                kind = "plugin"
        if kind in conf.disabled:  # argocd-cm `<type>.enable: false`: plain YAML, as Argo CD
            kind = "directory"
    ctx = RenderContext(
        app=app,
        source=source,
        tree=tree,
        path=path,
        revision=None if sha == WORKING_TREE else sha,
        env=env,
        options=blocks.get(kind) or {},
        workdir=workdir,
        settings=settings,
        config=conf,
        cache=cache,
        cached_only=cached_only,
        offline=offline,
        build_options=build_options,
        refs=refs or {},
        policy=policy,
        charts=_charts(cache, workdir, offline, settings) if kind == "helm" else None,
        jsonnet=None if "jsonnet" in conf.disabled else JSONNET,
    )
    objs = RENDERERS[kind].render(ctx)
    varying = nondeterminism.examine(ctx, objs, RENDERERS[kind].render) if kind == "helm" else ()
    part = RenderedSource(
        index, source.repo_url, path, kind, sha, tree, varying, options=ctx.options, env=env,
        keys=_keys(objs),
        notes=(*ctx.notes, *(_helm_notes(settings, conf) if kind == "helm" else ())),
    )  # fmt: skip
    return part, objs


def _render_chart(
    app: Application,
    index: int,
    source: AppSource,
    registry: chart_fetch.ChartSource,
    revision: str | None,
    workdir: Path,
    cache: RenderCache | None,
    refs: Mapping[str, Path] | None,
    cached_only: bool,
    policy: chart_fetch.RepoPolicy | None,
    offline: bool,
    config: render_config.RenderConfig | None,
    settings: Settings,
) -> tuple[RenderedSource, list[Manifest]]:
    """Pull a chart from a Helm repository or an OCI registry and `helm template` it, as the
    repo-server does: the chart is both the app directory and the root (value files resolve
    inside it, or in a `$ref` source's tree)."""
    if cached_only:
        raise CacheMiss(source.chart or source.repo_url)
    if policy is not None and not policy.permits(source.repo_url):
        raise SourceError(
            f"application repo {chart_fetch.redact(source.repo_url)} is not permitted in "
            f"project '{policy.project}'",
            hint="add it to the AppProject's spec.sourceRepos",
        )
    charts = _charts(cache, workdir, offline, settings)
    if charts is None:
        raise SourceError(
            f"{registry.describe()}: helm charts need the helm binary", hint=tools.INSTALL_HELM
        )
    options = source_options(source).get("helm") or {}
    pulled = charts.pull(
        registry,
        _chart_version(app, index, source, revision),
        pass_credentials=bool(options.get("passCredentials")),
    )
    path = "."
    app_dir = pulled.directory
    if not registry.chart:  # an oci:// artifact that is a chart: `path` selects inside it
        path = _clean_path(source.path)
        app_dir = app_dir if path == "." else app_dir / path
        if not (app_dir / "Chart.yaml").is_file():
            raise SourceError(f"{registry.describe(pulled.version)}: no chart at path {path}")
    name = registry.chart or registry.ref.rsplit("/", 1)[-1]
    env = build_env(app, source, pulled.version)
    ctx = RenderContext(
        app=app,
        source=source,
        tree=pulled.directory,
        path=path,
        revision=pulled.digest,
        env=env,
        options=options,
        workdir=workdir,
        settings=settings,
        config=config or render_config.RenderConfig(),
        cache=cache,
        offline=offline,
        refs=refs or {},
        policy=policy,
        charts=charts,
        display=name if path == "." else f"{name}/{path}",
        origins=False,
    )
    objs = RENDERERS["helm"].render(ctx)
    varying = nondeterminism.examine(ctx, objs, RENDERERS["helm"].render)
    part = RenderedSource(
        index, source.repo_url, registry.chart or path, "helm", pulled.version, pulled.directory,
        varying, options=options, env=env, keys=_keys(objs), pulled=True,
        notes=_helm_notes(settings, ctx.config),
    )  # fmt: skip
    return part, objs


def _helm_notes(settings: Settings, conf: render_config.RenderConfig) -> tuple[str, ...]:
    """Which helm major rendered, when Argo CD's version or --helm-version chose it."""
    note = tools.choose_helm(settings, conf.argocd_version, conf.repo_server).note
    return (note,) if note else ()


def _keys(manifests: Sequence[Manifest]) -> frozenset[tuple[str, str, str]]:
    return frozenset((m.key.group, m.key.kind, m.key.name) for m in manifests)


def _chart_version(app: Application, index: int, source: AppSource, revision: str | None) -> str:
    """The chart version (or constraint) to pull: `--revision` for a one-source app, else the
    version Argo CD last compared (status.sync.revision; for an oci:// artifact, the digest it
    resolved), else targetRevision."""
    if revision and len(app.sources) == 1:
        return revision
    revs = app.revisions
    known = ""
    if len(app.sources) == 1 and revs:
        known = revs[0]
    elif len(app.sources) > 1 and len(revs) == len(app.sources):
        known = revs[index]
    if known and not re.fullmatch(r"[0-9a-f]{40}|sha256:[0-9a-f]{64}", known):
        return known
    if re.fullmatch(r"sha256:[0-9a-f]{64}", known) and chart_fetch.is_registry(source.repo_url, ""):
        return known  # an oci:// artifact: the digest Argo CD compared (pulled by digest)
    return source.target_revision


def _charts(
    cache: RenderCache | None, workdir: Path, offline: bool, settings: Settings
) -> chart_fetch.Charts | None:
    """Pulled charts and built dependencies kept beside the render cache (none without it);
    None without a helm binary."""
    binary = tools.helm_binary(settings)
    if binary is None:
        return None
    directory = cache.directory if cache is not None else None
    return chart_fetch.Charts(
        directory, workdir, binary, offline=offline, insecure=settings.insecure_registries()
    )


def _clean_path(path: str) -> str:
    clean = posixpath.normpath(path.strip().strip("/")) if path.strip().strip("/") else "."
    if clean == ".." or clean.startswith("../") or path.startswith("/"):
        raise SourceError(f"source path {path} points outside the repository")
    return clean


def _with_overrides(
    blocks: dict[str, Any], app_dir: Path, app_name: str, tree: Path
) -> dict[str, Any]:
    """Merge `.argocd-source.yaml`, then `.argocd-source-<app>.yaml`, over the tool options."""
    out: dict[str, Any] = blocks
    for name in (".argocd-source.yaml", f".argocd-source-{app_name}.yaml"):
        file = app_dir / name
        if not file.is_file():
            continue
        rel = file.relative_to(tree).as_posix()
        docs = yamlio.load_documents(file.read_bytes(), rel)
        if len(docs) > 1:
            raise SourceError(f"{rel}: expected one document, got {len(docs)}")
        patch = {k: v for k, v in (docs[0] if docs else {}).items() if k in SOURCE_TYPES}
        out = merge_patch(out, patch)
    return out


_SCP_URL = re.compile(r"^(?:[\w.-]+@)?([\w.-]+):(?!//)(.*)$")


@functools.lru_cache(maxsize=4096)  # every app of a fleet names the same few repositories
def _normalize_url(url: str) -> str:
    """`https://github.com/org/repo.git`, `git@github.com:org/repo` → `github.com/org/repo`."""
    url = url.strip()
    scp = _SCP_URL.match(url)
    if scp and "://" not in url:
        url = f"{scp.group(1)}/{scp.group(2)}"
    url = re.sub(r"^[a-z+]+://", "", url.lower())
    url = re.sub(r"^[^@/]+@", "", url)  # user@ (and user:password@)
    return url.removesuffix("/").removesuffix(".git").removesuffix("/")


def _check_repo_urls(sources: list[AppSource], top: Path, repo_root: Path, local: bool) -> None:
    """With sources from several repositories, only those cloned at --repo-root can be rendered."""
    sources = [s for s in sources if not chart_fetch.is_registry(s.repo_url, s.chart)]
    urls = {_normalize_url(s.repo_url) for s in sources if s.repo_url}
    if len(urls) < 2:
        return
    remotes: set[str] = set()
    proc = git.run_git(top, "remote", "-v", check=False)
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        fields = line.split()
        if len(fields) >= 2:
            remotes.add(_normalize_url(fields[1]))
    missing = sorted(
        s.repo_url for s in sources if s.repo_url and _normalize_url(s.repo_url) not in remotes
    )
    if missing and not local:
        raise SourceError(
            f"--repo-root {repo_root} is not a clone of {missing[0]}, which this Application "
            "also renders from",
            hint="multi-repository Applications can only be rendered when their sources share one "
            "repository",
        )
