"""Built-in rules: one module per rule, every code registered and documented; self-heal
backoff; sync windows; tracking audit; and the diag-* scenarios each carry their code with
evidence."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from kubectl_gitdrift import hookcalls, model
from kubectl_gitdrift.builtin import rules
from kubectl_gitdrift.builtin.rules import ignored_but_overwritten, self_heal
from kubectl_gitdrift.diagnose import syncwindows, tracking
from tests.conftest import TESTDATA

CODES = {
    "manual-drift",
    "selfheal-disabled",
    "automated-sync-disabled",
    "prune-irrelevant",
    "git-ahead",
    "last-sync-failed",
    "immutable-field",
    "crd-missing",
    "sync-window-closed",
    "ignored-but-overwritten",
    "field-fight",
    "extraneous-resource",
    "missing-resource",
    "selfheal-backoff",
    "tracking-id-missing",
    "tracking-id-invalid",
    "tracking-id-mismatch",
    "tracking-id-copied",
    "controller-forbidden",
    "nondeterministic-render",
    "server-filled",
    "ignore-rule-unmatched",
    "admission-mutation",
    "stuck-deleting",
}


def test_every_code_is_registered(pm) -> None:  # type: ignore[no-untyped-def]
    registered = {c for r in hookcalls.collect_rules(pm) for c in r.codes}
    assert registered >= CODES


RULE_MODULES = sorted(
    m.name for m in pkgutil.iter_modules(rules.__path__) if m.name not in ("__init__", "_common")
)
"""builtin/rules/ minus the plugin (__init__) and the helpers (_common): one module per rule."""


def _register_calls() -> list[tuple[str, Any, dict[str, Any]]]:
    """What the builtin/rules plugin passes to `register`, in order."""
    calls: list[tuple[str, Any, dict[str, Any]]] = []

    def register(rule_id: str, fn: Any, **kw: Any) -> None:
        calls.append((rule_id, fn, kw))

    rules.gitdrift_register_rules(register)
    return calls


def test_each_rule_module_registers_one_rule_named_after_its_file() -> None:
    by_module: dict[str, list[str]] = {}
    for rule_id, fn, _ in _register_calls():
        by_module.setdefault(fn.__module__, []).append(rule_id)
    assert sorted(by_module) == [f"{rules.__name__}.{name}" for name in RULE_MODULES]
    for name in RULE_MODULES:
        module = importlib.import_module(f"{rules.__name__}.{name}")
        rule_id = "builtin/" + name.replace("_", "-")
        assert by_module[module.__name__] == [rule_id]
        assert rule_id == module.ID


def test_the_rules_register_in_their_historic_order() -> None:
    # the order gitdrift_register_rules has always used; the split into modules kept it
    assert [rule_id for rule_id, _, _ in _register_calls()] == [
        "builtin/ssa-field-released",
        "builtin/manual-drift",
        "builtin/field-fight",
        "builtin/sync-policy",
        "builtin/self-heal",
        "builtin/git-ahead",
        "builtin/last-sync-failed",
        "builtin/immutable-field",
        "builtin/crd-missing",
        "builtin/sync-windows",
        "builtin/ignored-but-overwritten",
        "builtin/tracking",
        "builtin/controller-rbac",
        "builtin/missing-extraneous",
        "builtin/nondeterministic-render",
        "builtin/ignore-rule-unmatched",
        "builtin/server-filled",
        "builtin/admission-mutation",
        "builtin/stuck-deleting",
    ]


@pytest.mark.parametrize("name", RULE_MODULES)
def test_no_rule_module_imports_another(name: str) -> None:
    path = Path(rules.__path__[0]) / f"{name}.py"
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
    others = {f"{rules.__name__}.{other}" for other in RULE_MODULES if other != name}
    assert imported & others == set()


def test_every_builtin_rule_has_a_doc(pm) -> None:  # type: ignore[no-untyped-def]
    for _, _, kw in _register_calls():
        assert kw["doc"].strip()
    builtin = [r for r in hookcalls.collect_rules(pm) if r.plugin.startswith("builtin/")]
    assert builtin
    for rule in builtin:
        assert rule.doc.strip(), rule.id
        assert rule.doc != "Undocumented", rule.id  # what collect_rules puts for doc=""


def test_every_code_has_a_scenario_with_evidence() -> None:
    seen: dict[str, list[str]] = {}
    for expected in sorted((TESTDATA / "scenarios").glob("diag-*/expected.json")):
        report = json.loads(expected.read_text())
        for finding in report["applications"][0]["findings"]:
            assert finding["evidence"], (expected.parent.name, finding["code"])
            seen.setdefault(finding["code"], []).append(expected.parent.name)
    assert set(seen) >= CODES, sorted(CODES - set(seen))


@pytest.mark.parametrize(
    ("attempts", "delay"), [(0, 0), (1, 2), (2, 6), (3, 18), (4, 54), (5, 162), (6, 300), (9, 300)]
)
def test_self_heal_backoff(attempts: int, delay: int) -> None:
    assert self_heal.self_heal_delay(attempts) == delay


def _app(**kw: object) -> model.Application:
    base: dict[str, object] = {
        "name": "guestbook",
        "namespace": "argocd",
        "project": "default",
        "sources": (),
        "dest_server": "https://kubernetes.default.svc",
        "dest_name": "",
        "dest_namespace": "prod",
        "sync_policy": model.SyncPolicy(automated=True),
        "ignore_rules": (),
        "sync_status": "OutOfSync",
        "revisions": (),
        "history": (),
        "operation": None,
    }
    base.update(kw)
    return model.Application(**base)  # type: ignore[arg-type]


def _project(*windows: dict[str, object]) -> dict[str, object]:
    return {"kind": "AppProject", "spec": {"syncWindows": list(windows)}}


AT = datetime(2026, 11, 30, 4, 4, 34, tzinfo=timezone.utc)  # a Monday


def test_sync_windows() -> None:
    app = _app()
    deny = {"kind": "deny", "schedule": "0 4 * * *", "duration": "1h", "applications": ["guest*"]}
    verdict = syncwindows.can_sync(app, _project(deny), AT)
    assert (verdict.automated, verdict.manual) == (False, False)
    assert syncwindows.can_sync(app, _project({**deny, "manualSync": True}), AT).manual
    # an allow window elsewhere in time blocks, one now allows
    night = {"kind": "allow", "schedule": "0 22 * * 1-5", "duration": "2h", "namespaces": ["prod"]}
    assert not syncwindows.can_sync(app, _project(night), AT).automated
    now = {**night, "schedule": "0 4 * * mon"}
    assert syncwindows.can_sync(app, _project(now), AT).automated
    # windows for other apps do not apply; time zones shift the schedule
    other = {**deny, "applications": ["billing"]}
    assert syncwindows.can_sync(app, _project(other), AT).automated
    tz = {**deny, "schedule": "0 5 * * *", "timeZone": "Europe/Berlin"}
    assert not syncwindows.can_sync(app, _project(tz), AT).automated


@pytest.mark.parametrize("bad", ["0 4 * *", "61 * * * *", "*/0 * * * *", "0 4 * * funday"])
def test_bad_cron(bad: str) -> None:
    with pytest.raises(syncwindows.CronError):
        syncwindows.parse_cron(bad)


def test_cron_dom_dow_or() -> None:
    cron = syncwindows.parse_cron("0 0 1 * mon")
    assert cron.matches(datetime(2026, 12, 1, 0, 0))  # the 1st (a Tuesday)
    assert cron.matches(datetime(2026, 12, 7, 0, 0))  # a Monday
    assert not cron.matches(datetime(2026, 12, 8, 0, 0))
    assert syncwindows.parse_cron("@hourly").matches(datetime(2026, 12, 8, 3, 0))


@pytest.mark.parametrize(
    ("method", "annotations", "label"),
    [
        (model.TrackingMethod.ANNOTATION, True, False),  # Argo CD's default writes no label
        (model.TrackingMethod.ANNOTATION_AND_LABEL, True, True),
        (model.TrackingMethod.LABEL, False, True),
    ],
)
def test_tracking_fields_follow_the_tracking_method(
    method: model.TrackingMethod, annotations: bool, label: bool
) -> None:
    """What a sync writes whatever git says, under each of argocd-cm's tracking methods, as
    Argo CD's SetAppInstance writes it (and diagnose/tracking's prepare_desired)."""
    settings = model.Settings(tracking_method=method, instance_label_key="team/app")
    assert (
        tracking.is_tracking_field(("metadata", "annotations", tracking.TRACKING_ID), settings)
        is annotations
    )
    assert (
        tracking.is_tracking_field(("metadata", "annotations", tracking.INSTALLATION_ID), settings)
        is annotations
    )
    assert tracking.is_tracking_field(("metadata", "labels", "team/app"), settings) is label
    assert not tracking.is_tracking_field(
        ("metadata", "labels", "app.kubernetes.io/instance"), settings
    )
    assert not tracking.is_tracking_field(("spec", "labels", "team/app"), settings)


def test_tracking_audit() -> None:
    app = _app()
    settings = model.Settings()
    key = model.ObjectKey("", "Service", "prod", "web")

    def drift(annotation: str | None) -> model.Drift:
        annotations = {} if annotation is None else {tracking.TRACKING_ID: annotation}
        live = {"metadata": {"name": "web", "namespace": "prod", "annotations": annotations}}
        return model.Drift(key, model.ResourceStatus.OUT_OF_SYNC, desired={}, live=live)

    cases = {
        None: tracking.MISSING,
        "guestbook:Service:prod/web": tracking.INVALID,
        "storefront:/Service:prod/web": tracking.MISMATCH,
        "guestbook:/Service:prod/other": tracking.COPIED,
    }
    for annotation, code in cases.items():
        (issue,) = tracking.audit([drift(annotation)], [], app, settings)
        assert issue.code == code
    assert tracking.audit([drift("guestbook:/Service:prod/web")], [], app, settings) == []
    (mismatch,) = tracking.audit([drift("apps_storefront:/Service:prod/web")], [], app, settings)
    assert tracking.shared_resource_warning(mismatch, app) == (
        "Service/web is part of applications argocd/guestbook and apps/storefront"
    )


def test_ignored_but_overwritten_respects_the_sync_option() -> None:
    change = model.Change(model.Op.CHANGE, ("spec", "replicas"), 3, 6)
    hidden = model.Suppressed(change, "application/ignoreDifferences[0]", "application")
    key = model.ObjectKey("apps", "Deployment", "prod", "guestbook")
    drift = model.Drift(
        key, model.ResourceStatus.SYNCED, suppressed=(hidden,), desired={}, live={"metadata": {}}
    )

    class Ctx:
        def __init__(self, app: model.Application) -> None:
            self.app, self.settings, self.drifts, self.live = app, model.Settings(), [drift], []
            self.managed_fields_known = True

    assert [f.code for f in ignored_but_overwritten.check(Ctx(_app()))] == [
        "ignored-but-overwritten"
    ]
    respect = _app(
        sync_policy=model.SyncPolicy(True, sync_options=("RespectIgnoreDifferences=true",))
    )
    assert list(ignored_but_overwritten.check(Ctx(respect))) == []


@pytest.mark.parametrize(
    ("reason", "grant"),
    [
        ("403 Forbidden: RBAC does not allow verb 'list' on secrets", True),
        ("Forbidden by the API server", True),
        ("500 Internal Server Error from https://10.0.0.1:6403/api/v1/secrets", False),
        ("server at 127.0.0.1:40312 did not answer", False),
    ],
)
def test_unreadable_hint_reads_403_as_a_status(reason: str, grant: bool) -> None:
    from kubectl_gitdrift.builtin import unreadable

    assert unreadable._hint(reason).startswith("grant get/list/watch") is grant
