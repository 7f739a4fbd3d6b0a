"""Untrusted YAML/JSON text in, plain Kubernetes documents out (pure: no files, no processes).

Used for everything read from git, kustomize output and snapshots. The input is bounded: a size
limit, an alias limit and an alias *expansion* limit (billion laughs), a nesting limit, duplicate
mapping keys rejected (kubectl rejects them too; a directory source's files keep the last value
instead, as Argo CD's decoder does: `load_objects(duplicates=...)`), and every document must be
a mapping. Errors are
one line that names the file and the 1-based document index (or line), e.g.
``overlays/prod/x.yaml: document 2: mapping expected, got a list``.

This module is the public API: it decodes and bounds the text, reads JSON with json (and big JSON
through `fastjson`), YAML through `yamlload`, and flattens `*List` kinds. The bounds are in
`limits`.
"""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kubectl_gitdrift.errors import GitDriftError, SourceError
from kubectl_gitdrift.yamlio import fastjson, limits, yamlload

# Re-exported for callers (`yamlio.MAX_BYTES`, `yamlio.Unproven`). The code looks the bounds up
# where they are defined (`limits.MAX_BYTES`, `fastjson.FAST_JSON_CHARS`) when it runs: a test
# lowers them there, not here.
from kubectl_gitdrift.yamlio.fastjson import FAST_JSON_CHARS, Unproven
from kubectl_gitdrift.yamlio.limits import MAX_ALIASES, MAX_BYTES, MAX_DEPTH, MAX_EXPANDED_NODES

if TYPE_CHECKING:
    from yaml.nodes import Node

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

    `checks`: big JSON bytes read fast (`fastjson.fast_bytes`) are proven the same as the
    checking parse later, by the check appended here, which raises Unproven unless they are: the
    caller runs it before it shows anything of the result (with --all, beside the compare
    processes), and on Unproven reads the text again without `checks`, which then raises or
    returns what the checking parse does. Nothing is appended for a text given as a string
    (proven at once, if read fast), nor when the bytes were read the checking way.
    """
    return [doc for _index, doc, _item in _indexed(text, name, error, checks)]


def require_object(
    doc: Mapping[str, Any],
    name: str,
    index: int,
    *,
    item: int | None = None,
    error: type[GitDriftError] = SourceError,
    unnamed: bool = False,
) -> None:
    """Raise unless `doc` has a non-empty string apiVersion, kind and metadata.name (or
    metadata.generateName: hooks such as `generateName: db-migrate-` are valid manifests; Argo CD
    never compares them).

    `unnamed`: an object without metadata (or without metadata.name) passes, as Argo CD's
    directory reader keeps it (Kubernetes' YAML-or-JSON decoder into an Unstructured asks only
    for `kind`): a `kustomization.yaml` read as a plain file. metadata that is there but no
    mapping is still an error (the repo-server fails to set its tracking label on it)."""
    where = f"{name}: document {index}" + (f": items[{item}]" if item is not None else "")
    for field in ("apiVersion", "kind"):
        value = doc.get(field)
        if not isinstance(value, str) or not value:
            raise error(f"{where}: {field} missing" + _got(value))
    metadata = doc.get("metadata")
    if unnamed and metadata is None:
        return
    if not isinstance(metadata, Mapping):
        raise error(f"{where}: {doc['kind']}: metadata missing" + _got(metadata))
    obj_name = metadata.get("name")
    generate_name = metadata.get("generateName")
    if obj_name is None and isinstance(generate_name, str) and generate_name:
        return
    if unnamed and obj_name is None:
        return
    if not isinstance(obj_name, str) or not obj_name:
        raise error(f"{where}: {doc['kind']}: metadata.name missing" + _got(obj_name))


def load_objects(
    text: str | bytes,
    name: str,
    *,
    error: type[GitDriftError] = SourceError,
    unnamed: bool = False,
    duplicates: list[str] | None = None,
) -> list[dict[str, Any]]:
    """`load_documents`, with `require_object` applied to each result (index = source document).

    `duplicates`: a mapping key given twice keeps its last value, as the decoder Argo CD reads a
    directory source's files with (sigs.k8s.io/yaml over go-yaml v2, encoding/json: neither is
    strict), and each one is appended here (`document 1: line 7: duplicate key 'image'`);
    without it, a duplicate key is an error."""
    out: list[dict[str, Any]] = []
    for index, doc, item in _indexed(text, name, error, duplicates=duplicates):
        require_object(doc, name, index, item=item, error=error, unnamed=unnamed)
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
        return yamlload.compose(text, name, error, is_json=is_json)


# --------------------------------------------------------------------------- internals


def _got(value: Any) -> str:
    return "" if value is None else f" (got {type_name(value)})"


def _indexed(
    text: str | bytes,
    name: str,
    error: type[GitDriftError],
    checks: list[Callable[[], None]] | None = None,
    *,
    duplicates: list[str] | None = None,
) -> list[tuple[int, dict[str, Any], int | None]]:
    """(document index, object, List item index or None) for every object."""
    docs = _parse(text, name, error, checks, duplicates=duplicates)
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
    *,
    duplicates: list[str] | None = None,
) -> list[Any]:
    with _gc_paused:
        try_fast = True
        if checks is not None and isinstance(text, bytes):
            read = fastjson.fast_bytes(text, name, checks)
            if read is not None:
                return read
            try_fast = False  # msgspec refused them, or they are no big JSON: not again
        text = _text(text, name, error)
        docs = _load_json(text, name, error, try_fast=try_fast, duplicates=duplicates)
        if docs is None and duplicates is not None:
            docs = yamlload.load_yaml(text, name, error, duplicates=duplicates)
        elif docs is None:
            docs = yamlload.load_yaml(text, name, error)
        return docs


def _text(text: str | bytes, name: str, error: type[GitDriftError]) -> str:
    """`text` as a string without its byte order mark, within MAX_BYTES."""
    limit = limits.MAX_BYTES
    if isinstance(text, bytes):
        if len(text) > limit:
            raise error(f"{name}: {len(text)} bytes is more than the {limit} bytes allowed")
        text = _decode(text, name, error)
    text = text.removeprefix("\ufeff")
    if len(text) > limit and len(text.encode("utf-8", "surrogatepass")) > limit:
        raise error(f"{name}: more than the {limit} bytes allowed")
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
    text: str,
    name: str,
    error: type[GitDriftError],
    *,
    try_fast: bool = True,
    duplicates: list[str] | None = None,
) -> list[Any] | None:
    """Documents of a JSON text (one value or a stream of them), or None when the text is not
    JSON (then it is read as YAML, which reports the error with a line number). `try_fast`: a
    big text may be read by msgspec first (`fastjson.fast_json`). `duplicates`: as in
    `load_objects` (then the text is read the checking way, which sees every duplicate)."""
    if not text.lstrip(" \t\r\n").startswith(("{", "[")):
        return None
    try_fast = try_fast and duplicates is None
    fast = fastjson.fast_json(text) if try_fast and len(text) >= fastjson.FAST_JSON_CHARS else None
    if fast is not None:
        read, deep = fast
        for index, doc in enumerate(read if deep else (), 1):
            if limits.depth_exceeds(doc):
                raise error(
                    f"{name}: document {index}: nested deeper than {limits.MAX_DEPTH} levels"
                )
        return read
    repeated: list[str] = []
    decoder = json.JSONDecoder(
        object_pairs_hook=_json_pairs if duplicates is None else _last_pairs(repeated)
    )
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
                f"{name}: document {len(docs) + 1}: nested deeper than {limits.MAX_DEPTH} levels"
            ) from None
        except ValueError:
            return None
        if limits.depth_exceeds(doc):
            raise error(
                f"{name}: document {len(docs) + 1}: nested deeper than {limits.MAX_DEPTH} levels"
            )
        docs.append(doc)
        if duplicates is not None and repeated:
            duplicates.extend(f"document {len(docs)}: duplicate key {key!r}" for key in repeated)
            repeated.clear()
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


def _last_pairs(repeated: list[str]) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """A pairs hook that keeps a repeated key's last value (encoding/json's way) and notes the
    key in `repeated`."""

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = dict(pairs)
        if len(out) != len(pairs):
            seen: set[str] = set()
            for key, _value in pairs:
                if key in seen:
                    repeated.append(key)
                seen.add(key)
        return out

    return pairs_hook


__all__ = [
    "FAST_JSON_CHARS",
    "MAX_ALIASES",
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_EXPANDED_NODES",
    "Unproven",
    "compose_documents",
    "load_any",
    "load_documents",
    "load_objects",
    "require_object",
    "type_name",
]
