"""The legacy strategy: Argo CD's client-side three-way diff against last-applied-configuration.

Live after `kubectl apply` of git (`merge.predict`), API-defaulted on both sides for built-in
kinds, compared with live (`changes.diff_bodies`); the ignore rules apply to all three objects.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import changes, masking, merge, normalize, pairs


@dataclass(frozen=True)
class _Outcome:
    predicted: dict[str, Any]
    live: dict[str, Any]
    desired: dict[str, Any]
    changes: list[model.Change]


def compare(
    desired: model.Manifest | None, live: model.Manifest | None, ctx: pairs.CompareContext
) -> model.Drift:
    """Compare one desired object with its live counterpart (either may be None)."""
    if desired is None or live is None:
        return pairs.unpaired(desired, live, ctx)

    key = desired.key
    pair = pairs.prepare(desired.body, live.body, key, ctx)
    rules = normalize.matching_rules(ctx.ignore_rules, key)
    outcome = _evaluate(pair, rules)
    suppressed: list[model.Suppressed] = []
    if rules:
        suppressed = _suppressed(pair, rules, outcome.changes)
    status = model.ResourceStatus.OUT_OF_SYNC if outcome.changes else model.ResourceStatus.SYNCED
    drift = model.Drift(
        key,
        status,
        changes=tuple(outcome.changes),
        suppressed=tuple(suppressed),
        origin=desired.origin,
        desired=outcome.desired,
        live=live.body,
        predicted=outcome.predicted,
        normalized_live=outcome.live,
    )
    return masking.mask_drift(drift) if masking.is_secret(key) else drift


def _evaluate(pair: pairs.Pair, rules: Sequence[normalize.ActiveRule]) -> _Outcome:
    """Apply the ignore rules, predict live after `kubectl apply`, default, and compare."""
    desired, live, orig = pair.desired, pair.live, pair.orig
    if rules:
        managed = normalize.trusted_manager_paths(pair.raw_live, rules)
        if managed:
            managed = pairs.only_differing(managed, desired, live)
        desired = normalize.apply_ignores(normalize.deepcopy(desired), rules, managed)
        live = normalize.apply_ignores(normalize.deepcopy(live), rules, managed)
        if orig is not None:
            orig = normalize.apply_ignores(normalize.deepcopy(orig), rules, managed)
    patch_desired = normalize.stripped_for_patch(desired)
    if orig is None or orig is desired:  # the usual case: last-applied is git's object
        patch_orig = patch_desired  # predict reads both and writes neither
    else:
        patch_orig = normalize.stripped_for_patch(orig)
    node, strategic = pair.node, pair.strategic
    if strategic and pair.key.group in ("apps", "extensions") and pair.key.kind == "StatefulSet":
        live_for_patch = _statefulset_workaround(patch_orig, live)
    else:
        live_for_patch = live
    predicted = merge.predict(patch_orig, patch_desired, live_for_patch, node, strategic=strategic)
    if live_for_patch is not live:
        predicted = _restore_claims(predicted, live_for_patch, live)
    found = changes.diff_bodies(predicted, live, node, strategic=strategic)
    if not found or pair.defaults is None:  # no difference before defaulting: none after counts
        return _Outcome(predicted, live, desired, found)
    defaults = pairs.defaults_for(pair)
    assert defaults is not None
    predicted_d = defaults(predicted)
    live_d = defaults(live)
    found_d = changes.diff_bodies(predicted_d, live_d, node, strategic=strategic)
    return _Outcome(predicted_d, live_d, desired, pairs.caused_by(found_d, found))


def _statefulset_workaround(orig: Mapping[str, Any], live: dict[str, Any]) -> dict[str, Any]:
    """The server adds fields to volumeClaimTemplates that git cannot reproduce; like Argo CD,
    strip from each live claim template what the original lacks at the same index."""
    claims = (live.get("spec") or {}).get("volumeClaimTemplates")
    orig_claims = (orig.get("spec") or {}).get("volumeClaimTemplates")
    if not isinstance(claims, list) or not isinstance(orig_claims, list):
        return live
    stripped = merge.strip_to(orig_claims, claims)
    return {**live, "spec": {**live["spec"], "volumeClaimTemplates": stripped}}


def _restore_claims(
    predicted: dict[str, Any], stripped: Mapping[str, Any], live: Mapping[str, Any]
) -> dict[str, Any]:
    """Where the patch left the claim templates alone, predicted keeps the unstripped live ones."""
    spec = predicted.get("spec")
    if not isinstance(spec, dict):
        return predicted
    if spec.get("volumeClaimTemplates") == (stripped.get("spec") or {}).get("volumeClaimTemplates"):
        spec = predicted["spec"] = dict(spec)
        spec["volumeClaimTemplates"] = (live.get("spec") or {}).get("volumeClaimTemplates")
    return predicted


def _suppressed(
    pair: pairs.Pair, rules: Sequence[normalize.ActiveRule], kept: Sequence[model.Change]
) -> list[model.Suppressed]:
    """The differences the rules hid, each with the rule(s) that hid it.

    A rule hid a difference when comparing with that rule alone no longer shows it. When several
    rules each hide it, all are named; when only their combination does, they are joined by `+`.
    """
    kept_paths = {c.path for c in kept}
    hidden = [c for c in _evaluate(pair, ()).changes if c.path not in kept_paths]
    if not hidden:
        return []
    shown_with = [{c.path for c in _evaluate(pair, (rule,)).changes} for rule in rules]
    out = []
    for change in hidden:
        votes = zip(rules, shown_with, strict=True)
        by = [rule for rule, shown in votes if change.path not in shown]
        joiner = ", " if by else " + "
        by = by or list(rules)
        plugins = list(dict.fromkeys(rule.plugin for rule in by))
        out.append(
            model.Suppressed(change, joiner.join(rule.label for rule in by), ", ".join(plugins))
        )
    return out
