"""Gathers a live run's inputs through cluster.py: Argo CD's objects (Applications, its
ConfigMaps, AppProjects), the apps rendered (workflow.prepare) while the LISTs they need are in
flight, and the OpenAPI definitions of the kinds involved, as one clusterstate.ClusterState.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime
import gc
import os
import secrets
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from kubectl_gitdrift import __version__, application, model
from kubectl_gitdrift.compare import normalize, openapi, pairs, schema
from kubectl_gitdrift.compare import strategies as compare
from kubectl_gitdrift.diagnose import rbac, tracking
from kubectl_gitdrift.errors import AppError, ClusterError, GitDriftError
from kubectl_gitdrift.live import clusterstate, fingerprints, snapshot
from kubectl_gitdrift.run import workflow
from kubectl_gitdrift.run.request import Request, Selection
from kubectl_gitdrift.sources import config as source_config
from kubectl_gitdrift.sources import tools as source_tools


def gather_live(
    request: Request,
    workdir: Path,
    progress: workflow.Progress,
    err: TextIO,
) -> tuple[clusterstate.ClusterState, list[workflow.Target]]:
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
        gathered = _gather_live(request, workdir, progress, err)
    finally:
        if enabled:
            gc.enable()
    gc.freeze()
    return gathered


def _gather_live(
    request: Request,
    workdir: Path,
    progress: workflow.Progress,
    err: TextIO,
) -> tuple[clusterstate.ClusterState, list[workflow.Target]]:
    # imports kr8s: only live runs pay for it
    from kubectl_gitdrift.live import cluster, listing, transport

    selection = request.selection
    config = transport.Config(
        kubeconfig=request.cluster.kubeconfig,
        context=request.cluster.context,
        timeout=request.cluster.request_timeout,
        version=__version__,
        **{"concurrency": request.settings.workers(), **request.tuning.cluster},
    )
    # Argo CD's objects are listed while discovery runs, of the kinds its CRDs serve (checked
    # against discovery before their answers are used)
    apps, settings_objects = _argocd_queries(selection, _argocd_kind)
    kc = cluster.Cluster(config, cache_dir=request.cluster.cache_dir)
    kc.list_on_connect([*apps, *settings_objects])
    with kc:
        progress(f"connected to {kc.where}")
        bodies, argocd_docs, unreadable, notes = _live_argocd(kc, request)
        settings = application.parse_settings(
            next((d for d in argocd_docs if application.is_argocd_cm(d)), None),
            next((d for d in argocd_docs if application.is_params_cm(d)), None),
        )
        label = (
            settings.instance_label_key
            if settings.tracking_method is not model.TrackingMethod.ANNOTATION
            else ""
        )
        remotes = workflow.remotes_of(request)
        repo_server = _RepoServer(kc, selection.namespace or "argocd")
        listed = _Listed(progress)
        # a comparison asks the API server the controller's can-i (SubjectAccessReview) and
        # lists RBAC objects only if it will not answer; a snapshot holds them for offline
        reviews = _Reviews(kc, request) if request.export is None else None
        # the context kinds (Events, HPAs, webhook configurations) of named apps are read
        # after the compare, for what differs (live/context.py); --all and a snapshot list them
        deferred = reviews is not None and not selection.all
        status_wants = _status_wants(bodies, remotes, kc.discovery)
        early, _ = listing.plan(
            kc.discovery,
            *status_wants,
            tracking_label=label,
            rbac=reviews is None,
            context=not deferred,
        )
        # mutating webhook configurations: only for apps with differences to explain
        hooks = listing.webhooks(kc.discovery) if not deferred and _out_of_sync(bodies) else []
        listed.start(kc, [*early, *(q for q in hooks if q not in early)])
        if reviews is not None:
            reviews.ask(status_wants[0])
        targets = workflow.prepare(
            bodies,
            settings,
            request,
            workdir,
            progress,
            configmaps=argocd_docs,
            kube_version=str(kc.version.get("gitVersion") or ""),
            api_versions=workflow.cluster_api_versions(k.to_dict() for k in kc.discovery.kinds()),
            remotes=remotes,
            repo_server=repo_server,
        )
        if request.export is not None and not request.git.repo_roots:
            repo_server.unrendered(bodies, argocd_docs, request)  # the snapshot's replays
        if not selection.all and targets and targets[0].error is not None:
            raise targets[0].error
        wants, namespaces = _wants(targets, kc.discovery)
        if kc.rediscover((g, v, kd) for g, v, kd, _ns in wants):  # the cache was behind
            wants, namespaces = _wants(targets, kc.discovery)
        wants = _known(wants, kc.discovery, unreadable)
        queries, not_served = listing.plan(
            kc.discovery,
            wants,
            namespaces,
            tracking_label=label,
            rbac=reviews is None,
            context=not deferred,
        )
        notes.extend(not_served)
        listed.start(kc, [q for q in queries if not listed.started(q)])
        if reviews is not None:
            reviews.ask(wants)
        _meanwhile(kc, request)
        context_only = [q for q in hooks if q not in queries]
        results = listed.results([*queries, *context_only])
        if any(r.not_found for r in results) and kc.rediscover():
            # the cache served a kind the server has since dropped: said as a cold run says it
            notes.extend(listing.plan(kc.discovery, wants, namespaces)[1])
            results = [r for r in results if not (r.not_found and _gone(r.query.kind, kc))]
        docs: dict[model.ObjectKey, model.Body] = {}
        for body in [*bodies, *argocd_docs]:
            docs[model.ObjectKey.of(body)] = body
        for res in results:
            if res.query not in context_only:
                continue
            if res.error:  # e.g. 403: a note; the verdict and the drift are whole without them
                notes.append(listing.webhooks_not_read(res.error))
            for item in res.items:
                docs.setdefault(model.ObjectKey.of(item), listing.for_diagnosis(item))
        _take([r for r in results if r.query not in context_only], docs, unreadable, notes)
        answered = None
        if reviews is not None:
            reviews.ask(_tracked_elsewhere(targets, settings, docs.values()))
            answered = reviews.result()
            if answered.failure:  # evaluate the RBAC objects instead, listed now
                fallback = listing.in_namespaces(kc.discovery, listing.RBAC_KINDS, namespaces)
                _take(kc.fetch(fallback), docs, unreadable, notes)
        involved = {
            (k.group, k.version, k.kind)
            for k in (kc.discovery.find(g, kd, v) for g, v, kd, _ns in wants)
            if k is not None
        }
        fingerprint_key = secrets.token_bytes(32)
        if request.cluster.server_dry_run:
            _server_dry_runs(kc, targets, settings, docs, unreadable, fingerprint_key, progress)
        definitions, openapi_notes = _live_definitions(
            kc, involved, export=request.export is not None
        )
        err.writelines(f"note: {n}\n" for n in openapi_notes)  # about the tool, not the app
        capture = clusterstate.Capture(
            context=kc.context,
            server=kc.server,
            server_version=kc.version,
            captured_at=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            api_resources=tuple(k.to_dict() for k in kc.discovery.kinds() if _used(k, wants)),
            definitions=definitions,
            fingerprint_key=fingerprint_key,
            **repo_server.captured(),
        )
        state = clusterstate.from_live(
            docs.values(),
            f"cluster {kc.where}",
            capture=capture,
            unreadable=unreadable,
            notes=sorted(set(notes)),
            reviews=answered,
            follow_up=_follow_up(config, kc, _out_of_sync(bodies)) if deferred else None,
        )
    return state, targets


class _RepoServer:
    """The argocd-repo-server Deployment's image, read by one GET on first need: a render
    choosing a helm when neither --helm-version nor argocd-cm's version label decides
    (sources/tools.choose_helm). Renders ask from several threads; one GET is sent."""

    def __init__(self, kc: Any, namespace: str) -> None:
        self._kc = kc
        self._namespace = namespace
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self.read: source_tools.RepoServer | None = None

    def __call__(self) -> source_tools.RepoServer:
        with self._lock:
            if self.read is None and os.getpid() != self._pid:
                # a forked worker has no connection (its loop thread stayed in the parent);
                # live renders all run before the fork, so this is never reached today
                return source_tools.RepoServer("", "not read in a forked worker")
            if self.read is None:
                body, why = self._kc.get_object(
                    "apps", "Deployment", self._namespace, source_config.REPO_SERVER
                )
                image = source_config.repo_server_image(body) if body is not None else ""
                self.read = source_tools.RepoServer(image, why)
            return self.read

    def unrendered(
        self, bodies: Sequence[model.Body], argocd_docs: Sequence[model.Body], request: Request
    ) -> None:
        """An export that renders nothing (no --repo-root) reads the image for its replays
        when an app names a chart or helm options and nothing else says which helm."""
        if request.settings.helm_version() or source_tools.argocd_helm_major(
            source_config.argocd_version_of(argocd_docs)
        ):
            return
        if any(_names_helm(body) for body in bodies):
            self()

    def captured(self) -> dict[str, Any]:
        """The Capture fields of what was read (none when nothing asked)."""
        if self.read is None:
            return {}
        return {
            "repo_server_image": self.read.image,
            "repo_server_unreadable": self.read.unreadable,
        }


def _names_helm(body: model.Body) -> bool:
    """An Application with a source that is certainly helm: a chart, or helm options."""
    spec = body.get("spec") or {}
    sources = [spec.get("source"), *(spec.get("sources") or ())]
    return any(isinstance(s, Mapping) and (s.get("chart") or s.get("helm")) for s in sources)


def _follow_up(config: Any, kc: Any, webhooks: bool) -> Any:
    """What reads the context objects of one app's differences after its compare, on a
    connection that knows this one's discovery (ClusterState.follow_up); the webhook
    configurations only if `webhooks`, as when they are listed up front."""
    from kubectl_gitdrift.live import context

    return context.FollowUp(config, kc.version, kc.discovery, webhooks=webhooks)


def _out_of_sync(bodies: Sequence[model.Body]) -> bool:
    """Some Application has a difference to explain: Argo CD reports it (or one of its
    resources) other than Synced."""
    for body in bodies:
        status = body.get("status") or {}
        if str((status.get("sync") or {}).get("status") or "") != "Synced":
            return True
        resources = status.get("resources") or ()
        if any(isinstance(r, Mapping) and r.get("status") == "OutOfSync" for r in resources):
            return True
    return False


def _take(
    results: Iterable[Any],
    docs: dict[model.ObjectKey, model.Body],
    unreadable: list[tuple[model.ObjectKey, str]],
    notes: list[str],
) -> None:
    """The LISTs' items into `docs` (the first of a key kept), their failures into
    `unreadable` (a label sweep's into `notes`, being best effort)."""
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


class _Reviews:
    """The Argo CD controller's can-i, asked of the API server by SubjectAccessReview in
    batches that go out beside the LISTs (what the Applications say they track while they
    render, the rest of what they render after, live objects they track elsewhere last), each
    question once: the questions the engine asks of each app (rbac.questions), so that its
    answers are looked up, never asked during the comparison."""

    def __init__(self, kc: Any, request: Request) -> None:
        self._kc = kc
        self._who = rbac.subject(rbac.service_account_user(request.diagnosis.controller_sa))
        self._plurals = {(k.group, k.kind): k.plural for k in kc.discovery.kinds()}
        self._asked: set[rbac.Question] = set()
        self._batches: list[concurrent.futures.Future[rbac.Reviews]] = []

    def ask(self, wants: Iterable[tuple[str, str, str, str]]) -> None:
        """Ask about (group, version, kind, namespace) wants not asked yet; nothing more once
        the server refused a batch."""
        if any(b.done() and not b.exception() and b.result().failure for b in self._batches):
            return
        keys = {model.ObjectKey(g, k, ns, "") for g, _v, k, ns in wants}
        questions = [q for q in rbac.questions(keys, plurals=self._plurals) if q not in self._asked]
        if questions:
            self._asked.update(questions)
            self._batches.append(self._kc.start_review(self._who.user, self._who.groups, questions))

    def result(self) -> rbac.Reviews:
        """Every answer, or none and the first batch's reason the server gave none."""
        answers: dict[rbac.Question, rbac.Answer] = {}
        for batch in self._batches:
            got = batch.result()
            if got.failure:
                return got
            answers.update(got.answers)
        return rbac.Reviews(answers)


def _tracked_elsewhere(
    targets: Sequence[workflow.Target],
    settings: model.Settings,
    live: Iterable[model.Body],
) -> list[tuple[str, str, str, str]]:
    """(group, "", kind, namespace) of the live objects the apps track (a label sweep finds
    them in any namespace), which the engine asks about too when git no longer has them."""
    instances = {
        tracking.instance_name(t.app, settings)
        for t in targets
        if t.app is not None and not t.skipped and t.error is None
    }
    found = set()
    for body in live:
        if (body.get("metadata") or {}).get("ownerReferences"):
            continue
        if tracking.app_of(body, settings) in instances:
            key = model.ObjectKey.of(body)
            found.add((key.group, "", key.kind, key.namespace))
    return sorted(found)


def _meanwhile(kc: Any, request: Request) -> None:
    """Work the run does later anyway, done while the LISTs are out (the interpreter is idle
    until the server answers): the built-in OpenAPI definitions (kept), and for a text report
    the table module (30 ms to import)."""
    openapi.load_builtin_definitions(_kube(kc))
    if request.export is None and request.output.text_report:
        import tabulate  # noqa: F401 - imported here for report.render_text


class _Listed:
    """LISTs started in batches (the early ones while the apps render, the rest after), read
    back in the order of the whole plan. workflow.Progress hears of each result of the plan once the
    listing phase begins (results that came during the renders are counted then)."""

    def __init__(self, progress: workflow.Progress) -> None:
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
    targets: Sequence[workflow.Target],
    settings: model.Settings,
    live: Mapping[model.ObjectKey, model.Body],
    unreadable: Sequence[tuple[model.ObjectKey, str]],
    fingerprint_key: bytes,
    progress: workflow.Progress,
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
    asks: list[tuple[workflow.Target, model.ObjectKey, model.Body]] = []
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
            predicted = fingerprints.redact_secret(predicted, fingerprint_key)
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
    manifest: model.Manifest, types: pairs.SchemaLike, settings: model.Settings
) -> dict[str, Any]:
    """The object Argo CD's Server-Side Diff applies: git's (tracking metadata written),
    remarshalled through the Go type of a built-in kind, then gitops-engine's Normalize without
    ignore rules (creationTimestamp dropped, a Secret's stringData folded into base64 data,
    empty Role rules, Endpoints ports defaulted and sorted)."""
    version = str(manifest.body.get("apiVersion") or "").rpartition("/")[2]
    body: dict[str, Any] = normalize.remarshal(
        manifest.body, pairs.type_of(types, manifest.key, version)
    )
    normalize.normalize_object(body, manifest.key, settings)
    return body


def _known(
    wants: list[tuple[str, str, str, str]],
    discovery: Any,
    unreadable: list[tuple[model.ObjectKey, str]],
) -> list[tuple[str, str, str, str]]:
    """The wants whose kind discovery knows, or knows the absence of; a kind discovery does not
    find in a group with a stale or failed group-version (an aggregated API server that is
    down) is unknown, not Missing: unreadable, as a LIST that failed."""
    known = []
    for want in wants:
        group, version, kind, namespace = want
        stale = discovery.stale_in(group) if discovery.find(group, kind, version) is None else []
        if not stale:
            known.append(want)
            continue
        why = (
            f"discovery of {', '.join(stale)} failed or is stale (is its APIService "
            "available? kubectl get apiservices): its kinds are not known"
        )
        unreadable.append((model.ObjectKey(group, kind, namespace, ""), why))
    return known


def _gone(kind: Any, kc: Any) -> bool:
    return kc.discovery.find(kind.group, kind.kind) is None


def _used(kind: Any, wants: Iterable[tuple[str, str, str, str]]) -> bool:
    return any((kind.group, kind.kind) == (g, k) for g, _v, k, _ns in wants)


def _live_argocd(
    kc: Any, request: Request
) -> tuple[list[model.Body], list[model.Body], list[tuple[model.ObjectKey, str]], list[str]]:
    """The Applications asked for, argocd-cm and the AppProjects (by LIST)."""
    from kubectl_gitdrift.live import listing

    app_kind = kc.discovery.find("argoproj.io", "Application")
    if app_kind is None and kc.rediscover([("argoproj.io", "v1alpha1", "Application")]):
        app_kind = kc.discovery.find("argoproj.io", "Application")
    if app_kind is None:
        raise ClusterError(
            f"{kc.where} serves no applications.argoproj.io",
            hint="is Argo CD installed in this cluster? check: kubectl api-resources "
            "--api-group argoproj.io",
        )
    selection = request.selection
    controller_ns = selection.namespace or "argocd"
    queries, extra = _argocd_queries(selection, kc.discovery.find)
    # Argo CD's settings ConfigMaps by one LIST of the namespace (never one request per object):
    # argocd-cm, argocd-cmd-params-cm (the controller's flags), and argocd-cmp-cm only to run
    # its plugins (--allow-plugins).
    wanted_cms = {"argocd-cm", application.PARAMS_CM}
    if request.git.allow_plugins:
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
    if selection.all:
        bodies = workflow.in_shard(bodies, selection)
    if not selection.all:
        for text, res in zip(selection.names, results[: len(queries)], strict=True):
            if not res.items:
                namespace, name = workflow.split_name(text, selection)
                (others,) = kc.fetch([listing.Query(app_kind, namespace or "argocd")])
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
    from kubectl_gitdrift.live import discovery

    version, plural = _ARGOCD_KINDS[(group, kind)]
    return discovery.Kind(group, version, kind, plural, namespaced=True)


def _argocd_queries(selection: Selection, find: Any) -> tuple[list[Any], list[Any]]:
    """The LISTs of the Applications asked for, and of the ConfigMaps and AppProjects in Argo
    CD's namespace, with the kinds `find(group, kind)` gives (None: not served, not listed)."""
    from kubectl_gitdrift.live import listing

    app_kind = find("argoproj.io", "Application")
    controller_ns = selection.namespace or "argocd"
    queries: list[Any] = []
    if app_kind is not None and selection.all:
        queries.append(listing.Query(app_kind, "" if selection.all_namespaces else controller_ns))
    elif app_kind is not None:
        for text in selection.names:
            namespace, name = workflow.split_name(text, selection)
            queries.append(
                listing.Query(
                    app_kind, namespace or "argocd", field_selector=f"metadata.name={name}"
                )
            )
    extra = []
    for group, kind in (("", "ConfigMap"), ("argoproj.io", "AppProject")):
        found = find(group, kind)
        if found is not None:
            extra.append(listing.Query(found, controller_ns))
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
        target = workflow.Target(body, "")
        try:
            target.app = application.parse_application(body)
        except GitDriftError:
            continue
        target.skipped = workflow.not_the_clone(target.app, remotes)
        targets.append(target)
    return _wants(targets, discovery)


def _wants(
    targets: Sequence[workflow.Target], discovery: Any
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
