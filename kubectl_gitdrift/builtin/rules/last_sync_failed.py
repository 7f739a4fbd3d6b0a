"""Built-in rule builtin/last-sync-failed: the last sync failed; automated sync won't retry it.

It quotes Argo CD's own words for each resource that failed (`syncResult.resources[]`, status
SyncFailed) and names the specific cause gitdrift found for it (immutable-field, crd-missing, ...)
so the two findings tell one story.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.builtin.rules._common import gitdrift_context
from kubectl_gitdrift.diagnose import immutable, syncfailures, unserved
from kubectl_gitdrift.diagnose.causes import Cause
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, Severity

ID = "builtin/last-sync-failed"
SEVERITY = Severity.ERROR
CODES = ("last-sync-failed",)
DOC = "The last sync failed (Argo CD's message per resource); automated sync does not retry it."


def check(ctx: RuleContext) -> Iterator[Finding]:
    op = ctx.app.operation
    if op is None or op.phase not in syncfailures.FAILED_PHASES:
        return
    compared = ctx.app.revisions[0] if ctx.app.revisions else ""
    same = bool(op.revision) and op.revision == compared
    stuck = ctx.app.sync_policy.automated and same
    failed = [r for r in op.resources if r.failed]
    causes = _causes(ctx)
    items: list[dict[str, Any]] = []
    for result in failed:
        key = model.ObjectKey(result.group, result.kind, result.namespace, result.name)
        cause = causes.get(key)
        items.append(
            {
                "resource": key.display(),
                "status": result.status,
                "message": result.message,
                "cause": cause.code if cause is not None else None,
            }
        )
    head = op.message.strip() or "no message"
    quoted = [r for r in failed if r.message]
    if quoted and all(r.message in head for r in quoted) and ", reason: " in head:
        head = head.split(", reason: ", 1)[0]  # the per-resource messages follow, each once
    if not head.endswith((".", "!", "?")):
        head += "."
    message = f"The last sync (to {op.revision[:12] or 'an unknown revision'}) failed: {head}"
    for item, result in zip(items, failed, strict=True):
        line = f" {item['resource']}: "
        line += syncfailures.quote(result.message) if result.message else "no message"
        cause = causes.get(
            model.ObjectKey(result.group, result.kind, result.namespace, result.name)
        )
        if cause is not None:
            line += f" ({_why(cause)})"
        message += line + "."
    if op.retry_count:
        message += f" Argo CD tried {op.retry_count + 1} times ({op.retry_count} retries)."
    if stuck:
        message += (
            " Automated sync does not retry a revision whose sync failed, and self-heal only runs "
            "after a successful sync: nothing happens until a new commit or a manual sync."
        )
    hint = f"fix the cause, then: argocd app sync {ctx.app.name}"
    codes = sorted({str(i["cause"]) for i in items if i["cause"]})
    if codes:
        hint = f"see {', '.join(codes)} for the fix, then: argocd app sync {ctx.app.name}"
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
            "retryCount": op.retry_count,
            "resources": items,
        },
        hint=hint,
    )


def _causes(ctx: RuleContext) -> dict[model.ObjectKey, Cause]:
    """The specific cause of each object, the one that names a field first."""
    own = gitdrift_context(ctx)
    out: dict[model.ObjectKey, Cause] = {}
    if own is None:
        return out
    for cause in own.causes.values():
        held = "heldBy" in cause.evidence
        known = out.get(cause.key)
        if known is None or ("heldBy" in known.evidence and not held):
            out[cause.key] = cause
    return out


def _why(cause: Cause) -> str:
    """The cause in a few words, as the finding of its code tells it in full."""
    field = cause.evidence.get("field")
    if cause.code == immutable.CODE and field:
        return f"{cause.code}: git changes {field}, which the server refuses to change"
    if cause.code == unserved.CODE:
        what = cause.evidence.get("apiVersion") or cause.key.group
        return f"{cause.code}: the cluster does not serve {what} {cause.key.kind}"
    return f"see {cause.code}"
