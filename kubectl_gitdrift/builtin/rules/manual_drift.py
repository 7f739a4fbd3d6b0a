"""Built-in rule builtin/manual-drift: a person changed a field git sets, after Argo CD's apply.

It names who, how and when from what the run has: the audit log, managedFields, events.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.builtin.rules._common import (
    changed_drifts,
    clue_evidence,
    clue_for,
    cluster_moved,
    difference,
    kind_of,
    owner_evidence,
    unexplained_changes,
)
from kubectl_gitdrift.compare import changes
from kubectl_gitdrift.diagnose import attribution, audit, tracking
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, Severity

ID = "builtin/manual-drift"
SEVERITY = Severity.ERROR
CODES = ("manual-drift",)
DOC = "A person changed a field git sets, after Argo CD's last apply (who, how, when)."


def check(ctx: RuleContext) -> Iterator[Finding]:
    moved = cluster_moved(ctx)
    last = ctx.app.last_sync
    for drift in changed_drifts(ctx):
        argocd = attribution.argocd_entry(drift.live or {})
        for change in unexplained_changes(ctx, drift):
            clue = clue_for(ctx, drift.key, change.path)
            kind = kind_of(change, clue)
            if kind in ("argocd", "controller"):
                continue  # git moved (git-ahead), or a fight (field-fight)
            if not moved and change.owner is None and (clue is None or clue.write is None):
                continue  # git is ahead and nothing says a person wrote it: git-ahead covers it
            if tracking.is_tracking_field(change.path, ctx.settings):
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
                evidence["owner"] = owner_evidence(change.owner)
            elif not ctx.managed_fields_known:
                evidence["owner"] = None
                evidence["managedFields"] = "absent from the snapshot"
            evidence.update(clue_evidence(clue, last))
            yield Finding(
                code="manual-drift",
                severity=Severity.ERROR,
                message=_manual_message(ctx, change, clue, argocd),
                key=drift.key,
                path=change.path,
                evidence=evidence,
                hint="adopt the live value into git, or revert the cluster to git (see below)",
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
        else f"{field} {difference(change)}"
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


def _how(write: audit.Write) -> str:
    verb = write.verb
    via = f"/{write.subresource}" if write.subresource else ""
    agent = write.user_agent.split(" ", 1)[0] if write.user_agent else "an unknown client"
    return f"{verb} {via or 'of the object'} from {agent}".replace("  ", " ")
