"""WRITTEN BY, in one line: who wrote a drifted field, for the tables of the human formats
(text and Markdown). The JSON report keeps the parts apart (the change's `owner`, the finding's
`audit` evidence); this only joins them.

Person first, when the audit log names one (a finding's `audit` evidence for that resource and
field), then the managedFields entry: manager, operation, subresource and time (managedFields'
time, else the audited request's, since a /scale write records none):
`jane.sre@example.com via kubectl (Update, /scale, 2026-11-30T04:01:43.285195Z)`. Without an
audit log: `kubectl (Update, /scale, no time recorded)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubectl_gitdrift import model

__all__ = ["Writes", "audited_writes", "written_by"]

Writes = dict[tuple[model.ObjectKey, model.FieldPath], Mapping[str, Any]]
"""(resource, field) -> the audited write a finding pinned on it (its `audit` evidence)."""


def audited_writes(app: model.AppReport) -> Writes:
    """The audited writes the app's findings name, by the resource and field they explain."""
    out: Writes = {}
    for finding in app.findings:
        write = finding.evidence.get("audit")
        if finding.key is not None and isinstance(write, Mapping) and write.get("user"):
            out.setdefault((finding.key, finding.path or ()), write)
    return out


def written_by(change: model.Change, write: Mapping[str, Any] | None = None) -> str | None:
    """The WRITTEN BY cell, or None when nothing names a writer."""
    owner = change.owner
    who = ""
    when = None
    if write is not None:
        who = str(write["user"])
        if write.get("impersonatedUser"):
            who += f" (as {write['impersonatedUser']})"
        when = str(write["time"]) if write.get("time") else None
    if owner is None:
        if write is None:
            return None
        via = f", /{write['subresource']}" if write.get("subresource") else ""
        return f"{who} ({write.get('verb') or 'write'}{via}, {when or 'no time recorded'})"
    via = f", /{owner.subresource}" if owner.subresource else ""
    when = owner.time or when or "no time recorded"
    manager = f"{owner.manager} ({owner.operation}{via}, {when})"
    return f"{who} via {manager}" if who else manager
