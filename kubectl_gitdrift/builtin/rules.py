"""Built-in diagnosis rules: why an application is OutOfSync and why it stays that way.

Every finding has a stable code and the evidence it rests on (rule -> codes):

- builtin/manual-drift: manual-drift (a person changed a field git sets, after Argo CD's apply)
- builtin/field-fight: field-fight (a controller, HPA via /scale or a webhook, keeps writing it)
- builtin/git-ahead: git-ahead (git has a revision Argo CD has not synced: a pending sync)
- builtin/sync-policy: selfheal-disabled, automated-sync-disabled, prune-irrelevant
- builtin/self-heal: selfheal-backoff (self-heal is on and waiting out its backoff)
- builtin/last-sync-failed: last-sync-failed (automated sync does not retry that revision)
- builtin/sync-windows: sync-window-closed (an AppProject window blocks automated sync now)
- builtin/ignored-but-overwritten: ignored-but-overwritten (any sync writes git's value back)
- builtin/tracking: tracking-id-missing, -invalid, -mismatch (another app), -copied
- builtin/controller-rbac: controller-forbidden (the controller may not do what a sync needs)
- builtin/missing-extraneous: missing-resource, extraneous-resource
- builtin/ssa-field-released: ssa-field-released (git dropped a field other managers also own:
  a server-side apply keeps it)
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import changes
from kubectl_gitdrift.diagnose import attribution, audit, rbac, syncwindows, tracking
from kubectl_gitdrift.diagnose import rules as diagnosis
from kubectl_gitdrift.hookspecs import RegisterRule, RuleContext, hookimpl
from kubectl_gitdrift.model import Finding, ResourceStatus, Severity

SELF_HEAL_BASE = 2  # seconds; Argo CD --self-heal-backoff-timeout-seconds
SELF_HEAL_FACTOR = 3
SELF_HEAL_CAP = 300


@hookimpl
def gitdrift_register_rules(register: RegisterRule) -> None:
    register(
        "builtin/ssa-field-released",
        ssa_field_released,
        severity=Severity.INFO,
        codes=("ssa-field-released",),
        doc="Server-side apply: git dropped a field another manager also owns, so the next "
        "sync keeps it (only argocd-controller's ownership goes): why removing it from git "
        "changed nothing.",
    )
    register(
        "builtin/manual-drift",
        manual_drift,
        severity=Severity.ERROR,
        codes=("manual-drift",),
        doc="A person changed a field git sets, after Argo CD's last apply (who, how, when).",
    )
    register(
        "builtin/field-fight",
        field_fight,
        severity=Severity.WARNING,
        codes=("field-fight",),
        doc="A controller (HPA, kube-controller-manager, a webhook) keeps writing a git field.",
    )
    register(
        "builtin/sync-policy",
        sync_policy,
        severity=Severity.WARNING,
        codes=("selfheal-disabled", "automated-sync-disabled", "prune-irrelevant"),
        doc="Explains, from the sync policy, whether and when Argo CD will undo the drift.",
    )
    register(
        "builtin/self-heal",
        self_heal,
        severity=Severity.INFO,
        codes=("selfheal-backoff",),
        doc="selfHeal is on and pending: when its backoff (2s×3ⁿ, at most 300s) lets it run.",
    )
    register(
        "builtin/git-ahead",
        git_ahead,
        severity=Severity.INFO,
        codes=("git-ahead",),
        doc="Git has a revision Argo CD has not synced yet: the difference is a pending sync.",
    )
    register(
        "builtin/last-sync-failed",
        last_sync_failed,
        severity=Severity.ERROR,
        codes=("last-sync-failed",),
        doc="The last sync failed; automated sync does not retry the same revision.",
    )
    register(
        "builtin/sync-windows",
        sync_windows,
        severity=Severity.WARNING,
        codes=("sync-window-closed",),
        doc="An AppProject sync window keeps automated sync (and self-heal) from running now.",
    )
    register(
        "builtin/ignored-but-overwritten",
        ignored_but_overwritten,
        severity=Severity.WARNING,
        codes=("ignored-but-overwritten",),
        doc="An ignored field whose live value any sync of the object writes back to git's.",
    )
    register(
        "builtin/tracking",
        tracking_rule,
        severity=Severity.ERROR,
        codes=(tracking.MISSING, tracking.INVALID, tracking.MISMATCH, tracking.COPIED),
        doc="The live object's tracking-id is missing, malformed, another app's, or copied.",
    )
    register(
        "builtin/controller-rbac",
        controller_rbac,
        severity=Severity.ERROR,
        codes=("controller-forbidden",),
        doc="The Argo CD controller's service account may not get/list/watch/write a kind.",
    )
    register(
        "builtin/missing-extraneous",
        missing_or_extraneous,
        severity=Severity.WARNING,
        codes=("missing-resource", "extraneous-resource"),
        doc="Objects git has that the cluster lacks, and tracked objects git no longer has.",
    )


# --------------------------------------------------------------------------- helpers


def _extra(ctx: RuleContext) -> diagnosis.Context | None:
    """gitdrift's own evidence, when the context is gitdrift's (plugins may build their own)."""
    return ctx if isinstance(ctx, diagnosis.Context) else None


def _clue(ctx: RuleContext, key: model.ObjectKey, path: model.FieldPath) -> attribution.Clue | None:
    extra = _extra(ctx)
    return extra.clue(key, path) if extra is not None else None


def _cluster_moved(ctx: RuleContext) -> bool:
    """The compared revision is the one last synced: the cluster, not git, changed."""
    last = ctx.app.last_sync
    compared = ctx.app.revisions[0] if ctx.app.revisions else ""
    return last is None or not compared or last.revision == compared


def _drifted(ctx: RuleContext) -> list[model.Drift]:
    return [d for d in ctx.drifts if d.status is ResourceStatus.OUT_OF_SYNC and d.changes]


def _out_of_sync(ctx: RuleContext) -> bool:
    return bool(_drifted(ctx)) or any(
        d.status in (ResourceStatus.MISSING, ResourceStatus.EXTRANEOUS) and d.counts
        for d in ctx.drifts
    )


def _kind_of(change: model.Change, clue: attribution.Clue | None) -> str:
    return clue.kind if clue is not None else attribution.writer_kind(change.owner)


def _owner_evidence(owner: model.Owner) -> dict[str, Any]:
    return {
        "manager": owner.manager,
        "operation": owner.operation,
        "subresource": owner.subresource or None,
        "time": owner.time,
        "apiVersion": owner.api_version or None,
    }


def _clue_evidence(
    clue: attribution.Clue | None, last: model.HistoryEntry | None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if clue is None:
        return out
    if len(clue.claims) > 1:
        out["claims"] = [{**_owner_evidence(c.owner), "claim": c.how} for c in clue.claims]
    if clue.write is not None:
        out["audit"] = clue.write.evidence()
    if clue.event is not None:
        out["event"] = clue.event.evidence()
    if clue.commit is not None:
        commit = clue.commit.evidence()
        if last is not None:
            before = _before(clue.commit.date, last.deployed_at)
            if before is not None:
                commit["beforeLastSync"] = before
        out["gitLastChange"] = commit
    return out


def _before(a: str, b: str) -> bool | None:
    ta, tb = attribution.parse_time(a), attribution.parse_time(b)
    if ta is None or tb is None:
        return None
    return ta <= tb


def _v(value: Any) -> str:
    if value is None:
        return "unset"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def _how(write: audit.Write) -> str:
    verb = write.verb
    via = f"/{write.subresource}" if write.subresource else ""
    agent = write.user_agent.split(" ", 1)[0] if write.user_agent else "an unknown client"
    return f"{verb} {via or 'of the object'} from {agent}".replace("  ", " ")


# --------------------------------------------------------------------------- manual drift


def manual_drift(ctx: RuleContext) -> Iterator[Finding]:
    moved = _cluster_moved(ctx)
    last = ctx.app.last_sync
    for drift in _drifted(ctx):
        argocd = attribution.argocd_entry(drift.live or {})
        for change in drift.changes:
            clue = _clue(ctx, drift.key, change.path)
            kind = _kind_of(change, clue)
            if kind in ("argocd", "controller"):
                continue  # git moved (git-ahead), or a fight (field-fight)
            if not moved and change.owner is None and (clue is None or clue.write is None):
                continue  # git is ahead and nothing says a person wrote it: git-ahead covers it
            if _is_tracking_path(ctx, change.path):
                continue  # builtin/tracking explains the tracking-id or instance label
            field = model.display_path(change.path)
            evidence: dict[str, Any] = {
                "path": field,
                "desired": change.desired,
                "live": change.live,
                "direction": "cluster",
            }
            if last is not None:
                evidence["lastSync"] = {"revision": last.revision, "deployedAt": last.deployed_at}
            if argocd is not None:
                evidence["argocdLastApply"] = argocd.time
            if change.owner is not None:
                evidence["owner"] = _owner_evidence(change.owner)
            elif not ctx.managed_fields_known:
                evidence["owner"] = None
                evidence["managedFields"] = "absent from the snapshot"
            evidence.update(_clue_evidence(clue, last))
            yield Finding(
                code="manual-drift",
                severity=Severity.ERROR,
                message=_manual_message(ctx, change, clue, argocd),
                key=drift.key,
                path=change.path,
                evidence=evidence,
                hint="adopt the live value into git, or revert the cluster to git (see below)",
            )


def _is_tracking_path(ctx: RuleContext, path: model.FieldPath) -> bool:
    return path in (
        ("metadata", "annotations", tracking.TRACKING_ID),
        ("metadata", "annotations", tracking.INSTALLATION_ID),
        ("metadata", "labels", ctx.settings.instance_label_key),
    )


def _manual_message(
    ctx: RuleContext,
    change: model.Change,
    clue: attribution.Clue | None,
    argocd: model.Owner | None,
) -> str:
    field = model.display_path(change.path)
    values = (
        f"{field} differs from git"
        if change.secret
        else f"{field}: {changes.order_note(change)}"
        if changes.order_only(change)
        else f"{field} is {_v(change.live)} in the cluster but {_v(change.desired)} in git"
    )
    owner = change.owner
    write = clue.write if clue is not None else None
    event = clue.event if clue is not None else None
    since = (
        f"after Argo CD's last apply ({argocd.time})"
        if argocd and argocd.time
        else "after Argo CD's last apply"
    )
    if write is not None:
        manager = f" as field manager {write.manager}" if write.manager else ""
        return (
            f"{values}: {write.who} changed it ({_how(write)}{manager}) at {write.time}, "
            f"{since}; the audit log names them."
        )
    if owner is None:
        if not ctx.managed_fields_known:
            who = (
                "a writer gitdrift cannot name: the snapshot has no managedFields "
                "(export with --show-managed-fields, or pass --audit-log)"
            )
        else:
            who = "a writer managedFields does not record"
        dated = f"; {event.component} logged “{event.message}” at {event.time}" if event else ""
        return f"{values}: changed in the cluster by {who}{dated}."
    via = f" through the /{owner.subresource} subresource" if owner.subresource else ""
    if owner.time:
        when = f"at {owner.time}, {since}"
    elif event is not None:
        when = (
            f"{since}; the entry has no time (a /{owner.subresource or 'scale'} write records "
            f"none), but {event.component} logged “{event.message}” at {event.time}"
        )
    elif owner.subresource:
        when = (
            f"{since}; the entry has no time (a /{owner.subresource} write records none), "
            "but the field's ownership moved away from Argo CD, so the write came later"
        )
    else:
        when = f"{since}; the entry has no time"
    return f"{values}: {owner.manager} ({owner.operation}{via}) wrote it {when}."


# --------------------------------------------------------------------------- field fight


def _hpa_for(ctx: RuleContext, key: model.ObjectKey) -> model.Manifest | None:
    of_kind = getattr(ctx, "of_kind", None)  # diagnosis.Context's index; else every object
    hpas = of_kind("autoscaling", "HorizontalPodAutoscaler") if of_kind else ctx.live
    for manifest in hpas:
        if (manifest.key.group, manifest.key.kind) != ("autoscaling", "HorizontalPodAutoscaler"):
            continue
        if manifest.key.namespace != key.namespace:
            continue
        ref = (manifest.body.get("spec") or {}).get("scaleTargetRef") or {}
        group = str(ref.get("apiVersion") or "apps/v1").rpartition("/")[0]
        group = "apps" if group == "extensions" else group
        if (group, ref.get("kind"), ref.get("name")) == (key.group, key.kind, key.name):
            return manifest
    return None


def field_fight(ctx: RuleContext) -> Iterator[Finding]:
    extra = _extra(ctx)
    for drift in _drifted(ctx):
        hpa = _hpa_for(ctx, drift.key)
        for change in drift.changes:
            clue = _clue(ctx, drift.key, change.path)
            kind = _kind_of(change, clue)
            by_hpa = hpa is not None and change.path == ("spec", "replicas")
            if kind != "controller" and not by_hpa:
                continue
            owner = change.owner
            field = model.display_path(change.path)
            writer = owner.manager if owner is not None else "the HorizontalPodAutoscaler"
            evidence: dict[str, Any] = {
                "path": field,
                "pointer": model.pointer(change.path, drift.live or {}),
                "desired": change.desired,
                "live": change.live,
            }
            if owner is not None:
                evidence["owner"] = _owner_evidence(owner)
            if hpa is not None:
                spec = hpa.body.get("spec") or {}
                evidence["hpa"] = {
                    "name": hpa.key.name,
                    "minReplicas": spec.get("minReplicas"),
                    "maxReplicas": spec.get("maxReplicas"),
                }
            evidence.update(_clue_evidence(clue, ctx.app.last_sync))
            if extra is not None and extra.audit_log is not None:
                resource = rbac.plural(drift.key.group, drift.key.kind, extra.plurals)
                writes = audit.writes_by(extra.audit_log, drift.key, resource)
                principals: dict[str, int] = {}
                for write in writes:
                    principals[write.principal] = principals.get(write.principal, 0) + 1
                evidence["auditWrites"] = dict(sorted(principals.items()))
            what = (
                f"the HorizontalPodAutoscaler {hpa.key.name} scales it through /scale"
                if by_hpa and hpa is not None
                else f"{writer} keeps writing it"
                + (f" through /{owner.subresource}" if owner and owner.subresource else "")
            )
            yield Finding(
                code="field-fight",
                severity=Severity.WARNING,
                message=(
                    f"{field} is {_v(change.live)} in the cluster but {_v(change.desired)} in "
                    f"git, and {what}: every sync writes git's value back and the controller "
                    "changes it again."
                ),
                key=drift.key,
                path=change.path,
                evidence=evidence,
                hint=(
                    f"drop {field} from git, or add it to the app's ignoreDifferences with "
                    "RespectIgnoreDifferences=true (see PREVENT)"
                ),
            )


# --------------------------------------------------------------------------- sync policy


def sync_policy(ctx: RuleContext) -> Iterator[Finding]:
    drifted = _drifted(ctx)
    if not _out_of_sync(ctx):
        return
    policy = ctx.app.sync_policy
    last = ctx.app.last_sync
    revision = last.revision if last else (ctx.app.revisions[0] if ctx.app.revisions else "")
    evidence = {
        "automated": policy.automated,
        "selfHeal": policy.self_heal,
        "prune": policy.prune,
        "lastSyncedRevision": revision,
    }
    if not policy.automated:
        yield Finding(
            code="automated-sync-disabled",
            severity=Severity.WARNING,
            message=(
                "Automated sync is off: Argo CD only reports the drift; nothing changes the "
                "cluster until someone syncs the app."
            ),
            evidence=evidence,
            hint=f"argocd app sync {ctx.app.name}",
        )
    elif not policy.self_heal and _cluster_moved(ctx):
        yield Finding(
            code="selfheal-disabled",
            severity=Severity.WARNING,
            message=(
                "selfHeal is off: automated sync fires only when git gets a new revision, and the "
                f"last sync already went to {revision[:12] or 'the current revision'}, so Argo CD "
                "will not revert this drift. It stays OutOfSync until a manual sync or the next "
                "commit to the app's path."
            ),
            evidence=evidence,
            hint="enable spec.syncPolicy.automated.selfHeal, or alert on OutOfSync",
        )
    if policy.automated and policy.prune and drifted and _cluster_moved(ctx):
        yield Finding(
            code="prune-irrelevant",
            severity=Severity.INFO,
            message=(
                "prune: true does not help here: pruning deletes objects git no longer has; "
                "it never restores changed fields of objects that still exist."
            ),
            evidence=evidence,
        )


def self_heal_delay(attempts: int) -> int:
    """Seconds Argo CD waits before self-heal attempt `attempts + 1`: 0, 2, 6, 18, 54, 162, 300…"""
    if attempts <= 0:
        return 0
    return int(min(SELF_HEAL_BASE * SELF_HEAL_FACTOR ** (attempts - 1), SELF_HEAL_CAP))


def self_heal(ctx: RuleContext) -> Iterator[Finding]:
    app = ctx.app
    policy = app.sync_policy
    op = app.operation
    if not (policy.automated and policy.self_heal) or not _cluster_moved(ctx):
        return
    if not _out_of_sync(ctx) or op is None or op.phase not in ("Succeeded", "Running"):
        return
    extra = _extra(ctx)
    if extra is not None and extra.project is not None:
        moment = attribution.parse_time(extra.now)
        try:
            if moment and not syncwindows.can_sync(ctx.app, extra.project, moment).automated:
                return  # sync-window-closed explains why self-heal waits
        except syncwindows.CronError:
            pass
    attempts = op.auto_heal_attempts
    delay = self_heal_delay(attempts)
    finished = attribution.parse_time(op.finished_at)
    next_at = finished + timedelta(seconds=delay) if finished is not None else None
    now = attribution.parse_time(extra.now) if extra is not None else None
    waiting = None if next_at is None or now is None else now < next_at
    evidence: dict[str, Any] = {
        "autoHealAttemptsCount": attempts,
        "delaySeconds": delay,
        "lastOperationFinishedAt": op.finished_at or None,
        "nextAttemptAt": next_at.isoformat().replace("+00:00", "Z") if next_at else None,
        "referenceTime": extra.now if extra is not None and extra.now else None,
        "waiting": waiting,
    }
    if op.phase == "Running":
        message = "selfHeal is on and a sync is running now; the drift should be reverted by it."
    elif attempts == 0:
        message = (
            "selfHeal is on and has not run since the last sync (no backoff yet): the next "
            "reconcile re-syncs the drifted resources."
        )
    elif waiting:
        message = (
            f"selfHeal is on and pending: after {attempts} self-heal attempt(s) Argo CD waits "
            f"{delay}s (2s×3ⁿ, at most 300s) from the last sync's end ({op.finished_at}), so "
            f"the next attempt comes at {evidence['nextAttemptAt']}."
        )
    else:
        message = (
            f"selfHeal is on and its backoff ({delay}s after attempt {attempts}) has passed, "
            "yet the drift is still there: the next reconcile re-syncs it"
            + (
                "; after this many attempts something keeps undoing the heal (see field-fight)"
                if attempts >= 3
                else ""
            )
            + "."
        )
    yield Finding(
        code="selfheal-backoff",
        severity=Severity.INFO,
        message=message,
        evidence=evidence,
        hint=f"argocd app get {ctx.app.name} --refresh",
    )


# --------------------------------------------------------------------------- git ahead


def git_ahead(ctx: RuleContext) -> Iterator[Finding]:
    last = ctx.app.last_sync
    if last is None or not ctx.app.revisions or _cluster_moved(ctx):
        return
    compared = ctx.app.revisions[0]
    moved: list[dict[str, Any]] = []
    for drift in _drifted(ctx):
        for change in drift.changes:
            clue = _clue(ctx, drift.key, change.path)
            kind = _kind_of(change, clue)
            if kind not in ("argocd", "unknown"):
                continue
            item: dict[str, Any] = {
                "resource": drift.key.display(),
                "path": model.display_path(change.path),
                "desired": change.desired,
                "live": change.live,
                "owner": change.owner.manager if change.owner else None,
            }
            if changes.order_only(change):
                item["note"] = changes.order_note(change)
            if clue is not None and clue.commit is not None:
                item["gitLastChange"] = clue.commit.evidence()
            moved.append(item)
    missing = [d.key.display() for d in ctx.drifts if d.status is ResourceStatus.MISSING]
    yield Finding(
        code="git-ahead",
        severity=Severity.INFO,
        message=(
            f"Git moved: Argo CD compares against {compared[:12]} but last synced "
            f"{last.revision[:12]}; differences that git introduced are a pending sync, not drift."
        ),
        evidence={
            "comparedRevision": compared,
            "lastSyncedRevision": last.revision,
            "direction": "git",
            "fields": moved,
            "missing": missing,
        },
        hint=f"argocd app sync {ctx.app.name}",
    )


# --------------------------------------------------------------------------- last sync


def last_sync_failed(ctx: RuleContext) -> Iterator[Finding]:
    op = ctx.app.operation
    if op is None or op.phase not in ("Failed", "Error"):
        return
    compared = ctx.app.revisions[0] if ctx.app.revisions else ""
    same = bool(op.revision) and op.revision == compared
    stuck = ctx.app.sync_policy.automated and same
    reason = op.message.strip() or "no message"
    if not reason.endswith((".", "!", "?")):
        reason += "."
    message = f"The last sync (to {op.revision[:12] or 'an unknown revision'}) failed: {reason}"
    if stuck:
        message += (
            " Automated sync does not retry a revision whose sync failed, and self-heal only runs "
            "after a successful sync: nothing happens until a new commit or a manual sync."
        )
    yield Finding(
        code="last-sync-failed",
        severity=Severity.ERROR,
        message=message,
        evidence={
            "phase": op.phase,
            "message": op.message,
            "revision": op.revision,
            "startedAt": op.started_at or None,
            "finishedAt": op.finished_at or None,
            "automated": op.automated,
            "sameRevisionAsCompared": same,
        },
        hint=f"fix the cause, then: argocd app sync {ctx.app.name}",
    )


# --------------------------------------------------------------------------- sync windows


def sync_windows(ctx: RuleContext) -> Iterator[Finding]:
    extra = _extra(ctx)
    if extra is None or extra.project is None or not _out_of_sync(ctx):
        return
    if not ctx.app.sync_policy.automated:
        return
    now = attribution.parse_time(extra.now)
    if now is None:
        return
    try:
        verdict = syncwindows.can_sync(ctx.app, extra.project, now)
    except syncwindows.CronError as exc:
        yield Finding(
            code="sync-window-closed",
            severity=Severity.WARNING,
            message=f"AppProject {ctx.app.project}: a sync window cannot be read ({exc}).",
            evidence={"project": ctx.app.project, "error": str(exc)},
        )
        return
    if verdict.automated:
        return
    manual = (
        "a manual sync is still allowed (manualSync: true)"
        if verdict.manual
        else "manual sync is blocked too"
    )
    yield Finding(
        code="sync-window-closed",
        severity=Severity.WARNING,
        message=(
            f"AppProject {ctx.app.project}'s sync windows block automated sync and self-heal at "
            f"{extra.now}: {verdict.reason}; {manual}."
        ),
        evidence={
            "project": ctx.app.project,
            "referenceTime": extra.now,
            "reason": verdict.reason,
            "manualSyncAllowed": verdict.manual,
            "blocking": [w.evidence() for w in verdict.blocking],
            "active": [w.evidence() for w in verdict.active],
        },
        hint=(
            f"argocd app sync {ctx.app.name}"
            if verdict.manual
            else f"wait for the window, or edit AppProject {ctx.app.project} syncWindows"
        ),
    )


# --------------------------------------------------------------------------- ignored fields


def _respects_ignores(ctx: RuleContext, drift: model.Drift) -> bool:
    if ctx.app.sync_policy.has_option("RespectIgnoreDifferences=true"):
        return True
    annotations = ((drift.desired or {}).get("metadata") or {}).get("annotations") or {}
    return "RespectIgnoreDifferences=true" in str(
        annotations.get("argocd.argoproj.io/sync-options", "")
    )


def ignored_but_overwritten(ctx: RuleContext) -> Iterator[Finding]:
    for drift in ctx.drifts:
        if drift.live is None or drift.desired is None or not drift.suppressed:
            continue
        if _respects_ignores(ctx, drift):
            continue
        for hidden in drift.suppressed:
            change = hidden.change
            if change.path[:1] == ("status",) or hidden.plugin == "builtin":
                continue
            if change.op is model.Op.REMOVE or change.desired is None:
                continue  # git does not set it: a sync leaves it alone
            field = model.display_path(change.path)
            owner = attribution.owner_of(change, drift.live)
            evidence: dict[str, Any] = {
                "path": field,
                "desired": change.desired,
                "live": change.live,
                "ignoredBy": hidden.rule,
                "plugin": hidden.plugin,
                "syncOptions": list(ctx.app.sync_policy.sync_options),
            }
            if owner is not None:
                evidence["owner"] = _owner_evidence(owner)
            values = (
                "the Secret value"
                if change.secret
                else f"the live {_v(change.live)} with git's {_v(change.desired)}"
            )
            only_if = (
                " (ApplyOutOfSyncOnly=true: only when the object is OutOfSync for another reason)"
                if ctx.app.sync_policy.has_option("ApplyOutOfSyncOnly=true")
                and drift.status is ResourceStatus.SYNCED
                else ""
            )
            yield Finding(
                code="ignored-but-overwritten",
                severity=Severity.WARNING,
                message=(
                    f"{field} is ignored ({hidden.rule}) but still set in git: without "
                    f"RespectIgnoreDifferences=true any sync that applies {drift.key.short()} "
                    f"overwrites {values}{only_if}"
                    + (f", undoing {owner.manager}'s write." if owner else ".")
                ),
                key=drift.key,
                path=change.path,
                evidence=evidence,
                hint=(
                    "add RespectIgnoreDifferences=true to spec.syncPolicy.syncOptions, or drop "
                    "the field from git"
                ),
            )


# --------------------------------------------------------------------------- tracking


def tracking_rule(ctx: RuleContext) -> Iterator[Finding]:
    extra = _extra(ctx)
    if extra is not None:
        issues: Sequence[tracking.TrackingIssue] = extra.tracking
    else:
        issues = tracking.audit(ctx.drifts, ctx.live, ctx.app, ctx.settings)
    for issue in issues:
        what = issue.key.short()
        if issue.code == tracking.MISSING:
            severity = Severity.WARNING
            message = (
                f"{what} exists live without Argo CD's tracking "
                f"({'label' if issue.method == 'label' else 'tracking-id annotation'}): Argo CD "
                "did not create it, or someone removed the mark; the next sync adopts it."
            )
        elif issue.code == tracking.INVALID:
            severity = Severity.WARNING
            message = (
                f"{what} has a malformed tracking-id {issue.found!r} (Argo CD: wrong resource "
                "tracking format), so Argo CD treats it as untracked."
            )
        elif issue.code == tracking.MISMATCH:
            severity = Severity.ERROR
            message = (
                f"SharedResourceWarning: {tracking.shared_resource_warning(issue, ctx.app)}; "
                f"the live object is claimed by {issue.other_app}, and both apps fight over it."
            )
        else:
            severity = Severity.WARNING
            message = (
                f"{what} carries a tracking-id naming this app but describing another object "
                f"({issue.found}): copied by a tool, so Argo CD gives it no sync status and never "
                "prunes it."
            )
        evidence = {**issue.evidence(), "fromConfigMap": ctx.settings.from_configmap}
        yield Finding(
            code=issue.code,
            severity=severity,
            message=message,
            key=issue.key,
            evidence=evidence,
            hint=(
                "remove the object from one of the two apps (or set FailOnSharedResource=true)"
                if issue.code == tracking.MISMATCH
                else f"set the {'label' if issue.method == 'label' else 'annotation'} to "
                f"{issue.expected!r}, or let a sync write it"
            ),
        )


# --------------------------------------------------------------------------- controller RBAC


def _needed(ctx: RuleContext) -> dict[tuple[str, str, str], set[str]]:
    """(group, kind, namespace) -> the verbs the pending sync needs."""
    extra = _extra(ctx)
    plurals = extra.plurals if extra is not None else {}
    out: dict[tuple[str, str, str], set[str]] = {}
    prune = ctx.app.sync_policy.prune or not ctx.app.sync_policy.automated
    for drift in ctx.drifts:
        key = drift.key
        verbs = out.setdefault(
            (key.group, rbac.plural(key.group, key.kind, plurals), key.namespace), set()
        )
        verbs.update(("get", "list", "watch"))
        if drift.status is ResourceStatus.OUT_OF_SYNC:
            verbs.add("patch")
        elif drift.status is ResourceStatus.MISSING:
            verbs.add("create")
        elif drift.status is ResourceStatus.EXTRANEOUS and prune:
            verbs.add("delete")
    return out


def controller_rbac(ctx: RuleContext) -> Iterator[Finding]:
    extra = _extra(ctx)
    if extra is None or not extra.access:
        return
    denied: dict[tuple[str, str, str], list[rbac.Answer]] = {}
    for answer in extra.access:
        q = answer.question
        if not answer.allowed:
            denied.setdefault((q.group, q.resource, q.namespace), []).append(answer)
    needed = _needed(ctx)
    first_key: dict[tuple[str, str, str], model.ObjectKey] = {}
    for drift in ctx.drifts:
        res = rbac.plural(drift.key.group, drift.key.kind, extra.plurals)
        first_key.setdefault((drift.key.group, res, drift.key.namespace), drift.key)
    for (group, resource, namespace), answers in sorted(denied.items()):
        verbs = [a.question.verb for a in answers]
        blocking = sorted(set(verbs) & needed.get((group, resource, namespace), set()))
        res = resource + (f".{group}" if group else "")
        where = f"in namespace {namespace}" if namespace else "cluster-wide"
        effect = (
            f"the pending sync needs {', '.join(blocking)}, so it fails with Forbidden"
            if blocking
            else "a later sync that needs them will fail with Forbidden"
        )
        yield Finding(
            code="controller-forbidden",
            severity=Severity.ERROR if blocking else Severity.WARNING,
            message=(f"{extra.controller} cannot {', '.join(verbs)} {res} {where}: {effect}."),
            key=first_key.get((group, resource, namespace)),
            evidence={
                "serviceAccount": extra.controller,
                "group": group,
                "resource": resource,
                "namespace": namespace,
                "deniedVerbs": verbs,
                "neededNow": blocking,
                "denied": [
                    {
                        "verb": a.question.verb,
                        "group": a.question.group,
                        "resource": a.question.resource,
                        "namespace": a.question.namespace,
                    }
                    for a in answers
                ],
                "checkedBy": extra.access_source,
                "allowed": [
                    {"verb": a.question.verb, "reason": a.reason}
                    for a in extra.access
                    if a.allowed
                    and (a.question.group, a.question.resource, a.question.namespace)
                    == (group, resource, namespace)
                ],
            },
            hint=f"kubectl auth can-i {verbs[0]} {res}"
            + (f" -n {namespace}" if namespace else "")
            + f" --as {extra.controller}",
        )


# --------------------------------------------------------------------------- missing, extraneous


def missing_or_extraneous(ctx: RuleContext) -> Iterator[Finding]:
    for drift in ctx.drifts:
        if drift.status is ResourceStatus.MISSING:
            clue = _clue(ctx, drift.key, ())
            evidence: dict[str, Any] = {"origin": drift.origin}
            deleted = ""
            if clue is not None and clue.write is not None:
                evidence["audit"] = clue.write.evidence()
                deleted = f" {clue.write.who} deleted it at {clue.write.time} (audit log)."
            generate_name = ((drift.desired or {}).get("metadata") or {}).get("generateName")
            if not drift.key.name and isinstance(generate_name, str) and generate_name:
                # not a hook: Argo CD looks it up by its empty name, never finds it, and each
                # sync creates another `<generateName><random>` (controller/state.go, Reconcile)
                evidence["generateName"] = generate_name
                yield Finding(
                    code="missing-resource",
                    severity=Severity.WARNING,
                    message=(
                        f"{drift.key.kind.lower()} with generateName {generate_name} has no "
                        "metadata.name and is not a hook: Argo CD never finds it in the cluster, "
                        "so the app stays OutOfSync and every sync creates another one."
                    ),
                    key=drift.key,
                    evidence=evidence,
                    hint="give it a metadata.name, or make it a hook "
                    "(annotation argocd.argoproj.io/hook: Sync)",
                )
                continue
            yield Finding(
                code="missing-resource",
                severity=Severity.WARNING,
                message=f"{drift.key.short()} is in git but not in the cluster.{deleted}",
                key=drift.key,
                evidence=evidence,
                hint=f"argocd app sync {ctx.app.name}",
            )
        elif drift.status is ResourceStatus.EXTRANEOUS:
            prune = ctx.app.sync_policy.automated and ctx.app.sync_policy.prune
            annotations = ((drift.live or {}).get("metadata") or {}).get("annotations") or {}
            evidence = {
                "prune": prune,
                "trackingId": annotations.get(tracking.TRACKING_ID),
                "counts": drift.counts,
            }
            yield Finding(
                code="extraneous-resource",
                severity=Severity.WARNING,
                message=(
                    f"{drift.key.short()} is tracked by this app but no longer in git; "
                    + (
                        "automated prune will delete it at the next sync."
                        if prune
                        else "nothing deletes it until a sync with prune."
                    )
                ),
                key=drift.key,
                evidence=evidence,
                hint=f"argocd app sync {ctx.app.name} --prune",
            )


def ssa_field_released(ctx: RuleContext) -> Iterator[Finding]:
    for drift in ctx.drifts:
        for path, managers in drift.released:
            who = ", ".join(managers)
            yield Finding(
                code="ssa-field-released",
                severity=Severity.INFO,
                message=(
                    f"git no longer sets {model.display_path(path)} of {drift.key.short()}, but "
                    f"{who} also manage{'s' if len(managers) == 1 else ''} it: Argo CD's next "
                    "server-side apply keeps it and only gives up argocd-controller's ownership"
                ),
                key=drift.key,
                path=path,
                evidence={"managers": list(managers)},
                hint=(
                    f"to remove it, have {who} stop managing it (or delete it once they do); "
                    "Argo CD will not"
                ),
            )
