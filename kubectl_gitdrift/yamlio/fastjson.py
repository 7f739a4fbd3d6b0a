"""Big JSON texts read by msgspec, and proven to be what the checking json parse returns (pure).

The package's json loop checks keys written twice and the depth as it reads; msgspec reads
faster but lets the last of two keys win silently and does not bound the depth. `fast_json` and
`fast_bytes` hand back msgspec's reading only with a proof (`_proof`) that the checking parse
returns the same, now or (bytes) by a check run later; otherwise the checking parse decides.
msgspec is imported only when a big text is read.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubectl_gitdrift.yamlio import limits

FAST_JSON_CHARS = 1 << 20
"""JSON texts this long or longer are read by msgspec first (`fast_json`); below, importing
it costs more than it saves."""
_FAST_JSON_CHUNK = 256
"""Documents `_proof` re-encodes at a time (bounds the memory its checks take)."""


class Unproven(Exception):
    """A JSON text read fast could not be proven the same as the checking parse: read it again
    without deferred checks (load_documents)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name}: the fast JSON reading needs the checking parse")
        self.name = name


@dataclass(frozen=True, slots=True)
class _Proof:
    deep: bool  # a document may be nested deeper than MAX_DEPTH: walk each (limits.depth_exceeds)


def fast_json(text: str) -> tuple[list[Any], bool] | None:
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


def fast_bytes(data: bytes, name: str, checks: list[Callable[[], None]]) -> list[Any] | None:
    """`fast_json`'s reading, deferred, from the bytes: the text is decoded (and checked
    to be UTF-8) by the check, not here. None when the checking way must read them."""
    if not FAST_JSON_CHARS <= len(data) <= limits.MAX_BYTES:
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
    """Whether `docs` (`_fast_read`) are certainly what the checking parse (the package's json
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
      the caller walks each document with `limits.depth_exceeds`.
    """
    import msgspec  # _fast_read has imported it

    too_deep = b"\n" + b" " * (limits.MAX_DEPTH + 1)
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
    """The check `fast_bytes` deferred: Unproven unless the checking parse would have returned
    `docs` as they are, without an error."""
    try:
        text = data.decode("utf-8")  # as the package decodes it; msgspec read the same text
    except UnicodeDecodeError:
        raise Unproven(name) from None
    proof = _proof(text, docs) if _countable(text) else None
    if proof is None or (proof.deep and any(map(limits.depth_exceeds, docs))):
        raise Unproven(name)


@functools.cache
def _msgspec_decoder() -> Any:
    import msgspec

    return msgspec.json.Decoder()
