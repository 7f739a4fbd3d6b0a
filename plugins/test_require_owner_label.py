"""Unit tests for plugins/require_owner_label.py (scenario: team-plugin-owner-label)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import require_owner_label

from kubectl_gitdrift import Drift, ObjectKey, ResourceStatus, Severity


def _drift(kind: str, labels: dict[str, str] | None, *, desired: bool = True) -> Drift:
    key = ObjectKey("apps", kind, "shop", "web")
    body: dict[str, Any] = {"metadata": {"name": "web", "labels": labels or {}}}
    return Drift(
        key, ResourceStatus.SYNCED, origin="apps/web.yaml", desired=body if desired else None
    )


def _rules() -> dict[str, Any]:
    rules: dict[str, Any] = {}

    def register(rule_id: str, fn: Any, **kw: Any) -> None:
        rules[rule_id] = (fn, kw)

    require_owner_label.gitdrift_register_rules(register)
    return rules


@pytest.mark.parametrize(
    ("kind", "labels", "expected"),
    [
        ("Deployment", {"owner": "team-a"}, 0),
        ("Deployment", {}, 1),
        ("StatefulSet", {"owner": " "}, 1),
        ("DaemonSet", None, 1),
        ("ReplicaSet", {}, 0),  # not a workload teams write
    ],
)
def test_owner_label(kind: str, labels: dict[str, str] | None, expected: int) -> None:
    ((fn, kw),) = _rules().values()
    findings = list(fn(SimpleNamespace(drifts=[_drift(kind, labels)])))
    assert len(findings) == expected
    assert kw["codes"] == ("owner-label-missing",)
    for finding in findings:
        assert (finding.code, finding.severity) == ("owner-label-missing", Severity.WARNING)
        assert finding.path == ("metadata", "labels", "owner")
        assert "apps/web.yaml" in (finding.hint or "")


def test_only_objects_in_git() -> None:
    ((fn, _),) = _rules().values()
    assert list(fn(SimpleNamespace(drifts=[_drift("Deployment", {}, desired=False)]))) == []


def test_label_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITDRIFT_OWNER_LABEL", "example.com/team")
    ((fn, kw),) = _rules().values()
    assert "'example.com/team'" in kw["doc"]
    drifts = [_drift("Deployment", {"owner": "a"}), _drift("Deployment", {"example.com/team": "a"})]
    findings = list(fn(SimpleNamespace(drifts=drifts)))
    assert [f.path for f in findings] == [("metadata", "labels", "example.com/team")]
