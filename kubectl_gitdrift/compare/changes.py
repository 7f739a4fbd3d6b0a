"""The fields where two objects differ, as Argo CD compares them: merge-keyed lists by key, order
counted; and how a multi-line string value's change reads, line by line. The only dictdiffer
import."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import dictdiffer

from kubectl_gitdrift import model
from kubectl_gitdrift.compare.normalize import Node


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


# --------------------------------------------------------------------------- multi-line values


def multiline(desired: Any, live: Any) -> bool:
    """A change of string values where one side spans lines (a ConfigMap's embedded file, an
    annotation holding a script): shown line by line, not as one cut-off text."""
    sides = [v for v in (desired, live) if v is not None]
    return (
        bool(sides)
        and all(isinstance(v, str) for v in sides)
        and any("\n" in v.rstrip("\n") for v in sides)
    )


def line_count(value: str) -> str:
    """`4 lines` (a final newline ends the last line, it does not start another)."""
    n = len(value.splitlines())
    return f"{n} line" if n == 1 else f"{n} lines"


def line_summary(old: Any, new: Any, width: int = 60) -> str:
    """What changed from `old` to `new`, line by line, in at most `width` characters:
    `+1 line: …`, `-2 +2 lines: …`, with the first line `new` adds (else the first it drops)."""
    a = old.splitlines() if isinstance(old, str) else []
    b = new.splitlines() if isinstance(new, str) else []
    removed: list[str] = []
    added: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            removed += a[i1:i2]
            added += b[j1:j2]
    if not removed and not added:
        ends = isinstance(new, str) and new.endswith("\n")
        return "only the final newline differs: " + ("added" if ends else "dropped")
    counts = " ".join(
        f"{sign}{len(lines)}" for sign, lines in (("-", removed), ("+", added)) if lines
    )
    plural = len(removed) + len(added) > 1
    head = f"{counts} {'lines' if plural else 'line'}: "
    first = (added or removed)[0].strip() or "(blank line)"
    room = max(width - len(head), 10)
    return head + (first if len(first) <= room else first[: room - 3] + "...")


def line_diff(old: Any, new: Any, *, limit: int = 20) -> list[str]:
    """A small unified diff of two multi-line values (`--- git`, `+++ live`, one line of
    context), at most `limit` lines of it, then `… N more lines`."""
    a = old.splitlines() if isinstance(old, str) else []
    b = new.splitlines() if isinstance(new, str) else []
    lines = list(difflib.unified_diff(a, b, "git", "live", n=1, lineterm=""))
    if not lines and isinstance(old, str) and isinstance(new, str):
        lines = ["--- git", "+++ live", f"  ({line_summary(old, new)})"]
    if len(lines) > limit:
        rest = len(lines) - limit
        lines = [*lines[:limit], f"… {rest} more line{'s' if rest > 1 else ''}"]
    return lines
