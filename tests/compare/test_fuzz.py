"""Fuzzing the untrusted-input edges and the diff core with hypothesis.

- yamlio never raises anything but a GitDriftError, whatever text or bytes it is given, and
  reads back what a YAML dumper wrote;
- reading a snapshot and legacy.compare never crash on Kubernetes-like objects (well-formed
  or not), and the diff keeps its invariants on them: an object never drifts from itself,
  normalizing twice equals normalizing once, swapping sides swaps ADD and REMOVE;
- Secret fingerprinting never lets a value through.

tests/compare/test_properties.py holds the invariants on plain nested dicts and Deployments;
this file extends them to every kind gitdrift treats specially. Runs are bounded (max_examples) and
deterministic (derandomize: the same examples on every run, no example database).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_gitdrift import model, yamlio
from kubectl_gitdrift.compare import changes, defaults, legacy, normalize, pairs
from kubectl_gitdrift.compare.openapi import load_builtin_definitions
from kubectl_gitdrift.compare.schema import Schema
from kubectl_gitdrift.errors import GitDriftError, SnapshotError
from kubectl_gitdrift.live import fingerprints, snapshot

SCHEMA = Schema(load_builtin_definitions("1.33"))
CTX = pairs.CompareContext(model.Settings(), SCHEMA, defaults.apply_defaults)


def bounded(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# --------------------------------------------------------------------------- strategies

names = st.sampled_from(["web", "db", "a.b", "x-1"])
label_keys = st.sampled_from(["app", "app.kubernetes.io/name", "team", "x.y/z~"])
short_text = st.text(max_size=8)  # any code point but surrogates
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.sampled_from(["", "100m", "0.5", "1Gi", "true", "2026-11-30T04:00:00Z", "~", "null"]),
    short_text,
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=10,
)
label_maps = st.dictionaries(label_keys, st.sampled_from(["web", "", "1", "a b"]), max_size=3)


@st.composite
def metadata(draw: st.DrawFn, *, namespace: str = "ns") -> dict[str, Any]:
    md: dict[str, Any] = {"name": draw(names), "namespace": namespace}
    if draw(st.booleans()):
        md["labels"] = draw(label_maps)
    if draw(st.booleans()):
        md["annotations"] = draw(
            st.dictionaries(
                st.sampled_from(
                    [
                        "argocd.argoproj.io/tracking-id",
                        "kubectl.kubernetes.io/last-applied-configuration",
                        "note",
                    ]
                ),
                st.one_of(short_text, st.just('{"data":{"a":"b"}}'), st.just("{not json")),
                max_size=2,
            )
        )
    if draw(st.booleans()):
        md["managedFields"] = [
            {
                "manager": draw(st.sampled_from(["kubectl", "argocd-controller", "hpa"])),
                "operation": draw(st.sampled_from(["Update", "Apply"])),
                "fieldsType": "FieldsV1",
                "fieldsV1": draw(
                    st.sampled_from(
                        [{}, {"f:spec": {"f:replicas": {}}}, {"f:data": {".": {}, "f:a": {}}}]
                    )
                ),
            }
        ]
    for extra in ("uid", "resourceVersion", "creationTimestamp", "generation"):
        if draw(st.booleans()):
            md[extra] = draw(st.sampled_from(["1", "2026-11-30T04:00:00Z", 3]))
    return md


quantities = st.sampled_from(["100m", "0.1", "1", "1Gi", "1024Mi", 2, 0.5])
containers = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["app", "side"]), "image": st.sampled_from(["nginx", "busybox"])},
        optional={
            "ports": st.lists(
                st.fixed_dictionaries(
                    {"containerPort": st.sampled_from([80, 443])},
                    optional={"protocol": st.sampled_from(["TCP", "UDP"])},
                ),
                max_size=2,
            ),
            "resources": st.fixed_dictionaries(
                {}, optional={"limits": st.dictionaries(st.sampled_from(["cpu"]), quantities)}
            ),
            "env": st.lists(
                st.fixed_dictionaries({"name": st.sampled_from(["A", "B"]), "value": short_text}),
                max_size=2,
            ),
        },
    ),
    max_size=2,
)


@st.composite
def kube_objects(draw: st.DrawFn) -> dict[str, Any]:
    """A Kubernetes-like object of one of the kinds gitdrift treats specially (or a CRD)."""
    kind = draw(
        st.sampled_from(
            ["ConfigMap", "Secret", "Service", "Deployment", "ClusterRole", "Widget", "Endpoints"]
        )
    )
    md = draw(metadata(namespace="" if kind == "ClusterRole" else "ns"))
    body: dict[str, Any] = {"kind": kind, "metadata": md}
    if kind == "ConfigMap":
        body.update(apiVersion="v1", data=draw(st.dictionaries(st.text(max_size=5), short_text)))
    elif kind == "Secret":
        body.update(apiVersion="v1", type="Opaque")
        if draw(st.booleans()):
            raw = draw(st.dictionaries(st.sampled_from(["a", "b"]), st.binary(max_size=8)))
            body["data"] = {k: base64.b64encode(v).decode() for k, v in raw.items()}
        if draw(st.booleans()):
            body["stringData"] = draw(st.dictionaries(st.sampled_from(["a", "c"]), short_text))
    elif kind == "Service":
        body.update(
            apiVersion="v1",
            spec={
                "ports": draw(
                    st.lists(
                        st.fixed_dictionaries(
                            {"port": st.sampled_from([80, 443])},
                            optional={"protocol": st.sampled_from(["TCP", "UDP"])},
                        ),
                        max_size=2,
                    )
                ),
                **draw(st.fixed_dictionaries({}, optional={"clusterIP": st.just("10.0.0.1")})),
            },
        )
    elif kind == "Deployment":
        body.update(
            apiVersion="apps/v1",
            spec={
                "replicas": draw(st.one_of(st.none(), st.integers(0, 3))),
                "template": {"spec": {"containers": draw(containers)}},
            },
        )
    elif kind == "ClusterRole":
        body.update(
            apiVersion="rbac.authorization.k8s.io/v1",
            rules=draw(
                st.one_of(
                    st.none(),
                    st.lists(
                        st.fixed_dictionaries(
                            {"verbs": st.lists(st.sampled_from(["get", "list"]), max_size=2)}
                        ),
                        max_size=2,
                    ),
                )
            ),
        )
    elif kind == "Endpoints":
        body.update(apiVersion="v1", subsets=draw(st.one_of(st.none(), st.just([]))))
    else:
        body.update(apiVersion="example.com/v1", spec=draw(values))
    if draw(st.booleans()):
        body["status"] = draw(values)
    return body


def twin(body: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    """Another object with the same identity, its contents redrawn or mutated."""
    other = copy.deepcopy(body)
    for field in ("data", "spec", "rules", "stringData"):
        if field in other and data.draw(st.booleans()):
            other[field] = data.draw(values)
    if data.draw(st.booleans()):
        other["metadata"]["labels"] = data.draw(label_maps)
    return other


def manifest(body: dict[str, Any]) -> model.Manifest:
    return model.Manifest(model.ObjectKey.of(body), body)


# --------------------------------------------------------------------------- yamlio

YAML_TOKENS = st.sampled_from(
    [
        "a: 1", "- x", "&a", "*a", "<<: *a", "? ", ": ", "{", "}", "[", "]", ",", "---", "...",
        "!!python/object:os.system", "!!binary", "%YAML 1.2", "\t", "  ", "\n", "'", '"', "#",
        "kind: List", "items:", "apiVersion: v1", "a: &x [*x]", "\ufeff", "\x00", "\x85", "|",
        ">-", "1e400", "0x1F", "~", "{a: 1, a: 2}", "[" * 50,
    ]
)  # fmt: skip
yaml_like = st.lists(YAML_TOKENS, max_size=25).map("".join)


@bounded(300)
@given(st.one_of(yaml_like, st.text(max_size=200), st.binary(max_size=200)))
def test_yamlio_raises_only_gitdrift_errors(text: str | bytes) -> None:
    try:
        docs = yamlio.load_documents(text, "fuzz.yaml")
    except GitDriftError as exc:
        message = exc.message
        docs = []
    else:
        message = "fuzz.yaml"
    assert message.startswith("fuzz.yaml")  # one line, naming the input
    assert "\n" not in message
    assert all(isinstance(d, dict) for d in docs)
    for doc in docs:
        json.dumps(doc)  # plain data: no Python objects, no cycles


@bounded(100)
@given(st.lists(kube_objects(), min_size=1, max_size=3), st.sampled_from(["yaml", "json"]))
def test_yamlio_reads_back_what_was_written(objects: list[dict[str, Any]], form: str) -> None:
    if form == "json":
        text = "\n".join(json.dumps(o) for o in objects)
    else:
        text = yaml.safe_dump_all(objects)  # escapes NEL & co (raw, PyYAML reads them as breaks)
    assert yamlio.load_documents(text, "round.yaml") == objects


@bounded(100)
@given(kube_objects(), st.integers(1, 400))
def test_truncated_input_is_a_clean_error_or_a_prefix(body: dict[str, Any], cut: int) -> None:
    for text in (json.dumps(body), yaml.safe_dump(body)):
        with contextlib.suppress(GitDriftError):
            yamlio.load_documents(text[:cut], "cut.yaml")


# --------------------------------------------------------------------------- snapshot


@bounded(100)
@given(st.lists(st.one_of(kube_objects(), st.dictionaries(short_text, values)), max_size=4))
def test_reading_any_objects_never_crashes(docs: list[dict[str, Any]]) -> None:
    """What a snapshot file may hold, read as the CLI reads it: a live state, or a
    SnapshotError naming the file (a damaged object), never a crash further on."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.json"
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
        refused: SnapshotError | None = None
        try:
            state = snapshot.load(path)
        except SnapshotError as exc:
            refused = exc
    if refused is not None:
        assert str(path) in refused.message
        return
    assert len(state.objects) + len(state.applications) <= len(docs)
    assert list(state.objects) == sorted(state.objects, key=lambda m: m.key)


@bounded(100)
@given(kube_objects().filter(lambda b: b["kind"] == "Secret"), st.binary(min_size=32, max_size=32))
def test_fingerprinting_keeps_no_secret_value(body: dict[str, Any], key: bytes) -> None:
    body["stringData"] = {"s": "plain-value-7c1d"}
    body["data"] = {**(body.get("data") or {}), "d": base64.b64encode(b"plain-value-7c1d").decode()}
    applied = {"stringData": {"s": "plain-value-7c1d"}, "data": {"d": body["data"]["d"]}}
    body["metadata"].setdefault("annotations", {})[fingerprints.LAST_APPLIED] = json.dumps(applied)
    redacted = fingerprints.redact_secret(body, key)
    text = json.dumps(redacted)
    assert "plain-value-7c1d" not in text
    assert body["data"]["d"] not in text
    assert fingerprints.redact_secret(body, key) == redacted  # deterministic under one key


# --------------------------------------------------------------------------- diff


@bounded(150)
@given(kube_objects())
def test_no_kind_ever_drifts_from_itself(body: dict[str, Any]) -> None:
    drift = legacy.compare(manifest(body), manifest(copy.deepcopy(body)), CTX)
    assert drift.changes == ()
    assert drift.status is model.ResourceStatus.SYNCED


@bounded(150)
@given(kube_objects())
def test_normalizing_any_kind_twice_equals_once(body: dict[str, Any]) -> None:
    key = model.ObjectKey.of(body)
    node = pairs.type_of(SCHEMA, key, body["apiVersion"].rpartition("/")[2])
    once = normalize.remarshal(copy.deepcopy(body), node)
    assert normalize.remarshal(copy.deepcopy(once), node) == once
    twice = copy.deepcopy(once)
    normalize.normalize_object(once, key, CTX.settings)
    normalize.normalize_object(twice, key, CTX.settings)
    normalize.normalize_object(twice, key, CTX.settings)
    assert once == twice


@bounded(200)
@given(kube_objects(), st.data())
def test_compare_never_crashes_and_masks_secrets(body: dict[str, Any], data: st.DataObject) -> None:
    other = twin(body, data)
    for desired, live in ((body, other), (other, body), (body, None), (None, other)):
        drift = legacy.compare(
            manifest(copy.deepcopy(desired)) if desired is not None else None,
            manifest(copy.deepcopy(live)) if live is not None else None,
            CTX,
        )
        assert drift.status in model.ResourceStatus
        if body["kind"] == "Secret":
            assert all(
                c.secret for c in drift.changes if c.path[:1] in (("data",), ("stringData",))
            )
        json.dumps([model.display_path(c.path) for c in drift.changes])


@bounded(150)
@given(kube_objects(), st.data())
def test_swapping_live_and_desired_swaps_add_and_remove(
    body: dict[str, Any], data: st.DataObject
) -> None:
    other = twin(body, data)
    a, b = (
        changes.comparable(copy.deepcopy(body), None),
        changes.comparable(copy.deepcopy(other), None),
    )
    forward = changes.changes(a, b)
    backward = changes.changes(b, a)
    flip = {model.Op.ADD: model.Op.REMOVE, model.Op.REMOVE: model.Op.ADD}
    assert sorted(
        (model.display_path(c.path), flip.get(c.op, c.op).value) for c in forward
    ) == sorted((model.display_path(c.path), c.op.value) for c in backward)
