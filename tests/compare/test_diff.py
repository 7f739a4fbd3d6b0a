"""diff: the three-way prediction, merge keys, defaults, ignore rules, Secret masking, -o diff."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import changes, defaults, legacy, masking, merge, pairs
from kubectl_gitdrift.compare.normalize import LAST_APPLIED
from kubectl_gitdrift.compare.openapi import load_builtin_definitions
from kubectl_gitdrift.compare.schema import Node, Schema
from kubectl_gitdrift.present import difftext

REFERENCE = Path(__file__).resolve().parents[2] / "testdata" / "apiserver"


@pytest.fixture(scope="module")
def schema() -> Schema:
    return Schema(load_builtin_definitions("1.33"))


@pytest.fixture(scope="module")
def ctx(schema: Schema) -> pairs.CompareContext:
    return pairs.CompareContext(
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
    assert merge.predict(orig, desired, live, None, strategic=True) == expected
    assert live == before


def test_containers_merge_by_name_and_keep_live_only_items(schema: Schema) -> None:
    node = _node(schema, "apps", "Deployment")
    desired = _pod([{"name": "app", "image": "v2"}])
    live = _pod([{"name": "app", "image": "v1", "imagePullPolicy": "Always"}, {"name": "side"}])
    got = merge.predict(desired, desired, live, node, strategic=True)
    assert got["spec"]["template"]["spec"]["containers"] == [
        {"name": "app", "image": "v2", "imagePullPolicy": "Always"},
        {"name": "side"},
    ]


def test_items_dropped_from_last_applied_are_deleted(schema: Schema) -> None:
    node = _node(schema, "apps", "Deployment")
    orig = _pod([{"name": "app"}, {"name": "old"}])
    desired = _pod([{"name": "app"}])
    live = _pod([{"name": "app"}, {"name": "old"}, {"name": "injected"}])
    got = merge.predict(orig, desired, live, node, strategic=True)
    assert [c["name"] for c in got["spec"]["template"]["spec"]["containers"]] == [
        "app",
        "injected",
    ]


def test_atomic_lists_are_replaced_whole(schema: Schema) -> None:
    node = _node(schema, "apps", "Deployment")
    desired = _pod([{"name": "app", "args": ["--a"]}])
    live = _pod([{"name": "app", "args": ["--a", "--b"]}])
    got = merge.predict(desired, desired, live, node, strategic=True)
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

    got = merge.predict(at(desired), at(desired), at(live), node, strategic=True)
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
    assert merge.predict(orig, desired, live, None, strategic=False) == expected


def test_strip_to() -> None:
    shape = [{"metadata": {"name": "d"}, "spec": {"a": 1}}]
    value = [
        {"apiVersion": "v1", "metadata": {"name": "d", "x": None}, "spec": {"a": 1, "b": 2}},
        {"extra": True},
    ]
    assert merge.strip_to(shape, value) == [
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


def test_fields_defaulting_brings_in_are_not_listed(ctx: pairs.CompareContext) -> None:
    drift = legacy.compare(_manifest(_service("ClientIP")), _manifest(_service("None")), ctx)
    assert drift.status is model.ResourceStatus.OUT_OF_SYNC
    assert _paths(drift) == ["spec.sessionAffinity"]
    assert drift.predicted is not None
    assert drift.predicted["spec"]["sessionAffinityConfig"] == {
        "clientIP": {"timeoutSeconds": 10800}
    }


def test_a_default_git_drops_is_drift_only_if_live_differs(ctx: pairs.CompareContext) -> None:
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
    drift = legacy.compare(_manifest(deployment()), _manifest(live), ctx)
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
    ctx = pairs.CompareContext(
        model.Settings(), schema, defaults.apply_defaults, ignore_rules=rules
    )
    desired = _service("ClientIP", type="NodePort")
    live = _service("None", type="ClusterIP")
    drift = legacy.compare(_manifest(desired), _manifest(live), ctx)
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


def test_secret_values_never_leave_compare(ctx: pairs.CompareContext) -> None:
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
    drift = legacy.compare(_manifest(desired), _manifest(live), ctx)
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
    masked = masking.mask_drift(drift)
    assert "c2VjcmV0" not in repr(masked)
    assert "secret" not in repr(masked.changes[0].desired)


def test_masker_tokens_keep_changed_and_unchanged_visible() -> None:
    masker = masking.Masker()
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


def test_render_diff_layout(ctx: pairs.CompareContext) -> None:
    modified = legacy.compare(_manifest(_service("ClientIP")), _manifest(_service("None")), ctx)
    synced = legacy.compare(_manifest(_service("None")), _manifest(_service("None")), ctx)
    missing = legacy.compare(
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


# --------------------------------------------------------------------------- Argo CD parity
# Each rule below is one Argo CD's own diff code has (gitops-engine pkg/diff with k8s.io
# strategicpatch), checked against real API-server states it labeled; the fixtures are small
# copies of those states.


def _deploy(
    containers: list[dict[str, Any]], applied: dict[str, Any] | None = None, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": containers, **spec},
            },
        },
    }
    if applied is not None:
        body["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(applied)}
    return body


ENV = [{"name": "LOG_LEVEL", "value": "info"}, {"name": "FEATURE_FLAGS", "value": "search"}]


def _app(env: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"name": "app", "image": "shop/web:1.4.2", "env": env, **extra}


def test_git_reordering_a_keyed_list_is_out_of_sync(ctx: pairs.CompareContext) -> None:
    """$setElementOrder carries git's order, so predicted lists env as git does; live still has
    the synced order: Argo CD says OutOfSync and reports the whole list."""
    synced = _deploy([_app(ENV)])
    desired = _deploy([_app(ENV[::-1])])
    drift = legacy.compare(_manifest(desired), _manifest(_deploy([_app(ENV)], synced)), ctx)
    assert drift.status is model.ResourceStatus.OUT_OF_SYNC
    assert _paths(drift) == ["spec.template.spec.containers[name=app].env"]
    (change,) = drift.changes
    assert change.op is model.Op.CHANGE
    assert [e["name"] for e in change.desired] == ["FEATURE_FLAGS", "LOG_LEVEL"]
    assert [e["name"] for e in change.live] == ["LOG_LEVEL", "FEATURE_FLAGS"]
    assert changes.order_only(change)
    assert changes.order_note(change) == (
        "only the order of env differs: git lists FEATURE_FLAGS, LOG_LEVEL; "
        "the cluster LOG_LEVEL, FEATURE_FLAGS"
    )


def test_live_reordering_a_keyed_list_is_out_of_sync(ctx: pairs.CompareContext) -> None:
    """The same patch puts git's order back over a live re-order (kubectl apply would)."""
    synced = _deploy([_app(ENV)])
    drift = legacy.compare(_manifest(synced), _manifest(_deploy([_app(ENV[::-1])], synced)), ctx)
    assert _paths(drift) == ["spec.template.spec.containers[name=app].env"]


@pytest.mark.parametrize(
    "live_names",
    [["app", "istio-proxy"], ["istio-proxy", "app"], ["a", "istio-proxy", "app"]],
)
def test_injected_items_keep_their_place(ctx: pairs.CompareContext, live_names: list[str]) -> None:
    """Items only live has (an injected sidecar) stay where the server put them: mergeSortedSlice
    weaves them in by their live position, so git's items in live's order are Synced."""
    git = [{"name": n, "image": f"{n}:1"} for n in live_names if n != "istio-proxy"]
    live = [{"name": n, "image": f"{n}:1"} for n in live_names]
    synced = _deploy(git)
    drift = legacy.compare(_manifest(synced), _manifest(_deploy(live, synced)), ctx)
    assert drift.status is model.ResourceStatus.SYNCED, _paths(drift)


@pytest.mark.parametrize(
    ("server_only", "patched", "live", "expected"),
    [
        # git re-orders, nothing live-only: git's order
        ([], ["b", "a"], ["a", "b"], ["b", "a"]),
        # a live-only item before git's first item stays first
        (["s"], ["a", "b"], ["s", "a", "b"], ["s", "a", "b"]),
        # ... and one after them stays last
        (["s"], ["a", "b"], ["a", "b", "s"], ["a", "b", "s"]),
        # an item git adds is not in live: it goes before the live-only items that follow
        (["s"], ["a", "new"], ["a", "s"], ["a", "new", "s"]),
        # git re-orders around a live-only item: it is placed against git's next item (s stood
        # before b in live, so it goes first)
        (["s"], ["b", "a"], ["a", "s", "b"], ["s", "b", "a"]),
    ],
)
def test_element_order(
    server_only: list[str], patched: list[str], live: list[str], expected: list[str]
) -> None:
    assert merge.element_order(server_only, patched, live, lambda v: v) == expected


def test_git_adding_an_item_next_to_an_injected_one(schema: Schema) -> None:
    node = _node(schema, "apps", "Deployment")
    orig = _pod([{"name": "app"}])
    desired = _pod([{"name": "app"}, {"name": "new"}])
    live = _pod([{"name": "app"}, {"name": "istio-proxy"}])
    got = merge.predict(orig, desired, live, node, strategic=True)
    names = [c["name"] for c in got["spec"]["template"]["spec"]["containers"]]
    assert names == ["app", "new", "istio-proxy"]


def test_scalar_merge_list_keeps_server_items_in_place(schema: Schema) -> None:
    """metadata.finalizers merges as a set of scalars; a finalizer the server put first stays."""
    node = _node(schema, "apps", "Deployment")
    desired = {"metadata": {"finalizers": ["example.com/a"]}}
    live = {"metadata": {"finalizers": ["kubernetes.io/x", "example.com/a"]}}
    got = merge.predict(desired, desired, live, node, strategic=True)
    assert got == live


def test_items_changed_and_reordered_report_the_items(ctx: pairs.CompareContext) -> None:
    """When an item also changed, the item is what differs; the order is not listed apart."""
    synced = _deploy([_app(ENV)])
    desired = _deploy([_app([{"name": "FEATURE_FLAGS", "value": "cart"}, ENV[0]])])
    drift = legacy.compare(_manifest(desired), _manifest(_deploy([_app(ENV)], synced)), ctx)
    env = "spec.template.spec.containers[name=app].env"
    assert _paths(drift) == [f"{env}[name=FEATURE_FLAGS].value"]
    assert not any(changes.order_only(c) for c in drift.changes)


def test_service_ports_reordered(ctx: pairs.CompareContext) -> None:
    ports = [
        {"name": "http", "port": 80, "targetPort": "http"},
        {"name": "metrics", "port": 9090, "targetPort": 9090},
    ]

    def service(ports: list[dict[str, Any]], applied: dict[str, Any] | None = None) -> Any:
        body = _service("None")
        body["spec"]["ports"] = ports
        if applied is not None:
            body["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(applied)}
        return body

    synced = service(ports)
    live = service([{**p, "protocol": "TCP"} for p in ports], synced)
    drift = legacy.compare(_manifest(service(ports[::-1])), _manifest(live), ctx)
    assert _paths(drift) == ["spec.ports"]
    assert changes.order_only(drift.changes[0])
    same = legacy.compare(_manifest(synced), _manifest(live), ctx)
    assert same.status is model.ResourceStatus.SYNCED


def _aggregated(rules: Any, applied: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "view-shop"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "view-shop"}}]},
    }
    if rules != "absent":
        body["rules"] = rules
    if applied is not None:
        body["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(applied)}
    return body


FILLED = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]


@pytest.mark.parametrize(
    ("git", "live", "settings", "status"),
    [
        # git's `rules: []` survives the typed round-trip (no omitempty), normalizeRole makes it
        # null, and the patch deletes the rules the aggregation controller filled in
        ([], FILLED, model.Settings(), model.ResourceStatus.OUT_OF_SYNC),
        (None, FILLED, model.Settings(), model.ResourceStatus.OUT_OF_SYNC),
        # git without rules: nothing to delete
        ("absent", FILLED, model.Settings(), model.ResourceStatus.SYNCED),
        # ignoreAggregatedRoles nulls the rules of aggregated roles on both sides
        ([], FILLED, model.Settings(ignore_aggregated_roles=True), model.ResourceStatus.SYNCED),
        # [] and null are the same (normalizeRole; Argo CD's TestNullRoleRule)
        ([], None, model.Settings(), model.ResourceStatus.SYNCED),
    ],
)
def test_aggregated_cluster_role_rules(
    schema: Schema, git: Any, live: Any, settings: model.Settings, status: model.ResourceStatus
) -> None:
    ctx = pairs.CompareContext(settings, schema, defaults.apply_defaults)
    synced = _aggregated(git)
    drift = legacy.compare(_manifest(synced), _manifest(_aggregated(live, synced)), ctx)
    assert drift.status is status
    if status is model.ResourceStatus.OUT_OF_SYNC:
        assert [(c.op, model.display_path(c.path)) for c in drift.changes] == [
            (model.Op.REMOVE, "rules")
        ]


def _sts(claim: dict[str, Any], applied: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "shop"},
        "spec": {
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "postgres:16"}]},
            },
            "volumeClaimTemplates": [claim],
        },
    }
    if applied is not None:
        body["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(applied)}
    return body


CLAIM = {
    "metadata": {"name": "data"},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
}
SERVED = {  # the claim template as an API server from 1.34 on returns it
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "data"},
    "spec": {**CLAIM["spec"], "volumeMode": "Filesystem"},
    "status": {"phase": "Pending"},
}
EXPLICIT = {k: v for k, v in SERVED.items() if k != "status"}


@pytest.mark.parametrize(
    ("git", "served", "status"),
    [
        # unchanged git: the patch leaves the list alone
        (CLAIM, SERVED, model.ResourceStatus.SYNCED),
        # git spells out what the server added: the patch replaces the atomic list, defaulting
        # adds status.phase, and the typed re-encoding writes creationTimestamp: null, which a
        # 1.34+ server omits (oracle case csa-sts-g-vct-explicit, versionSensitive)
        (EXPLICIT, SERVED, model.ResourceStatus.OUT_OF_SYNC),
        # a server before 1.34 wrote creationTimestamp: null too: the same git is Synced
        (
            EXPLICIT,
            {**SERVED, "metadata": {"name": "data", "creationTimestamp": None}},
            model.ResourceStatus.SYNCED,
        ),
    ],
)
def test_claim_templates_rewritten_by_defaulting(
    ctx: pairs.CompareContext, git: Any, served: Any, status: model.ResourceStatus
) -> None:
    drift = legacy.compare(_manifest(_sts(git)), _manifest(_sts(served, _sts(CLAIM))), ctx)
    assert drift.status is status, _paths(drift)
    if status is model.ResourceStatus.OUT_OF_SYNC:
        assert _paths(drift) == ["spec.volumeClaimTemplates"]
        (change,) = drift.changes
        assert change.desired[0]["metadata"] == {"name": "data", "creationTimestamp": None}
        assert change.live[0]["metadata"] == {"name": "data"}
