"""Selects and renders the Applications of a run and runs the engine for each of them.

Offline: the snapshot's Applications, rendered from the clone (or from repoURL, fetched). Live:
gather.py reads the cluster and renders through `prepare`. The CLI decides flags, output and
exit codes.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import functools
import gc
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kubectl_gitdrift import application, engine, hookspecs, model, plugins
from kubectl_gitdrift.compare import defaults, openapi, schema
from kubectl_gitdrift.diagnose import attribution, audit, remedies
from kubectl_gitdrift.errors import AppError, GitDriftError
from kubectl_gitdrift.live import clusterstate
from kubectl_gitdrift.run import fanout, shard
from kubectl_gitdrift.run.request import GitSide, Request, Selection
from kubectl_gitdrift.sources import cache as source_cache
from kubectl_gitdrift.sources import charts as source_charts
from kubectl_gitdrift.sources import config as source_config
from kubectl_gitdrift.sources import fetch as source_fetch
from kubectl_gitdrift.sources import git as source_git
from kubectl_gitdrift.sources import helm_locate
from kubectl_gitdrift.sources import locate as source_locate
from kubectl_gitdrift.sources import render as source_render
from kubectl_gitdrift.sources import tools as source_tools


class Progress(Protocol):
    """Reports long work (the CLI shows it on stderr: progress.py)."""

    def __call__(self, message: str) -> None:
        """A step without a count ("connected to ...")."""

    def start(self, phase: str, total: int) -> None:
        """A phase of `total` items begins ("rendering", 24)."""

    def advance(self, item: str = "") -> None:
        """One item of the current phase is done (from any thread, in any order)."""


@dataclass
class Target:
    """One Application to compare: parsed, rendered, or why not."""

    body: model.Body
    name: str  # namespace/name
    app: model.Application | None = None
    rendered: source_render.Rendered | None = None
    error: GitDriftError | None = None
    skipped: str = ""
    # --server-dry-run (live): the API server's apply dry-run answer per desired object, the
    # objects it would not answer for (Unknown), and what to say about it
    dry_run: dict[model.ObjectKey, model.Body] | None = None
    dry_run_unknown: list[tuple[model.ObjectKey, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # prepare(defer_reads=True): the render, to be read from the cache (or made) by the process
    # that compares the app (`finish_render`); `rendered` is None or has no manifests until then
    deferred: Callable[[], source_render.Rendered] | None = None


def finish_render(target: Target) -> None:
    """The render `prepare` left to the process comparing the app (`Target.deferred`): read
    from the cache, or made when it is not there (any more); raises what a render raises."""
    if target.deferred is not None:
        target.rendered = target.deferred()
        target.deferred = None


def split_name(text: str, selection: Selection) -> tuple[str | None, str]:
    """NAMESPACE/NAME, or NAME in -n's namespace (None: not said)."""
    namespace, _, name = text.rpartition("/")
    return (namespace or selection.namespace or None), name


def select_offline(state: clusterstate.ClusterState, selection: Selection) -> list[model.Body]:
    if selection.all:
        namespace = None if selection.all_namespaces else selection.namespace
        return in_shard(
            [
                b
                for b in state.applications
                if namespace is None or (b.get("metadata") or {}).get("namespace") == namespace
            ],
            selection,
        )
    bodies = []
    for text in selection.names:
        namespace, name = split_name(text, selection)
        body = state.find_application(name, namespace or "argocd")
        if body is None and namespace is None:
            body = state.find_application(name, None)
        if body is None:
            known = ", ".join(state.application_names()) or "none"
            raise AppError(
                f"Application {namespace or 'argocd'}/{name} not found in {state.source}",
                hint=f"Applications there: {known}",
            )
        bodies.append(body)
    return bodies


def in_shard(bodies: Sequence[model.Body], selection: Selection) -> list[model.Body]:
    """--all --shard K/N: the Applications shard K owns (all of them without --shard)."""
    if not selection.shard:
        return list(bodies)
    part = shard.parse(selection.shard)
    names = [
        (str((b.get("metadata") or {}).get("namespace") or "argocd"),
         str((b.get("metadata") or {}).get("name") or ""))
        for b in bodies
    ]  # fmt: skip
    return [bodies[i] for i in shard.select(names, part)]


def cluster_api_versions(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The API versions Argo CD sends the repo-server (helm `--api-versions`, kustomize
    `--helm-api-versions`, plugins' KUBE_API_VERSIONS): APIResourcesToStrings(resources, true)
    over the cluster cache's resources, i.e. each kind's preferred version that can be listed
    and watched, as `group/version` and `group/version/Kind`, sorted. `rows` are API resource
    rows (a snapshot's apiResources, or live discovery's)."""
    return source_config.api_versions(rows)


def settings_of(state: clusterstate.ClusterState) -> model.Settings:
    """Argo CD's settings as the state holds them: argocd-cm, and the controller's flags from
    argocd-cmd-params-cm in the same namespace (Argo CD's own namespace)."""
    namespace = ((state.argocd_cm or {}).get("metadata") or {}).get("namespace") or "argocd"
    params = next(
        (
            m.body
            for m in state.objects
            # the key first: it is the body's kind and name, and cheaper to look at
            if m.key.kind == "ConfigMap"
            and m.key.name == application.PARAMS_CM
            and m.key.namespace == namespace
            and application.is_params_cm(m.body)
        ),
        None,
    )
    return application.parse_settings(state.argocd_cm, params)


def render_configmaps(state: clusterstate.ClusterState) -> list[model.Body]:
    """argocd-cm and argocd-cmp-cm (config management plugins) from a snapshot, for rendering,
    the AppProjects (their sourceRepos govern chart repositories), and the argocd-repo-server
    Deployment (its image tag: the Argo CD version, which helm major renders)."""
    found = [
        m.body
        for m in state.objects
        if (m.key.kind == "ConfigMap" and _is_cmp_configmap(m.body))
        or (m.key.group, m.key.kind) == ("argoproj.io", "AppProject")
        or (m.key.kind == "Deployment" and m.key.name == source_config.REPO_SERVER)
    ]
    return [*([state.argocd_cm] if state.argocd_cm is not None else []), *found]


def repo_server_of(
    state: clusterstate.ClusterState,
) -> Callable[[], source_tools.RepoServer] | None:
    """What a gitdrift Snapshot recorded of the argocd-repo-server image (its export read it:
    a helm render needed the Argo CD version), for the renders; None when it recorded nothing."""
    capture = state.capture
    if capture is None or capture.repo_server_image is None:
        return None
    read = source_tools.RepoServer(capture.repo_server_image, capture.repo_server_unreadable)
    return lambda: read


def _is_cmp_configmap(body: model.Body) -> bool:
    metadata = body.get("metadata") or {}
    return body.get("kind") == "ConfigMap" and metadata.get("name") == source_config.CMP_CONFIGMAP


def prepare(
    bodies: Sequence[model.Body],
    settings: model.Settings,
    request: Request,
    workdir: Path,
    progress: Progress,
    configmaps: Sequence[model.Body] = (),
    kube_version: str = "",
    api_versions: Sequence[str] = (),
    remotes: set[str] | None = None,
    defer_reads: bool = False,
    repo_server: Callable[[], source_tools.RepoServer] | None = None,
) -> list[Target]:
    """Parse and render every Application (concurrently, bounded), from the clones given with
    --repo-root or else from repoURL fetched into the cache; skip the ones whose repoURL is not
    the clone at a plain --repo-root DIR (with --all). `configmaps` are argocd-cm and
    argocd-cmp-cm, when read (kustomize build options and versions, plugin definitions),
    and the AppProjects (sourceRepos); `kube_version` is the destination cluster's gitVersion,
    for helm, kustomize helmCharts and plugins, as Argo CD passes it, and so are its
    `api_versions` (cluster_api_versions). `remotes`: the clone's remote URLs with --all and
    a plain --repo-root, when the caller has read them (remotes_of).
    `defer_reads`: a render found in the cache is only looked up here; its manifests are read
    by `finish_render` (run_one), so with --all each process reads the renders of the apps it
    compares (reading them was a third of what ran on one core before the fan-out).
    `repo_server` gives the argocd-repo-server image when a helm render needs the Argo CD
    version and neither --helm-version nor argocd-cm's label says it (repo_server_of)."""
    git = request.git
    render_config = source_config.of(
        configmaps,
        cmp_files=git.cmp_files,
        allow_plugins=git.allow_plugins,
        kube_version=kube_version,
        api_versions=api_versions,
        repo_server=repo_server,
    )
    targets = []
    for body in bodies:
        md = body.get("metadata") or {}
        targets.append(Target(body, f"{md.get('namespace') or 'argocd'}/{md.get('name') or '?'}"))
    roots = list(git.repo_roots)
    repo_root = git.plain_root
    if remotes is None:
        remotes = remotes_of(request)
    # `snapshot` renders only with --repo-root (to capture what git has and Argo CD does not)
    render_apps = bool(roots) or request.export is None

    knobs = request.settings
    cache = (
        source_cache.RenderCache(knobs.cache_dir(), knobs.cache_max_bytes()) if git.cache else None
    )
    exports = source_render.Exports(
        workdir / "trees",
        None
        if cache is None or git.local
        else source_cache.TreeCache(cache.directory, cache.max_bytes),
    )
    repos = source_fetch.Repos(
        (workdir if cache is None else cache.directory) / "git",  # --no-cache writes nothing
        roots=roots,
        offline=git.offline,
        local=git.local,
        exports=exports,
        settings=knobs,
    )

    def render(
        index: int,
        app: model.Application,
        cache: source_cache.RenderCache | None,
        cached_only: bool = False,
    ) -> source_render.Rendered:
        return source_render.render(
            app,
            repo_root,
            revision=git.revision,
            local=git.local,
            workdir=workdir / f"{index:05d}",
            exports=exports,
            cache=cache,
            cached_only=cached_only,
            repos=repos,
            config=render_config,
            # the AppProject's sourceRepos govern chart and dependency repositories
            policy=source_charts.policy_for(
                app.project, configmaps, (settings.controller_namespace, app.namespace)
            ),
            offline=git.offline,
            settings=knobs,
        )

    def deferred(
        index: int, target: Target, app: model.Application, cache: source_cache.RenderCache
    ) -> bool:
        """The render is in the cache: `target.deferred` will read it (finish_render). Raises
        CacheMiss when it is not there; False when it must be read now."""
        probe = source_cache.Probe(cache.directory, cache.max_bytes)
        found = render(index, app, probe, cached_only=True)
        if found.manifests:  # a source read without the cache (never with a commit): read now
            return False

        def finish() -> source_render.Rendered:
            manifests = probe.read()
            if manifests is None:  # gone since: render again (kustomize, or a later entry)
                return render(index, app, cache)
            return dataclasses.replace(found, manifests=tuple(manifests))

        target.rendered, target.deferred = found, finish
        return True

    def one(index: int, target: Target, cached_only: bool = False, later: bool = False) -> bool:
        """Render; False when `cached_only` and the render is not cached. `later`: leave the
        render to the process that compares the app, to look up (and make, if need be)."""
        if target.app is None:  # it could not be parsed (target.error)
            return True
        try:
            if not render_apps:
                return True
            target.skipped = not_the_clone(target.app, remotes)
            if target.skipped:
                return True
            if later:
                target.deferred = functools.partial(render, index, target.app, cache)
                return True
            if (
                cached_only
                and defer_reads
                and cache is not None
                and deferred(index, target, target.app, cache)
            ):
                return True
            target.rendered = render(index, target.app, cache, cached_only)
        except source_cache.CacheMiss:
            return False
        except GitDriftError as exc:
            target.error = exc
        return True

    def counted(index: int, target: Target, cached_only: bool = False, later: bool = False) -> bool:
        done = one(index, target, cached_only, later)
        if done:
            progress.advance(target.name)
        return done

    for target in targets:
        try:
            target.app = application.parse_application(target.body)
        except GitDriftError as exc:
            target.error = exc
    if render_apps and not git.offline:
        _prefetch(targets, repos, request, remotes, progress)
    progress.start("rendering", len(targets))
    workers = min(request.settings.workers(), len(targets))
    if workers <= 1:
        for index, target in enumerate(targets, 1):
            counted(index, target)
        return targets
    # Cached renders first, one at a time (reading them is Python work: threads only take turns
    # on the interpreter); what is left runs kustomize and helm in parallel.
    todo: list[tuple[int, Target]] = []
    for i, t in enumerate(targets, 1):
        if defer_reads and i > request.tuning.warm_sample and not todo:
            # the first apps' renders were all cached: the cache is warm. Each app's is looked up
            # (and in the odd case made) where it is compared, not here on one core
            counted(i, t, later=True)
        elif cache is None or not counted(i, t, True):
            todo.append((i, t))
    if todo:
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(workers, len(todo))) as pool:
            list(pool.map(counted, *zip(*todo, strict=True)))
    return targets


def remotes_of(request: Request) -> set[str]:
    """With --all and a plain --repo-root, the clone's remote URLs (apps of other repositories
    are skipped); else none."""
    repo_root = request.git.plain_root
    return _clone_urls(repo_root) if repo_root is not None and request.selection.all else set()


def not_the_clone(app: model.Application, remotes: set[str]) -> str:
    """Why --all skips `app`: none of its git repositories is the clone at a plain --repo-root
    (an app whose sources are all registry charts needs no clone: never skipped)."""
    git = [s for s in app.sources if not source_charts.is_registry(s.repo_url, s.chart)]
    cloned = any(source_render._normalize_url(s.repo_url) in remotes for s in git)
    if remotes and git and not cloned:
        urls = ", ".join(sorted({s.repo_url for s in app.sources}))
        return f"repoURL {urls} is not the clone at --repo-root"
    return ""


def _prefetch(
    targets: Sequence[Target],
    repos: source_fetch.Repos,
    request: Request,
    remotes: set[str],
    progress: Progress,
) -> None:
    """Fetch what the apps' git sources need, each repository and revision once, in parallel,
    as a phase of its own before rendering (a first clone can take a while); rendering then
    finds every commit in the mirrors. A failure is remembered and said by the render of each
    app it concerns. `ref:`-only sources are fetched when a value file uses them."""
    jobs: dict[str, tuple[model.Application, model.AppSource, str]] = {}
    for target in targets:
        app = target.app
        if app is None or not_the_clone(app, remotes):
            continue  # an app that could not be parsed says so in the report
        for index, source in enumerate(app.sources):
            if source.ref and not source.path:
                continue
            rev, _prefer_remote = source_render._revision_for(
                app, index, source, request.git.revision
            )
            key = repos.to_fetch(app, source, rev)
            if key is not None:
                jobs.setdefault(key, (app, source, rev))
    if not jobs:
        return
    progress.start("fetching", len(jobs))

    def fetch(job: tuple[model.Application, model.AppSource, str]) -> None:
        app, source, rev = job
        with contextlib.suppress(GitDriftError):  # remembered: each app's render says it
            repos.checkout(app, source, rev, False)
        progress.advance(f"{source_fetch.redact(source.repo_url)} {rev}")

    workers = min(request.settings.workers(), len(jobs))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(fetch, [jobs[k] for k in sorted(jobs)]))


def check_source_flags(git: GitSide) -> None:
    """--repo-root, --local and --offline go together before any work starts."""
    source_fetch.check_roots(list(git.repo_roots), local=git.local)


def _clone_urls(repo_root: Path) -> set[str]:
    """The normalized remote URLs of the clone (empty when it has none: match everything)."""
    try:
        proc = source_git.run_git(repo_root, "remote", "-v", check=False)
    except GitDriftError:
        return set()
    urls = set()
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        fields = line.split()
        if len(fields) >= 2:
            urls.add(source_render._normalize_url(fields[1]))
    return urls


def options(
    state: clusterstate.ClusterState, request: Request, rules: Sequence[hookspecs.Rule]
) -> engine.Options:
    capture = state.capture
    builtin = (
        openapi.load_builtin_definitions(capture.kube_version)
        if capture is not None and capture.kube_version
        else openapi.load_builtin_definitions()
    )
    definitions: Any = builtin
    if capture is not None and capture.definitions:
        definitions = {**capture.definitions, **builtin}  # built-in types win; CRDs come from here
    plurals = None
    if capture is not None and capture.api_resources:
        plurals = {
            (str(r.get("apiVersion") or "").rpartition("/")[0], str(r.get("kind"))): str(
                r.get("name")
            )
            for r in capture.api_resources
        }
    reviews = state.reviews  # live: the API server answered can-i, or said why not
    return engine.Options(
        schema=schema.Schema(definitions),
        defaults=defaults.apply_defaults,
        scope=state.scope,
        plurals=plurals,
        disabled_rules=request.diagnosis.disabled_rules,
        rules=rules,
        authorize=reviews.answer if reviews is not None and not reviews.failure else None,
        note_access=reviews is not None,
        review_failure=reviews.failure if reviews is not None else "",
        context_flags=request.context_flags(),
    )


def run_one(
    target: Target,
    state: clusterstate.ClusterState,
    settings: model.Settings,
    pm: plugins.PluginManager,
    options: engine.Options,
    request: Request,
    audit_log: audit.AuditLog | None = None,
    index: engine.LiveIndex | None = None,
) -> model.AppReport:
    finish_render(target)
    app, rendered = target.app, target.rendered
    assert app is not None
    assert rendered is not None

    inputs = engine.Inputs(
        app=app,
        settings=settings,
        desired=state.redact_desired(rendered.manifests),
        live=state.objects,
        revision=rendered.revision,
        source=f"{app.sources[0].repo_url} {rendered.source_path} @ {rendered.revision}",
        notes=[*_notes_for(app, rendered, state), *target.notes],
        unreadable=[*state.unreadable, *target.dry_run_unknown],
        audit_log=audit_log,
        index=index,
        dry_run=target.dry_run,
        varying=rendered.varying,
    )
    history = _history_cache(request)
    repo = rendered.repo if rendered.repo is not None else request.git.plain_root
    callbacks = with_source_callbacks(options, rendered, repo, history, app=app)
    if state.follow_up is None:
        return engine.run(inputs, pm, callbacks)
    # live: the context objects of what differs are read now that the compare has shown it
    compared = engine.compare(inputs, pm, callbacks)
    context, notes = state.follow_up(engine.needs(compared))
    if notes:  # where the notes of what could not be read go (_notes_for)
        at = len(inputs.notes)
        compared = dataclasses.replace(
            compared, notes=(*compared.notes[:at], *notes, *compared.notes[at:])
        )
    return engine.diagnose(compared, pm, callbacks, context)


@dataclass(frozen=True, slots=True)
class Compared:
    """One app's report, and its output when run_all was given a way to write it."""

    report: model.AppReport
    text: str | None = None


def run_all(
    targets: Sequence[Target],
    state: clusterstate.ClusterState,
    settings: model.Settings,
    pm: plugins.PluginManager,
    options: engine.Options,
    request: Request,
    audit_log: audit.AuditLog | None = None,
    index: engine.LiveIndex | None = None,
    progress: Progress | None = None,
    bodies: bool = True,
    write: Callable[[model.AppReport], str] | None = None,
    beside: Callable[[], object] | None = None,
) -> list[Compared]:
    """`run_one` for every rendered target, in order. Many apps are compared by this process
    and forked children (fanout: one process per usable core, the loaded state shared
    copy-on-write), a few by this process alone.
    `bodies=False`: the reports may leave out the objects no built-in output reads
    (`AppReport.without_bodies`), which is most of what a worker would otherwise send back.
    `write`: the output of one app, made where it was compared (`Compared.text`).
    `beside`: work of this process's own to do while forked children compare (fanout.imap),
    or before comparing when there are none."""
    todo = [
        t
        for t in targets
        if t.app is not None and (t.rendered is not None or t.deferred is not None)
    ]
    history = _history_cache(request)
    workers = fanout.processes(len(todo), request.settings.workers())
    here = os.getpid()

    def one(target: Target) -> tuple[Compared | GitDriftError, dict[str, dict[str, Any]]]:
        try:
            finish_render(target)
        except GitDriftError as exc:  # its cache entry went, and rendering it again failed
            return exc, {}
        report = run_one(target, state, settings, pm, options, request, audit_log, index=index)
        # a forked child hands back the git history it looked up; this process keeps its own
        learned = history.unwritten() if history is not None and os.getpid() != here else {}
        text = write(report) if write is not None else None
        return Compared(report if bodies else report.without_bodies(), text), learned

    reports: list[Compared] = []
    if progress is not None:
        progress.start("comparing", len(todo))
    try:
        with (
            contextlib.closing(fanout.imap(one, todo, workers, lambda t: t.name, beside))
            if workers > 1
            else contextlib.nullcontext(map(one, todo))
        ) as results:
            if workers <= 1 and beside is not None:
                beside()
            for target, (report, learned) in zip(todo, results, strict=True):
                if isinstance(report, GitDriftError):
                    target.error = report  # said with the apps that could not be rendered
                else:
                    reports.append(report)
                if history is not None and learned:
                    history.merge(learned)  # what a worker looked up in git
                if progress is not None:
                    progress.advance(target.name)
                gc.freeze()  # each report lives all run too: the cyclic GC need not rescan it
    finally:
        if history is not None:
            history.flush()  # what the apps looked up in git, written once
    return reports


def _history_cache(request: Request) -> source_cache.HistoryCache | None:
    if not request.git.cache:
        return None
    return source_cache.HistoryCache(request.settings.cache_dir())


_RESOLVED: dict[tuple[Path, str], tuple[Path, str]] = {}


def _resolved(repo_root: Path, rev: str) -> tuple[Path, str]:
    """(work tree top, commit) for `rev`; remembered for a full commit id, which cannot move
    (every app of an `--all` run asks for the same one)."""
    key = (repo_root, rev)
    if key in _RESOLVED:
        return _RESOLVED[key]
    top = source_git.toplevel(repo_root)
    found = (top, source_git.resolve_revision(top, rev))
    if re.fullmatch(r"[0-9a-f]{40}", rev):
        _RESOLVED[key] = found
    return found


def with_source_callbacks(
    options: engine.Options,
    rendered: source_render.Rendered,
    repo_root: Path | None,
    history_cache: source_cache.HistoryCache | None = None,
    *,
    app: model.Application | None = None,
) -> engine.Options:
    """The engine's callbacks into git for one rendered source: where a field is set (locate),
    a source file's text (read_source, for patches) and the last commit touching a file (kept
    in `history_cache` for a commit, never for the working tree), from `repo_root` (the clone or
    the fetched mirror the first source came from; None: no git history, e.g. a registry
    chart). With the `app`, a field a Helm source renders is traced to its values key
    (sources/helm_locate.py), in whichever source's tree (a `$ref` one too) holds it."""
    tree = rendered.tree.resolve()
    at = "HEAD" if rendered.revision == source_render.WORKING_TREE else rendered.revision
    kept = history_cache if at != "HEAD" else None
    roots: dict[str, Path] = {}  # Location.root -> the tree its file is in
    helm_sources: dict[int, helm_locate.HelmLocator] = {}

    def locate(drift: model.Drift, change: model.Change) -> remedies.Location | None:
        part = _source_of(rendered, drift.key)
        if app is not None and part is not None and part.kind == "helm":
            return _helm_location(app, rendered, part, drift, change, roots, helm_sources)
        manifest = model.Manifest(drift.key, drift.desired or {}, drift.origin)
        spec = app.sources[part.index] if app and part and part.index < len(app.sources) else None
        if spec is not None and spec.dry_source:
            near = source_locate.locate(
                rendered.tree, rendered.source_path, manifest, change.path, change.desired
            )
            return remedies.Location(
                near.file if near is not None else "",
                0,
                "none",  # the file is kept for the field's git history, not to be edited
                note="these are hydrated manifests, which Argo CD's source hydrator rewrites "
                f"from the dry source ({spec.dry_source}) on its next run: change the field "
                "there; no patch is written for the hydrated file",
            )
        if part is not None and part.kind == "plugin":
            near = source_locate.locate(
                rendered.tree, rendered.source_path, manifest, change.path, change.desired
            )
            return remedies.Location(
                near.file if near is not None else "",
                0,
                "none",  # the file is kept for the field's git history, not to be edited
                note="a config management plugin renders it, and gitdrift cannot tell which of "
                "the plugin's input files sets it: no file is named and no patch written",
            )
        if drift.origin and drift.origin.endswith((".jsonnet", ".libsonnet")):
            return remedies.Location(
                drift.origin,
                0,
                "none",
                note=f"Jsonnet ({drift.origin}) computes it, and gitdrift does not trace a "
                "field to the expression that computes it: no line is named and no patch written",
            )
        found = source_locate.locate(
            rendered.tree, rendered.source_path, manifest, change.path, change.desired
        )
        if found is None:
            return None
        return remedies.Location(found.file, found.line, found.how)

    def read_source(rel: str, root: str = "") -> str | None:
        base = roots[root].resolve() if root in roots else tree
        path = (base / rel).resolve()
        if not path.is_relative_to(base) or not path.is_file():
            return None
        return path.read_text(encoding="utf-8")

    def history(rel: str) -> attribution.CommitRef | None:
        if repo_root is None:
            return None
        known = kept.entries(at).get(rel, ()) if kept is not None else ()
        if known != ():
            return attribution.CommitRef(*known) if known else None
        try:
            found = source_git.commit_touching(*_resolved(repo_root, at), rel)
        except GitDriftError:
            return None
        value = None if found is None else [found.sha, found.author, found.date, found.subject]
        if kept is not None:
            kept.put(at, rel, value)
        return attribution.CommitRef(*value) if value else None

    return dataclasses.replace(options, locate=locate, read_source=read_source, history=history)


def _source_of(
    rendered: source_render.Rendered, key: model.ObjectKey
) -> source_render.RenderedSource | None:
    """The source that rendered the object (the last one, as the last rendered object wins)."""
    found = [p for p in rendered.sources if (key.group, key.kind, key.name) in p.keys]
    return found[-1] if found else None


def _helm_location(
    app: model.Application,
    rendered: source_render.Rendered,
    part: source_render.RenderedSource,
    drift: model.Drift,
    change: model.Change,
    roots: dict[str, Path],
    helm_sources: dict[int, helm_locate.HelmLocator],
) -> remedies.Location:
    locator = helm_sources.get(part.index)
    if locator is None:
        locator = helm_sources[part.index] = helm_locate.HelmLocator(
            _helm_source(app, rendered, part)
        )
    found = locator.locate(drift.key, drift.origin, change.path, change.desired, change.live)
    root = ""
    if found.ref and rendered.refs is not None:
        root = f"ref:{found.ref}"
        roots[root] = rendered.refs[found.ref]
    elif found.file and part.tree.resolve() != rendered.tree.resolve():
        root = f"source:{part.index}"
        roots[root] = part.tree
    return remedies.Location(
        found.file,
        found.line,
        found.how,
        text=found.param,
        key=found.key,
        key_path=found.key_path,
        old=found.old,
        new=found.new,
        root=root,
        repo=found.repo,
        note=found.note,
    )


def _helm_source(
    app: model.Application, rendered: source_render.Rendered, part: source_render.RenderedSource
) -> helm_locate.HelmSource:
    spec = app.sources[part.index] if part.index < len(app.sources) else None
    chart_dir = part.tree if part.path == "." else part.tree / part.path
    path = part.path
    if part.pulled and (part.tree / "Chart.yaml").is_file():
        chart_dir, path = part.tree, "."
    return helm_locate.HelmSource(
        chart_dir=chart_dir,
        tree=part.tree,
        path=path,
        options=part.options or {},
        env=part.env or {},
        refs=rendered.refs or {},
        ref_urls={s.ref: s.repo_url for s in app.sources if s.ref},
        repo_url=part.repo_url,
        pulled=part.pulled,
        chart=(spec.chart if spec is not None and spec.chart else "") or chart_dir.name,
        spec="spec.source" if len(app.sources) == 1 else f"spec.sources[{part.index}]",
    )


def _notes_for(
    app: model.Application, rendered: source_render.Rendered, state: clusterstate.ClusterState
) -> list[str]:
    """The state's notes, the render's (a duplicate key in a manifest, which helm rendered), and
    what could not be read in this app's namespaces (or cluster-wide) that is not one of its
    desired objects (those are reported as Unknown)."""
    namespaces = {app.dest_namespace, *(m.key.namespace for m in rendered.manifests)}
    desired = {(m.key.group, m.key.kind) for m in rendered.manifests}
    notes = [*state.notes, *dict.fromkeys(rendered.notes)]  # two helm sources: one note
    for key, reason in state.unreadable:
        if (key.group, key.kind) in desired:
            continue
        if not key.namespace or key.namespace in namespaces:
            notes.append(f"not checked: {reason}")
    return notes
