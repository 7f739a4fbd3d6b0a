"""Server-side apply's merge, emulated on plain JSON data (sigs.k8s.io/structured-merge-diff).

A field set is a Python set of member paths; a path is a tuple of path elements written as in
`managedFields` `fieldsV1`: `f:name` (a map field), `k:{"name":"app"}` (an item of a
`list-type: map` list, keys sorted, compact JSON), `v:"x"` (an item of a `list-type: set` list),
`i:3` (any other list item). The rules, each a rule of structured-merge-diff's `typed` and
`merge` packages:

- **Types** come from OpenAPI (`schema.Node`): `x-kubernetes-list-type` atomic / set / map with
  `x-kubernetes-list-map-keys`; a list without it is associative when its
  `x-kubernetes-patch-strategy` is merge (keyed by the patch merge key, a set without one),
  else atomic (kube-openapi's schemaconv). `x-kubernetes-map-type: atomic` maps are leaves.
  Without a schema (free-form, preserve-unknown-fields) maps are granular and lists atomic.
- **ToFieldSet**: scalars, atomic lists/maps, list items, map keys that are not declared
  struct fields, and fields whose value is null or `{}` are members.
- **Merge(live, config)**: config wins for scalars and atomic values; maps are merged key by
  key; associative lists item by item, in the order of typed/merge.go's visitListItems (live's
  items, with the items config shares moved into config's order, config's new items after the
  shared item before them). A map or list that merges to nothing disappears.
- **Apply (force)**: the merge, then prune: what the applier's previous Apply set held and its new
  set does not is removed, unless another manager owns it (merge.Updater.prune, addBackOwnedItems,
  addBackDanglingItems, with EnsureNamedFieldsAreMembers).

A list-map key field an item leaves out takes its schema default; Kubernetes' only defaulted key
field is `protocol` (`+default="TCP"` on ContainerPort, ServicePort, EndpointPort), which the
bundled definitions do not carry, so "TCP" stands in for it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from typing import Any

Node = Any
"""A `schema.Node` (or anything with its interface: the engine's schema is a protocol)."""

ABSENT: Any = object()
"""A field that is not there (JSON null is None)."""


class ApplyError(ValueError):
    """The API server would refuse this apply (structured-merge-diff's validation)."""


Path = tuple[str, ...]
FieldSet = set[Path]

KEY_DEFAULTS = {"protocol": "TCP"}


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _json(value: Any) -> str:
    return _ENCODER.encode(value)


class Type:
    """A resolved schema: what kind of value sits here and how it merges."""

    __slots__ = ("_fields", "_items", "atomic", "keys", "kind", "named", "node")

    def __init__(self, node: Node | None, kind: str, atomic: bool, keys: tuple[str, ...]) -> None:
        self.node = node
        self.kind = kind  # "map" | "list" | "set" | "scalar" | "any"
        self.atomic = atomic
        self.keys = keys  # list-map keys ("list"); () for positional items
        self.named: frozenset[str] = _declared(node) if kind == "map" else frozenset()
        self._fields: dict[str, Type] = {}
        self._items: Type | None = None

    def field(self, name: str) -> Type:
        found = self._fields.get(name)
        if found is None:
            child = self.node.field(name) if self.node is not None else None
            found = self._fields[name] = of(child)
        return found

    def items(self) -> Type:
        if self._items is None:
            self._items = of(self.node.items() if self.node is not None else None)
        return self._items


def _declared(node: Node | None) -> frozenset[str]:
    """The struct fields a schema declares (structured-merge-diff's named fields), also beside
    additionalProperties or x-kubernetes-preserve-unknown-fields."""
    if node is None:
        return frozenset()
    known = node.known_fields()
    if known is not None:
        return frozenset(known)
    raw = getattr(node, "_raw", None)  # schema.Node's resolved schema: declared properties
    props = raw.get("properties") if isinstance(raw, Mapping) else None
    return frozenset(props) if isinstance(props, Mapping) else frozenset()


_TYPES: dict[int, tuple[Node, Type]] = {}
_TYPES_MAX = 100_000  # one bundled schema resolves a few thousand; a long-lived process resets
ANY = Type(None, "any", False, ())


def of(node: Node | None) -> Type:
    """The merge type of a schema node (memoized); ANY when there is none."""
    if node is None:
        return ANY
    hit = _TYPES.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    found = _resolve(node)
    if len(_TYPES) >= _TYPES_MAX:
        _TYPES.clear()
    _TYPES[id(node)] = (node, found)
    return found


def _resolve(node: Node) -> Type:
    if node.is_quantity or node.is_int_or_string or node.opaque:
        return Type(node, "scalar", False, ())
    kind = node.type
    if kind == "array":
        list_type = node.list_type
        if list_type is None and "merge" in node.patch_strategies:
            key = node.patch_merge_key
            return Type(node, "list" if key else "set", False, (key,) if key else ())
        if list_type == "map":
            return Type(node, "list", False, node.list_map_keys)
        if list_type == "set":
            return Type(node, "set", False, ())
        return Type(node, "list", True, ())
    if kind == "object":
        if node.is_preserve_unknown_fields and not _declared(node) and not node.is_map_of_values:
            return Type(node, "any", False, ())  # free-form: deduced from the value
        return Type(node, "map", node.map_type == "atomic", ())
    if kind in ("string", "integer", "number", "boolean"):
        return Type(node, "scalar", False, ())
    return Type(node, "any", False, ())


def _shape(t: Type, value: Any) -> tuple[str, bool]:
    """(map | list | set | scalar, atomic) for this value under this type; untyped values are
    deduced: maps granular, lists atomic."""
    if t.kind != "any":
        if t.kind == "map" and not isinstance(value, dict) and value is not None:
            return "scalar", True
        if t.kind in ("list", "set") and not isinstance(value, list) and value is not None:
            return "scalar", True
        return t.kind, t.atomic
    if isinstance(value, dict):
        return "map", False
    if isinstance(value, list):
        return "list", True
    return "scalar", False


def item_element(t: Type, kind: str, item: Any, index: int) -> str:
    """The path element naming a list item."""
    if kind == "set":
        return "v:" + _json(item)
    if t.keys and isinstance(item, dict):
        key = {}
        for name in t.keys:
            if name in item:
                key[name] = item[name]
            elif name in KEY_DEFAULTS:
                key[name] = KEY_DEFAULTS[name]
        if key:
            return "k:" + _json(key)
    return f"i:{index}"


@functools.lru_cache(maxsize=65536)
def canonical_element(elem: str) -> str:
    """A managedFields path element in the form `item_element` writes."""
    if elem[:2] in ("k:", "v:"):
        try:
            return elem[:2] + _json(json.loads(elem[2:]))
        except ValueError:
            return elem
    return elem


# --------------------------------------------------------------------------- field sets


def from_fields_v1(raw: Any, prefix: Path = ()) -> FieldSet:
    """A managedFields entry's `fieldsV1` as a set of member paths."""
    out: FieldSet = set()
    _walk_fields_v1(raw, prefix, out)
    return out


def to_fields_v1(paths: FieldSet) -> dict[str, Any]:
    """A set of member paths written as a managedFields entry's `fieldsV1` (the inverse of
    `from_fields_v1`): a member with members of its own is marked by `"."`."""
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for elem in path:
            node = node.setdefault(elem, {})
    for path in paths:
        node = root
        for elem in path:
            node = node[elem]
        if node:
            node["."] = {}
    return root


def _walk_fields_v1(raw: Any, prefix: Path, out: FieldSet) -> None:
    if not isinstance(raw, dict):
        return
    for key, child in raw.items():
        if key == ".":
            out.add(prefix)
            continue
        path = (*prefix, canonical_element(str(key)))
        if not child:
            out.add(path)
        else:
            _walk_fields_v1(child, path, out)


def field_set(value: Any, t: Type) -> FieldSet:
    """typed ToFieldSet: the member paths of a value."""
    out: FieldSet = set()
    _field_set(value, t, (), out)
    return out


def _field_set(value: Any, t: Type, path: Path, out: FieldSet) -> None:
    kind, atomic = _shape(t, value)
    if kind == "scalar":
        out.add(path)
        return
    if atomic:
        out.add(path)
        return
    if kind == "map":
        if not isinstance(value, dict):
            return
        for key, child in value.items():
            child_path = (*path, "f:" + key)
            _field_set(child, t.field(key), child_path, out)
            if key not in t.named or child is None or (isinstance(child, dict) and not child):
                out.add(child_path)
        return
    if not isinstance(value, list):
        return
    item_type = t.items()
    seen: set[str] = set()
    duplicates: set[str] = set()
    elems = [item_element(t, kind, item, i) for i, item in enumerate(value)]
    for elem in elems:
        if elem in seen:
            if elem not in duplicates:
                out.add((*path, elem))
                duplicates.add(elem)
        else:
            seen.add(elem)
    for elem, item in zip(elems, value, strict=True):
        if elem in duplicates:
            continue
        item_path = (*path, elem)
        _field_set(item, item_type, item_path, out)
        out.add(item_path)


def ensure_named(paths: Iterable[Path], t: Type) -> FieldSet:
    """fieldpath.Set.EnsureNamedFieldsAreMembers: every declared struct field on the way to a
    member becomes a member too."""
    out: FieldSet = set()
    for path in paths:
        out.add(path)
        node = t
        for i, elem in enumerate(path[:-1]):
            if elem.startswith("f:"):
                name = elem[2:]
                if node.kind == "map" and name in node.named:
                    out.add(path[: i + 1])
                node = node.field(name)
            else:
                node = node.items()
    return out


# --------------------------------------------------------------------------- merge


_LEAVES = frozenset({str, int, float, bool})


def merge(lhs: Any, rhs: Any, t: Type) -> Any:
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
            if rval is ABSENT:
                out[key] = lval
            elif type(rval) in _LEAVES:  # a scalar from config wins whatever the type says
                out[key] = rval
            else:
                merged = merge(lval, rval, t.field(key))
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
    out_list = _merge_list(llist, rlist, t, kind)
    return out_list if out_list else ABSENT


def _merge_list(lhs: list[Any], rhs: list[Any], t: Type, kind: str) -> list[Any]:
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
                value = merge(observed_lhs.get(pe), observed_rhs.get(pe, ABSENT), item_type)
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
                value = merge(lhs[li], ABSENT, item_type)
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
            value = merge(lchild, observed_rhs.get(pe, ABSENT), item_type)
            if value is not ABSENT:
                out.append(value)
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = advance()
    return out


# --------------------------------------------------------------------------- remove


Trie = dict[str, tuple[bool, "Trie"]]


def trie(paths: Iterable[Path]) -> Trie:
    root: dict[str, Any] = {}
    for path in paths:
        if not path:
            continue
        node = root
        for elem in path[:-1]:
            member, children = node.get(elem, (False, {}))
            node[elem] = (member, children)
            node = children
        member, children = node.get(path[-1], (False, {}))
        node[path[-1]] = (True, children)
    return root


def remove(value: Any, paths: Iterable[Path], t: Type) -> Any:
    """typed RemoveItems: the value without the members of `paths` (and what is below them)."""
    tree = trie(paths)
    if not tree:
        return value
    out = _remove(value, tree, t)
    return out if out is not None else {}


def _remove(value: Any, tree: Trie, t: Type) -> Any:
    kind, atomic = _shape(t, value)
    if kind == "scalar":
        return value
    if kind == "map":
        if not isinstance(value, dict) or not value or atomic:
            return None
        out: dict[str, Any] = {}
        for key, child in value.items():
            hit = tree.get("f:" + key)
            if hit is not None:
                member, below = hit
                if member:
                    continue
                if below:
                    child = _remove(child, below, t.field(key))
            out[key] = child
        return out or None
    if not isinstance(value, list) or not value or atomic:
        return None
    item_type = t.items()
    items = []
    for i, item in enumerate(value):
        hit = tree.get(item_element(t, kind, item, i))
        if hit is not None:
            member, below = hit
            if member:
                continue
            if below:
                item = _remove(item, below, item_type)
        items.append(item)
    return items or None


# --------------------------------------------------------------------------- apply


def applied_again(last: FieldSet, config: Mapping[str, Any], t: Type) -> bool:
    """Whether every path of `last` is a member of `config`'s field set, answered by walking
    `config` along `last` once (cheaper than the whole field set); False when unsure."""
    return _covers(trie(last), config, t)


def applied_again_raw(fields_v1: Any, config: Mapping[str, Any], t: Type) -> bool:
    """`applied_again` straight from a managedFields entry's fieldsV1 (already a trie)."""
    return isinstance(fields_v1, dict) and _covers(fields_v1, config, t, raw=True)


def _covers(tree: Any, value: Any, node: Type, *, raw: bool = False) -> bool:
    index: dict[str, Any] | None = None
    is_map = isinstance(value, dict)
    for key, entry in tree.items():
        if raw:  # fieldsV1: {element: children}, "." marks a member that has children
            if key == ".":
                continue
            if type(entry) is not dict and not isinstance(entry, dict):
                return False
            elem = key if key[:2] == "f:" else canonical_element(key)
            member, below = not entry or "." in entry, entry
        else:
            elem, (member, below) = key, entry
        if elem[:2] == "f:":
            name = elem[2:]
            if not is_map or name not in value:
                return False
            child = value[name]
            # a non-empty map or list is a member only when atomic or not declared
            if (
                member
                and child
                and isinstance(child, (dict, list))
                and name in node.named
                and not _shape(node.field(name), child)[1]
            ):
                return False
            if below and not _covers(below, child, node.field(name), raw=raw):
                return False
            continue
        if index is None:
            if not isinstance(value, list):
                return False
            kind, atomic = _shape(node, value)
            if atomic:
                return False
            index = {item_element(node, kind, item, i): item for i, item in enumerate(value)}
        if elem not in index:
            return False
        if below and not _covers(below, index[elem], node.items(), raw=raw):
            return False
    return True


def apply(
    live: Mapping[str, Any],
    config: Mapping[str, Any],
    t: Type,
    last: FieldSet,
    others: FieldSet,
    config_set: FieldSet | None = None,
) -> dict[str, Any]:
    """merge.Updater.Apply with force: `live` after applying `config` as a manager whose previous
    Apply set was `last`, while `others` is what every other manager owns. `config_set` is
    `field_set(config, t)` when the caller has it."""
    merged = merge(live, config, t)
    if merged is ABSENT or not isinstance(merged, dict):
        merged = {}
    if not last:
        return merged
    if config_set is None:
        if applied_again(last, config, t):  # the usual case: git unchanged since the sync
            return merged
        config_set = field_set(config, t)
    if last <= config_set:  # nothing it applied before is missing now: nothing to prune
        return merged
    last_named = ensure_named(last, t)
    managed = ensure_named(config_set | others, t)
    pruned = remove(merged, last_named, t)
    merged_set = ensure_named(field_set(merged, t), t)
    pruned_set = ensure_named(field_set(pruned, t), t)
    pruned = remove(merged, merged_set - (pruned_set | managed), t)
    pruned_set = ensure_named(field_set(pruned, t), t)
    result = remove(merged, (merged_set - pruned_set) & last_named, t)
    return result if isinstance(result, dict) else {}


def released(
    last: FieldSet, config_set: FieldSet, owners: Mapping[str, FieldSet]
) -> list[tuple[Path, tuple[str, ...]]]:
    """What the applier applied before, no longer applies, and other managers still own (so the
    apply keeps it): each outermost such path with those managers, sorted."""
    dropped = {p for p in last - config_set if any(p in s for s in owners.values())}
    out = []
    for path in sorted(dropped):
        if any(path[:i] in dropped for i in range(1, len(path))):
            continue
        out.append((path, tuple(sorted(m for m, s in owners.items() if path in s))))
    return out


def field_path(path: Path) -> tuple[Any, ...] | None:
    """A managedFields path as a model.FieldPath's elements: `f:x` -> "x", `i:3` -> 3, and
    `k:{...}` -> a dict of the key fields (the caller makes a ListKey); None for set items."""
    out: list[Any] = []
    for elem in path:
        if elem.startswith("f:"):
            out.append(elem[2:])
        elif elem.startswith("i:") and elem[2:].isdigit():
            out.append(int(elem[2:]))
        elif elem.startswith("k:"):
            try:
                key = json.loads(elem[2:])
            except ValueError:
                return None
            if not isinstance(key, dict):
                return None
            out.append(key)
        else:
            return None
    return tuple(out)


def entries(live: Mapping[str, Any]) -> list[tuple[str, str, str, Any]]:
    """(manager, operation, subresource, raw fieldsV1) per managedFields entry."""
    metadata = live.get("metadata")
    found = metadata.get("managedFields") if isinstance(metadata, Mapping) else None
    out = []
    for entry in found or ():
        if not isinstance(entry, Mapping):
            continue
        out.append(
            (
                str(entry.get("manager") or ""),
                str(entry.get("operation") or ""),
                str(entry.get("subresource") or ""),
                entry.get("fieldsV1"),
            )
        )
    return out


def managers(live: Mapping[str, Any]) -> list[tuple[str, str, str, FieldSet]]:
    """(manager, operation, subresource, field set) per managedFields entry."""
    return [(m, o, s, from_fields_v1(raw)) for m, o, s, raw in entries(live)]


def compare_sets(lhs: FieldSet, rhs: FieldSet) -> FieldSet:
    """What `lhs` has and `rhs` does not (typed Compare's Removed)."""
    return lhs - rhs


def without_composite_keys(paths: FieldSet) -> FieldSet:
    """gitops-engine filterOutCompositeKeyFields: a field that is part of an enclosing composite
    list-map key stays (removing it would break the item's identity)."""
    out: FieldSet = set()
    for path in paths:
        last = path[-1] if path else ""
        if last.startswith("f:") and _in_composite_key(path, last[2:]):
            continue
        out.add(path)
    return out


def _in_composite_key(path: Path, name: str) -> bool:
    for elem in reversed(path[:-1]):
        if elem.startswith("k:"):
            try:
                key = json.loads(elem[2:])
            except ValueError:
                return False
            if isinstance(key, dict) and len(key) > 1 and name in key:
                return True
    return False
