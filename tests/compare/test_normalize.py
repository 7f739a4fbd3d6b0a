"""normalize: remarshal, kind rules, ignoreDifferences, tracking. Table-driven, pure."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import normalize
from kubectl_gitdrift.compare.openapi import load_builtin_definitions
from kubectl_gitdrift.compare.schema import Node, Schema


@pytest.fixture(scope="module")
def schema() -> Schema:
    return Schema(load_builtin_definitions("1.33"))


def _deployment(schema: Schema) -> Node:
    node = schema.root("apps", "v1", "Deployment")
    assert node is not None
    return node


def _with_container(**fields: Any) -> dict[str, Any]:
    container = {"name": "app", "image": "nginx:1.27", **fields}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }


def _container(body: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = body["spec"]["template"]["spec"]["containers"][0]
    return result


# --------------------------------------------------------------------------- remarshal


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        (0.2, "200m"),
        ("0.2", "200m"),
        ("1000m", "1"),
        ("2000m", "2"),
        ("1024Mi", "1Gi"),
        ("1.5Gi", "1536Mi"),
        (1, "1"),
        ("100m", "100m"),
    ],
)
def test_quantities_are_canonical(schema: Schema, written: Any, canonical: str) -> None:
    body = _with_container(resources={"requests": {"cpu": written}})
    out = normalize.remarshal(body, _deployment(schema))
    assert _container(out)["resources"]["requests"]["cpu"] == canonical


@pytest.mark.parametrize(
    ("field", "value", "kept"),
    [
        ("imagePullPolicy", "", False),  # empty string: omitempty
        ("args", [], False),  # empty slice
        ("env", None, False),  # null
        ("stdin", False, False),  # plain bool at its zero value
        ("tty", True, True),
        ("workingDir", "/srv", True),
    ],
)
def test_empty_optional_fields_vanish(
    schema: Schema, field: str, value: Any, *, kept: bool
) -> None:
    out = normalize.remarshal(_with_container(**{field: value}), _deployment(schema))
    assert (field in _container(out)) is kept


@pytest.mark.parametrize(
    ("path", "value", "kept"),
    [
        (("spec", "minReadySeconds"), 0, False),  # int32, omitempty
        (("spec", "paused"), False, False),  # bool, omitempty
        (("spec", "replicas"), 0, True),  # *int32: zero survives
        (("spec", "revisionHistoryLimit"), 0, True),
        (("metadata", "annotations"), {}, False),  # empty map
        (("metadata", "labels"), None, False),  # null map (helm's empty `labels:`)
    ],
)
def test_zero_values_follow_go_pointers(
    schema: Schema, path: tuple[str, str], value: Any, *, kept: bool
) -> None:
    body = _with_container()
    body[path[0]][path[1]] = value
    out = normalize.remarshal(body, _deployment(schema))
    assert (path[1] in out[path[0]]) is kept


@pytest.mark.parametrize(
    ("kind", "value", "expected"),
    [
        # ClusterRole/Role `rules` has no omitempty: [] and null survive the round-trip (and
        # normalizeRole then makes [] null); other empty lists vanish
        ("ClusterRole", [], []),
        ("ClusterRole", None, None),
        ("Role", [], []),
        ("ClusterRoleBinding", [], "absent"),
    ],
)
def test_fields_without_omitempty_keep_empty_values(
    schema: Schema, kind: str, value: Any, expected: Any
) -> None:
    node = schema.root("rbac.authorization.k8s.io", "v1", kind)
    assert node is not None
    field = "subjects" if kind.endswith("Binding") else "rules"
    body = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, field: value}
    out = normalize.remarshal(body, node)
    assert out.get(field, "absent") == expected


def test_nested_zero_creation_timestamp_survives(schema: Schema) -> None:
    """metav1.Time is a struct, so Go keeps a template's `creationTimestamp: null` (what API
    servers before 1.34 return); absent stays absent."""
    node = schema.root("apps", "v1", "StatefulSet")
    assert node is not None
    old = {"metadata": {"name": "data", "creationTimestamp": None}}
    new = {"metadata": {"name": "logs"}}
    out = normalize.remarshal({"spec": {"volumeClaimTemplates": [old, new]}}, node)
    assert out["spec"]["volumeClaimTemplates"] == [old, new]


def test_integral_floats_become_ints(schema: Schema) -> None:
    body = _with_container()
    body["spec"]["replicas"] = 2.0
    assert normalize.remarshal(body, _deployment(schema))["spec"]["replicas"] == 2
    assert isinstance(normalize.remarshal(body, None)["spec"]["replicas"], int)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b["spec"].__setitem__("replica", 3),  # unknown field (typo)
        lambda b: b["spec"].__setitem__("replicas", "3"),  # string in an int32
    ],
    ids=["unknown-field", "wrong-type"],
)
def test_undecodable_objects_are_compared_as_written(schema: Schema, mutate: Any) -> None:
    body = _with_container(resources={"requests": {"cpu": 0.2}}, args=[])
    mutate(body)
    node = _deployment(schema)
    assert not normalize.decodes(body, node)
    out = normalize.remarshal(body, node)
    assert _container(out)["resources"]["requests"]["cpu"] == 0.2  # not canonicalized
    assert _container(out)["args"] == []  # not dropped
    assert out == body


def test_remarshal_never_shares_containers(schema: Schema) -> None:
    body = _with_container(env=[{"name": "A", "value": "1"}])
    out = normalize.remarshal(body, _deployment(schema))
    _container(out)["env"].append({"name": "B"})
    assert len(_container(body)["env"]) == 1


def test_rollout_pod_template_is_a_known_type(schema: Schema) -> None:
    body: dict[str, Any] = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "spec": {
            "strategy": {"canary": {"maxSurge": 1}},
            "template": {
                "spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "1000m"}}}]}
            },
        },
    }
    key = model.ObjectKey("argoproj.io", "Rollout", "ns", "r")
    normalize.remarshal_known_types(body, key, schema.definition)
    assert body["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "1"
    assert body["spec"]["strategy"] == {"canary": {"maxSurge": 1}}


# --------------------------------------------------------------------------- kind rules

SETTINGS = model.Settings()
SECRET = model.ObjectKey("", "Secret", "ns", "s")
ROLE = model.ObjectKey("rbac.authorization.k8s.io", "Role", "ns", "r")
ENDPOINTS = model.ObjectKey("", "Endpoints", "ns", "e")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    ("body", "data"),
    [
        ({"stringData": {"a": "x"}}, {"a": _b64("x")}),
        ({"data": {"a": _b64("old")}, "stringData": {"a": "new"}}, {"a": _b64("new")}),
        ({"data": {"a": None}}, {"a": ""}),
        ({"data": {"a": _b64("x")}, "stringData": {"b": "y"}}, {"a": _b64("x"), "b": _b64("y")}),
    ],
)
def test_secret_string_data_folds_into_data(body: dict[str, Any], data: dict[str, str]) -> None:
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, **body}
    normalize.normalize_object(body, SECRET, SETTINGS)
    assert body["data"] == data
    assert "stringData" not in body


@pytest.mark.parametrize(
    ("body", "settings", "rules"),
    [
        ({"rules": []}, SETTINGS, None),
        ({"rules": [{"verbs": ["get"]}]}, SETTINGS, [{"verbs": ["get"]}]),
        (
            {"aggregationRule": {"clusterRoleSelectors": []}, "rules": [{"verbs": ["get"]}]},
            model.Settings(ignore_aggregated_roles=True),
            None,
        ),
        (
            {"aggregationRule": {"clusterRoleSelectors": []}, "rules": [{"verbs": ["get"]}]},
            SETTINGS,
            [{"verbs": ["get"]}],
        ),
    ],
)
def test_role_rules(body: dict[str, Any], settings: model.Settings, rules: Any) -> None:
    normalize.normalize_object(body, ROLE, settings)
    assert body["rules"] == rules


def test_endpoints_order_does_not_matter() -> None:
    one = {
        "subsets": [
            {"addresses": [{"ip": "10.0.0.2"}, {"ip": "10.0.0.1"}], "ports": [{"port": 5432}]},
            {"addresses": [{"ip": "10.0.0.9"}], "ports": [{"port": 9187, "protocol": "TCP"}]},
        ]
    }
    two = {
        "subsets": [
            {"addresses": [{"ip": "10.0.0.9"}], "ports": [{"port": 9187}]},
            {
                "addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
                "ports": [{"port": 5432, "protocol": "TCP"}],
            },
        ]
    }
    normalize.normalize_object(one, ENDPOINTS, SETTINGS)
    normalize.normalize_object(two, ENDPOINTS, SETTINGS)
    assert one == two


def test_status_and_creation_timestamp() -> None:
    body: dict[str, Any] = {
        "metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
        "status": {"x": 1},
    }
    key = model.ObjectKey("apps", "Deployment", "ns", "d")
    normalize.normalize_object(body, key, SETTINGS)
    normalize.drop_status(body, key, SETTINGS)
    assert body == {"metadata": {}}
    kept: dict[str, Any] = {"status": {"x": 1}}
    normalize.drop_status(kept, key, model.Settings(ignore_status="none"))
    normalize.drop_status(kept, key, model.Settings(ignore_status="crd"))
    assert kept == {"status": {"x": 1}}


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"name": "a", "namespace": "ns", "annotations": {}}, {"name": "a"}),
        ({"name": "a", "annotations": None}, {"name": "a"}),
        ({"name": "a", "annotations": {"x": "1"}}, {"name": "a", "annotations": {"x": "1"}}),
    ],
)
def test_stripped_for_patch(metadata: dict[str, Any], expected: dict[str, Any]) -> None:
    body = {"metadata": metadata, "spec": {}}
    before = copy.deepcopy(body)
    assert normalize.stripped_for_patch(body) == {"metadata": expected, "spec": {}}
    assert body == before


# --------------------------------------------------------------------------- ignoreDifferences


@pytest.mark.parametrize(
    ("group", "kind", "key", "matches"),
    [
        ("apps", "Deployment", ("apps", "Deployment"), True),
        ("", "Service", ("", "Service"), True),
        ("", "Service", ("apps", "Service"), False),  # empty group = core only
        ("*", "*", ("", "ConfigMap"), True),
        ("*.k8s.io", "*Role*", ("rbac.authorization.k8s.io", "ClusterRoleBinding"), True),
        ("{apps,batch}", "?ob", ("batch", "Job"), True),
        ("{apps,batch}", "?ob", ("policy", "Job"), False),
        ("apps", "[DS]*", ("apps", "StatefulSet"), True),
    ],
)
def test_rule_globs(group: str, kind: str, key: tuple[str, str], *, matches: bool) -> None:
    rule = model.IgnoreRule(group=group, kind=kind)
    found = normalize.matching_rules([("p", rule)], model.ObjectKey(*key, "ns", "n"))
    assert bool(found) is matches


@pytest.mark.parametrize(
    ("name", "namespace", "matches"),
    [("", "", True), ("n", "", True), ("other", "", False), ("", "ns", True), ("", "x", False)],
)
def test_rule_name_and_namespace(name: str, namespace: str, *, matches: bool) -> None:
    rule = model.IgnoreRule(group="*", kind="*", name=name, namespace=namespace)
    found = normalize.matching_rules([("p", rule)], model.ObjectKey("", "Pod", "ns", "n"))
    assert bool(found) is matches


@pytest.mark.parametrize(
    ("pointer", "replicas", "annotations"),
    [
        ("/spec/replicas", False, {"a/b": "1", "c~d": "2"}),
        ("/metadata/annotations/a~1b", True, {"c~d": "2"}),
        ("/metadata/annotations/c~0d", True, {"a/b": "1"}),
        ("/spec/missing", True, {"a/b": "1", "c~d": "2"}),
        ("/spec/replicas/deeper", True, {"a/b": "1", "c~d": "2"}),
    ],
)
def test_json_pointers(pointer: str, *, replicas: bool, annotations: dict[str, str]) -> None:
    body: dict[str, Any] = {
        "spec": {"replicas": 3},
        "metadata": {"annotations": {"a/b": "1", "c~d": "2"}},
    }
    normalize.remove_pointer(body, pointer)
    assert ("replicas" in body["spec"]) is replicas
    assert body["metadata"]["annotations"] == annotations


def test_jq_paths_use_real_jq() -> None:
    body = {
        "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]},
    }
    out = normalize.remove_jq(body, '.spec.containers[] | select(.name == "b") | .image')
    assert out == {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}]}}
    assert normalize.remove_jq(body, ".spec.nothing.here") == body
    with pytest.raises(Exception, match="invalid jq"):
        normalize.remove_jq(body, ".[[[")


# --------------------------------------------------------------------------- tracking


@pytest.mark.parametrize(
    ("desired_labels", "live_labels", "live_after"),
    [
        ({}, {"app.kubernetes.io/instance": "a"}, None),  # label gone, so is the empty map
        ({}, {"app.kubernetes.io/instance": "a", "team": "x"}, {"team": "x"}),
        (
            {"app.kubernetes.io/instance": "a"},
            {"app.kubernetes.io/instance": "a"},
            {"app.kubernetes.io/instance": "a"},
        ),
    ],
)
def test_label_to_annotation_tracking(
    desired_labels: dict[str, str], live_labels: dict[str, str], live_after: Any
) -> None:
    tracking = {normalize.TRACKING_ID: "a:/ConfigMap:ns/c"}
    desired = {"metadata": {"labels": desired_labels, "annotations": dict(tracking)}}
    live = {"metadata": {"labels": dict(live_labels)}}
    normalize.normalize_tracking(desired, live, SETTINGS)
    assert live["metadata"].get("labels") == live_after
    assert live["metadata"]["annotations"] == tracking


def test_a_different_live_tracking_id_is_left_alone() -> None:
    desired = {"metadata": {"annotations": {normalize.TRACKING_ID: "a:/ConfigMap:ns/c"}}}
    live = {
        "metadata": {
            "labels": {"app.kubernetes.io/instance": "a"},
            "annotations": {normalize.TRACKING_ID: "b:/ConfigMap:ns/c"},
        }
    }
    normalize.normalize_tracking(desired, live, SETTINGS)
    assert live["metadata"]["annotations"][normalize.TRACKING_ID] == "b:/ConfigMap:ns/c"
