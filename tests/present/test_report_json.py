"""report.dumps_json is `json.dumps(doc, indent=2, sort_keys=True) + "\\n"` byte for byte: held
to it on every scenario's report and on generated documents, with its fast way forced."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_gitdrift.present import report
from tests.conftest import TESTDATA

SCENARIOS = sorted(p for p in (TESTDATA / "scenarios").iterdir() if p.is_dir())


def _json(doc: Any) -> str:
    try:
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"
    except (TypeError, ValueError, RecursionError) as exc:
        return f"{type(exc).__name__}: {exc}"


def _fast(doc: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(report, "_MSGSPEC_CHARS", 0)
    try:
        return report.dumps_json(doc)
    except (TypeError, ValueError, RecursionError) as exc:
        return f"{type(exc).__name__}: {exc}"


def test_there_are_scenarios() -> None:
    assert len(SCENARIOS) > 40


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_every_scenario_report_is_written_as_json_writes_it(
    scenario: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (scenario / "expected.json").read_text(encoding="utf-8")
    doc = json.loads(text)
    monkeypatch.setattr(report, "_MSGSPEC_CHARS", 0)
    assert report._formatted(doc) is not None  # the fast way answered
    assert report.dumps_json(doc) == json.dumps(doc, indent=2, sort_keys=True) + "\n"


def test_the_whole_of_all_scenarios_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    docs = [json.loads((s / "expected.json").read_text(encoding="utf-8")) for s in SCENARIOS]
    big = {"apiVersion": "gitdrift/v1", "kind": "Report", "reports": docs}
    assert len(json.dumps(big)) > report._MSGSPEC_CHARS  # big enough to go fast on its own
    assert report.dumps_json(big) == _json(big)


_KEYS = st.one_of(
    st.text(st.characters(exclude_categories=[]), max_size=5),  # lone surrogates too
    st.integers(-5, 5),
    st.floats(allow_nan=False, width=16),
    st.sampled_from([True, False, None]),
)
_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats()
    | st.text(st.characters(exclude_categories=[]), max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=3).map(tuple)
        | st.dictionaries(_KEYS, children, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_VALUES)
def test_generated_documents_are_written_alike(doc: Any) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _fast(doc, monkeypatch) == _json(doc)


class _Opaque:
    pass


def _nested(depth: int) -> Any:
    doc: Any = "leaf"
    for i in range(depth):
        doc = [doc] if i % 2 else {"k": doc}
    return doc


def _circular() -> Any:
    loop: list[Any] = []
    loop.append({"a": loop})
    return loop


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param({"a": math.nan, "b": [math.inf, -math.inf]}, id="nan"),
        pytest.param({"a": _Opaque()}, id="not-serializable"),
        pytest.param({1: "a", "b": 2}, id="keys-that-do-not-sort"),
        pytest.param({"a": {"b": [1, 2, {"c": []}], "d": {}}, "e": 'é\u2028"\\/\x00'}, id="str"),
        pytest.param({"x": -0.0, "y": 1e300, "z": 5e-324, "w": 10**30, "v": (1, (2,))}, id="num"),
        pytest.param({True: 1, None: 2, 1.5: 3, 2: 4}, id="non-string-keys"),
        pytest.param(_circular(), id="circular"),
        pytest.param(_nested(report.FORMAT_MAX_DEPTH - 2), id="deep-2"),
        pytest.param(_nested(report.FORMAT_MAX_DEPTH - 1), id="deep-1"),
        pytest.param(_nested(report.FORMAT_MAX_DEPTH), id="deep"),
        pytest.param(_nested(report.FORMAT_MAX_DEPTH + 1), id="deep+1"),
        pytest.param(_nested(5000), id="past-the-recursion-limit"),
        pytest.param([], id="empty-list"),
        pytest.param({}, id="empty-mapping"),
        pytest.param("text", id="string"),
        pytest.param(7, id="number"),
    ],
)
def test_chosen_documents_are_written_alike(doc: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _fast(doc, monkeypatch) == _json(doc)


def test_deep_documents_are_left_to_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "_MSGSPEC_CHARS", 0)
    assert report._formatted(_nested(report.FORMAT_MAX_DEPTH - 1)) is not None
    assert report._formatted(_nested(report.FORMAT_MAX_DEPTH)) is None
    assert report._formatted({"a": math.nan}) is None


@pytest.mark.parametrize("fast", [False, True], ids=["json", "msgspec"])
def test_a_report_put_together_from_its_apps_texts_is_written_alike(
    fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--all -o json: each process writes the apps it compared (report.app_json); the whole
    report spliced from those texts is the bytes of writing it at once."""
    if fast:
        monkeypatch.setattr(report, "_MSGSPEC_CHARS", 0)
    apps = [
        app
        for s in SCENARIOS
        for app in json.loads((s / "expected.json").read_text(encoding="utf-8"))["applications"]
    ]
    for chosen in (apps, apps[:1], []):
        doc = {
            "apiVersion": "gitdrift/v1",
            "kind": "Report",
            "mode": "offline",
            "applications": chosen,
            "summary": {"applications": len(chosen)},
            "skipped": [{"application": "argocd/x", "reason": "not the clone"}],
            "errors": [],
        }
        texts = [report._item_json(app) for app in chosen]
        spliced = report._with_apps({**doc, "applications": []}, texts)
        assert spliced == json.dumps(doc, indent=2, sort_keys=True) + "\n"
