"""Who wrote each drifted field: managedFields owners, or a plugin's answer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pluggy

from kubectl_gitdrift import fields, hookspecs, model


def owner_of(change: model.Change, live: Mapping[str, Any]) -> model.Owner | None:
    """The managedFields entry that owns the changed field. When several do, a writer other than
    Argo CD wins (it took the field last), then the entry closest to the field."""
    candidates = fields.owners(live, change.path)
    if not candidates:
        return None
    others = [o for o in candidates if not o.is_argocd]
    return (others or candidates)[0]


def attribute(drift: model.Drift, pm: pluggy.PluginManager) -> model.Drift:
    """Fill `owner` on every change of a modified object (plugins first, then managedFields)."""
    if drift.live is None or not drift.changes:
        return drift
    live = drift.live
    changes = []
    for change in drift.changes:
        _, owner = hookspecs.first_result(pm, "gitdrift_attribute", change=change, live=live)
        changes.append(replace(change, owner=owner) if owner is not None else change)
    return replace(drift, changes=tuple(changes))


def argocd_entry(live: Mapping[str, Any]) -> model.Owner | None:
    """Argo CD's own write to the main resource (its last apply), if the object has one."""
    for entry in fields.entries(live):
        if entry.owner.is_argocd and not entry.owner.subresource:
            return entry.owner
    return None
