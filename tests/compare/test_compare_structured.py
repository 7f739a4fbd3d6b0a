"""Server-side apply emulated on plain data (compare/smd.py, compare/structured.py,
compare/serverside.py), held to real kube-apiserver v1.36 dry-runs (testdata/apiserver/ssa)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import (
    defaults,
    openapi,
    pairs,
    schema,
    serverside,
    smd,
    ssa,
    structured,
)
from kubectl_gitdrift.compare.strategies import MANAGER, Choice
from tests.conftest import TESTDATA

SCHEMA = schema.Schema(openapi.load_builtin_definitions("1.33"))
RECORDINGS = sorted(p for p in (TESTDATA / "apiserver" / "ssa").iterdir() if p.is_dir())
# what the API server leaves out of every managedFields set (fieldmanager's stripMeta)
STRIPPED = {("f:apiVersion",), ("f:kind",), ("f:metadata", "f:name"), ("f:metadata", "f:namespace")}


def _type(group: str, version: str, kind: str) -> smd.Type:
    node = SCHEMA.root(group, version, kind)
    assert node is not None
    return smd.of(node)


def _recording(path: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], smd.Type]:
    live = json.loads((path / "live-before.json").read_text())
    desired = yaml.safe_load((path / "desired.yaml").read_text())
    answer = json.loads((path / "dryrun-response.json").read_text())
    group, _, version = desired["apiVersion"].rpartition("/")
    return live, desired, answer, _type(group, version, desired["kind"])


def _owners(live: dict[str, Any]) -> tuple[smd.FieldSet, smd.FieldSet]:
    last: smd.FieldSet = set()
    others: smd.FieldSet = set()
    for manager, operation, subresource, fields in smd.managers(live):
        if manager == MANAGER and operation == "Apply" and not subresource:
            last |= fields
        else:
            others |= fields
    return last, others


def _comparable(body: dict[str, Any]) -> dict[str, Any]:
    """What a dry-run changes besides the object: managedFields, generation; then defaulted."""
    out = copy.deepcopy(body)
    for key in ("managedFields", "generation", "resourceVersion"):
        out["metadata"].pop(key, None)
    out.pop("status", None)
    group, _, version = out["apiVersion"].rpartition("/")
    return defaults.apply_defaults(group, version, out["kind"], out)


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_emulation_agrees_with_the_recorded_dry_run(path: Path) -> None:
    live, desired, answer, t = _recording(path)
    last, others = _owners(live)
    predicted = smd.apply(live, desired, t, last, others)
    assert _comparable(predicted) == _comparable(answer)  # == on lists: order counts
    assert _comparable(predicted) != _comparable(live)


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_field_set_is_what_the_server_records_for_the_applier(path: Path) -> None:
    _, desired, answer, t = _recording(path)
    recorded = [f for m, _, _, f in smd.managers(answer) if m == MANAGER]
    assert len(recorded) == 1
    assert smd.field_set(desired, t) - STRIPPED == recorded[0]


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_webhook_removal_keeps_a_clean_dry_run_answer(path: Path) -> None:
    live, _, answer, t = _recording(path)
    owned = set().union(*(f for m, _, _, f in smd.managers(answer) if m == MANAGER))
    kept = serverside.remove_webhook_mutation(answer, live, t, owned)
    assert _comparable(kept) == _comparable(answer)


def test_webhook_added_fields_are_removed() -> None:
    live, _, answer, t = _recording(TESTDATA / "apiserver/ssa/03-deployment-listmap-merge-by-key")
    owned = set().union(*(f for m, _, _, f in smd.managers(answer) if m == MANAGER))
    mutated = copy.deepcopy(answer)
    mutated["metadata"]["annotations"]["webhook.example.com/injected"] = "yes"
    mutated["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "x"})
    kept = serverside.remove_webhook_mutation(mutated, live, t, owned)
    assert _comparable(kept) == _comparable(answer)


# --------------------------------------------------------------------------- merge rules

DEPLOY = _type("apps", "v1", "Deployment")
ENV = DEPLOY.field("spec").field("template").field("spec").field("containers").items()
ENV = ENV.field("env")


def _env(*names: str) -> list[dict[str, str]]:
    return [{"name": n, "value": n.lower()} for n in names]


@pytest.mark.parametrize(
    ("live", "config", "expected"),
    [
        (("A", "B"), ("B", "A"), ("B", "A")),  # config's order for shared items
        (("A", "X", "B"), ("B", "A"), ("X", "B", "A")),  # live's own items stay where they are
        (("A", "B"), ("A", "C", "B"), ("A", "C", "B")),  # a new item lands after its predecessor
        (("A",), ("B",), ("A", "B")),  # merged, not replaced
    ],
)
def test_keyed_list_order(live: tuple[str], config: tuple[str], expected: tuple[str]) -> None:
    merged = smd.merge(_env(*live), _env(*config), ENV)
    assert [i["name"] for i in merged] == list(expected)


def _deployment(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "n"},
        "spec": spec,
    }


def _pod(**pod: Any) -> dict[str, Any]:
    return {"template": {"spec": pod}}


def test_atomic_list_is_replaced_whole() -> None:
    live = _deployment(**_pod(tolerations=[{"operator": "Exists"}, {"key": "k"}]))
    config = _deployment(**_pod(tolerations=[{"key": "k"}]))
    merged = smd.apply(live, config, DEPLOY, set(), set())
    assert merged["spec"]["template"]["spec"]["tolerations"] == [{"key": "k"}]


def test_set_list_is_a_union_less_what_the_applier_dropped() -> None:
    live = _deployment()
    live["metadata"]["finalizers"] = ["a", "b"]
    config = _deployment()
    config["metadata"]["finalizers"] = ["c"]
    last = {("f:metadata", "f:finalizers", 'v:"a"')}
    merged = smd.apply(live, config, DEPLOY, last, set())
    assert merged["metadata"]["finalizers"] == ["b", "c"]


def test_dropped_field_goes_unless_another_manager_owns_it() -> None:
    live = _deployment(replicas=3, paused=True, revisionHistoryLimit=4)
    config = _deployment()
    last = {("f:spec", "f:replicas"), ("f:spec", "f:paused")}
    others = {("f:spec", "f:paused")}  # co-owned: only the applier lets go
    merged = smd.apply(live, config, DEPLOY, last, others)
    assert merged["spec"] == {"paused": True, "revisionHistoryLimit": 4}  # unowned default kept


def test_emptied_labels_remove_the_applier_s_labels() -> None:
    live = _deployment()
    live["metadata"]["labels"] = {"a": "1", "b": "2"}
    config = _deployment()
    config["metadata"]["labels"] = {}
    last = {("f:metadata", "f:labels", "f:a"), ("f:metadata", "f:labels", "f:b")}
    merged = smd.apply(live, config, DEPLOY, last, set())
    assert not merged["metadata"].get("labels")


def test_no_previous_apply_set_removes_nothing() -> None:
    live = _deployment(replicas=3)
    merged = smd.apply(live, _deployment(), DEPLOY, set(), set())
    assert merged["spec"] == {"replicas": 3}


def test_list_map_key_protocol_defaults_to_tcp() -> None:
    ports = DEPLOY.field("spec").field("template").field("spec").field("containers").items()
    ports = ports.field("ports")
    assert smd.item_element(ports, "list", {"containerPort": 80}, 0) == smd.item_element(
        ports, "list", {"containerPort": 80, "protocol": "TCP"}, 0
    )


def test_fields_v1_paths_are_canonical() -> None:
    raw = {"f:spec": {"f:ports": {'k:{"protocol":"TCP","port":80}': {".": {}, "f:name": {}}}}}
    assert smd.from_fields_v1(raw) == {
        ("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}'),
        ("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}', "f:name"),
    }


# --------------------------------------------------------------------------- whole comparisons


def _ctx(live: list[model.Manifest] = ()) -> ssa.Context:  # type: ignore[assignment]
    base = pairs.CompareContext(
        settings=model.Settings(), schema=SCHEMA, defaults=defaults.apply_defaults
    )
    choice = Choice(model.DiffStrategy.STRUCTURED_MERGE, "test")
    return ssa.Context(base, ssa.Types.of(SCHEMA, live), choice)


def _manifest(body: dict[str, Any]) -> model.Manifest:
    return model.Manifest(model.ObjectKey.of(body), body)


def test_no_managed_fields_is_unknown_never_synced() -> None:
    body = _deployment(replicas=1)
    drift = structured.compare(_manifest(body), _manifest(copy.deepcopy(body)), _ctx())
    assert drift.status is model.ResourceStatus.UNKNOWN
    assert "managedFields" in drift.reason


def test_custom_resource_without_its_crd_is_unknown() -> None:
    body = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    live = copy.deepcopy(body)
    live["metadata"]["managedFields"] = [
        {"manager": MANAGER, "operation": "Apply", "fieldsV1": {"f:spec": {}}}
    ]
    drift = structured.compare(_manifest(body), _manifest(live), _ctx())
    assert drift.status is model.ResourceStatus.UNKNOWN
    assert "CRD" in drift.reason


def test_recorded_configmap_is_out_of_sync_by_the_dropped_keys() -> None:
    live, desired, _, _ = _recording(TESTDATA / "apiserver/ssa/01-configmap-dropped-keys-removed")
    drift = structured.compare(_manifest(desired), _manifest(live), _ctx())
    assert drift.status is model.ResourceStatus.OUT_OF_SYNC
    ops = {(model.display_path(c.path), c.op) for c in drift.changes}
    assert ("data.FLAG_LEGACY_COUPONS", model.Op.REMOVE) in ops
    assert ("data.FLAG_DARK_MODE", model.Op.CHANGE) in ops


def test_server_side_diff_uses_the_dry_run_answer() -> None:
    path = TESTDATA / "apiserver/ssa/02-service-co-owned-fields-kept"
    live, desired, answer, _ = _recording(path)
    ctx = _ctx()
    ctx = ssa.Context(ctx.base, ctx.types, Choice(model.DiffStrategy.SERVER_SIDE_DIFF, ""))
    drift = serverside.compare(_manifest(desired), _manifest(live), ctx, answer)
    paths = [model.display_path(c.path) for c in drift.changes]
    assert paths == ["metadata.labels.team"]  # only one field differs from live


def test_server_side_diff_answer_gets_the_ignore_rules() -> None:
    path = TESTDATA / "apiserver/ssa/02-service-co-owned-fields-kept"
    live, desired, answer, _ = _recording(path)
    rule = model.IgnoreRule(group="", kind="Service", json_pointers=("/metadata/labels/team",))
    base = pairs.CompareContext(
        settings=model.Settings(),
        schema=SCHEMA,
        defaults=defaults.apply_defaults,
        ignore_rules=[("application", rule)],
    )
    choice = Choice(model.DiffStrategy.SERVER_SIDE_DIFF, "")
    ctx = ssa.Context(base, ssa.Types.of(SCHEMA, []), choice)
    drift = serverside.compare(_manifest(desired), _manifest(live), ctx, answer)
    assert drift.status is model.ResourceStatus.SYNCED
    assert [model.display_path(s.change.path) for s in drift.suppressed] == ["metadata.labels.team"]


def test_git_object_the_server_would_refuse_is_unknown() -> None:
    body = _deployment(template={"spec": {"containers": [{"name": "a"}, {"name": "a"}]}})
    live = copy.deepcopy(body)
    live["metadata"]["managedFields"] = [
        {"manager": MANAGER, "operation": "Apply", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
    ]
    drift = structured.compare(_manifest(body), _manifest(live), _ctx())
    assert drift.status is model.ResourceStatus.UNKNOWN
    assert "same key" in drift.reason


@pytest.mark.parametrize("include", [False, True])
def test_webhook_mutations_count_only_with_include_mutation_webhook(include: bool) -> None:
    path = TESTDATA / "apiserver/ssa/02-service-co-owned-fields-kept"
    live, desired, answer, _ = _recording(path)
    desired["metadata"]["labels"]["team"] = live["metadata"]["labels"]["team"]  # git = live
    mutated = copy.deepcopy(answer)
    mutated["metadata"]["labels"]["team"] = live["metadata"]["labels"]["team"]
    mutated["metadata"]["annotations"]["webhook.example.com/injected"] = "yes"
    ctx = _ctx()
    choice = Choice(model.DiffStrategy.SERVER_SIDE_DIFF, "", include_mutation_webhook=include)
    ctx = ssa.Context(ctx.base, ctx.types, choice)
    drift = serverside.compare(_manifest(desired), _manifest(live), ctx, mutated)
    paths = [model.display_path(c.path) for c in drift.changes]
    assert paths == (['metadata.annotations["webhook.example.com/injected"]'] if include else [])
