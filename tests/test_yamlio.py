from __future__ import annotations

import concurrent.futures
import gc
import math
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import GitDriftError, SnapshotError, SourceError
from kubectl_gitdrift.yamlio import limits, yamlload

DEPLOY = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"


def test_multi_document_yaml_skips_empty_documents() -> None:
    text = f"---\n{DEPLOY}---\n---\n# only a comment\n---\n{DEPLOY.replace('web', 'api')}"
    docs = yamlio.load_documents(text, "a.yaml")
    assert [d["metadata"]["name"] for d in docs] == ["web", "api"]


def test_list_kinds_are_flattened() -> None:
    text = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
---
apiVersion: apps/v1
kind: DeploymentList
items:
- {apiVersion: apps/v1, kind: Deployment, metadata: {name: b}}
"""
    assert [d["metadata"]["name"] for d in yamlio.load_documents(text, "l.yaml")] == ["a", "b"]


def test_json_single_and_stream() -> None:
    one = '{"apiVersion": "v1", "kind": "List", "items": [{"kind": "A"}, {"kind": "B"}]}'
    assert [d["kind"] for d in yamlio.load_documents(one, "x.json")] == ["A", "B"]
    stream = '{"kind": "A"}\n\t{"kind": "B"}\n'
    assert [d["kind"] for d in yamlio.load_documents(stream.encode(), "x.json")] == ["A", "B"]


def test_kubernetes_scalars() -> None:
    text = "date: 2024-01-01\ndata:\n  1: one\n  true: yes\nport: 080\n"
    (doc,) = yamlio.load_documents(text, "s.yaml")
    assert doc["date"] == "2024-01-01"
    assert doc["data"] == {"1": "one", "true": True}


def test_merge_keys_are_not_duplicates() -> None:
    text = "base: &b {x: 1, y: 2}\nobj:\n  <<: *b\n  x: 3\n"
    assert yamlio.load_documents(text, "m.yaml")[0]["obj"] == {"x": 3, "y": 2}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            f"{DEPLOY}---\n- a\n- b\n",
            "overlays/prod/x.yaml: document 2: mapping expected, got a list",
            id="list-document",
        ),
        pytest.param(
            "just a string\n",
            "overlays/prod/x.yaml: document 1: mapping expected, got a string",
            id="string-document",
        ),
        pytest.param(
            f"{DEPLOY}---\nkind: X\nspec:\n  on: !!bool maybe\n",
            "overlays/prod/x.yaml: document 2: line 8: 'maybe' is not a valid !!bool value",
            id="bad-tagged-bool",
        ),
        pytest.param(
            "a: !!int ''\n",
            "overlays/prod/x.yaml: document 1: line 1: '' is not a valid !!int value",
            id="bad-tagged-int",
        ),
        pytest.param(
            "a: 1\nb: 2\na: 3\n",
            "overlays/prod/x.yaml: document 1: line 3: duplicate key 'a'",
            id="duplicate-key",
        ),
        pytest.param(
            "a: 1\n---\nspec:\n  x: 1\n  x: 2\n",
            "overlays/prod/x.yaml: document 2: line 5: duplicate key 'x'",
            id="duplicate-key-second-document",
        ),
        pytest.param(
            '{"a": 1, "a": 2}',
            "overlays/prod/x.yaml: document 1: duplicate key 'a'",
            id="duplicate-key-json",
        ),
        pytest.param(
            "kind: List\nitems:\n- {kind: A}\n- 7\n",
            "overlays/prod/x.yaml: document 1: items[1]: mapping expected, got a number",
            id="list-item-not-mapping",
        ),
        pytest.param(
            "a: 1\nb:\n\tc: 2\n",
            "overlays/prod/x.yaml: line 3: could not parse YAML (",
            id="tab",
        ),
        pytest.param(
            "a: [1, 2\nb: {c: 3\n",
            "overlays/prod/x.yaml: line 2: could not parse YAML (",
            id="truncated-flow",
        ),
        pytest.param(
            'a: "unterminated\n',
            "overlays/prod/x.yaml: line 2: could not parse YAML (",
            id="truncated-quote",
        ),
        pytest.param(
            "a: " + "[" * 300 + "]" * 300 + "\n",
            "overlays/prod/x.yaml: document 1: nested deeper than 200 levels",
            id="deep-flow",
        ),
        pytest.param(
            "".join(" " * i + f"k{i}:\n" for i in range(250)) + " " * 250 + "v\n",
            "overlays/prod/x.yaml: document 1: nested deeper than 200 levels",
            id="deep-block",
        ),
        pytest.param(
            '{"a": ' * 300 + "1" + "}" * 300,
            "overlays/prod/x.yaml: document 1: nested deeper than 200 levels",
            id="deep-json",
        ),
        pytest.param(
            "a: &a [*a]\n",
            "overlays/prod/x.yaml: document 1: line 1: recursive alias",
            id="recursive-alias",
        ),
    ],
)
def test_errors_are_one_line_with_file_and_document(text: str, message: str) -> None:
    with pytest.raises(SourceError) as info:
        yamlio.load_documents(text, "overlays/prod/x.yaml")
    assert info.value.message.startswith(message)
    assert "\n" not in info.value.message


def test_alias_bomb_is_refused() -> None:
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        refs = ",".join([f"*l{i - 1}"] * 9)
        lines.append(f"l{i}: &l{i} [{refs}]")
    with pytest.raises(SourceError, match=r"bomb\.yaml: document 1: aliases expand to more than"):
        yamlio.load_documents("\n".join(lines) + "\n", "bomb.yaml")


def test_too_many_aliases_is_refused() -> None:
    text = "a: &a x\nb: [" + ", ".join(["*a"] * (yamlio.MAX_ALIASES + 1)) + "]\n"
    with pytest.raises(SourceError, match=r"more than 10000 aliases"):
        yamlio.load_documents(text, "many.yaml")


def test_a_few_aliases_are_fine() -> None:
    text = "x: &labels {app: web}\ny: *labels\nz: *labels\n"
    assert yamlio.load_documents(text, "ok.yaml") == [
        {"x": {"app": "web"}, "y": {"app": "web"}, "z": {"app": "web"}}
    ]


def test_binary_junk() -> None:
    with pytest.raises(SourceError, match=r"^logo\.yaml: not UTF-8 text \(byte 0x89 at offset 0\)"):
        yamlio.load_documents(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "logo.yaml")
    with pytest.raises(SourceError, match=r"^nul\.yaml: could not parse YAML \(.*#x0000"):
        yamlio.load_documents(b"a: b\x00c\n", "nul.yaml")


def test_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_BYTES", 10)
    with pytest.raises(SourceError, match=r"^big\.yaml: 12 bytes is more than the 10 bytes"):
        yamlio.load_documents(b"a: 12345678\n", "big.yaml")


def test_error_class_is_chosen_by_the_caller() -> None:
    with pytest.raises(SnapshotError, match=r"live\.yaml: document 1: mapping expected"):
        yamlio.load_documents("- 1\n", "live.yaml", error=SnapshotError)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"kind": "Pod", "metadata": {"name": "a"}}, "f.yaml: document 3: apiVersion missing"),
        ({"apiVersion": "v1", "metadata": {"name": "a"}}, "f.yaml: document 3: kind missing"),
        (
            {"apiVersion": "v1", "kind": 5, "metadata": {"name": "a"}},
            "f.yaml: document 3: kind missing (got a number)",
        ),
        ({"apiVersion": "v1", "kind": "Pod"}, "f.yaml: document 3: Pod: metadata missing"),
        (
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {}}},
            "f.yaml: document 3: Pod: metadata.name missing",
        ),
    ],
)
def test_require_object(doc: dict[str, object], message: str) -> None:
    with pytest.raises(SourceError) as info:
        yamlio.require_object(doc, "f.yaml", 3)
    assert info.value.message == message


def test_require_object_accepts_a_full_object() -> None:
    yamlio.require_object(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}}, "f.yaml", 1
    )


@pytest.mark.parametrize(
    "doc",
    [
        {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"a": "b"}}},
    ],
)
def test_require_object_unnamed_accepts_no_name(doc: dict[str, object]) -> None:
    yamlio.require_object(doc, "f.yaml", 1, unnamed=True)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"apiVersion": "v1", "metadata": {}}, "f.yaml: document 1: kind missing"),
        (
            {"apiVersion": "v1", "kind": "Pod", "metadata": "x"},
            "f.yaml: document 1: Pod: metadata missing (got a string)",
        ),
        (
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": 3}},
            "f.yaml: document 1: Pod: metadata.name missing (got a number)",
        ),
    ],
)
def test_require_object_unnamed_still_checks_the_rest(doc: dict[str, object], message: str) -> None:
    with pytest.raises(SourceError) as info:
        yamlio.require_object(doc, "f.yaml", 1, unnamed=True)
    assert info.value.message == message


@pytest.mark.parametrize(
    ("text", "noted"),
    [
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  x: '1'\n  x: '2'\n",
            ["document 1: line 6: duplicate key 'x'"],
        ),
        (
            (
                '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},'
                ' "data": {"x": "1", "x": "2"}}'
            ),
            ["document 1: duplicate key 'x'"],
        ),
    ],
)
def test_load_objects_keeps_the_last_of_a_duplicate_key(text: str, noted: list[str]) -> None:
    # sigs.k8s.io/yaml (go-yaml v2) and encoding/json, as Argo CD reads directory sources
    with pytest.raises(SourceError, match="duplicate key 'x'"):
        yamlio.load_objects(text, "f.yaml")
    duplicates: list[str] = []
    (obj,) = yamlio.load_objects(text, "f.yaml", duplicates=duplicates)
    assert obj["data"] == {"x": "2"}
    assert duplicates == noted


def test_duplicates_noted_per_document_with_file_lines() -> None:
    text = "kind: A\nb: 1\nb: 2\n---\nkind: B\nc: {d: 1, d: 2}\nkind: C\n"
    duplicates: list[str] = []
    read = yamlload.load_yaml(text, "f.yaml", SourceError, duplicates=duplicates)
    assert read == [{"kind": "A", "b": 2}, {"kind": "C", "c": {"d": 2}}]
    assert duplicates == [
        "document 1: line 3: duplicate key 'b'",
        "document 2: line 6: duplicate key 'd'",
        "document 2: line 7: duplicate key 'kind'",
    ]


def test_load_any_allows_json_patch_lists() -> None:
    text = "- op: replace\n  path: /spec/replicas\n  value: 4\n---\n"
    assert yamlio.load_any(text, "p.yaml") == [
        [{"op": "replace", "path": "/spec/replicas", "value": 4}],
        None,
    ]
    with pytest.raises(SourceError, match="duplicate key"):
        yamlio.load_any("- {a: 1, a: 2}\n", "p.yaml")


def test_load_objects_names_the_list_item() -> None:
    text = f"{DEPLOY}---\nkind: List\nitems:\n- {{apiVersion: v1, metadata: {{name: x}}}}\n"
    with pytest.raises(SourceError) as info:
        yamlio.load_objects(text, "f.yaml")
    assert info.value.message == "f.yaml: document 2: items[0]: kind missing"


# --------------------------------------------------------------------------- the streamed load


def shape(value: Any, seen: dict[int, int] | None = None) -> Any:
    """`value` with what `==` ignores made visible: key order, types, NaN and shared objects."""
    seen = {} if seen is None else seen
    if isinstance(value, (dict, list)):
        if id(value) in seen:
            return ("same as", seen[id(value)])
        seen[id(value)] = len(seen)
        if isinstance(value, dict):
            return ("map", [(k, shape(v, seen)) for k, v in value.items()])
        return ("seq", [shape(v, seen) for v in value])
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return (type(value).__name__, value)


def composed(text: str) -> Any:
    return shape(yamlload._load_composed(text, "t.yaml", SourceError))


def outcome(load: Callable[[str], Any], text: str) -> Any:
    """What `load(text)` gives: its shape, or the error it raises (class and text)."""
    try:
        return shape(load(text))
    except (GitDriftError, ValueError) as exc:
        return (type(exc), str(exc))


def load_any(text: str) -> Any:
    return yamlio.load_any(text, "t.yaml")


def load_composed(text: str) -> Any:
    return yamlload._load_composed(text, "t.yaml", SourceError)


STREAMED = {
    "kubectl-list": """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: a, namespace: ns, creationTimestamp: "2024-01-01T00:00:00Z"}
  data: {k: v, "1": one, empty: ""}
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: web
    generation: 3
    creationTimestamp: 2024-01-01T00:00:00Z
  spec:
    replicas: 2
    paused: false
    template:
      spec:
        containers:
        - {name: app, image: "nginx:1.0", ports: [{containerPort: 80}]}
metadata: {resourceVersion: ""}
""",
    "scalars": (
        "a: [~, null, Null, '', yes, No, on, OFF, true, 0x1F, 0o17, 010, 1_000, 1:30, -1.5,"
        " .inf, -.Inf, .nan, 1e3, +12, 2024-01-01, '2024', \"\\u00e9\", x y, 'q', =x, <x]\n"
        "b: |\n  literal\n  text\nc: >-\n  folded\n  text\n"
    ),
    "keys": "1: a\ntrue: b\n~: c\n1.5: d\n2024-01-01: e\n'x': f\n? y\n: g\n",
    "core-tags": (
        "a: !!str 1\nb: !!int '2'\nc: !!float 3\nd: !!bool yes\ne: !!null ''\nf: ! 12\n"
        "g: !!binary aGVsbG8=\nh: !!map {x: 1}\ni: !!seq [1]\nj: !!timestamp 2020-01-01\n"
    ),
    "anchors": "a: &a {x: [1, 2]}\nb: *a\nc: [*a, &s text, *s]\nd: {e: *a}\n",
    "merge": "base: &b {x: 1, y: 2}\nobj:\n  z: 0\n  <<: *b\n  y: 3\n",
    "merge-one-list": "base: &b {xx: 1}\nobj: {<<: [*b], yy: 2}\n",
    "merge-twice": "a: &a {p: 1}\nb: &b {q: 2}\nobj: {<<: *a, r: 3, <<: *b}\n",
    "merge-inline": "obj: {<<: {p: 1, q: 2}, q: 3}\n",
    "merged-anchor": "a: &a {p: 1}\nb: &b {<<: *a, q: 2}\nc: [*b, *b]\n",
    "documents": "---\n---\n# comment\n---\njust text\n---\n[1, 2]\n---\n42\n...\n",
    "json-like": '{"a": [1, {"b": null}], "c": "d"}\n',
}


@pytest.mark.parametrize("text", STREAMED.values(), ids=STREAMED.keys())
def test_streamed_load_builds_what_the_composed_load_builds(text: str) -> None:
    assert shape(yamlload._stream_yaml(text)) == composed(text)
    assert shape(yamlio.load_any(text, "t.yaml")) == composed(text)


UNSURE = {
    # releases of PyYAML order the keys of a list of merges differently
    "merge-list": "a: &a {p: 1}\nb: &b {q: 2}\nobj: {<<: [*a, *b]}\n",
    "merge-overlap": "a: &a {p: 1}\nb: &b {p: 2}\nobj: {<<: *a, <<: *b}\n",
    "merge-one-char-key": "a: &a {x: 1}\nb: &b {<<: *a, x: 2}\nobj: {<<: *b}\n",
    "merge-number-keys": "a: &a {1: x}\nobj: {<<: *a}\n",
    "merge-scalar": "a: &a 1\nobj: {<<: *a}\n",
    "merge-as-value": "a: <<\n",
    "value-key": "=: 1\n",
    "same-text-keys": "1: a\n'1': b\n",
    "complex-key": "? [a, b]\n: c\n",
    "alias-key": "a: &k x\n*k : y\n",
    "set": "a: !!set {x, y}\n",
    "omap": "a: !!omap [x: 1]\n",
    "local-tag": "a: !thing x\n",
    "bad-int": "a: !!int x\n",
    "reused-anchor": "a: &a 1\nb: &a 2\nc: *a\n",
    "undefined-alias": "a: *nowhere\n",
    "recursive": "a: &a [*a]\n",
    "duplicate": "a: 1\na: 2\n",
    "parse-error": "a: [1, 2\n",
    "deep": "a: " + "[" * 199 + "]" * 199 + "\n",
}


@pytest.mark.parametrize("text", UNSURE.values(), ids=UNSURE.keys())
def test_the_streamed_load_leaves_the_rest_to_the_composed_load(text: str) -> None:
    with pytest.raises(yamlload._Unsure):
        yamlload._stream_yaml(text)
    assert outcome(load_any, text) == outcome(load_composed, text)


@pytest.mark.parametrize("depth", range(196, 204))
@pytest.mark.parametrize(
    "form",
    [
        "a: {open}1{close}\n",
        "a: {open}{close}\n",
        "x: &x {open3}1{close3}\ny: [[*x]]\n",
        "x: &x {open3}1{close3}\ny: *x\n",
        "x: &x [1]\ny: {open3}*x{close3}\n",
    ],
)
def test_depth_bound_at_the_edge(form: str, depth: int) -> None:
    text = form.format(
        open="[" * depth, close="]" * depth, open3="[" * (depth - 3), close3="]" * (depth - 3)
    )
    assert outcome(load_any, text) == outcome(load_composed, text)


@pytest.mark.parametrize("count", [yamlio.MAX_ALIASES - 1, yamlio.MAX_ALIASES])
def test_aliases_below_the_bound_are_streamed(count: int) -> None:
    text = "a: &a x\nb: [" + ", ".join(["*a"] * count) + "]\n"
    assert yamlload._stream_yaml(text) == [{"a": "x", "b": ["x"] * count}]


@pytest.mark.parametrize(
    "text",
    [
        "a: &a x\nb: [" + ", ".join(["*a"] * (yamlio.MAX_ALIASES + 1)) + "]\n",
        "\n".join(
            [f"l0: &l0 [{','.join(['x'] * 10)}]"]
            + [f"l{i}: &l{i} [{','.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 6)]
        ),
        "a: " + "[" * 300 + "]" * 300 + "\n",
    ],
    ids=["aliases", "expansion", "depth"],
)
def test_the_streamed_load_stops_at_the_bounds(text: str) -> None:
    with pytest.raises(yamlload._Unsure):
        yamlload._stream_yaml(text)
    with pytest.raises(SourceError, match=r"^t\.yaml: document 1: (more than|aliases|nested)"):
        yamlio.load_any(text, "t.yaml")


def test_plain_scalars_resolve_by_their_first_character() -> None:
    # no wildcard resolver: a plain scalar starting with anything else is a string
    assert None not in yamlload._Loader.yaml_implicit_resolvers


leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.sampled_from(["", "~", "yes", "1_0", "0x1", "1:2", "2024-01-01", "<<", "=", "a: b", "-"]),
    st.text(max_size=6),
)
trees = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=4), st.integers(0, 3)), inner, max_size=4),
    ),
    max_leaves=25,
)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.lists(trees, min_size=1, max_size=3), st.data())
def test_streamed_and_composed_loads_agree(docs: list[Any], data: st.DataObject) -> None:
    """Also on what a dumper writes for shared objects (anchors and aliases), in either style."""
    shared = [d for d in docs if isinstance(d, (dict, list))]
    if shared:
        docs.append({"again": shared, "more": shared[:1]})  # aliases to the first ones
    text = yaml.safe_dump_all(docs, default_flow_style=data.draw(st.sampled_from([None, True])))
    assert outcome(load_any, text) == outcome(load_composed, text)


# --------------------------------------------------------------------------- the node checker


node_items = st.sampled_from(["a", "b", "&x [1]", "*x", "{k: *x}", "[*x, *x]", "1", "'1'"])


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.lists(node_items, min_size=1, max_size=8), st.integers(1, 4))
def test_the_quick_node_check_agrees_with_the_full_walk(items: list[str], nesting: int) -> None:
    text = "x: &x [1]\n" + "y: " + "[" * nesting + ", ".join(items) + "]" * nesting + "\n"
    text += "z: {" + ", ".join(f"{item}: 1" for item in items if not item.startswith("&")) + "}\n"
    try:
        nodes = list(yaml.compose_all(text, Loader=yamlload._Loader))
    except yaml.YAMLError:
        return
    for node in nodes:
        assert yamlload._check_node(node) == yamlload._first_problem(node)


# --------------------------------------------------------------------------- compose_documents


def test_compose_documents_gives_the_trees_with_their_lines() -> None:
    text = f"{DEPLOY}---\n---\nkind: List\nitems:\n- {{kind: A}}\n"
    web, empty, items = yamlio.compose_documents(text.encode(), "f.yaml")
    assert isinstance(web, yaml.MappingNode)
    assert [(k.value, k.start_mark.line) for k, _ in web.value] == [
        ("apiVersion", 0),
        ("kind", 1),
        ("metadata", 2),
    ]
    assert isinstance(empty, yaml.ScalarNode)
    assert empty.tag == "tag:yaml.org,2002:null"
    assert isinstance(items, yaml.MappingNode)
    assert items.start_mark.line == 6


def test_compose_documents_leaves_merge_keys_in_the_tree() -> None:
    (doc,) = yamlio.compose_documents("a: &a {x: 1}\nb: {<<: *a, y: 2}\n", "m.yaml")
    assert isinstance(doc, yaml.MappingNode)
    b = doc.value[1][1]
    assert [k.value for k, _ in b.value] == ["<<", "y"]


def test_compose_documents_reads_json_as_load_any_does() -> None:
    nested = "[" * yamlio.MAX_DEPTH + "1" + "]" * yamlio.MAX_DEPTH  # fine for JSON's bound
    assert len(yamlio.compose_documents(nested, "n.json")) == 1
    with pytest.raises(SourceError, match=r"^d\.json: document 1: duplicate key 'a'$"):
        yamlio.compose_documents('{"a": 1, "a": 2}', "d.json")


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: 2\na: 3\n",
        "a: &a [*a]\n",
        "a: 1\n---\nb: [\n",
        "a: " + "[" * 300 + "]" * 300 + "\n",
        "a: !!int x\n---\nb: [\n",
        "a: !thing x\n",
        "a: b\x00c\n",
        "a: =\n",
        "a: &a 1\nb: [" + ", ".join(["*a"] * (yamlio.MAX_ALIASES + 1)) + "]\n",
    ],
)
def test_compose_documents_refuses_what_load_any_refuses(text: str) -> None:
    refused, message = outcome(load_any, text)
    assert refused in (SourceError, ValueError)
    with pytest.raises(refused) as info:
        yamlio.compose_documents(text, "t.yaml")
    assert str(info.value) == message


def test_compose_documents_accepts_what_load_any_accepts() -> None:
    text = "a: &a {x: 1}\nb: {<<: *a}\nc: !!binary aGk=\nd: [*a, *a]\n"
    yamlio.load_any(text, "ok.yaml")
    assert len(yamlio.compose_documents(text, "ok.yaml")) == 1


# --------------------------------------------------------------------------- bounds, the JSON way


@pytest.mark.parametrize("depth", [yamlio.MAX_DEPTH - 1, yamlio.MAX_DEPTH, yamlio.MAX_DEPTH + 1])
@pytest.mark.parametrize("leaf", ["1", "[]", "{}"])
def test_json_depth_counts_containers(depth: int, leaf: str) -> None:
    text = '{"a": ' * depth + leaf + "}" * depth
    deepest = depth + (leaf != "1")
    if deepest > yamlio.MAX_DEPTH:
        with pytest.raises(SourceError, match=r"nested deeper than 200 levels"):
            yamlio.load_any(text, "j.json")
    else:
        assert yamlio.load_any(text, "j.json")


# --------------------------------------------------------------------------- the collector


def test_the_collector_is_paused_while_parsing_and_restored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bool] = []
    real = yamlload.load_yaml

    def spy(text: str, name: str, error: type[GitDriftError]) -> list[Any]:
        seen.append(gc.isenabled())
        if len(seen) == 1:  # a parse inside a parse keeps the pause
            yamlio.load_any("b: 2\n", "inner.yaml")
            seen.append(gc.isenabled())
        return real(text, name, error)

    monkeypatch.setattr(yamlload, "load_yaml", spy)
    assert gc.isenabled()
    yamlio.load_any("a: 1\n", "outer.yaml")
    assert seen == [False, False, False]
    assert gc.isenabled()
    with pytest.raises(SourceError):
        yamlio.load_any("a: [\n", "bad.yaml")
    assert gc.isenabled()
    gc.disable()
    try:
        yamlio.load_any("a: 1\n", "x.yaml")
        assert not gc.isenabled()  # left as it was found
    finally:
        gc.enable()


def test_parses_in_threads_restore_the_collector() -> None:
    text = "a: [" + ", ".join(str(i) for i in range(2000)) + "]\n"
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: yamlio.load_any(text, "t.yaml"), range(40)))
    assert all(r == results[0] for r in results)
    assert gc.isenabled()
