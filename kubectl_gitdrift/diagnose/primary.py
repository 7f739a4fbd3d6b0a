"""Decides the one primary cause of each difference, when it is more specific than "someone
changed it".

A detector looks at the rule context (drifts, live objects, the app's status) and claims the
differences it explains: a field (key and path) or a whole resource (key, path None). The first
detector in DETECTORS that claims a difference owns it; the built-in rule of that code reports it,
and the generic rules (manual-drift, field-fight, git-ahead, sync-policy) leave it alone, since
their story (someone wrote it; a sync or selfHeal puts git's value back) does not hold for it.
A cause carries the fixes that fit it, which the remedies list after adopt and revert.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from kubectl_gitdrift.diagnose import (
    admission,
    deleting,
    ignore_unmatched,
    immutable,
    nondeterminism,
    rules,
    server_filled,
    unserved,
)
from kubectl_gitdrift.diagnose.causes import Cause, CauseKey

Detector = Callable[[rules.Context], Iterable[Cause]]

DETECTORS: tuple[Detector, ...] = (
    deleting.detect,  # stuck-deleting: the whole resource, whatever else differs in it
    ignore_unmatched.detect,  # ignore-rule-unmatched: the rule meant for it is the fix
    nondeterminism.detect,  # nondeterministic-render
    server_filled.detect,  # server-filled (before admission: a broad webhook matches anything)
    admission.detect,  # admission-mutation
    immutable.detect,  # immutable-field (after server-filled: what only the server set)
    unserved.detect,  # crd-missing: a Missing object whose kind nobody serves
)
"""Most specific first; each detector is one module of diagnose/ (see docs/diagnosis.md)."""


def classify(
    ctx: rules.Context,
    detectors: Sequence[Detector] = DETECTORS,
    codes: Iterable[str] | None = None,
) -> dict[CauseKey, Cause]:
    """Every claimed difference -> its primary cause (the first detector wins). `codes`, when
    given, keeps only causes whose code an enabled rule reports."""
    keep = None if codes is None else set(codes)
    out: dict[CauseKey, Cause] = {}
    for detect in detectors:
        for cause in detect(ctx):
            if keep is not None and cause.code not in keep:
                continue
            out.setdefault(cause.claim, cause)
    return out
