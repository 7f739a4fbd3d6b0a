"""Built-in rule builtin/last-sync-failed: the last sync failed; automated sync won't retry it."""

from __future__ import annotations

from collections.abc import Iterator

from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, Severity

ID = "builtin/last-sync-failed"
SEVERITY = Severity.ERROR
CODES = ("last-sync-failed",)
DOC = "The last sync failed; automated sync does not retry the same revision."


def check(ctx: RuleContext) -> Iterator[Finding]:
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
