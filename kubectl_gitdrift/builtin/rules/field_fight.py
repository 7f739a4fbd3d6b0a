"""Built-in rule builtin/field-fight: a controller (HPA via /scale, a webhook) keeps writing.

Every sync writes git's value back and the controller changes it again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.builtin.rules._common import (
    changed_drifts,
    clue_evidence,
    clue_for,
    difference,
    gitdrift_context,
    kind_of,
    owner_evidence,
    unexplained_changes,
)
from kubectl_gitdrift.diagnose import audit, rbac
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, Severity

ID = "builtin/field-fight"
SEVERITY = Severity.WARNING
CODES = ("field-fight",)
DOC = "A controller (HPA, kube-controller-manager, a webhook) keeps writing a git field."


def check(ctx: RuleContext) -> Iterator[Finding]:
    extra = gitdrift_context(ctx)
    for drift in changed_drifts(ctx):
        hpa = _hpa_for(ctx, drift.key)
        for change in unexplained_changes(ctx, drift):
            clue = clue_for(ctx, drift.key, change.path)
            kind = kind_of(change, clue)
            by_hpa = hpa is not None and change.path == ("spec", "replicas")
            if kind != "controller" and not by_hpa:
                continue
            owner = change.owner
            field = model.display_path(change.path)
            writer = owner.manager if owner is not None else "the HorizontalPodAutoscaler"
            evidence: dict[str, Any] = {
                "path": field,
                "pointer": model.pointer(change.path, drift.live or {}),
                "desired": change.desired,
                "live": change.live,
            }
            if owner is not None:
                evidence["owner"] = owner_evidence(owner)
            if hpa is not None:
                spec = hpa.body.get("spec") or {}
                evidence["hpa"] = {
                    "name": hpa.key.name,
                    "minReplicas": spec.get("minReplicas"),
                    "maxReplicas": spec.get("maxReplicas"),
                }
            evidence.update(clue_evidence(clue, ctx.app.last_sync))
            if extra is not None and extra.audit_log is not None:
                resource = rbac.plural(drift.key.group, drift.key.kind, extra.plurals)
                writes = audit.writes_by(extra.audit_log, drift.key, resource)
                principals: dict[str, int] = {}
                for write in writes:
                    principals[write.principal] = principals.get(write.principal, 0) + 1
                evidence["auditWrites"] = dict(sorted(principals.items()))
            what = (
                f"the HorizontalPodAutoscaler {hpa.key.name} scales it through /scale"
                if by_hpa and hpa is not None
                else f"{writer} keeps writing it"
                + (f" through /{owner.subresource}" if owner and owner.subresource else "")
            )
            yield Finding(
                code="field-fight",
                severity=Severity.WARNING,
                message=(
                    f"{field} {difference(change)}, and {what}: every sync writes git's value "
                    "back and the controller changes it again."
                ),
                key=drift.key,
                path=change.path,
                evidence=evidence,
                hint=(
                    f"drop {field} from git, or add it to the app's ignoreDifferences with "
                    "RespectIgnoreDifferences=true (see PREVENT)"
                ),
            )


def _hpa_for(ctx: RuleContext, key: model.ObjectKey) -> model.Manifest | None:
    of_kind = getattr(ctx, "of_kind", None)  # diagnosis.Context's index; else every object
    hpas = of_kind("autoscaling", "HorizontalPodAutoscaler") if of_kind else ctx.live
    for manifest in hpas:
        if (manifest.key.group, manifest.key.kind) != ("autoscaling", "HorizontalPodAutoscaler"):
            continue
        if manifest.key.namespace != key.namespace:
            continue
        ref = (manifest.body.get("spec") or {}).get("scaleTargetRef") or {}
        group = str(ref.get("apiVersion") or "apps/v1").rpartition("/")[0]
        group = "apps" if group == "extensions" else group
        if (group, ref.get("kind"), ref.get("name")) == (key.group, key.kind, key.name):
            return manifest
    return None
