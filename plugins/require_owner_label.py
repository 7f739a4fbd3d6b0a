"""Team policy: every Deployment, StatefulSet and DaemonSet in git carries an `owner` label.

Load it with `kubectl gitdrift APP --plugin plugins/require_owner_label.py`. The label key is
`owner` unless `GITDRIFT_OWNER_LABEL` names another (read once per run, when rules register).
Findings: code `owner-label-missing`, severity warning, one per workload git defines without
the label (or with an empty value). Objects only in the cluster are not checked: the policy is
about what the team commits.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from kubectl_gitdrift import Finding, RegisterRule, RuleContext, Severity, hookimpl

__version__ = "1.0.0"

ENV = "GITDRIFT_OWNER_LABEL"
DEFAULT_LABEL = "owner"
WORKLOADS = frozenset({("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet")})


def owner_label() -> str:
    return os.environ.get(ENV, "").strip() or DEFAULT_LABEL


@hookimpl
def gitdrift_register_rules(register: RegisterRule) -> None:
    label = owner_label()

    def rule(ctx: RuleContext) -> Iterator[Finding]:
        return missing_owner(ctx, label)

    register(
        "require_owner_label/owner-label",
        rule,
        severity=Severity.WARNING,
        codes=("owner-label-missing",),
        doc=f"Every Deployment, StatefulSet and DaemonSet in git carries a {label!r} label "
        f"(the key comes from ${ENV}).",
    )


def missing_owner(ctx: RuleContext, label: str) -> Iterator[Finding]:
    for drift in ctx.drifts:
        key = drift.key
        if (key.group, key.kind) not in WORKLOADS or drift.desired is None:
            continue
        labels = (drift.desired.get("metadata") or {}).get("labels") or {}
        if str(labels.get(label) or "").strip():
            continue
        where = f" in {drift.origin}" if drift.origin else ""
        yield Finding(
            code="owner-label-missing",
            severity=Severity.WARNING,
            message=f"{key.short()} has no {label!r} label in git; nobody is on the hook for it.",
            key=key,
            path=("metadata", "labels", label),
            evidence={"label": label, "origin": drift.origin},
            hint=f"add metadata.labels.{label}: <team>{where}",
        )
