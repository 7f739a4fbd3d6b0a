"""What a primary cause is: the specific reason one difference exists and persists.

primary.py decides them; the rules and the remedies read them from the rule context.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubectl_gitdrift import model

CauseKey = tuple[model.ObjectKey, "model.FieldPath | None"]


@dataclass(frozen=True, slots=True)
class Cause:
    """Why one difference exists and persists, with the evidence and the fixes that fit it."""

    code: str  # the finding code of the rule that reports it, e.g. "server-filled"
    key: model.ObjectKey
    path: model.FieldPath | None  # None: the whole resource
    evidence: Mapping[str, Any] = field(default_factory=dict)
    fixes: tuple[model.Remedy, ...] = ()
    adoptable: bool = False  # adopting the live value into git is a right fix for it
    revertable: bool = False  # a sync (or selfHeal) puts git's value back and it stays

    @property
    def claim(self) -> CauseKey:
        return (self.key, self.path)


def cause_of(
    causes: Mapping[CauseKey, Cause], key: model.ObjectKey, path: model.FieldPath | None
) -> Cause | None:
    """The cause that owns a field: its own claim, else a claim on its whole resource."""
    if path is not None:
        own = causes.get((key, path))
        if own is not None:
            return own
    return causes.get((key, None))
