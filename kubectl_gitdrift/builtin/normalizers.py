"""Built-in attribution: the managedFields entry that owns a drifted field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.diagnose import attribution
from kubectl_gitdrift.hookspecs import hookimpl


@hookimpl
def gitdrift_attribute(change: model.Change, live: Mapping[str, Any]) -> model.Owner | None:
    return attribution.owner_of(change, live)
