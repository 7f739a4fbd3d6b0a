"""kubectl-gitdrift: why is this Argo CD Application OutOfSync, who changed it, and what to do.

The names below are the public API for plugin authors: everything a team plugin and its tests
need, and nothing they should reach past (pytest and kopf re-export one public surface the same
way). Plugins import from `kubectl_gitdrift` only; the modules behind these names may move.
They are loaded on first use (PEP 562), so `kubectl gitdrift version`, `--help` and completion
import neither pluggy nor the model.

- marking hook implementations: `hookimpl`;
- what the hooks are given and the callbacks they call: `RuleContext`, `RegisterRule`,
  `RegisterRenderer`, `Application`, `AppSource`, `Manifest`, `ObjectKey`, `Drift`, `Change`,
  `Op`, `Suppressed`, `ResourceStatus`, `Report`, `AppReport`;
- what the hooks give back: `Finding`, `Severity`, `IgnoreRule`, `Owner`;
- for a plugin's tests: `make_plugin_manager` (a fresh manager per test) and
  `apply_ignore_rules` (what gitdrift removes from an object for a set of ignore rules).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubectl_gitdrift.hookspecs import RegisterRenderer, RegisterRule, RuleContext, hookimpl
    from kubectl_gitdrift.model import (
        Application,
        AppReport,
        AppSource,
        Change,
        Drift,
        Finding,
        IgnoreRule,
        Manifest,
        ObjectKey,
        Op,
        Owner,
        Report,
        ResourceStatus,
        Severity,
        Suppressed,
    )
    from kubectl_gitdrift.plugins import apply_ignore_rules, make_plugin_manager

__version__ = "0.1.0"

__all__ = [
    "AppReport",
    "AppSource",
    "Application",
    "Change",
    "Drift",
    "Finding",
    "IgnoreRule",
    "Manifest",
    "ObjectKey",
    "Op",
    "Owner",
    "RegisterRenderer",
    "RegisterRule",
    "Report",
    "ResourceStatus",
    "RuleContext",
    "Severity",
    "Suppressed",
    "__version__",
    "apply_ignore_rules",
    "hookimpl",
    "make_plugin_manager",
]

_MODEL = (
    "AppReport",
    "AppSource",
    "Application",
    "Change",
    "Drift",
    "Finding",
    "IgnoreRule",
    "Manifest",
    "ObjectKey",
    "Op",
    "Owner",
    "Report",
    "ResourceStatus",
    "Severity",
    "Suppressed",
)
_LAZY = {
    **dict.fromkeys(
        ("hookimpl", "RegisterRenderer", "RegisterRule", "RuleContext"),
        "kubectl_gitdrift.hookspecs",
    ),
    **dict.fromkeys(_MODEL, "kubectl_gitdrift.model"),
    **dict.fromkeys(("apply_ignore_rules", "make_plugin_manager"), "kubectl_gitdrift.plugins"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
