"""Calls the plugins' hooks: each result checked, each failure a one-line error naming the plugin.

The core never calls `pm.hook.X(...)` itself: `call_each` and `first_result` say which plugin gave
which answer, and `collect_rules` and `collect_renderers` gather what the `register` callbacks
were given. An exception raised inside a plugin becomes a `PluginError` naming it (exit code 4).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pluggy

from kubectl_gitdrift import model
from kubectl_gitdrift.errors import GitDriftError, PluginError
from kubectl_gitdrift.hookspecs import (
    HOOKS,
    Renderer,
    RendererFn,
    Rule,
    RuleContext,
    RuleFn,
)


def suggest_hook(name: str) -> str:
    """`" (did you mean gitdrift_normalize?)"` for a misspelled hook name, else ""."""
    prefix = "gitdrift_"
    names = {hook.removeprefix(prefix): hook for hook in HOOKS}
    close = difflib.get_close_matches(name.removeprefix(prefix), list(names), n=1, cutoff=0.6)
    return f" (did you mean {names[close[0]]}?)" if close else ""


def one_line(exc: BaseException) -> str:
    """`TypeName: first line of the message`, for one-line errors."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def call_each(pm: pluggy.PluginManager, hook: str, **kwargs: Any) -> list[tuple[str, Any]]:
    """Call every implementation of a 1:N hook, newest plugin first, as (plugin name, result).

    Unlike `pm.hook.X(...)` this knows which plugin gave which result, checks the result, and
    names the plugin when one raises.
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
    plugin = impl.plugin_name
    try:
        result = impl.function(**{name: kwargs[name] for name in impl.argnames})
        check = _CHECKS.get(hook)
        return check(plugin, result) if check is not None else result
    except GitDriftError:
        raise
    except Exception as exc:
        raise PluginError(
            f"plugin {plugin!r} failed in {hook}: {one_line(exc)}",
            hint=f"run with --debug for the traceback, or --disable-plugin {plugin}",
        ) from exc


def _check_ignore_rules(plugin: str, result: Any) -> tuple[model.IgnoreRule, ...]:
    """Materialise (a generator raises here, inside the plugin's call) and stamp the plugin."""
    if result is None:
        return ()
    if isinstance(result, model.IgnoreRule | str | bytes | Mapping) or not isinstance(
        result, Iterable
    ):
        raise TypeError(f"must return an iterable of IgnoreRule, not {type(result).__name__}")
    out = []
    for rule in result:
        if not isinstance(rule, model.IgnoreRule):
            raise TypeError(f"returned a {type(rule).__name__}, not an IgnoreRule")
        for pointer in rule.json_pointers:
            if not isinstance(pointer, str) or not (pointer == "" or pointer.startswith("/")):
                raise ValueError(f"JSON pointer {pointer!r} must start with '/'")
        for expr in rule.jq_paths:
            _check_jq(expr)
        out.append(replace(rule, origin=plugin))
    return tuple(out)


def _check_jq(expr: str) -> None:
    import jq

    try:
        jq.compile(f"del({expr})")
    except ValueError as exc:
        raise ValueError(f"invalid jq path expression {expr!r}: {one_line(exc)}") from None


def _check_owner(plugin: str, result: Any) -> model.Owner | None:
    if result is not None and not isinstance(result, model.Owner):
        raise TypeError(f"must return an Owner or None, not {type(result).__name__}")
    return result


def _check_none(plugin: str, result: Any) -> None:
    if result is not None:
        raise TypeError(f"must edit the body in place and return None, not {type(result).__name__}")


_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "gitdrift_ignore_rules": _check_ignore_rules,
    "gitdrift_attribute": _check_owner,
    "gitdrift_normalize": _check_none,
}


def _checked_rule(rule_id: str, plugin: str, fn: RuleFn) -> RuleFn:
    """The rule's findings, checked one by one (a generator raises while iterated here)."""

    def run(ctx: RuleContext) -> Iterator[model.Finding]:
        try:
            for finding in fn(ctx) or ():
                if not isinstance(finding, model.Finding):
                    raise TypeError(f"yielded a {type(finding).__name__}, not a Finding")
                yield finding
        except GitDriftError:
            raise
        except Exception as exc:
            raise PluginError(
                f"rule {rule_id!r} of plugin {plugin!r} failed: {one_line(exc)}",
                hint=f"run with --debug for the traceback, or --disable-rule {rule_id}",
            ) from exc

    run.__doc__ = fn.__doc__
    return run


def collect_rules(pm: pluggy.PluginManager) -> list[Rule]:
    """Every diagnosis rule the loaded plugins register, with the plugin that registered it,
    sorted by id."""
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
            if not isinstance(rule_id, str) or "/" not in rule_id.strip("/"):
                raise ValueError(f"rule id {rule_id!r} must look like '<plugin>/<name>'")
            if not callable(fn):
                raise TypeError(f"rule {rule_id!r}: fn is not callable")
            if not isinstance(severity, model.Severity):
                raise TypeError(f"rule {rule_id!r}: severity must be a Severity")
            if rule_id in rules:
                raise PluginError(
                    f"plugin {_plugin!r} registers rule {rule_id!r}, "
                    f"already registered by {rules[rule_id].plugin!r}"
                )
            rules[rule_id] = Rule(
                rule_id,
                _checked_rule(rule_id, _plugin, fn),
                severity,
                " ".join((doc or "Undocumented").split()),
                _plugin,
                tuple(codes),
            )

        _call(impl, "gitdrift_register_rules", {"register": register})
    return [rules[k] for k in sorted(rules)]


def _checked_renderer(name: str, plugin: str, fn: RendererFn) -> RendererFn:
    def render(report: model.Report) -> str:
        try:
            text = fn(report)
            if not isinstance(text, str):
                raise TypeError(f"returned a {type(text).__name__}, not a str")
        except GitDriftError:
            raise
        except Exception as exc:
            raise PluginError(
                f"output format {name!r} of plugin {plugin!r} failed: {one_line(exc)}",
                hint="run with --debug for the traceback",
            ) from exc
        return text

    return render


def collect_renderers(pm: pluggy.PluginManager) -> dict[str, Renderer]:
    """Output formats by name; a later plugin may replace a built-in format."""
    renderers: dict[str, Renderer] = {}
    for impl in pm.hook.gitdrift_register_renderers.get_hookimpls():
        plugin = impl.plugin_name

        def register(name: str, fn: RendererFn, *, doc: str = "", _plugin: str = plugin) -> None:
            if not isinstance(name, str) or not name or name != name.strip():
                raise ValueError(f"output format name {name!r} must be a non-empty word")
            if not callable(fn):
                raise TypeError(f"output format {name!r}: fn is not callable")
            renderers[name] = Renderer(
                name, _checked_renderer(name, _plugin, fn), doc or "Undocumented", _plugin
            )

        _call(impl, "gitdrift_register_renderers", {"register": register})
    return renderers
