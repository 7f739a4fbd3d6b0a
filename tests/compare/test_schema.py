"""schema.Schema over the built-in definitions and over a cluster's OpenAPI v3 document."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kubectl_gitdrift.compare.openapi import (
    available_versions,
    definitions_from_openapi_v3,
    load_builtin_definitions,
)
from kubectl_gitdrift.compare.schema import QUANTITY, Node, Schema

REFERENCE = Path(__file__).resolve().parents[2] / "testdata" / "apiserver"
APPS_V1_DOC = REFERENCE / "openapi-02-v3-apis-apps-v1.json"


@pytest.fixture(scope="module")
def builtin() -> Schema:
    return Schema(load_builtin_definitions("1.33"))


@pytest.fixture(scope="module")
def apps_v1_doc() -> Mapping[str, Any]:
    doc: Mapping[str, Any] = json.loads(APPS_V1_DOC.read_text(encoding="utf-8"))
    return doc


@pytest.fixture(scope="module")
def cluster(apps_v1_doc: Mapping[str, Any]) -> Schema:
    return Schema(definitions_from_openapi_v3(apps_v1_doc))


def _deployment(schema: Schema) -> Node:
    node = schema.root("apps", "v1", "Deployment")
    assert node is not None
    return node


def _at(node: Node, *names: str) -> Node:
    found = node.path(*names)
    assert found is not None, names
    return found


POD = ("spec", "template", "spec")


def _check_deployment(schema: Schema) -> None:
    """The Deployment answers that must come out the same from every source of definitions."""
    dep = _deployment(schema)
    containers = _at(dep, *POD, "containers")
    assert containers.type == "array"
    assert containers.patch_merge_key == "name"
    assert containers.patch_strategies == frozenset({"merge"})
    assert containers.list_type == "map"
    assert containers.list_map_keys == ("name",)
    container = containers.items()
    assert container is not None
    assert container.definition == "io.k8s.api.core.v1.Container"

    ports = _at(container, "ports")
    assert ports.patch_merge_key == "containerPort"
    assert ports.patch_strategies == frozenset({"merge"})
    assert ports.list_map_keys == ("containerPort", "protocol")

    strategy = _at(dep, "spec", "strategy")
    assert strategy.patch_strategies == frozenset({"retainKeys"})
    assert strategy.patch_merge_key is None
    assert strategy.known_fields() == frozenset({"type", "rollingUpdate"})
    assert _at(strategy, "rollingUpdate", "maxSurge").is_int_or_string

    volumes = _at(dep, *POD, "volumes")
    assert volumes.patch_merge_key == "name"
    assert volumes.patch_strategies == frozenset({"merge", "retainKeys"})

    args = _at(container, "args")
    assert args.patch_merge_key is None
    assert args.patch_strategies == frozenset()
    assert args.list_type == "atomic"
    assert _at(dep, *POD, "tolerations").patch_merge_key is None

    env = _at(container, "env")
    assert env.patch_merge_key == "name"
    assert _at(container, "volumeMounts").patch_merge_key == "mountPath"
    assert _at(dep, *POD, "imagePullSecrets").patch_merge_key == "name"
    assert _at(dep, *POD, "hostAliases").patch_merge_key == "ip"
    assert _at(dep, *POD, "topologySpreadConstraints").patch_merge_key == "topologyKey"

    finalizers = _at(dep, "metadata", "finalizers")
    assert finalizers.patch_strategies == frozenset({"merge"})
    assert finalizers.patch_merge_key is None
    assert finalizers.list_type == "set"
    items = finalizers.items()
    assert items is not None
    assert items.type == "string"
    owners = _at(dep, "metadata", "ownerReferences")
    assert owners.patch_merge_key == "uid"

    requests = _at(container, "resources", "requests")
    assert requests.is_map_of_values
    assert requests.known_fields() is None
    assert _at(requests, "cpu").is_quantity
    assert _at(requests, "any-extended.example.com/gpu").is_quantity
    assert not _at(requests, "cpu").is_int_or_string

    labels = _at(dep, "metadata", "labels")
    assert labels.is_map_of_values
    assert _at(labels, "app.kubernetes.io/name").type == "string"

    assert _at(dep, "metadata", "creationTimestamp").is_time
    assert not _at(dep, "metadata", "name").is_time
    assert _at(dep, "spec", "replicas").type == "integer"
    assert _at(dep, "spec", "paused").type == "boolean"
    spec_fields = _at(dep, "spec").known_fields()
    assert spec_fields is not None
    assert {"replicas", "selector", "template", "strategy"} <= spec_fields
    assert _at(dep, *POD, "containers", "livenessProbe", "httpGet", "port").is_int_or_string
    conditions = _at(dep, "status", "conditions")
    assert conditions.patch_merge_key == "type"

    assert dep.field("no-such-field") is None
    assert _at(dep, *POD).field("nope") is None


def test_deployment_from_builtin(builtin: Schema) -> None:
    _check_deployment(builtin)


def test_deployment_from_cluster_openapi_v3(cluster: Schema) -> None:
    _check_deployment(cluster)


def test_raw_openapi_v3_schemas_work_without_conversion(apps_v1_doc: Mapping[str, Any]) -> None:
    """Schema itself follows `#/components/schemas/` refs and `allOf` wrappers."""
    _check_deployment(Schema(apps_v1_doc["components"]["schemas"]))


def test_conversion_rewrites_refs(apps_v1_doc: Mapping[str, Any]) -> None:
    defs = definitions_from_openapi_v3(apps_v1_doc)
    strategy = defs["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"]
    assert strategy["$ref"] == "#/$defs/io.k8s.api.apps.v1.DeploymentStrategy"
    assert strategy["x-kubernetes-patch-strategy"] == "retainKeys"
    assert "allOf" not in strategy
    assert "#/components/schemas/" not in json.dumps(defs)


def test_service_and_service_account(builtin: Schema) -> None:
    service = builtin.root("", "v1", "Service")
    assert service is not None
    ports = _at(service, "spec", "ports")
    assert ports.patch_merge_key == "port"
    assert ports.patch_strategies == frozenset({"merge"})
    assert ports.list_map_keys == ("port", "protocol")
    assert _at(ports, "targetPort").is_int_or_string
    assert not _at(ports, "port").is_int_or_string
    sa = builtin.root("", "v1", "ServiceAccount")
    assert sa is not None
    assert _at(sa, "secrets").patch_merge_key == "name"
    assert _at(sa, "secrets").patch_strategies == frozenset({"merge"})


def test_statefulset_volume_claim_templates_are_atomic(builtin: Schema) -> None:
    sts = builtin.root("apps", "v1", "StatefulSet")
    assert sts is not None
    vct = _at(sts, "spec", "volumeClaimTemplates")
    assert vct.patch_merge_key is None
    assert vct.list_type == "atomic"
    assert _at(vct, "spec", "resources", "requests", "storage").is_quantity


def test_free_form_fields(builtin: Schema) -> None:
    crd = builtin.root("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
    assert crd is not None
    props = _at(crd, "spec", "versions", "schema", "openAPIV3Schema", "properties")
    assert props.is_map_of_values
    # recursive definition: JSONSchemaProps -> properties -> JSONSchemaProps
    assert _at(props, "x", "properties", "y", "type").type == "string"
    raw = _at(builtin.root("apps", "v1", "ControllerRevision") or crd, "data")
    assert raw.known_fields() is None


def test_roots_and_kinds(builtin: Schema) -> None:
    assert builtin.root("apps", "v1", "NoSuchKind") is None
    assert builtin.root("apps", "v1beta1", "Deployment") is None
    assert builtin.versions("batch", "CronJob") == ("v1",)
    quantity = builtin.definition(QUANTITY)
    assert quantity is not None
    assert quantity.is_quantity
    assert builtin.definition("io.k8s.nope") is None
    pod = builtin.root("", "v1", "Pod")
    assert pod is not None
    assert pod.definition == "io.k8s.api.core.v1.Pod"


@pytest.mark.parametrize(
    ("group", "kind", "expected"),
    [
        ("apps", "Deployment", True),
        ("", "Service", True),
        ("", "Secret", True),
        ("rbac.authorization.k8s.io", "ClusterRole", True),
        ("batch", "CronJob", True),
        ("networking.k8s.io", "Ingress", True),
        ("apiextensions.k8s.io", "CustomResourceDefinition", False),
        ("apiregistration.k8s.io", "APIService", False),
        ("", "Status", False),
        ("argoproj.io", "Application", False),
        ("apps", "Service", False),
    ],
)
def test_is_builtin(builtin: Schema, group: str, kind: str, expected: bool) -> None:
    assert builtin.is_builtin(group, kind) is expected


def test_crd_schema_from_cluster_document() -> None:
    """A CRD as a cluster publishes it: inline structural schema, int-or-string and quantities."""
    doc = {
        "components": {
            "schemas": {
                "io.argoproj.v1alpha1.Rollout": {
                    "type": "object",
                    "x-kubernetes-group-version-kind": [
                        {"group": "argoproj.io", "version": "v1alpha1", "kind": "Rollout"}
                    ],
                    "properties": {
                        "metadata": {
                            "allOf": [
                                {
                                    "$ref": "#/components/schemas/"
                                    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
                                }
                            ]
                        },
                        "spec": {
                            "type": "object",
                            "properties": {
                                "maxSurge": {"x-kubernetes-int-or-string": True},
                                "memory": {
                                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                                    "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))"
                                    "(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)"
                                    "|(\\.[0-9]+))))?$",
                                    "x-kubernetes-int-or-string": True,
                                },
                                "extra": {
                                    "type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True,
                                },
                                "steps": {
                                    "type": "array",
                                    "items": {"type": "object"},
                                    "x-kubernetes-list-type": "atomic",
                                },
                            },
                        },
                    },
                },
                "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
                    "type": "object",
                    "properties": {
                        "finalizers": {
                            "type": "array",
                            "items": {"type": "string", "default": ""},
                            "x-kubernetes-list-type": "set",
                            "x-kubernetes-patch-strategy": "merge",
                        }
                    },
                },
            }
        }
    }
    schema = Schema(definitions_from_openapi_v3(doc))
    rollout = schema.root("argoproj.io", "v1alpha1", "Rollout")
    assert rollout is not None
    assert not schema.is_builtin("argoproj.io", "Rollout")
    assert _at(rollout, "spec", "maxSurge").is_int_or_string
    assert _at(rollout, "spec", "memory").is_quantity
    assert not _at(rollout, "spec", "memory").is_int_or_string
    extra = _at(rollout, "spec", "extra")
    assert extra.is_preserve_unknown_fields
    assert extra.known_fields() is None
    assert _at(rollout, "spec", "steps").list_type == "atomic"
    assert _at(rollout, "metadata", "finalizers").patch_strategies == frozenset({"merge"})


def test_nodes_are_memoized(builtin: Schema) -> None:
    dep = _deployment(builtin)
    assert dep is builtin.root("apps", "v1", "Deployment")
    assert dep.path(*POD, "containers") is dep.path(*POD, "containers")
    # Container is one definition: reached from a Deployment or a Pod it is the same node
    pod = builtin.root("", "v1", "Pod")
    assert pod is not None
    assert _at(dep, *POD, "containers").items() is _at(pod, "spec", "containers").items()


def test_build_and_lookup_are_fast() -> None:
    definitions = load_builtin_definitions("1.33")
    start = time.perf_counter()
    schema = Schema(definitions)
    built = time.perf_counter() - start
    assert built < 0.05
    start = time.perf_counter()
    for _ in range(1000):
        schema.root("apps", "v1", "Deployment")
    assert (time.perf_counter() - start) / 1000 < 0.0001


def test_builtin_version_choice() -> None:
    versions = available_versions()
    assert (1, 33, 0) in versions
    assert load_builtin_definitions("1.33") is load_builtin_definitions("v1.33.5")
    assert load_builtin_definitions("1.10") is load_builtin_definitions(
        "{}.{}.{}".format(*versions[-1])
    )
    assert "io.k8s.api.apps.v1.Deployment" in load_builtin_definitions("1.33")
