"""The hook contract: every hook typed and documented, and the call helpers that check what
plugins return, stamp provenance, and name the plugin when one fails."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from kubectl_gitdrift import hookcalls, hookspecs, model, plugins
from kubectl_gitdrift.errors import PluginError
from kubectl_gitdrift.hookspecs import hookimpl

APP_ARGS: dict[str, Any] = {"app": None, "live": ()}


def test_every_hook_is_typed_and_documented() -> None:
    specs = sorted(n for n in dir(hookspecs) if n.startswith("gitdrift_"))
    assert tuple(specs) == hookspecs.HOOKS
    for name in specs:
        fn = getattr(hookspecs, name)
        assert getattr(fn, "kubectl_gitdrift_spec", None) is not None, name
        assert "Calls: " in (fn.__doc__ or ""), f"{name} does not say how it is called"
        signature = inspect.signature(fn)
        assert signature.return_annotation is not inspect.Signature.empty, name
        assert all(p.annotation is not p.empty for p in signature.parameters.values()), name
    firstresult = {n for n in specs if getattr(hookspecs, n).kubectl_gitdrift_spec["firstresult"]}
    assert firstresult == {"gitdrift_attribute"}


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [("gitdrift_normalise", "gitdrift_normalize"),
     ("gitdrift_register_rule", "gitdrift_register_rules"),
     ("gitdrift_xyz", None)],
)  # fmt: skip
def test_suggest_hook(name: str, suggestion: str | None) -> None:
    assert hookcalls.suggest_hook(name) == (f" (did you mean {suggestion}?)" if suggestion else "")


def _pm(*team: object) -> plugins.PluginManager:
    pm = plugins.make_plugin_manager(entry_points=False)
    for i, plugin in enumerate(team):
        pm.register(plugin, name=f"team{i}")
    return pm


RULE = model.IgnoreRule("apps", "Deployment", json_pointers=("/spec/replicas",), rule_id="t/r")


def test_call_each_newest_first_and_stamps_origin() -> None:
    class A:
        @hookimpl
        def gitdrift_ignore_rules(self) -> Iterator[model.IgnoreRule]:
            yield RULE

    class B:
        @hookimpl
        def gitdrift_ignore_rules(self) -> None:
            return None

    results = hookcalls.call_each(_pm(A(), B()), "gitdrift_ignore_rules", **APP_ARGS)
    assert results == [
        ("team1", ()),
        ("team0", (RULE.__class__(**{**_fields(RULE), "origin": "team0"}),)),
    ]


def _fields(rule: model.IgnoreRule) -> dict[str, Any]:
    return {f: getattr(rule, f) for f in rule.__dataclass_fields__}


@pytest.mark.parametrize(
    ("result", "message"),
    [
        (RULE, "must return an iterable of IgnoreRule, not IgnoreRule"),
        ([{"group": "apps"}], "returned a dict, not an IgnoreRule"),
        ([model.IgnoreRule("", "ConfigMap", json_pointers=("data",))], "JSON pointer 'data'"),
        ([model.IgnoreRule("", "ConfigMap", jq_paths=(".data[",))], "invalid jq path expression"),
    ],
)
def test_ignore_rules_are_checked(result: Any, message: str) -> None:
    class Bad:
        @hookimpl
        def gitdrift_ignore_rules(self) -> Any:
            return result

    with pytest.raises(PluginError, match="plugin 'team0' failed in gitdrift_ignore_rules") as info:
        hookcalls.call_each(_pm(Bad()), "gitdrift_ignore_rules", **APP_ARGS)
    assert message in info.value.message
    assert "--disable-plugin team0" in (info.value.hint or "")


def test_normalize_must_return_none() -> None:
    class Bad:
        @hookimpl
        def gitdrift_normalize(self, body: dict[str, Any]) -> dict[str, Any]:
            return {}

    with pytest.raises(PluginError, match="must edit the body in place"):
        hookcalls.call_each(_pm(Bad()), "gitdrift_normalize", key=None, body={}, side="live")


def _register_rules(*calls: tuple[Any, ...], **kw: Any) -> object:
    class Team:
        @hookimpl
        def gitdrift_register_rules(self, register: hookspecs.RegisterRule) -> None:
            for args in calls:
                register(*args, **kw)

    return Team()


def test_rules_record_their_plugin_and_findings_are_checked() -> None:
    finding = model.Finding("x", model.Severity.INFO, "m")
    pm = _pm(_register_rules(("team/ok", lambda ctx: [finding]), ("team/bad", lambda ctx: ["x"])))
    rules = {r.id: r for r in hookcalls.collect_rules(pm)}
    assert rules["team/ok"].plugin == "team0"
    assert rules["team/ok"].doc == "Undocumented"
    assert rules["builtin/manual-drift"].plugin == "builtin/rules"
    assert list(rules["team/ok"].fn(None)) == [finding]  # type: ignore[arg-type]
    with pytest.raises(PluginError, match="rule 'team/bad' of plugin 'team0' failed: TypeError"):
        list(rules["team/bad"].fn(None))  # type: ignore[arg-type]


def test_duplicate_rule_id() -> None:
    pm = _pm(_register_rules(("builtin/manual-drift", lambda ctx: [])))
    with pytest.raises(PluginError, match="already registered by 'builtin/rules'"):
        hookcalls.collect_rules(pm)


@pytest.mark.parametrize(
    ("args", "kw", "message"),
    [
        (("noslash", print), {}, "must look like '<plugin>/<name>'"),
        (("team/x", "not callable"), {}, "fn is not callable"),
        (("team/x", print), {"severity": "high"}, "severity must be a Severity"),
    ],
)
def test_bad_registrations(args: tuple[Any, ...], kw: dict[str, Any], message: str) -> None:
    with pytest.raises(PluginError, match="plugin 'team0' failed in gitdrift_register_rules") as e:
        hookcalls.collect_rules(_pm(_register_rules(args, **kw)))
    assert message in e.value.message


def test_renderers_later_plugin_wins_and_output_is_checked() -> None:
    class Team:
        @hookimpl
        def gitdrift_register_renderers(self, register: hookspecs.RegisterRenderer) -> None:
            register("json", lambda report: "{}\n", doc="Team JSON.")
            register("bytes", lambda report: b"x")  # type: ignore[arg-type,return-value]

    renderers = hookcalls.collect_renderers(_pm(Team()))
    assert (renderers["json"].plugin, renderers["json"].doc) == ("team0", "Team JSON.")
    assert renderers["yaml"].plugin == "builtin/renderers"
    report = model.Report(applications=(), mode="offline")
    assert renderers["json"].fn(report) == "{}\n"
    with pytest.raises(PluginError, match="output format 'bytes' of plugin 'team0' failed"):
        renderers["bytes"].fn(report)
