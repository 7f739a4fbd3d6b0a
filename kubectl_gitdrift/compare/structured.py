"""The structured-merge strategy (`ServerSideApply=true`): gitops-engine's StructuredMergeDiff.

The predicted object is what server-side applying git as `argocd-controller` with force would
store, emulated from the live object's managedFields (`smd.apply`): git's fields set, fields
`argocd-controller`'s previous Apply set held that git no longer has removed unless another
manager owns them, lists and maps merged by their schema (the bundled or the cluster's OpenAPI;
a custom resource's from its CRD's `openAPIV3Schema`, with the standard ObjectMeta). Then, as
gitops-engine's normalizeTypedValue does, both sides lose the last-applied-configuration
annotation and built-in kinds get the API server's defaults (custom resources none), and they are
compared in order: a keyed list whose items only moved differs as a whole.

Normalization (remarshal, status, tracking, ignoreDifferences, plugins) is the shared one of
`pairs`, applied to both sides before the merge, as Argo CD's Normalize runs before the diff; the
comparison is the one both server-side strategies share (`ssa.evaluate`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import normalize, pairs, smd, ssa
from kubectl_gitdrift.compare.strategies import MANAGER


def compare(
    desired: model.Manifest | None, live: model.Manifest | None, ctx: ssa.Context
) -> model.Drift:
    """Compare one pair as Argo CD's structured-merge diff does."""
    if desired is None or live is None:  # creation and deletion: as every strategy does
        return pairs.unpaired(desired, live, ctx.base)
    key = desired.key
    version = pairs.version_of(desired.body, live.body)
    t, why = ctx.types.root(key.group, version, key.kind)
    if t is None:
        return ssa.unknown(desired, live, why)
    entries = smd.entries(live.body)
    if not entries:
        return ssa.unknown(
            desired,
            live,
            "the live object has no managedFields, so what the next server-side apply would "
            "remove cannot be told (export it with --show-managed-fields)",
        )
    applied = [
        raw
        for manager, operation, subresource, raw in entries
        if manager == MANAGER and operation == "Apply" and not subresource
    ]
    kept: list[tuple[smd.Path, tuple[str, ...]]] = []

    def predict(config: dict[str, Any], current: dict[str, Any]) -> tuple[dict, dict]:  # type: ignore[type-arg]
        if not applied or (len(applied) == 1 and smd.applied_again_raw(applied[0], config, t)):
            # the usual case: everything applied before is applied again, nothing to prune
            predicted = smd.apply(current, config, t, set(), set())
            return without_last_applied(predicted), without_last_applied(current)
        last: smd.FieldSet = set().union(*(smd.from_fields_v1(raw) for raw in applied))
        if smd.applied_again(last, config, t):
            predicted = smd.apply(current, config, t, set(), set())
            return without_last_applied(predicted), without_last_applied(current)
        owners: dict[str, smd.FieldSet] = {}
        for manager, operation, subresource, raw in entries:
            if not (manager == MANAGER and operation == "Apply" and not subresource):
                owners.setdefault(manager, set()).update(smd.from_fields_v1(raw))
        others: smd.FieldSet = set().union(*owners.values())
        config_set = smd.field_set(config, t)
        if not kept:
            kept.extend(smd.released(last, config_set, owners))
        predicted = smd.apply(current, config, t, last, others, config_set)
        return without_last_applied(predicted), without_last_applied(current)

    try:
        drift = ssa.evaluate(desired, live, ctx, predict, defaults=True)
    except smd.ApplyError as exc:  # Argo CD's diff fails too: no verdict (ComparisonError)
        return ssa.unknown(desired, live, f"the server-side apply cannot be emulated: {exc}")
    if not kept:
        return drift
    return dataclasses.replace(drift, released=tuple(_released(kept)))


def _released(
    kept: Sequence[tuple[smd.Path, tuple[str, ...]]],
) -> list[tuple[model.FieldPath, tuple[str, ...]]]:
    out: list[tuple[model.FieldPath, tuple[str, ...]]] = []
    for path, managers in kept:
        elems = smd.field_path(path)
        if elems is None or not elems:
            continue
        field_path = tuple(
            model.ListKey(tuple(e.items())) if isinstance(e, dict) else e for e in elems
        )
        out.append((field_path, managers))
    return out


def without_last_applied(body: Mapping[str, Any]) -> dict[str, Any]:
    """gitops-engine normalizeTypedValue: the last-applied-configuration annotation goes."""
    out = dict(body)
    metadata = out.get("metadata")
    if isinstance(metadata, Mapping):
        annotations = metadata.get("annotations")
        if isinstance(annotations, Mapping) and normalize.LAST_APPLIED in annotations:
            annotations = {k: v for k, v in annotations.items() if k != normalize.LAST_APPLIED}
            out["metadata"] = {**metadata, "annotations": annotations}
    return out
