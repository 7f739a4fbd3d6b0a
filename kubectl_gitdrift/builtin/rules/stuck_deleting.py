"""Built-in rule builtin/stuck-deleting: a live object of the app is being deleted and its
finalizers hold it (diagnose/deleting.py decides it).

Names each finalizer and what normally removes it; neither a sync nor selfHeal can finish it.
"""

from __future__ import annotations

from collections.abc import Iterator

from kubectl_gitdrift.builtin.rules._common import gitdrift_context
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, Severity

ID = "builtin/stuck-deleting"
SEVERITY = Severity.WARNING
CODES = ("stuck-deleting",)
DOC = (
    "A live object has deletionTimestamp and finalizers nobody removes (names them and what "
    "normally removes each)."
)


def check(ctx: RuleContext) -> Iterator[Finding]:
    own = gitdrift_context(ctx)
    if own is None:
        return
    for cause in own.causes.values():
        if cause.code != CODES[0] or cause.path is not None:
            continue  # the field claims only keep other causes off the resource's fields
        evidence = dict(cause.evidence)
        held = [f for f in evidence.get("finalizers") or () if isinstance(f, dict)]
        names = ", ".join(str(f.get("name")) for f in held)
        removers = "; ".join(f"{f.get('name')} is removed by {f.get('removedBy')}" for f in held)
        seconds = evidence.get("deletingForSeconds")
        age = f" ({_age(seconds)} before the state was read)" if isinstance(seconds, int) else ""
        plural = len(held) > 1
        yield Finding(
            code=CODES[0],
            severity=Severity.WARNING,
            message=(
                f"{cause.key.short()} is being deleted since {evidence.get('deletionTimestamp')}"
                f"{age} and is still there: its finalizer{'s' if plural else ''} {names} "
                f"{'have' if plural else 'has'} not been removed. Normally {removers}. Argo CD "
                "cannot update or "
                "re-create it while it is being deleted: a sync or selfHeal leaves it as it "
                "is, and it stays until the finalizer goes."
            ),
            key=cause.key,
            evidence=evidence,
            hint="find or restore what removes the finalizer (see FIX)",
        )


def _age(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    if seconds < 172800:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"
