"""kubectl-gitdrift: why is this Argo CD Application OutOfSync, who changed it, and what to do.

The names below are the public API for plugin authors. They are loaded on first use (PEP 562),
so `kubectl gitdrift version`, `--help` and completion do not import pluggy and the model.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubectl_gitdrift.hookspecs import hookimpl
    from kubectl_gitdrift.model import (
        Change,
        Drift,
        Finding,
        IgnoreRule,
        Manifest,
        ObjectKey,
        Owner,
        Severity,
    )

__version__ = "0.1.0"

__all__ = [
    "Change",
    "Drift",
    "Finding",
    "IgnoreRule",
    "Manifest",
    "ObjectKey",
    "Owner",
    "Severity",
    "__version__",
    "hookimpl",
]

_LAZY = {
    "hookimpl": "kubectl_gitdrift.hookspecs",
    **dict.fromkeys(
        ("Change", "Drift", "Finding", "IgnoreRule", "Manifest", "ObjectKey", "Owner", "Severity"),
        "kubectl_gitdrift.model",
    ),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
