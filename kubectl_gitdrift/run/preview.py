"""`preview`: what a change between two revisions of a repository does to every Application
it defines, desired against desired and, with a snapshot or a cluster, head against live.

The revisions: `--head` (else the work tree, made into a commit without touching the user's
index, refs or files; a clean one is HEAD) and `--base` (else the merge base of head with the
default branch). The apps of each side are found by run/discover.py (literal, ApplicationSets,
app-of-apps; with a live state also the Applications there whose source is this repository),
an app being the same app on both sides when its namespace/name is; run/touched.py selects
those the change reaches (every one with --all-apps, where one the change does not reach is
rendered at base only: head's render is the same). Each selected app is rendered at both
sides on every core (threads, as workflow.prepare does), through the same exported trees,
fetched repositories and render cache, with this repository's sources at the side's commit
and any other repository's at their own targetRevision; compare/revisions.py says which
objects differ and how, diagnose/sync_effects.py what syncing head would do to the live
objects (engine.run's report of head against them).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import io
import itertools
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubectl_gitdrift import application, engine, hookcalls, model, plugins
from kubectl_gitdrift.diagnose import rbac
from kubectl_gitdrift.errors import GitDriftError, SourceError, UsageError
from kubectl_gitdrift.live import clusterstate
from kubectl_gitdrift.run import discover, touched, workflow
from kubectl_gitdrift.run.request import Change, Request, Selection
from kubectl_gitdrift.sources import cache as source_cache
from kubectl_gitdrift.sources import charts as source_charts
from kubectl_gitdrift.sources import commits
from kubectl_gitdrift.sources import config as source_config
from kubectl_gitdrift.sources import fetch as source_fetch
from kubectl_gitdrift.sources import git as source_git
from kubectl_gitdrift.sources import render as source_render

if TYPE_CHECKING:
    from kubectl_gitdrift.appsets.inputs import Cluster

WORK_TREE = "work tree"


def run(request: Request, progress: workflow.Progress) -> model.Preview:
    """The preview of `request.change` in the clone at --repo-root (else the current
    directory). Raises SourceError for a revision that does not exist; an app that cannot be
    found, expanded or rendered is reported FAILED and the rest go on."""
    change = request.change or Change()
    root = request.git.plain_root or Path.cwd()
    top = source_git.toplevel(root)
    if change.head is None:
        progress("reading the work tree")
        head, head_ref = commits.work_tree_commit(top), WORK_TREE
    else:
        head, head_ref = _resolve(top, change.head, "--head"), change.head
    if change.base is None:
        base_ref = commits.default_branch(top)
        base = commits.merge_base(top, head, base_ref)
    else:
        base, base_ref = _resolve(top, change.base, "--base"), change.base
    with tempfile.TemporaryDirectory(prefix="gitdrift-preview-") as scratch:
        state = _live_state(request, Path(scratch), progress) if change.live else None
        return _Run(request, top, root, Path(scratch), progress, state).preview(
            base, head, base_ref, head_ref
        )


def _resolve(top: Path, rev: str, flag: str) -> str:
    try:
        return source_git.resolve_revision(top, rev)
    except SourceError as exc:
        raise SourceError(f"{flag} {rev}: no such revision in {top}", hint=exc.hint) from None


@dataclass
class _Side:
    label: str  # base | head
    sha: str
    tree: Path
    found: discover.Discovered | None = None


@dataclass
class _Pair:
    """One app name and what each side has of it."""

    name: str
    base: discover.Found | None
    head: discover.Found | None
    touched_by: tuple[str, ...] = ()
    spec_changed: bool = False
    error: str = ""


class _Run:
    """One preview: the machinery the renders of both sides share."""

    def __init__(
        self,
        request: Request,
        top: Path,
        root: Path,
        workdir: Path,
        progress: workflow.Progress,
        state: clusterstate.ClusterState | None,
    ) -> None:
        self.request, self.top, self.root, self.workdir = request, top, root, workdir
        self.progress, self.state = progress, state
        git, knobs = request.git, request.settings
        self.cache = (
            source_cache.RenderCache(knobs.cache_dir(), knobs.cache_max_bytes())
            if git.cache
            else None
        )
        self.exports = source_render.Exports(
            workdir / "trees",
            None
            if self.cache is None
            else source_cache.TreeCache(self.cache.directory, self.cache.max_bytes),
        )
        self.fetched = source_fetch.Repos(  # other repositories: their URL=DIR clone, or fetched
            (workdir if self.cache is None else self.cache.directory) / "git",
            roots=[r for r in git.repo_roots if r.url is not None],
            offline=git.offline,
            exports=self.exports,
            settings=knobs,
        )
        self.remotes = workflow._clone_urls(top)
        self.configmaps = workflow.render_configmaps(state) if state is not None else []
        capture = state.capture if state is not None else None
        self.config = source_config.of(
            self.configmaps,
            cmp_files=git.cmp_files,
            allow_plugins=git.allow_plugins,
            kube_version=capture.kube_version if capture is not None else "",
            api_versions=workflow.cluster_api_versions(
                capture.api_resources if capture is not None else ()
            ),
            repo_server=workflow.repo_server_of(state) if state is not None else None,
        )
        self.settings = (
            workflow.settings_of(state)
            if state is not None
            else application.parse_settings(None, None)
        )
        self.workers = max(1, knobs.workers())
        self._count = itertools.count(1)
        self._lock = threading.Lock()
        self._clusters: list[Cluster] | None = None  # the ApplicationSets' cluster generators
        self._renders: dict[tuple[str, str], source_render.Rendered | GitDriftError] = {}
        self._inputs: dict[tuple[str, str], touched.Inputs | None] = {}
        self._paths: dict[frozenset[str], touched.Paths] = {}
        self.changed: list[str] = []  # the paths base and head differ in
        self.base_side: _Side | None = None  # once exported

    # ------------------------------------------------------------------ the run

    def preview(self, base_sha: str, head_sha: str, base_ref: str, head_ref: str) -> model.Preview:
        base = _Side("base", base_sha, self.exports.export(self.top, base_sha))
        head = _Side("head", head_sha, self.exports.export(self.top, head_sha))
        self.changed = commits.changed(self.top, base_sha, head_sha)
        self.progress.start("finding apps", 2)
        self.base_side = base
        for side in (base, head):
            side.found = self._discover(side)
            self.progress.advance(side.label)
        pairs = self._pairs(base, head)
        all_apps = bool(self.request.change and self.request.change.all_apps)
        chosen = [p for p in pairs if all_apps or self._is_touched(p)]
        renders = [
            (side, found)
            for p in chosen
            if not p.error
            # an app the change does not reach (--all-apps) renders at base only: the same
            for side, found in ((base, p.base), (head, p.head if self._is_touched(p) else None))
            if found is not None
        ]
        self.progress.start("rendering", len(renders))
        self._map(lambda job: self._rendered(job[0], job[1], count=True), renders)
        live = self._live_parts(chosen, base, head)
        apps = tuple(self._app(p, base, head, live) for p in sorted(chosen, key=lambda p: p.name))
        return model.Preview(
            base=base_sha,
            head=head_sha,
            base_ref=base_ref,
            head_ref=head_ref,
            apps=apps,
            untouched=len(pairs) - len(chosen),
            live=self._live_label(),
        )

    def _discover(self, side: _Side) -> discover.Discovered:
        expanders: list[discover.Expand] = []

        def expand(body: model.Body) -> list[dict[str, Any]]:
            if not expanders:  # the ApplicationSet wing is loaded for a repository that has one
                expanders.append(self._expander(side))
            return expanders[0](body)

        found = discover.discover(
            self.top,
            side.sha,
            expand=expand,
            render=lambda f: self._parent_render(side, f),
            parent=lambda f, files: self._may_parent(side, f, files),
            map_fn=self._map,
        )
        if self.state is not None:  # the cluster's apps of this repository, not defined in git
            for body in self.state.applications:
                name = discover.qualified(body)
                if name not in found.apps and self._of_this_repo(body):
                    found.apps[name] = discover.Found(name, _without_status(body), "cluster")
        return found

    def _pairs(self, base: _Side, head: _Side) -> list[_Pair]:
        assert base.found is not None
        assert head.found is not None
        names = sorted({*base.found.apps, *head.found.apps, *base.found.failed,
                        *head.found.failed})  # fmt: skip
        out = []
        for name in names:
            b, h = base.found.apps.get(name), head.found.apps.get(name)
            if (b is not None and b.origin == "cluster") and h is None:
                h = dataclasses.replace(b)
            if (h is not None and h.origin == "cluster") and b is None:
                b = dataclasses.replace(h)
            pair = _Pair(name, b, h)
            failed = head.found.failed.get(name) or base.found.failed.get(name)
            if failed is not None and b is None and h is None:
                side = "head" if name in head.found.failed else "base"
                pair = _Pair(name, failed if side == "base" else None,
                             failed if side == "head" else None,
                             error=f"{side}: {failed.error}")  # fmt: skip
                out.append(pair)
                continue
            if (b is None) != (h is None):  # on one side only: was the other's parent unknown?
                pair.error = _unknown_parent(*((head, h, base) if b is None else (base, b, head)))
            pair.touched_by = touched.touched_by(
                self._inputs_of(base, b) if b is not None else None,
                self._inputs_of(head, h) if h is not None else None,
                self.changed,
            )
            pair.spec_changed = touched.spec_changed(
                b.body if b is not None else None, h.body if h is not None else None
            )
            if pair.spec_changed:  # its own definition's file (or the ApplicationSet's) changed
                own = {f.file for f in (b, h) if f is not None and f.file in self.changed}
                pair.touched_by = tuple(sorted({*pair.touched_by, *own}))
            out.append(pair)
        return out

    def _is_touched(self, pair: _Pair) -> bool:
        return bool(
            pair.error or pair.base is None or pair.head is None or pair.spec_changed
            or pair.touched_by
        )  # fmt: skip

    # ------------------------------------------------------------------ one app

    def _app(
        self,
        pair: _Pair,
        base: _Side,
        head: _Side,
        live: Mapping[str, tuple[tuple[model.SyncEffect, ...], tuple[model.Finding, ...]]],
    ) -> model.AppPreview:
        shown = pair.head or pair.base
        assert shown is not None
        shell = model.AppPreview(
            name=pair.name,
            action=model.PreviewAction.FAILED,
            origin=shown.origin,
            source=_source_shown(shown.body),
            touched_by=pair.touched_by,
            notes=tuple(self._notes(pair, base, head)),
        )
        if pair.error:
            return dataclasses.replace(shell, error=pair.error)
        sides = [(s, f) for s, f in ((base, pair.base), (head, pair.head)) if f is not None]
        if not self._is_touched(pair):
            sides = [(base, pair.base)] if pair.base is not None else []
        rendered: dict[str, Sequence[model.Manifest]] = {}
        for side, found in sides:
            got = self._rendered(side, found)
            if isinstance(got, GitDriftError):
                return dataclasses.replace(shell, error=f"{side.label}: {discover.line(got)}")
            rendered[side.label] = self._as_applied(got.manifests, found)
        objects: tuple[model.ObjectChange, ...] = ()
        if self._is_touched(pair):  # an untouched app renders the same on both sides
            from kubectl_gitdrift.compare import revisions

            objects = tuple(
                revisions.edits(
                    rendered.get("base", ()), rendered.get("head", ()), settings=self.settings
                )
            )
        spec: tuple[model.Edit, ...] = ()
        if pair.base is not None and pair.head is not None and pair.spec_changed:
            spec = self._spec_edits(pair.base.body, pair.head.body)
        if pair.base is None:
            action = model.PreviewAction.ADDED
        elif pair.head is None:
            action = model.PreviewAction.REMOVED
        elif objects or spec:
            action = model.PreviewAction.CHANGED
        else:
            action = model.PreviewAction.UNCHANGED
        sync, not_fixed = live.get(pair.name, ((), ()))
        return dataclasses.replace(
            shell, action=action, objects=objects, spec=spec, sync=sync, not_fixed=not_fixed
        )

    def _spec_edits(self, base: model.Body, head: model.Body) -> tuple[model.Edit, ...]:
        from kubectl_gitdrift.compare import revisions

        key = model.ObjectKey.of(head)
        changes = revisions.edits(
            [model.Manifest(key, base)], [model.Manifest(key, head)], settings=self.settings
        )
        return tuple(
            e for c in changes for e in c.edits if e.path[:1] in (("spec",), ("metadata",))
        )

    def _notes(self, pair: _Pair, base: _Side, head: _Side) -> list[str]:
        notes: list[str] = []
        for side, found in ((base, pair.base), (head, pair.head)):
            if side.found is None or found is None:
                continue
            for note in side.found.notes.get(pair.name, ()):
                notes.append(f"{side.label}: {note}")
            inputs = self._inputs.get((side.sha, pair.name))
            for path in side.found.skipped:
                if inputs is not None and inputs.reaches(path):
                    notes.append(f"{side.label}: {path} is not YAML as it is (a template?): "
                                 "read only through the app's render")  # fmt: skip
        return list(dict.fromkeys(notes))

    # ------------------------------------------------------------------ rendering

    def _rendered(
        self, side: _Side, found: discover.Found, count: bool = False
    ) -> source_render.Rendered | GitDriftError:
        """The app's render at `side` (made once per side; an error is remembered)."""
        key = (side.sha, found.name)
        with self._lock:
            known = self._renders.get(key)
        if known is None:
            try:
                app = application.parse_application(found.body)
                known = self._render(side, app)
            except GitDriftError as exc:
                known = exc
            with self._lock:
                self._renders[key] = known
        if count:
            self.progress.advance(f"{found.name} ({side.label})")
        return known

    def _as_applied(
        self, manifests: Sequence[model.Manifest], found: discover.Found
    ) -> list[model.Manifest]:
        """The render as Argo CD applies it: namespaced objects in the destination namespace
        (so a preview names the object the cluster has), the last of duplicates kept."""
        from kubectl_gitdrift.diagnose import tracking

        app = application.parse_application(found.body)
        return tracking.prepare_desired(manifests, app, self.settings)[0]

    def _render(self, side: _Side, app: model.Application) -> source_render.Rendered:
        git = self.request.git
        with self._lock:
            index = next(self._count)
        return source_render.render(
            app,
            None,
            workdir=self.workdir / f"{index:05d}",
            exports=self.exports,
            cache=self.cache,
            repos=_SideRepos(self, side),
            config=self.config,
            policy=source_charts.policy_for(
                app.project, self.configmaps, (self.settings.controller_namespace, app.namespace)
            ),
            offline=git.offline,
            settings=self.request.settings,
        )

    def _parent_render(self, side: _Side, found: discover.Found) -> Sequence[model.Manifest]:
        """A parent's render, for its children: at head, an app the change does not reach
        renders what it rendered at base (not rendered again)."""
        base = self.base_side
        if side.label == "head" and base is not None and base.found is not None:
            before = base.found.apps.get(found.name)
            if before is not None and not touched.spec_changed(before.body, found.body):
                inputs = [self._inputs_of(base, before), self._inputs_of(side, found)]
                if not touched.touched_by(inputs[0], inputs[1], self.changed):
                    side, found = base, before
        got = self._rendered(side, found)
        if isinstance(got, GitDriftError):
            raise got
        return got.manifests

    def _may_parent(self, side: _Side, found: discover.Found, files: frozenset[str]) -> bool:
        inputs = self._inputs_of(side, found)
        with self._lock:
            paths = self._paths.get(files)
            if paths is None:
                paths = self._paths[files] = touched.Paths.of(files)
        return inputs is not None and inputs.reaches_any(paths)

    def _inputs_of(self, side: _Side, found: discover.Found) -> touched.Inputs | None:
        key = (side.sha, found.name)
        with self._lock:
            if key in self._inputs:
                return self._inputs[key]
        try:
            app = application.parse_application(found.body)
            inputs: touched.Inputs | None = touched.inputs(app, side.tree, self._ours)
        except GitDriftError:
            inputs = None
        with self._lock:
            self._inputs[key] = inputs
        return inputs

    def _map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        if self.workers <= 1 or len(items) <= 1:
            return [fn(i) for i in items]
        with concurrent.futures.ThreadPoolExecutor(min(self.workers, len(items))) as pool:
            return list(pool.map(fn, items))

    # ------------------------------------------------------------------ repositories

    def _ours(self, url: str) -> bool:
        """`url` is this clone's repository (a clone without remotes: every git one)."""
        if source_charts.is_registry(url, ""):
            return False
        return not self.remotes or source_render._normalize_url(url) in self.remotes

    def _of_this_repo(self, body: model.Body) -> bool:
        try:
            app = application.parse_application(body)
        except GitDriftError:
            return False
        return any(self._ours(s.repo_url) for s in app.sources if not s.chart or s.path)

    def checkout_for(
        self, side: _Side, app: model.Application, source: model.AppSource, revision: str,
        prefer_remote: bool, cached_only: bool,
    ) -> source_render.Checkout:  # fmt: skip
        if self._ours(source.repo_url):
            return source_render.Checkout(self.top, side.sha, str(self.root))
        return self.fetched.checkout(app, source, revision, prefer_remote, cached_only=cached_only)

    def _expander(self, side: _Side) -> discover.Expand:
        from kubectl_gitdrift.appsets import expand as appset_expand
        from kubectl_gitdrift.appsets import inputs as appset_inputs
        from kubectl_gitdrift.run import appset_inputs as run_inputs

        def resolve(repo_url: str, revision: str) -> tuple[Path, str]:
            if self._ours(repo_url):
                return self.top, side.sha
            source = model.AppSource(repo_url=repo_url, target_revision=revision)
            co = self.fetched.checkout(_generator_app(repo_url), source, revision or "HEAD", True)
            return co.top, co.sha

        if self._clusters is None:  # the same cluster Secrets for both sides: read once
            secrets = (m.body for m in self.state.objects) if self.state is not None else ()
            self._clusters = run_inputs.clusters(
                secrets, namespace=self.settings.controller_namespace
            )
        inputs = appset_inputs.Inputs(
            repo=run_inputs.GitRepo(resolve),
            clusters=self._clusters,
            offline=self.request.git.offline,
            allow_plugins=self.request.git.allow_plugins,
        )
        return lambda body: appset_expand.expand(body, inputs)

    # ------------------------------------------------------------------ live

    def _live_label(self) -> str:
        if self.state is None:
            return ""
        cluster = self.request.cluster
        if cluster.snapshot is not None:
            return f"snapshot {cluster.snapshot}"
        return f"context {cluster.context or self.state.source.removeprefix('cluster ')}"

    def _live_parts(
        self, chosen: Sequence[_Pair], base: _Side, head: _Side
    ) -> dict[str, tuple[tuple[model.SyncEffect, ...], tuple[model.Finding, ...]]]:
        """What syncing head would do, per app head renders (engine.run against live)."""
        state = self.state
        if state is None:
            return {}
        from kubectl_gitdrift.diagnose import sync_effects

        pm = plugins.make_plugin_manager(
            paths=self.request.plugins.paths,
            entry_points=self.request.plugins.entry_points,
            blocked=self.request.plugins.blocked,
        )
        try:
            controller = rbac.service_account_user(self.request.diagnosis.controller_sa)
        except ValueError as exc:
            raise UsageError(f"--controller-sa {exc}") from None
        options = dataclasses.replace(
            workflow.options(state, self.request, hookcalls.collect_rules(pm)),
            controller=controller,
        )
        index = engine.LiveIndex.of(state.objects, self.settings) if len(chosen) > 1 else None
        out = {}
        for pair in chosen:
            if pair.error or pair.head is None:
                continue
            # an app the change does not reach (--all-apps) renders at head what it did at base
            side, found = (base, pair.base) if not self._is_touched(pair) else (head, pair.head)
            rendered = self._rendered(side, found or pair.head)
            if isinstance(rendered, GitDriftError):
                continue
            namespace, _, name = pair.name.partition("/")
            live_body = state.find_application(name, namespace)
            body = dict(pair.head.body)
            if live_body is not None:  # head's spec, with what Argo CD recorded of the app
                body = {**live_body, "spec": pair.head.body.get("spec")}
            target = workflow.Target(body, pair.name, rendered=rendered)
            target.app = application.parse_application(body)
            report = workflow.run_one(
                target, state, self.settings, pm, options, self.request, index=index
            )
            out[pair.name] = sync_effects.effects(report)
        return out


class _SideRepos:
    """sources.render's Repos for one side: this repository at the side's commit."""

    def __init__(self, run: _Run, side: _Side) -> None:
        self.run, self.side = run, side

    def checkout(
        self,
        app: model.Application,
        source: model.AppSource,
        revision: str,
        prefer_remote: bool,
        *,
        cached_only: bool = False,
    ) -> source_render.Checkout:
        return self.run.checkout_for(self.side, app, source, revision, prefer_remote, cached_only)


def _live_state(
    request: Request, workdir: Path, progress: workflow.Progress
) -> clusterstate.ClusterState:
    """The snapshot, or the cluster read as a normal run reads it (its Applications and what
    they need: gather.py)."""
    if request.cluster.snapshot is not None:
        from kubectl_gitdrift.live import snapshot

        progress(f"reading {request.cluster.snapshot}")
        return snapshot.load(request.cluster.snapshot)
    from kubectl_gitdrift.run import gather

    every = dataclasses.replace(request, selection=Selection(all=True, all_namespaces=True))
    state, _targets = gather.gather_live(every, workdir / "live", progress, io.StringIO())
    return state


def _unknown_parent(side: _Side, found: discover.Found | None, other: _Side) -> str:
    """Why an app found on one side only may be on the other too: a parent of it there
    whose Applications are not known (it failed to render, or to expand)."""
    if found is None or side.found is None or other.found is None:
        return ""
    for parent in side.found.lineage(found):
        why = other.found.unknown.get(parent)
        if why is not None:
            return f"{other.label}: the Applications of {parent} are not known: {why}"
    return ""


def _without_status(body: model.Body) -> model.Body:
    return {k: v for k, v in body.items() if k != "status"}


def _source_shown(body: model.Body) -> str:
    spec = body.get("spec") or {}
    sources = spec.get("sources") or ([spec["source"]] if spec.get("source") else [])
    first = sources[0] if sources and isinstance(sources[0], Mapping) else {}
    return str(first.get("path") or first.get("chart") or "")


def _generator_app(repo_url: str) -> model.Application:
    """The Application fetch.Repos names in its messages, for a generator's repository."""
    return model.Application(
        name="applicationset-generator", namespace="argocd", project="default",
        sources=(model.AppSource(repo_url=repo_url),), dest_server="", dest_name="",
        dest_namespace="", sync_policy=model.SyncPolicy(), ignore_rules=(), sync_status="",
        revisions=(), history=(), operation=None,
    )  # fmt: skip
