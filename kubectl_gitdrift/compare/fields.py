"""managedFields: which manager owns which field (FieldsV1 tries mapped onto our FieldPaths)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_gitdrift import model


@dataclass(frozen=True, slots=True)
class Entry:
    owner: model.Owner
    trie: Mapping[str, Any]


def entries(live: model.Body) -> list[Entry]:
    """The live object's managedFields entries (FieldsV1 only), in server order."""
    out = []
    for raw in (live.get("metadata") or {}).get("managedFields") or ():
        if not isinstance(raw, Mapping) or raw.get("fieldsType", "FieldsV1") != "FieldsV1":
            continue
        trie = raw.get("fieldsV1")
        out.append(
            Entry(
                owner=model.Owner(
                    manager=str(raw.get("manager") or ""),
                    operation=str(raw.get("operation") or ""),
                    subresource=str(raw.get("subresource") or ""),
                    time=str(raw["time"]) if raw.get("time") else None,
                    api_version=str(raw.get("apiVersion") or ""),
                ),
                trie=trie if isinstance(trie, Mapping) else {},
            )
        )
    return out


def has_managed_fields(live: model.Body) -> bool:
    return bool((live.get("metadata") or {}).get("managedFields"))


def _child(node: Mapping[str, Any], elem: model.PathElem) -> Mapping[str, Any] | None:
    if isinstance(elem, model.ListKey):
        wanted = dict(elem.fields)
        for key, sub in node.items():
            if key.startswith("k:"):
                try:
                    keyed = json.loads(key[2:])
                except ValueError:
                    continue
                if isinstance(keyed, dict) and all(keyed.get(k) == v for k, v in wanted.items()):
                    return sub if isinstance(sub, Mapping) else {}
        return None
    if isinstance(elem, int):
        sub = node.get(f"i:{elem}")
    else:
        sub = node.get(f"f:{elem}")
    return sub if isinstance(sub, Mapping) or sub is None else {}


def owns(trie: Mapping[str, Any], path: model.FieldPath) -> bool:
    """True when the entry owns `path`: the path itself, an atomic ancestor, or a descendant."""
    node: Mapping[str, Any] = trie
    for elem in path:
        if not node and node is not trie:
            return True  # an empty leaf owns its whole (atomic) value
        child = _child(node, elem)
        if child is None:
            return False
        node = child
    return True


def owners(live: model.Body, path: model.FieldPath) -> list[model.Owner]:
    """Every managedFields entry that owns `path` (or a part of it)."""
    return [e.owner for e in entries(live) if owns(e.trie, path)]


def leaf_paths(trie: Mapping[str, Any], prefix: model.FieldPath = ()) -> Iterator[model.FieldPath]:
    """Every field a FieldsV1 trie owns, as FieldPaths (set items as `v:` strings)."""
    if not trie:
        yield prefix
        return
    for key, sub in trie.items():
        if key == ".":
            continue
        elem: model.PathElem
        if key.startswith("f:"):
            elem = key[2:]
        elif key.startswith("k:"):
            try:
                keyed = json.loads(key[2:])
            except ValueError:
                continue
            elem = model.ListKey(tuple(sorted(keyed.items())))
        elif key.startswith("i:") and key[2:].isdigit():
            elem = int(key[2:])
        else:
            elem = key  # v:<json> set members, kept opaque
        yield from leaf_paths(sub if isinstance(sub, Mapping) else {}, (*prefix, elem))


def paths_owned_by(live: model.Body, managers: Sequence[str]) -> list[model.FieldPath]:
    """Fields owned by any of `managers` (by manager name alone, as Argo CD matches them)."""
    wanted = set(managers)
    out: list[model.FieldPath] = []
    for entry in entries(live):
        if entry.owner.manager in wanted:
            out.extend(leaf_paths(entry.trie))
    return out
