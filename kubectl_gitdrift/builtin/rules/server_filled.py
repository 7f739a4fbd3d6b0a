"""Built-in rule builtin/server-filled: the difference is only fields the API server fills in
(or Argo CD's defaulting of them) that this app's diff does not normalize; nobody changed them,
and no sync or selfHeal clears it. Reports the `server-filled` causes (diagnose/server_filled.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.builtin.rules._common import gitdrift_context
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, Severity

ID = "builtin/server-filled"
SEVERITY = Severity.WARNING
CODES = ("server-filled",)
DOC = (
    "The difference is only fields the API server fills in (StatefulSet claim templates' "
    "apiVersion/kind/status, CRD schema defaults) that the app's diff does not normalize: "
    "no sync or selfHeal clears it."
)

_STRATEGY = {
    model.DiffStrategy.LEGACY: "legacy",
    model.DiffStrategy.STRUCTURED_MERGE: "structured-merge",
    model.DiffStrategy.SERVER_SIDE_DIFF: "server-side",
}


def check(ctx: RuleContext) -> Iterator[Finding]:
    own = gitdrift_context(ctx)
    if own is None:
        return
    for cause in own.causes.values():
        if cause.code != "server-filled":
            continue
        fields: list[dict[str, Any]] = list(cause.evidence.get("fields") or ())
        field = model.display_path(cause.path or ())
        filled = "; ".join(_groups(fields))
        heal = (
            "selfHeal keeps re-syncing it, to no effect"
            if ctx.app.sync_policy.self_heal
            else "turning selfHeal on would not clear it either"
        )
        strategy = _STRATEGY.get(own.strategy, own.strategy.value)
        git_fix = any(fix.kind is model.RemedyKind.ADOPT for fix in cause.fixes)
        yield Finding(
            code="server-filled",
            severity=SEVERITY,
            message=(
                f"{field} of {cause.key.short()} differs from git only by fields filled in "
                f"outside git: {filled}. "
                f"Nobody changed them, and Argo CD's {strategy} diff does not normalize them. "
                f"A sync applies git's object and the server stores these fields again, so the app "
                f"stays OutOfSync after every sync; {heal}."
            ),
            key=cause.key,
            path=cause.path,
            evidence=dict(cause.evidence),
            hint=(
                ("write the fields in git, " if git_fix else "")
                + "compare with Server-Side Diff, or ignore the field (the fixes below); do not "
                "adopt the live status or server-owned fields into git"
            ),
        )


def _groups(fields: list[dict[str, Any]]) -> list[str]:
    """`[0].apiVersion: "v1", [0].kind: "PersistentVolumeClaim" (set by ...)`, one per filler,
    in the order the fields come."""
    groups: dict[str, list[str]] = {}
    for field in fields:
        value = field.get("live") if field.get("liveHas") else field.get("git")
        where = field.get("at") or field["path"]
        groups.setdefault(str(field["filledBy"]), []).append(f"{where}: {json.dumps(value)}")
    return [f"{', '.join(items)} ({by})" for by, items in groups.items()]
