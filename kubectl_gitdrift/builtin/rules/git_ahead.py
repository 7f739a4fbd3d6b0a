"""Built-in rule builtin/git-ahead: git has a revision Argo CD has not synced (a pending sync)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.builtin.rules._common import (
    changed_drifts,
    clue_for,
    cluster_moved,
    explained,
    gitdrift_context,
    kind_of,
    revertable_drift,
    unexplained_changes,
)
from kubectl_gitdrift.compare import changes
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, ResourceStatus, Severity

ID = "builtin/git-ahead"
SEVERITY = Severity.INFO
CODES = ("git-ahead",)
DOC = "Git has a revision Argo CD has not synced yet: the difference is a pending sync."


def check(ctx: RuleContext) -> Iterator[Finding]:
    last = ctx.app.last_sync
    if last is None or not ctx.app.revisions or cluster_moved(ctx):
        return
    compared = ctx.app.revisions[0]
    moved: list[dict[str, Any]] = []
    for drift in changed_drifts(ctx):
        for change in unexplained_changes(ctx, drift):
            clue = clue_for(ctx, drift.key, change.path)
            kind = kind_of(change, clue)
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
    missing = [
        d.key.display()
        for d in ctx.drifts
        if d.status is ResourceStatus.MISSING and not explained(ctx, d.key, None)
    ]
    own = gitdrift_context(ctx)
    if not moved and not missing and own is not None and own.causes and not revertable_drift(ctx):
        return  # what differs has its own cause, and a sync would not clear it
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
