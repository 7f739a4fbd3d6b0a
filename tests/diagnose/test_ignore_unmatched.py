"""The ignore-rule-unmatched detector (diagnose/ignore_unmatched.py) and its rule: a rule that
matches nothing is claimed for a change only when a likely slip keeps it from a resource and the
corrected rule would hide that change."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
from typing import Any

import pytest

from kubectl_gitdrift import application, model
from kubectl_gitdrift.builtin.rules import ignore_rule_unmatched as rule_module
from kubectl_gitdrift.diagnose import ignore_unmatched, primary, rules
from kubectl_gitdrift.model import Op

WEB = model.ObjectKey("apps", "Deployment", "prod", "guestbook")
SVC = model.ObjectKey("", "Service", "prod", "web")
REPLICAS = ("spec", "replicas")
HPA = model.Owner("kube-controller-manager", "Update", subresource="scale")
JANE = model.Owner("kubectl", "Update", subresource="scale", time="2026-11-27T03:12:00Z")


def _rule(i: int = 0, **raw: Any) -> model.IgnoreRule:
    spec = {"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"], **raw}
    return application.ignore_rule(
        spec, origin="application", rule_id=f"application/ignoreDifferences[{i}]"
    )


def _app(*ignore: model.IgnoreRule, self_heal: bool = False) -> model.Application:
    return model.Application(
        name="shop",
        namespace="argocd",
        project="default",
        sources=(),
        dest_server="https://kubernetes.default.svc",
        dest_name="",
        dest_namespace="prod",
        sync_policy=model.SyncPolicy(automated=True, self_heal=self_heal),
        ignore_rules=ignore,
        sync_status="OutOfSync",
        revisions=(),
        history=(),
        operation=None,
    )


def _drifts(owner: model.Owner | None = HPA) -> tuple[model.Drift, ...]:
    desired = {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 3}}
    live = {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 5}}
    change = model.Change(Op.CHANGE, REPLICAS, 3, 5, owner)
    web = model.Drift(
        WEB,
        model.ResourceStatus.OUT_OF_SYNC,
        (change,),
        desired=desired,
        live=live,
        predicted=desired,
        normalized_live=live,
    )
    svc = model.Drift(SVC, model.ResourceStatus.SYNCED, desired={}, live={})
    return (web, svc)


def _ctx(
    app: model.Application, settings: model.Settings | None = None, owner: Any = HPA
) -> rules.Context:
    ctx = rules.Context(
        app=app,
        settings=settings or model.Settings(),
        drifts=_drifts(owner),
        live=(),
        managed_fields_known=True,
    )
    return replace(ctx, causes=primary.classify(ctx))


@pytest.mark.parametrize(
    ("raw", "field", "right"),
    [
        ({"group": "apps/v1"}, "group", "apps"),
        ({"group": "*/v1"}, "group", "apps"),
        ({"kind": "deployment"}, "kind", "Deployment"),
        ({"kind": "deployments"}, "kind", "Deployment"),
        ({"kind": "Deploymnet"}, "kind", "Deployment"),
        ({"name": "guestbok"}, "name", "guestbook"),
        ({"namespace": "prd"}, "namespace", "prod"),
    ],
)
def test_a_slip_is_named_with_its_correction(raw: dict[str, Any], field: str, right: str) -> None:
    ctx = _ctx(_app(_rule(**raw)))
    cause = ctx.cause(WEB, REPLICAS)
    assert cause is not None
    assert cause.code == "ignore-rule-unmatched"
    assert [(c["field"], c["resource"]) for c in cause.evidence["corrections"]] == [(field, right)]
    assert cause.adoptable is False
    (fix,) = cause.fixes
    ops = json.loads(shlex.split(fix.commands[0])[-1])
    assert ops[-1] == {
        "op": "replace",
        "path": f"/spec/ignoreDifferences/0/{field}",
        "value": right,
    }
    assert ops[0]["op"] == "test"


@pytest.mark.parametrize(
    "raw",
    [
        {},  # it matches: nothing to correct
        {"group": "apps/v1", "jsonPointers": ["/spec/template"]},  # hides another field
        {"kind": "ConfigMap"},  # another kind altogether
        {"namespace": "staging"},  # another namespace, perhaps on purpose
        {"name": "api"},  # another object's name
        {"group": "apps/v1", "kind": "deployments", "name": "guestbok"},  # too many slips
        {"group": "apps/v1", "jsonPointers": [], "managedFieldsManagers": ["hpa"]},
        {"group": "apps/v1", "jsonPointers": [], "jqPathExpressions": ["..[invalid"]},
    ],
    ids=[
        "matches",
        "other-path",
        "other-kind",
        "other-namespace",
        "other-name",
        "three-slips",
        "managers-only",
        "bad-jq",
    ],
)
def test_no_claim_without_a_slip_that_hides_the_change(raw: dict[str, Any]) -> None:
    assert _ctx(_app(_rule(**raw))).causes == {}


def test_a_rule_that_matches_another_resource_is_not_unmatched() -> None:
    # apps/v1 matches nothing here, but a `*` kind rule for the Service's group matches the Service
    svc_rule = _rule(group="", kind="*", jsonPointers=["/spec/replicas"])
    assert _ctx(_app(svc_rule)).causes == {}


@pytest.mark.parametrize(("owner", "revertable"), [(HPA, False), (JANE, True)])
def test_revertable_when_no_controller_writes_it_back(owner: model.Owner, revertable: bool) -> None:
    cause = _ctx(_app(_rule(group="apps/v1")), owner=owner).cause(WEB, REPLICAS)
    assert cause is not None
    assert cause.revertable is revertable


def test_a_jq_path_is_applied_as_argo_cd_applies_it() -> None:
    rule = _rule(group="apps/v1", jsonPointers=[], jqPathExpressions=[".spec.replicas"])
    assert _ctx(_app(rule)).cause(WEB, REPLICAS) is not None


POINTERS = "jsonPointers:\n- /spec/replicas\n"


def test_an_argocd_cm_key_is_renamed() -> None:
    cm = {
        "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", "namespace": "argocd"},
        "data": {"resource.customizations.ignoreDifferences.apps_deployment": POINTERS},
    }
    settings = application.parse_settings(cm)
    cause = _ctx(_app(), settings).cause(WEB, REPLICAS)
    assert cause is not None
    assert cause.evidence["rule"]["id"] == (
        "argocd-cm/resource.customizations.ignoreDifferences.apps_deployment"
    )
    (fix,) = cause.fixes
    ops = json.loads(shlex.split(fix.commands[0])[-1])
    assert ops == [
        {
            "op": "add",
            "path": "/data/resource.customizations.ignoreDifferences.apps_Deployment",
            "value": "jsonPointers:\n- /spec/replicas\n",
        },
        {"op": "remove", "path": "/data/resource.customizations.ignoreDifferences.apps_deployment"},
    ]
    assert fix.commands[0].startswith("kubectl patch configmap argocd-cm -n argocd --type json")


def test_core_group_spelled_v1() -> None:
    key = model.ObjectKey("", "Service", "prod", "web")
    rule = model.IgnoreRule(group="v1", kind="Service", json_pointers=("/spec/x",))
    (fix,) = ignore_unmatched.corrections(rule, key) or []
    assert (fix.field, fix.right) == ("group", "")


@pytest.mark.parametrize("self_heal", [False, True])
def test_the_finding_names_the_rule_and_what_a_sync_does(self_heal: bool) -> None:
    ctx = _ctx(_app(_rule(group="apps/v1"), self_heal=self_heal))
    (finding,) = rule_module.check(ctx)
    assert finding.code == "ignore-rule-unmatched"
    assert finding.key == WEB
    assert finding.path == REPLICAS
    assert "application/ignoreDifferences[0]" in finding.message
    assert "kube-controller-manager changes it again" in finding.message
    assert ("selfHeal re-syncs without end" in finding.message) is self_heal
    assert finding.hint == 'correct the rule to group: "apps" (the fix below)'
