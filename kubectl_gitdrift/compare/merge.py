"""The legacy three-way merge: live after `kubectl apply` of git, predicted from last-applied.

Argo CD's default (legacy) comparison predicts the object `kubectl apply` would leave: a three-way
strategic merge of last-applied → desired onto live for built-in kinds (merge keys and retainKeys
from the OpenAPI schema), a three-way JSON merge for everything else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.compare.normalize import Node

_MISSING = object()


def predict(
    orig: Any, desired: Any, live: Any, node: Node | None, *, strategic: bool, retain: bool = False
) -> Any:
    """Live after `kubectl apply` of desired, with `orig` (last-applied) saying what to delete.

    Keys in desired are set (maps merged recursively); keys in orig but not in desired are
    deleted; everything else in live is kept. Lists with a patch merge key merge item by item;
    other lists are replaced whole. A map under `retainKeys` (Deployment `strategy`, each item of
    `volumes`: `retain`) loses the live keys desired does not set. `strategic=False` is JSON
    merge semantics (CRDs): every list
    is atomic, there are no retainKeys, and, as gitops-engine diffs git against live *stripped to
    the keys orig has*, a value git leaves as it was in orig keeps live's server-added keys.
    Never modifies its inputs; the result may share unchanged parts with `live`.
    """
    cls = type(desired)
    if cls is dict and type(live) is dict:
        return _predict_map(orig, desired, live, node, strategic, retain)
    if cls in _LEAVES:  # what the general path below does with a scalar, decided at once
        if not strategic and orig is not _MISSING and desired == live:
            return live  # strip_to(orig, live) is live itself, or a container (never equal)
        return desired
    if (cls is dict or isinstance(desired, Mapping)) and (
        type(live) is dict or isinstance(live, Mapping)
    ):
        return _predict_map(orig, desired, live, node, strategic, retain)
    if (
        strategic
        and node is not None
        and isinstance(desired, list)
        and isinstance(live, list)
        and "merge" in node.patch_strategies
    ):
        return _merge_list(orig, desired, live, node)
    if not strategic and orig is not _MISSING and desired == strip_to(orig, live):
        return live
    if strategic and type(desired) is list and type(live) is list:
        # an atomic list replaced in place: strategic merge writes it as the patch has it, nulls
        # included (a claim template's `creationTimestamp: null`); nulls only go where the key
        # is new or changes type (IgnoreUnmatchedNulls)
        return model.copy_json(desired)
    return _without_nulls(desired)


_LEAVES = frozenset({str, int, float, bool})
"""Scalar types (not None) whose predicted value `predict` decides without recursing."""
_EMPTY: Mapping[str, Any] = {}


def _predict_map(
    orig: Any,
    desired: Mapping[str, Any],
    live: Mapping[str, Any],
    node: Node | None,
    strategic: bool,
    retain: bool,
) -> dict[str, Any]:
    """`predict` of a map onto a map: the hot loop, with scalar values decided inline (as
    `predict` decides them) and the schema looked up only for containers."""
    result = dict(live)
    orig_map = orig if type(orig) is dict or isinstance(orig, Mapping) else _EMPTY
    leaves = _LEAVES
    for key, value in desired.items():
        cls = type(value)
        if cls in leaves:
            if strategic or key not in live:
                result[key] = value
            else:
                old = live[key]
                result[key] = old if key in orig_map and value == old else value
        elif value is None:  # an explicit null deletes, unless live is null already
            if live.get(key) is not None:
                del result[key]
        elif key in live:
            child = node.field(key) if node is not None else None
            old = live[key]
            if cls is dict and type(old) is dict:
                result[key] = _predict_map(
                    orig_map.get(key, _MISSING), value, old, child, strategic, False
                )
            else:
                result[key] = predict(
                    orig_map.get(key, _MISSING), value, old, child, strategic=strategic
                )
        else:
            result[key] = _without_nulls(value)
    if orig_map is not desired:
        for key in orig_map:
            if key not in desired:
                result.pop(key, None)
    if strategic and (retain or (node is not None and "retainKeys" in node.patch_strategies)):
        for key in list(result):
            if key not in desired:
                del result[key]
    return result


def _merge_list(orig: Any, desired: list[Any], live: list[Any], node: Node) -> list[Any]:
    merge_key = node.patch_merge_key
    item_node = node.items()
    retain = "retainKeys" in node.patch_strategies  # applies to each item of the list
    if orig is _MISSING:
        orig = None
    if (
        merge_key is None
    ):  # a set of scalars (finalizers): union, minus what orig had and git dropped
        dropped = [v for v in (orig or []) if v not in desired] if isinstance(orig, list) else []
        kept = [v for v in live if v not in desired and v not in dropped]
        return element_order(kept, list(desired), live, _scalar_key)
    orig_items = (
        {_key(i, merge_key): i for i in orig or [] if type(i) is dict or isinstance(i, Mapping)}
        if isinstance(orig, list)
        else {}
    )
    live_items = {_key(i, merge_key): i for i in live if type(i) is dict or isinstance(i, Mapping)}
    desired_keys = set()
    out = []
    for item in desired:
        if not (type(item) is dict or isinstance(item, Mapping)):
            out.append(item)
            continue
        k = _key(item, merge_key)
        desired_keys.add(k)
        if k in live_items:
            old = live_items[k]
            if type(item) is dict and type(old) is dict:
                out.append(_predict_map(orig_items.get(k), item, old, item_node, True, retain))
            else:
                out.append(
                    predict(orig_items.get(k), item, old, item_node, strategic=True, retain=retain)
                )
        else:
            out.append(_without_nulls(item))
    server_only = []
    for item in live:
        if not (type(item) is dict or isinstance(item, Mapping)):
            continue
        k = _key(item, merge_key)
        if k not in desired_keys and k not in orig_items:
            server_only.append(item)
    return element_order(server_only, out, live, lambda item: _item_key(item, merge_key))


def element_order(
    server_only: list[Any], patched: list[Any], live: list[Any], key: Callable[[Any], Any]
) -> list[Any]:
    """The order `kubectl apply` leaves a merge list in (strategicpatch normalizeElementOrder).

    The three-way patch carries `$setElementOrder` with git's order whenever the list's content
    or order differs from live, so the items git lists (`patched`, in git's order) keep git's
    order; the live-only items (`server_only`, in live's order: an injected sidecar) are woven in
    by mergeSortedSlice: a live-only item goes before the next git item only when both are live
    and it stood before that item in live. When git and live agree on order this is live's order.
    """
    if not server_only:
        return patched
    where: dict[Any, int] = {}
    for i, item in enumerate(live):
        where.setdefault(key(item), i)
    out: list[Any] = []
    i = j = 0
    while i < len(server_only) and j < len(patched):
        left = where.get(key(server_only[i]))
        right = where.get(key(patched[j]))
        if left is not None and right is not None and left < right:
            out.append(server_only[i])
            i += 1
        else:
            out.append(patched[j])
            j += 1
    out.extend(server_only[i:])
    out.extend(patched[j:])
    return out


def _scalar_key(value: Any) -> Any:
    return value if type(value) in (str, int, float, bool) else repr(value)


def _item_key(item: Any, merge_key: str) -> Any:
    return _key(item, merge_key) if isinstance(item, Mapping) else ("", repr(item))


def _key(item: Mapping[str, Any], merge_key: str) -> Any:
    value = item.get(merge_key)
    return repr(value)


def _without_nulls(value: Any) -> Any:
    cls = type(value)
    if cls is dict:
        return {
            k: (v if type(v) in _LEAVES else _without_nulls(v))
            for k, v in value.items()
            if v is not None
        }
    if cls is list:
        return [v if type(v) in _LEAVES else _without_nulls(v) for v in value]
    if cls in _LEAVES or value is None:
        return value
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def strip_to(shape: Any, value: Any) -> Any:
    """`value` without the map keys `shape` lacks, recursively; lists item by item by index, extra
    items kept whole (gitops-engine's RemoveMapFields / RemoveListFields)."""
    if isinstance(shape, Mapping) and isinstance(value, Mapping):
        return {
            k: (strip_to(shape[k], v) if v is not None else v)
            for k, v in value.items()
            if k in shape
        }
    if isinstance(shape, list) and isinstance(value, list):
        return [
            strip_to(shape[i], v) if i < len(shape) and v is not None else v
            for i, v in enumerate(value)
        ]
    return value
