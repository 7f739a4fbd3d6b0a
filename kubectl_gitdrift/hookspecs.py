"""The plugin contract: every hook a built-in or team plugin can implement.

Hooks that contribute named things take a `register` callback, so each rule, ignore rule and
output format records the plugin that provided it. The core calls hooks only through `call_each`
and `first_result`, which name the plugin in the error when one raises.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pluggy

from kubectl_gitdrift import model
from kubectl_gitdrift.errors import GitDriftError, PluginError

PROJECT = "kubectl_gitdrift"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class RuleContext(Protocol):
    """What a diagnosis rule sees (built by diagnosis.py): the app, its settings and every drift."""

    @property
    def app(self) -> model.Application: ...
    @property
    def settings(self) -> model.Settings: ...
    @property
    def drifts(self) -> Sequence[model.Drift]: ...
    @property
    def live(self) -> Sequence[model.Manifest]: ...
    @property
    def managed_fields_known(self) -> bool: ...


RuleFn = Callable[[RuleContext], Iterable[model.Finding]]
RendererFn = Callable[[model.Report], str]


@dataclass(frozen=True, slots=True)
class Rule:
    id: str  # "builtin/manual-drift", "team-payments/owner-label"
    fn: RuleFn
    severity: model.Severity
    doc: str
    plugin: str
    codes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Renderer:
    name: str  # the -o value
    fn: RendererFn
    doc: str
    plugin: str


class RegisterRule(Protocol):
    def __call__(
        self,
        rule_id: str,
        fn: RuleFn,
        *,
        severity: model.Severity = ...,
        doc: str = ...,
        codes: Sequence[str] = ...,
    ) -> None: ...


class RegisterRenderer(Protocol):
    def __call__(self, name: str, fn: RendererFn, *, doc: str = ...) -> None: ...


@hookspec
def gitdrift_register_rules(register: RegisterRule) -> None:
    """Register diagnosis rules: `register(rule_id, fn, severity=, doc=, codes=)`.

    `fn(ctx)` gets a RuleContext and yields Findings; it must be pure. Called once per run, for
    every plugin (1:N). Rule ids are `<plugin>/<name>` and must be unique.
    """


@hookspec
def gitdrift_ignore_rules(
    app: model.Application, live: Sequence[model.Manifest]
) -> Iterable[model.IgnoreRule] | None:
    """Ignore rules this plugin adds for an application (1:N: every plugin's rules are used).

    Each IgnoreRule names what it hides (group/kind globs, name, namespace, jsonPointers,
    jqPathExpressions, managedFieldsManagers); set `rule_id` so `--show-suppressed` can say which
    rule hid a field. `live` is every live object read, e.g. to find HPAs and their targets.
    """


@hookspec
def gitdrift_normalize(key: model.ObjectKey, body: dict[str, Any], side: str) -> None:
    """Edit an object in place before it is compared (1:N, each plugin in turn).

    `side` is "desired" or "live". Called after the built-in normalization, on private copies.
    Use it for what an ignore rule cannot express, e.g. dropping an injected sidecar container.
    """


@hookspec(firstresult=True)
def gitdrift_attribute(change: model.Change, live: Mapping[str, Any]) -> model.Owner | None:
    """Name the writer behind a drifted live field; the first non-None answer wins.

    Plugins registered later are asked first, so a team plugin overrides the built-in
    managedFields attribution.
    """


@hookspec
def gitdrift_register_renderers(register: RegisterRenderer) -> None:
    """Register output formats for `-o NAME`: `register(name, fn(report) -> str, doc=)` (1:N)."""


# --------------------------------------------------------------------------- calling hooks


def call_each(pm: pluggy.PluginManager, hook: str, **kwargs: Any) -> list[tuple[str, Any]]:
    """Call every implementation of a 1:N hook, newest plugin first, as (plugin name, result).

    Unlike `pm.hook.X(...)` this knows which plugin gave which result and names the plugin when
    one raises.
    """
    results: list[tuple[str, Any]] = []
    for impl in reversed(getattr(pm.hook, hook).get_hookimpls()):
        results.append((impl.plugin_name, _call(impl, hook, kwargs)))
    return results


def first_result(pm: pluggy.PluginManager, hook: str, **kwargs: Any) -> tuple[str, Any]:
    """Call a firstresult hook's implementations, newest first; (plugin, result) of the first
    non-None answer, or ("", None)."""
    for impl in reversed(getattr(pm.hook, hook).get_hookimpls()):
        result = _call(impl, hook, kwargs)
        if result is not None:
            return impl.plugin_name, result
    return "", None


def _call(impl: pluggy.HookImpl, hook: str, kwargs: Mapping[str, Any]) -> Any:
    try:
        return impl.function(**{name: kwargs[name] for name in impl.argnames})
    except GitDriftError:
        raise
    except Exception as exc:
        raise PluginError(
            f"plugin {impl.plugin_name!r} failed in {hook}: {type(exc).__name__}: {exc}",
            hint="run with --debug for the traceback, or --disable-plugin " + impl.plugin_name,
        ) from exc


def collect_rules(pm: pluggy.PluginManager) -> list[Rule]:
    """Every diagnosis rule the loaded plugins register, with the plugin that registered it."""
    rules: dict[str, Rule] = {}
    for impl in pm.hook.gitdrift_register_rules.get_hookimpls():
        plugin = impl.plugin_name

        def register(
            rule_id: str,
            fn: RuleFn,
            *,
            severity: model.Severity = model.Severity.WARNING,
            doc: str = "",
            codes: Sequence[str] = (),
            _plugin: str = plugin,
        ) -> None:
            if rule_id in rules:
                raise PluginError(
                    f"plugin {_plugin!r} registers rule {rule_id!r}, "
                    f"already registered by {rules[rule_id].plugin!r}"
                )
            rules[rule_id] = Rule(
                rule_id, fn, severity, doc or "Undocumented", _plugin, tuple(codes)
            )

        _call(impl, "gitdrift_register_rules", {"register": register})
    return [rules[k] for k in sorted(rules)]


def collect_renderers(pm: pluggy.PluginManager) -> dict[str, Renderer]:
    """Output formats by name; a later plugin may replace a built-in format."""
    renderers: dict[str, Renderer] = {}
    for impl in pm.hook.gitdrift_register_renderers.get_hookimpls():
        plugin = impl.plugin_name

        def register(name: str, fn: RendererFn, *, doc: str = "", _plugin: str = plugin) -> None:
            renderers[name] = Renderer(name, fn, doc or "Undocumented", _plugin)

        _call(impl, "gitdrift_register_renderers", {"register": register})
    return renderers
