"""Invariants of the server-side apply emulation (hypothesis): merging is idempotent, applying
what was applied changes nothing, an applied field is there afterwards, and managedFields'
fieldsV1 round-trips."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_gitdrift.compare import openapi, schema, smd

SCHEMA = schema.Schema(openapi.load_builtin_definitions("1.33"))
DEPLOY = smd.of(SCHEMA.root("apps", "v1", "Deployment"))

names = st.sampled_from(["A", "B", "C", "D"])
labels = st.dictionaries(
    st.sampled_from(["app", "tier", "team", "x.io/y"]),
    st.text("ab", max_size=2),
    min_size=1,  # `labels: {}` merged onto live labels is not empty, so no longer a member
    max_size=3,
)
env = st.lists(
    st.builds(lambda n, v: {"name": n, "value": v}, names, st.sampled_from(["1", "2"])),
    max_size=4,
    unique_by=lambda e: e["name"],
)
ports = st.lists(
    st.builds(
        lambda p, proto: {"containerPort": p, **({"protocol": proto} if proto else {})},
        st.sampled_from([80, 443, 8080]),
        st.sampled_from(["", "TCP", "UDP"]),
    ),
    max_size=3,
    unique_by=lambda p: (p["containerPort"], p.get("protocol") or "TCP"),
)
tolerations = st.lists(st.builds(lambda k: {"key": k}, names), max_size=2)


@st.composite
def deployments(draw: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": draw(st.sampled_from(["i:1", "i:2"]))}
    if draw(st.booleans()):
        container["env"] = draw(env)
    if draw(st.booleans()):
        container["ports"] = draw(ports)
    pod: dict[str, Any] = {"containers": [container]}
    if draw(st.booleans()):
        pod["tolerations"] = draw(tolerations)
    spec: dict[str, Any] = {"template": {"spec": pod}}
    if draw(st.booleans()):
        spec["replicas"] = draw(st.integers(0, 3))
    metadata: dict[str, Any] = {"name": "d", "namespace": "n"}
    if draw(st.booleans()):
        metadata["labels"] = draw(labels)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata, "spec": spec}


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(deployments())
def test_merging_an_object_with_itself_changes_nothing(body: dict[str, Any]) -> None:
    assert smd.merge(body, copy.deepcopy(body), DEPLOY) == body


@FAST
@given(deployments(), deployments())
def test_applying_again_what_was_applied_changes_nothing(
    live: dict[str, Any], config: dict[str, Any]
) -> None:
    once = smd.apply(live, config, DEPLOY, set(), set())
    applied = smd.field_set(config, DEPLOY)
    assert smd.apply(once, config, DEPLOY, applied, set()) == once


@FAST
@given(deployments(), deployments(), deployments())
def test_applied_fields_are_there_after_any_previous_apply(
    live: dict[str, Any], previous: dict[str, Any], config: dict[str, Any]
) -> None:
    last = smd.field_set(previous, DEPLOY)
    result = smd.apply(live, config, DEPLOY, last, set())
    assert smd.field_set(config, DEPLOY) <= smd.field_set(result, DEPLOY)


@FAST
@given(deployments(), deployments())
def test_what_another_manager_owns_is_never_pruned(
    live: dict[str, Any], config: dict[str, Any]
) -> None:
    owned = smd.field_set(live, DEPLOY)
    result = smd.apply(live, config, DEPLOY, owned, owned)  # co-owned: only released
    assert smd.apply(live, config, DEPLOY, set(), set()) == result


@FAST
@given(deployments())
def test_fields_v1_round_trip(body: dict[str, Any]) -> None:
    paths = smd.field_set(body, DEPLOY)
    assert smd.from_fields_v1(smd.to_fields_v1(paths)) == paths


@FAST
@given(deployments(), deployments())
def test_the_quick_no_prune_check_is_sound(
    previous: dict[str, Any], config: dict[str, Any]
) -> None:
    last = smd.field_set(previous, DEPLOY)
    if smd.applied_again(last, config, DEPLOY):
        assert last <= smd.field_set(config, DEPLOY)
    assert smd.applied_again(smd.field_set(config, DEPLOY), config, DEPLOY)


@FAST
@given(deployments(), deployments())
def test_the_check_reads_fields_v1_as_it_reads_a_field_set(
    previous: dict[str, Any], config: dict[str, Any]
) -> None:
    last = smd.field_set(previous, DEPLOY)
    raw = smd.to_fields_v1(last)
    assert smd.applied_again_raw(raw, config, DEPLOY) == smd.applied_again(last, config, DEPLOY)
