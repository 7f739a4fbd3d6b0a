"""Reads a kube audit log (`--audit-log FILE`): the JSON lines the log backend writes.

Plain or gzip (by magic bytes, whatever the name), or `-` for stdin.

Untrusted input, so bounded: at most MAX_BYTES of (decompressed) text, lines longer than
MAX_LINE_BYTES are skipped, and at most MAX_EVENTS relevant events are kept. A line that is not a
JSON audit event (truncated, garbage, another kind) is counted, never fatal. Only events that can
explain a write are kept (audit.is_relevant): reads, other stages, failures and dry runs are
dropped on the way in.
"""

from __future__ import annotations

import gzip
import io
import json
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from kubectl_gitdrift.diagnose import audit
from kubectl_gitdrift.errors import UsageError

MAX_BYTES = 2 * 1024 * 1024 * 1024
MAX_LINE_BYTES = 8 * 1024 * 1024
MAX_EVENTS = 1_000_000


def read(path: str | Path, *, stdin: IO[bytes] | None = None) -> audit.AuditLog:
    """Read an audit log file (or `-`); UsageError names the flag when it cannot be opened."""
    name = str(path)
    if name == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        return parse_stream(stream, "-")
    file = Path(path)
    try:
        handle = file.open("rb")
    except OSError as exc:
        raise UsageError(
            f"--audit-log {name}: cannot read: {exc.strerror or exc}",
            hint="pass a kube audit log (JSON lines, optionally gzipped), or - for stdin",
        ) from None
    with handle:
        return parse_stream(handle, name)


def parse_stream(
    stream: IO[bytes],
    source: str,
    *,
    max_bytes: int = MAX_BYTES,
    max_line: int = MAX_LINE_BYTES,
    max_events: int = MAX_EVENTS,
) -> audit.AuditLog:
    head = stream.read(2)
    raw: IO[bytes] = io.BufferedReader(_Prefixed(head, stream), 1 << 20)
    if head[:2] == b"\x1f\x8b":
        raw = gzip.GzipFile(fileobj=raw)  # type: ignore[assignment]
    events: list[dict[str, Any]] = []
    lines = garbage = skipped = 0
    total = 0
    truncated = False
    try:
        for line in _lines(raw, max_line):
            total += len(line) if line is not None else max_line
            if total > max_bytes:
                truncated = True
                break
            if line is None:  # over-long line
                lines += 1
                garbage += 1
                continue
            if not line.strip():
                continue
            lines += 1
            event = _event(line)
            if event is None:
                garbage += 1
                continue
            if not audit.is_relevant(event):
                skipped += 1
                continue
            if len(events) >= max_events:
                truncated = True
                break
            events.append(event)
    except (OSError, EOFError, zlib.error) as exc:
        raise UsageError(f"--audit-log {source}: not a readable gzip file ({exc})") from None
    return audit.AuditLog(tuple(events), source, lines, garbage, skipped, truncated)


def _event(line: bytes) -> dict[str, Any] | None:
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(event, dict)
        or event.get("kind") != "Event"
        or not str(event.get("apiVersion") or "").startswith("audit.k8s.io/")
    ):
        return None
    return event


def _lines(stream: IO[bytes], max_line: int) -> Iterator[bytes | None]:
    """Lines without their newline; None for a line longer than max_line (skipped whole)."""
    while True:
        line = stream.readline(max_line + 1)
        if not line:
            return
        if len(line) > max_line and not line.endswith(b"\n"):
            while True:  # drain the rest of the over-long line
                more = stream.readline(max_line + 1)
                if not more or more.endswith(b"\n"):
                    break
            yield None
            continue
        yield line.rstrip(b"\r\n")


class _Prefixed(io.RawIOBase):
    """A stream with a few already-read bytes put back in front."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer)
        if self._head:
            n = min(len(view), len(self._head))
            view[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(view))
        view[: len(data)] = data
        return len(data)
