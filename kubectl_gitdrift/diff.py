"""Predicts what applying git would do to a live object, and lists the fields it would change.

Argo CD's default (legacy) comparison: a three-way strategic merge of last-applied → desired onto
live for built-in kinds (merge keys and retainKeys from the OpenAPI schema), a three-way JSON merge
for everything else, then predicted and live compared. The only dictdiffer import.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import dictdiffer

from kubectl_gitdrift import model, normalize
from kubectl_gitdrift.normalize import Node

_MISSING = object()


# --------------------------------------------------------------------------- three-way merge


def predict(orig: Any, desired: Any, live: Any, node: Node | None, *, strategic: bool) -> Any:
    """Live after `kubectl apply` of desired, with `orig` (last-applied) saying what to delete.

    Keys in desired are set (maps merged recursively); keys in orig but not in desired are
    deleted; everything else in live is kept. Lists with a patch merge key merge item by item;
    other lists are replaced whole. `strategic=False` is JSON merge semantics (CRDs): every list
    is atomic and there are no retainKeys.
    """
    if isinstance(desired, Mapping) and isinstance(live, Mapping):
        result = dict(live)
        orig_map = orig if isinstance(orig, Mapping) else {}
        for key, value in desired.items():
            child = node.field(key) if node is not None else None
            if value is None:  # an explicit null deletes, unless live is null already
                if live.get(key) is not None:
                    del result[key]
            elif key in live:
                result[key] = predict(
                    orig_map.get(key), value, live[key], child, strategic=strategic
                )
            else:
                result[key] = _without_nulls(value)
        for key in orig_map:
            if key not in desired:
                result.pop(key, None)
        if strategic and node is not None and "retainKeys" in node.patch_strategies:
            for key in list(result):
                if key not in desired:
                    del result[key]
        return result
    if (
        strategic
        and node is not None
        and isinstance(desired, list)
        and isinstance(live, list)
        and "merge" in node.patch_strategies
    ):
        return _merge_list(orig, desired, live, node)
    return _without_nulls(desired)


def _merge_list(orig: Any, desired: list[Any], live: list[Any], node: Node) -> list[Any]:
    merge_key = node.patch_merge_key
    item_node = node.items()
    if (
        merge_key is None
    ):  # a set of scalars (finalizers): union, minus what orig had and git dropped
        dropped = [v for v in (orig or []) if v not in desired] if isinstance(orig, list) else []
        kept = [v for v in live if v not in desired and v not in dropped]
        return [*desired, *kept]
    orig_items = (
        {_key(i, merge_key): i for i in orig or [] if isinstance(i, Mapping)}
        if isinstance(orig, list)
        else {}
    )
    live_items = {_key(i, merge_key): i for i in live if isinstance(i, Mapping)}
    desired_keys = set()
    out = []
    for item in desired:
        if not isinstance(item, Mapping):
            out.append(item)
            continue
        k = _key(item, merge_key)
        desired_keys.add(k)
        if k in live_items:
            out.append(predict(orig_items.get(k), item, live_items[k], item_node, strategic=True))
        else:
            out.append(_without_nulls(item))
    for item in live:
        if not isinstance(item, Mapping):
            continue
        k = _key(item, merge_key)
        if k not in desired_keys and k not in orig_items:
            out.append(item)
    return out


def _key(item: Mapping[str, Any], merge_key: str) -> Any:
    value = item.get(merge_key)
    return repr(value)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


# --------------------------------------------------------------------------- comparison


class _Keyed(dict):  # type: ignore[type-arg]
    """A merge-keyed list turned into a mapping ListKey -> item, so items compare by key."""


def comparable(body: Any, node: Node | None, *, strategic: bool = True) -> Any:
    """Merge-keyed lists become mappings by key; other lists become tuples (compared whole)."""
    if isinstance(body, Mapping):
        return {
            k: comparable(v, node.field(k) if node is not None else None, strategic=strategic)
            for k, v in body.items()
        }
    if isinstance(body, list):
        key = node.patch_merge_key if (strategic and node is not None) else None
        if key and all(isinstance(i, Mapping) and key in i for i in body):
            keyed = _Keyed()
            item_node = node.items() if node is not None else None
            for item in body:
                list_key = model.ListKey(((key, item[key]),))
                if list_key in keyed:  # duplicate keys: fall back to comparing the whole list
                    return tuple(_freeze(i) for i in body)
                keyed[list_key] = comparable(item, item_node, strategic=strategic)
            return keyed
        return tuple(_freeze(i) for i in body)
    return body


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return _FrozenMap(value)
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


class _FrozenMap(dict):  # type: ignore[type-arg]
    """A map inside an atomic list: compared by value, never descended into by dictdiffer."""

    def __init__(self, value: Mapping[str, Any]) -> None:
        super().__init__({k: _freeze(v) for k, v in value.items()})


def plain(value: Any) -> Any:
    """Back to JSON-able data (what reports print)."""
    if isinstance(value, _Keyed):
        return [plain(v) for v in value.values()]
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def changes(predicted: Any, live: Any) -> list[model.Change]:
    """The fields where predicted (live after apply) and live differ, sorted by path."""
    out: list[model.Change] = []
    for kind, where, what in dictdiffer.diff(live, predicted, dot_notation=False, expand=True):
        base: tuple[Any, ...] = tuple(where) if isinstance(where, list) else (where,)
        if where == "":
            base = ()
        if kind == "change":
            before, after = what
            out.append(model.Change(model.Op.CHANGE, base, plain(after), plain(before)))
        elif kind == "add":
            for k, v in what:
                out.append(model.Change(model.Op.ADD, (*base, k), plain(v), None))
        elif kind == "remove":
            for k, v in what:
                out.append(model.Change(model.Op.REMOVE, (*base, k), None, plain(v)))
    out = [c for c in out if not _inside_atomic(c)]
    out.sort(key=lambda c: model.display_path(c.path))
    return out


def _inside_atomic(change: model.Change) -> bool:
    return any(isinstance(p, int) for p in change.path)


def diff_bodies(
    predicted: Mapping[str, Any], live: Mapping[str, Any], node: Node | None, *, strategic: bool
) -> list[model.Change]:
    return changes(
        comparable(predicted, node, strategic=strategic),
        comparable(live, node, strategic=strategic),
    )


def covered(path: model.FieldPath, prefixes: Sequence[model.FieldPath]) -> bool:
    return any(path[: len(p)] == p for p in prefixes)


# --------------------------------------------------------------------------- one pair


class SchemaLike(Protocol):
    def root(self, group: str, version: str, kind: str) -> Node | None: ...


DefaultsFn = Callable[[str, str, str, dict[str, Any]], dict[str, Any]]
NormalizerFn = Callable[[model.ObjectKey, dict[str, Any], str], None]


@dataclass(frozen=True)
class CompareContext:
    """Everything a pair comparison needs besides the two objects."""

    settings: model.Settings
    schema: SchemaLike | None
    defaults: DefaultsFn | None
    ignore_rules: Sequence[tuple[str, model.IgnoreRule]] = ()  # (plugin, rule)
    normalizer: NormalizerFn | None = None


def compare(
    desired: model.Manifest | None, live: model.Manifest | None, ctx: CompareContext
) -> model.Drift:
    """Compare one desired object with its live counterpart (either may be None)."""
    if desired is None and live is None:
        raise ValueError("compare needs at least one side")
    key = desired.key if desired is not None else live.key  # type: ignore[union-attr]
    if live is None:
        assert desired is not None
        return model.Drift(
            key,
            model.ResourceStatus.MISSING,
            origin=desired.origin,
            desired=mask_if_secret(key, desired.body),
        )
    if desired is None:
        return model.Drift(
            key, model.ResourceStatus.EXTRANEOUS, live=mask_if_secret(key, live.body)
        )

    api_version = str(live.body.get("apiVersion") or desired.body.get("apiVersion") or "")
    version = api_version.rpartition("/")[2]
    node = ctx.schema.root(key.group, version, key.kind) if ctx.schema is not None else None
    strategic = node is not None

    rules = normalize.matching_rules(ctx.ignore_rules, key)
    found = _predict_and_diff(desired.body, live.body, key, node, version, strategic, rules, ctx)
    predicted, live_n, desired_n, kept = found
    suppressed: list[model.Suppressed] = []
    if rules:
        _, _, _, everything = _predict_and_diff(
            desired.body, live.body, key, node, version, strategic, [], ctx
        )
        suppressed = _suppressed(everything, kept, rules, desired.body, live.body, ctx)
    status = model.ResourceStatus.OUT_OF_SYNC if kept else model.ResourceStatus.SYNCED
    drift = model.Drift(
        key,
        status,
        changes=tuple(kept),
        suppressed=tuple(suppressed),
        origin=desired.origin,
        desired=desired_n,
        live=live.body,
        predicted=predicted,
        normalized_live=live_n,
    )
    return mask_drift(drift) if _is_secret(key) else drift


def _predict_and_diff(
    desired_body: model.Body,
    live_body: model.Body,
    key: model.ObjectKey,
    node: Node | None,
    version: str,
    strategic: bool,
    rules: Sequence[normalize.ActiveRule],
    ctx: CompareContext,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], list[model.Change]]:
    settings = ctx.settings
    desired = normalize.deepcopy(dict(desired_body))
    live = normalize.deepcopy(dict(live_body))
    orig = normalize.last_applied(live_body)

    normalize.normalize_tracking(desired, live, settings)
    managed = normalize.trusted_manager_paths(live_body, rules)
    if managed:
        managed = _only_differing(managed, desired, live)

    sides = [desired, live] + ([orig] if orig is not None else [])
    out = []
    for body in sides:
        body = normalize.remarshal(body, node)
        normalize.normalize_object(body, key, settings)
        normalize.drop_status(body, key, settings)
        body = normalize.apply_ignores(body, rules, managed)
        out.append(body)
    desired, live = out[0], out[1]
    orig = out[2] if orig is not None else normalize.deepcopy(desired)
    if ctx.normalizer is not None:
        ctx.normalizer(key, desired, "desired")
        ctx.normalizer(key, live, "live")
    normalize.strip_for_patch(orig)
    patch_desired = normalize.deepcopy(desired)
    normalize.strip_for_patch(patch_desired)
    if strategic and key.group == "apps" and key.kind == "StatefulSet":
        live_for_patch = _statefulset_workaround(orig, live)
    else:
        live_for_patch = live
    predicted = predict(orig, patch_desired, live_for_patch, node, strategic=strategic)
    if live_for_patch is not live:
        predicted = _restore_claims(predicted, live_for_patch, live)
    if strategic and ctx.defaults is not None:
        predicted = ctx.defaults(key.group, version, key.kind, predicted)
        live = ctx.defaults(key.group, version, key.kind, live)
    return predicted, live, desired, diff_bodies(predicted, live, node, strategic=strategic)


def _statefulset_workaround(orig: Mapping[str, Any], live: dict[str, Any]) -> dict[str, Any]:
    """The server adds fields to volumeClaimTemplates that git cannot reproduce; like Argo CD,
    drop from each live claim template what the original did not have at the same index."""
    claims = (live.get("spec") or {}).get("volumeClaimTemplates")
    orig_claims = (orig.get("spec") or {}).get("volumeClaimTemplates")
    if not isinstance(claims, list) or not isinstance(orig_claims, list):
        return live
    stripped = [
        _keep_only(claim, orig_claims[i]) if i < len(orig_claims) else claim
        for i, claim in enumerate(claims)
    ]
    return {**live, "spec": {**live["spec"], "volumeClaimTemplates": stripped}}


def _keep_only(value: Any, shape: Any) -> Any:
    if isinstance(value, Mapping) and isinstance(shape, Mapping):
        return {k: _keep_only(v, shape[k]) for k, v in value.items() if k in shape}
    return value


def _restore_claims(
    predicted: dict[str, Any], stripped: Mapping[str, Any], live: Mapping[str, Any]
) -> dict[str, Any]:
    """Where the patch left the claim templates alone, predicted keeps the unstripped live ones."""
    spec = predicted.get("spec")
    if not isinstance(spec, dict):
        return predicted
    if spec.get("volumeClaimTemplates") == (stripped.get("spec") or {}).get("volumeClaimTemplates"):
        spec["volumeClaimTemplates"] = (live.get("spec") or {}).get("volumeClaimTemplates")
    return predicted


def _only_differing(
    managed: Mapping[str, list[model.FieldPath]], desired: Any, live: Any
) -> dict[str, list[model.FieldPath]]:
    """managedFieldsManagers only hides fields whose values differ between the two sides."""
    out: dict[str, list[model.FieldPath]] = {}
    for label, paths in managed.items():
        keep = []
        for path in paths:
            in_desired, dv = model.lookup(desired, path)
            in_live, lv = model.lookup(live, path)
            if in_desired and in_live and dv != lv:
                keep.append(path)
        out[label] = keep
    return out


def _suppressed(
    everything: Sequence[model.Change],
    kept: Sequence[model.Change],
    rules: Sequence[normalize.ActiveRule],
    desired: model.Body,
    live: model.Body,
    ctx: CompareContext,
) -> list[model.Suppressed]:
    """The changes a rule hid, each with the rule that hid it (tried one rule at a time)."""
    kept_paths = {c.path for c in kept}
    hidden = [c for c in everything if c.path not in kept_paths]
    out = []
    for change in hidden:
        label, plugin = "", ""
        for active in rules:
            if _rule_hides(active, change, desired, live):
                label, plugin = active.label, active.plugin
                break
        out.append(model.Suppressed(change, label or rules[0].label, plugin or rules[0].plugin))
    return out


def _rule_hides(
    active: normalize.ActiveRule, change: model.Change, desired: model.Body, live: model.Body
) -> bool:
    probe = normalize.deepcopy(dict(live))
    managed = normalize.trusted_manager_paths(live, [active])
    probe = normalize.apply_ignores(probe, [active], managed)
    found_before, _ = model.lookup(live, change.path)
    found_after, _ = model.lookup(probe, change.path)
    if found_before and not found_after:
        return True
    probe_d = normalize.apply_ignores(normalize.deepcopy(dict(desired)), [active], managed)
    return model.lookup(desired, change.path)[0] and not model.lookup(probe_d, change.path)[0]


# --------------------------------------------------------------------------- Secrets


def _is_secret(key: model.ObjectKey) -> bool:
    return key.group == "" and key.kind == "Secret"


MASK_SEED = 8


class Masker:
    """Argo CD's masking: per key, each distinct value gets its own run of `+` (8, 12, 16 ...),
    so a reader sees *that* a value changed, never what it is."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str], str] = {}
        self._count: dict[str, int] = {}

    def token(self, key: str, value: Any) -> str:
        ident = (key, repr(value))
        if ident not in self._tokens:
            n = self._count.get(key, 0)
            self._count[key] = n + 1
            self._tokens[ident] = "+" * (MASK_SEED + 4 * n)
        return self._tokens[ident]

    def body(self, body: Any) -> Any:
        if not isinstance(body, Mapping):
            return body
        out = dict(body)
        for field in ("data", "stringData"):
            if isinstance(out.get(field), Mapping):
                out[field] = {k: self.token(k, v) for k, v in out[field].items()}
        metadata = out.get("metadata")
        if isinstance(metadata, Mapping) and isinstance(metadata.get("annotations"), Mapping):
            annotations = dict(metadata["annotations"])
            if normalize.LAST_APPLIED in annotations:
                annotations[normalize.LAST_APPLIED] = "++++++++"
            out["metadata"] = {**metadata, "annotations": annotations}
        return out


def mask_if_secret(key: model.ObjectKey, body: model.Body) -> model.Body:
    return Masker().body(body) if _is_secret(key) else body


def mask_drift(drift: model.Drift) -> model.Drift:
    """Replace every Secret value in a drift with tokens, consistently across both sides."""
    masker = Masker()
    masked_changes = []
    for change in drift.changes:
        masked_changes.append(_mask_change(change, masker))
    masked_suppressed = [
        model.Suppressed(_mask_change(s.change, masker), s.rule, s.plugin) for s in drift.suppressed
    ]
    return model.Drift(
        drift.key,
        drift.status,
        changes=tuple(masked_changes),
        suppressed=tuple(masked_suppressed),
        origin=drift.origin,
        desired=masker.body(drift.desired),
        live=masker.body(drift.live),
        predicted=masker.body(drift.predicted),
        normalized_live=masker.body(drift.normalized_live),
        reason=drift.reason,
        counts=drift.counts,
    )


def _mask_change(change: model.Change, masker: Masker) -> model.Change:
    path = change.path
    if path and path[0] in ("data", "stringData"):
        if len(path) >= 2:
            key = str(path[1])
            return replace(
                change,
                desired=None if change.desired is None else masker.token(key, change.desired),
                live=None if change.live is None else masker.token(key, change.live),
                secret=True,
            )
        return replace(
            change,
            desired=_mask_map(change.desired, masker),
            live=_mask_map(change.live, masker),
            secret=True,
        )
    if path[:3] == ("metadata", "annotations", normalize.LAST_APPLIED) or path[:2] == (
        "metadata",
        "annotations",
    ):
        return replace(
            change,
            desired=_mask_annotations(change.desired),
            live=_mask_annotations(change.live),
            secret=True,
        )
    return change


def _mask_map(value: Any, masker: Masker) -> Any:
    if isinstance(value, Mapping):
        return {k: masker.token(k, v) for k, v in value.items()}
    return None if value is None else "++++++++"


def _mask_annotations(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: ("++++++++" if k == normalize.LAST_APPLIED else v) for k, v in value.items()}
    if isinstance(value, str) and value.lstrip().startswith("{"):
        return "++++++++"
    return value
