"""kubectl_gitdrift.diagnose.nondeterminism and builtin/nondeterministic-render: a drifted field a
chart renders anew each time is claimed (never adopted nor reverted), with the template, the
function and the fixes that fit; and, through the engine on a real v1.36 Secret, no selfHeal
advice and no secret value anywhere."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from kubectl_gitdrift import engine, hookcalls, model, plugins
from kubectl_gitdrift.builtin.rules import nondeterministic_render
from kubectl_gitdrift.diagnose import nondeterminism
from kubectl_gitdrift.diagnose import rules as diagnosis
from kubectl_gitdrift.model import RemedyKind, RenderCall, VaryingRender
from kubectl_gitdrift.present import report
from tests.conftest import TESTDATA

SECRET = model.ObjectKey("", "Secret", "shop", "db-auth")
RENDERED = model.ObjectKey("", "Secret", "", "db-auth")  # helm sets no namespace
PASSWORD = ("data", "password")
CALL = RenderCall(
    file="charts/db/templates/secret.yaml",
    line=9,
    function="randAlphaNum",
    fields=("password",),
    value="auth.password",
)


def _app(**kw: Any) -> model.Application:
    base: dict[str, Any] = {
        "name": "db",
        "namespace": "argocd",
        "project": "default",
        "sources": (),
        "dest_server": "https://kubernetes.default.svc",
        "dest_name": "",
        "dest_namespace": "shop",
        "sync_policy": model.SyncPolicy(automated=True),
        "ignore_rules": (),
        "sync_status": "OutOfSync",
        "revisions": (),
        "history": (),
        "operation": None,
    }
    base.update(kw)
    return model.Application(**base)


def _drift(key: model.ObjectKey, *paths: model.FieldPath) -> model.Drift:
    changes = tuple(
        model.Change(model.Op.CHANGE, p, "++++++++", "++++++++++++", secret=True) for p in paths
    )
    live = {"data": {"password": "x", "username": "y"}, "metadata": {"name": key.name}}
    return model.Drift(key, model.ResourceStatus.OUT_OF_SYNC, changes, live=live)


def _render(**kw: Any) -> VaryingRender:
    base: dict[str, Any] = {
        "template": "charts/db/templates/secret.yaml",
        "chart": "charts/db",
        "objects": (RENDERED,),
        "calls": (CALL,),
        "varied": ((RENDERED, PASSWORD),),
        "compared": True,
    }
    base.update(kw)
    return VaryingRender(**base)


def _ctx(drifts: list[model.Drift], *varying: VaryingRender, **app: Any) -> diagnosis.Context:
    return diagnosis.Context(_app(**app), model.Settings(), drifts, [], True, varying=varying)


def test_a_field_two_renders_disagree_on_is_claimed_neither_adoptable_nor_revertable() -> None:
    drift = _drift(SECRET, PASSWORD, ("data", "username"))
    (cause,) = nondeterminism.detect(_ctx([drift], _render(existing_secret="auth.existingSecret")))
    assert (cause.code, cause.key, cause.path) == ("nondeterministic-render", SECRET, PASSWORD)
    assert not cause.adoptable
    assert not cause.revertable
    assert cause.evidence == {
        "path": "data.password",
        "pointer": "/data/password",
        "template": "charts/db/templates/secret.yaml",
        "chart": "charts/db",
        "renderedTwice": "differed",
        "call": {
            "file": "charts/db/templates/secret.yaml",
            "line": 9,
            "function": "randAlphaNum",
            "fields": ["password"],
        },
        "chartValue": "auth.password",
        "existingSecret": "auth.existingSecret",
    }
    fixed, ignore, verify = cause.fixes
    assert verify.commands == ("argocd app get db --hard-refresh",)
    assert fixed.kind is RemedyKind.PREVENT
    assert fixed.title == "Give charts/db a fixed password instead of randAlphaNum"
    assert fixed.snippet == (
        "# a fixed value:\nauth:\n  password: <a fixed value>\n"
        "# or a Secret you manage:\nauth:\n  existingSecret: <the Secret's name>\n"
    )
    assert "RespectIgnoreDifferences=true" in ignore.commands[0]
    assert '"jsonPointers":["/data/password"]' in ignore.commands[0]
    assert not any("selfHeal" in c for r in cause.fixes for c in r.commands)


def test_a_template_that_rendered_the_same_twice_claims_nothing() -> None:
    quiet = _render(varied=())
    assert list(nondeterminism.detect(_ctx([_drift(SECRET, PASSWORD)], quiet))) == []
    other = _render(objects=(model.ObjectKey("", "Secret", "", "other"),))
    assert list(nondeterminism.detect(_ctx([_drift(SECRET, PASSWORD)], other))) == []


def test_string_data_is_compared_as_data() -> None:
    varying = _render(varied=((RENDERED, ("stringData", "password")),))
    (cause,) = nondeterminism.detect(_ctx([_drift(SECRET, PASSWORD)], varying))
    assert cause.path == PASSWORD


def test_a_time_function_is_tied_to_the_field_its_line_sets() -> None:
    key = model.ObjectKey("", "ConfigMap", "shop", "x")
    now = RenderCall("charts/db/templates/cm.yaml", 6, "now", fields=("deployed-on",))
    varying = _render(objects=(key,), calls=(now,), varied=(), template=now.file)
    path = ("metadata", "annotations", "deployed-on")
    (cause,) = nondeterminism.detect(_ctx([_drift(key, path, ("data", "a"))], varying))
    assert cause.path == path
    assert cause.evidence["renderedTwice"] == "not compared"
    (fix, _ignore, _verify) = cause.fixes
    assert fix.title == "Make charts/db/templates/cm.yaml render deployed-on the same every time"


def test_a_derived_value_names_the_calls_it_comes_from() -> None:
    key = model.ObjectKey("apps", "Deployment", "shop", "db")
    path = ("spec", "template", "metadata", "annotations", "checksum/secret")
    derived = _render(
        template="charts/db/templates/deployment.yaml",
        objects=(model.ObjectKey("apps", "Deployment", "", "db"),),
        calls=(),
        varied=((model.ObjectKey("apps", "Deployment", "", "db"), path),),
    )
    (cause,) = nondeterminism.detect(_ctx([_drift(key, path)], derived, _render()))
    assert cause.evidence["derivedFrom"] == [
        {
            "file": "charts/db/templates/secret.yaml",
            "line": 9,
            "function": "randAlphaNum",
            "fields": ["password"],
        }
    ]


def test_the_rule_says_what_a_sync_and_self_heal_do() -> None:
    ctx = _ctx([_drift(SECRET, PASSWORD)], _render(lookup=True), sync_status="Synced")
    ctx = dataclasses.replace(ctx, causes=_claims(ctx))
    (finding,) = nondeterministic_render.check(ctx)
    assert finding.code == "nondeterministic-render"
    assert finding.rule == ""
    assert finding.path == PASSWORD
    assert "charts/db/templates/secret.yaml line 9 calls randAlphaNum" in finding.message
    assert "A sync writes yet another value" in finding.message
    assert "selfHeal would rotate it at every refresh" in finding.message
    assert "Argo CD still says Synced" in finding.message
    assert "lookup" in finding.evidence["lookup"]
    assert "The chart's lookup, meant to keep the value already in the cluster" in finding.message
    assert finding.hint is not None
    assert "auth.password" in finding.hint


def _claims(ctx: diagnosis.Context) -> dict[Any, Any]:
    return {c.claim: c for c in nondeterminism.detect(ctx)}


def test_through_the_engine_on_a_real_secret_no_self_heal_no_adopt_no_value() -> None:
    recorded = json.loads(
        (TESTDATA / "apiserver/v1.36/secret-01-client-side-applied-with-data.json").read_text()
    )
    key = model.ObjectKey.of(recorded)
    desired = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "demo-creds"},
        "type": "Opaque",
        "data": {"password": "cmFuZG9tLW5ldy12YWx1ZQ==", "username": "ZGVtbw=="},
    }
    last = model.HistoryEntry(id=1, revision="a" * 40, deployed_at="2026-12-02T00:57:44Z")
    app = _app(
        name="demo",
        dest_namespace="rr-api",
        revisions=("a" * 40,),
        history=(last,),
        sync_policy=model.SyncPolicy(automated=True, self_heal=False),
    )
    varying = _render(
        template="charts/demo/templates/secret.yaml",
        chart="charts/demo",
        objects=(model.ObjectKey("", "Secret", "", "demo-creds"),),
        calls=(CALL,),
        varied=((model.ObjectKey("", "Secret", "", "demo-creds"), PASSWORD),),
    )
    pm = plugins.make_plugin_manager(entry_points=False)
    inputs = engine.Inputs(
        app=app,
        settings=model.Settings(),
        desired=[model.Manifest(model.ObjectKey.of(desired), desired, varying.template)],
        live=[model.Manifest(key, recorded)],
        revision="a" * 40,
        source="charts/demo",
        varying=(varying,),
    )
    out = engine.run(inputs, pm, engine.Options(rules=hookcalls.collect_rules(pm)))
    assert [f.code for f in out.findings if f.key == key] == ["nondeterministic-render"]
    assert "selfheal-disabled" not in {f.code for f in out.findings}
    kinds = [r.kind for r in out.remedies]
    assert RemedyKind.ADOPT not in kinds
    assert RemedyKind.REVERT not in kinds
    assert not any("selfHeal" in r.title for r in out.remedies)
    text = report.render_json(model.Report((out,), "offline"))
    for value in (*recorded["data"].values(), *desired["data"].values(), "not-a-real-password"):
        assert value not in text
