"""Runs the registered diagnosis rules over one application's drifts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kubectl_gitdrift import hookspecs, model
from kubectl_gitdrift.errors import GitDriftError, PluginError


@dataclass(frozen=True)
class Context:
    """What every rule sees (hookspecs.RuleContext)."""

    app: model.Application
    settings: model.Settings
    drifts: Sequence[model.Drift]
    live: Sequence[model.Manifest]
    managed_fields_known: bool


def diagnose(
    ctx: Context, rules: Sequence[hookspecs.Rule], disabled: Sequence[str] = ()
) -> list[model.Finding]:
    """Every finding of every enabled rule, stamped with its rule and plugin, sorted."""
    findings: list[model.Finding] = []
    for rule in rules:
        if rule.id in disabled:
            continue
        try:
            produced = list(rule.fn(ctx))
        except GitDriftError:
            raise
        except Exception as exc:
            raise PluginError(
                f"rule {rule.id!r} of plugin {rule.plugin!r} failed: {type(exc).__name__}: {exc}",
                hint=f"run with --debug for the traceback, or --disable-rule {rule.id}",
            ) from exc
        for finding in produced:
            findings.append(replace(finding, rule=rule.id, plugin=rule.plugin))
    return sorted(findings, key=model.Finding.sort_key)
