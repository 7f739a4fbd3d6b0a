"""diff: the three-way prediction, merge keys, defaults, ignore rules, Secret masking, -o diff."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kubectl_gitdrift import defaults, diff, difftext, model
from kubectl_gitdrift.normalize import LAST_APPLIED
from kubectl_gitdrift.openapi import load_builtin_definitions
from kubectl_gitdrift.schema import Node, Schema

REFERENCE = Path(__file__).resolve().parents[1] / "testdata" / "apiserver"


@pytest.fixture(scope="module")
def schema() -> Schema:
    return Schema(load_builtin_definitions("1.33"))


@pytest.fixture(scope="module")
def ctx(schema: Schema) -> diff.CompareContext:
    return diff.CompareContext(
        settings=model.Settings(), schema=schema, defaults=defaults.apply_defaults
    )


def _node(schema: Schema, group: str, kind: str) -> Node:
    node = schema.root(group, "v1", kind)
    assert node is not None
    return node


def _manifest(body: dict[str, Any]) -> model.Manifest:
    return model.Manifest(model.ObjectKey.of(body), body)


def _paths(drift: model.Drift) -> list[str]:
    return [model.display_path(c.path) for c in drift.changes]


# --------------------------------------------------------------------------- predict

POD = ("spec", "template", "spec")


def _pod(containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {"containers": containers, **spec}}}}


@pytest.mark.parametrize(
    ("orig", "desired", "live", "expected"),
    [
        # a key set in git is written; a live-only key stays
        ({"a": 1}, {"a": 2}, {"a": 1, "b": 3}, {"a": 2, "b": 3}),
        # a key in last-applied that git dropped is deleted
        ({"a": 1, "b": 2}, {"a": 1}, {"a": 1, "b": 2}, {"a": 1}),
        # a whole map in last-applied that git dropped goes, live-only keys with it
        ({"m": {"x": "1"}}, {}, {"m": {"x": "1", "y": "2"}}, {}),
        # an explicit null deletes
        ({}, {"a": None}, {"a": 1}, {}),
    ],
)
def test_three_way_maps(orig: Any, desired: Any, live: Any, expected: Any) -> None:
    before = copy.deepcopy(live)
    assert diff.predict(orig, desired, live, None, strategic=True) == expected
    assert live == before


def test_containers_merge_by_name_and_keep_live_only_items(schema: Schema) -> None:
    node = _node(schema, "apps", "Deployment")
    desired = _pod([{"name": "app", "image": "v2"}])
    live = _pod([{"name": "app", "image": "v1", "imagePullPolicy": "Always"}, {"name": "side"}])
    got = diff.predict(desired, desired, live, node, strategic=True)
    assert got["spec"]["template"]["spec"]["containers"] == [
        {"name": "app", "image": "v2", "imagePullPolicy": "Always"},
        {"name": "side"},
    ]


def test_items_dropped_from_last_applied_are_deleted(schema: Schema) -> None:
    node = _node(schema, "apps", "Deployment")
    orig = _pod([{"name": "app"}, {"name": "old"}])
    desired = _pod([{"name": "app"}])
    live = _pod([{"name": "app"}, {"name": "old"}, {"name": "injected"}])
    got = diff.predict(orig, desired, live, node, strategic=True)
    assert [c["name"] for c in got["spec"]["template"]["spec"]["containers"]] == [
        "app",
        "injected",
    ]


def test_atomic_lists_are_replaced_whole(schema: Schema) -> None:
    node = _node(schema, "apps", "Deployment")
    desired = _pod([{"name": "app", "args": ["--a"]}])
    live = _pod([{"name": "app", "args": ["--a", "--b"]}])
    got = diff.predict(desired, desired, live, node, strategic=True)
    assert got["spec"]["template"]["spec"]["containers"][0]["args"] == ["--a"]


@pytest.mark.parametrize(
    ("path", "desired", "live", "expected"),
    [
        (
            ("spec", "strategy"),
            {"type": "RollingUpdate"},
            {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "50%"}},
            {"type": "RollingUpdate"},
        ),
        (
            (*POD, "volumes"),
            [{"name": "c", "emptyDir": {}}],
            [{"name": "c", "hostPath": {"path": "/x"}}],
            [{"name": "c", "emptyDir": {}}],
        ),
    ],
)
def test_retain_keys(
    schema: Schema, path: tuple[str, ...], desired: Any, live: Any, expected: Any
) -> None:
    node = _node(schema, "apps", "Deployment")

    def at(value: Any) -> dict[str, Any]:
        body: Any = value
        for elem in reversed(path):
            body = {elem: body}
        return dict(body)

    got = diff.predict(at(desired), at(desired), at(live), node, strategic=True)
    assert model.lookup(got, path) == (True, expected)


@pytest.mark.parametrize(
    ("orig", "desired", "live", "expected"),
    [
        # JSON merge: a list git left as last-applied had it keeps live's server-added keys
        (
            {"l": [{"a": 1}]},
            {"l": [{"a": 1}]},
            {"l": [{"a": 1, "d": 0}]},
            {"l": [{"a": 1, "d": 0}]},
        ),
        # a changed list is replaced whole
        ({"l": [{"a": 1}]}, {"l": [{"a": 2}]}, {"l": [{"a": 1, "d": 0}]}, {"l": [{"a": 2}]}),
        # a key last-applied never had: git's value is written
        ({}, {"l": [{"a": 1}]}, {"l": [{"a": 1, "d": 0}]}, {"l": [{"a": 1}]}),
    ],
)
def test_json_merge_for_custom_resources(orig: Any, desired: Any, live: Any, expected: Any) -> None:
    assert diff.predict(orig, desired, live, None, strategic=False) == expected


def test_strip_to() -> None:
    shape = [{"metadata": {"name": "d"}, "spec": {"a": 1}}]
    value = [
        {"apiVersion": "v1", "metadata": {"name": "d", "x": None}, "spec": {"a": 1, "b": 2}},
        {"extra": True},
    ]
    assert diff.strip_to(shape, value) == [
        {"metadata": {"name": "d"}, "spec": {"a": 1}},
        {"extra": True},
    ]


# --------------------------------------------------------------------------- compare


def _service(affinity: str, **extra: Any) -> dict[str, Any]:
    spec = {"selector": {"app": "a"}, "ports": [{"port": 80}], "sessionAffinity": affinity}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "ns"},
        "spec": {**spec, **extra},
    }


def test_fields_defaulting_brings_in_are_not_listed(ctx: diff.CompareContext) -> None:
    drift = diff.compare(_manifest(_service("ClientIP")), _manifest(_service("None")), ctx)
    assert drift.status is model.ResourceStatus.OUT_OF_SYNC
    assert _paths(drift) == ["spec.sessionAffinity"]
    assert drift.predicted is not None
    assert drift.predicted["spec"]["sessionAffinityConfig"] == {
        "clientIP": {"timeoutSeconds": 10800}
    }


def test_a_default_git_drops_is_drift_only_if_live_differs(ctx: diff.CompareContext) -> None:
    def deployment(**spec: Any) -> dict[str, Any]:
        body = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ns"},
            "spec": {"selector": {}, **spec},
        }
        return body

    orig = deployment(replicas=3, revisionHistoryLimit=5)
    live = deployment(replicas=3, revisionHistoryLimit=5)
    live["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps(orig)
    }
    drift = diff.compare(_manifest(deployment()), _manifest(live), ctx)
    assert _paths(drift) == ["spec.replicas", "spec.revisionHistoryLimit"]
    assert [(c.desired, c.live) for c in drift.changes] == [(1, 3), (10, 5)]


def test_retired_api_versions_use_the_current_schema(schema: Schema) -> None:
    node = schema.closest("apps", "v1beta1", "StatefulSet")
    assert node is not None
    assert node.definition == "io.k8s.api.apps.v1.StatefulSet"
    ingress = schema.closest("extensions", "v1beta1", "Ingress")
    assert ingress is not None
    assert ingress.definition == "io.k8s.api.networking.v1.Ingress"
    assert schema.closest("example.com", "v1", "Widget") is None


def test_suppressed_names_the_rule_that_hid_each_field(schema: Schema) -> None:
    rule = model.IgnoreRule
    rules = [
        ("application", rule("", "Service", json_pointers=("/spec/type",), rule_id="r0")),
        ("application", rule("", "Service", jq_paths=(".spec.sessionAffinity",), rule_id="r1")),
        ("team", rule("*", "*", json_pointers=("/spec/type",), rule_id="r2")),
        ("team", rule("apps", "*", json_pointers=("/spec",), rule_id="r3")),
    ]
    ctx = diff.CompareContext(model.Settings(), schema, defaults.apply_defaults, ignore_rules=rules)
    desired = _service("ClientIP", type="NodePort")
    live = _service("None", type="ClusterIP")
    drift = diff.compare(_manifest(desired), _manifest(live), ctx)
    assert drift.status is model.ResourceStatus.SYNCED
    hidden = {model.display_path(s.change.path): (s.rule, s.plugin) for s in drift.suppressed}
    assert hidden["spec.sessionAffinity"] == ("r1", "application")
    assert hidden["spec.type"] == ("r0, r2", "application, team")
    assert all("r3" not in rule for rule, _ in hidden.values())


# --------------------------------------------------------------------------- Secrets


def _recorded_secret() -> dict[str, Any]:
    path = REFERENCE / "incident-06-secret-applied-with-stringdata.json"
    body: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return body


PLAIN = ("reference-only-not-a-real-password", "cmVmZXJlbmNlLW9ubHktbm90LWEtcmVhbC1wYXNzd29yZA")


def test_secret_values_never_leave_compare(ctx: diff.CompareContext) -> None:
    live = _recorded_secret()
    desired = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "guestbook-db",
            "namespace": "prod",
            "labels": live["metadata"]["labels"],
            "annotations": {
                "argocd.argoproj.io/tracking-id": "guestbook:/Secret:prod/guestbook-db"
            },
        },
        "type": "Opaque",
        "stringData": {"username": "guestbook", "password": "rotated-in-git"},
    }
    drift = diff.compare(_manifest(desired), _manifest(live), ctx)
    assert _paths(drift) == ["data.password"]
    (change,) = drift.changes
    assert (change.desired, change.live, change.secret) == ("+" * 8, "+" * 12, True)
    text = repr(drift)
    for secret in (*PLAIN, "rotated-in-git", "cm90YXRlZC1pbi1naXQ", "Z3Vlc3Rib29r"):
        assert secret not in text
    assert drift.live is not None
    masked = json.loads(drift.live["metadata"]["annotations"][LAST_APPLIED])
    assert masked["data"] == {"password": "+" * 12, "username": "+" * 8}
    assert "stringData" not in masked


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ((), {"data": {"k": "c2VjcmV0"}, "kind": "Secret"}),
        (("data",), {"k": "c2VjcmV0"}),
        (("data",), "c2VjcmV0"),
        (("metadata",), {"annotations": {LAST_APPLIED: '{"data":{"k":"c2VjcmV0"}}'}}),
        (("metadata", "annotations", LAST_APPLIED), '{"stringData":{"k":"secret"}}'),
        (("metadata", "annotations", LAST_APPLIED), "not json secret"),
    ],
)
def test_changes_anywhere_in_a_secret_are_masked(path: model.FieldPath, value: Any) -> None:
    change = model.Change(model.Op.ADD, path, value, None)
    drift = model.Drift(
        model.ObjectKey("", "Secret", "ns", "s"), model.ResourceStatus.OUT_OF_SYNC, (change,)
    )
    masked = diff.mask_drift(drift)
    assert "c2VjcmV0" not in repr(masked)
    assert "secret" not in repr(masked.changes[0].desired)


def test_masker_tokens_keep_changed_and_unchanged_visible() -> None:
    masker = diff.Masker()
    assert masker.token("a", "x") == "+" * 8
    assert masker.token("a", "y") == "+" * 12
    assert masker.token("a", "x") == "+" * 8
    assert masker.token("b", "y") == "+" * 8
    assert masker.token("a", "z") == "+" * 16


# --------------------------------------------------------------------------- -o diff


def _report(*drifts: model.Drift) -> model.Report:
    app = model.AppReport(
        name="a",
        namespace="argocd",
        sync_status=model.SyncStatus.OUT_OF_SYNC,
        argocd_sync_status="",
        revision="r",
        source="s",
        resources=tuple(drifts),
        findings=(),
        remedies=(),
    )
    return model.Report((app,), "offline")


def test_render_diff_layout(ctx: diff.CompareContext) -> None:
    modified = diff.compare(_manifest(_service("ClientIP")), _manifest(_service("None")), ctx)
    synced = diff.compare(_manifest(_service("None")), _manifest(_service("None")), ctx)
    missing = diff.compare(
        _manifest({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}), None, ctx
    )
    text = difftext.render_diff(_report(synced, missing, modified))
    blocks = text.split("\n=====")
    assert blocks[0] == ""
    assert blocks[1].startswith(" /ConfigMap /c ======\n--- live\n+++ desired\n")
    assert "+kind: ConfigMap\n" in blocks[1]
    assert blocks[2].startswith(" /Service ns/s ======\n--- live\n+++ desired\n")
    assert "-  sessionAffinity: None\n+  sessionAffinity: ClientIP\n" in blocks[2]
    assert "+  sessionAffinityConfig:\n" in blocks[2]
    assert difftext.render_diff(_report(synced)) == ""


def test_render_diff_never_prints_secret_values() -> None:
    live = {"apiVersion": "v1", "kind": "Secret", "data": {"k": "c2VjcmV0"}}
    drift = model.Drift(
        model.ObjectKey("", "Secret", "ns", "s"),
        model.ResourceStatus.EXTRANEOUS,
        live=live,
        normalized_live=live,
    )
    text = difftext.render_diff(_report(drift))
    assert "c2VjcmV0" not in text
    assert "-  k: ++++++++\n" in text
