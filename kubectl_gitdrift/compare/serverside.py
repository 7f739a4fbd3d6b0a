"""The Server-Side Diff strategy (`ServerSideDiff=true`): gitops-engine's serverSideDiff.

With the API server's answer to a server-side apply dry-run (`--server-dry-run`: PATCH
`fieldManager=argocd-controller`, `force=true`, `dryRun=All`), that answer is the predicted
object. Unless the app sets `IncludeMutationWebhook=true`, the fields mutating webhooks added are
taken out first, as removeWebhookMutation does: the answer keeps only the fields
`argocd-controller` owns in it, is merged onto live (so everything else keeps its live value),
and the fields the dry-run removed from live stay removed. The server has defaulted the answer,
so nothing is defaulted here; the last-applied annotation is compared like any field.

Offline (no dry-run answer), or for an object on one side only, the caller compares with the
structured-merge emulation instead, as the same server would compute it (`structured.compare`):
the strategies do not know of each other.
"""

from __future__ import annotations

from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import normalize, pairs, smd, ssa
from kubectl_gitdrift.compare.strategies import MANAGER


def compare(
    desired: model.Manifest, live: model.Manifest, ctx: ssa.Context, dry_run: model.Body
) -> model.Drift:
    """Compare one pair as Argo CD's Server-Side Diff does, with the dry-run's answer."""
    key = desired.key
    version = pairs.version_of(desired.body, live.body)
    t, why = ctx.types.root(key.group, version, key.kind)
    node = pairs.type_of(ctx.base.schema, key, version)
    answer = pairs.normalize_side(dry_run, key, node, ctx.base)
    if not ctx.choice.include_mutation_webhook:
        if t is None:
            return ssa.unknown(desired, live, why)
        owned: smd.FieldSet = set()
        for manager, _, _, fields in smd.managers(answer):
            if manager == MANAGER:
                owned |= fields
        if not owned:
            return ssa.unknown(
                desired,
                live,
                f"the dry-run answer has no managedFields of {MANAGER}, so what mutating "
                "webhooks added cannot be told apart",
            )
    else:
        owned = set()

    def predict(config: dict[str, Any], current: dict[str, Any]) -> tuple[dict, dict]:  # type: ignore[type-arg]
        predicted = answer
        if not ctx.choice.include_mutation_webhook and t is not None:
            predicted = remove_webhook_mutation(predicted, current, t, owned)
        return _without_managed_fields(predicted), _without_managed_fields(current)

    return ssa.evaluate(desired, live, ctx, predict, defaults=False)


def remove_webhook_mutation(
    predicted: dict[str, Any], live: dict[str, Any], t: smd.Type, owned: smd.FieldSet
) -> dict[str, Any]:
    """gitops-engine removeWebhookMutation on plain data."""
    predicted_set = smd.field_set(predicted, t)
    not_ours = predicted_set - owned
    removed = smd.field_set(live, t) - predicted_set - not_ours
    kept = smd.remove(predicted, smd.without_composite_keys(not_ours), t)
    merged = smd.merge(live, kept, t)
    if not isinstance(merged, dict):
        merged = {}
    out = smd.remove(merged, removed, t)
    return out if isinstance(out, dict) else {}


def _without_managed_fields(body: dict[str, Any]) -> dict[str, Any]:
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and "managedFields" in metadata:
        body = {**body, "metadata": {k: v for k, v in metadata.items() if k != "managedFields"}}
    return body


__all__ = ["compare", "normalize", "remove_webhook_mutation"]
