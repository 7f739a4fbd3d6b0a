"""Built-in rule: say what could not be read, so an incomplete report never looks complete.

- builtin/resource-unreadable: resource-unreadable, once per resource whose status is Unknown
  (its kind could not be listed: 403, 5xx after retries, a timeout, a dropped connection, an
  expired continue token, or recorded as unreadable in the snapshot), and once per note
  "not checked: ..." (context objects that could not be read: events, RBAC, a label sweep).

Severity error: the verdict for those resources is unknown, and the exit code is 7.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from kubectl_gitdrift.hookspecs import RegisterRule, RuleContext, hookimpl
from kubectl_gitdrift.model import Finding, ResourceStatus, Severity

CODE = "resource-unreadable"
NOT_CHECKED = "not checked: "


@hookimpl
def gitdrift_register_rules(register: RegisterRule) -> None:
    register(
        "builtin/resource-unreadable",
        resource_unreadable,
        severity=Severity.ERROR,
        codes=(CODE,),
        doc="A resource or kind could not be read (forbidden, failing, timed out): its status "
        "is Unknown, never Synced.",
    )


def resource_unreadable(ctx: RuleContext) -> Iterator[Finding]:
    for drift in ctx.drifts:
        if drift.status is not ResourceStatus.UNKNOWN:
            continue
        reason = drift.reason or "could not be read"
        # read, but the input cannot support a verdict (an SSA object without managedFields)
        compared = drift.live is not None
        verb = "could not be compared" if compared else "could not be read"
        yield Finding(
            code=CODE,
            severity=Severity.ERROR,
            message=f"{drift.key.short()} {verb}, so its status is Unknown: {reason}",
            key=drift.key,
            evidence={"reason": reason},
            hint=None if compared else _hint(reason),
        )
    notes: tuple[str, ...] = tuple(getattr(ctx, "notes", ()) or ())
    for note in sorted({n for n in notes if n.startswith(NOT_CHECKED)}):
        reason = note.removeprefix(NOT_CHECKED)
        yield Finding(
            code=CODE,
            severity=Severity.ERROR,
            message=f"Not checked, could not be read: {reason}",
            evidence={"reason": reason},
            hint=_hint(reason),
        )


# 403 as a status, not inside a port or an address (https://10.0.0.1:6403 answered 500)
_FORBIDDEN = re.compile(r"(?<![\w:.])403(?![\w.])|Forbidden")


def _hint(reason: str) -> str:
    if _FORBIDDEN.search(reason):
        return (
            "grant get/list/watch on it (see docs/security.md for the minimal ClusterRole), "
            "check with: kubectl auth can-i list <resource> -n <namespace>"
        )
    return "rerun when the API server answers; until then this part of the report is unknown"
