"""Go's values as text/template sees them, the Go libraries its functions lean on (fmt,
strconv, spf13/cast, Masterminds/semver), and text/template's builtins.

Template data is plain Python data read as Go reads decoded JSON: dict is
map[string]interface {}, list is []interface {}, int is int, `Int64` is int64 (what sprig's
arithmetic returns), float is float64, None is nil and `MISSING` is text/template's invalid
value (a missing map key: it prints "<no value>"). `show` is fmt's %v, `sprintf` fmt.Sprintf
for the verbs templates use, `truth` text/template's truth; `BUILTINS` are text/template's own
functions (and, or, not, eq..., len, index, print, printf, println, html, js, urlquery), each
with the Go parameter types text/template checks before a call (`Func.params`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

__all__ = ["BUILTINS", "MISSING", "Func", "FuncError", "Int64", "show", "sprintf", "truth"]


class _Missing:
    """text/template's invalid value: a missing map key, an unset variable's nil."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<no value>"


MISSING: Any = _Missing()


class Int64(int):
    """A Go int64 (what sprig's arithmetic returns); a plain int is Go's int."""

    __slots__ = ()


class FuncError(Exception):
    """A function failed as its Go counterpart fails (an error result or a panic)."""


@dataclass(frozen=True, slots=True)
class Func:
    """A template function and the Go types of its parameters: "string", "int", "int64",
    "float64", "bool", "map", "any", or "value" (gets `MISSING` as is: the builtins)."""

    fn: Callable[..., Any]
    params: tuple[str, ...]
    variadic: str | None = None


BUILTINS: dict[str, Func] = {}


def _def(names: str, *params: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    variadic = params[-1][3:] if params and params[-1].startswith("...") else None
    fixed = params[:-1] if variadic else params

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in names.split():
            BUILTINS[name] = Func(fn, fixed, variadic)
        return fn

    return register


# ---------------------------------------------------------------- Go values as fmt prints them


def type_name(v: Any) -> str:
    """Go's %T of a value."""
    if v is None or v is MISSING:
        return "<nil>"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, Int64):
        return "int64"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float64"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "map[string]interface {}"
    if isinstance(v, list | tuple):
        return "[]interface {}"
    if isinstance(v, datetime):
        return "time.Time"
    return type(v).__name__


def kind_name(v: Any) -> str:
    """reflect's Kind of a value, as sprig's kindOf names it."""
    name = type_name(v)
    return {"<nil>": "invalid", "map[string]interface {}": "map", "[]interface {}": "slice"}.get(
        name, "struct" if name == "time.Time" else name
    )


def format_float(f: float, verb: str = "g", prec: int = -1) -> str:
    """strconv.FormatFloat(f, verb, prec, 64) for 'g', 'e' and 'f' (prec -1: the shortest)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if prec >= 0:
        return f"{f:.{prec}{verb}}"
    _, digit_tuple, exponent = Decimal(repr(abs(f))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    exp = len(digit_tuple) + int(exponent) - 1 if digits != "0" else 0
    sign = "-" if math.copysign(1, f) < 0 else ""
    if verb == "e" or (verb == "g" and (exp < -4 or exp >= 6)):
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exp >= len(digits) - 1:
        return sign + digits + "0" * (exp - len(digits) + 1)
    if exp >= 0:
        return sign + digits[: exp + 1] + "." + digits[exp + 1 :]
    return sign + "0." + "0" * (-exp - 1) + digits


def show(v: Any) -> str:
    """fmt's %v."""
    if isinstance(v, str):
        return v
    if v is None or v is MISSING:
        return "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        return format_float(v)
    if isinstance(v, dict):
        return "map[" + " ".join(f"{show(k)}:{show(v[k])}" for k in sorted(v, key=str)) + "]"
    if isinstance(v, list | tuple):
        return "[" + " ".join(show(e) for e in v) + "]"
    if isinstance(v, datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S.%f %z UTC")
    return str(v)


def sprint(args: Sequence[Any]) -> str:
    """fmt.Sprint: a space between operands when neither is a string."""
    out: list[str] = []
    for i, arg in enumerate(args):
        if i and not isinstance(arg, str) and not isinstance(args[i - 1], str):
            out.append(" ")
        out.append(show(arg))
    return "".join(out)


def go_quote(s: str) -> str:
    """strconv.Quote."""
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out) + '"'


_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}
_VERB = re.compile(r"%([-+# 0]*)(\*|\d+)?(?:\.(\*|\d*))?([a-zA-Z%])")


def sprintf(fmt: str, args: Sequence[Any]) -> str:
    """fmt.Sprintf for the verbs templates use: v s d q t x X o b c e E f F g G U and %%."""
    out: list[str] = []
    pos = used = 0
    for m in _VERB.finditer(fmt):
        out.append(fmt[pos : m.start()])
        pos = m.end()
        flags, width, prec, verb = m.groups()
        if verb == "%" and not width and prec is None:
            out.append("%")
            continue
        sizes: list[int | None] = []
        for part in (width, prec):
            if part == "*":
                star = args[used] if used < len(args) else None
                used += 1
                sizes.append(star if type(star) is int else None)
            else:
                sizes.append(int(part) if part else (0 if part == "" else None))
        if used >= len(args):
            out.append(f"%!{verb}(MISSING)")
            continue
        arg = args[used]
        used += 1
        out.append(_fmt(verb, flags, sizes[0], sizes[1], arg))
    out.append(fmt[pos:])
    if used < len(args):
        extra = ", ".join(f"{type_name(a)}={show(a)}" for a in args[used:])
        out.append(f"%!(EXTRA {extra})")
    return "".join(out)


def _fmt(verb: str, flags: str, width: int | None, prec: int | None, arg: Any) -> str:
    """One verb: lists and maps get it element by element (keys too), as fmt does."""
    if verb != "T" and isinstance(arg, list | tuple):
        return "[" + " ".join(_fmt(verb, flags, width, prec, e) for e in arg) + "]"
    if verb != "T" and isinstance(arg, dict):
        pairs = (
            f"{_fmt(verb, flags, width, prec, k)}:{_fmt(verb, flags, width, prec, arg[k])}"
            for k in sorted(arg)
        )
        return "map[" + " ".join(pairs) + "]"
    return _pad(_verb(verb, flags, prec, arg), flags, width, verb, arg)


def _pad(text: str, flags: str, width: int | None, verb: str, arg: Any) -> str:
    if width is None or len(text) >= width:
        return text
    if "-" in flags:
        return text.ljust(width)
    if "0" in flags and verb not in "sqvtc" and text[:1] in "+- " and _numeric(arg):
        return text[0] + text[1:].rjust(width - 1, "0")
    return text.rjust(width, "0" if "0" in flags else " ")


def _numeric(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _verb(verb: str, flags: str, prec: int | None, arg: Any) -> str:
    if verb == "T":
        return type_name(arg)
    is_int = isinstance(arg, int) and not isinstance(arg, bool)
    if verb == "v" or (verb == "s" and isinstance(arg, str)):
        text = show(arg)
        return text[:prec] if prec is not None and isinstance(arg, str) else text
    if verb == "t" and isinstance(arg, bool):
        return show(arg)
    if verb == "q" and isinstance(arg, str):
        return go_quote(arg if prec is None else arg[:prec])
    if verb == "q" and is_int:
        return "'" + go_quote(chr(arg))[1:-1].replace("'", "\\'").replace('\\"', '"') + "'"
    if verb == "c" and is_int:
        return chr(arg)
    if verb == "U" and is_int:
        return f"U+{arg:04X}"
    if verb in "xX" and isinstance(arg, str):
        text = arg.encode().hex()
        return text.upper() if verb == "X" else text
    if verb in "dxXob" and is_int:
        sign = "+" if "+" in flags and arg >= 0 else (" " if " " in flags and arg >= 0 else "")
        spec = {"d": "d", "x": "x", "X": "X", "o": "o", "b": "b"}[verb]
        alt = "#" if "#" in flags and verb != "d" else ""
        text = format(int(arg), alt + spec)
        if prec is not None:
            digits = text.lstrip("-")
            text = text[: len(text) - len(digits)] + digits.rjust(prec, "0")
        return sign + text
    if verb in "eEfFgG" and isinstance(arg, float):
        lower = verb.lower()
        if lower == "g" and prec is None:
            text = format_float(arg)
        else:
            text = format_float(arg, "f" if lower == "f" else lower, 6 if prec is None else prec)
        if "+" in flags and not text.startswith("-"):
            text = "+" + text
        return text.upper() if verb in "EG" else text
    return f"%!{verb}({type_name(arg)}={show(arg)})" if arg is not None else f"%!{verb}(<nil>)"


def truth(v: Any) -> bool:
    """text/template's truth: the zero value of its type is false, as are nil and no value."""
    if v is None or v is MISSING:
        return False
    if isinstance(v, bool | int | float | str | list | tuple | dict):
        return bool(v)
    return True


# ---------------------------------------------------------------- Go's literals (strconv)

_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}|[abfnrtv\\'\"])")
_SIMPLE = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def go_unquote(literal: str) -> str:
    """strconv.Unquote of a string, raw string or character literal (ValueError if bad)."""
    quote, body = literal[0], literal[1:-1]
    if quote == "`":
        return body.replace("\r", "")
    if "\\" in _ESCAPE.sub("", body):
        raise ValueError("invalid syntax")

    def escape(m: re.Match[str]) -> str:
        e = m[1]
        if e[0] in "xuU":
            return chr(int(e[1:], 16))
        if e[0] in "01234567":
            return chr(int(e, 8))
        if e in "'\"" and e != quote:
            raise ValueError("invalid syntax")
        return _SIMPLE.get(e, e)

    text = _ESCAPE.sub(escape, body)
    if quote == "'" and len(text) != 1:
        raise ValueError(f"malformed character constant: {literal}")
    return text


def go_number(text: str) -> tuple[Any, int | None, float | None]:
    """parse.NumberNode: the constant as an interface{} gets it, and as an int and a float
    where it is one (1e3 is both; a character constant is an int)."""
    if text.startswith("'"):
        code = ord(go_unquote(text))
        return code, code, float(code)
    if text.endswith("i"):
        raise ValueError(f"complex constants are not supported: {text}")
    body, sign = text.lstrip("+-"), -1 if text.startswith("-") else 1
    as_int: int | None = None
    as_float: float | None = None
    try:
        octal = re.fullmatch(r"0[0-7_]+", body)
        as_int = sign * (int(body[1:].replace("_", ""), 8) if octal else int(body, 0))
    except ValueError:
        pass
    try:
        is_hex = body[:2] in ("0x", "0X")
        as_float = sign * (float.fromhex(body) if is_hex else float(body.replace("_", "")))
    except (ValueError, OverflowError):
        pass
    if as_int is None and as_float is None:
        raise ValueError(f"bad number syntax: {go_quote(text)}")
    if as_int is not None and not -(2**63) <= as_int < 2**64:
        raise ValueError(f"integer overflow: {go_quote(text)}")
    if as_int is None and as_float is not None and as_float.is_integer() and abs(as_float) < 2**63:
        as_int = int(as_float)
    hex_int = text[:2] in ("0x", "0X") and not re.search("[pP]", text)
    is_float = as_float is not None and not hex_int and bool(re.search("[.eEpP]", text))
    return (as_float if is_float or as_int is None else as_int), as_int, as_float


# ---------------------------------------------------------------- text/template's assignability

GO_TYPES = {"map": "map[string]interface {}", "any": "interface {}", "value": "reflect.Value"}


def assign(value: Any, typ: str) -> Any:
    """text/template's validateType: a value given to a parameter of Go type `typ`."""
    if typ == "value":
        return value
    if typ == "any":
        return None if value is MISSING else value
    want = GO_TYPES.get(typ, typ)
    if value is MISSING:
        if typ == "map":
            return {}
        raise FuncError(f"invalid value; expected {want}")
    if type_name(value) != want:
        got = "interface {}" if value is None else type_name(value)
        raise FuncError(f"wrong type for value; expected {want}; got {got}")
    return value


def assign_constant(
    text: str, value: Any, as_int: int | None, as_float: float | None, typ: str
) -> Any:
    """A constant given to a parameter of Go type `typ` (parse.NumberNode's int and float)."""
    if typ in ("any", "value") or (typ, type(value)) in (("bool", bool), ("string", str)):
        return value
    number = not isinstance(value, bool | str)
    if typ in ("int", "int64") and number:
        if as_int is None:
            raise FuncError(f"expected integer; found {text}")
        return Int64(as_int) if typ == "int64" else as_int
    if typ == "float64" and number and as_float is not None:
        return as_float
    if typ == "map":
        raise FuncError(f"can't handle {text} for arg of type {GO_TYPES[typ]}")
    expect = {"int": "integer", "int64": "integer", "float64": "float"}.get(typ, typ)
    raise FuncError(f"expected {expect}; found {text}")


# ---------------------------------------------------------------- conversions (spf13/cast)


def go_int(text: str, base: int = 0) -> int | None:
    """strconv.ParseInt(text, base, 64), or None where Go returns an error."""
    body = text[1:] if text[:1] in "+-" else text
    if not body or (base == 10 and not body.isdigit()):
        return None
    if base == 0 and re.fullmatch(r"0[0-7_]+", body) and "__" not in body:
        body = "0o" + body[1:]
    try:
        value = int(body, base)
    except ValueError:
        return None
    if body.startswith("_") or body.endswith("_") or (base == 0 and "_" in body[:2]):
        return None
    value = -value if text[0] == "-" else value
    return value if -(2**63) <= value < 2**63 else None


def to_int64(v: Any) -> int:
    """cast.ToInt64: 0 for what it cannot convert (a string is read as Go's literal: 0x1f, 010)."""
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return int(v) if math.isfinite(v) else -(2**63)
    if isinstance(v, str):
        trimmed = re.sub(r"\.0+$", "", v)  # cast's trimZeroDecimal: "10.00" is 10
        return go_int(trimmed) or 0
    return 0


def to_float64(v: Any) -> float:
    """cast.ToFloat64: 0 for what it cannot convert."""
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str) and v.strip() == v and "_" not in v:
        try:
            return float(v)
        except ValueError:
            return 0.0
    return 0.0


def strval(v: Any) -> str:
    return v if isinstance(v, str) else show(v)


def strslice(v: Any) -> list[str]:
    if isinstance(v, list | tuple):
        return [strval(e) for e in v if e is not None]
    return [] if v is None else [strval(v)]


def empty(v: Any) -> bool:
    """sprig's empty: the zero value of its type (a struct, here a time, is never empty)."""
    return not truth(v) if not isinstance(v, datetime) else False


# ---------------------------------------------------------------- Masterminds/semver v3

_PARTS = r"[0-9A-Za-z\-]+(?:\.[0-9A-Za-z\-]+)*"
_CV = rf"v?([0-9xX*]+)(\.[0-9xX*]+)?(\.[0-9xX*]+)?(-{_PARTS})?(\+{_PARTS})?"
_OPS = r"=>|=<|>=|<=|!=|~>|=|>|<|~|\^|"
_ONE = re.compile(rf"({_OPS})\s*({_CV})")
_VALID = re.compile(rf"^(\s*({_OPS})\s*{_CV}\s*)((?:\s+|,\s*)({_OPS})\s*{_CV}\s*)*$")
_RANGE = re.compile(rf"\s*({_CV})\s+-\s+({_CV})\s*")
_VERSION = re.compile(
    r"v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z\-]+(?:\.[0-9A-Za-z\-]+)*))?(?:\+[0-9A-Za-z\-.]+)?"
)


@dataclass(frozen=True, slots=True)
class _Version:
    major: int
    minor: int
    patch: int
    pre: str

    def compare(self, other: _Version) -> int:
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return -1 if mine < theirs else 1
        if self.pre == other.pre:
            return 0
        if not self.pre or not other.pre:
            return 1 if not self.pre else -1
        return _compare_pre(self.pre.split("."), other.pre.split("."))


def _compare_pre(a: list[str], b: list[str]) -> int:
    for x, y in zip(a, b, strict=False):
        if x != y:
            if x.isdigit() and y.isdigit():
                return -1 if int(x) < int(y) else 1
            if x.isdigit() or y.isdigit():
                return -1 if x.isdigit() else 1
            return -1 if x < y else 1
    return (len(a) > len(b)) - (len(a) < len(b))


def _version(text: str) -> _Version:
    m = _VERSION.fullmatch(text)
    if not m:
        raise FuncError("Invalid Semantic Version")
    return _Version(int(m[1]), int(m[2] or 0), int(m[3] or 0), m[4] or "")


def _check(op: str, v: _Version, text: str, pre_ok: bool) -> bool:
    """One constraint, as semver's constraint functions decide it."""
    m = re.fullmatch(_CV, text)
    assert m is not None
    parts = [m[1], (m[2] or "")[1:], (m[3] or "")[1:]]
    wild = [p in ("", "x", "X", "*") for p in parts]
    minor_dirty, patch_dirty = wild[1] and not wild[0], wild[2] and not wild[1] and not wild[0]
    dirty = any(wild)
    nums = [0 if w else int(p) for p, w in zip(parts, wild, strict=True)]
    if wild[0]:
        nums, minor_dirty = [0, 0, 0], False
    elif wild[1]:
        nums[1:] = [0, 0]
    c = _Version(nums[0], nums[1], nums[2], (m[4] or "")[1:])
    if v.pre and not pre_ok:
        return False
    cmp = v.compare(c)
    if op in ("", "=", "~", "~>") and not (op in ("", "=") and not dirty):
        if cmp < 0:
            return False
        if c.major == c.minor == c.patch == 0 and not minor_dirty and not patch_dirty:
            return True
        return v.major == c.major and (v.minor == c.minor or minor_dirty)
    if op in ("", "="):
        return cmp == 0
    if op == "!=":
        if dirty and v.major != c.major:
            return True
        if minor_dirty:
            return False
        if dirty and v.minor != c.minor:
            return True
        if patch_dirty:
            return bool(v.pre or c.pre) and _compare_pre(v.pre.split("."), c.pre.split(".")) != 0
        return cmp != 0
    if op == ">":
        if not dirty or (v.major == c.major and not minor_dirty and not patch_dirty):
            return cmp > 0
        return v.major > c.major or (v.major == c.major and patch_dirty and v.minor > c.minor)
    if op == "<":
        return cmp < 0
    if op in (">=", "=>"):
        return cmp >= 0
    if op in ("<=", "=<"):
        if not dirty:
            return cmp <= 0
        return not (
            v.major > c.major or (v.major == c.major and v.minor > c.minor and not minor_dirty)
        )
    if cmp < 0:  # ^
        return False
    if c.major > 0 or minor_dirty:
        return v.major == c.major
    if v.major > 0:
        return False
    if c.minor > 0 or patch_dirty:
        return v.minor == c.minor
    return v.minor == 0 and v.patch == c.patch


def semver_compare(constraint: str, version: str) -> bool:
    constraint = _RANGE.sub(lambda m: f">= {m[1]}, <= {m[7]} ", constraint)
    groups = []
    for alternative in constraint.split("||"):
        if not _VALID.match(alternative):
            raise FuncError(f"improper constraint: {alternative}")
        groups.append([(m[1], m[2]) for m in _ONE.finditer(alternative)] or [("", "*")])
    v = _version(version)
    return any(
        all(_check(op, v, text, any("-" in t for _, t in group)) for op, text in group)
        for group in groups
    )


# ---------------------------------------------------------------- text/template's builtins


@_def("not", "value")
def _not(v: Any) -> bool:
    return not truth(v)


def _kind(v: Any) -> str:
    """text/template's basicKind; "zero" for no value and nil, "other" for maps and lists."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "string"
    return "zero" if v is None or v is MISSING else "other"


@_def("eq", "value", "...value")
def eq(a: Any, *others: Any) -> bool:
    if not others:
        raise FuncError("missing argument for comparison")
    ka = _kind(a)
    for b in others:
        kb = _kind(b)
        if ka != kb:
            if "zero" not in (ka, kb):
                raise FuncError("incompatible types for comparison")
        elif ka == "zero" or (ka != "other" and a == b):
            return True
        elif ka == "other":
            if type_name(a) != type_name(b):
                raise FuncError(
                    f"non-comparable types {show(a)}: {type_name(a)}, {type_name(b)}: {show(b)}"
                )
            raise FuncError(f"non-comparable type {show(b)}: {type_name(b)}")
    return False


@_def("ne", "value", "value")
def _ne(a: Any, b: Any) -> bool:
    return not eq(a, b)


@_def("lt", "value", "value")
def lt(a: Any, b: Any) -> bool:
    ka, kb = _kind(a), _kind(b)
    if ka in ("zero", "other") or kb in ("zero", "other"):
        raise FuncError("invalid type for comparison")
    if ka != kb:
        raise FuncError("incompatible types for comparison")
    if ka == "bool":
        raise FuncError("invalid type for comparison")
    return bool(a < b)


@_def("le", "value", "value")
def _le(a: Any, b: Any) -> bool:
    return bool(lt(a, b) or eq(a, b))


@_def("gt", "value", "value")
def _gt(a: Any, b: Any) -> bool:
    return not _le(a, b)


@_def("ge", "value", "value")
def _ge(a: Any, b: Any) -> bool:
    return not lt(a, b)


@_def("len", "value")
def _len(v: Any) -> int:
    if isinstance(v, str):
        return len(v.encode())
    if isinstance(v, list | tuple | dict):
        return len(v)
    if v is None or v is MISSING:
        raise FuncError("len of nil pointer")
    raise FuncError(f"len of type {type_name(v)}")


@_def("index", "value", "...value")
def _index(item: Any, *keys: Any) -> Any:
    if item is None or item is MISSING:
        raise FuncError("index of untyped nil")
    for key in keys:
        if item is None:
            raise FuncError("index of nil pointer")
        if isinstance(item, list | tuple | str):
            if not isinstance(key, int) or isinstance(key, bool):
                raise FuncError(f"cannot index slice/array with type {type_name(key)}")
            size = len(item.encode() if isinstance(item, str) else item)
            if not 0 <= key < size:
                raise FuncError(f"index out of range: {key}")
            item = item.encode()[key] if isinstance(item, str) else item[key]
        elif isinstance(item, dict):
            if key is None or key is MISSING:
                key = ""
            if not isinstance(key, str):
                raise FuncError(f"value has type {type_name(key)}; should be string")
            item = item.get(key)
        else:
            raise FuncError(f"can't index item of type {type_name(item)}")
    return item


BUILTINS["and"] = Func(lambda *a: next((x for x in a if not truth(x)), a[-1]), ("value",), "value")
BUILTINS["or"] = Func(lambda *a: next((x for x in a if truth(x)), a[-1]), ("value",), "value")
BUILTINS["print"] = Func(lambda *a: sprint(a), (), "any")
BUILTINS["println"] = Func(lambda *a: " ".join(show(x) for x in a) + "\n", (), "any")
BUILTINS["printf"] = Func(lambda f, *a: sprintf(f, a), ("string",), "any")


def _eval_args(args: Sequence[Any]) -> str:
    if len(args) == 1 and isinstance(args[0], str):
        return args[0]
    return sprint(["<no value>" if a is None or a is MISSING else a for a in args])


_HTML = {'"': "&#34;", "'": "&#39;", "&": "&amp;", "<": "&lt;", ">": "&gt;"}
BUILTINS["html"] = Func(lambda *a: "".join(_HTML.get(c, c) for c in _eval_args(a)), (), "value")


def _js(*args: Any) -> str:
    out = []
    for ch in _eval_args(args):
        if ch in "\\'\"":
            out.append("\\" + ch)
        elif ch in "<>":
            out.append("\\u003C" if ch == "<" else "\\u003E")
        elif ch in "&=":
            out.append("\\u0026" if ch == "&" else "\\u003D")
        elif ord(ch) < 0x20:
            out.append(f"\\u00{ord(ch):02X}")
        elif ord(ch) >= 0x80 and not ch.isprintable():
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return "".join(out)


BUILTINS["js"] = Func(_js, (), "value")


def _urlquery(*args: Any) -> str:
    safe = "-_.~"
    out = []
    for byte in _eval_args(args).encode():
        ch = chr(byte)
        if ch.isascii() and (ch.isalnum() or ch in safe):
            out.append(ch)
        else:
            out.append("+" if ch == " " else f"%{byte:02X}")
    return "".join(out)


BUILTINS["urlquery"] = Func(_urlquery, (), "value")
