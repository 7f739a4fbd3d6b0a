"""Edits of a Helm values file that keep its comments and layout: the scalar of a key changed
on its own line (policies.edit_line, as the kustomization edits), or a key the file lacks added
at its nesting, below the deepest mapping the file already has on the key's way (indented as
that mapping's keys are). Pure: text in, text out; None (with a reason) when the edit cannot
be made without rewriting more than the value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kubectl_gitdrift.diagnose import policies

HOWS = ("values", "values-add")
"""Location.how values whose edit this module makes."""


@dataclass(frozen=True, slots=True)
class ValuesEdit:
    file: str  # relative to its repository's root
    root: str  # the tree holding it, for the reader ("" = the app's first source)
    key: tuple[str, ...]
    line: int  # 1-based line of the scalar (0: add the key)
    old: Any
    new: Any


def apply(text: str, edits: Sequence[ValuesEdit]) -> tuple[str, list[tuple[ValuesEdit, str]]]:
    """`text` with each edit made; also the edits that could not be made, with why."""
    failed: list[tuple[ValuesEdit, str]] = []
    for edit in sorted(edits, key=lambda e: (e.line == 0, e.line, e.key)):
        if edit.line:
            new = set_line(text, edit.line, edit.old, edit.new)
            why = f"line {edit.line} does not spell {edit.old!r}"
        else:
            new, why = add_key(text, edit.key, edit.new)
        if new is None:
            failed.append((edit, why))
        else:
            text = new
    return text, failed


def set_line(text: str, line: int, old: Any, new: Any) -> str | None:
    """`text` with the scalar `old` on `line` (1-based) replaced by `new`."""
    if isinstance(new, str) and "\n" in new:
        return None
    lines = text.splitlines(keepends=True)
    if not 1 <= line <= len(lines):
        return None
    edited = policies.edit_line(lines[line - 1], old, new)
    if edited is None:
        return None
    lines[line - 1] = edited
    return "".join(lines)


def add_key(text: str, key: Sequence[str], value: Any) -> tuple[str | None, str]:
    """`text` with `key: value` added at its nesting, and "" (or None and why not)."""
    if not key:
        return None, "no key"
    if isinstance(value, str) and "\n" in value:
        return None, "a multi-line value"
    try:
        docs = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as err:
        return None, f"not YAML ({str(err).splitlines()[0]})"
    if len(docs) > 1:
        return None, "more than one YAML document"
    root = docs[0] if docs else None
    lines = text.splitlines(keepends=True)
    if root is None or (isinstance(root, ScalarNode) and root.value in ("", "~", "null")):
        return _insert(lines, len(lines), 0, 2, key, value), ""
    if not isinstance(root, MappingNode) or root.flow_style:
        return None, "the file is not a block mapping"
    node: MappingNode = root
    depth = 0
    while depth < len(key):
        child = _get(node, key[depth])
        if child is None:
            break
        if not isinstance(child, MappingNode) or child.flow_style or not child.value:
            dotted = ".".join(key[: depth + 1])
            return None, f"{dotted} is set there, but not as a block mapping"
        node, depth = child, depth + 1
    if depth == len(key):
        return None, f"{'.'.join(key)} is already set there"
    indent = node.value[0][0].start_mark.column if node.value else 0
    step = _step(root) or 2
    after = _last_line(node) + 1
    return _insert(lines, after, indent, step, key[depth:], value), ""


def _insert(
    lines: list[str], after: int, indent: int, step: int, key: Sequence[str], value: Any
) -> str:
    new = []
    for i, part in enumerate(key):
        pad = " " * (indent + i * step)
        tail = f" {policies.yaml_scalar(value)}" if i == len(key) - 1 else ""
        new.append(f"{pad}{_key_text(part)}:{tail}\n")
    head = lines[:after]
    if head and not head[-1].endswith("\n"):
        head[-1] += "\n"
    return "".join([*head, *new, *lines[after:]])


def _key_text(key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", key):
        try:
            if yaml.safe_load(key) == key:
                return key
        except yaml.YAMLError:
            pass
    return json.dumps(key)


def _get(node: MappingNode, key: str) -> Node | None:
    for k, v in node.value:
        if isinstance(k, ScalarNode) and k.value == key:
            return v  # type: ignore[no-any-return]
    return None


def _last_line(node: Node) -> int:
    """The 0-based line of the last character `node` spans."""
    if isinstance(node, MappingNode) and node.value:
        return _last_line(node.value[-1][1])
    if isinstance(node, SequenceNode) and node.value:
        return _last_line(node.value[-1])
    end = node.end_mark
    line = int(end.line) if end.column > 0 else int(end.line) - 1
    return max(line, int(node.start_mark.line))


def _step(root: MappingNode) -> int:
    """How far the file indents a nested mapping (the first one found), 0 when none."""
    for k, v in root.value:
        if isinstance(v, MappingNode) and v.value and not v.flow_style:
            return int(v.value[0][0].start_mark.column - k.start_mark.column)
    return 0


__all__ = ["HOWS", "ValuesEdit", "add_key", "apply", "set_line"]
