"""Invariants of normalize and diff (hypothesis), and of every scenario's recorded objects."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import changes, defaults, legacy, normalize, pairs
from kubectl_gitdrift.compare.openapi import load_builtin_definitions
from kubectl_gitdrift.compare.schema import Schema
from tests.conftest import TESTDATA, load_make_repo

SCENARIOS = sorted(p for p in (TESTDATA / "scenarios").iterdir() if (p / "repo-src").is_dir())
SCHEMA = Schema(load_builtin_definitions("1.33"))
CTX = pairs.CompareContext(model.Settings(), SCHEMA, defaults.apply_defaults)
DEPLOYMENT = SCHEMA.root("apps", "v1", "Deployment")

# --------------------------------------------------------------------------- strategies

keys = st.sampled_from(["a", "b", "c", "name", "x.y/z", "~k"])
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "s", "100m", "0.2"])
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=12,
)
objects = st.dictionaries(keys, json_values, max_size=5)

resource_names = st.sampled_from(["cpu", "memory"])
quantities = st.sampled_from(["0.2", "200m", "1", "1000m", "1Gi", "1024Mi", "512Mi", 0.5, 2])
containers = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(["app", "side", "init"]),
            "image": st.sampled_from(["nginx:1.27", "busybox"]),
        },
        optional={
            "args": st.lists(st.sampled_from(["--a", "--b"]), max_size=2),
            "env": st.lists(
                st.fixed_dictionaries(
                    {"name": st.sampled_from(["A", "B"]), "value": st.sampled_from(["1", "2"])}
                ),
                max_size=2,
                unique_by=lambda e: e["name"],
            ),
            "resources": st.fixed_dictionaries(
                {},
                optional={
                    "requests": st.dictionaries(st.sampled_from(["cpu", "memory"]), quantities)
                },
            ),
            "stdin": st.booleans(),
        },
    ),
    max_size=3,
    unique_by=lambda c: c["name"],
)
deployments = st.builds(
    lambda cs, replicas, paused: {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {
            "replicas": replicas,
            "paused": paused,
            "template": {"spec": {"containers": cs}},
        },
    },
    containers,
    st.one_of(st.integers(0, 5), st.sampled_from([2.0, 3.0])),
    st.booleans(),
)


def _widget(spec: dict[str, Any]) -> model.Manifest:
    body = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": spec,
    }
    return model.Manifest(model.ObjectKey.of(body), body)


def _leaves(value: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(value, dict) and value:
        return [p for k, v in value.items() for p in _leaves(v, (*prefix, k))]
    return [prefix]


def _pointer(path: tuple[str, ...]) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in path)


# --------------------------------------------------------------------------- properties

FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(objects)
def test_an_object_never_drifts_from_itself(spec: dict[str, Any]) -> None:
    drift = legacy.compare(_widget(spec), _widget(copy.deepcopy(spec)), CTX)
    assert drift.changes == ()
    assert drift.status is model.ResourceStatus.SYNCED


@FAST
@given(deployments)
def test_a_deployment_never_drifts_from_itself(body: dict[str, Any]) -> None:
    manifest = model.Manifest(model.ObjectKey.of(body), body)
    assert (
        legacy.compare(manifest, model.Manifest(manifest.key, copy.deepcopy(body)), CTX).changes
        == ()
    )


@FAST
@given(deployments)
def test_normalizing_twice_equals_once(body: dict[str, Any]) -> None:
    once = normalize.remarshal(body, DEPLOYMENT)
    assert normalize.remarshal(once, DEPLOYMENT) == once
    key = model.ObjectKey.of(body)
    twice = copy.deepcopy(once)
    normalize.normalize_object(once, key, CTX.settings)
    normalize.normalize_object(twice, key, CTX.settings)
    normalize.normalize_object(twice, key, CTX.settings)
    assert once == twice


@FAST
@given(objects, st.data())
def test_an_ignore_rule_removes_only_what_it_names(
    spec: dict[str, Any], data: st.DataObject
) -> None:
    leaves = [p for p in _leaves(spec) if p]
    if not leaves:
        return
    target = data.draw(st.sampled_from(leaves))
    rule = normalize.ActiveRule(model.IgnoreRule("*", "*", json_pointers=(_pointer(target),)), "t")
    out = normalize.apply_ignores(copy.deepcopy(spec), [rule])
    assert model.lookup(out, target)[0] is False
    for leaf in leaves:
        if leaf[: len(target)] != target:
            assert model.lookup(out, leaf) == model.lookup(spec, leaf)


@FAST
@given(objects, objects)
def test_swapping_sides_swaps_add_and_remove(a: dict[str, Any], b: dict[str, Any]) -> None:
    forward = changes.changes(changes.comparable(a, None), changes.comparable(b, None))
    backward = changes.changes(changes.comparable(b, None), changes.comparable(a, None))
    flip = {model.Op.ADD: model.Op.REMOVE, model.Op.REMOVE: model.Op.ADD}
    mirrored = sorted(
        (model.display_path(c.path), flip.get(c.op, c.op).value, repr(c.live), repr(c.desired))
        for c in forward
    )
    assert mirrored == sorted(
        (model.display_path(c.path), c.op.value, repr(c.desired), repr(c.live)) for c in backward
    )
    for change in forward:  # every path resolves on the side it claims
        if change.op is not model.Op.ADD:
            assert model.lookup(b, change.path)[0]
        if change.op is not model.Op.REMOVE:
            assert model.lookup(a, change.path)[0]


# --------------------------------------------------------------------------- scenarios


def _items(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    """A kubectl List's items, or a gitdrift Snapshot's applications and objects."""
    if snapshot.get("kind") == "Snapshot":
        return [*(snapshot.get("applications") or []), *(snapshot.get("objects") or [])]
    return list(snapshot["items"])


def _live_objects(scenario: Path) -> list[dict[str, Any]]:
    spec = yaml.safe_load((scenario / "scenario.yaml").read_text(encoding="utf-8"))
    snapshot = yaml.safe_load((scenario / spec["snapshot"]).read_text(encoding="utf-8"))
    return [i for i in _items(snapshot) if i["kind"] not in ("Application", "ConfigMap")]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_recorded_objects_never_drift_from_themselves(scenario: Path) -> None:
    for body in _live_objects(scenario):
        manifest = model.Manifest(model.ObjectKey.of(body), body)
        drift = legacy.compare(manifest, model.Manifest(manifest.key, copy.deepcopy(body)), CTX)
        assert drift.changes == (), manifest.key
        node = pairs.type_of(SCHEMA, manifest.key, body["apiVersion"].rpartition("/")[2])
        once = normalize.remarshal(body, node)
        assert normalize.remarshal(once, node) == once


# Scenarios that serve charts record chart versions, and `${REPO_HEAD}` for a repo whose files
# get the servers' URLs substituted (tests/test_scenarios.py): their revisions are not pinned here.
PINNED = [
    p
    for p in SCENARIOS
    if not yaml.safe_load((p / "scenario.yaml").read_text(encoding="utf-8")).get("serve")
]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git on PATH")
@pytest.mark.parametrize("scenario", PINNED, ids=lambda p: p.name)
def test_scenario_snapshot_pins_the_built_sha(scenario: Path, tmp_path: Path) -> None:
    """The Application in the snapshot must name the commit repo-src really builds."""
    shas = load_make_repo().build_repo(scenario / "repo-src", tmp_path / "repo")
    snapshot = yaml.safe_load((scenario / "snapshot.yaml").read_text(encoding="utf-8"))
    (app,) = [item for item in _items(snapshot) if item["kind"] == "Application"]
    sync = app["status"]["sync"]
    # a multi-source Application records one revision per source (status.sync.revisions)
    assert set(sync.get("revisions") or [sync["revision"]]) == {shas[-1]}
    history = app["status"].get("history") or []  # none before the first successful sync
    assert {r for h in history for r in h.get("revisions") or [h["revision"]]} <= set(shas)


def _whole_diff(predicted: Any, live: Any, node: Any) -> list[model.Change]:
    """The comparison as it was defined first: comparable forms of both whole objects."""
    return changes.changes(changes.comparable(predicted, node), changes.comparable(live, node))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(objects, objects)
def test_diff_walks_only_differing_subtrees_untyped(a: dict[str, Any], b: dict[str, Any]) -> None:
    """diff_bodies builds comparable forms only where the maps differ; the changes are those of
    comparing the whole objects."""
    assert changes.diff_bodies(a, b, None, strategic=True) == _whole_diff(a, b, None)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(deployments, deployments)
def test_diff_walks_only_differing_subtrees_typed(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Same, through merge-keyed lists (containers by name, env by name) of a real schema."""
    assert changes.diff_bodies(a, b, DEPLOYMENT, strategic=True) == _whole_diff(a, b, DEPLOYMENT)
