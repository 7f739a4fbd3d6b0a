"""Big JSON texts are read by msgspec first (fastjson.fast_json); the checking json loop decides
whenever msgspec's result could differ. These tests hold the two to the same answer: the same
documents (compared by repr, so 1, 1.0 and True stay apart) or the same error, on texts built to
hit every difference between the parsers (numbers, escapes, whitespace, keys written twice,
colons inside strings, nesting at the bound, values run together)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import GitDriftError, SourceError
from kubectl_gitdrift.yamlio import fastjson

DEEP = yamlio.MAX_DEPTH


def _outcome(text: str, fast: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    """repr of what load_any returns, or the error line, with the fast path on or off."""
    monkeypatch.setattr(fastjson, "FAST_JSON_CHARS", 0 if fast else 1 << 62)
    try:
        return repr(yamlio.load_any(text, "f.json"))
    except GitDriftError as exc:
        return f"{type(exc).__name__}: {exc}"


def assert_same(text: str, monkeypatch: pytest.MonkeyPatch) -> str:
    slow = _outcome(text, False, monkeypatch)
    assert _outcome(text, True, monkeypatch) == slow
    return slow


def _taken(text: str) -> bool:
    """Whether the fast path answers for `text` by itself."""
    return fastjson.fast_json(text) is not None


# --------------------------------------------------------------------------- chosen texts


@pytest.mark.parametrize(
    "text",
    [
        # numbers json reads and msgspec refuses (or would read otherwise)
        "[NaN, Infinity, -Infinity]",
        "[1e400, -1e400, 1" + "0" * 400 + ".5]",
        "[" + "9" * 30 + ", -" + "9" * 30 + ", 18446744073709551616]",
        "[" + "1" * 4301 + "]",
        "[-0, -0.0, 0.1, 1E5, 1e-400, 2.2250738585072011e-308, 9007199254740993]",
        # strings
        '["\\ud800", "\\udc00\\ud800", "\\uD83D\\uDE00", "\\u0000", "\\/", "\x7f"]',
        '{"a\\u003ab": 1, "a:b": 2}',
        '{"a": "x\\u003A", "a": 1}',
        '{"a": 1, "a": 2}',
        '{"k:": "v:", "k:": "w"}',
        '{"a": {"b": 1, "c": {"b": 2, "b": 3}}}\n{"z": 1}',
        '{"x": 1}\n{"a": 1, "a": 2}\n',
        # streams and whitespace
        '{"a": 1}{"b": 2}',
        '{"a": 1}\n\n \r\n\t{"b": 2}\n',
        '{"a": 1}\n\x0c{"b": 2}',
        "[1]2",
        "[0]00",
        "[1]true",
        "[1]\n1.5.3",
        "[1]\n-",
        "[1] // comment",
        "[1,]",
        '{"a": 1,}',
        '{"a":\n1}\n{"b":\n[2,\n3]}',
        "[1]\n---\na: 1\n",
        '["a\tb"]',
        "\ufeff[1]",
        # nesting at and past the bound
        "[" * DEEP + "]" * DEEP,
        "[" * (DEEP + 1) + "]" * (DEEP + 1),
        '{"a": ' * DEEP + "1" + "}" * DEEP,
        '{"a": ' * DEEP + "{}" + "}" * DEEP,
        '[1]\n{"a": ' * 1 + "[" * DEEP + "]" * DEEP + "}",
        "[" * 5000 + "]" * 5000,
        "[1]\n" + "[" * 100_000 + "]" * 100_000,
    ],
)
def test_chosen_texts_read_alike(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert_same(text, monkeypatch)


def test_the_fast_path_answers_for_plain_kubernetes_json() -> None:
    docs = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"cm-{i}", "namespace": "a:b", "labels": {"x": "y"}},
            "data": {"url": "http://h:8080/p", "n": str(i), "z": None, "f": 1.5, "b": True},
        }
        for i in range(50)
    ]
    text = "\n".join(json.dumps(d) for d in docs)
    assert _taken(text)
    assert _taken(json.dumps({"kind": "List", "items": docs}, indent=1))
    assert fastjson.fast_json(text) == (docs, False)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"x": 1}\n{"b": {"a": 1, "a": 2}}\n', "f.json: document 2: duplicate key 'a'"),
        ('{"a:": "b", "a:": "c"}', "f.json: document 1: duplicate key 'a:'"),
        (
            '[1]\n{"a": ' + "[" * DEEP + "]" * DEEP + "}",
            f"f.json: document 2: nested deeper than {DEEP} levels",
        ),
        (
            "[" * 5000 + "]" * 5000,
            f"f.json: document 1: nested deeper than {DEEP} levels",
        ),
    ],
)
def test_errors_name_the_document_either_way(
    text: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert assert_same(text, monkeypatch) == f"SourceError: {message}"


def test_keys_written_twice_are_never_read_fast() -> None:
    assert not _taken('{"a": 1, "a": 1}')
    assert not _taken('{"a": {"b": 1}}\n{"c": {"d": 1, "d": 2}}')
    # a colon written as an escape could stand in for a dropped pair's: left to json
    assert not _taken('{"a": "\\u003a", "b": 1}')
    assert _taken('{"a": ":", "b": "::"}')


def test_depth_exactly_at_the_bound_is_read_fast() -> None:
    at_bound = "[" * DEEP + "1" + "]" * DEEP  # 200 containers: fine
    result = fastjson.fast_json(at_bound)
    assert result is not None
    assert result[1]  # looked at by the exact walk
    assert yamlio.load_any(at_bound, "f.json")


def test_msgspec_is_imported_only_for_big_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(fastjson, "fast_json", lambda text: calls.append(text))
    yamlio.load_any('{"a": 1}', "small.json")
    assert calls == []
    big = json.dumps({"a": "x" * yamlio.FAST_JSON_CHARS})
    yamlio.load_any(big, "big.json")
    assert calls == [big]


# --------------------------------------------------------------------------- generated texts

_NUMBERS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.from_regex(r"-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,25})?([eE][-+]?[0-9]{1,3})?", fullmatch=True),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "-0", "00", "1.", ".5", "+1", "1e400"]),
)
_CHARS = st.sampled_from(
    ["a", "b", ":", "é", "\\u003a", "\\u003A", "\\ud800", "\\n", '\\"', "\\\\", "\x7f", "\t"]
)
_STRINGS = st.lists(_CHARS, max_size=4).map(lambda parts: '"' + "".join(parts) + '"')
_KEYS = st.sampled_from(['"a"', '"b"', '"a:"', '"a\\u003a"', '":"'])
_WS = st.sampled_from(["", " ", "\n", "\r\n", "\t", "\x0c"])


def _texts() -> st.SearchStrategy[str]:
    scalars = st.one_of(_NUMBERS, _STRINGS, st.sampled_from(["true", "false", "null"]))

    def containers(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        arrays = st.lists(children, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]")
        pairs = st.tuples(_KEYS, _WS, children).map(lambda p: f"{p[0]}:{p[1]}{p[2]}")
        objects = st.lists(pairs, max_size=4).map(lambda xs: "{" + ",".join(xs) + "}")
        return arrays | objects

    values = st.recursive(scalars, containers, max_leaves=12)
    return st.lists(st.tuples(values, _WS), min_size=1, max_size=4).map(
        lambda docs: "".join(v + w for v, w in docs)
    )


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_texts())
def test_generated_texts_read_alike(text: str) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert_same(text, monkeypatch)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=DEEP - 2, max_value=DEEP + 2), st.integers(0, 3), _texts())
def test_nesting_near_the_bound_reads_alike(depth: int, where: int, tail: str) -> None:
    inner = ["[1]", "{}", "[]", '{"a": 1}'][where]
    deep = '{"k": [' * (depth // 2) + inner + "]}" * (depth // 2)
    if depth % 2:
        deep = "[" + deep + "]"
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert_same(f"{tail}\n{deep}\n{tail}", monkeypatch)


def test_documents_are_what_json_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    values: list[Any] = [{"a": [1, 2.5, None, True, "x:y"]}, [], {}, "s", 7, {"é": {"b": []}}]
    text = "\n".join(json.dumps(v) for v in values)
    assert _taken(text)
    monkeypatch.setattr(fastjson, "FAST_JSON_CHARS", 0)
    assert yamlio.load_any(text, "f.json") == values
    with pytest.raises(SourceError, match=r"^f\.json: document 2: duplicate key 'b'$"):
        yamlio.load_any('{"a": 1}\n{"b": 1, "b": 1}', "f.json")
