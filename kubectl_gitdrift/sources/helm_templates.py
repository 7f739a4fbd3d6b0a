"""Read a Helm chart's template text as helm_locate needs it: the lines that render a field
(YAML keys tracked by indentation through the Go template actions, `with` scopes followed,
`range` and `define` bodies left alone), and the values key a value expression renders
unchanged (`{{ .Values.a | quote }}`, `{{ default "x" .Values.a }}`, `.` inside
`{{ with .Values.a }}`). Text only: no template is executed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from kubectl_gitdrift.model import FieldPath, ListKey

Key = tuple[str, ...]

_ACTION = re.compile(r"\{\{-?(.*?)-?\}\}", re.DOTALL)
_KEY_LINE = re.compile(
    r"""^(?P<indent>[ ]*)(?P<dash>(?:-[ ]+)*)(?P<key>"[^"]*"|'[^']*'|[^\s:#'"{][^:#]*?)"""
    r"""[ ]*:(?:[ ]+(?P<value>.*?))?[ ]*$"""
)
_DASH_ONLY = re.compile(r"^(?P<indent>[ ]*)-[ ]*$")
_BLOCK = re.compile(r"^\s*(?:toYaml|toJson)\s+(?P<expr>\S+)\s*\|\s*n?indent\s+(?P<n>\d+)\s*$")


@dataclass
class _Entry:
    indent: int
    name: str | None  # a key; None: a list item
    item: int = -1  # the item's id (list items)


def candidates(
    text: str, kind: str, path: FieldPath, name: str = ""
) -> Iterator[tuple[int, str, str | None, Key, bool]]:
    """(line, value text, with-scope, rest, literal) of each template line that renders `path`
    in a document of `kind` named `name` (or of a kind or name the template computes in a way
    that may give them)."""
    lines = text.splitlines()
    start = 0
    for end in [*[i for i, ln in enumerate(lines) if re.match(r"^---\s*$", ln)], len(lines)]:
        doc = lines[start:end]
        offset = start
        start = end + 1
        kinds = [m.group(1) for ln in doc if (m := re.match(r"^kind:\s*(\S+)\s*$", ln))]
        if kinds and kind not in kinds and all("{{" not in k for k in kinds):
            continue
        if name and not _may_name(doc, name):
            continue
        yield from _in_document(doc, offset, path)


def _may_name(doc: Sequence[str], name: str) -> bool:
    """Whether the document's metadata.name may render as `name` (its literal text around the
    actions matches; a name not found or not understood may be anything)."""
    in_metadata = False
    for line in doc:
        if re.match(r"^metadata:\s*$", line):
            in_metadata = True
            continue
        if in_metadata and re.match(r"^\S", line):
            break
        found = re.match(r"^  name:\s*(.+?)\s*$", line) if in_metadata else None
        if found:
            parts = pieces(found.group(1))
            if parts is None:
                return True
            literals, _ = parts
            pattern = ".*".join(re.escape(lit) for lit in literals)
            return re.fullmatch(pattern, name, re.DOTALL) is not None
    return True


def _in_document(
    doc: Sequence[str], offset: int, path: FieldPath
) -> Iterator[tuple[int, str, str | None, Key, bool]]:
    want = _shape(path)
    stack: list[_Entry] = []
    scopes: list[_Scope] = []  # `with` expressions, ranges, other blocks (None) open here
    items: dict[int, dict[str, str]] = {}  # item id → its literal scalar keys
    found: list[tuple[int, str, str | None, Key, bool, tuple[int, ...]]] = []
    next_item = 0
    for index, raw in enumerate(doc):
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        actions = _ACTION.findall(stripped)
        if actions and not _ACTION.sub("", stripped).strip():
            for action in actions:
                body = action.strip()
                word = body.split(None, 1)[0] if body else ""
                if word == "with":
                    scopes.append(body[4:].strip())
                elif word == "range":
                    loop = _RANGE.match(body)
                    scopes.append(_Range(*loop.groups()) if loop else None)
                elif word in ("if", "define", "block"):
                    scopes.append(None if word != "if" else "if")
                elif word == "end" and scopes:
                    scopes.pop()
                block = _BLOCK.match(body.lstrip("- "))
                if block and not _opaque(scopes):
                    indent = int(block.group("n"))
                    keys = _keys_above(stack, indent)
                    rest = _after(want, keys)
                    if rest is not None:
                        found.append(
                            (offset + index + 1, block.group("expr"), _scope(scopes),
                             rest, False, _ids(stack, indent))
                        )  # fmt: skip
            continue
        dash = _DASH_ONLY.match(line)
        if dash:
            indent = len(dash.group("indent"))
            _pop(stack, indent, item=True)
            stack.append(_Entry(indent, None, next_item))
            next_item += 1
            continue
        ranged = _RANGE_KEY.match(line)
        if ranged:  # `{{ $k }}: {{ $v }}` in `range $k, $v := .Values.x`: the field is x.<key>
            indent = len(ranged.group("indent"))
            _pop(stack, indent, item=False)
            expr = _ranged(scopes, stack, want, ranged.group("k"), ranged.group("value"))
            if expr is not None:
                found.append(
                    (offset + index + 1, expr, _scope(scopes), (), False,
                     tuple(e.item for e in stack if e.name is None))
                )  # fmt: skip
            stack.append(_Entry(indent, "{{ range }}"))
            continue
        match = _KEY_LINE.match(line)
        if not match:
            continue
        indent = len(match.group("indent"))
        dashes = match.group("dash")
        if dashes:
            _pop(stack, indent, item=True)
            for _ in range(dashes.count("-")):
                stack.append(_Entry(indent, None, next_item))
                next_item += 1
            indent += len(dashes)
        _pop(stack, indent, item=False)
        name = match.group("key").strip()
        if name[:1] in "\"'":
            name = name[1:-1]
        stack.append(_Entry(indent, name))
        value = (match.group("value") or "").strip()
        parent = stack[-2] if len(stack) > 1 and stack[-2].name is None else None
        if parent is not None and value and "{{" not in value:
            items.setdefault(parent.item, {})[name] = unquote(value)
        if "{{" in name:
            continue
        shape = tuple(e.name for e in stack)
        if value and shape == want and not _opaque(scopes):
            found.append(
                (offset + index + 1, value, _scope(scopes), (), "{{" not in value,
                 tuple(e.item for e in stack if e.name is None))
            )  # fmt: skip
    list_keys = [e for e in path if isinstance(e, ListKey | int)]
    for at, expr, scope, rest, literal, ids in found:
        if len(ids) == len(list_keys) and all(
            _item_matches(items.get(i, {}), k) for i, k in zip(ids, list_keys, strict=True)
        ):
            yield at, expr, scope, rest, literal


@dataclass(frozen=True, slots=True)
class _Range:
    """An open `range $key, $value := expr`."""

    key: str
    value: str
    expr: str


_Scope = str | _Range | None  # a `with` expression, "if", a range, or an opaque block (None)
_RANGE = re.compile(r"^range\s+\$(\w+)\s*,\s*\$(\w+)\s*:=\s*(\S+)$")
_RANGE_KEY = re.compile(
    r"^(?P<indent>[ ]*)\{\{-?\s*\$(?P<k>\w+)\s*-?\}\}[ ]*:[ ]+(?P<value>.*?)[ ]*$"
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _ranged(
    scopes: Sequence[_Scope],
    stack: Sequence[_Entry],
    want: tuple[str | None, ...],
    key_var: str,
    value: str,
) -> str | None:
    """The value expression of a ranged key line with the loop's value variable spelled as
    the values key it stands for at the field (`$.Values.x.<field>`); None when the line is
    not the field's, or the loop is not one range over a values mapping."""
    loops = [s for s in scopes if isinstance(s, _Range)]
    if len(loops) != 1 or None in scopes or loops[0].key != key_var:
        return None
    keys = tuple(e.name for e in stack)
    field = want[-1] if want else None
    if want[:-1] != keys or field is None or not _IDENT.fullmatch(field):
        return None
    outer = [s for s in scopes[: scopes.index(loops[0])] if isinstance(s, str) and s != "if"]
    base = key_of(loops[0].expr, outer[-1] if outer else None)
    if base is None:
        return None
    spelled = "$.Values." + ".".join((*base, field))
    return re.sub(r"\$" + re.escape(loops[0].value) + r"\b", spelled, value)


def _opaque(scopes: Sequence[_Scope]) -> bool:
    return any(s is None or isinstance(s, _Range) for s in scopes)


def _scope(scopes: Sequence[_Scope]) -> str | None:
    withs = [s for s in scopes if isinstance(s, str) and s != "if"]
    return withs[-1] if withs else None


def _shape(path: FieldPath) -> tuple[str | None, ...]:
    return tuple(None if isinstance(e, ListKey | int) else str(e) for e in path)


def _keys_above(stack: Sequence[_Entry], indent: int) -> tuple[str | None, ...]:
    return tuple(e.name for e in stack if e.indent < indent)


def _ids(stack: Sequence[_Entry], indent: int) -> tuple[int, ...]:
    return tuple(e.item for e in stack if e.indent < indent and e.name is None)


def _after(want: tuple[str | None, ...], keys: tuple[str | None, ...]) -> Key | None:
    """The keys of `want` below `keys` (mapping keys only), when `keys` is a proper prefix."""
    if len(keys) >= len(want) or want[: len(keys)] != keys:
        return None
    rest = want[len(keys) :]
    if any(k is None for k in rest):
        return None
    return tuple(k for k in rest if k is not None)


def _pop(stack: list[_Entry], indent: int, *, item: bool) -> None:
    while stack and (
        stack[-1].indent > indent
        or (stack[-1].indent == indent and (not item or stack[-1].name is None))
    ):
        stack.pop()


def _item_matches(literal: Mapping[str, str], key: ListKey | int) -> bool:
    if isinstance(key, int):
        return False  # an index into a list the template writes: not followed
    return all(name not in literal or literal[name] == text(v) for name, v in key.fields)


def unquote(value: str) -> str:
    try:
        loaded = yaml.safe_load(value)
    except yaml.YAMLError:
        return value
    return text(loaded)


# --------------------------------------------------------------------------- expressions

_KEEPS = {"quote", "squote", "toString", "toYaml", "int", "int64", "float64", "trim", "nospace"}
_REF = re.compile(
    r"^(?:\$?\.Values((?:\.[A-Za-z_][A-Za-z0-9_-]*)*)|\.((?:[A-Za-z_][A-Za-z0-9_-]*)(?:\.[A-Za-z_][A-Za-z0-9_-]*)*)|\.)$"
)


@dataclass(frozen=True, slots=True)
class Ref:
    key: Key | None  # the values key; None: not a value (a literal default, .Chart.x, ...)
    default: Any = None  # `default X`: X when a literal
    has_default: bool = False


def parse_action(action: str, scope: str | None) -> Ref | None:
    """The values key an action renders unchanged, or None when it computes something else."""
    parts = [p.strip() for p in _split_pipes(action)]
    if not parts or not parts[0]:
        return None
    head = _words(parts[0])
    ref: Ref | None = None
    default: Any = None
    has_default = False
    # the command: `.Values.x`, `quote .Values.x`, `default "d" .Values.x`, `required "m" .Values.x`
    while head and head[0] in _KEEPS | {"default", "required"}:
        fn = head.pop(0)
        if fn in ("default", "required"):
            if len(head) != 2:
                return None
            if fn == "default":
                has_default, default = True, _literal(head[0])
            head = head[1:]
    if len(head) != 1:
        return None
    key = key_of(head[0], scope)
    if key is None:
        return None
    ref = Ref(key)
    for part in parts[1:]:
        words = _words(part)
        if not words:
            return None
        if words[0] in _KEEPS and len(words) == 1:
            continue
        if words[0] == "default" and len(words) == 2:
            has_default, default = True, _literal(words[1])
            continue
        if words[0] == "required" and len(words) == 2:
            continue
        return None
    return Ref(ref.key, default, has_default)


def key_of(word: str, scope: str | None) -> Key | None:
    """The values key `word` names (`$.Values.a`, `.Values.a`, or `.`/`.a` inside `with`)."""
    match = _REF.match(word)
    if not match:
        return None
    if word.startswith("$.Values") or (word.startswith(".Values") and scope is None):
        return tuple(k for k in (match.group(1) or "").split(".") if k)
    if scope is None or word.startswith(".Values"):
        return None  # `.` is rebound by `with`: `.Values` of it is no values key
    base = key_of(scope, None)
    if base is None:
        return None
    if word == ".":
        return base
    return (*base, *str(match.group(2)).split("."))


def _split_pipes(action: str) -> list[str]:
    out, current, quote = [], "", ""
    for ch in action:
        if quote:
            current += ch
            if ch == quote:
                quote = ""
        elif ch in "\"'`":
            quote = ch
            current += ch
        elif ch == "|":
            out.append(current)
            current = ""
        elif ch in "()":
            return []  # nested calls: not followed
        else:
            current += ch
    out.append(current)
    return out


def _words(text: str) -> list[str]:
    return re.findall(r'"(?:[^"\\]|\\.)*"|`[^`]*`|\S+', text.strip().lstrip("-").strip())


COMPUTED = object()  # a `default` that is no literal (`.Chart.AppVersion`, a call)


def _literal(word: str) -> Any:
    if word.startswith(('"', "`")):
        return word[1:-1]
    if word.startswith(("$", ".")) or not re.fullmatch(r"[\w.+-]+", word):
        return COMPUTED
    try:
        return yaml.safe_load(word)
    except yaml.YAMLError:
        return COMPUTED


def pieces(value: str) -> tuple[list[str], list[str]] | None:
    """The value text as (literal texts, actions), YAML quotes around it removed; None when
    the literal text holds YAML that changes the scalar (flow collections, comments)."""
    text = value
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    elif re.search(r"\s#", text):
        text = re.split(r"\s#", text, maxsplit=1)[0].rstrip()
    literals: list[str] = []
    actions: list[str] = []
    pos = 0
    for match in _ACTION.finditer(text):
        literals.append(text[pos : match.start()])
        actions.append(match.group(1))
        pos = match.end()
    literals.append(text[pos:])
    return literals, actions


def split(literals: Sequence[str], text: str) -> list[str] | None:
    """The parts of `text` the actions between `literals` rendered, when only one split fits."""
    pattern_lazy = "".join(
        re.escape(lit) + ("(.*?)" if i < len(literals) - 1 else "")
        for i, lit in enumerate(literals)
    )
    pattern_greedy = pattern_lazy.replace("(.*?)", "(.*)")
    lazy = re.fullmatch(pattern_lazy, text, re.DOTALL)
    greedy = re.fullmatch(pattern_greedy, text, re.DOTALL)
    if not lazy or not greedy or lazy.groups() != greedy.groups():
        return None
    return list(lazy.groups())


def text(value: Any) -> str:
    """A scalar as the rendered manifest spells it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


__all__ = [
    "COMPUTED",
    "Ref",
    "candidates",
    "key_of",
    "parse_action",
    "pieces",
    "split",
    "text",
    "unquote",
]
