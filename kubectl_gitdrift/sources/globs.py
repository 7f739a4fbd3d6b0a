"""Path globs as Argo CD matches them: gobwas/glob over a path as one string (directory
`include`/`exclude`), and doublestar over the filesystem (Helm value files, plugin discovery).

A leaf of the sources edge, shared by the directory, helm and plugin renderers.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from pathlib import Path


def glob_match(pattern: str, text: str) -> bool:
    """gobwas/glob without separators: `*`/`**` any run of characters (`/` included), `?` one
    character, `[abc]`/`[!a-z]` classes, `{a,b}` alternatives, `\\` escapes."""
    return _compile(pattern).fullmatch(text) is not None


def has_glob(path: str) -> bool:
    """Argo CD's isGlobPath: `*`, `?` or `[` (doublestar's metacharacters)."""
    return any(c in path for c in "*?[")


def filepath_glob(pattern: str) -> list[Path]:
    """doublestar.FilepathGlob: the files matching the absolute `pattern` (`*`, `?`, `[…]`,
    `{a,b}` within one path segment, `**` any number of directories), in its walk order (each
    directory's own matches first, then its subdirectories, entries in lexical order)."""
    parts = [p for p in Path(pattern).parts]
    base = Path(parts[0])
    segments = parts[1:]
    while segments and not has_glob(segments[0]) and "{" not in segments[0]:
        base = base / segments[0]
        segments = segments[1:]
    if not segments:
        return [base] if base.is_file() else []
    out: list[Path] = []
    _glob_into(base, segments, out)
    seen: set[Path] = set()
    return [p for p in out if not (p in seen or seen.add(p))]  # type: ignore[func-returns-value]


# --------------------------------------------------------------------------- internals


def _glob_into(directory: Path, segments: Sequence[str], out: list[Path]) -> None:
    if not directory.is_dir():
        return
    head, rest = segments[0], segments[1:]
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    if head == "**":
        if rest:
            _glob_into(directory, rest, out)
        else:
            out.extend(Path(e.path) for e in entries if e.is_file())
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                _glob_into(Path(entry.path), segments, out)
        return
    for entry in entries:
        if not _compile(head).fullmatch(entry.name):  # a name has no `/`: `*` stays in it
            continue
        if rest:
            if entry.is_dir():
                _glob_into(Path(entry.path), rest, out)
        elif entry.is_file():
            out.append(Path(entry.path))


@functools.lru_cache(maxsize=64)
def _compile(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    depth = 0
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "*":
            while i + 1 < len(pattern) and pattern[i + 1] == "*":
                i += 1
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    out.extend(")" * depth)
    return re.compile("".join(out), re.DOTALL)
