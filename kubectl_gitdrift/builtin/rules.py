"""Built-in diagnosis rules: why an application is OutOfSync and why it stays that way."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubectl_gitdrift import attribution, model
from kubectl_gitdrift.hookspecs import RegisterRule, RuleContext, hookimpl
from kubectl_gitdrift.model import Finding, ResourceStatus, Severity


@hookimpl
def gitdrift_register_rules(register: RegisterRule) -> None:
    register(
        "builtin/manual-drift",
        manual_drift,
        severity=Severity.ERROR,
        codes=("manual-drift",),
        doc="A writer other than Argo CD changed a field git sets, after Argo CD's last apply.",
    )
    register(
        "builtin/sync-policy",
        sync_policy,
        severity=Severity.WARNING,
        codes=("selfheal-disabled", "automated-sync-disabled", "prune-irrelevant"),
        doc="Explains, from the sync policy, whether and when Argo CD will undo the drift.",
    )
    register(
        "builtin/git-ahead",
        git_ahead,
        severity=Severity.INFO,
        codes=("git-ahead",),
        doc="Git has a revision Argo CD has not synced yet: the difference is a pending sync.",
    )
    register(
        "builtin/missing-extraneous",
        missing_or_extraneous,
        severity=Severity.WARNING,
        codes=("missing-resource", "extraneous-resource"),
        doc="Objects git has that the cluster lacks, and tracked objects git no longer has.",
    )


def _cluster_moved(ctx: RuleContext) -> bool:
    """The compared revision is the one last synced: the cluster, not git, changed."""
    last = ctx.app.last_sync
    compared = ctx.app.revisions[0] if ctx.app.revisions else ""
    return last is None or not compared or last.revision == compared


def _drifted(ctx: RuleContext) -> list[model.Drift]:
    return [d for d in ctx.drifts if d.status is ResourceStatus.OUT_OF_SYNC and d.changes]


def manual_drift(ctx: RuleContext) -> Iterator[Finding]:
    if not _cluster_moved(ctx):
        return
    last = ctx.app.last_sync
    for drift in _drifted(ctx):
        argocd = attribution.argocd_entry(drift.live or {})
        for change in drift.changes:
            owner = change.owner
            if owner is not None and owner.is_argocd:
                continue
            evidence: dict[str, Any] = {
                "path": model.display_path(change.path),
                "desired": change.desired,
                "live": change.live,
            }
            if last is not None:
                evidence["lastSync"] = {"revision": last.revision, "deployedAt": last.deployed_at}
            if argocd is not None:
                evidence["argocdLastApply"] = argocd.time
            field = model.display_path(change.path)
            if owner is None:
                who = (
                    "a writer managedFields cannot name (the live object has no managedFields)"
                    if not ctx.managed_fields_known
                    else "a writer managedFields does not record"
                )
                message = (
                    f"{field} was changed in the cluster by {who}; git says {_v(change.desired)}."
                )
            else:
                evidence["owner"] = {
                    "manager": owner.manager,
                    "operation": owner.operation,
                    "subresource": owner.subresource,
                    "time": owner.time,
                }
                via = f" through the /{owner.subresource} subresource" if owner.subresource else ""
                when = _when(owner, argocd)
                message = (
                    f"{field} is {_v(change.live)} in the cluster but {_v(change.desired)} in git: "
                    f"{owner.manager} ({owner.operation}{via}) wrote it {when}."
                )
            yield Finding(
                code="manual-drift",
                severity=Severity.ERROR,
                message=message,
                key=drift.key,
                path=change.path,
                evidence=evidence,
                hint="adopt the live value into git, or revert the cluster to git (see below)",
            )


def _when(owner: model.Owner, argocd: model.Owner | None) -> str:
    since = (
        f"after Argo CD's last apply ({argocd.time})"
        if argocd and argocd.time
        else ("after Argo CD's last apply")
    )
    if owner.time:
        return f"at {owner.time}, {since}"
    return (
        f"{since}; the entry has no time (a /{owner.subresource} write records none), "
        "but the field's ownership moved away from Argo CD, so the write came later"
        if owner.subresource
        else f"{since}; the entry has no time"
    )


def _v(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "unset"
    import json

    return json.dumps(value, sort_keys=True)


def sync_policy(ctx: RuleContext) -> Iterator[Finding]:
    drifted = _drifted(ctx)
    if not drifted and not any(
        d.status in (ResourceStatus.MISSING, ResourceStatus.EXTRANEOUS) for d in ctx.drifts
    ):
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
    if policy.automated and policy.prune and drifted:
        yield Finding(
            code="prune-irrelevant",
            severity=Severity.INFO,
            message=(
                "prune: true does not help here: pruning deletes objects git no longer has; "
                "it never restores changed fields of objects that still exist."
            ),
            evidence=evidence,
        )


def git_ahead(ctx: RuleContext) -> Iterator[Finding]:
    last = ctx.app.last_sync
    if last is None or not ctx.app.revisions or _cluster_moved(ctx):
        return
    yield Finding(
        code="git-ahead",
        severity=Severity.INFO,
        message=(
            f"Git moved: Argo CD compares against {ctx.app.revisions[0][:12]} but last synced "
            f"{last.revision[:12]}; differences that git introduced are a pending sync, not drift."
        ),
        evidence={"comparedRevision": ctx.app.revisions[0], "lastSyncedRevision": last.revision},
        hint=f"argocd app sync {ctx.app.name}",
    )


def missing_or_extraneous(ctx: RuleContext) -> Iterator[Finding]:
    for drift in ctx.drifts:
        if drift.status is ResourceStatus.MISSING:
            yield Finding(
                code="missing-resource",
                severity=Severity.WARNING,
                message=f"{drift.key.short()} is in git but not in the cluster.",
                key=drift.key,
                evidence={"origin": drift.origin},
                hint=f"argocd app sync {ctx.app.name}",
            )
        elif drift.status is ResourceStatus.EXTRANEOUS:
            prune = ctx.app.sync_policy.automated and ctx.app.sync_policy.prune
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
                evidence={"prune": prune},
                hint=f"argocd app sync {ctx.app.name} --prune",
            )
