"""Untrusted YAML/JSON text in, plain Kubernetes documents out (pure: no files, no processes).

Used for everything read from git, kustomize output and snapshots. The input is bounded: a size
limit, an alias limit and an alias *expansion* limit (billion laughs), a nesting limit, duplicate
mapping keys rejected (kubectl rejects them too), and every document must be a mapping. Errors are
one line that names the file and the 1-based document index (or line), e.g.
``overlays/prod/x.yaml: document 2: mapping expected, got a list``.

Scalars follow what Kubernetes' YAML decoder produces rather than PyYAML's defaults: timestamps
stay strings and non-string mapping keys become strings (``1: a`` is ``{"1": "a"}``).

YAML is read straight from libyaml's event stream into Python objects, so a 40 MiB snapshot never
becomes a PyYAML node tree (a Mark pair per node: ~30x the text). That reader handles plain data
under the bounds; whenever it meets anything else (an error, a tag outside the core schema, a
complex key, two keys that read the same, an anchor reused, aliases near a bound) it gives up and
the text is composed, checked and constructed by PyYAML, which decides: results and messages are
those of the composing load either way.
"""

from __future__ import annotations

import functools
import gc
import itertools
import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
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
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}"
    for name in ("binary", "bool", "float", "int", "null", "str", "timestamp")
)
"""The scalar tags the streamed load constructs (with the composing load's constructors)."""
_TEXT_TAGS = frozenset(("tag:yaml.org,2002:null", _STR_TAG, _TIMESTAMP_TAG))
"""Scalar tags whose construction cannot fail."""
_NUMBER_TAGS = frozenset(f"tag:yaml.org,2002:{name}" for name in ("bool", "float", "int"))
_SCALARS: Any = yaml.constructor.SafeConstructor()  # its scalar constructors keep no state

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

_RESOLVED_FIRST = frozenset(c for c in _Loader.yaml_implicit_resolvers if c)
"""First characters of plain scalars that may resolve to something other than a string (the
loader registers no wildcard resolver, so any other plain scalar is a string)."""


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
    text: str | bytes,
    name: str,
    *,
    error: type[GitDriftError] = SourceError,
    checks: list[Callable[[], None]] | None = None,
) -> list[dict[str, Any]]:
    """Every document in `text` (multi-document YAML or JSON), `*List` kinds flattened to items.

    Empty documents are skipped. `name` is what error messages call the input (a repo-relative path,
    a flag value). Raises `error` (SourceError unless told) with a one-line message.

    `checks`: big JSON bytes read fast (`_fast_bytes`) are proven the same as the checking parse
    later, by the check appended here, which raises Unproven unless they are: the caller runs it
    before it shows anything of the result (with --all, beside the compare processes), and on
    Unproven reads the text again without `checks`, which then raises or returns what the
    checking parse does. Nothing is appended for a text given as a string (proven at once, if
    read fast), nor when the bytes were read the checking way.
    """
    return [doc for _index, doc, _item in _indexed(text, name, error, checks)]


def require_object(
    doc: Mapping[str, Any],
    name: str,
    index: int,
    *,
    item: int | None = None,
    error: type[GitDriftError] = SourceError,
) -> None:
    """Raise unless `doc` has a non-empty string apiVersion, kind and metadata.name (or
    metadata.generateName: hooks such as `generateName: db-migrate-` are valid manifests; Argo CD
    never compares them)."""
    where = f"{name}: document {index}" + (f": items[{item}]" if item is not None else "")
    for field in ("apiVersion", "kind"):
        value = doc.get(field)
        if not isinstance(value, str) or not value:
            raise error(f"{where}: {field} missing" + _got(value))
    metadata = doc.get("metadata")
    if not isinstance(metadata, Mapping):
        raise error(f"{where}: {doc['kind']}: metadata missing" + _got(metadata))
    obj_name = metadata.get("name")
    generate_name = metadata.get("generateName")
    if obj_name is None and isinstance(generate_name, str) and generate_name:
        return
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


def compose_documents(
    text: str | bytes, name: str, *, error: type[GitDriftError] = SourceError
) -> list[Node | None]:
    """The PyYAML node trees of `text`'s documents (for their line marks), or `error` exactly
    when `load_any` refuses `text`.

    The text is composed once and the trees checked (JSON text is also read as JSON, as
    `load_any` reads it); it is loaded as well only when the trees leave a doubt (an error to
    word as `load_any` does, merge keys, tags beyond the core schema).
    """
    with _gc_paused:
        text = _text(text, name, error)
        is_json = _load_json(text, name, error) is not None
        loader = _Loader(text)
        nodes: list[Node | None] = []
        failure: GitDriftError | None = None
        try:
            while loader.check_node():
                nodes.append(loader.get_node())
        except yaml.YAMLError as exc:
            failure = _yaml_error(exc, name, error)
        finally:
            loader.dispose()
        if failure is None and (is_json or all(map(_plain_document, nodes))):
            return nodes
        if not is_json:
            _load_yaml(text, name, error)  # raises what load_any raises
        if failure is not None:
            raise failure
        return nodes


# --------------------------------------------------------------------------- internals


def _got(value: Any) -> str:
    return "" if value is None else f" (got {type_name(value)})"


def _indexed(
    text: str | bytes,
    name: str,
    error: type[GitDriftError],
    checks: list[Callable[[], None]] | None = None,
) -> list[tuple[int, dict[str, Any], int | None]]:
    """(document index, object, List item index or None) for every object."""
    docs = _parse(text, name, error, checks)
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


def _parse(
    text: str | bytes,
    name: str,
    error: type[GitDriftError],
    checks: list[Callable[[], None]] | None = None,
) -> list[Any]:
    with _gc_paused:
        try_fast = True
        if checks is not None and isinstance(text, bytes):
            read = _fast_bytes(text, name, checks)
            if read is not None:
                return read
            try_fast = False  # msgspec refused them, or they are no big JSON: not again
        text = _text(text, name, error)
        docs = _load_json(text, name, error, try_fast=try_fast)
        if docs is None:
            docs = _load_yaml(text, name, error)
        return docs


def _text(text: str | bytes, name: str, error: type[GitDriftError]) -> str:
    """`text` as a string without its byte order mark, within MAX_BYTES."""
    if isinstance(text, bytes):
        if len(text) > MAX_BYTES:
            raise error(f"{name}: {len(text)} bytes is more than the {MAX_BYTES} bytes allowed")
        text = _decode(text, name, error)
    text = text.removeprefix("\ufeff")
    if len(text) > MAX_BYTES and len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise error(f"{name}: more than the {MAX_BYTES} bytes allowed")
    return text


class _GCPause:
    """Pauses the cyclic garbage collector while parses run: they allocate millions of
    containers, none of them in a cycle, and each collection would walk them all again (a 37 MiB
    JSON snapshot loads in half the time). Nests, and parses in several threads share one pause;
    the collector's state from before the first is restored after the last."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._resume = False

    def __enter__(self) -> None:
        with self._lock:
            if self._running == 0:
                self._resume = gc.isenabled()
                gc.disable()
            self._running += 1

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0 and self._resume:
                gc.enable()


_gc_paused = _GCPause()


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


def _load_json(
    text: str, name: str, error: type[GitDriftError], *, try_fast: bool = True
) -> list[Any] | None:
    """Documents of a JSON text (one value or a stream of them), or None when the text is not
    JSON (then it is read as YAML, which reports the error with a line number). `try_fast`: a
    big text may be read by msgspec first (`_fast_json`)."""
    if not text.lstrip(" \t\r\n").startswith(("{", "[")):
        return None
    fast = _fast_json(text) if try_fast and len(text) >= FAST_JSON_CHARS else None
    if fast is not None:
        read, deep = fast
        for index, doc in enumerate(read if deep else (), 1):
            if _depth_exceeds(doc):
                raise error(f"{name}: document {index}: nested deeper than {MAX_DEPTH} levels")
        return read
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


FAST_JSON_CHARS = 1 << 20
"""JSON texts this long or longer are read by msgspec first (`_fast_json`); below, importing
it costs more than it saves."""
_FAST_JSON_CHUNK = 256
"""Documents `_fast_json` re-encodes at a time (bounds the memory its checks take)."""


class Unproven(Exception):
    """A JSON text read fast could not be proven the same as the checking parse: read it again
    without deferred checks (load_documents)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name}: the fast JSON reading needs the checking parse")
        self.name = name


@dataclass(frozen=True, slots=True)
class _Proof:
    deep: bool  # a document may be nested deeper than MAX_DEPTH: walk each (_depth_exceeds)


def _fast_json(text: str) -> tuple[list[Any], bool] | None:
    """msgspec's reading of a JSON text (`_fast_read`) and whether a document may be nested
    deeper than MAX_DEPTH, when `_proof` shows it is what the checking parse returns; else
    None: then that parse decides, and raises what it raises."""
    if not _countable(text):
        return None
    docs = _fast_read(text)
    proof = None if docs is None else _proof(text, docs)
    return None if docs is None or proof is None else (docs, proof.deep)


def _fast_read(text: str | bytes) -> list[Any] | None:
    """The documents of a JSON text (or its UTF-8 bytes) as msgspec reads them, or None when
    it refuses them."""
    try:
        docs: list[Any] = _msgspec_decoder().decode_lines(text)
    except (ValueError, RecursionError):  # msgspec.DecodeError is a ValueError
        return None
    return docs


def _fast_bytes(data: bytes, name: str, checks: list[Callable[[], None]]) -> list[Any] | None:
    """`_load_json`'s deferred fast reading, from the bytes: the text is decoded (and checked
    to be UTF-8) by the check, not here. None when the checking way must read them."""
    if not FAST_JSON_CHARS <= len(data) <= MAX_BYTES:
        return None
    data = data.removeprefix(_BOM)
    if not _JSON_START.match(data):
        return None
    read = _fast_read(data)
    if read is not None:
        checks.append(functools.partial(_check_later, data, read, name))
    return read


_BOM = "\ufeff".encode()
_JSON_START = re.compile(rb"[ \t\r\n]*[{\[]")


def _countable(text: str) -> bool:
    """Whether `_proof` can count the text's colons: none is written `\\u003a`. (`\\u003c`,
    `\\u003e`, which Go's JSON writes for `<` and `>`, are no colons.)"""
    return "\\u003" not in text or _COLON_ESCAPE.search(text) is None


_COLON_ESCAPE = re.compile(r"\\u003[aA]")


def _proof(text: str, docs: list[Any]) -> _Proof | None:
    """Whether `docs` (`_fast_read`) are certainly what the checking parse (`_load_json`'s json
    loop) returns for `text`, or None: then that parse decides, and raises what it raises.

    - The stream: msgspec's `decode_lines` skips JSON whitespace and reads one value after the
      other, as the json loop does, and what it reads json reads alike (the same values, each
      ending at the same place). Some texts json reads it refuses: NaN, Infinity, numbers json
      makes infinite, lone surrogates, integers past Python's digit limit, values run together
      (`00`). tests/test_yamlio_fastjson.py compares the two.
    - Keys written twice, which msgspec lets the last win silently: outside strings a JSON text
      has one colon per key-value pair written; the result re-encoded (compact) has one per
      pair kept plus the colons of the strings kept. A string's colons are those of its text
      unless written `\\u003a` (`_countable` refuses those), so the counts are equal exactly
      when no pair was dropped.
    - Depth: the documents re-encoded in a list with one space of indent per level put each
      element of a container d levels below the list on a line indented d + 1 spaces (strings
      hold no raw newline): a container MAX_DEPTH levels below a document's root is on a line
      indented MAX_DEPTH + 1 spaces. Without such a line no document is too deep; with one,
      the caller walks each document with `_depth_exceeds`.
    """
    import msgspec  # _fast_read has imported it

    too_deep = b"\n" + b" " * (MAX_DEPTH + 1)
    colons = 0
    deep = False
    try:
        for start in range(0, len(docs), _FAST_JSON_CHUNK):
            chunk = msgspec.json.encode(docs[start : start + _FAST_JSON_CHUNK])
            colons += chunk.count(b":")
            deep = deep or too_deep in msgspec.json.format(chunk, indent=1)
    except (ValueError, RecursionError):
        return None
    if colons != text.count(":"):
        return None
    return _Proof(deep)


def _check_later(data: bytes, docs: list[Any], name: str) -> None:
    """The check `_fast_bytes` deferred: Unproven unless the checking parse would have returned
    `docs` as they are, without an error."""
    try:
        text = data.decode("utf-8")  # as _text decodes it; msgspec read the same text
    except UnicodeDecodeError:
        raise Unproven(name) from None
    proof = _proof(text, docs) if _countable(text) else None
    if proof is None or (proof.deep and any(map(_depth_exceeds, docs))):
        raise Unproven(name)


@functools.cache
def _msgspec_decoder() -> Any:
    import msgspec

    return msgspec.json.Decoder()


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
    """Whether a JSON document has a mapping or list below MAX_DEPTH levels of them: walked
    level by level, keeping containers only (json makes plain dicts and lists)."""
    level = [doc] if type(doc) is dict or type(doc) is list else []
    for _depth in range(MAX_DEPTH):
        level = [
            child
            for node in level
            for child in (node.values() if type(node) is dict else node)
            if type(child) is dict or type(child) is list
        ]
        if not level:
            return False
    return True


def _load_yaml(text: str, name: str, error: type[GitDriftError]) -> list[Any]:
    try:
        return _stream_yaml(text)
    except _Unsure:
        return _load_composed(text, name, error)


def _load_composed(text: str, name: str, error: type[GitDriftError]) -> list[Any]:
    """The documents of `text` through PyYAML's node trees: each document composed, checked
    (`_check_node`) and constructed in turn."""
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
            try:
                docs.append(loader.construct_document(node))
            except (LookupError, ValueError, TypeError):  # `!!int x`, `!!bool maybe`, ...
                raise error(f"{name}: document {index}: {_bad_scalar(loader, node)}") from None
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, name, error) from None
    except RecursionError:
        raise error(f"{name}: document {index}: nested deeper than {MAX_DEPTH} levels") from None
    finally:
        loader.dispose()
    return docs


def _bad_scalar(loader: Any, root: Node) -> str:
    """Which tagged scalar of a document its tag's constructor refuses, for the error line."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, ScalarNode):
            constructor = loader.yaml_constructors.get(node.tag)
            if node.tag != _STR_TAG and constructor is not None:
                try:
                    constructor(loader, node)
                except (LookupError, ValueError, TypeError):
                    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
                    line = node.start_mark.line + 1
                    return f"line {line}: {node.value!r} is not a valid {tag} value"
        else:
            stack.extend(reversed(_children(node)))
    return "a tagged value cannot be read"


# ---- the streamed load


class _Unsure(Exception):
    """The streamed load met something it leaves to the composing load."""


_MISSING: Any = object()
_NO_KEY: Any = object()  # a mapping's next node is a key
_MERGE: Any = object()  # a plain `<<` key


class _Frame:
    """Bookkeeping for an open mapping or sequence that is anchored or merges mappings."""

    __slots__ = ("anchor", "depth", "expanded", "loose", "merges", "nodes", "peak")

    def __init__(
        self,
        anchor: str | None = None,
        nodes: int = 0,
        expanded: int = 0,
        peak: int = 0,
        depth: int = 0,
    ) -> None:
        self.anchor = anchor
        self.nodes = nodes  # nodes written before this one
        self.expanded = expanded  # alias expansion before this one
        self.peak = peak  # deepest path seen before this one
        self.depth = depth  # this one's path length
        self.merges: list[dict[str, Any]] = []  # mappings merged in (`<<`), in order
        self.loose = False  # a key that is not a string as written (`1`, `~`, `true`)

    def merge(self, value: Any) -> None:
        """`<<: value`, for a mapping or a list of one (PyYAML releases order the keys of a
        longer list differently)."""
        if type(value) is list and len(value) == 1:
            value = value[0]
        if type(value) is not dict:
            raise _Unsure
        self.merges.append(value)

    def merged(self, explicit: dict[str, Any], tangled: set[int]) -> dict[str, Any]:
        """The mapping with its merges: their keys first, in order, explicit keys win. Only for
        merges whose keys were all written as strings, distinct across them: then every PyYAML
        release reads them alike (6.0.4 skips a merged key whose text is the same object as one
        before it, so the outcome of a repeat depends on string caching)."""
        out: dict[str, Any] = {}
        for source in self.merges:
            if id(source) in tangled:
                raise _Unsure
            out.update(source)
        if len(out) != sum(map(len, self.merges)):
            raise _Unsure
        out.update(explicit)
        return out


def _stream_yaml(text: str) -> list[Any]:
    """The documents of `text` built straight from the parser's events, or _Unsure when the
    composing load may decide otherwise (`_stream_document` says when)."""
    loader = _Loader(text)
    try:
        cache: dict[str, Any] = {}
        docs: list[Any] = []
        loader.get_event()  # StreamStartEvent
        while type(loader.get_event()) is DocumentStartEvent:
            docs.append(_stream_document(loader, cache))
            loader.get_event()  # DocumentEndEvent
        return docs
    except yaml.YAMLError:
        raise _Unsure from None
    finally:
        loader.dispose()


def _stream_document(loader: Any, cache: dict[str, Any]) -> Any:
    """One document, from the event after DocumentStartEvent to its root's last event.

    Gives up (_Unsure) on anything `_check_node` might refuse, conservatively: a container
    MAX_DEPTH deep (a scalar in it would be too deep), an alias reaching that deep, more than
    MAX_ALIASES aliases, aliases expanding to more than 90% of MAX_EXPANDED_NODES (below that no
    node can expand 10x past its written size and over the limit), a key already in its mapping
    (written twice, or two keys that read the same, like `1` and `"1"`), an undefined, reused or
    recursive anchor. And on anything the constructor might refuse or build otherwise: tags
    outside the core schema, mappings or sequences as keys, `<<` anywhere but as a key, merges
    but of mappings with string keys distinct across them (`_Frame.merged`). Aliases share one
    object, as constructed aliases do.
    """
    max_depth, max_aliases, max_expanded = MAX_DEPTH, MAX_ALIASES, MAX_EXPANDED_NODES
    get_event = loader.get_event
    anchors: dict[str, tuple[Any, int, int] | None] = {}  # name -> (value, size, height)
    stack: list[tuple[Any, Any, _Frame | None]] = []  # the enclosing (top, key, frame)
    top: Any = None  # the open container; None for the document itself
    key: Any = _NO_KEY  # in a mapping: the key awaiting its value
    frame: _Frame | None = None
    tangled: set[int] = set()  # ids of mappings with merges or keys not written as strings
    nodes = expanded = aliases = peak = 0
    while True:
        event = get_event()
        kind = type(event)
        if kind is ScalarEvent:
            nodes += 1
            value = event.value
            tag = event.tag
            if tag is not None and tag != "!":
                obj = _scalar(loader, tag, value)
            elif not event.implicit[0]:
                obj = value
            elif value and value[0] not in _RESOLVED_FIRST:
                obj = cache.setdefault(value, value)  # one object per text: keys repeat a lot
            else:
                obj = cache.get(value, _MISSING)
                if obj is _MISSING:
                    obj = _plain(loader, cache, value)
                if obj is _MERGE and (key is not _NO_KEY or type(top) is not dict):
                    raise _Unsure
            if event.anchor is not None:
                if event.anchor in anchors or obj is _MERGE:
                    raise _Unsure
                anchors[event.anchor] = (obj, 1, 1)
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            nodes += 1
            tag = event.tag
            if (key is _NO_KEY and type(top) is dict) or not (
                tag is None
                or tag == "!"
                or tag == (_MAP_TAG if kind is MappingStartEvent else _SEQ_TAG)
            ):
                raise _Unsure
            stack.append((top, key, frame))
            depth = len(stack)
            if depth >= max_depth:
                raise _Unsure
            if depth >= peak:
                peak = depth + 1  # with a scalar in it
            top = {} if kind is MappingStartEvent else []
            key = _NO_KEY
            frame = None
            if event.anchor is not None:
                if event.anchor in anchors:
                    raise _Unsure
                anchors[event.anchor] = None
                frame = _Frame(event.anchor, nodes - 1, expanded, peak, depth)
                peak = depth + 1
            continue
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            obj = top
            if frame is not None:
                if frame.merges:
                    obj = frame.merged(top, tangled)
                if frame.merges or frame.loose:
                    tangled.add(id(obj))  # not a mapping the streamed load merges
                if frame.anchor is not None:
                    size = nodes - frame.nodes + expanded - frame.expanded
                    anchors[frame.anchor] = (obj, size, peak - frame.depth + 1)
                    peak = max(peak, frame.peak)
            top, key, frame = stack.pop()
        elif kind is AliasEvent:
            aliases += 1
            target = anchors.get(event.anchor)
            if target is None or aliases > max_aliases or (key is _NO_KEY and type(top) is dict):
                raise _Unsure
            obj, size, height = target
            expanded += size
            reach = len(stack) + height
            if 10 * expanded > 9 * max_expanded or reach > max_depth:
                raise _Unsure
            peak = max(peak, reach)
        else:
            raise _Unsure
        # obj is a complete node: place it
        if type(top) is dict:
            if key is _NO_KEY:
                if type(obj) is not str:
                    if frame is None:
                        frame = _Frame()
                    if obj is _MERGE:
                        key = _MERGE
                        continue
                    frame.loose = True
                    obj = _key_text(obj)
                if obj in top:
                    raise _Unsure
                key = obj
            elif key is _MERGE:
                frame.merge(obj)  # type: ignore[union-attr]
                key = _NO_KEY
            else:
                top[key] = obj
                key = _NO_KEY
        elif type(top) is list:
            top.append(obj)
        else:
            return obj


def _plain(loader: Any, cache: dict[str, Any], value: str) -> Any:
    """A plain scalar that may not be a string, resolved and constructed (and remembered, but
    floats: a NaN is not equal to itself, so each stays its own object)."""
    tag = loader.resolve(ScalarNode, value, (True, False))
    obj = _MERGE if tag == _MERGE_TAG else _scalar(loader, tag, value)
    if type(obj) is not float:
        cache[value] = obj
    return obj


def _scalar(loader: Any, tag: str, value: str) -> Any:
    """A scalar of the core schema, as the loader constructs it."""
    if tag == _STR_TAG:
        return value
    if tag not in _SCALAR_TAGS:
        raise _Unsure
    try:
        return loader.yaml_constructors[tag](loader, ScalarNode(tag, value))
    except (LookupError, ValueError, yaml.YAMLError):  # `!!int ""`, …: left to the composing load
        raise _Unsure from None


# ---- errors


def _yaml_error(exc: yaml.YAMLError, name: str, error: type[GitDriftError]) -> GitDriftError:
    if isinstance(exc, yaml.MarkedYAMLError):
        return error(f"{name}: {_describe_yaml_error(exc)}")
    # reader errors: NUL bytes, unprintable characters
    detail = re.sub(r'in "<[^>]*>", position (\d+)', r"at offset \1", str(exc))
    return error(f"{name}: could not parse YAML ({_one_line(detail)})")


def _describe_yaml_error(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "invalid YAML"
    if exc.context and exc.problem:
        problem = f"{exc.context}: {exc.problem}"
    where = f"line {mark.line + 1}: " if mark is not None else ""
    return f"{where}could not parse YAML ({_one_line(problem)})"


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _plain_document(root: Node | None) -> bool:
    """Whether loading the document of `root` certainly succeeds without changing the tree:
    `_check_node` finds nothing and `_constructs` holds."""
    return root is None or (_check_node(root) is None and _constructs(root))


def _constructs(root: Node) -> bool:
    """Whether constructing `root` (checked) certainly succeeds and leaves the nodes as they
    are (merge keys rewrite them): core-schema tags only, scalar keys, no merge keys, and every
    boolean and number constructs. False when unsure."""
    level = [root]
    while level:
        below: list[Node] = []
        for node in level:
            tag = node.tag
            if type(node) is ScalarNode:
                if tag in _TEXT_TAGS:
                    continue
                if tag not in _NUMBER_TAGS:
                    return False
                try:
                    _SCALARS.yaml_constructors[tag](_SCALARS, node)
                except (LookupError, ValueError, yaml.YAMLError):  # `!!int x`, 5,000 digits
                    return False
            elif type(node) is MappingNode:
                if tag != _MAP_TAG or any(type(key) is not ScalarNode for key, _ in node.value):
                    return False
                below.extend(itertools.chain.from_iterable(node.value))
            elif type(node) is SequenceNode and tag == _SEQ_TAG:
                below.extend(node.value)
            else:
                return False
        level = below
    return True


def _check_node(root: Node) -> str | None:
    """Why a composed document is refused (aliases, depth, duplicate keys), or None."""
    if _plain_tree(root):
        return None
    return _first_problem(root)


def _plain_tree(root: Node) -> bool:
    """Whether `root` is certainly fine: a tree (no node reached twice, so no alias) at most
    MAX_DEPTH levels deep whose mappings have scalar keys of distinct values. Walked level by
    level, mostly in C; False when unsure (then `_first_problem` decides)."""
    seen = {id(root)}
    level = [root]
    for _depth in range(MAX_DEPTH):
        below: list[Node] = []
        for node in level:
            if type(node) is MappingNode:
                pairs = node.value
                try:
                    if len({key.value for key, _value in pairs}) != len(pairs):
                        return False
                except TypeError:  # a mapping or sequence as a key
                    return False
                below.extend(itertools.chain.from_iterable(pairs))
            elif type(node) is SequenceNode:
                below.extend(node.value)
        if not below:
            return True
        size = len(seen)
        seen.update(map(id, below))
        if len(seen) != size + len(below):
            return False  # a node reached twice
        level = below
    return False


def _first_problem(root: Node) -> str | None:
    """`_check_node`'s answer for any document, in the order a depth-first walk finds them.

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
