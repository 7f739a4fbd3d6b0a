"""What several built-in rules ask of a rule context: gitdrift's evidence, and how it is shown.

Rule modules import this one and never each other.
"""

from __future__ import annotations

import json
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import changes
from kubectl_gitdrift.diagnose import attribution
from kubectl_gitdrift.diagnose import rules as diagnosis
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import ResourceStatus


def gitdrift_context(ctx: RuleContext) -> diagnosis.Context | None:
    """gitdrift's own evidence, when the context is gitdrift's (plugins may build their own)."""
    return ctx if isinstance(ctx, diagnosis.Context) else None


def clue_for(
    ctx: RuleContext, key: model.ObjectKey, path: model.FieldPath
) -> attribution.Clue | None:
    """What gitdrift found out about who wrote the field (audit, events, git), if it looked."""
    own = gitdrift_context(ctx)
    return own.clue(key, path) if own is not None else None


def explained(ctx: RuleContext, key: model.ObjectKey, path: model.FieldPath | None) -> bool:
    """A specific primary cause (server-filled, admission-mutation, ...) owns the difference, so
    the generic stories (someone wrote it; a sync puts git's value back) leave it alone."""
    own = gitdrift_context(ctx)
    return own is not None and own.cause(key, path) is not None


def unexplained_changes(ctx: RuleContext, drift: model.Drift) -> list[model.Change]:
    """The drift's changed fields no specific primary cause owns."""
    return [c for c in drift.changes if not explained(ctx, drift.key, c.path)]


def revertable_drift(ctx: RuleContext) -> bool:
    """Something a sync would fix: a changed field, or a counted missing or extraneous object,
    that no specific cause owns, or whose cause says a sync puts git's value back."""
    own = gitdrift_context(ctx)
    for drift in ctx.drifts:
        counted = (
            drift.status in (ResourceStatus.MISSING, ResourceStatus.EXTRANEOUS)
            and drift.counts
            and bool(drift.key.name)  # no sync creates an object without a name: it fails
        )
        paths: list[model.FieldPath | None] = (
            [c.path for c in drift.changes]
            if drift.status is ResourceStatus.OUT_OF_SYNC
            else [None]
            if counted
            else []
        )
        for path in paths:
            cause = own.cause(drift.key, path) if own is not None else None
            if cause is None or cause.revertable:
                return True
    return False


def cluster_moved(ctx: RuleContext) -> bool:
    """The compared revision is the one last synced: the cluster, not git, changed."""
    last = ctx.app.last_sync
    compared = ctx.app.revisions[0] if ctx.app.revisions else ""
    return last is None or not compared or last.revision == compared


def changed_drifts(ctx: RuleContext) -> list[model.Drift]:
    """The OutOfSync objects with changed fields (not the missing or extraneous ones)."""
    return [d for d in ctx.drifts if d.status is ResourceStatus.OUT_OF_SYNC and d.changes]


def out_of_sync(ctx: RuleContext) -> bool:
    """Something for a sync to do: a changed field, or a counted missing or extraneous object."""
    return bool(changed_drifts(ctx)) or any(
        d.status in (ResourceStatus.MISSING, ResourceStatus.EXTRANEOUS) and d.counts
        for d in ctx.drifts
    )


def kind_of(change: model.Change, clue: attribution.Clue | None) -> str:
    """ "argocd", "human", "controller" or "unknown": the clue's verdict, else the owner's."""
    return clue.kind if clue is not None else attribution.writer_kind(change.owner)


def owner_evidence(owner: model.Owner) -> dict[str, Any]:
    """The managedFields entry as a finding's evidence shows it."""
    return {
        "manager": owner.manager,
        "operation": owner.operation,
        "subresource": owner.subresource or None,
        "time": owner.time,
        "apiVersion": owner.api_version or None,
    }


def clue_evidence(clue: attribution.Clue | None, last: model.HistoryEntry | None) -> dict[str, Any]:
    """The clue's evidence: competing claims, the audit write, the event, git's last change."""
    out: dict[str, Any] = {}
    if clue is None:
        return out
    if len(clue.claims) > 1:
        out["claims"] = [{**owner_evidence(c.owner), "claim": c.how} for c in clue.claims]
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


def difference(change: model.Change) -> str:
    """How a message says a field's two values differ: `is A in the cluster but B in git`, or for
    multi-line values `differs from git in the cluster (-1 +1 lines: <the first changed line>)`
    (the text report and markdown show the differing lines below the message)."""
    if changes.multiline(change.desired, change.live):
        return (
            f"differs from git in the cluster ({changes.line_summary(change.desired, change.live)})"
        )
    return f"is {brief(change.live)} in the cluster but {brief(change.desired)} in git"


def brief(value: Any) -> str:
    """A value as a message shows it: "unset", or its text (JSON if not a string), cut at 60."""
    if value is None:
        return "unset"
    if isinstance(value, str) and "\n" in value.rstrip("\n"):
        return f"text of {changes.line_count(value)}"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."
