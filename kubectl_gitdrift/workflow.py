"""Gathers one run's inputs at the edges and runs the engine for each selected Application.

Offline: the snapshot's Applications, rendered from the clone. Live: the same, with the cluster
read through cluster.py (imported only in live mode). The CLI decides flags, output and exit codes.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import datetime
import gc
import os
import re
import secrets
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO

from kubectl_gitdrift import (
    application,
    attribution,
    audit,
    compare,
    defaults,
    diff,
    engine,
    fanout,
    hookspecs,
    model,
    normalize,
    openapi,
    plugins,
    remedies,
    schema,
    shard,
    snapshot,
    tracking,
)
from kubectl_gitdrift.errors import (
    AppError,
    ClusterError,
    GitDriftError,
    UsageError,
)
from kubectl_gitdrift.sources import cache as source_cache
from kubectl_gitdrift.sources import charts as source_charts
from kubectl_gitdrift.sources import config as source_config
from kubectl_gitdrift.sources import fetch as source_fetch
from kubectl_gitdrift.sources import git as source_git
from kubectl_gitdrift.sources import locate as source_locate
from kubectl_gitdrift.sources import render as source_render


class Progress(Protocol):
    """Reports long work (the CLI shows it on stderr: progress.py)."""

    def __call__(self, message: str) -> None:
        """A step without a count ("connected to ...")."""

    def start(self, phase: str, total: int) -> None:
        """A phase of `total` items begins ("rendering", 24)."""

    def advance(self, item: str = "") -> None:
        """One item of the current phase is done (from any thread, in any order)."""


#: Overrides for cluster.Config (tests shorten backoffs and page sizes here).
CLUSTER_OPTIONS: dict[str, Any] = {}

MAX_WORKERS = 8
"""Renders in parallel, and LISTs in flight at once (live)."""
WORKERS_ENV = "KUBECTL_GITDRIFT_WORKERS"
"""Overrides MAX_WORKERS; `1` renders and lists one at a time (the report is the same)."""


def max_workers() -> int:
    """MAX_WORKERS, or the whole number >= 1 in $KUBECTL_GITDRIFT_WORKERS."""
    raw = os.environ.get(WORKERS_ENV, "").strip()
    if not raw:
        return MAX_WORKERS
    try:
        workers = int(raw)
    except ValueError:
        workers = 0
    if workers < 1:
        raise UsageError(f"{WORKERS_ENV}={raw!r}: expected a whole number, 1 or more")
    return workers


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


def split_name(text: str, args: argparse.Namespace) -> tuple[str | None, str]:
    namespace, _, name = text.rpartition("/")
    return (namespace or args.app_namespace or None), name


def select_offline(
    state: snapshot.ClusterState, args: argparse.Namespace, names: Sequence[str]
) -> list[model.Body]:
    if args.all:
        namespace = None if args.all_namespaces else args.app_namespace
        return in_shard(
            [
                b
                for b in state.applications
                if namespace is None or (b.get("metadata") or {}).get("namespace") == namespace
            ],
            args,
        )
    bodies = []
    for text in names:
        namespace, name = split_name(text, args)
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


def in_shard(bodies: Sequence[model.Body], args: argparse.Namespace) -> list[model.Body]:
    """--all --shard K/N: the Applications shard K owns (all of them without --shard)."""
    text = getattr(args, "shard", None)
    if not text:
        return list(bodies)
    part = shard.parse(text)
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


def settings_of(state: snapshot.ClusterState) -> model.Settings:
    """Argo CD's settings as the state holds them: argocd-cm, and the controller's flags from
    argocd-cmd-params-cm in the same namespace (Argo CD's own namespace)."""
    namespace = ((state.argocd_cm or {}).get("metadata") or {}).get("namespace") or "argocd"
    params = next(
        (
            m.body
            for m in state.objects
            if application.is_params_cm(m.body) and m.key.namespace == namespace
        ),
        None,
    )
    return application.parse_settings(state.argocd_cm, params)


def render_configmaps(state: snapshot.ClusterState) -> list[model.Body]:
    """argocd-cm and argocd-cmp-cm (config management plugins) from a snapshot, for rendering,
    and the AppProjects (their sourceRepos govern chart repositories)."""
    found = [
        m.body
        for m in state.objects
        if _is_cmp_configmap(m.body) or (m.key.group, m.key.kind) == ("argoproj.io", "AppProject")
    ]
    return [*([state.argocd_cm] if state.argocd_cm is not None else []), *found]


def _is_cmp_configmap(body: model.Body) -> bool:
    metadata = body.get("metadata") or {}
    return body.get("kind") == "ConfigMap" and metadata.get("name") == source_config.CMP_CONFIGMAP


def prepare(
    bodies: Sequence[model.Body],
    settings: model.Settings,
    args: argparse.Namespace,
    workdir: Path,
    progress: Progress,
    configmaps: Sequence[model.Body] = (),
    kube_version: str = "",
    api_versions: Sequence[str] = (),
    remotes: set[str] | None = None,
) -> list[Target]:
    """Parse and render every Application (concurrently, bounded), from the clones given with
    --repo-root or else from repoURL fetched into the cache; skip the ones whose repoURL is not
    the clone at a plain --repo-root DIR (with --all). `configmaps` are argocd-cm and
    argocd-cmp-cm, when read (kustomize build options and versions, plugin definitions),
    and the AppProjects (sourceRepos); `kube_version` is the destination cluster's gitVersion,
    for helm, kustomize helmCharts and plugins, as Argo CD passes it, and so are its
    `api_versions` (cluster_api_versions). `remotes`: the clone's remote URLs with --all and
    a plain --repo-root, when the caller has read them (_remotes)."""
    render_config = source_config.of(
        configmaps,
        cmp_files=getattr(args, "cmp", None) or (),
        allow_plugins=getattr(args, "allow_plugins", False),
        kube_version=kube_version,
        api_versions=api_versions,
    )
    targets = []
    for body in bodies:
        md = body.get("metadata") or {}
        targets.append(Target(body, f"{md.get('namespace') or 'argocd'}/{md.get('name') or '?'}"))
    roots: list[source_fetch.RepoRoot] = getattr(args, "repo_root", None) or []
    repo_root = next((r.path for r in roots if r.url is None), None)
    if remotes is None:
        remotes = _remotes(args)
    # `snapshot` renders only with --repo-root (to capture what git has and Argo CD does not)
    render_apps = bool(roots) or not getattr(args, "command_snapshot", False)

    cache = (
        None
        if getattr(args, "no_cache", False)
        else source_cache.RenderCache(source_cache.default_dir())
    )
    exports = source_render.Exports(
        workdir / "trees",
        None
        if cache is None or getattr(args, "local", False)
        else source_cache.TreeCache(cache.directory),
    )
    repos = source_fetch.Repos(
        (workdir if cache is None else cache.directory) / "git",  # --no-cache writes nothing
        roots=roots,
        offline=getattr(args, "offline", False),
        local=getattr(args, "local", False),
        exports=exports,
    )

    def one(index: int, target: Target, cached_only: bool = False) -> bool:
        """Parse and render; False when `cached_only` and the render is not cached."""
        try:
            target.app = application.parse_application(target.body)
            if not render_apps:
                return True
            target.skipped = _not_the_clone(target.app, remotes)
            if target.skipped:
                return True
            target.rendered = source_render.render(
                target.app,
                repo_root,
                revision=args.revision,
                local=args.local,
                workdir=workdir / f"{index:05d}",
                exports=exports,
                cache=cache,
                cached_only=cached_only,
                repos=repos,
                config=render_config,
                # the AppProject's sourceRepos govern chart and dependency repositories
                policy=source_charts.policy_for(
                    target.app.project,
                    configmaps,
                    (settings.controller_namespace, target.app.namespace),
                ),
                offline=getattr(args, "offline", False),
            )
        except source_cache.CacheMiss:
            return False
        except GitDriftError as exc:
            target.error = exc
        return True

    def counted(index: int, target: Target, cached_only: bool = False) -> bool:
        done = one(index, target, cached_only)
        if done:
            progress.advance(target.name)
        return done

    if render_apps and not getattr(args, "offline", False):
        _prefetch(targets, repos, args, remotes, progress)
    progress.start("rendering", len(targets))
    workers = min(max_workers(), len(targets))
    if workers <= 1:
        for index, target in enumerate(targets, 1):
            counted(index, target)
        return targets
    # Cached renders first, one at a time (reading them is Python work: threads only take turns
    # on the interpreter); what is left runs kustomize and helm in parallel.
    todo = [(i, t) for i, t in enumerate(targets, 1) if cache is None or not counted(i, t, True)]
    if todo:
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(workers, len(todo))) as pool:
            list(pool.map(counted, *zip(*todo, strict=True)))
    return targets


def _remotes(args: argparse.Namespace) -> set[str]:
    """With --all and a plain --repo-root, the clone's remote URLs (apps of other repositories
    are skipped); else none."""
    repo_root = _plain_repo_root(args)
    return _clone_urls(repo_root) if repo_root is not None and args.all else set()


def _not_the_clone(app: model.Application, remotes: set[str]) -> str:
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
    args: argparse.Namespace,
    remotes: set[str],
    progress: Progress,
) -> None:
    """Fetch what the apps' git sources need, each repository and revision once, in parallel,
    as a phase of its own before rendering (a first clone can take a while); rendering then
    finds every commit in the mirrors. A failure is remembered and said by the render of each
    app it concerns. `ref:`-only sources are fetched when a value file uses them."""
    jobs: dict[str, tuple[model.Application, model.AppSource, str]] = {}
    for target in targets:
        try:
            app = application.parse_application(target.body)
        except GitDriftError:
            continue  # said when rendering
        if _not_the_clone(app, remotes):
            continue
        for index, source in enumerate(app.sources):
            if source.ref and not source.path:
                continue
            rev, _prefer_remote = source_render._revision_for(app, index, source, args.revision)
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

    with concurrent.futures.ThreadPoolExecutor(max_workers=min(max_workers(), len(jobs))) as pool:
        list(pool.map(fetch, [jobs[k] for k in sorted(jobs)]))


def check_source_flags(args: argparse.Namespace) -> None:
    """--repo-root, --local and --offline go together before any work starts."""
    roots: list[source_fetch.RepoRoot] = getattr(args, "repo_root", None) or []
    source_fetch.check_roots(roots, local=getattr(args, "local", False))


def _plain_repo_root(args: argparse.Namespace) -> Path | None:
    roots: list[source_fetch.RepoRoot] = getattr(args, "repo_root", None) or []
    return next((r.path for r in roots if r.url is None), None)


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
    state: snapshot.ClusterState, args: argparse.Namespace, rules: Sequence[hookspecs.Rule]
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
    return engine.Options(
        schema=schema.Schema(definitions),
        defaults=defaults.apply_defaults,
        scope=state.scope,
        plurals=plurals,
        disabled_rules=args.disable_rule,
        rules=rules,
    )


def run_one(
    target: Target,
    state: snapshot.ClusterState,
    settings: model.Settings,
    pm: plugins.PluginManager,
    options: engine.Options,
    args: argparse.Namespace,
    audit_log: audit.AuditLog | None = None,
    index: engine.LiveIndex | None = None,
) -> model.AppReport:
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
    )
    history = _history_cache(args)
    repo = rendered.repo if rendered.repo is not None else _plain_repo_root(args)
    return engine.run(inputs, pm, with_source_callbacks(options, rendered, repo, history))


def run_all(
    targets: Sequence[Target],
    state: snapshot.ClusterState,
    settings: model.Settings,
    pm: plugins.PluginManager,
    options: engine.Options,
    args: argparse.Namespace,
    audit_log: audit.AuditLog | None = None,
    index: engine.LiveIndex | None = None,
    progress: Progress | None = None,
    bodies: bool = True,
) -> list[model.AppReport]:
    """`run_one` for every rendered target, in order. Many apps are compared in forked worker
    processes (fanout: one per core, the loaded state shared copy-on-write), a few in this one.
    `bodies=False`: the reports may leave out the objects no built-in output reads
    (`AppReport.without_bodies`), which is most of what a worker would otherwise send back."""
    todo = [t for t in targets if t.app is not None and t.rendered is not None]
    history = _history_cache(args)
    workers = fanout.processes(len(todo), max_workers())

    def one(target: Target) -> tuple[model.AppReport, dict[str, dict[str, Any]]]:
        report = run_one(target, state, settings, pm, options, args, audit_log, index=index)
        learned = history.unwritten() if history is not None and workers > 1 else {}
        return (report if bodies else report.without_bodies()), learned

    reports = []
    if progress is not None:
        progress.start("comparing", len(todo))
    try:
        with (
            contextlib.closing(fanout.imap(one, todo, workers, lambda t: t.name))
            if workers > 1
            else contextlib.nullcontext(map(one, todo))
        ) as results:
            for target, (report, learned) in zip(todo, results, strict=True):
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


def _history_cache(args: argparse.Namespace) -> source_cache.HistoryCache | None:
    if getattr(args, "no_cache", False):
        return None
    return source_cache.HistoryCache(source_cache.default_dir())


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
) -> engine.Options:
    """The engine's callbacks into git for one rendered source: where a field is set (locate),
    a source file's text (read_source, for patches) and the last commit touching a file (kept
    in `history_cache` for a commit, never for the working tree), from `repo_root` (the clone or
    the fetched mirror the first source came from; None: no git history, e.g. a registry
    chart)."""
    tree = rendered.tree.resolve()
    at = "HEAD" if rendered.revision == source_render.WORKING_TREE else rendered.revision
    kept = history_cache if at != "HEAD" else None

    def locate(drift: model.Drift, change: model.Change) -> remedies.Location | None:
        manifest = model.Manifest(drift.key, drift.desired or {}, drift.origin)
        found = source_locate.locate(
            rendered.tree, rendered.source_path, manifest, change.path, change.desired
        )
        if found is None:
            return None
        return remedies.Location(found.file, found.line, found.how)

    def read_source(rel: str) -> str | None:
        path = (tree / rel).resolve()
        if not path.is_relative_to(tree) or not path.is_file():
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


def _notes_for(
    app: model.Application, rendered: source_render.Rendered, state: snapshot.ClusterState
) -> list[str]:
    """The state's notes, and what could not be read in this app's namespaces (or cluster-wide)
    that is not one of its desired objects (those are reported as Unknown)."""
    namespaces = {app.dest_namespace, *(m.key.namespace for m in rendered.manifests)}
    desired = {(m.key.group, m.key.kind) for m in rendered.manifests}
    notes = list(state.notes)
    for key, reason in state.unreadable:
        if (key.group, key.kind) in desired:
            continue
        if not key.namespace or key.namespace in namespaces:
            notes.append(f"not checked: {reason}")
    return notes


def gather_live(
    args: argparse.Namespace,
    names: Sequence[str],
    workdir: Path,
    progress: Progress,
    err: TextIO,
) -> tuple[snapshot.ClusterState, list[Target]]:
    """Read Argo CD's objects, render, and LIST what the apps need, once each, concurrently:
    the LISTs known from the Applications (what Argo CD says each tracks, the context kinds of
    their namespaces) run while the apps render; the rest once the renders are known.

    Without the cyclic GC: importing kr8s, parsing the LISTs and reading the renders make some
    70,000 containers for 400 objects, nearly all alive to the end of the run, and its passes
    over them (one full pass among them) were 50 ms; what is left at the end is frozen out of
    its reach, as the offline snapshot is (a `serve` cycle unfreezes and collects at its end)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        gathered = _gather_live(args, names, workdir, progress, err)
    finally:
        if enabled:
            gc.enable()
    gc.freeze()
    return gathered


def _gather_live(
    args: argparse.Namespace,
    names: Sequence[str],
    workdir: Path,
    progress: Progress,
    err: TextIO,
) -> tuple[snapshot.ClusterState, list[Target]]:
    from kubectl_gitdrift import cluster  # imports kr8s: only live runs pay for it

    config = cluster.Config(
        kubeconfig=args.kubeconfig,
        context=args.context,
        timeout=args.request_timeout,
        **{"concurrency": max_workers(), **CLUSTER_OPTIONS},
    )
    # Argo CD's objects are listed while discovery runs, of the kinds its CRDs serve (checked
    # against discovery before their answers are used)
    apps, settings_objects = _argocd_queries(args, names, _argocd_kind)
    kc = cluster.Cluster(config)
    kc.list_on_connect([*apps, *settings_objects])
    with kc:
        progress(f"connected to {kc.where}")
        bodies, argocd_docs, unreadable, notes = _live_argocd(kc, args, names)
        settings = application.parse_settings(
            next((d for d in argocd_docs if application.is_argocd_cm(d)), None),
            next((d for d in argocd_docs if application.is_params_cm(d)), None),
        )
        label = (
            settings.instance_label_key
            if settings.tracking_method is not model.TrackingMethod.ANNOTATION
            else ""
        )
        remotes = _remotes(args)
        listed = _Listed(progress)
        early, _ = cluster.plan(
            kc.discovery, *_status_wants(bodies, remotes, kc.discovery), tracking_label=label
        )
        listed.start(kc, early)
        targets = prepare(
            bodies,
            settings,
            args,
            workdir,
            progress,
            configmaps=argocd_docs,
            kube_version=str(kc.version.get("gitVersion") or ""),
            api_versions=cluster_api_versions(k.to_dict() for k in kc.discovery.kinds()),
            remotes=remotes,
        )
        if not args.all and targets and targets[0].error is not None:
            raise targets[0].error
        wants, namespaces = _wants(targets, kc.discovery)
        queries, not_served = cluster.plan(kc.discovery, wants, namespaces, tracking_label=label)
        notes.extend(not_served)
        listed.start(kc, [q for q in queries if not listed.started(q)])
        _meanwhile(kc, args)
        results = listed.results(queries)
        docs: dict[model.ObjectKey, model.Body] = {}
        for body in [*bodies, *argocd_docs]:
            docs[model.ObjectKey.of(body)] = body
        for res in results:
            if res.error:
                if res.query.label_selector:  # the tracked-label sweep is best effort
                    notes.append(f"not checked: {res.error}")
                    continue
                unreadable.append(
                    (
                        model.ObjectKey(res.query.kind.group, res.query.kind.kind,
                                        res.query.namespace, ""),
                        res.error,
                    )
                )  # fmt: skip
                continue
            if res.not_found:
                notes.append(f"{res.query.describe()}: not found (404), counted as empty")
            for item in res.items:
                docs.setdefault(model.ObjectKey.of(item), item)
        involved = {
            (k.group, k.version, k.kind)
            for k in (kc.discovery.find(g, kd, v) for g, v, kd, _ns in wants)
            if k is not None
        }
        fingerprint_key = secrets.token_bytes(32)
        if getattr(args, "server_dry_run", False):
            _server_dry_runs(kc, targets, settings, docs, unreadable, fingerprint_key, progress)
        definitions, openapi_notes = _live_definitions(
            kc, involved, export=getattr(args, "command_snapshot", False)
        )
        err.writelines(f"note: {n}\n" for n in openapi_notes)  # about the tool, not the app
        capture = snapshot.Capture(
            context=kc.context,
            server=kc.server,
            server_version=kc.version,
            captured_at=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            api_resources=tuple(k.to_dict() for k in kc.discovery.kinds() if _used(k, wants)),
            definitions=definitions,
            fingerprint_key=fingerprint_key,
        )
        state = snapshot.from_live(
            docs.values(),
            f"cluster {kc.where}",
            capture=capture,
            unreadable=unreadable,
            notes=sorted(set(notes)),
        )
    return state, targets


def _meanwhile(kc: Any, args: argparse.Namespace) -> None:
    """Work the run does later anyway, done while the LISTs are out (the interpreter is idle
    until the server answers): the built-in OpenAPI definitions (kept), and for a text report
    the table module (30 ms to import)."""
    openapi.load_builtin_definitions(_kube(kc))
    if getattr(args, "output", "") == "text" and not getattr(args, "query", None):
        import tabulate  # noqa: F401 - imported here for report.render_text


class _Listed:
    """LISTs started in batches (the early ones while the apps render, the rest after), read
    back in the order of the whole plan. Progress hears of each result of the plan once the
    listing phase begins (results that came during the renders are counted then)."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._lock = threading.Lock()
        self._plan: set[Any] | None = None  # the whole plan, once known
        self._held: list[Any] = []  # results that came before it
        self._batches: list[tuple[list[Any], concurrent.futures.Future[list[Any]]]] = []

    def start(self, kc: Any, queries: Sequence[Any]) -> None:
        if queries:
            self._batches.append((list(queries), kc.start_fetch(queries, done=self._done)))

    def started(self, query: Any) -> bool:
        return any(query in batch for batch, _future in self._batches)

    def _done(self, res: Any) -> None:
        with self._lock:
            if self._plan is None:
                self._held.append(res)
                return
            if res.query not in self._plan:
                return
        self._progress.advance(res.query.describe())

    def results(self, queries: Sequence[Any]) -> list[Any]:
        """The results of `queries` (every one started), in their order; an early LIST the
        plan does not have is left out."""
        with self._lock:
            self._plan = set(queries)
            self._progress.start("listing", len(queries))
            held, self._held = self._held, []
        for res in held:
            if res.query in self._plan:
                self._progress.advance(res.query.describe())
        found: dict[Any, Any] = {}
        for batch, future in self._batches:
            found.update(zip(batch, future.result(), strict=True))
        return [found[q] for q in queries]


def _server_dry_runs(
    kc: Any,
    targets: Sequence[Target],
    settings: model.Settings,
    live: Mapping[model.ObjectKey, model.Body],
    unreadable: Sequence[tuple[model.ObjectKey, str]],
    fingerprint_key: bytes,
    progress: Progress,
) -> None:
    """--server-dry-run: for each app Argo CD compares with Server-Side Diff, ask the API
    server what applying each desired object that exists live would store, as Argo CD does
    (gitops-engine's serverSideDiff: the object with the tracking metadata Argo CD writes,
    remarshalled through its Go type and Normalized without ignore rules, e.g. a Secret's
    stringData folded into data; a dryRun=All apply as argocd-controller, force; objects missing
    live or hooks are not asked). The answers go on the targets (Secret values fingerprinted
    like the live ones); an object the server would not answer for is Unknown, never Synced."""
    types = schema.Schema(openapi.load_builtin_definitions(_kube(kc)))

    def namespaced(group: str, kind: str) -> bool | None:
        found = kc.discovery.namespaced(group, kind)
        return tracking.default_scope(group, kind) if found is None else found

    not_read = {(k.group, k.kind, k.namespace) for k, _why in unreadable}
    asks: list[tuple[Target, model.ObjectKey, model.Body]] = []
    for target in targets:
        app, rendered = target.app, target.rendered
        if app is None or rendered is None or target.skipped or target.error is not None:
            continue
        choice = compare.choose(app, settings)
        if choice.strategy is not model.DiffStrategy.SERVER_SIDE_DIFF:
            target.notes.append(
                "--server-dry-run was not used: Argo CD compares this app with the "
                f"{choice.describe()} strategy, not Server-Side Diff, so it asks the API "
                "server nothing either"
            )
            continue
        target.dry_run = {}
        desired, _duplicates, _defaulted = tracking.prepare_desired(
            rendered.manifests, app, settings, namespaced
        )
        for manifest in desired:
            key = manifest.key
            if tracking.is_hook(manifest.body) or key not in live:
                continue
            if {(key.group, key.kind, key.namespace), (key.group, key.kind, "")} & not_read:
                continue
            asks.append((target, key, _dry_run_body(manifest, types, settings)))
    if not asks:
        return
    progress(f"server-side apply dry-run of {len(asks)} object(s)")
    answers = kc.dry_run_apply([body for _target, _key, body in asks])
    asked: dict[int, int] = {}
    for (target, key, _body), answer in zip(asks, answers, strict=True):
        if answer.predicted is None:
            target.dry_run_unknown.append((key, answer.error))
            continue
        predicted = answer.predicted
        if key.group == "" and key.kind == "Secret":
            predicted = snapshot.redact_secret(predicted, fingerprint_key)
        assert target.dry_run is not None
        target.dry_run[key] = predicted
        asked[id(target)] = asked.get(id(target), 0) + 1
    for target in targets:
        if target.dry_run is not None and asked.get(id(target)):
            target.notes.append(
                f"--server-dry-run: {asked[id(target)]} object(s) predicted by the API server's "
                "own server-side apply dry-run (dryRun=All: nothing was persisted)"
            )


def _dry_run_body(
    manifest: model.Manifest, types: diff.SchemaLike, settings: model.Settings
) -> dict[str, Any]:
    """The object Argo CD's Server-Side Diff applies: git's (tracking metadata written),
    remarshalled through the Go type of a built-in kind, then gitops-engine's Normalize without
    ignore rules (creationTimestamp dropped, a Secret's stringData folded into base64 data,
    empty Role rules, Endpoints ports defaulted and sorted)."""
    version = str(manifest.body.get("apiVersion") or "").rpartition("/")[2]
    body: dict[str, Any] = normalize.remarshal(
        manifest.body, diff.type_of(types, manifest.key, version)
    )
    normalize.normalize_object(body, manifest.key, settings)
    return body


def _used(kind: Any, wants: Iterable[tuple[str, str, str, str]]) -> bool:
    return any((kind.group, kind.kind) == (g, k) for g, _v, k, _ns in wants)


def _live_argocd(
    kc: Any, args: argparse.Namespace, names: Sequence[str]
) -> tuple[list[model.Body], list[model.Body], list[tuple[model.ObjectKey, str]], list[str]]:
    """The Applications asked for, argocd-cm and the AppProjects (by LIST)."""
    from kubectl_gitdrift import cluster

    app_kind = kc.discovery.find("argoproj.io", "Application")
    if app_kind is None:
        raise ClusterError(
            f"{kc.where} serves no applications.argoproj.io",
            hint="is Argo CD installed in this cluster? check: kubectl api-resources "
            "--api-group argoproj.io",
        )
    controller_ns = args.app_namespace or "argocd"
    queries, extra = _argocd_queries(args, names, kc.discovery.find)
    # Argo CD's settings ConfigMaps by one LIST of the namespace (never one request per object):
    # argocd-cm, argocd-cmd-params-cm (the controller's flags), and argocd-cmp-cm only to run
    # its plugins (--allow-plugins).
    wanted_cms = {"argocd-cm", application.PARAMS_CM}
    if getattr(args, "allow_plugins", False):
        wanted_cms.add("argocd-cmp-cm")
    results = _reusing(kc, [*queries, *extra], kc.early_results())
    bodies: list[model.Body] = []
    for res in results[: len(queries)]:
        if res.error:
            raise ClusterError(
                f"{kc.where}: {res.error}",
                hint="gitdrift needs get/list on applications.argoproj.io: "
                "kubectl auth can-i list applications.argoproj.io -n "
                + (res.query.namespace or "<namespace>"),
            )
        bodies.extend(res.items)
    if args.all:
        bodies = in_shard(bodies, args)
    if not args.all:
        for text, res in zip(names, results[: len(queries)], strict=True):
            if not res.items:
                namespace, name = split_name(text, args)
                (others,) = kc.fetch([cluster.Query(app_kind, namespace or "argocd")])
                known = ", ".join(
                    sorted(
                        f"{(b.get('metadata') or {}).get('namespace')}/"
                        f"{(b.get('metadata') or {}).get('name')}"
                        for b in others.items
                    )
                )
                raise AppError(
                    f"Application {namespace or 'argocd'}/{name} not found in {kc.where}",
                    hint=f"Applications there: {known or 'none'}",
                )
    bodies.sort(key=model.ObjectKey.of)
    argocd_docs: list[model.Body] = []
    unreadable: list[tuple[model.ObjectKey, str]] = []
    notes: list[str] = []
    for res in results[len(queries) :]:
        if res.error:
            unreadable.append(
                (model.ObjectKey(res.query.kind.group, res.query.kind.kind, controller_ns, ""),
                 res.error)
            )  # fmt: skip
            if res.query.kind.kind == "ConfigMap":
                notes.append(
                    "argocd-cm could not be read: Argo CD's default settings are assumed "
                    "(Server-Side Diff off unless an app turns it on)"
                )
                if "argocd-cmp-cm" in wanted_cms:
                    notes.append("argocd-cmp-cm could not be read: only --cmp plugins are known")
            continue
        if res.query.kind.kind == "ConfigMap":
            argocd_docs.extend(
                i for i in res.items if (i.get("metadata") or {}).get("name") in wanted_cms
            )
            continue
        argocd_docs.extend(res.items)
    return bodies, argocd_docs, unreadable, notes


_ARGOCD_KINDS = {
    ("argoproj.io", "Application"): ("v1alpha1", "applications"),
    ("", "ConfigMap"): ("v1", "configmaps"),
    ("argoproj.io", "AppProject"): ("v1alpha1", "appprojects"),
}
"""What Argo CD's CRDs and the core API serve, to list before discovery has said so."""


def _argocd_kind(group: str, kind: str) -> Any:
    from kubectl_gitdrift import cluster

    version, plural = _ARGOCD_KINDS[(group, kind)]
    return cluster.Kind(group, version, kind, plural, namespaced=True)


def _argocd_queries(
    args: argparse.Namespace, names: Sequence[str], find: Any
) -> tuple[list[Any], list[Any]]:
    """The LISTs of the Applications asked for, and of the ConfigMaps and AppProjects in Argo
    CD's namespace, with the kinds `find(group, kind)` gives (None: not served, not listed)."""
    from kubectl_gitdrift import cluster

    app_kind = find("argoproj.io", "Application")
    controller_ns = args.app_namespace or "argocd"
    queries: list[Any] = []
    if app_kind is not None and args.all:
        queries.append(cluster.Query(app_kind, "" if args.all_namespaces else controller_ns))
    elif app_kind is not None:
        for text in names:
            namespace, name = split_name(text, args)
            queries.append(
                cluster.Query(
                    app_kind, namespace or "argocd", field_selector=f"metadata.name={name}"
                )
            )
    extra = []
    for group, kind in (("", "ConfigMap"), ("argoproj.io", "AppProject")):
        found = find(group, kind)
        if found is not None:
            extra.append(cluster.Query(found, controller_ns))
    return queries, extra


def _reusing(kc: Any, queries: Sequence[Any], early: Sequence[Any]) -> list[Any]:
    """The results of `queries`: an early LIST's where it asked the same of a kind discovery
    serves as it was guessed, else LISTed now."""

    def same(query: Any) -> tuple[Any, ...]:
        k = query.kind
        return (k.group, k.version, k.kind, k.plural, k.namespaced, query.namespace,
                query.label_selector, query.field_selector)  # fmt: skip

    found = {same(res.query): res for res in early}
    missing = [q for q in queries if same(q) not in found]
    fetched = dict(zip(missing, kc.fetch(missing), strict=True)) if missing else {}
    return [
        dataclasses.replace(found[same(q)], query=q) if same(q) in found else fetched[q]
        for q in queries
    ]


def _status_wants(
    bodies: Sequence[model.Body], remotes: set[str], discovery: Any
) -> tuple[list[tuple[str, str, str, str]], list[str]]:
    """What `_wants` knows before the apps render: what Argo CD says each app tracks, and
    the namespaces involved (apps that do not parse, or that --all skips, left out)."""
    targets = []
    for body in bodies:
        target = Target(body, "")
        try:
            target.app = application.parse_application(body)
        except GitDriftError:
            continue
        target.skipped = _not_the_clone(target.app, remotes)
        targets.append(target)
    return _wants(targets, discovery)


def _wants(
    targets: Sequence[Target], discovery: Any
) -> tuple[list[tuple[str, str, str, str]], list[str]]:
    """(group, version, kind, namespace) the apps need listed: what git renders and what Argo
    CD says each app tracks (status.resources); and the namespaces involved."""
    wants: set[tuple[str, str, str, str]] = set()
    namespaces: set[str] = set()
    for target in targets:
        app = target.app
        if app is None or target.skipped:
            continue
        for m in target.rendered.manifests if target.rendered else ():
            version = str(m.body.get("apiVersion") or "").rpartition("/")[2]
            namespaced = discovery.namespaced(m.key.group, m.key.kind)
            if namespaced is None:
                namespaced = tracking.default_scope(m.key.group, m.key.kind)
            namespace = (m.key.namespace or app.dest_namespace) if namespaced else ""
            wants.add((m.key.group, version, m.key.kind, namespace))
        status = target.body.get("status") or {}
        for res in status.get("resources") or ():
            if isinstance(res, Mapping) and res.get("kind"):
                wants.add(
                    (
                        str(res.get("group") or ""),
                        str(res.get("version") or ""),
                        str(res["kind"]),
                        str(res.get("namespace") or ""),
                    )
                )
        namespaces.add(app.dest_namespace)
    namespaces.update(ns for _g, _v, _k, ns in wants)
    namespaces.discard("")
    return sorted(wants), sorted(namespaces)


def _live_definitions(
    kc: Any, involved: set[tuple[str, str, str]], *, export: bool
) -> tuple[dict[str, Any], list[str]]:
    """OpenAPI definitions from the cluster, reduced to the kinds involved: for a comparison
    only the kinds the built-in schemas lack (CRDs); for an export every kind involved."""
    builtin = snapshot.group_version_kinds(openapi.load_builtin_definitions(_kube(kc)))
    kinds = involved if export else {gvk for gvk in involved if gvk not in builtin}
    if not kinds:
        return {}, []
    docs, notes = kc.openapi({f"{g}/{v}" if g else v for g, v, _k in kinds})
    definitions: dict[str, Any] = {}
    for gv in sorted(docs):
        try:
            definitions.update(openapi.definitions_from_openapi_v3(docs[gv]))
        except GitDriftError as exc:
            notes.append(f"OpenAPI v3 document for {gv} not usable: {exc.message}")
    return snapshot.reduce_definitions(definitions, kinds), notes


def _kube(kc: Any) -> str:
    return str(kc.version.get("gitVersion") or "1.33")


# --------------------------------------------------------------------------- snapshot
