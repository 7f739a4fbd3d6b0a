"""Untrusted YAML/JSON text in, plain Kubernetes documents out (pure: no files, no processes).

Used for everything read from git, kustomize output and snapshots. The input is bounded: a size
limit, an alias limit and an alias *expansion* limit (billion laughs), a nesting limit, duplicate
mapping keys rejected (kubectl rejects them too), and every document must be a mapping. Errors are
one line that names the file and the 1-based document index (or line), e.g.
``overlays/prod/x.yaml: document 2: mapping expected, got a list``.

Scalars follow what Kubernetes' YAML decoder produces rather than PyYAML's defaults: timestamps
stay strings and non-string mapping keys become strings (``1: a`` is ``{"1": "a"}``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kubectl_gitdrift.errors import GitDriftError, SourceError

MAX_BYTES = 64 * 1024 * 1024
"""Largest input accepted, in bytes (of the UTF-8 text)."""
MAX_ALIASES = 10_000
"""Most alias references (``*name``) one document may contain."""
MAX_EXPANDED_NODES = 1_000_000
"""Aliases may not expand a document beyond this many nodes (and 10x its written size)."""
MAX_DEPTH = 200
"""Deepest nesting of mappings/sequences accepted."""

_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"

_BaseLoader: Any = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader


class _Loader(_BaseLoader):  # type: ignore[misc]
    """Safe loader that keeps timestamps as strings and stringifies mapping keys."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)  # merge keys (<<) first, so explicit keys win
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, (list, dict, set)):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found a {type(key).__name__} as a mapping key",
                    key_node.start_mark,
                )
            mapping[_key_text(key)] = self.construct_object(value_node, deep=deep)
        return mapping


def _construct_timestamp_as_str(loader: Any, node: Node) -> str:
    return str(loader.construct_scalar(node))


_Loader.add_constructor(_TIMESTAMP_TAG, _construct_timestamp_as_str)


def _key_text(key: Any) -> str:
    """The string sigs.k8s.io/yaml makes of a non-string key."""
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return key if isinstance(key, str) else str(key)


_TYPE_NAMES: dict[type, str] = {
    list: "a list",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    bytes: "binary data",
}


def type_name(value: Any) -> str:
    """`a list`, `a string`, … for error messages."""
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "a mapping"
    return _TYPE_NAMES.get(type(value), f"a {type(value).__name__}")


def load_documents(
    text: str | bytes, name: str, *, error: type[GitDriftError] = SourceError
) -> list[dict[str, Any]]:
    """Every document in `text` (multi-document YAML or JSON), `*List` kinds flattened to items.

    Empty documents are skipped. `name` is what error messages call the input (a repo-relative path,
    a flag value). Raises `error` (SourceError unless told) with a one-line message.
    """
    return [doc for _index, doc, _item in _indexed(text, name, error)]


def require_object(
    doc: Mapping[str, Any],
    name: str,
    index: int,
    *,
    item: int | None = None,
    error: type[GitDriftError] = SourceError,
) -> None:
    """Raise unless `doc` has a non-empty string apiVersion, kind and metadata.name."""
    where = f"{name}: document {index}" + (f": items[{item}]" if item is not None else "")
    for field in ("apiVersion", "kind"):
        value = doc.get(field)
        if not isinstance(value, str) or not value:
            raise error(f"{where}: {field} missing" + _got(value))
    metadata = doc.get("metadata")
    if not isinstance(metadata, Mapping):
        raise error(f"{where}: {doc['kind']}: metadata missing" + _got(metadata))
    obj_name = metadata.get("name")
    if not isinstance(obj_name, str) or not obj_name:
        raise error(f"{where}: {doc['kind']}: metadata.name missing" + _got(obj_name))


def load_objects(
    text: str | bytes, name: str, *, error: type[GitDriftError] = SourceError
) -> list[dict[str, Any]]:
    """`load_documents`, with `require_object` applied to each result (index = source document)."""
    out: list[dict[str, Any]] = []
    for index, doc, item in _indexed(text, name, error):
        require_object(doc, name, index, item=item, error=error)
        out.append(doc)
    return out


def load_any(
    text: str | bytes, name: str, *, error: type[GitDriftError] = SourceError
) -> list[Any]:
    """Every document of `text` as parsed, under the same bounds, with no shape checks (None for
    empty documents): for kustomization patches, which may be lists of JSON-patch operations."""
    return _parse(text, name, error)


# --------------------------------------------------------------------------- internals


def _got(value: Any) -> str:
    return "" if value is None else f" (got {type_name(value)})"


def _indexed(
    text: str | bytes, name: str, error: type[GitDriftError]
) -> list[tuple[int, dict[str, Any], int | None]]:
    """(document index, object, List item index or None) for every object."""
    docs = _parse(text, name, error)
    out: list[tuple[int, dict[str, Any], int | None]] = []
    for index, doc in enumerate(docs, start=1):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise error(f"{name}: document {index}: mapping expected, got {type_name(doc)}")
        if _is_list(doc):
            items = _flatten(doc, name, index, error)
            out.extend((index, obj, i) for i, obj in enumerate(items))
        else:
            out.append((index, doc, None))
    return out


def _parse(text: str | bytes, name: str, error: type[GitDriftError]) -> list[Any]:
    if isinstance(text, bytes):
        if len(text) > MAX_BYTES:
            raise error(f"{name}: {len(text)} bytes is more than the {MAX_BYTES} bytes allowed")
        text = _decode(text, name, error)
    text = text.removeprefix("\ufeff")
    if len(text) > MAX_BYTES and len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise error(f"{name}: more than the {MAX_BYTES} bytes allowed")
    docs = _load_json(text, name, error)
    if docs is None:
        docs = _load_yaml(text, name, error)
    return docs


def _is_list(doc: Mapping[str, Any]) -> bool:
    kind = doc.get("kind")
    if not isinstance(kind, str):
        return False
    return kind == "List" or (kind.endswith("List") and isinstance(doc.get("items"), list))


def _flatten(
    doc: dict[str, Any], name: str, index: int, error: type[GitDriftError]
) -> list[dict[str, Any]]:
    if not _is_list(doc):
        return [doc]
    items = doc.get("items")
    if items is None:
        return []
    if not isinstance(items, list):
        raise error(f"{name}: document {index}: items: list expected, got {type_name(items)}")
    out: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise error(
                f"{name}: document {index}: items[{i}]: mapping expected, got {type_name(item)}"
            )
        out.append(item)
    return out


def _decode(data: bytes, name: str, error: type[GitDriftError]) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"{name}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


def _load_json(text: str, name: str, error: type[GitDriftError]) -> list[Any] | None:
    """Documents of a JSON text (one value or a stream of them), or None when the text is not
    JSON (then it is read as YAML, which reports the error with a line number)."""
    if not text.lstrip(" \t\r\n").startswith(("{", "[")):
        return None
    decoder = json.JSONDecoder(object_pairs_hook=_json_pairs)
    docs: list[Any] = []
    pos = 0
    end = len(text)
    while True:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos >= end:
            break
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except _DuplicateKeyError as exc:
            raise error(f"{name}: document {len(docs) + 1}: duplicate key {exc.key!r}") from None
        except RecursionError:
            raise error(
                f"{name}: document {len(docs) + 1}: nested deeper than {MAX_DEPTH} levels"
            ) from None
        except ValueError:
            return None
        if _depth_exceeds(doc):
            raise error(f"{name}: document {len(docs) + 1}: nested deeper than {MAX_DEPTH} levels")
        docs.append(doc)
    return docs


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = dict(pairs)
    if len(out) == len(pairs):  # no duplicate: the common case, in C
        return out
    out = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(key)
        out[key] = value
    return out


def _depth_exceeds(doc: Any) -> bool:
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _load_yaml(text: str, name: str, error: type[GitDriftError]) -> list[Any]:
    loader = _Loader(text)
    docs: list[Any] = []
    index = 0
    try:
        while loader.check_node():
            index += 1
            node = loader.get_node()
            if node is None:
                docs.append(None)
                continue
            problem = _check_node(node)
            if problem:
                raise error(f"{name}: document {index}: {problem}")
            docs.append(loader.construct_document(node))
    except yaml.MarkedYAMLError as exc:
        raise error(f"{name}: {_describe_yaml_error(exc)}") from None
    except yaml.YAMLError as exc:  # reader errors: NUL bytes, unprintable characters
        detail = re.sub(r'in "<[^>]*>", position (\d+)', r"at offset \1", str(exc))
        raise error(f"{name}: could not parse YAML ({_one_line(detail)})") from None
    except RecursionError:
        raise error(f"{name}: document {index}: nested deeper than {MAX_DEPTH} levels") from None
    finally:
        loader.dispose()
    return docs


def _describe_yaml_error(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "invalid YAML"
    if exc.context and exc.problem:
        problem = f"{exc.context}: {exc.problem}"
    where = f"line {mark.line + 1}: " if mark is not None else ""
    return f"{where}could not parse YAML ({_one_line(problem)})"


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _check_node(root: Node) -> str | None:
    """Why a composed document is refused (aliases, depth, duplicate keys), or None.

    Aliases compose to shared node objects, so the walk visits each distinct node once and counts
    how many nodes the document would have once expanded.
    """
    sizes: dict[int, int] = {}  # id(node) -> expanded node count (also the "done" set)
    heights: dict[int, int] = {}
    on_path: set[int] = set()
    aliases = 0
    unique = 0
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, exiting = stack.pop()
        ident = id(node)
        if exiting:
            on_path.discard(ident)
            children = _children(node)
            sizes[ident] = 1 + sum(sizes[id(c)] for c in children)
            heights[ident] = 1 + max((heights[id(c)] for c in children), default=0)
            if heights[ident] > MAX_DEPTH:
                return f"nested deeper than {MAX_DEPTH} levels"
            if sizes[ident] > MAX_EXPANDED_NODES and sizes[ident] > 10 * unique:
                return (
                    f"aliases expand to more than {MAX_EXPANDED_NODES} nodes"
                    " (is this an alias bomb?)"
                )
            continue
        if ident in sizes:
            aliases += 1
            if aliases > MAX_ALIASES:
                return f"more than {MAX_ALIASES} aliases"
            continue
        if ident in on_path:
            return f"line {node.start_mark.line + 1}: recursive alias"
        unique += 1
        if isinstance(node, MappingNode):
            duplicate = _duplicate_key(node)
            if duplicate:
                return duplicate
        on_path.add(ident)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                return f"line {child.start_mark.line + 1}: recursive alias"
            if id(child) in sizes:
                aliases += 1
                if aliases > MAX_ALIASES:
                    return f"more than {MAX_ALIASES} aliases"
            else:
                stack.append((child, False))
        if len(on_path) > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels"
    return None


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _duplicate_key(node: MappingNode) -> str | None:
    seen: set[tuple[str, str]] = set()
    for key, _value in node.value:
        if not isinstance(key, ScalarNode) or key.tag == _MERGE_TAG:
            continue
        ident = (key.tag, key.value)
        if ident in seen:
            return f"line {key.start_mark.line + 1}: duplicate key {key.value!r}"
        seen.add(ident)
    return None


__all__ = [
    "MAX_ALIASES",
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_EXPANDED_NODES",
    "load_any",
    "load_documents",
    "load_objects",
    "require_object",
    "type_name",
]
