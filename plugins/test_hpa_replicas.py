"""Unit tests for plugins/hpa_replicas.py (scenario: team-plugin-hpa-replicas)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import hpa_replicas
import pytest

from kubectl_gitdrift import (
    Change,
    Drift,
    IgnoreRule,
    Manifest,
    ObjectKey,
    Op,
    ResourceStatus,
    Suppressed,
)


def _hpa(api: str, name: str, ref: dict[str, Any], ns: str = "shop") -> Manifest:
    body = {
        "apiVersion": api,
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"scaleTargetRef": ref, "minReplicas": 2, "maxReplicas": 10},
    }
    return Manifest(ObjectKey.of(body), body)


V2_REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


@pytest.mark.parametrize(
    ("api", "ref", "group", "kind"),
    [
        ("autoscaling/v2", V2_REF, "apps", "Deployment"),
        ("autoscaling/v1", {"kind": "StatefulSet", "name": "web"}, "apps", "StatefulSet"),
        ("autoscaling/v2",
         {"apiVersion": "extensions/v1beta1", "kind": "ReplicaSet", "name": "web"},
         "apps", "ReplicaSet"),
    ],
)  # fmt: skip
def test_ignore_rule_per_hpa(api: str, ref: dict[str, Any], group: str, kind: str) -> None:
    rules = hpa_replicas.gitdrift_ignore_rules(app=None, live=[_hpa(api, "web-hpa", ref)])  # type: ignore[arg-type]
    assert rules == [
        IgnoreRule(
            group=group,
            kind=kind,
            name="web",
            namespace="shop",
            json_pointers=("/spec/replicas",),
            rule_id="hpa_replicas/web-hpa",
        )
    ]


def test_ignores_unscalable_targets_and_other_objects() -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
    live = [
        _hpa("autoscaling/v2", "rollout",
             {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "x"}),
        _hpa("autoscaling/v2", "no-name", {"kind": "Deployment"}),
        Manifest(ObjectKey.of(deployment), deployment),
    ]  # fmt: skip
    assert hpa_replicas.gitdrift_ignore_rules(app=None, live=live) == []  # type: ignore[arg-type]


def _drift(*, suppressed: bool, last_applied: dict[str, Any] | None) -> Drift:
    key = ObjectKey("apps", "Deployment", "shop", "web")
    annotations = {}
    if last_applied is not None:
        annotations["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(last_applied)
    live = {"metadata": {"annotations": annotations}, "spec": {"replicas": 5}}
    hidden = ()
    if suppressed:
        change = Change(Op.CHANGE, ("spec", "replicas"), 2, 5)
        hidden = (Suppressed(change, "hpa_replicas/web-hpa", "hpa_replicas"),)
    return Drift(key, ResourceStatus.SYNCED, suppressed=hidden, origin="apps/web.yaml",
                 desired={"spec": {}}, live=live)  # fmt: skip


@pytest.mark.parametrize(
    ("suppressed", "last_applied", "fight"),
    [
        (True, None, True),  # git 2, HPA 5: the ignore rule hid it
        (False, {"spec": {"replicas": 5}}, True),  # equal right now, but git still sets it
        (False, {"spec": {}}, False),  # git leaves replicas to the HPA
        (False, None, False),
    ],
)
def test_field_fight(suppressed: bool, last_applied: dict[str, Any] | None, fight: bool) -> None:
    ctx = SimpleNamespace(
        drifts=[_drift(suppressed=suppressed, last_applied=last_applied)],
        live=[_hpa("autoscaling/v2", "web-hpa", V2_REF)],
    )
    findings = list(hpa_replicas.field_fight(ctx))  # type: ignore[arg-type]
    assert [f.code for f in findings] == (["field-fight"] if fight else [])
    if fight:
        assert findings[0].evidence["hpa"] == "web-hpa"
        assert findings[0].hint == "remove spec.replicas from apps/web.yaml; the HPA owns it"
