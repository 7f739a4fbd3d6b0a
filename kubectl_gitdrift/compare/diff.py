"""Predicts what applying git would do to a live object, and lists the fields it would change.

Argo CD's default (legacy) comparison: a three-way strategic merge of last-applied → desired onto
live for built-in kinds (merge keys and retainKeys from the OpenAPI schema), a three-way JSON merge
for everything else, then predicted and live compared. The only dictdiffer import.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import dictdiffer

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import normalize
from kubectl_gitdrift.compare.normalize import Node

_MISSING = object()


# --------------------------------------------------------------------------- three-way merge


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


# --------------------------------------------------------------------------- comparison


class _Keyed(dict):  # type: ignore[type-arg]
    """A merge-keyed list turned into a mapping ListKey -> item, so items compare by key."""


def comparable(body: Any, node: Node | None, *, strategic: bool = True) -> Any:
    """Merge-keyed lists become mappings by key; other lists become tuples (compared whole)."""
    if type(body) is dict or isinstance(body, Mapping):
        if node is None:
            return {k: comparable(v, None, strategic=strategic) for k, v in body.items()}
        return {k: comparable(v, node.field(k), strategic=strategic) for k, v in body.items()}
    if isinstance(body, list):
        key = node.patch_merge_key if (strategic and node is not None) else None
        if key and all((type(i) is dict or isinstance(i, Mapping)) and key in i for i in body):
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
    if type(value) is dict or isinstance(value, Mapping):
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
    out.extend(_order_changes((), predicted, live, {c.path for c in out}))
    out.sort(key=lambda c: model.display_path(c.path))
    return out


def _order_changes(
    path: model.FieldPath, predicted: Any, live: Any, found: set[model.FieldPath]
) -> list[model.Change]:
    """The merge-keyed lists (`_Keyed`, which compare as maps) whose items are all equal but stand
    in another order: one CHANGE of the whole list each (as `_keyed_changes` reports them)."""
    if not isinstance(predicted, Mapping) or not isinstance(live, Mapping):
        return []
    out: list[model.Change] = []
    for key, value in predicted.items():
        if key in live:
            out.extend(_order_changes((*path, key), value, live[key], found))
    if (
        not out
        and isinstance(predicted, _Keyed)
        and isinstance(live, _Keyed)
        and list(predicted) != list(live)
        and predicted.keys() == live.keys()
        and not any(p[: len(path)] == path for p in found)
    ):
        out.append(model.Change(model.Op.CHANGE, path, plain(predicted), plain(live)))
    return out


def _inside_atomic(change: model.Change) -> bool:
    return any(isinstance(p, int) for p in change.path)


def diff_bodies(
    predicted: Mapping[str, Any], live: Mapping[str, Any], node: Node | None, *, strategic: bool
) -> list[model.Change]:
    if predicted == live:  # most pairs: equal as plain data, so equal as comparable forms
        return []
    out = _changes_below((), predicted, live, node, strategic)
    out.sort(key=lambda c: model.display_path(c.path))
    return out


def _changes_below(
    path: model.FieldPath, predicted: Any, live: Any, node: Node | None, strategic: bool
) -> list[model.Change]:
    """`changes` of the comparable forms, built only for the subtrees that differ: maps are
    walked key by key (equal values skipped), anything else is compared where it stands."""
    if type(predicted) is list and type(live) is list and strategic and node is not None:
        keyed = _keyed_items(predicted, node), _keyed_items(live, node)
        if keyed[0] is not None and keyed[1] is not None:
            return _keyed_changes(path, predicted, live, keyed[0], keyed[1], node, strategic)
    if type(predicted) is not dict or type(live) is not dict:
        found = changes(
            comparable(predicted, node, strategic=strategic),
            comparable(live, node, strategic=strategic),
        )
        return [replace(c, path=(*path, *c.path)) for c in found] if path else found
    out: list[model.Change] = []
    for key, value in live.items():
        if key not in predicted:
            out.append(model.Change(model.Op.REMOVE, (*path, key), None, _copy_plain(value)))
    for key, value in predicted.items():
        if key not in live:
            out.append(model.Change(model.Op.ADD, (*path, key), _copy_plain(value), None))
        elif value != live[key]:
            child = node.field(key) if node is not None else None
            out.extend(_changes_below((*path, key), value, live[key], child, strategic))
    return out


def _keyed_items(body: list[Any], node: Node) -> dict[model.ListKey, Any] | None:
    """A merge-keyed list as {ListKey: item}, in list order; None when it cannot be keyed (no
    merge key, an item without it, or two items sharing it: then it compares whole)."""
    key = node.patch_merge_key
    if not key:
        return None
    out: dict[model.ListKey, Any] = {}
    for item in body:
        if not (type(item) is dict or isinstance(item, Mapping)) or key not in item:
            return None
        list_key = model.ListKey(((key, item[key]),))
        if list_key in out:
            return None
        out[list_key] = item
    return out


def _keyed_changes(
    path: model.FieldPath,
    predicted: list[Any],
    live: list[Any],
    p_items: dict[model.ListKey, Any],
    l_items: dict[model.ListKey, Any],
    node: Node,
    strategic: bool,
) -> list[model.Change]:
    """Changes between two merge-keyed lists: items added, removed or changed, by key. Argo CD
    compares the bytes of predicted and live, so order counts too: a list whose items are all
    equal but stand in another order is one change of the whole list (`order_only` says so)."""
    out: list[model.Change] = []
    item_node = node.items()
    for list_key, item in l_items.items():
        if list_key not in p_items:
            out.append(model.Change(model.Op.REMOVE, (*path, list_key), None, _copy_plain(item)))
    for list_key, item in p_items.items():
        if list_key not in l_items:
            out.append(model.Change(model.Op.ADD, (*path, list_key), _copy_plain(item), None))
        elif item != l_items[list_key]:
            found = _changes_below((*path, list_key), item, l_items[list_key], item_node, strategic)
            out.extend(found)
    if not out and list(p_items) != list(l_items):
        out.append(model.Change(model.Op.CHANGE, path, _copy_plain(predicted), _copy_plain(live)))
    return out


def order_only(change: model.Change) -> bool:
    """True when `change` is a merge-keyed list whose items are equal, only ordered differently:
    what `kubectl apply` would re-order to git's order (Argo CD calls it OutOfSync)."""
    desired, live = change.desired, change.live
    if change.op is not model.Op.CHANGE or not isinstance(desired, list):
        return False
    if not isinstance(live, list) or len(desired) != len(live) or desired == live:
        return False
    rest = list(live)
    for item in desired:
        if item not in rest:
            return False
        rest.remove(item)
    return True


_ITEM_NAMES = ("name", "port", "containerPort", "mountPath", "devicePath", "ip", "key", "type")


def order_note(change: model.Change) -> str | None:
    """For an `order_only` change, the explanation a reader needs, since every item is equal:
    `only the order of env differs: git lists A, B; the cluster B, A`. None otherwise."""
    if not order_only(change):
        return None
    name = next((e for e in reversed(change.path) if isinstance(e, str)), "the list")

    def names(items: list[Any]) -> str:
        return ", ".join(_item_name(item) for item in items)

    return (
        f"only the order of {name} differs: git lists {names(change.desired)}; "
        f"the cluster {names(change.live)}"
    )


def _item_name(item: Any) -> str:
    if isinstance(item, Mapping):
        for key in _ITEM_NAMES:
            value = item.get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                return str(value)
    return json.dumps(item, sort_keys=True)


def _copy_plain(value: Any) -> Any:
    """What `plain(comparable(value))` gives for an added or removed field: a copy of it."""
    return plain(_freeze(value))


def covered(path: model.FieldPath, prefixes: Sequence[model.FieldPath]) -> bool:
    return any(path[: len(p)] == p for p in prefixes)


# --------------------------------------------------------------------------- one pair


class SchemaLike(Protocol):
    def closest(self, group: str, version: str, kind: str) -> Node | None: ...
    def definition(self, name: str) -> Node | None: ...


DefaultsFn = Callable[[str, str, str, dict[str, Any]], dict[str, Any]]
NormalizerFn = Callable[[model.ObjectKey, dict[str, Any], str], None]

BUILTIN_PREFIX = "io.k8s.api."
"""Definitions of k8s.io/api types: the kinds Argo CD decodes, defaults and patches strategically.
"""


@dataclass(frozen=True)
class CompareContext:
    """Everything a pair comparison needs besides the two objects."""

    settings: model.Settings
    schema: SchemaLike | None
    defaults: DefaultsFn | None
    ignore_rules: Sequence[tuple[str, model.IgnoreRule]] = ()  # (plugin, rule)
    normalizer: NormalizerFn | None = None


@dataclass(frozen=True)
class _Pair:
    """One desired/live pair, normalized as far as it goes before ignore rules apply."""

    key: model.ObjectKey
    version: str
    node: Node | None
    strategic: bool  # a built-in kind: strategic merge, API defaults
    desired: dict[str, Any]
    live: dict[str, Any]
    orig: dict[str, Any] | None  # last-applied, normalized; None: two-way (desired stands in)
    raw_live: model.Body
    defaults: DefaultsFn | None


@dataclass(frozen=True)
class _Outcome:
    predicted: dict[str, Any]
    live: dict[str, Any]
    desired: dict[str, Any]
    changes: list[model.Change]


def type_of(schema: SchemaLike | None, key: model.ObjectKey, version: str) -> Node | None:
    """The schema Argo CD would decode this object with: a built-in kind's (any version it
    registers), or None for CRDs and unknown kinds (JSON merge, no type normalization)."""
    if schema is None:
        return None
    memo = (id(schema), key.group, version, key.kind)
    hit = _TYPE_OF.get(memo)
    if hit is not None and hit[0] is schema:
        return hit[1]
    node = schema.closest(key.group, version, key.kind)
    if node is None or not (node.definition or "").startswith(BUILTIN_PREFIX):
        node = None
    if _TYPE_OF and (len(_TYPE_OF) >= 4096 or next(iter(_TYPE_OF.values()))[0] is not schema):
        _TYPE_OF.clear()  # one schema's answers at a time: old schemas are not kept alive
    _TYPE_OF[memo] = (schema, node)
    return node


_TYPE_OF: dict[tuple[int, str, str, str], tuple[SchemaLike, Node | None]] = {}
"""type_of's answers by (id of the schema, group, version, kind), all for one schema (held, so
its id cannot be reused while the entries live); another schema starts afresh."""


def compare(
    desired: model.Manifest | None, live: model.Manifest | None, ctx: CompareContext
) -> model.Drift:
    """Compare one desired object with its live counterpart (either may be None)."""
    if desired is None and live is None:
        raise ValueError("compare needs at least one side")
    if live is None:
        assert desired is not None
        predicted = _normalized(desired.body, desired.key, ctx, "desired")
        drift = model.Drift(
            desired.key,
            model.ResourceStatus.MISSING,
            origin=desired.origin,
            desired=predicted,
            predicted=predicted,
        )
        return mask_drift(drift) if is_secret(desired.key) else drift
    if desired is None:
        drift = model.Drift(
            live.key,
            model.ResourceStatus.EXTRANEOUS,
            live=live.body,
            normalized_live=_normalized(live.body, live.key, ctx, "live"),
        )
        return mask_drift(drift) if is_secret(live.key) else drift

    key = desired.key
    pair = _prepare(desired.body, live.body, key, ctx)
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
    return mask_drift(drift) if is_secret(key) else drift


def version_of(*bodies: model.Body) -> str:
    """The API version (`v1`, `v1beta1`) of the first body that has an apiVersion."""
    for body in bodies:
        api_version = str(body.get("apiVersion") or "")
        if api_version:
            return api_version.rpartition("/")[2]
    return ""


def _normalize_side(
    body: model.Body, key: model.ObjectKey, node: Node | None, ctx: CompareContext
) -> dict[str, Any]:
    """remarshal + gitops-engine Normalize (creationTimestamp, Secret, Role, Endpoints) + status +
    known types, on a fresh copy."""
    out: dict[str, Any] = normalize.remarshal(body, node)
    normalize.normalize_object(out, key, ctx.settings)
    normalize.drop_status(out, key, ctx.settings)
    if node is None and ctx.schema is not None:
        normalize.remarshal_known_types(out, key, ctx.schema.definition)
    return out


def _normalized(
    body: model.Body, key: model.ObjectKey, ctx: CompareContext, side: str
) -> dict[str, Any]:
    """One side alone (an object missing on the other side), as Argo CD shows it."""
    node = type_of(ctx.schema, key, version_of(body))
    out = _normalize_side(body, key, node, ctx)
    if ctx.normalizer is not None:
        ctx.normalizer(key, out, side)
    return out


def _prepare(
    desired_body: model.Body, live_body: model.Body, key: model.ObjectKey, ctx: CompareContext
) -> _Pair:
    version = version_of(live_body, desired_body)
    node = type_of(ctx.schema, key, version)
    desired = _normalize_side(desired_body, key, node, ctx)
    live = _normalize_side(live_body, key, node, ctx)
    raw_orig = normalize.last_applied(live_body)
    orig: dict[str, Any] | None = None
    if raw_orig == desired_body:  # git has not changed since the last apply: the usual case
        # the same normalized form; only a plugin normalizer (below) would edit it in place
        orig = desired if ctx.normalizer is None else model.copy_json(desired)
    elif raw_orig is not None:
        orig = _normalize_side(raw_orig, key, node, ctx)
    normalize.normalize_tracking(desired, live, ctx.settings)
    if ctx.normalizer is not None:
        ctx.normalizer(key, desired, "desired")
        ctx.normalizer(key, live, "live")
    defaults = ctx.defaults if node is not None else None
    return _Pair(key, version, node, node is not None, desired, live, orig, live_body, defaults)


def _evaluate(pair: _Pair, rules: Sequence[normalize.ActiveRule]) -> _Outcome:
    """Apply the ignore rules, predict live after `kubectl apply`, default, and compare."""
    desired, live, orig = pair.desired, pair.live, pair.orig
    if rules:
        managed = normalize.trusted_manager_paths(pair.raw_live, rules)
        if managed:
            managed = _only_differing(managed, desired, live)
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
    predicted = predict(patch_orig, patch_desired, live_for_patch, node, strategic=strategic)
    if live_for_patch is not live:
        predicted = _restore_claims(predicted, live_for_patch, live)
    found = diff_bodies(predicted, live, node, strategic=strategic)
    if not found or pair.defaults is None:  # no difference before defaulting: none after counts
        return _Outcome(predicted, live, desired, found)
    defaults = _defaults_for(pair)
    assert defaults is not None
    predicted_d = defaults(predicted)
    live_d = defaults(live)
    found_d = diff_bodies(predicted_d, live_d, node, strategic=strategic)
    return _Outcome(predicted_d, live_d, desired, _caused_by(found_d, found))


def _defaults_for(pair: _Pair) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """The API server's defaulting for this kind and version (built-in kinds only)."""
    fn = pair.defaults
    if fn is None:
        return None
    key, version = pair.key, pair.version
    return lambda body: fn(key.group, version, key.kind, body)


def _caused_by(
    defaulted: Sequence[model.Change], undefaulted: Sequence[model.Change]
) -> list[model.Change]:
    """The differences after API defaulting, less those defaulting alone brought in.

    Argo CD defaults both predicted and live before it compares, so a field git omits is not drift
    while live holds its default. Defaulting can also add a difference where git and live agree:
    `sessionAffinity: ClientIP` in git makes the defaulter add `sessionAffinityConfig` to the
    predicted object only. Such a field is a consequence of the field that caused it, not a change
    of its own, so it is not listed (`-o diff` still shows it, as Argo CD's diff does). A
    difference is kept when its path lies on, above or below a path that differs before
    defaulting (a retainKeys map git resets, say, whose defaults then differ from live)."""
    roots = [c.path for c in undefaulted]
    kept = [c for c in defaulted if any(_related(c.path, root) for root in roots)]
    return kept or list(defaulted)


def _related(a: model.FieldPath, b: model.FieldPath) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _statefulset_workaround(orig: Mapping[str, Any], live: dict[str, Any]) -> dict[str, Any]:
    """The server adds fields to volumeClaimTemplates that git cannot reproduce; like Argo CD,
    strip from each live claim template what the original lacks at the same index."""
    claims = (live.get("spec") or {}).get("volumeClaimTemplates")
    orig_claims = (orig.get("spec") or {}).get("volumeClaimTemplates")
    if not isinstance(claims, list) or not isinstance(orig_claims, list):
        return live
    stripped = strip_to(orig_claims, claims)
    return {**live, "spec": {**live["spec"], "volumeClaimTemplates": stripped}}


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
    pair: _Pair, rules: Sequence[normalize.ActiveRule], kept: Sequence[model.Change]
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
        pairs = zip(rules, shown_with, strict=True)
        by = [rule for rule, shown in pairs if change.path not in shown]
        joiner = ", " if by else " + "
        by = by or list(rules)
        plugins = list(dict.fromkeys(rule.plugin for rule in by))
        out.append(
            model.Suppressed(change, joiner.join(rule.label for rule in by), ", ".join(plugins))
        )
    return out


# --------------------------------------------------------------------------- Secrets


def is_secret(key: model.ObjectKey) -> bool:
    return key.group == "" and key.kind == "Secret"


MASK_SEED = 8
MASK = "+" * MASK_SEED
_SECRET_FIELDS = ("data", "stringData")


class Masker:
    """Argo CD's masking (gitops-engine HideSecretData): per key, each distinct value gets its own
    run of `+` (8, 12, 16 ...), so a reader sees *that* a value changed, never what it is.

    Values are numbered in the order they are first seen; `mask_drift` shows it git's side first,
    then live, then last-applied, as Argo CD does, so git's value is always `++++++++`."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str], str] = {}
        self._count: dict[str, int] = {}
        self._applied: dict[str, str] = {}  # last-applied text -> its masked text
        self._texts: dict[tuple[str, str], str] = {}  # (key, str value) -> its token
        self._parsed: dict[str, dict[str, Any]] = {}  # last-applied text -> parsed, normalized

    def token(self, key: str, value: Any) -> str:
        if type(value) is str:  # the usual value: its JSON spelling found once per Masker
            memo = self._texts.get((key, value))
            if memo is None:
                memo = self._texts[key, value] = self._token(key, value)
            return memo
        return self._token(key, value)

    def _token(self, key: str, value: Any) -> str:
        ident = (key, json.dumps(value, sort_keys=True, default=str))
        if ident not in self._tokens:
            n = self._count.get(key, 0)
            self._count[key] = n + 1
            self._tokens[ident] = "+" * (MASK_SEED + 4 * n)
        return self._tokens[ident]

    def see(self, body: Any) -> None:
        """Number the values of `body` without masking anything (to fix the token order)."""
        if type(body) is dict or isinstance(body, Mapping):
            for field in _SECRET_FIELDS:
                values = body.get(field)
                if type(values) is dict or isinstance(values, Mapping):
                    token = self.token
                    for k, v in values.items():
                        token(k if type(k) is str else str(k), v)

    def body(self, body: Any) -> Any:
        """A copy of a Secret with every value masked, last-applied included."""
        if not (type(body) is dict or isinstance(body, Mapping)):
            return body
        out = dict(body)
        token = self.token
        for field in _SECRET_FIELDS:
            values = out.get(field)
            if type(values) is dict or isinstance(values, Mapping):
                out[field] = {
                    k: token(k if type(k) is str else str(k), v) for k, v in values.items()
                }
            elif field in out and values is not None:
                out[field] = MASK  # malformed: not a map, hide it whole
        metadata = out.get("metadata")
        if type(metadata) is dict or isinstance(metadata, Mapping):
            annotations = metadata.get("annotations")
            if type(annotations) is dict or isinstance(annotations, Mapping):
                annotations = dict(annotations)
                if normalize.LAST_APPLIED in annotations:
                    annotations[normalize.LAST_APPLIED] = self.last_applied(
                        annotations[normalize.LAST_APPLIED]
                    )
                out["metadata"] = {**metadata, "annotations": annotations}
        return out

    def last_applied(self, raw: Any) -> str:
        """The last-applied annotation rebuilt from a masked copy of itself (its stringData, which
        kubectl stores in plain text, folded into masked data), or `++++++++` if unparsable."""
        if not isinstance(raw, str):
            return MASK
        if raw not in self._applied:  # the same text sits in live, predicted and normalized live
            parsed = self._parsed.pop(raw, None)
            if parsed is None:
                try:
                    parsed = json.loads(raw)
                except ValueError:
                    parsed = None
                if isinstance(parsed, dict):
                    normalize.normalize_secret(parsed)
            if isinstance(parsed, dict):
                masked = json.dumps(self.body(parsed), sort_keys=True, separators=(",", ":"))
            else:
                masked = MASK
            self._applied[raw] = masked
        return self._applied[raw]

    def seen_applied(self, raw: str, parsed: dict[str, Any]) -> None:
        """`raw` (a last-applied text) parsed and normalized by the caller: `last_applied` need
        not parse it again. `parsed` must not change from here on."""
        self._parsed[raw] = parsed


def mask_drift(drift: model.Drift) -> model.Drift:
    """Replace every Secret value in a drift with tokens, consistently across both sides."""
    masker = Masker()
    masker.see(drift.desired if drift.desired is not None else drift.predicted)
    masker.see(drift.normalized_live if drift.normalized_live is not None else drift.live)
    if drift.live is not None:
        orig = normalize.last_applied(drift.live)
        if orig is not None:
            normalize.normalize_secret(orig)
            masker.see(orig)
            annotations = (drift.live.get("metadata") or {}).get("annotations") or {}
            masker.seen_applied(annotations[normalize.LAST_APPLIED], orig)
    return model.Drift(
        drift.key,
        drift.status,
        changes=tuple(_mask_change(c, masker) for c in drift.changes),
        suppressed=tuple(
            model.Suppressed(_mask_change(s.change, masker), s.rule, s.plugin)
            for s in drift.suppressed
        ),
        origin=drift.origin,
        desired=masker.body(drift.desired),
        live=masker.body(drift.live),
        predicted=masker.body(drift.predicted),
        normalized_live=masker.body(drift.normalized_live),
        reason=drift.reason,
        counts=drift.counts,
    )


def _mask_change(change: model.Change, masker: Masker) -> model.Change:
    """Mask a change's values by where they sit in the Secret: a value at (or a map holding)
    `data`, `stringData` or the last-applied annotation is masked; anything else is kept."""
    path = change.path
    sensitive = (
        not path
        or path[0] in _SECRET_FIELDS
        or path[:3] == ("metadata", "annotations", normalize.LAST_APPLIED)
        or path in (("metadata",), ("metadata", "annotations"))
    )
    if not sensitive:
        return change
    return replace(
        change,
        desired=_mask_at(path, change.desired, masker),
        live=_mask_at(path, change.live, masker),
        secret=True,
    )


def _mask_at(path: model.FieldPath, value: Any, masker: Masker) -> Any:
    """Mask `value` as if it sat at `path` in a Secret."""
    if value is None:
        return None
    skeleton: Any = value
    for elem in reversed(path):
        if not isinstance(elem, str):
            return MASK  # a list item inside a Secret: nothing we know how to show safely
        skeleton = {elem: skeleton}
    masked = masker.body(skeleton) if isinstance(skeleton, Mapping) else MASK
    found, out = model.lookup(masked, path)
    if path and path[0] in _SECRET_FIELDS and len(path) == 1 and not isinstance(value, Mapping):
        return MASK
    return out if found else MASK
