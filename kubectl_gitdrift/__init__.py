"""kubectl-gitdrift: why is this Argo CD Application OutOfSync, who changed it, and what to do.

The names below are the public API for plugin authors.
"""

from __future__ import annotations

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
