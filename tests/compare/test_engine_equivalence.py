"""The optimised engine functions give exactly what the reference versions gave (issue 18):
same values, same types (True is not 1, 1.0 is not 1), same key order, on random objects shaped
like Kubernetes ones (merge-keyed lists, retainKeys maps, nulls, scalars of every JSON type),
typed by the schema and untyped, strategic and JSON merge. The references are the functions as
they stood before the engine work, kept verbatim in tests/support/engine_reference.py."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import masking, merge, normalize, quantity, smd
from kubectl_gitdrift.compare.openapi import load_builtin_definitions
from kubectl_gitdrift.compare.schema import Schema
from tests.support import engine_reference as ref

SCHEMA = Schema(load_builtin_definitions("1.33"))
NODES = {
    "Deployment": SCHEMA.root("apps", "v1", "Deployment"),
    "PodSpec": SCHEMA.definition("io.k8s.api.core.v1.PodSpec"),
    "none": None,
}
MANY = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def strict(value: Any) -> Any:
    """A form equal only for values equal in type, content and key order."""
    if isinstance(value, dict):
        return ("dict", type(value).__name__, tuple((k, strict(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("list", type(value).__name__, tuple(strict(v) for v in value))
    return (type(value).__name__, repr(value))


# --------------------------------------------------------------------------- objects

FIELDS = [
    "metadata", "labels", "annotations", "name", "namespace", "spec", "replicas", "template",
    "containers", "image", "env", "value", "ports", "containerPort", "protocol", "strategy",
    "type", "rollingUpdate", "maxSurge", "volumes", "configMap", "emptyDir", "finalizers",
    "args", "paused", "resources", "limits", "cpu", "x", "y",
]  # fmt: skip
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, 2, 1.0, 2.5, "", "a", "b", "1", "100m", "0.1"]),
)


def _named(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A merge-keyed list: items with a `name` (sometimes duplicated or missing)."""
    item = st.builds(
        lambda name, rest: {**({"name": name} if name != "-" else {}), **rest},
        st.sampled_from(["a", "b", "c", "-"]),
        st.dictionaries(st.sampled_from(FIELDS), inner, max_size=3),
    )
    return st.lists(item, max_size=3)


values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        _named(inner),
        st.dictionaries(st.sampled_from(FIELDS), inner, max_size=4),
    ),
    max_leaves=16,
)
objects = st.dictionaries(st.sampled_from(FIELDS), values, max_size=5)


@st.composite
def variant(draw: st.DrawFn, value: Any, top: bool = False) -> Any:
    """`value` with some changes: keys dropped, added or changed, list items changed, a scalar
    swapped for its twin; `top`: an object stays an object."""
    choice = draw(st.integers(0, 9))
    if choice == 0 and not top:
        return draw(values)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if draw(st.integers(0, 9)) == 0:
                continue
            out[k] = draw(variant(v)) if draw(st.booleans()) else v
        if draw(st.integers(0, 4)) == 0:
            out[draw(st.sampled_from(FIELDS))] = draw(values)
        return out
    if isinstance(value, list):
        items = [draw(variant(v)) if draw(st.booleans()) else v for v in value]
        if items and draw(st.integers(0, 5)) == 0:
            items.reverse()
        return items
    if choice < 4 and repr(value) in TWINS:  # equal in Python, not in JSON: 1, 1.0, True
        return draw(st.sampled_from(TWINS[repr(value)]))
    return value


TWINS = {
    "0": [0, 0.0, False],
    "0.0": [0, 0.0, False],
    "False": [0, 0.0, False],
    "1": [1, 1.0, True],
    "1.0": [1, 1.0, True],
    "True": [1, 1.0, True],
}


@st.composite
def triples(draw: st.DrawFn) -> tuple[Any, Any, Any, str]:
    """(orig, desired, live, how orig relates to desired): live and orig near desired."""
    base = draw(objects)
    desired = draw(variant(base, top=True))
    live = draw(variant(desired, top=True))
    how = draw(st.sampled_from(["same object", "variant", "missing", "none"]))
    orig = {
        "same object": desired,
        "variant": draw(variant(desired, top=True)),
        "missing": None,
        "none": None,
    }[how]
    return orig, desired, live, how


def _sentinel(module: Any, orig: Any, how: str) -> Any:
    return module._MISSING if how == "missing" else orig


# --------------------------------------------------------------------------- properties


@MANY
@given(triples(), st.sampled_from(sorted(NODES)), st.booleans(), st.booleans())
def test_predict_matches_the_reference(
    t: tuple[Any, Any, Any, str], node_name: str, strategic: bool, retain: bool
) -> None:
    orig, desired, live, how = t
    node = NODES[node_name]
    want = ref.predict(
        _sentinel(ref, orig, how), desired, live, node, strategic=strategic, retain=retain
    )
    got = merge.predict(
        _sentinel(merge, orig, how), desired, live, node, strategic=strategic, retain=retain
    )
    assert strict(got) == strict(want)


@MANY
@given(values)
def test_without_nulls_matches_the_reference(value: Any) -> None:
    assert strict(merge._without_nulls(value)) == strict(ref._without_nulls(value))


# --------------------------------------------------------------------------- remarshal

KINDS = {
    "Deployment": SCHEMA.root("apps", "v1", "Deployment"),
    "StatefulSet": SCHEMA.root("apps", "v1", "StatefulSet"),
    "Service": SCHEMA.root("", "v1", "Service"),
    "Secret": SCHEMA.root("", "v1", "Secret"),
    "Role": SCHEMA.root("rbac.authorization.k8s.io", "v1", "Role"),
}
EDGE = {
    "string": st.sampled_from(["", "a", "0", "100m"]),
    "integer": st.sampled_from([0, 1, 3, 2.0, 0.0]),
    "number": st.sampled_from([0, 1.5, 2.0, 7]),
    "boolean": st.sampled_from([False, True]),
}
QUANTITIES = st.sampled_from(["0.2", "200m", "1", "1Gi", "1024Mi", " 5 ", "1e3", 0.5, 2, 2.0])
WRONG = st.sampled_from(["1", True, "true", 1.5, [], {}, "x"])  # a JSON type Go would reject


@st.composite
def typed(draw: st.DrawFn, node: Any, depth: int = 0) -> Any:
    """A value for `node`, mostly of the right shape: nulls, zero values, wrong JSON types and
    unknown fields now and then."""
    roll = draw(st.integers(0, 99))
    if node is None or roll == 0:
        return draw(values)
    if roll == 1:
        return draw(WRONG)
    if roll < 5:
        return None
    if node.is_quantity:
        return draw(QUANTITIES)
    if node.is_int_or_string:
        return draw(st.sampled_from([0, 8080, "http", "25%", 1.0, ""]))
    if node.scalar_type is not None:
        return draw(EDGE[node.scalar_type])
    if node.type == "array":
        if depth > 4:
            return []
        return draw(st.lists(typed(node.items(), depth + 1), max_size=4))
    if node.type != "object" or depth > 4:
        return draw(scalars)
    known = node.known_fields()
    names = sorted(known) if known else ["a", "b", "app", "x.io/y"]
    keys = draw(st.lists(st.sampled_from(names), max_size=4, unique=True))
    out = {key: draw(typed(node.field(key), depth + 1)) for key in keys}
    if draw(st.integers(0, 99)) == 0:
        out["unknownField"] = 1  # Go's strict decoder says no: compared as written
    return out


@st.composite
def kind_objects(draw: st.DrawFn) -> tuple[Any, dict[str, Any]]:
    name = draw(st.sampled_from(sorted(KINDS)))
    node = KINDS[name]
    body = {key: draw(typed(node.field(key), 1)) for key in ("metadata", "spec", "data", "rules")}
    return node, {k: v for k, v in body.items() if k in (node.known_fields() or ())}


@MANY
@given(kind_objects())
def test_remarshal_matches_the_reference(t: tuple[Any, dict[str, Any]]) -> None:
    node, body = t
    assert strict(normalize.remarshal(body, node)) == strict(ref.remarshal(body, node))
    assert strict(normalize.remarshal(body, None)) == strict(ref.remarshal(body, None))


@MANY
@given(st.one_of(QUANTITIES, st.integers(), st.floats(), st.text("0123456789.eEkKMGiumn+- ")))
def test_memoized_quantities_match_the_parser(value: Any) -> None:
    first = quantity.canonical(value)
    assert first == quantity.canonical(value) == quantity._canonical(value)


# --------------------------------------------------------------------------- Secrets

secret_values = st.dictionaries(
    st.sampled_from(["a", "b", "c"]),
    st.one_of(st.sampled_from(["", "eA==", "eQ==", "x"]), st.none(), st.integers(0, 2)),
    max_size=3,
)


@st.composite
def secrets(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    for field in ("data", "stringData"):
        if draw(st.booleans()):
            body[field] = draw(st.one_of(secret_values, st.sampled_from(["oops", None, []])))
    return body


@st.composite
def secret_drifts(draw: st.DrawFn) -> model.Drift:
    desired, live, applied = draw(secrets()), draw(secrets()), draw(secrets())
    text = draw(st.sampled_from(["json", "same as desired", "garbage", "none", "list"]))
    annotation = {
        "json": json.dumps(applied),
        "same as desired": json.dumps(desired),
        "garbage": "{not json",
        "list": "[1]",
        "none": None,
    }[text]
    if annotation is not None:
        live["metadata"]["annotations"] = {normalize.LAST_APPLIED: annotation, "x": "y"}
    changes = tuple(
        model.Change(model.Op.CHANGE, path, draw(values), draw(values))
        for path in draw(
            st.lists(
                st.sampled_from(
                    [("data",), ("data", "a"), ("stringData", "b"), ("metadata", "annotations")]
                ),
                max_size=2,
            )
        )
    )
    status = model.ResourceStatus.OUT_OF_SYNC if changes else model.ResourceStatus.SYNCED
    predicted = draw(st.sampled_from([desired, live, None]))
    return model.Drift(
        model.ObjectKey("", "Secret", "ns", "s"),
        status,
        changes=changes,
        desired=desired,
        live=live,
        predicted=predicted,
        normalized_live=draw(st.sampled_from([live, applied, None])),
    )


@MANY
@given(secret_drifts())
def test_masking_matches_the_reference(drift: model.Drift) -> None:
    assert repr(masking.mask_drift(drift)) == repr(ref.mask_drift(drift))


# --------------------------------------------------------------------------- JSON texts

json_texts = st.one_of(
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text()),
        lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(), inner)),
        max_leaves=10,
    ).map(json.dumps),
    st.sampled_from(
        [
            '{"a":1e400}',
            '{"a":"\\ud800"}',
            '{"a":NaN}',
            '{"a":-Infinity}',
            '{"a":1,"a":2}',
            '{"a":"x\\ty"}',
            '{"a":"x\ty"}',
            "\ufeff{}",
            "{} x",
            '{"a":01}',
            '{"a":-0}',
            '{"a":123456789012345678901234567890}',
            "[" * 3000 + "]" * 3000,
            '{"a":.5}',
            "",
        ]
    ),
)


def _read(read: Any, text: str) -> Any:
    try:
        return ("ok", strict(read(text)))
    except ValueError:
        return ("ValueError",)
    except RecursionError:
        return ("RecursionError",)


@MANY
@given(json_texts)
def test_json_texts_read_as_json_reads_them(text: str) -> None:
    assert _read(normalize.loads, text) == _read(json.loads, text)


# --------------------------------------------------------------------------- smd.merge

SMD_TYPES = {name: smd.of(node) for name, node in {**KINDS, "none": None}.items()}


def _merged(fn: Any, lhs: Any, rhs: Any, t: Any) -> Any:
    try:
        return ("ok", strict(fn(lhs, rhs, t)))
    except smd.ApplyError as exc:
        return ("ApplyError", str(exc))


@MANY
@given(kind_objects(), st.data())
def test_structured_merge_matches_the_reference(
    t: tuple[Any, dict[str, Any]], data: st.DataObject
) -> None:
    node, live = t
    config = data.draw(variant(live, top=True))
    smd_type = smd.of(node)
    for lhs, rhs in ((live, config), (config, live)):
        assert _merged(smd.merge, lhs, rhs, smd_type) == _merged(ref.smd_merge, lhs, rhs, smd_type)
    untyped = SMD_TYPES["none"]
    assert _merged(smd.merge, live, config, untyped) == _merged(
        ref.smd_merge, live, config, untyped
    )


def _respelled(raw: dict[str, Any]) -> dict[str, Any]:
    """fieldsV1 with its k:/v: elements spelled as another writer would (spaces)."""
    return {
        (k[:2] + json.dumps(json.loads(k[2:])) if k[:2] in ("k:", "v:") else k): _respelled(v)
        for k, v in raw.items()
    }


@MANY
@given(kind_objects(), st.data())
def test_applied_again_matches_the_reference(
    t: tuple[Any, dict[str, Any]], data: st.DataObject
) -> None:
    node, applied = t
    config = data.draw(variant(applied, top=True))
    smd_type = smd.of(node)
    try:
        fields = smd.field_set(applied, smd_type)
    except smd.ApplyError:
        return
    for raw in (smd.to_fields_v1(fields), _respelled(smd.to_fields_v1(fields))):
        got = smd._covers(raw, config, smd_type, raw=True)
        assert got == ref.smd_covers(raw, config, smd_type, raw=True)
    tree = smd.trie(fields)
    assert smd._covers(tree, config, smd_type) == ref.smd_covers(tree, config, smd_type)
