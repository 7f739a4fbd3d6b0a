"""admission-mutation (diagnose/admission.py): a webhook's change inside Argo CD's apply, on the
v1.36 recordings (testdata/apiserver/v1.36/webhook-*): the Deployment the webhook mutated, its
MutatingWebhookConfiguration, and the audit events that carry the webhook's patch."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

import pytest

from kubectl_gitdrift import model
from kubectl_gitdrift.builtin.rules import admission_mutation, field_fight, manual_drift
from kubectl_gitdrift.diagnose import admission, audit, primary, remedies
from kubectl_gitdrift.diagnose import rules as diagnosis
from tests.conftest import TESTDATA

V136 = TESTDATA / "apiserver" / "v1.36"
KEY = model.ObjectKey("apps", "Deployment", "wm-pay", "demo-web")
PATH: model.FieldPath = (
    "spec",
    "template",
    "spec",
    "containers",
    model.ListKey((("name", "web"),)),
    "imagePullPolicy",
)
SYNCED = "00fcfad631ad97c0b07dc0211596876d9c10d87c"
Obj = dict[str, Any]


def recorded_deployment() -> Obj:
    body: Obj = json.loads((V136 / "webhook-01-deployment-after-csa-mutated.json").read_text())
    for entry in body["metadata"]["managedFields"]:
        if entry["manager"] == "kubectl-client-side-apply":
            entry["manager"] = "argocd-controller"  # the apply made Argo CD's
    return body


def recorded_config() -> Obj:
    listed = json.loads((V136 / "webhook-02-mutatingwebhookconfigurations-list.json").read_text())
    item: Obj = listed["items"][0]
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": admission.KIND, **item}


def recorded_audit() -> audit.AuditLog:
    lines = (V136 / "webhook-03-audit-deployment-writes-mutated.jsonl").read_text().splitlines()
    return audit.AuditLog(tuple(json.loads(line) for line in lines), "webhook-03.jsonl")


def manifest(body: Obj) -> model.Manifest:
    return model.Manifest(model.ObjectKey.of(body), body)


def owner(time: str = "2026-12-02T00:55:07Z", manager: str = "argocd-controller") -> model.Owner:
    return model.Owner(manager, "Update", time=time, api_version="apps/v1")


def context(
    *objects: Obj,
    live: Obj | None = None,
    change_owner: model.Owner | None = None,
    audit_log: audit.AuditLog | None = None,
    compared: str = SYNCED,
    self_heal: bool = True,
) -> diagnosis.Context:
    live = live if live is not None else recorded_deployment()
    change = model.Change(
        model.Op.CHANGE, PATH, "IfNotPresent", "Always", owner=change_owner or owner()
    )
    drift = model.Drift(KEY, model.ResourceStatus.OUT_OF_SYNC, changes=(change,), live=live)
    app = model.Application(
        name="demo-web",
        namespace="argocd",
        project="default",
        sources=(),
        dest_server="https://kubernetes.default.svc",
        dest_name="",
        dest_namespace="wm-pay",
        sync_policy=model.SyncPolicy(automated=True, self_heal=self_heal),
        ignore_rules=(),
        sync_status="OutOfSync",
        revisions=(compared,),
        history=(model.HistoryEntry(0, SYNCED, "2026-12-02T00:55:11Z", automated=True),),
        operation=None,
    )
    return diagnosis.Context(
        app=app,
        settings=model.Settings(),
        drifts=(drift,),
        live=tuple(manifest(o) for o in (*objects, live)),
        managed_fields_known=True,
        audit_log=audit_log,
    )


def causes(ctx: diagnosis.Context) -> list[Any]:
    return list(admission.detect(ctx))


# ---------------------------------------------------------------------------- the cause


def test_the_recorded_webhook_is_named_for_the_field_argo_cd_applied() -> None:
    (cause,) = causes(context(recorded_config()))
    assert (cause.code, cause.key, cause.path) == ("admission-mutation", KEY, PATH)
    assert (cause.adoptable, cause.revertable) == (True, False)
    (hook,) = cause.evidence["webhooks"]
    assert hook["configuration"] == "wm-pay-pull-policy"
    assert hook["webhook"] == "always-pull.policy.example.com"
    assert hook["certain"] is True
    assert hook["endpoint"] == "https://127.0.0.1:18443/mutate"
    assert cause.evidence["pointer"] == "/spec/template/spec/containers/0/imagePullPolicy"
    (fix,) = cause.fixes
    assert fix.kind is model.RemedyKind.PREVENT
    assert "/spec/template/spec/containers/0/imagePullPolicy" in fix.commands[0]
    assert "wm-pay-pull-policy" in fix.steps[0]


def test_no_ca_bundle_reaches_the_evidence() -> None:
    (cause,) = causes(context(recorded_config()))
    bundle = recorded_config()["webhooks"][0]["clientConfig"]["caBundle"]
    assert bundle not in json.dumps(cause.evidence)
    assert "caBundle" not in json.dumps(cause.evidence)


@pytest.mark.parametrize(
    ("change_owner", "why"),
    [
        (owner(manager="kubectl-edit"), "someone else wrote it after Argo CD"),
        (owner(time="2026-12-02T01:30:00Z"), "written after the last sync"),
        (model.Owner("argocd-controller", "Update", subresource="scale"), "a subresource write"),
    ],
)
def test_only_argo_cd_s_own_apply_is_claimed(change_owner: model.Owner, why: str) -> None:
    assert causes(context(recorded_config(), change_owner=change_owner)) == [], why


def test_git_ahead_is_claimed_only_when_last_applied_holds_git_s_value() -> None:
    other = "1" * 40
    # the recorded last-applied holds IfNotPresent, what git says: Argo CD sent it
    assert causes(context(recorded_config(), compared=other))
    live = recorded_deployment()
    annotations = live["metadata"]["annotations"]
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration")
    assert causes(context(recorded_config(), live=live, compared=other)) == []
    # Argo CD sent another value (the app's spec changed since): not the webhook's doing
    live = recorded_deployment()
    annotations = live["metadata"]["annotations"]
    key = "kubectl.kubernetes.io/last-applied-configuration"
    annotations[key] = annotations[key].replace("IfNotPresent", "Never")
    assert causes(context(recorded_config(), live=live)) == []


def test_an_object_being_deleted_is_left_to_stuck_deleting() -> None:
    live = recorded_deployment()
    live["metadata"]["deletionTimestamp"] = "2026-12-02T00:56:00Z"
    live["metadata"]["finalizers"] = ["example.com/hold"]
    assert causes(context(recorded_config(), live=live)) == []


# ---------------------------------------------------------------------------- matching


RULE = recorded_config()["webhooks"][0]["rules"][0]


def config_with(**webhook: Any) -> Obj:
    config = recorded_config()
    config["webhooks"][0].update(webhook)
    return config


@pytest.mark.parametrize(
    ("change", "matches"),
    [
        ({}, True),
        ({"rules": [{**RULE, "operations": ["DELETE"]}]}, False),
        ({"rules": [{**RULE, "apiGroups": [""]}]}, False),
        ({"rules": [{**RULE, "resources": ["pods"]}]}, False),
        ({"rules": [{**RULE, "resources": ["deployments/scale"]}]}, False),
        ({"rules": [{**RULE, "resources": ["deployments/*"]}]}, True),
        ({"rules": [{**RULE, "resources": ["*/*"]}]}, True),
        ({"rules": [{**RULE, "resources": ["*"], "apiGroups": ["*"]}]}, True),
        ({"rules": [{**RULE, "scope": "Cluster"}]}, False),
        ({"rules": [{**RULE, "apiVersions": ["v1beta1"]}]}, True),  # matchPolicy Equivalent
        ({"rules": [{**RULE, "apiVersions": ["v1beta1"]}], "matchPolicy": "Exact"}, False),
        ({"namespaceSelector": {"matchLabels": {admission.NAME_LABEL: "other"}}}, False),
        ({"objectSelector": {"matchLabels": {"app.kubernetes.io/name": "demo-web"}}}, True),
        ({"objectSelector": {"matchLabels": {"app.kubernetes.io/name": "api"}}}, False),
        (
            {
                "objectSelector": {
                    "matchExpressions": [
                        {"key": "app.kubernetes.io/name", "operator": "NotIn", "values": ["x"]}
                    ]
                }
            },
            True,
        ),
        (
            {
                "namespaceSelector": {
                    "matchExpressions": [{"key": admission.NAME_LABEL, "operator": "DoesNotExist"}]
                }
            },
            False,
        ),
    ],
)
def test_rules_and_selectors(change: Obj, matches: bool) -> None:
    found = admission.matching(
        [config_with(**change)],
        KEY,
        recorded_deployment(),
        ({admission.NAME_LABEL: "wm-pay"}, True),
    )
    assert bool(found) is matches


def test_namespace_labels_come_from_the_namespace_when_read() -> None:
    selector = {"matchLabels": {"policy.example.com/pull": "always"}}
    config = config_with(namespaceSelector=selector)
    # unread: only kubernetes.io/metadata.name is known, so the match is uncertain
    (unsure,) = causes(context(config))
    (hook,) = unsure.evidence["webhooks"]
    assert hook["certain"] is False
    assert "Namespace was not read" in hook["namespaceLabels"]
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "wm-pay", "labels": {"policy.example.com/pull": "always"}},
    }
    (sure,) = causes(context(config, namespace))
    assert sure.evidence["webhooks"][0]["certain"] is True
    namespace["metadata"]["labels"] = {"policy.example.com/pull": "never"}
    assert causes(context(config, namespace)) == []


def test_select_is_unknown_only_for_labels_not_known() -> None:
    labels = {admission.NAME_LABEL: "wm-pay"}
    assert admission.select({}, labels, known=False) is True
    assert admission.select({"matchLabels": labels}, labels, known=False) is True
    assert admission.select({"matchLabels": {"team": "a"}}, labels, known=False) is None
    both = {"matchLabels": {"team": "a", admission.NAME_LABEL: "other"}}
    assert admission.select(both, labels, known=False) is False


# ---------------------------------------------------------------------------- the audit log


def test_the_audit_log_s_patch_annotations_are_direct_evidence() -> None:
    # no configuration readable (e.g. a 403 on listing them): the audit log names the webhook
    (cause,) = causes(context(audit_log=recorded_audit()))
    assert cause.evidence["webhooks"] == []
    writes = cause.evidence["auditMutations"]
    assert [w["verb"] for w in writes] == ["create", "patch", "patch"]
    first = writes[0]
    assert first["configuration"] == "wm-pay-pull-policy"
    assert first["webhook"] == "always-pull.policy.example.com"
    assert first["mutated"] is True
    assert first["patch"] == [
        {
            "op": "add",
            "path": "/spec/template/spec/containers/0/imagePullPolicy",
            "value": "Always",
        }
    ]


def test_a_secret_s_patch_values_stay_out() -> None:
    log = recorded_audit()
    event = copy.deepcopy(dict(log.events[0]))
    event["objectRef"] = {**event["objectRef"], "resource": "secrets", "apiGroup": ""}
    key = model.ObjectKey("", "Secret", "wm-pay", "demo-web")
    ctx = context(audit_log=audit.AuditLog((event,), "x"))
    live = recorded_deployment()
    live["metadata"]["annotations"].pop("kubectl.kubernetes.io/last-applied-configuration")
    change = model.Change(model.Op.CHANGE, PATH, "tok-a", "tok-b", owner=owner(), secret=True)
    secret = model.Drift(key, model.ResourceStatus.OUT_OF_SYNC, changes=(change,), live=live)
    ctx = replace(ctx, drifts=(secret,))
    (cause,) = causes(ctx)
    assert "value" not in cause.evidence["auditMutations"][0]["patch"][0]
    assert cause.evidence["desired"] is None
    assert cause.evidence["secret"] is True


# ---------------------------------------------------------------------------- rules, fixes


def test_generic_stories_and_fixes_leave_the_claimed_field_alone() -> None:
    ctx = context(recorded_config())
    ctx = replace(ctx, causes=primary.classify(ctx))
    assert list(manual_drift.check(ctx)) == []
    assert list(field_fight.check(ctx)) == []
    (finding,) = admission_mutation.check(ctx)
    assert "selfHeal re-applies it forever" in finding.message
    assert "always-pull.policy.example.com" in finding.message
    out = remedies.recommend(ctx.app, ctx.drifts, [finding], causes=ctx.causes)
    kinds = [r.kind for r in out]
    assert model.RemedyKind.REVERT not in kinds  # a sync cannot keep git's value
    assert kinds[:2] == [model.RemedyKind.ADOPT, model.RemedyKind.RESOLVE]  # the cause's own fix


def test_with_self_heal_off_the_message_says_what_it_would_do() -> None:
    ctx = context(recorded_config(), self_heal=False)
    ctx = replace(ctx, causes=primary.classify(ctx))
    (finding,) = admission_mutation.check(ctx)
    assert "selfHeal, if turned on, would re-apply it forever" in finding.message


def test_server_side_diff_is_offered_only_where_it_would_help() -> None:
    ctx = context(recorded_config())
    (cause,) = causes(ctx)
    assert any("ServerSideDiff=true" in s for s in cause.fixes[0].steps)
    unsafe = config_with(sideEffects="Some")  # refused in a dry run: SSD would fail
    (cause,) = causes(context(unsafe))
    assert not any("ServerSideDiff=true" in s for s in cause.fixes[0].steps)
    ssd = replace(ctx, strategy=model.DiffStrategy.SERVER_SIDE_DIFF)
    (cause,) = causes(ssd)
    assert not any("ServerSideDiff=true" in s for s in cause.fixes[0].steps)
    (finding,) = admission_mutation.check(replace(ssd, causes=primary.classify(ssd)))
    assert "Argo CD itself expects the webhook's value" in finding.message
    assert "--server-dry-run" in finding.message
