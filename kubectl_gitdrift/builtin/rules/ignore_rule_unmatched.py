"""Built-in rule builtin/ignore-rule-unmatched: an ignoreDifferences rule (of the app, or a
resource customization in argocd-cm) matches no resource of the app while a difference it would
hide remains. Reports the `ignore-rule-unmatched` causes (diagnose/ignore_unmatched.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.builtin.rules._common import brief, gitdrift_context
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, Severity

ID = "builtin/ignore-rule-unmatched"
SEVERITY = Severity.WARNING
CODES = ("ignore-rule-unmatched",)
DOC = (
    "An ignoreDifferences rule (app or argocd-cm) matches no resource of the app (e.g. group "
    "apps/v1 for apps) while a difference at its path remains: names the rule and the fix."
)


def check(ctx: RuleContext) -> Iterator[Finding]:
    own = gitdrift_context(ctx)
    if own is None:
        return
    for cause in own.causes.values():
        if cause.code != "ignore-rule-unmatched":
            continue
        ev = cause.evidence
        rule: dict[str, Any] = ev["rule"]
        fixes: list[dict[str, str]] = list(ev["corrections"])
        wrong = "; ".join(f"{f['field']} {json.dumps(f['rule'])}: {f['why']}" for f in fixes)
        right = ", ".join(f"{f['field']}: {json.dumps(f['resource'])}" for f in fixes)
        field = model.display_path(cause.path or ())
        owner = ev.get("owner") or {}
        writer = owner.get("manager")
        if cause.revertable:
            after = (
                (f"{writer} wrote the live value. " if writer else "")
                + "A sync writes git's value back and it stays"
                + (
                    "; selfHeal would do that on its own"
                    if ctx.app.sync_policy.self_heal
                    else "; with selfHeal off, Argo CD waits for one"
                )
                + ". Once the rule matches, the field is no longer compared"
            )
        else:
            after = (
                f"A sync writes git's value back and {writer or 'a controller'} changes it again"
                + (
                    ", so selfHeal re-syncs without end"
                    if ctx.app.sync_policy.self_heal
                    else " (selfHeal, if turned on, would re-sync without end)"
                )
                + ": the corrected rule is the fix"
            )
        yield Finding(
            code="ignore-rule-unmatched",
            severity=SEVERITY,
            message=(
                f"ignore rule {rule['id']} ({_rule_text(rule)}) matches no resource of the app "
                f"({wrong}), so {field} of {cause.key.short()} is still compared: "
                f"{brief(ev.get('live'))} in the cluster, {brief(ev.get('desired'))} in git. "
                f"{after}."
            ),
            key=cause.key,
            path=cause.path,
            evidence=dict(ev),
            hint=f"correct the rule to {right} (the fix below)",
        )


def _rule_text(rule: dict[str, Any]) -> str:
    keys = ("group", "kind", "name", "namespace")
    return ", ".join(f"{k} {json.dumps(rule[k])}" for k in keys if k in rule)
