"""The engine's hot functions as they were before issue 18's engine work (commit 1203e8d),
kept verbatim as the reference the optimised versions are property-tested against
(tests/compare/test_engine_equivalence.py). Not used by the package.
"""

# ruff: noqa
# mypy: ignore-errors
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import quantity
from kubectl_gitdrift.compare.normalize import _NOT_OMITEMPTY, _POINTER_BOOLS, _POINTER_INTS, Node

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
    if (type(desired) is dict or isinstance(desired, Mapping)) and (
        type(live) is dict or isinstance(live, Mapping)
    ):
        result = dict(live)
        orig_map = orig if isinstance(orig, Mapping) else {}
        for key, value in desired.items():
            child = node.field(key) if node is not None else None
            if value is None:  # an explicit null deletes, unless live is null already
                if live.get(key) is not None:
                    del result[key]
            elif key in live:
                result[key] = predict(
                    orig_map.get(key, _MISSING), value, live[key], child, strategic=strategic
                )
            else:
                result[key] = _without_nulls(value)
        for key in orig_map:
            if key not in desired:
                result.pop(key, None)
        if strategic and (retain or (node is not None and "retainKeys" in node.patch_strategies)):
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
    if not strategic and orig is not _MISSING and desired == strip_to(orig, live):
        return live
    if strategic and type(desired) is list and type(live) is list:
        # an atomic list replaced in place: strategic merge writes it as the patch has it, nulls
        # included (a claim template's `creationTimestamp: null`); nulls only go where the key
        # is new or changes type (IgnoreUnmatchedNulls)
        return model.copy_json(desired)
    return _without_nulls(desired)


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
            out.append(
                predict(
                    orig_items.get(k), item, live_items[k], item_node, strategic=True, retain=retain
                )
            )
        else:
            out.append(_without_nulls(item))
    server_only = []
    for item in live:
        if not isinstance(item, Mapping):
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
    if type(value) is dict or isinstance(value, Mapping):
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


def remarshal(body: Any, node: Node | None, *, top: bool = True) -> Any:
    """What Argo CD's remarshal (a JSON round-trip through the Go type) does to built-in kinds:
    canonical quantities, integral floats as ints, null, empty and zero-valued optional fields
    dropped (pointer fields keep `false`/`0`; fields without omitempty, `_NOT_OMITEMPTY`, keep
    `[]` and null; a zero `creationTimestamp`, a struct in Go, stays null). Always returns a new
    object, sharing no containers with `body` but the raw JSON below.

    `node` None means an unknown kind (a CRD): only number spelling changes. So does an object
    Go could not decode strictly (a field the type does not have, a string in an integer field):
    Argo CD then compares it as written, and the unknown field stays drift for good.

    Raw JSON the Go types keep byte for byte (managedFields' `fieldsV1`, RawExtension) is neither
    normalized nor copied: it is shared with `body`, and read-only like `body` itself.
    """
    if node is not None and top:
        try:  # one pass: remarshal as the type, checking on the way that Go would decode it
            return _remarshal_typed(body, node, top=True)
        except _Undecodable:
            node = None
    return _remarshal(body, node, top=top)


class _Undecodable(Exception):
    """Go's strict decoder would reject the object: it is compared as written."""


_SCALARS = (str, int, float)


def _remarshal_typed(body: Any, node: Node, *, top: bool) -> Any:
    """`_remarshal(body, node)`, raising `_Undecodable` where `decodes(body, node)` is False."""
    if type(body) is dict and node.plain_object:
        return _typed_object(body, node, top)
    if body is None:
        return None
    if node.opaque:
        return body
    if node.is_quantity or node.is_int_or_string:
        if not isinstance(body, _SCALARS) or isinstance(body, bool):
            raise _Undecodable
        if isinstance(body, float) and body.is_integer():
            return int(body)
        if node.is_quantity:
            return quantity.canonical(body) or body
        return body
    kind = node.type
    if kind is not None:
        if not _json_type_ok(body, kind):
            raise _Undecodable
    elif isinstance(body, float) and body.is_integer():
        return int(body)
    if type(body) is dict or isinstance(body, Mapping):
        return _typed_object(body, node, top)
    if isinstance(body, list):
        item = node.items()
        if item is None:
            return [_remarshal(v, None, top=False) for v in body]
        return [_remarshal_typed(v, item, top=False) for v in body]
    if isinstance(body, float) and body.is_integer():
        return int(body)
    return body


_LEAF_TYPES = {"string": str, "integer": int, "boolean": bool}


def _typed_object(body: Mapping[str, Any], node: Node, top: bool) -> dict[str, Any]:
    """`_remarshal_typed` of a dict at a plain object node: the hot loop, with the common
    scalar leaves (a str, int or bool where the schema says so) decided inline."""
    known = node.known_fields()
    out: dict[str, Any] = {}
    entries = node.is_map_of_values  # map[string]T: Go keeps every entry, "" and 0 too
    field = node.field
    for key, value in body.items():
        if known is not None and key not in known:
            raise _Undecodable
        child = field(key)
        if child is None:
            out[key] = _untyped(value)
            continue
        cls = type(value)
        scalar = child.scalar_type
        if scalar is not None and cls is _LEAF_TYPES.get(scalar):
            if entries:
                out[key] = value
            elif cls is str:
                if value:
                    out[key] = value
            elif cls is int:
                if value or key in _POINTER_INTS:
                    out[key] = value
            elif value or key in _POINTER_BOOLS:
                out[key] = value
            continue
        if cls is dict and value and child.plain_object:
            out[key] = _typed_object(value, child, False)
            continue
        if key == "creationTimestamp" and value is None:
            out[key] = None  # metav1.Time is a struct: Go keeps the zero time as null
            continue
        if entries and value is not None:
            pass
        elif (value is None or value == []) and (node.definition, key) in _NOT_OMITEMPTY:
            out[key] = None if value is None else []
            continue
        elif _empty_optional(key, value, child):
            if value is not None and not decodes(value, child):
                raise _Undecodable
            continue
        out[key] = _remarshal_typed(value, child, top=False)
    return out


def _json_type_ok(body: Any, kind: str) -> bool:
    """The JSON type check of `decodes` for a node of declared type `kind`."""
    cls = type(body)
    if (kind, cls) in _TYPE_OK:
        return True
    if cls is float and kind == "integer":
        return body.is_integer()  # type: ignore[no-any-return]
    if cls in _EXACT:
        return False
    if not isinstance(body, _JSON_TYPES[kind]) or (kind in ("integer", "number") and body is True):
        return False
    if isinstance(body, bool) and kind != "boolean":
        return False
    return not (kind == "integer" and isinstance(body, float) and not body.is_integer())


_TYPE_OK = frozenset(
    {
        ("string", str), ("integer", int), ("number", int), ("number", float),
        ("boolean", bool), ("object", dict), ("array", list),
    }
)  # fmt: skip
_EXACT = frozenset({str, int, float, bool, dict, list})


def _remarshal(body: Any, node: Node | None, *, top: bool) -> Any:
    if node is None:
        return _untyped(body)
    if node.opaque:
        return body
    if isinstance(body, float) and body.is_integer():
        return int(body)
    if node.is_quantity and isinstance(body, (str, int, float)) and not isinstance(body, bool):
        return quantity.canonical(body) or body
    if isinstance(body, Mapping):
        out: dict[str, Any] = {}
        entries = node.is_map_of_values  # map[string]T: Go keeps every entry, "" and 0 too
        for key, value in body.items():
            child = node.field(key)
            if key == "creationTimestamp" and value is None:
                out[key] = None  # metav1.Time is a struct: Go keeps the zero time as null
                continue
            if entries and value is not None:
                pass
            elif (value is None or value == []) and (node.definition, key) in _NOT_OMITEMPTY:
                out[key] = None if value is None else []
                continue
            elif child is not None and _empty_optional(key, value, child):
                continue
            out[key] = _remarshal(value, child, top=False)
        return out
    if isinstance(body, list):
        item = node.items()
        return [_remarshal(v, item, top=False) for v in body]
    return body


def _untyped(body: Any) -> Any:
    """`_remarshal(body, None)`: a copy with integral floats as ints."""
    cls = type(body)
    if cls is dict:
        return {k: (v if type(v) in _PLAIN_ATOMS else _untyped(v)) for k, v in body.items()}
    if cls is list:
        return [v if type(v) in _PLAIN_ATOMS else _untyped(v) for v in body]
    if cls in _PLAIN_ATOMS:
        return body
    if isinstance(body, float) and body.is_integer():
        return int(body)
    if isinstance(body, Mapping):
        return {k: _untyped(v) for k, v in body.items()}
    if isinstance(body, list):
        return [_untyped(v) for v in body]
    return body


_PLAIN_ATOMS = frozenset({str, int, bool, type(None)})


def _empty_optional(key: str, value: Any, node: Node) -> bool:
    if value is None:
        return True  # nil pointers, maps and slices are omitted
    if value == [] or value == "":
        return True
    if value is False and node.type == "boolean":
        return key not in _POINTER_BOOLS
    if (
        value == 0
        and isinstance(value, int)
        and not isinstance(value, bool)
        and node.type == "integer"
    ):
        return key not in _POINTER_INTS
    return value == {} and node.is_map_of_values


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int, float),
    "number": (int, float),
    "boolean": (bool,),
    "object": (Mapping,),
    "array": (list,),
}


def decodes(body: Any, node: Node) -> bool:
    """Would Go's strict decoder (DisallowUnknownFields) accept `body` as this type? False for a
    field the type does not declare and for a value of the wrong JSON type (`replicas: "3"`)."""
    if body is None or node.opaque:
        return True
    if node.is_quantity or node.is_int_or_string:
        return isinstance(body, (str, int, float)) and not isinstance(body, bool)
    kind = node.type
    if kind is not None:
        allowed = _JSON_TYPES[kind]
        if not isinstance(body, allowed) or (kind in ("integer", "number") and body is True):
            return False
        if isinstance(body, bool) and kind != "boolean":
            return False
        if kind == "integer" and isinstance(body, float) and not body.is_integer():
            return False
    if isinstance(body, Mapping):
        known = node.known_fields()
        for key, value in body.items():
            if known is not None and key not in known:
                return False
            child = node.field(key)
            if child is not None and not decodes(value, child):
                return False
    elif isinstance(body, list):
        item = node.items()
        if item is not None:
            return all(decodes(v, item) for v in body)
    return True


def remarshal_known_types(
    body: dict[str, Any], key: model.ObjectKey, definition: Callable[[str], Node | None]
) -> None:
    """Argo CD's known-types normalizer, in place: CRD fields that hold a Kubernetes type
    (Rollout `spec.template.spec` is a PodSpec) are re-marshalled as that type."""
    for path, name in KNOWN_TYPE_FIELDS.get((key.group, key.kind), ()):
        node = definition(name)
        if node is not None:
            _remarshal_at(body, path, node)


KNOWN_TYPE_FIELDS: Mapping[tuple[str, str], tuple[tuple[tuple[str, ...], str], ...]] = {
    ("argoproj.io", "Rollout"): ((("spec", "template", "spec"), "io.k8s.api.core.v1.PodSpec"),),
}


def _remarshal_at(body: Any, path: Sequence[str], node: Node) -> None:
    if isinstance(body, list):  # the field path walks through lists
        for item in body:
            _remarshal_at(item, path, node)
        return
    if not isinstance(body, dict) or not path or path[0] not in body:
        return
    if len(path) == 1:
        value = body[path[0]]
        if isinstance(value, Mapping) and decodes(value, node):
            body[path[0]] = _remarshal(value, node, top=False)
        return
    _remarshal_at(body[path[0]], path[1:], node)


# --------------------------------------------------------------------------- Secrets (diff.py, now masking.py)

import json
from dataclasses import replace
from kubectl_gitdrift.compare import normalize

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

    def token(self, key: str, value: Any) -> str:
        ident = (key, json.dumps(value, sort_keys=True, default=str))
        if ident not in self._tokens:
            n = self._count.get(key, 0)
            self._count[key] = n + 1
            self._tokens[ident] = "+" * (MASK_SEED + 4 * n)
        return self._tokens[ident]

    def see(self, body: Any) -> None:
        """Number the values of `body` without masking anything (to fix the token order)."""
        if isinstance(body, Mapping):
            for field in _SECRET_FIELDS:
                values = body.get(field)
                if isinstance(values, Mapping):
                    for k, v in values.items():
                        self.token(str(k), v)

    def body(self, body: Any) -> Any:
        """A copy of a Secret with every value masked, last-applied included."""
        if not isinstance(body, Mapping):
            return body
        out = dict(body)
        for field in _SECRET_FIELDS:
            values = out.get(field)
            if isinstance(values, Mapping):
                out[field] = {k: self.token(str(k), v) for k, v in values.items()}
            elif field in out and values is not None:
                out[field] = MASK  # malformed: not a map, hide it whole
        metadata = out.get("metadata")
        if isinstance(metadata, Mapping) and isinstance(metadata.get("annotations"), Mapping):
            annotations = dict(metadata["annotations"])
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
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                normalize.normalize_secret(parsed)
                masked = json.dumps(self.body(parsed), sort_keys=True, separators=(",", ":"))
            else:
                masked = MASK
            self._applied[raw] = masked
        return self._applied[raw]


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


# --------------------------------------------------------------------------- smd.merge (compare/smd.py)

from kubectl_gitdrift.compare.smd import ABSENT, ApplyError, Type, _shape, item_element


def smd_merge(lhs: Any, rhs: Any, t: Type) -> Any:
    """typed Merge with config (rhs) winning: the object after applying rhs onto lhs."""
    if rhs is ABSENT:
        return lhs
    if lhs is ABSENT:
        return rhs
    kind, atomic = _shape(t, rhs if rhs is not None else lhs)
    if kind == "scalar" or atomic:
        return rhs
    if kind == "map":
        if not isinstance(lhs, dict) and lhs is not None:
            return rhs
        lmap = lhs or {}
        rmap = rhs if isinstance(rhs, dict) else {}
        if not lmap and not rmap:
            return rhs
        out: dict[str, Any] = {}
        for key, lval in lmap.items():
            rval = rmap.get(key, ABSENT)
            merged = lval if rval is ABSENT else smd_merge(lval, rval, t.field(key))
            if merged is not ABSENT:
                out[key] = merged
        for key, rval in rmap.items():
            if key not in lmap:
                out[key] = rval
        return out if out else ABSENT
    if not isinstance(lhs, list) and lhs is not None:
        return rhs
    llist = lhs or []
    rlist = rhs if isinstance(rhs, list) else []
    if not llist and not rlist:
        return rhs
    out_list = _smd_merge_list(llist, rlist, t, kind)
    return out_list if out_list else ABSENT


def _smd_merge_list(lhs: list[Any], rhs: list[Any], t: Type, kind: str) -> list[Any]:
    """typed/merge.go visitListItems."""
    item_type = t.items()
    rhs_pes = [item_element(t, kind, item, i) for i, item in enumerate(rhs)]
    if len(set(rhs_pes)) != len(rhs_pes):
        raise ApplyError("git's object has two items with the same key in a list-type map/set")
    if t.keys and kind == "list" and any(pe.startswith("i:") for pe in rhs_pes):
        keys = ", ".join(t.keys)
        raise ApplyError(f"git's object has a list item without any of its keys ({keys})")
    lhs_pes = [item_element(t, kind, item, i) for i, item in enumerate(lhs)]
    observed_rhs: dict[str, Any] = {}
    for pe, item in zip(rhs_pes, rhs, strict=True):
        observed_rhs.setdefault(pe, item)
    observed_lhs: dict[str, Any] = {}
    for pe, item in zip(lhs_pes, lhs, strict=True):
        observed_lhs[pe] = item if pe not in observed_lhs else None  # duplicates: nil
    shared = [pe for pe in rhs_pes if pe in observed_lhs]
    shared_at = 0
    next_shared = shared[0] if shared else None
    if shared:
        shared_at = 1
    merged_rhs: set[str] = set()
    out: list[Any] = []
    li = ri = 0
    llen, rlen = len(lhs_pes), len(rhs_pes)

    def advance() -> str | None:
        nonlocal shared_at
        if shared_at < len(shared):
            shared_at += 1
            return shared[shared_at - 1]
        return None

    while li < llen or ri < rlen:
        if li < llen and ri < rlen:
            pe = lhs_pes[li]
            if pe == rhs_pes[ri]:
                merged_rhs.add(pe)
                value = smd_merge(observed_lhs.get(pe), observed_rhs.get(pe, ABSENT), item_type)
                if value is not ABSENT:
                    out.append(value)
                li += 1
                ri += 1
                next_shared = advance()
                continue
            if pe in observed_rhs and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < llen:
            pe = lhs_pes[li]
            if pe not in observed_rhs:
                value = smd_merge(lhs[li], ABSENT, item_type)
                if value is not ABSENT:
                    out.append(value)
                li += 1
                continue
            if pe in merged_rhs:
                li += 1
        if ri < rlen:
            pe = rhs_pes[ri]
            merged_rhs.add(pe)
            lchild = observed_lhs.get(pe, ABSENT)
            if lchild is None and pe in observed_lhs:
                lchild = ABSENT
            value = smd_merge(lchild, observed_rhs.get(pe, ABSENT), item_type)
            if value is not ABSENT:
                out.append(value)
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = advance()
    return out


# --------------------------------------------------------------------------- smd._covers

from kubectl_gitdrift.compare.smd import canonical_element


def smd_covers(tree: Any, value: Any, node: Type, *, raw: bool = False) -> bool:
    index: dict[str, Any] | None = None
    for key, entry in tree.items():
        if raw:  # fieldsV1: {element: children}, "." marks a member that has children
            if key == ".":
                continue
            if not isinstance(entry, dict):
                return False
            elem, member, below = canonical_element(key), not entry or "." in entry, entry
        else:
            elem, (member, below) = key, entry
        if elem.startswith("f:"):
            name = elem[2:]
            if not isinstance(value, dict) or name not in value:
                return False
            child, child_node = value[name], node.field(name)
            # a non-empty map or list is a member only when atomic or not declared
            granular = (
                member
                and isinstance(child, (dict, list))
                and child
                and name in node.named
                and not _shape(child_node, child)[1]
            )
            if granular:
                return False
        else:
            if index is None:
                if not isinstance(value, list):
                    return False
                kind, atomic = _shape(node, value)
                if atomic:
                    return False
                index = {item_element(node, kind, item, i): item for i, item in enumerate(value)}
            if elem not in index:
                return False
            child, child_node = index[elem], node.items()
        if below and not smd_covers(below, child, child_node, raw=raw):
            return False
    return True
