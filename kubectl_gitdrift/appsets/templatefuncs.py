"""Argo CD's goTemplate function set: text/template's builtins, sprig's, Argo CD's own.

Argo CD (applicationset/utils/utils.go) renders with sprig's GenericFuncMap less `env`,
`expandenv` and `getHostByName`, plus `normalize`, `slugify`, `toYaml`, `fromYaml` and
`fromYamlArray`. Each function here is sprig's (v3.3.0) behaviour written again, with the Go
parameter types text/template checks before calling it (`Func.params`): `upper 3` fails as Go
fails; values are Go's as `govalues` models them, JSON and YAML are `goyaml`'s. The tests
compare them with sprig itself (testdata/appsets/gotemplate/sprig-expected.json).
Differences from sprig: `keys` and `values` come in key order (Go's are random), regular
expressions are Python's `re` (RE2's common syntax is the same; the error texts differ),
`now`, `uuidv4` and `rand*` differ each render (as in Argo CD), and the functions in
`UNSUPPORTED` (crypto, dates beyond `now`/`date`, URL parsing, case converters) are refused
by name.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import posixpath
import re
import secrets
import string
import uuid
import zlib
from collections.abc import Callable
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

from kubectl_gitdrift.appsets import goyaml
from kubectl_gitdrift.appsets.govalues import (
    BUILTINS,
    MISSING,
    Func,
    FuncError,
    Int64,
    empty,
    go_int,
    go_quote,
    kind_name,
    semver_compare,
    show,
    strslice,
    strval,
    to_float64,
    to_int64,
    type_name,
)
from kubectl_gitdrift.appsets.params import sanitize_name

__all__ = ["FUNCS", "REMOVED", "UNSUPPORTED", "unknown"]

FUNCS: dict[str, Func] = dict(BUILTINS)
REMOVED = frozenset({"env", "expandenv", "getHostByName"})
UNSUPPORTED = frozenset((  # dates beyond now/date, random, crypto, network: refused by name
    "ago", "dateInZone", "date_in_zone", "dateModify", "date_modify", "mustDateModify",
    "must_date_modify", "duration", "durationRound", "htmlDateInZone", "mustToDate", "toDate",
    "randBytes", "shuffle",
    "bcrypt", "htpasswd", "genPrivateKey", "derivePassword", "buildCustomCert", "genCA",
    "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey", "genSignedCert",
    "genSignedCertWithKey", "encryptAES", "decryptAES", "semver", "urlParse", "urlJoin", "call",
    "abbrev", "abbrevboth", "wrap", "wrapWith", "camelcase", "kebabcase", "snakecase"
))  # fmt: skip


def unknown(name: str) -> str:
    """Why `name` cannot be called: Argo CD removed it, gitdrift refuses it, or it is unknown."""
    if name in REMOVED:
        return f"function {go_quote(name)} not defined (Argo CD removes it from sprig)"
    if name in UNSUPPORTED:
        return f"function {go_quote(name)} is not supported by gitdrift's goTemplate"
    return f"function {go_quote(name)} not defined"


def _def(names: str, *params: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    variadic = params[-1][3:] if params and params[-1].startswith("...") else None
    fixed = params[:-1] if variadic else params

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in names.split():
            FUNCS[name] = Func(fn, fixed, variadic)
        return fn

    return register


# ---------------------------------------------------------------- sprig: strings


def _add(names: str, params: str, fn: Callable[..., Any]) -> None:
    _def(names, *params.split())(fn)


def _title(s: str) -> str:
    """strings.Title: the first letter of each word upper-cased (a word follows a non-letter)."""
    out, prev = [], " "
    for ch in s:
        out.append(ch.upper() if not (prev.isalnum() or prev == "_") else ch)
        prev = ch
    return "".join(out)


def _trunc(c: int, text: str) -> str:
    """Go slices a string's bytes: a cut inside a character leaves U+FFFD, as JSON writes it."""
    s = text.encode()
    if c < 0 and len(s) + c > 0:
        return s[len(s) + c :].decode(errors="replace")
    return s[:c].decode(errors="replace") if c >= 0 and len(s) > c else text


def _substr(start: int, end: int, text: str) -> str:
    s = text.encode()
    if start < 0:
        return _go_slice(s, 0, end)
    return (
        s[start:].decode(errors="replace") if end < 0 or end > len(s) else _go_slice(s, start, end)
    )


def _go_slice(s: bytes, lo: int, hi: int) -> str:
    if not 0 <= lo <= hi <= len(s):
        raise FuncError(f"runtime error: slice bounds out of range [{lo}:{hi}]")
    return s[lo:hi].decode(errors="replace")


def _quote(*args: Any) -> str:
    return " ".join(go_quote(strval(a)) for a in args if a is not None)


def _squote(*args: Any) -> str:
    return " ".join(f"'{show(a)}'" for a in args if a is not None)


def _indent(n: int, s: str) -> str:
    pad = " " * n
    return pad + s.replace("\n", "\n" + pad)


def _b64dec(s: str, alphabet: str = "64") -> str:
    try:
        data = base64.b64decode(s, validate=True) if alphabet == "64" else base64.b32decode(s)
    except (binascii.Error, ValueError):
        return "illegal base" + alphabet + " data at input byte 0"
    return data.decode("utf-8", "replace")


_add("trim", "string", str.strip)
_add("upper", "string", str.upper)
_add("lower", "string", str.lower)
_add("title", "string", _title)
_add("untitle", "string", lambda s: re.sub(r"(?:^|(?<=\s))\S", lambda m: m[0].lower(), s))
_add("trunc", "int string", _trunc)
_add("substr", "int int string", _substr)
_add("repeat", "int string", lambda n, s: s * max(n, 0))
_add("trimAll trimall", "string string", lambda a, b: b.strip(a))
_add("trimSuffix", "string string", lambda a, b: b.removesuffix(a))
_add("trimPrefix", "string string", lambda a, b: b.removeprefix(a))
_add("nospace", "string", lambda s: "".join(s.split()))
_add("initials", "string", lambda s: "".join(word[0] for word in s.split()))
_add("swapcase", "string", str.swapcase)
_add("contains", "string string", lambda a, b: a in b)
_add("hasPrefix", "string string", lambda a, b: b.startswith(a))
_add("hasSuffix", "string string", lambda a, b: b.endswith(a))
_add("quote", "...any", _quote)
_add("squote", "...any", _squote)
_add("cat", "...any", lambda *a: " ".join(show(x) for x in a if x is not None))
_add("indent", "int string", _indent)
_add("nindent", "int string", lambda n, s: "\n" + _indent(n, s))
_add("replace", "string string string", lambda old, new, s: s.replace(old, new))
_add("plural", "string string int", lambda one, many, n: one if n == 1 else many)
_add("sha1sum", "string", lambda s: hashlib.sha1(s.encode()).hexdigest())
_add("sha256sum", "string", lambda s: hashlib.sha256(s.encode()).hexdigest())
_add("sha512sum", "string", lambda s: hashlib.sha512(s.encode()).hexdigest())
_add("adler32sum", "string", lambda s: str(zlib.adler32(s.encode())))
_add("toString", "any", strval)
_add("b64enc", "string", lambda s: base64.b64encode(s.encode()).decode())
_add("b64dec", "string", _b64dec)
_add("b32enc", "string", lambda s: base64.b32encode(s.encode()).decode())
_add("b32dec", "string", lambda s: _b64dec(s, "32"))
_add("split", "string string", lambda sep, s: {f"_{i}": p for i, p in enumerate(_split(s, sep))})
_add("splitList", "string string", lambda sep, s: _split(s, sep))
_add(
    "splitn",
    "string int string",
    lambda sep, n, s: {f"_{i}": p for i, p in enumerate(_split(s, sep, n))},
)
_add("toStrings", "any", strslice)
_add("join", "string any", lambda sep, v: sep.join(strslice(v)))
_add("sortAlpha", "any", lambda v: sorted(strslice(v)))
_add("hello", "", lambda: "Hello!")


@_def("fail", "string")
def _fail(msg: str) -> str:
    raise FuncError(msg)


def _split(s: str, sep: str, n: int = -1) -> list[str]:
    """strings.Split / SplitN (an empty separator splits after each character)."""
    if n == 0:
        return []
    if sep == "":
        chars = list(s)
        return chars if n < 0 or len(chars) <= n else [*chars[: n - 1], "".join(chars[n - 1 :])]
    return s.split(sep) if n < 0 else s.split(sep, n - 1)


def _go_base(p: str) -> str:
    """path.Base."""
    if p == "":
        return "."
    p = p.rstrip("/")
    return "/" if p == "" else p.rsplit("/", 1)[-1]


def _go_clean(p: str) -> str:
    """path.Clean."""
    if p == "":
        return "."
    cleaned = posixpath.normpath(p)
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


def _go_dir(p: str) -> str:
    """path.Dir."""
    return _go_clean(p[: p.rfind("/") + 1])


def _go_ext(p: str) -> str:
    """path.Ext."""
    name = p[p.rfind("/") + 1 :]
    return name[name.rfind(".") :] if "." in name else ""


for _prefix in ("", "os"):
    _add(_prefix + ("base" if not _prefix else "Base"), "string", _go_base)
    _add(_prefix + ("dir" if not _prefix else "Dir"), "string", _go_dir)
    _add(_prefix + ("clean" if not _prefix else "Clean"), "string", _go_clean)
    _add(_prefix + ("ext" if not _prefix else "Ext"), "string", _go_ext)
    _add(_prefix + ("isAbs" if not _prefix else "IsAbs"), "string", lambda p: p.startswith("/"))


# ---------------------------------------------------------------- sprig: numbers


def _int64_op(op: Callable[[int, int], int]) -> Callable[..., Int64]:
    def apply(a: Any, *rest: Any) -> Int64:
        value = to_int64(a)
        for b in rest:
            value = op(value, to_int64(b))
        return Int64(((value + 2**63) % 2**64) - 2**63)  # int64 wraps around

    return apply


def _go_div(a: int, b: int) -> int:
    if b == 0:
        raise FuncError("runtime error: integer divide by zero")
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _go_mod(a: int, b: int) -> int:
    return a - b * _go_div(a, b)


def _decimal_op(op: Callable[[Decimal, Decimal], Decimal]) -> Callable[..., float]:
    def apply(a: Any, *rest: Any) -> float:
        value = Decimal(repr(to_float64(a)))
        for b in rest:
            other = Decimal(repr(to_float64(b)))
            if op is Decimal.__truediv__ and other == 0:
                raise FuncError("decimal division by 0")
            value = op(value, other)
        return float(value)

    return apply


def _until_step(start: int, stop: int, step: int) -> list[int]:
    if (stop < start and step >= 0) or (stop >= start and step <= 0):
        return []
    return list(range(start, stop, step))


def _seq(*params: int) -> str:
    if len(params) == 1:
        start, end, step = 1, params[0], 1 if params[0] >= 1 else -1
    elif len(params) == 2:
        start, end = params
        step = 1 if end >= start else -1
    elif len(params) == 3:
        start, step, end = params
        if end < start and step > 0:
            return ""
    else:
        return ""
    inc = -1 if end < start else 1
    return " ".join(str(i) for i in _until_step(start, end + inc, step))


def _round(a: Any, places: int, *on: float) -> float:
    value, pow10 = to_float64(a), 10.0**places
    digit = pow10 * value
    return (
        math.ceil(digit)
        if digit - math.trunc(digit) >= (on[0] if on else 0.5)
        else math.floor(digit)
    ) / pow10


_add("atoi", "string", lambda s: go_int(s, 10) or 0)
_add("int64", "any", lambda v: Int64(to_int64(v)))
_add("int", "any", to_int64)
_add("float64", "any", to_float64)
_add("toDecimal", "any", lambda v: Int64(go_int(show(v), 8) or 0))
_add("seq", "...int", _seq)
_add("until", "int", lambda n: _until_step(0, n, 1 if n >= 0 else -1))
_add("untilStep", "int int int", _until_step)
_add("add1", "any", lambda a: _int64_op(int.__add__)(a, 1))
_add("add", "...any", lambda *a: _int64_op(int.__add__)(0, *a))
_add("sub", "any any", _int64_op(int.__sub__))
_add("div", "any any", _int64_op(_go_div))
_add("mod", "any any", _int64_op(_go_mod))
_add("mul", "any ...any", _int64_op(int.__mul__))
_add("biggest max", "any ...any", _int64_op(max))
_add("min", "any ...any", _int64_op(min))
_add("maxf", "any ...any", lambda a, *r: max([to_float64(a), *map(to_float64, r)]))
_add("minf", "any ...any", lambda a, *r: min([to_float64(a), *map(to_float64, r)]))
_add("add1f", "any", lambda a: _decimal_op(Decimal.__add__)(a, 1))
_add("addf", "...any", lambda *a: _decimal_op(Decimal.__add__)(0, *a))
_add("subf", "any ...any", _decimal_op(Decimal.__sub__))
_add("mulf", "any ...any", _decimal_op(Decimal.__mul__))
_add("divf", "any ...any", _decimal_op(Decimal.__truediv__))
_add("ceil", "any", lambda a: float(math.ceil(to_float64(a))))
_add("floor", "any", lambda a: float(math.floor(to_float64(a))))
_add("round", "any int ...float64", _round)


# ---------------------------------------------------------------- sprig: defaults, JSON, YAML


def _from_json(s: str) -> Any:
    try:
        return goyaml.json_floats(json.loads(s))
    except json.JSONDecodeError as err:  # encoding/json's words for the two usual cases
        if not s[err.pos :].strip():
            raise FuncError("unexpected end of JSON input") from None
        why = "looking for beginning of value" if err.msg == "Expecting value" else err.msg
        raise FuncError(f"invalid character '{s[err.pos]}' {why}") from None
    except (ValueError, RecursionError) as err:
        raise FuncError(str(err)) from None


def _quiet(fn: Callable[..., Any], fallback: Any) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except FuncError:
            return fallback

    return call


_add("default", "any ...any", lambda d, *given: d if not given or empty(given[0]) else given[0])
_add("empty", "any", empty)
_add("coalesce", "...any", lambda *v: next((x for x in v if not empty(x)), None))
_add("all", "...any", lambda *v: all(not empty(x) for x in v))
_add("any", "...any", lambda *v: any(not empty(x) for x in v))
_add("ternary", "any any bool", lambda t, f, cond: t if cond else f)
_add("mustFromJson", "string", _from_json)
_add("fromJson", "string", _quiet(_from_json, None))
_add("mustToJson", "any", goyaml.go_json)
_add("toJson", "any", _quiet(goyaml.go_json, ""))
_add("mustToPrettyJson", "any", lambda v: goyaml.go_json(v, "  "))
_add("toPrettyJson", "any", _quiet(lambda v: goyaml.go_json(v, "  "), ""))
_add("mustToRawJson", "any", lambda v: goyaml.go_json(v, None, False))
_add("toRawJson", "any", lambda v: goyaml.go_json(v, None, False))
_add("deepCopy mustDeepCopy", "any", lambda v: json.loads(json.dumps(v)) if v is not None else None)
_add("typeOf", "any", type_name)
_add("typeIs", "string any", lambda t, v: t == type_name(v))
_add("typeIsLike", "string any", lambda t, v: t in (type_name(v), "*" + type_name(v)))
_add("kindOf", "any", kind_name)
_add("kindIs", "string any", lambda k, v: k == kind_name(v))
_add("deepEqual", "any any", lambda a, b: type_name(a) == type_name(b) and a == b)


_add("toYaml", "any", goyaml.to_yaml)
_add("fromYaml", "string", lambda s: goyaml.from_yaml(s, dict))
_add("fromYamlArray", "string", lambda s: goyaml.from_yaml(s, list))


# ---------------------------------------------------------------- sprig: dicts and lists


def _dict(*pairs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i in range(0, len(pairs), 2):
        out[strval(pairs[i])] = pairs[i + 1] if i + 1 < len(pairs) else ""
    return out


def _merge(dst: dict[str, Any], src: dict[str, Any], overwrite: bool) -> None:
    """mergo.Merge: maps merge deeply, dst's non-empty values stay; MergeWithOverwrite: every
    src value wins (false and "" too, nil included), maps still merge deeply."""
    for key, value in src.items():
        old = dst.get(key, MISSING)
        if isinstance(old, dict) and isinstance(value, dict):
            _merge(old, value, overwrite)
        elif overwrite or (value is not None and (old is MISSING or empty(old))):
            dst[key] = value


def _merger(overwrite: bool) -> Callable[..., Any]:
    def merge(dst: dict[str, Any], *srcs: dict[str, Any]) -> dict[str, Any]:
        for src in srcs:
            _merge(dst, src, overwrite)
        return dst

    return merge


def _dig(*args: Any) -> Any:
    if len(args) < 3:
        raise FuncError("dig needs at least three arguments")
    value, default = args[-1], args[-2]
    for key in args[:-2]:
        if not isinstance(value, dict):
            raise FuncError(
                f"interface conversion: interface {{}} is {type_name(value)}, "
                "not map[string]interface {}"
            )
        if key not in value:
            return default
        value = value[key]
    return value


def _set(d: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    d[key] = value
    return d


def _uniq(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if not any(type_name(item) == type_name(o) and item == o for o in out):
            out.append(item)
    return out


def _list_fn(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def call(v: Any, *rest: Any) -> Any:
        return fn(_slice(v, name), *rest)

    return call


def _slice(v: Any, name: str) -> list[Any]:
    if isinstance(v, list | tuple):
        return list(v)
    raise FuncError(f"Cannot {name} on type {kind_name(v)}")


def _sprig_slice(items: list[Any], *bounds: Any) -> list[Any]:
    lo = to_int64(bounds[0]) if bounds else 0
    hi = to_int64(bounds[1]) if len(bounds) > 1 else len(items)
    if not 0 <= lo <= hi <= len(items):
        raise FuncError(f"runtime error: slice bounds out of range [{lo}:{hi}]")
    return items[lo:hi]


def _chunk(size: int, items: list[Any]) -> list[list[Any]]:
    if size <= 0:
        raise FuncError("runtime error: integer divide by zero")
    return [items[i : i + size] for i in range(0, len(items), size)]


def _has(needle: Any, haystack: Any) -> bool:
    if haystack is None:
        return False
    items = _slice(haystack, "find has")
    return any(type_name(needle) == type_name(e) and needle == e for e in items)


_add("list tuple", "...any", lambda *v: list(v))
_add("dict", "...any", _dict)
_add("get", "map string", lambda d, k: d.get(k, ""))
_add("set", "map string any", _set)
_add("unset", "map string", lambda d, k: (d.pop(k, None), d)[1])
_add("hasKey", "map string", lambda d, k: k in d)
_add("pluck", "string ...map", lambda k, *ds: [d[k] for d in ds if k in d])
_add("keys", "...map", lambda *ds: [k for d in ds for k in sorted(d)])
_add("values", "map", lambda d: [d[k] for k in sorted(d)])
_add("pick", "map ...string", lambda d, *ks: {k: d[k] for k in ks if k in d})
_add("omit", "map ...string", lambda d, *ks: {k: v for k, v in d.items() if k not in ks})
_add("merge mustMerge", "map ...map", _merger(False))
_add("mergeOverwrite mustMergeOverwrite", "map ...map", _merger(True))
_add("dig", "...any", _dig)
_add("append push mustAppend mustPush", "any any", _list_fn("push", lambda xs, v: [*xs, v]))
_add("prepend mustPrepend", "any any", _list_fn("prepend", lambda xs, v: [v, *xs]))
_add("first mustFirst", "any", _list_fn("find first", lambda xs: xs[0] if xs else None))
_add("last mustLast", "any", _list_fn("find last", lambda xs: xs[-1] if xs else None))
_add("rest mustRest", "any", _list_fn("find rest", lambda xs: xs[1:]))
_add("initial mustInitial", "any", _list_fn("find initial", lambda xs: xs[:-1]))
_add("reverse mustReverse", "any", _list_fn("find reverse", lambda xs: xs[::-1]))
_add("uniq mustUniq", "any", _list_fn("find uniq", _uniq))
_add("compact mustCompact", "any", _list_fn("compact", lambda xs: [e for e in xs if not empty(e)]))
_add(
    "without mustWithout",
    "any ...any",
    _list_fn("find without", lambda xs, *o: [e for e in xs if not _has(e, list(o))]),
)
_add("has mustHas", "any any", _has)
_add("slice mustSlice", "any ...any", _list_fn("slice", _sprig_slice))
_add("concat", "...any", lambda *ls: [e for xs in ls if xs is not None for e in _slice(xs, "cat")])
_add("chunk mustChunk", "int any", lambda n, v: _chunk(n, _slice(v, "chunk")))


# ---------------------------------------------------------------- sprig: regular expressions

_POSIX = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "0-9a-zA-Z", "upper": "A-Z",
          "lower": "a-z", "space": r"\t\n\v\f\r ", "xdigit": "0-9A-Fa-f", "word": "0-9A-Za-z_",
          "punct": r"!-/:-@\[-`{-~"}  # fmt: skip


def _rx(pattern: str) -> re.Pattern[str]:
    """Go's RE2 syntax read by Python's re: \\z, (?<name>), [[:alpha:]]; \\p{..} and \\C fail."""
    text = re.sub(
        r"\[:(\^?)(\w+):\]", lambda m: ("^" if m[1] else "") + _POSIX.get(m[2], m[0]), pattern
    )
    text = (
        text.replace(r"\z", r"\Z")
        .replace("(?<", "(?P<")
        .replace("(?P<=", "(?<=")
        .replace("(?P<!", "(?<!")
    )
    try:
        return re.compile(text)
    except (re.error, OverflowError) as err:
        raise FuncError(f"error parsing regexp: {err}: `{pattern}`") from None


def _matches(rx: re.Pattern[str], s: str, n: int = -1) -> list[re.Match[str]]:
    """FindAll's matches: an empty match right after a match is skipped, as Go skips it."""
    out: list[re.Match[str]] = []
    for m in rx.finditer(s):
        if n >= 0 and len(out) >= n:
            break
        if m.start() == m.end() and out and out[-1].end() == m.start():
            continue
        out.append(m)
    return out


def _expand(m: re.Match[str], template: str) -> str:
    """Regexp.Expand: $1, ${1}, $name, ${name}; $$ is a dollar; an unknown name is empty."""

    def group(g: re.Match[str]) -> str:
        if g[0] == "$$":
            return "$"
        name = g[1] or g[2]
        try:
            return m.group(int(name) if name.isdigit() else name) or ""
        except IndexError:
            return ""

    return re.sub(r"\$\$|\$\{(\w+)\}|\$(\w+)", group, template)


def _replace(pattern: str, s: str, repl: str, literal: bool = False) -> str:
    rx, out, pos = _rx(pattern), [], 0
    for m in _matches(rx, s):
        out.append(s[pos : m.start()])
        out.append(repl if literal else _expand(m, repl))
        pos = m.end()
    return "".join(out) + s[pos:]


def _rsplit(pattern: str, s: str, n: int) -> list[str]:
    if n == 0:
        return []
    if pattern and not s:
        return [""]
    out: list[str] = []
    beg = end = 0
    for m in _matches(_rx(pattern), s):
        if n > 0 and len(out) == n - 1:
            break
        end = m.start()
        if m.end() != 0:
            out.append(s[beg:end])
        beg = m.end()
    if end != len(s):
        out.append(s[beg:])
    return out


def _quote_meta(s: str) -> str:
    return "".join("\\" + c if c in "\\.+*?()|[]{}^$" else c for c in s)


_add("regexMatch", "string string", lambda p, s: _quiet(lambda: bool(_rx(p).search(s)), False)())
_add("mustRegexMatch", "string string", lambda p, s: bool(_rx(p).search(s)))
_add(
    "regexFindAll mustRegexFindAll",
    "string string int",
    lambda p, s, n: [m[0] for m in _matches(_rx(p), s, n)],
)
_add(
    "regexFind mustRegexFind",
    "string string",
    lambda p, s: next((m[0] for m in _matches(_rx(p), s, 1)), ""),
)
_add("regexReplaceAll mustRegexReplaceAll", "string string string", _replace)
_add(
    "regexReplaceAllLiteral mustRegexReplaceAllLiteral",
    "string string string",
    lambda p, s, r: _replace(p, s, r, True),
)
_add("regexSplit mustRegexSplit", "string string int", _rsplit)
_add("regexQuoteMeta", "string", _quote_meta)


_add("semverCompare", "string string", semver_compare)
# ---------------------------------------------------------------- sprig: dates (now and date only)

_LAYOUT = re.compile(
    r"2006|January|Jan|Monday|Mon|MST|Z07:00|-07:00|-0700|\.000000000|\.000000|\.000|01|02|_2|15|03|04|05|06|PM|pm|1|2|3|4|5"
)
_STRFTIME = {"2006": "%Y", "January": "%B", "Jan": "%b", "Monday": "%A", "Mon": "%a",
             "MST": "%Z", "01": "%m", "02": "%d", "15": "%H", "03": "%I", "04": "%M",
             "05": "%S", "06": "%y", "PM": "%p"}  # fmt: skip


def go_date(layout: str, when: Any) -> str:
    """time.Format with Go's reference layout (Mon Jan 2 15:04:05 MST 2006)."""
    if isinstance(when, int | float) and not isinstance(when, bool):
        when = datetime.fromtimestamp(when, timezone.utc)
    stamp: datetime = when if isinstance(when, datetime) else datetime.now(timezone.utc)

    def part(m: re.Match[str]) -> str:
        token = m[0]
        if token in _STRFTIME:
            return stamp.strftime(_STRFTIME[token])
        if token.startswith("."):
            return "." + f"{stamp.microsecond:06d}000"[: len(token) - 1]
        if token in ("Z07:00", "-07:00", "-0700"):
            offset = stamp.strftime("%z") or "+0000"
            if token == "Z07:00" and offset == "+0000":
                return "Z"
            return offset if token == "-0700" else offset[:3] + ":" + offset[3:]
        simple = {
            "1": stamp.month,
            "2": stamp.day,
            "3": stamp.hour % 12 or 12,
            "4": stamp.minute,
            "5": stamp.second,
        }
        if token == "_2":
            return f"{stamp.day:2d}"
        return (
            "pm"
            if token == "pm" and stamp.hour >= 12
            else "am"
            if token == "pm"
            else str(simple[token])
        )

    return _LAYOUT.sub(part, layout)


_add("now", "", lambda: datetime.now(timezone.utc))
_add("uuidv4", "", lambda: str(uuid.uuid4()))  # random, as in Argo CD: differs every render
_add("randAlphaNum", "int", lambda n: _random(string.ascii_letters + string.digits, n))
_add("randAlpha", "int", lambda n: _random(string.ascii_letters, n))
_add("randNumeric", "int", lambda n: _random(string.digits, n))
_add("randInt", "int int", lambda lo, hi: lo + secrets.randbelow(hi - lo))
_add("randAscii", "int", lambda n: _random("".join(map(chr, range(32, 127))), n))
_add("date", "string any", go_date)
_add("htmlDate", "any", lambda when: go_date("2006-01-02", when))
_add(
    "unixEpoch",
    "any",
    lambda when: str(int(when.timestamp())) if isinstance(when, datetime) else "0",
)


# ---------------------------------------------------------------- Argo CD's additions


def _random(alphabet: str, n: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(max(n, 0)))


@_def("slugify", "...any")
def _slugify(*args: Any) -> str:
    """Argo CD's SlugifyName: ([maxSize int], [smartTruncate bool], name), gosimple/slug's Make."""
    max_size, smart, name = 50, True, ""
    for i, arg in enumerate(args):
        want = str if i == len(args) - 1 else int if i == 0 else bool
        if type(arg) is not want:
            raise FuncError(
                f"interface conversion: interface {{}} is {type_name(arg)}, not {type_name(want())}"
            )
        if i == len(args) - 1:
            name = str(arg)
        elif i == 0:
            max_size = int(arg)
        elif i == 1:
            smart = bool(arg)
    text = sanitize_name(name).strip()
    if not smart and len(text) >= max_size:
        text = text[:max_size]
    text = re.sub("-+", "-", re.sub(r"[^a-zA-Z0-9\-_]", "-", text)).strip("-_")
    if max_size > 0 and smart and len(text) > max_size:
        cut = text.rfind("-", 0, max_size + 1)
        text = text[:cut] if cut >= 0 else text[:max_size]
    return text


_add("normalize", "string", sanitize_name)
