"""Cached renders are read by msgspec once a run has imported it (sources/cache._loads): the
result must be json.loads' exactly (compared by repr, so 1, 1.0 and True stay apart), and what
json refuses stays refused."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_gitdrift.model import Manifest, ObjectKey
from kubectl_gitdrift.sources import cache


def _json_loads(data: bytes) -> str:
    try:
        return repr(json.loads(data))
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__


def _fast_loads(data: bytes, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(cache, "_MSGSPEC_BYTES", 0)
    try:
        return repr(cache._loads(data))
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__


@pytest.mark.parametrize(
    "data",
    [
        b"[NaN, Infinity, -Infinity, 1e400, 18446744073709551616, -0, -0.0, 1E5, 0.1]",
        b"[" + b"1" * 4301 + b"]",
        b'["\\ud800", "\\udc00", "\\ud83d\\ude00", "\\u0000", "\xc3\xa9"]',
        b'{"a": 1, "a": 2}',
        b"\xef\xbb\xbf[1]",
        b'["\xed\xa0\x80"]',  # a surrogate written in UTF-8: json reads it (surrogatepass)
        b'["\xff"]',
        b"[1] [2]",
        b" \r\n\t[1]\n",
        b"[1]\x0c",
        b"",
        b'"\\ud800"'.decode().encode("utf-16"),
        b"[" * 600 + b"]" * 600,
        b"[" * 5000 + b"]" * 5000,
    ],
)
def test_chosen_texts_read_as_json_reads_them(data: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _fast_loads(data, monkeypatch) == _json_loads(data)


_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats()
    | st.text(st.characters(exclude_categories=[]), max_size=6),  # lone surrogates too
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_VALUES, st.booleans())
def test_what_put_writes_reads_back_alike(value: Any, ascii_only: bool) -> None:
    data = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _fast_loads(data, monkeypatch) == _json_loads(data)


def _render() -> list[Manifest]:
    bodies = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": f"web-{i}", "namespace": "prod"},
            "spec": {"replicas": i, "ratio": 0.5, "paused": False, "x": None},
        }
        for i in range(3)
    ]
    return [Manifest(ObjectKey.of(b), b, f"base/{i}.yaml") for i, b in enumerate(bodies)]


@pytest.mark.parametrize("fast", [False, True])
def test_a_render_reads_back_as_it_was_put(
    fast: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "_MSGSPEC_BYTES", 0 if fast else 1 << 62)
    monkeypatch.setattr(cache, "_MSGSPEC_READS", 0 if fast else 1 << 62)
    if not fast:
        monkeypatch.delitem(sys.modules, "msgspec", raising=False)
    store = cache.RenderCache(tmp_path)
    key = store.key("kustomize", "abc", "apps/x")
    manifests = _render()
    store.put(key, manifests)
    assert store.get(key) == manifests
    path = store._path(key)
    path.write_bytes(path.read_bytes()[:-3])  # damaged: a miss either way
    assert store.get(key) is None
    path.write_bytes(b'[{"origin": "a"}]')  # no body: a miss
    assert store.get(key) is None


def test_a_few_small_entries_do_not_import_msgspec(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "msgspec", raising=False)
    monkeypatch.setattr(cache, "_reads", 0)
    called: list[int] = []
    monkeypatch.setattr(cache, "_msgspec_decoder", lambda: called.append(1))
    for _ in range(cache._MSGSPEC_READS):
        assert cache._loads(b"[1]") == [1]
    assert called == []
    with pytest.raises(AttributeError):  # the next read turns to msgspec (stubbed: None)
        cache._loads(b"[1]")
    assert called == [1]
