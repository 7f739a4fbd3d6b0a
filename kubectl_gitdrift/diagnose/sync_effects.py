"""What syncing head would do to the cluster (gitdrift preview), read from the engine's report of
head's render against the live objects: the objects a sync creates and prunes, the fields it
sets or removes and whose change by hand each undoes, and, apart, the drift it leaves as it is.

Argo CD's sync applies every object of the app (`kubectl apply`, or a server-side apply): a
Missing object is created, a changed field gets git's value back, an ignored field too unless
RespectIgnoreDifferences=true. An Extraneous object is deleted only by a sync that prunes:
automated sync with `prune: true` (a manual `argocd app sync` prunes only with --prune), and
never one marked `Prune=false`. What a primary cause claims and a sync does not fix (it comes
back, or the sync fails on it: diagnose/causes.py's `revertable`) is not an effect, nor what the
controller is forbidden to do: the finding says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import masking, strategies
from kubectl_gitdrift.diagnose import (
    admission,
    attribution,
    deleting,
    ignore_unmatched,
    immutable,
    nondeterminism,
    policies,
    server_filled,
    unserved,
)

Effects = tuple[tuple[model.SyncEffect, ...], tuple[model.Finding, ...]]

LASTING = frozenset(
    {
        deleting.CODE,  # being deleted: no sync brings it back as git has it
        nondeterminism.CODE,  # the chart renders a new value each time: it differs again
        server_filled.CODE,  # the API server fills it in again after every apply
        admission.CODE,  # a webhook changes git's value again on every apply
        immutable.CODE,  # the API server refuses the change: the sync fails on it
        unserved.CODE,  # the cluster serves no such kind: the sync fails before applying
    }
)
"""The primary causes (primary.DETECTORS' codes) whose differences no sync fixes: each detector
makes its causes `revertable=False`. ignore-rule-unmatched is the one cause a sync may fix: when
no controller keeps writing the field (`_lasting`)."""

RELEASED = "ssa-field-released"
"""A field git dropped that a server-side apply keeps (other managers own it too)."""

FORBIDDEN = "controller-forbidden"
"""The controller's service account may not do what a sync needs on a kind in a namespace."""

VERBS = {"create": "create", "delete": "delete", "set": "patch", "remove": "patch"}
"""The API verb each effect needs of the controller (an apply is a PATCH, client or server
side, as builtin/controller-rbac counts it)."""


def effects(report: model.AppReport) -> Effects:
    """What syncing head would do (sorted by object, the whole object first, then by field),
    and the findings of what it would leave as it is (most severe first)."""
    app = report.application
    policy = app.sync_policy if app is not None else model.SyncPolicy()
    claims = _Claims.build(report.findings)
    out: list[model.SyncEffect] = []
    kept = _Kept()
    wipe_out = _refuses_wipe_out(report.resources, policy)
    for drift in report.resources:
        status = drift.status
        if status is model.ResourceStatus.MISSING:
            _create(drift, claims, out, kept, report.findings)
        elif status is model.ResourceStatus.EXTRANEOUS:
            _prune(drift, claims, policy, wipe_out, out, kept, report)
        elif status is model.ResourceStatus.OUT_OF_SYNC:
            _fields(drift, claims, out, kept)
        if drift.live is not None and drift.desired is not None and drift.suppressed:
            _ignored(drift, policy, out)
    kept.extend(f for f in report.findings if f.code == RELEASED)
    out = _permitted(out, report.findings, kept)
    out.sort(key=_order)
    return tuple(out), kept.sorted()


def _permitted(
    found: list[model.SyncEffect], findings: Sequence[model.Finding], kept: _Kept
) -> list[model.SyncEffect]:
    """The effects the controller may carry out: one whose verb its service account is denied
    on that kind and namespace fails with Forbidden, and the denial is what stays."""
    denied: dict[tuple[str, str, str], list[model.Finding]] = {}
    for finding in findings:
        if finding.code != FORBIDDEN or finding.key is None:
            continue
        key = finding.key  # the first of the app's objects of the denied kind and namespace
        namespace = str(finding.evidence.get("namespace", key.namespace))
        denied.setdefault((key.group, key.kind, namespace), []).append(finding)
    if not denied:
        return found
    out = []
    for effect in found:
        key = effect.key
        refusals = [
            f
            for f in denied.get((key.group, key.kind, key.namespace), ())
            if VERBS[effect.action] in (f.evidence.get("deniedVerbs") or ())
        ]
        if refusals:
            kept.extend(refusals)
        else:
            out.append(effect)
    return out


# --------------------------------------------------------------------------- objects


def _create(
    drift: model.Drift,
    claims: _Claims,
    out: list[model.SyncEffect],
    kept: _Kept,
    findings: Sequence[model.Finding],
) -> None:
    held = claims.owning(drift.key, None)
    if held:
        kept.extend(held)
    elif not drift.key.name:  # no sync creates an object without a name: it fails on it
        kept.extend(f for f in findings if f.key == drift.key and f.code == "missing-resource")
    else:
        out.append(model.SyncEffect(drift.key, "create", secret=masking.is_secret(drift.key)))


def _prune(
    drift: model.Drift,
    claims: _Claims,
    policy: model.SyncPolicy,
    wipe_out: bool,
    out: list[model.SyncEffect],
    kept: _Kept,
    report: model.AppReport,
) -> None:
    held = claims.owning(drift.key, None)
    if held:
        kept.extend(held)
        return
    app = report.application
    why = _kept_because(drift, policy, wipe_out, policies.app_arg(app) if app else report.name)
    if why is None:
        out.append(model.SyncEffect(drift.key, "delete", secret=masking.is_secret(drift.key)))
        return
    reason, hint = why
    listed = next(
        (f for f in report.findings if f.key == drift.key and f.code == "extraneous-resource"),
        None,
    )
    kept.extend(
        (
            model.Finding(
                code="extraneous-resource",
                severity=model.Severity.WARNING,
                message=(
                    f"{drift.key.short()} is tracked by this app but not in head's render; "
                    f"syncing head leaves it in the cluster: {reason}."
                ),
                key=drift.key,
                evidence={
                    "prune": policy.automated and policy.prune,
                    "automated": policy.automated,
                    "syncOptions": strategies.sync_options(drift.live),
                },
                hint=hint,
                rule=listed.rule if listed is not None else "",
                plugin=listed.plugin if listed is not None else "",
            ),
        )
    )


def _kept_because(
    drift: model.Drift, policy: model.SyncPolicy, wipe_out: bool, app: str
) -> tuple[str, str] | None:
    """Why a sync of head does not delete this Extraneous object (reason, hint), or None."""
    options = strategies.sync_options(drift.live)
    if strategies.has_option(options, "Prune=false"):
        return (
            "it is annotated argocd.argoproj.io/sync-options: Prune=false, so no sync prunes it",
            f"kubectl delete {drift.key.short()} -n {drift.key.namespace}"
            if drift.key.namespace
            else f"kubectl delete {drift.key.short()}",
        )
    if strategies.has_option(options, "Prune=confirm"):
        return (
            "it is annotated Prune=confirm: the sync prunes it only once someone confirms",
            f"confirm the pruning in the UI, or argocd app sync {app} --prune and confirm",
        )
    if not policy.automated:
        return (
            "automated sync is off, and a manual sync deletes it only with --prune",
            f"argocd app sync {app} --prune",
        )
    if not policy.prune:
        return (
            "automated sync does not prune (syncPolicy.automated.prune is false)",
            f"argocd app sync {app} --prune, or set syncPolicy.automated.prune: true",
        )
    if wipe_out:
        return (
            (
                "every resource of the app needs pruning, and automated sync refuses to delete "
                "them all (syncPolicy.automated.allowEmpty is false)"
            ),
            f"argocd app sync {app} --prune, or set syncPolicy.automated.allowEmpty: true",
        )
    return None


def _refuses_wipe_out(drifts: Sequence[model.Drift], policy: model.SyncPolicy) -> bool:
    """Automated prune without allowEmpty, and every resource of the app needs pruning: Argo
    CD's auto-sync stops ("auto-sync will wipe out all resources")."""
    if not (policy.automated and policy.prune) or policy.allow_empty or not drifts:
        return False
    return all(d.status is model.ResourceStatus.EXTRANEOUS for d in drifts)


# --------------------------------------------------------------------------- fields


def _fields(drift: model.Drift, claims: _Claims, out: list[model.SyncEffect], kept: _Kept) -> None:
    for change in drift.changes:
        held = claims.owning(drift.key, change.path)
        if held:
            kept.extend(held)
            continue
        out.append(_effect(drift.key, change, change.owner))


def _ignored(drift: model.Drift, policy: model.SyncPolicy, out: list[model.SyncEffect]) -> None:
    """Ignored fields git sets: any sync that applies the object writes git's value back,
    unless RespectIgnoreDifferences=true (Argo CD then copies the live value into what it
    applies), or ApplyOutOfSyncOnly=true and the object is otherwise Synced (not applied)."""
    if strategies.respects_ignores(policy, drift.desired):
        return
    if policy.has_option("ApplyOutOfSyncOnly=true") and drift.status is not (
        model.ResourceStatus.OUT_OF_SYNC
    ):
        return
    live = drift.live or {}
    for hidden in drift.suppressed:
        change = hidden.change
        if change.path[:1] == ("status",) or hidden.plugin == "builtin":
            continue  # status is never applied; built-in ignores are Argo CD's own fields
        if change.op is model.Op.REMOVE or change.desired is None:
            continue  # git does not set it: the apply leaves it alone
        owner = change.owner or attribution.owner_of(change, live)
        out.append(_effect(drift.key, change, owner))


def _effect(
    key: model.ObjectKey, change: model.Change, owner: model.Owner | None
) -> model.SyncEffect:
    return model.SyncEffect(
        key,
        "remove" if change.op is model.Op.REMOVE else "set",
        path=change.path,
        live=change.live,
        head=change.desired,
        overwrites=owner if owner is not None and not owner.is_argocd else None,
        secret=change.secret,
    )


def _order(effect: model.SyncEffect) -> tuple[Any, ...]:
    path = effect.path
    return (effect.key, path is not None, model.display_path(path or ()), effect.action)


# --------------------------------------------------------------------------- claims


@dataclass
class _Claims:
    """The report's findings of lasting causes, by the difference each claims: (key, None) for
    a whole resource, (key, display path) for a field."""

    by_claim: dict[tuple[model.ObjectKey, str | None], list[model.Finding]] = field(
        default_factory=dict
    )

    @classmethod
    def build(cls, findings: Iterable[model.Finding]) -> _Claims:
        claims = cls()
        for finding in findings:
            if finding.key is None or not _lasting(finding):
                continue
            for path in _claimed(finding):
                claims.by_claim.setdefault((finding.key, path), []).append(finding)
        return claims

    def owning(self, key: model.ObjectKey, path: model.FieldPath | None) -> list[model.Finding]:
        """The findings of the causes that own a difference: its own, else its resource's."""
        if path is not None:
            own = self.by_claim.get((key, model.display_path(path)))
            if own:
                return own
        return self.by_claim.get((key, None), [])


def _lasting(finding: model.Finding) -> bool:
    if finding.code in LASTING:
        return True
    # a controller that keeps writing the field writes it again after the sync
    return finding.code == ignore_unmatched.CODE and finding.evidence.get("writer") == "controller"


def _claimed(finding: model.Finding) -> list[str | None]:
    """The differences a cause's finding speaks for. immutable-field's finding stands for each
    field of the patch the server refuses: its own and those held back with it."""
    if finding.path is None:
        return [None]
    paths: list[str | None] = [model.display_path(finding.path)]
    if finding.code == immutable.CODE:
        for name in ("changes", "heldBack"):
            listed = finding.evidence.get(name)
            if isinstance(listed, list):
                paths.extend(str(p) for p in listed)
    return paths


class _Kept:
    """The findings of what a sync leaves, each once, in the report's order of severity."""

    def __init__(self) -> None:
        self._found: dict[int, model.Finding] = {}

    def extend(self, findings: Iterable[model.Finding]) -> None:
        for finding in findings:
            self._found.setdefault(id(finding), finding)

    def sorted(self) -> tuple[model.Finding, ...]:
        return tuple(sorted(self._found.values(), key=model.Finding.sort_key))
