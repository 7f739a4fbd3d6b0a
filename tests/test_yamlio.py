from __future__ import annotations

import pytest

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import SnapshotError, SourceError

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
    monkeypatch.setattr(yamlio, "MAX_BYTES", 10)
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
