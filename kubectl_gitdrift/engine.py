"""One application's run, composed from the pure steps: desired + live → drifts → findings → report.

No files, processes or clusters here: the CLI gathers inputs at the edges and passes them in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import pluggy

from kubectl_gitdrift import hookcalls, hookspecs, model
from kubectl_gitdrift.compare import fields, legacy, pairs, ssa, structured
from kubectl_gitdrift.compare import strategies as choosing
from kubectl_gitdrift.diagnose import attribution, audit, primary, rbac, remedies, tracking
from kubectl_gitdrift.diagnose import rules as diagnosis


@dataclass(frozen=True)
class Inputs:
    """What the edges gathered for one application."""

    app: model.Application
    settings: model.Settings
    desired: Sequence[model.Manifest]  # rendered from git, before Argo CD's own touches
    live: Sequence[model.Manifest]  # every live object read (the app's and others)
    revision: str  # what was rendered
    source: str  # "repoURL path @ revision", for display
    notes: Sequence[str] = ()
    unreadable: Sequence[tuple[model.ObjectKey, str]] = ()  # (key or kind, why) live could not read
    audit_log: audit.AuditLog | None = None  # --audit-log, read by sources/auditlog.py
    events: Sequence[model.Body] = ()  # core/v1 Events read apart from `live` (live mode)
    project: model.Body | None = None  # the app's AppProject; else looked up in `live`
    now: str = ""  # the moment the state describes; default: the app's status.reconciledAt
    index: LiveIndex | None = None  # `live` indexed once for every app of a run (--all)
    # --server-dry-run: the API server's answer to Argo CD's apply dry-run (dryRun=All,
    # argocd-controller, force) per desired object; used as the predicted object when present
    dry_run: Mapping[model.ObjectKey, model.Body] | None = None
    varying: Sequence[model.VaryingRender] = ()  # where the source renders differently each time


@dataclass(frozen=True)
class LiveIndex:
    """The per-snapshot work every app of a run would otherwise repeat over all live objects:
    objects by key, the tracking roots by app instance, the tracking-ids by the app they name,
    AppProjects, CRD plurals, Events, managedFields, and the RBAC evaluator."""

    live: Sequence[model.Manifest]
    settings: model.Settings
    by_key: Mapping[model.ObjectKey, model.Manifest]
    roots: Mapping[str | None, Sequence[model.Manifest]]
    plurals: Mapping[tuple[str, str], str]
    events: tuple[model.Body, ...]
    managed_known: bool
    claims: Mapping[str, Sequence[tuple[model.Manifest, str]]]
    kinds: Mapping[tuple[str, str], Sequence[model.Manifest]]
    projects: Mapping[tuple[str, str], model.Body]
    evaluator: rbac.Evaluator

    @classmethod
    def of(cls, live: Sequence[model.Manifest], settings: model.Settings) -> LiveIndex:
        """`live`'s objects are keyed by their bodies (`ObjectKey.of`), as every reader makes
        them: kinds, events, CRDs and RBAC objects are found by key."""
        by_key: dict[model.ObjectKey, model.Manifest] = {}
        kinds: dict[tuple[str, str], list[model.Manifest]] = {}
        for manifest in live:
            key = manifest.key
            by_key[key] = manifest
            found = kinds.get((key.group, key.kind))
            if found is None:
                kinds[(key.group, key.kind)] = [manifest]
            else:
                found.append(manifest)
        roots, claims = tracking.roots_and_claims(live, settings)
        return cls(
            live=live,
            settings=settings,
            by_key=by_key,
            roots=roots,
            plurals=rbac.plurals_from(
                m.body for m in _in_order(live, kinds, lambda gk: gk[1] == _CRD)
            ),
            events=tuple(m.body for m in _in_order(live, kinds, _is_event_kind)),
            managed_known=any(fields.has_managed_fields(m.body) for m in live),
            claims=claims,
            kinds=kinds,
            projects={
                (m.key.namespace, m.key.name): m.body
                for m in kinds.get(("argoproj.io", "AppProject"), ())
            },
            evaluator=rbac.Evaluator(
                m.body
                for (group, _), found in kinds.items()
                if group == rbac.RBAC_GROUP
                for m in found
            ),
        )

    def serves(self, live: Sequence[model.Manifest], settings: model.Settings) -> bool:
        return self.live is live and self.settings == settings


@dataclass(frozen=True)
class Options:
    schema: pairs.SchemaLike | None = None
    defaults: pairs.DefaultsFn | None = None
    locate: remedies.Locator | None = None
    scope: tracking.ScopeFn = tracking.default_scope
    disabled_rules: Sequence[str] = ()
    rules: Sequence[hookspecs.Rule] = field(default_factory=list)
    history: attribution.FileHistory | None = None  # file -> last commit touching it
    authorize: rbac.Authorizer | None = None  # live: SubjectAccessReview; None: offline RBAC
    # live: the notes say how the controller's permissions were checked, and, where the
    # reviews were not answered and RBAC objects were evaluated instead, why (`review_failure`)
    note_access: bool = False
    review_failure: str = ""  # e.g. "SubjectAccessReview forbidden"
    controller: str = rbac.CONTROLLER  # --controller-sa, as a username
    plurals: Mapping[tuple[str, str], str] | None = None  # (group, kind) -> resource, discovery
    read_source: remedies.SourceReader | None = None  # repo-relative file -> text, for patches
    context_flags: Sequence[str] = ()  # --snapshot, --repo-root, ...: for suggested commands


def run(inputs: Inputs, pm: pluggy.PluginManager, opts: Options) -> model.AppReport:
    """compare, then diagnose with what `inputs` holds (offline: the snapshot has it all)."""
    return diagnose(compare(inputs, pm, opts), pm, opts)


@dataclass(frozen=True)
class Compared:
    """One application compared, not yet diagnosed: what `diagnose` goes on from, and what
    `needs` reads to say which context objects the diagnosis of its differences can use."""

    inputs: Inputs
    index: LiveIndex
    choice: choosing.Choice
    drifts: Sequence[model.Drift]
    notes: Sequence[str]
    duplicates: Sequence[model.ObjectKey] = ()  # rendered more than once
    hooks: int = 0  # hook objects, not compared


@dataclass(frozen=True)
class Needs:
    """The context objects the diagnosis of an app's differences reads (live mode fetches
    them once the compare has shown what differs, instead of listing them beside the app's
    own objects): the Events of `dated` (Deployments whose spec.replicas differ: the
    deployment controller's "Scaled ..." dates the write, attribution.date_from_events), the
    HorizontalPodAutoscalers that may scale `scaled` (the objects with differing fields:
    builtin/field-fight names an HPA that targets one), and the MutatingWebhookConfigurations
    when `webhooks` (a differing field is owned by Argo CD's own apply, so the stored value may
    be a webhook's: diagnose/admission.py)."""

    dated: tuple[model.ObjectKey, ...] = ()
    scaled: tuple[model.ObjectKey, ...] = ()
    webhooks: bool = False


def needs(compared: Compared) -> Needs:
    """What the diagnosis of `compared`'s differences can read beyond the app's own objects
    (pure; the conditions are those of the readers named in Needs)."""
    changed = [
        d
        for d in compared.drifts
        if d.status is model.ResourceStatus.OUT_OF_SYNC and d.changes and d.live is not None
    ]
    dated = [
        d.key
        for d in changed
        if d.key.kind == "Deployment" and any(c.path == _REPLICAS for c in d.changes)
    ]
    # a webhook's change is claimed only for a field Argo CD's own apply owns (admission.py)
    applied = any(
        c.owner is not None and c.owner.is_argocd and not c.owner.subresource
        for d in changed
        for c in d.changes
        if c.desired is not None
    )
    return Needs(
        dated=tuple(sorted(set(dated))),
        scaled=tuple(sorted({d.key for d in changed})),
        webhooks=applied,
    )


_REPLICAS = ("spec", "replicas")


def compare(inputs: Inputs, pm: pluggy.PluginManager, opts: Options) -> Compared:
    """The app's desired objects against the live ones, as Argo CD compares them, each
    difference attributed: the first of `run`'s two steps."""
    app, settings = inputs.app, inputs.settings
    desired, duplicates, defaulted = tracking.prepare_desired(
        inputs.desired, app, settings, opts.scope
    )
    hooks = [m for m in desired if tracking.is_hook(m.body)]
    desired = [m for m in desired if not tracking.is_hook(m.body)]
    index = inputs.index
    if index is None or not index.serves(inputs.live, settings):
        index = LiveIndex.of(inputs.live, settings)
    live_by_key = index.by_key
    instance = tracking.instance_name(app, settings)
    unreadable = dict(inputs.unreadable)

    rules = [(r.origin, r) for r in (*app.ignore_rules, *settings.ignore_rules)]
    for plugin, contributed in hookcalls.call_each(
        pm, "gitdrift_ignore_rules", app=app, live=inputs.live
    ):
        rules.extend((plugin, r) for r in contributed or ())
    ctx = pairs.CompareContext(
        settings=settings,
        schema=opts.schema,
        defaults=opts.defaults,
        ignore_rules=rules,
        normalizer=_normalizer(pm),
    )
    choice = choosing.choose(app, settings)
    strategies = _Strategies(
        ssa.Context(
            ctx,
            ssa.Types.of(opts.schema, index.kinds.get(ssa.CRD_KEY, ())),
            choice,
        ),
        inputs.dry_run,
    )

    drifts: list[model.Drift] = []
    notes = list(inputs.notes)
    tracked = list(index.roots.get(instance, ()))  # tracking.tracked_roots, indexed
    desired_keys = {m.key for m in desired}
    paired: set[model.ObjectKey] = set()
    for manifest in desired:
        reason = unreadable.get(manifest.key) or unreadable.get(_kind_key(manifest.key))
        if reason:
            drifts.append(
                model.Drift(
                    manifest.key,
                    model.ResourceStatus.UNKNOWN,
                    origin=manifest.origin,
                    reason=reason,
                )
            )
            continue
        live = live_by_key.get(manifest.key)
        if live is None and manifest.key in defaulted:
            live = _moved(manifest.key, tracked, desired_keys)
            if live is not None:
                notes.append(
                    f"{manifest.key.short()}: git sets no namespace and the app's destination "
                    f"is {manifest.key.namespace!r}, but the object this app tracks lives in "
                    f"{live.key.namespace!r}; compared with that one"
                )
                manifest = tracking.relocate(manifest, live.key.namespace, app, settings)
        if live is not None:
            paired.add(live.key)
        drifts.append(strategies.compare(manifest, live))
    for manifest in tracked:
        if manifest.key in desired_keys or manifest.key in paired:
            continue
        if not tracking.self_referenced(manifest.body, manifest.key, settings):
            continue
        drift = pairs.unpaired(None, manifest, ctx)
        annotations = (manifest.body.get("metadata") or {}).get("annotations") or {}
        if "IgnoreExtraneous" in str(annotations.get("argocd.argoproj.io/compare-options", "")):
            drift = model.Drift(drift.key, drift.status, live=drift.live, counts=False)
        drifts.append(drift)
    notes.extend(strategies.notes())
    drifts = [attribution.attribute(d, pm) for d in drifts]
    drifts.sort(key=lambda d: d.key)
    return Compared(
        inputs, index, choice, tuple(drifts), tuple(notes), tuple(duplicates), len(hooks)
    )


def diagnose(
    compared: Compared,
    pm: pluggy.PluginManager,
    opts: Options,
    context: Sequence[model.Manifest] = (),
) -> model.AppReport:
    """Why each difference of `compared` persists and what to do, into the app's report: the
    second of `run`'s two steps. `context`: live objects read for it after the compare (what
    `needs` named), beside those of `compared.inputs.live`."""
    inputs, index, choice = compared.inputs, compared.index, compared.choice
    app, settings = inputs.app, inputs.settings
    drifts = list(compared.drifts)
    notes = list(compared.notes)
    live: Sequence[model.Manifest] = inputs.live
    kinds = index.kinds
    events = [*inputs.events, *index.events]
    extra = [m for m in context if m.key not in index.by_key]
    if extra:  # in the key order a live state keeps, as if they had been read with the rest
        live = sorted([*live, *extra], key=lambda m: model.KEY_ORDER(m.key))
        grouped = {gk: list(found) for gk, found in kinds.items()}
        for manifest in extra:
            grouped.setdefault((manifest.key.group, manifest.key.kind), []).append(manifest)
        for group_kind in {(m.key.group, m.key.kind) for m in extra}:
            grouped[group_kind].sort(key=lambda m: model.KEY_ORDER(m.key))
        kinds = grouped
        events = [*inputs.events, *(m.body for m in _in_order(live, kinds, _is_event_kind))]

    managed_known = index.managed_known or any(fields.has_managed_fields(m.body) for m in extra)
    if inputs.live and not managed_known:
        notes.append(
            "the live objects carry no managedFields (kubectl get hides them unless "
            "--show-managed-fields), so gitdrift cannot say who changed a field"
        )
    for key in compared.duplicates:
        notes.append(f"{key.short()} is rendered more than once; the last one wins, as in Argo CD")
    if compared.hooks:
        notes.append(f"{compared.hooks} hook object(s) are not compared, as in Argo CD")

    locate = _cached(opts.locate)
    plurals = {**index.plurals, **(opts.plurals or {})}
    clues = attribution.gather(
        drifts,
        events=events,
        audit_log=inputs.audit_log,
        files=(lambda d, c: _file(locate, d, c)) if locate is not None else None,
        history=opts.history,
        plurals=plurals,
    )
    if inputs.audit_log is not None:
        notes.extend(inputs.audit_log.notes())
    access, access_source = _access(drifts, index.evaluator, opts, plurals)
    if not access and access_source:
        if sync_status(drifts) is not model.SyncStatus.SYNCED:
            notes.append(access_source)
        access_source = ""
    elif opts.note_access and sync_status(drifts) is not model.SyncStatus.SYNCED:
        notes.append(f"controller permissions: {access_source}")
    rule_ctx = diagnosis.Context(
        app,
        settings,
        drifts,
        live,
        managed_known,
        clues=clues,
        audit_log=inputs.audit_log,
        access=access,
        access_source=access_source,
        controller=opts.controller,
        tracking=tracking.audit(drifts, live, app, settings, index.claims),
        project=inputs.project or _project(app, settings, index.projects),
        now=inputs.now or app.reconciled_at,
        events=events,
        plurals=plurals,
        notes=tuple(notes),
        kinds=kinds,
        strategy=choice.strategy,
        varying=inputs.varying,
    )
    enabled = [r for r in opts.rules if r.id not in opts.disabled_rules]
    rule_ctx = replace(
        rule_ctx,
        causes=primary.classify(rule_ctx, codes=[c for r in enabled for c in r.codes]),
    )
    findings = diagnosis.diagnose(rule_ctx, opts.rules, opts.disabled_rules)
    fixes = remedies.recommend(
        app,
        drifts,
        findings,
        locate,
        read_source=opts.read_source,
        controller=opts.controller,
        plurals=plurals,
        strategy=choice.strategy,
        causes=rule_ctx.causes,
        context_flags=opts.context_flags,
        settings=rule_ctx.settings,
    )
    notes += [f"the adopt patch (--write-patch) leaves out {e}" for e in remedies.left_out(fixes)]
    return model.AppReport(
        name=app.name,
        namespace=app.namespace,
        sync_status=sync_status(drifts),
        argocd_sync_status=app.sync_status,
        revision=inputs.revision,
        source=inputs.source,
        resources=tuple(drifts),
        findings=tuple(findings),
        remedies=tuple(fixes),
        notes=tuple(notes),
        application=app,
        strategy=choice.strategy,
        strategy_reason=choice.reason,
    )


@dataclass(frozen=True)
class _Strategies:
    """Compares each pair with the strategy Argo CD uses for it."""

    ctx: ssa.Context
    dry_run: Mapping[model.ObjectKey, model.Body] | None
    switched: list[model.ObjectKey] = field(default_factory=list)  # by their own annotation
    emulated: list[model.ObjectKey] = field(default_factory=list)  # SSD without a dry-run

    def compare(self, desired: model.Manifest, live: model.Manifest | None) -> model.Drift:
        choice = choosing.for_resource(self.ctx.choice, desired.body)
        if choice.strategy is model.DiffStrategy.LEGACY:
            return legacy.compare(desired, live, self.ctx.base)
        ctx = self.ctx
        if choice is not self.ctx.choice:
            ctx = replace(self.ctx, choice=choice)
            self.switched.append(desired.key)
        if choice.strategy is model.DiffStrategy.SERVER_SIDE_DIFF:
            answer = self.dry_run.get(desired.key) if self.dry_run is not None else None
            if answer is not None and live is not None:
                from kubectl_gitdrift.compare import serverside  # only apps on Server-Side Diff

                return serverside.compare(desired, live, ctx, answer)
            if live is not None:  # offline: the emulation, as the same server would compute it
                self.emulated.append(desired.key)
        return structured.compare(desired, live, ctx)

    def notes(self) -> list[str]:
        out = []
        if self.switched:
            out.append(
                f"{len(self.switched)} resource(s) carry argocd.argoproj.io/sync-options "
                "ServerSideApply=true, so Argo CD compares them with the structured-merge diff"
            )
        if self.emulated:
            out.append(
                f"Server-Side Diff emulated for {len(self.emulated)} resource(s) from their "
                "managedFields (structured merge); --server-dry-run asks the API server itself"
            )
        return out


def _moved(
    key: model.ObjectKey, tracked: Sequence[model.Manifest], desired: set[model.ObjectKey]
) -> model.Manifest | None:
    """The one tracked live object with this group/kind/name in another namespace, if any."""
    same = [
        m
        for m in tracked
        if (m.key.group, m.key.kind, m.key.name) == (key.group, key.kind, key.name)
        and m.key not in desired
    ]
    return same[0] if len(same) == 1 else None


def _cached(locate: remedies.Locator | None) -> remedies.Locator | None:
    if locate is None:
        return None
    memo: dict[tuple[model.ObjectKey, model.FieldPath], remedies.Location | None] = {}

    def cached(drift: model.Drift, change: model.Change) -> remedies.Location | None:
        key = (drift.key, change.path)
        if key not in memo:
            memo[key] = locate(drift, change)
        return memo[key]

    return cached


def _file(locate: remedies.Locator, drift: model.Drift, change: model.Change) -> str | None:
    found = locate(drift, change)
    return found.file if found is not None and found.file else None


def _is_event_kind(group_kind: tuple[str, str]) -> bool:
    return group_kind[1] == "Event" and group_kind[0] in ("", "events.k8s.io")


_CRD = "CustomResourceDefinition"


def _in_order(
    live: Sequence[model.Manifest],
    kinds: Mapping[tuple[str, str], Sequence[model.Manifest]],
    wanted: Callable[[tuple[str, str]], bool],
) -> Sequence[model.Manifest]:
    """The objects of the wanted kinds, in `live`'s order: one kind's list as indexed, several
    kinds' read again from `live` (their objects may interleave)."""
    found = [group_kind for group_kind in kinds if wanted(group_kind)]
    if len(found) <= 1:
        return kinds[found[0]] if found else ()
    return [m for m in live if wanted((m.key.group, m.key.kind))]


def _project(
    app: model.Application,
    settings: model.Settings,
    projects: Mapping[tuple[str, str], model.Body],
) -> model.Body | None:
    """AppProjects live in Argo CD's own namespace; an app in another namespace may find its
    project beside it."""
    for namespace in (settings.controller_namespace, app.namespace):
        if (namespace, app.project) in projects:
            return projects[(namespace, app.project)]
    return None


def _access(
    drifts: Sequence[model.Drift],
    evaluator: rbac.Evaluator,
    opts: Options,
    plurals: Mapping[tuple[str, str], str],
) -> tuple[list[rbac.Answer], str]:
    """The controller's answers to every question the app's kinds raise, and how they were got;
    ([], why) when they could not be got."""
    # the questions name a kind and a namespace, never an object: ask once per kind/namespace,
    # not once per resource (400 Synced ConfigMaps are one kind in one namespace)
    kinds = {_kind_key(d.key): None for d in drifts if d.desired is not None or d.live is not None}
    questions = rbac.questions(kinds, plurals=plurals)
    if not questions:
        return [], ""
    if opts.authorize is not None:
        answers = rbac.ask(questions, opts.authorize)
        if not answers:  # the run asked the server about other kinds only
            return [], (
                "the API server was not asked whether the Argo CD controller may write the "
                "app's kinds, so that was not checked"
            )
        return answers, "SubjectAccessReview"
    answers, evaluator = rbac.offline(evaluator, questions, opts.controller)
    failure = f" ({opts.review_failure})" if opts.review_failure else ""
    if not evaluator.usable:
        return [], (
            "no ClusterRoles and bindings were read (none in the snapshot, or not allowed to "
            f"list them){failure}, so whether the Argo CD controller may write the app's kinds "
            "was not checked"
        )
    counts = evaluator.counts()
    return answers, (
        "offline RBAC over " + ", ".join(f"{n} {k}" for k, n in counts.items()) + failure
    )


def _kind_key(key: model.ObjectKey) -> model.ObjectKey:
    return model.ObjectKey(key.group, key.kind, key.namespace, "")


def sync_status(drifts: Sequence[model.Drift]) -> model.SyncStatus:
    """Unknown when anything could not be read; OutOfSync when any counted resource differs."""
    if any(d.status is model.ResourceStatus.UNKNOWN for d in drifts):
        return model.SyncStatus.UNKNOWN
    counted = (
        model.ResourceStatus.OUT_OF_SYNC,
        model.ResourceStatus.MISSING,
        model.ResourceStatus.EXTRANEOUS,
    )
    if any(d.status in counted and d.counts for d in drifts):
        return model.SyncStatus.OUT_OF_SYNC
    return model.SyncStatus.SYNCED


def _normalizer(pm: pluggy.PluginManager) -> pairs.NormalizerFn | None:
    if not pm.hook.gitdrift_normalize.get_hookimpls():
        return None

    def normalize(key: model.ObjectKey, body: dict[str, object], side: str) -> None:
        hookcalls.call_each(pm, "gitdrift_normalize", key=key, body=body, side=side)

    return normalize
