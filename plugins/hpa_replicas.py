"""HPA-owned replicas: a HorizontalPodAutoscaler, not git, decides `spec.replicas` of its target.

Load it with `kubectl gitdrift APP --plugin plugins/hpa_replicas.py`.

- `gitdrift_ignore_rules`: for every live HPA (autoscaling/v1 or v2) whose `scaleTargetRef` is a
  Deployment, StatefulSet or ReplicaSet, ignore `/spec/replicas` of that object in the HPA's
  namespace. Each rule is `hpa_replicas/<hpa-name>`, so `--show-suppressed` says which HPA hid
  the field.
- rule `hpa_replicas/field-fight`: git sets `spec.replicas` on an HPA's target. Every sync puts
  git's count back and the HPA scales again: the two fight over the field. Argo CD's advice is to
  drop `replicas` from git.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_gitdrift import (
    Application,
    Drift,
    Finding,
    IgnoreRule,
    Manifest,
    ObjectKey,
    RegisterRule,
    RuleContext,
    Severity,
    hookimpl,
)

__version__ = "1.0.0"

PLUGIN = "hpa_replicas"
REPLICAS = ("spec", "replicas")
TARGET_KINDS = frozenset({"Deployment", "StatefulSet", "ReplicaSet"})
LEGACY_GROUPS = {"extensions": "apps"}  # extensions/v1beta1 targets are served as apps/v1


@dataclass(frozen=True, slots=True)
class Hpa:
    name: str
    target: ObjectKey
    min_replicas: int
    max_replicas: int


def hpas(live: Sequence[Manifest]) -> list[Hpa]:
    """Every HPA with a scalable target, sorted by namespace and name."""
    found = []
    for manifest in live:
        if (manifest.key.group, manifest.key.kind) != ("autoscaling", "HorizontalPodAutoscaler"):
            continue
        spec = manifest.body.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        kind, name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        if kind not in TARGET_KINDS or not name:
            continue
        group = str(ref.get("apiVersion") or "apps/v1").rpartition("/")[0]
        group = LEGACY_GROUPS.get(group, group)
        target = ObjectKey(group, kind, manifest.key.namespace, name)
        found.append(
            Hpa(
                manifest.key.name,
                target,
                int(spec.get("minReplicas") or 1),
                int(spec.get("maxReplicas") or 0),
            )
        )
    return sorted(found, key=lambda h: (h.target.namespace, h.name))


@hookimpl
def gitdrift_ignore_rules(app: Application, live: Sequence[Manifest]) -> list[IgnoreRule]:
    return [
        IgnoreRule(
            group=hpa.target.group,
            kind=hpa.target.kind,
            name=hpa.target.name,
            namespace=hpa.target.namespace,
            json_pointers=("/spec/replicas",),
            rule_id=f"{PLUGIN}/{hpa.name}",
        )
        for hpa in hpas(live)
    ]


@hookimpl
def gitdrift_register_rules(register: RegisterRule) -> None:
    register(
        f"{PLUGIN}/field-fight",
        field_fight,
        severity=Severity.WARNING,
        codes=("field-fight",),
        doc="Git sets spec.replicas on an object an HPA scales: every sync resets the HPA's "
        "choice. Drop replicas from git.",
    )


def field_fight(ctx: RuleContext) -> Iterator[Finding]:
    by_target = {hpa.target: hpa for hpa in hpas(ctx.live)}
    for drift in ctx.drifts:
        hpa = by_target.get(drift.key)
        if hpa is None:
            continue
        found, git_replicas = _git_replicas(drift)
        if not found:
            continue
        live = ((drift.live or {}).get("spec") or {}).get("replicas")
        yield Finding(
            code="field-fight",
            severity=Severity.WARNING,
            message=(
                f"git sets spec.replicas: {git_replicas} on {drift.key.short()}, which HPA "
                f"{hpa.name} scales between {hpa.min_replicas} and {hpa.max_replicas} (now "
                f"{live}); every sync puts {git_replicas} back and the HPA scales again."
            ),
            key=drift.key,
            path=REPLICAS,
            evidence={
                "hpa": hpa.name,
                "minReplicas": hpa.min_replicas,
                "maxReplicas": hpa.max_replicas,
                "git": git_replicas,
                "live": live,
                "origin": drift.origin,
            },
            hint=f"remove spec.replicas from {drift.origin or 'git'}; the HPA owns it",
        )


def _git_replicas(drift: Drift) -> tuple[bool, Any]:
    """Whether git sets spec.replicas, and to what. The ignore rule removed it from the
    normalized desired object, so look at what was hidden, then at Argo CD's last apply."""
    for suppressed in drift.suppressed:
        if suppressed.change.path == REPLICAS and suppressed.change.desired is not None:
            return True, suppressed.change.desired
    if drift.desired is not None:
        spec = drift.desired.get("spec") or {}
        if "replicas" in spec:
            return True, spec["replicas"]
    applied = _last_applied(drift.live or {})
    spec = applied.get("spec") or {}
    if "replicas" in spec:
        return True, spec["replicas"]
    return False, None


def _last_applied(live: Mapping[str, Any]) -> Mapping[str, Any]:
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get("kubectl.kubernetes.io/last-applied-configuration")
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, Mapping) else {}
