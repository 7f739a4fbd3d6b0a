"""The legacy strategy: Argo CD's client-side three-way diff, as `diff.compare` implements it."""

from __future__ import annotations

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import diff


def compare(
    desired: model.Manifest | None, live: model.Manifest | None, ctx: diff.CompareContext
) -> model.Drift:
    """Live after `kubectl apply` of git (last-applied-configuration three-way), compared."""
    return diff.compare(desired, live, ctx)
