"""The two path patterns the git generator uses, as Argo CD runs them: Go's `path.Match` for
`directories[].path`, and git's pathspec (`git ls-files -- PATTERN`, wildmatch without
WM_PATHNAME) for `files[].path`.

- `path.Match`: `*` is any run of characters but `/`, `?` one character but `/`, `[...]` a class
  (`[^...]` negated, `a-z` ranges, `\\` escapes); the whole name must match. A malformed pattern
  (an unclosed class, an empty one, a trailing `\\`) is an error.
- pathspec: `*` and `?` also match `/` (so `apps/*/config.json` reaches `apps/a/b/config.json`),
  classes may be negated with `!` or `^`; a pattern also matches every file below the directory
  it names literally (`apps` lists `apps/a/config.json`), and `.` or an empty pattern is the whole
  tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

_STAR, _ANY, _CLASS, _LIT = "star", "any", "class", "lit"
_WILDCARDS = "*?[\\"


class BadPattern(ValueError):
    """A pattern Go's path.Match (or git) refuses: the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str
    char: str = ""
    negated: bool = False
    ranges: tuple[tuple[str, str], ...] = ()


def go_match(pattern: str, name: str) -> bool:
    """Go's `path.Match(pattern, name)`; BadPattern for a malformed pattern."""
    return _match(_tokens(pattern, slash=False), name, 0, 0, slash=False)


def check_go_pattern(pattern: str) -> None:
    """Raise BadPattern unless Go's path.Match accepts `pattern`."""
    _tokens(pattern, slash=False)


def pathspec_match(pattern: str, name: str) -> bool:
    """Whether `git ls-files -- pattern` (run at the top, no pathspec magic) lists file `name`."""
    spec = pattern.removeprefix("./") if pattern not in (".", "./") else ""
    while spec.startswith("./"):
        spec = spec[2:]
    if not spec:
        return True
    if name == spec or name.startswith(spec if spec.endswith("/") else spec + "/"):
        return True
    if not any(c in spec for c in _WILDCARDS):
        return False
    try:
        return _match(_tokens(spec, slash=True), name, 0, 0, slash=True)
    except BadPattern:
        return False  # wildmatch treats what it cannot read as not matching


@lru_cache(maxsize=512)
def _tokens(pattern: str, *, slash: bool) -> tuple[_Token, ...]:
    """`pattern` read into tokens; `slash`: git's reading (`!` negates a class too)."""
    out: list[_Token] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            if not out or out[-1].kind != _STAR:
                out.append(_Token(_STAR))
            i += 1
        elif c == "?":
            out.append(_Token(_ANY))
            i += 1
        elif c == "\\":
            if i + 1 >= len(pattern):
                raise BadPattern(f"{pattern!r}: a trailing backslash escapes nothing")
            out.append(_Token(_LIT, pattern[i + 1]))
            i += 2
        elif c == "[":
            token, i = _class(pattern, i + 1, slash=slash)
            out.append(token)
        else:
            out.append(_Token(_LIT, c))
            i += 1
    return tuple(out)


def _class(pattern: str, i: int, *, slash: bool) -> tuple[_Token, int]:
    negated = False
    if i < len(pattern) and (pattern[i] == "^" or (slash and pattern[i] == "!")):
        negated = True
        i += 1
    ranges: list[tuple[str, str]] = []
    first = True
    while True:
        if i >= len(pattern):
            raise BadPattern(f"{pattern!r}: a character class is not closed")
        c = pattern[i]
        if c == "]" and not (slash and first):
            if not ranges:
                raise BadPattern(f"{pattern!r}: an empty character class")
            return _Token(_CLASS, negated=negated, ranges=tuple(ranges)), i + 1
        first = False
        lo, i = _class_char(pattern, i, strict=not slash)
        hi = lo
        if i < len(pattern) and pattern[i] == "-":
            if slash and (i + 1 >= len(pattern) or pattern[i + 1] == "]"):
                pass  # git: a '-' before the closing ']' is itself
            else:
                hi, i = _class_char(pattern, i + 1, strict=not slash)
        ranges.append((lo, hi))


def _class_char(pattern: str, i: int, *, strict: bool) -> tuple[str, int]:
    """One character of a class; `strict` (Go): an unescaped `-` or `]` here is an error."""
    if i >= len(pattern):
        raise BadPattern(f"{pattern!r}: a character class is not closed")
    c = pattern[i]
    if c == "\\":
        if i + 1 >= len(pattern):
            raise BadPattern(f"{pattern!r}: a trailing backslash escapes nothing")
        return pattern[i + 1], i + 2
    if strict and c in "-]":
        raise BadPattern(f"{pattern!r}: {c!r} must be escaped in a character class")
    return c, i + 1


def _match(tokens: tuple[_Token, ...], name: str, t: int, n: int, *, slash: bool) -> bool:
    """Backtracking match of tokens[t:] against name[n:] (a star is tried shortest first)."""
    while t < len(tokens):
        token = tokens[t]
        if token.kind == _STAR:
            if t + 1 == len(tokens):
                return slash or "/" not in name[n:]
            for k in range(n, len(name) + 1):
                if _match(tokens, name, t + 1, k, slash=slash):
                    return True
                if k < len(name) and name[k] == "/" and not slash:
                    return False
            return False
        if n >= len(name):
            return False
        c = name[n]
        if token.kind == _ANY:
            if c == "/" and not slash:
                return False
        elif token.kind == _LIT:
            if c != token.char:
                return False
        else:
            inside = any(lo <= c <= hi for lo, hi in token.ranges)
            if inside == token.negated:
                return False
        t += 1
        n += 1
    return n == len(name)
