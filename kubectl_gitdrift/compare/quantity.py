"""Kubernetes `resource.Quantity` canonical form, as apimachinery's Go code prints it.

Argo CD decodes every built-in object into its Go type before diffing (gitops-engine `remarshal`),
so a Quantity written as `0.2` in git is compared as `"200m"`. `canonical` reproduces
`ParseQuantity(s).String()` from `k8s.io/apimachinery/pkg/api/resource/quantity.go`, quirks
included:

- the format (DecimalSI `k`/`M`/`m`, BinarySI `Ki`/`Mi`, DecimalExponent `e3`) comes from the
  input's suffix; values are kept exactly, only values finer than 1n are rounded up (away from
  zero);
- a string that is already canonical is kept byte for byte, even when it is not the shortest form
  (`10.035M`, `+5`, `1.G` stay as written, as Go caches the input string in that case);
- the API server additionally rounds ResourceList values (`resources.requests/limits`, quotas) up to
  milli precision (`SetDefaults_ResourceList`); `canonical_resource` does that too (`0.1m` → `1m`).

Pure: no I/O. Every function returns None for a value Go would reject.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import lru_cache

__all__ = ["canonical", "canonical_resource", "is_quantity"]

_DECIMAL_SI = "DecimalSI"
_BINARY_SI = "BinarySI"
_DECIMAL_EXPONENT = "DecimalExponent"

# suffix -> (base, exponent); the suffix "" means base 10, exponent 0 (DecimalSI)
_DEC_SUFFIXES: dict[str, int] = {
    "n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18,
}  # fmt: skip
_BIN_SUFFIXES: dict[str, int] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DEC_BY_EXPONENT = {e: s for s, e in _DEC_SUFFIXES.items()}
_BIN_BY_EXPONENT = {e: s for s, e in _BIN_SUFFIXES.items()}

_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_NANO = 10**9
_MAX_INT64 = 2**63 - 1
_MIN_INT64 = -(2**63)
_MAX_INT64_FACTORS = 18  # digits that always fit in an int64


@dataclass(frozen=True, slots=True)
class _Quantity:
    """A parsed quantity: exact value in nano units, Go's format, and the cached input string."""

    nanos: int  # value * 10**9, exact (Go rounds anything finer than 1n up)
    fmt: str
    cached: str | None  # Go's `q.s`: the input, reused verbatim when already canonical
    int_scale: int | None  # decimal scale of Go's int64Amount form; None for the inf.Dec form


# --------------------------------------------------------------------------- public API


def canonical(value: str | float) -> str | None:
    """The string Go's `resource.Quantity` marshals `value` to after parsing it from JSON.

    Strings are parsed as written (surrounding whitespace trimmed, as `UnmarshalJSON` does); JSON
    numbers (int or float) are first spelled the way Go's encoding/json spells them
    (`1000.0` → `1000`).
    Returns None when Go would fail to decode the value (`"1.1.M"`, `"aoeu"`, `True`, NaN).
    Memoized for str, int and float (objects repeat the same few quantities).
    """
    cls = type(value)
    if cls is str or cls is int or cls is float:
        return _canonical_memo(value)
    return _canonical(value)


def _canonical(value: str | float) -> str | None:
    text = _as_text(value)
    if text is None:
        return None
    q = _parse(text)
    return None if q is None else _to_string(q)


_canonical_memo = lru_cache(maxsize=4096, typed=True)(_canonical)  # typed: 1, 1.0 apart


def canonical_resource(value: str | float) -> str | None:
    """Like `canonical`, then rounded up to milli precision as the API server's defaulting does for
    `ResourceList` values (container `resources.requests`/`limits`, quotas): `0.1m` → `1m`."""
    text = _as_text(value)
    if text is None:
        return None
    q = _parse(text)
    return None if q is None else _to_string(_round_up(q, -3))


def is_quantity(value: object) -> bool:
    """True when Go would accept `value` (a string or JSON number) as a `resource.Quantity`."""
    if not isinstance(value, str | int | float):
        return False
    return canonical(value) is not None


# --------------------------------------------------------------------------- input spelling


def _as_text(value: str | float) -> str | None:
    """The text Go's `Quantity.UnmarshalJSON` sees for a decoded JSON value."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    return None


def _go_float(f: float) -> str | None:
    """Go's `encoding/json` spelling of a float64: shortest digits, `%f` style between 1e-6 and
    1e21, `%e` style (with `e-07` cleaned to `e-7`) outside."""
    if math.isnan(f) or math.isinf(f):
        return None
    if f == 0:
        return "0"
    shortest = repr(f)
    if 1e-6 <= abs(f) < 1e21:
        return format(Decimal(shortest).normalize(), "f")
    mantissa, _, exponent = shortest.partition("e")
    sign = exponent[0]
    digits = exponent[1:].lstrip("0") or "0"
    if sign == "+" and len(digits) < 2:
        digits = digits.rjust(2, "0")
    return f"{mantissa}e{sign}{digits}"


# --------------------------------------------------------------------------- parsing


def _scan(text: str) -> tuple[bool, str, str, str, str] | None:
    """Port of Go's `parseQuantityString`: (positive, value, num, denom, suffix) or None."""
    positive = True
    pos = 0
    end = len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1
    # strip leading zeros
    while True:
        if pos >= end:
            return positive, "0", "0", "", ""
        if text[pos] != "0":
            break
        pos += 1
    # numerator
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos >= end:
        return positive, text, text[start:], "", ""
    num = text[start:pos] or "0"
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos >= end:
        return positive, value, num, denom, text[suffix_start:]
    if text[pos] in "+-":
        pos += 1
    while pos < end:
        if text[pos] not in _DIGITS:
            return None  # not a valid exponent
        pos += 1
    return positive, value, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, str] | None:
    """(base, exponent, format) for a suffix, as Go's `quantitySuffixer.interpret`."""
    if suffix in _DEC_SUFFIXES:
        return 10, _DEC_SUFFIXES[suffix], _DECIMAL_SI
    if suffix in _BIN_SUFFIXES:
        return 2, _BIN_SUFFIXES[suffix], _BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        rest = suffix[1:]
        body = rest[1:] if rest[0] in "+-" else rest
        if not body or not set(body) <= _DIGITS:
            return None
        parsed = int(rest)
        if not _MIN_INT64 <= parsed <= _MAX_INT64:
            return None
        exponent = (parsed + 2**31) % 2**32 - 2**31  # Go's int32(parsed) conversion wraps
        return 10, exponent, _DECIMAL_EXPONENT
    return None


def _parse(text: str) -> _Quantity | None:
    """Port of Go's `ParseQuantity`, keeping the value exactly (in nano units)."""
    if not text:
        return None
    if text == "0":
        return _Quantity(0, _DECIMAL_SI, "0", 0)
    scanned = _scan(text)
    if scanned is None:
        return None
    positive, value, num, denom, suf = scanned
    interpreted = _interpret(suf)
    if interpreted is None:
        return None
    base, exponent, fmt = interpreted

    fast = _parse_fast(text, positive, num, denom, exponent, fmt)
    if fast is not None:
        return fast

    # slow path (inf.Dec): exact value, rounded up to 1n, capped for BinarySI
    try:
        amount = Fraction(Decimal(value))
    except (InvalidOperation, ValueError):
        return None
    amount *= Fraction(10) ** exponent if base == 10 else Fraction(2) ** exponent
    sign = -1 if amount < 0 else 1
    nanos = _ceil(abs(amount) * _NANO)
    if fmt == _BINARY_SI and nanos > _MAX_INT64 * _NANO:
        nanos = _MAX_INT64 * _NANO
    if fmt == _BINARY_SI and 0 < nanos < _NANO:
        fmt = _DECIMAL_SI
    return _Quantity(sign * nanos, fmt, None, None)


def _parse_fast(
    text: str, positive: bool, num: str, denom: str, exponent: int, fmt: str
) -> _Quantity | None:
    """Go's int64 fast path of `ParseQuantity`; None when Go would fall back to inf.Dec."""
    mantissa = 1
    if fmt == _BINARY_SI:
        scale = 0
        if exponent >= 0 and not denom:
            mantissa = 1 << exponent
            # float32(exponent)*3/10 truncated toward zero, as Go's int32 conversion does
            precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        else:
            precision = -1
    else:
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    if precision < 0:
        return None
    scale -= len(denom)
    if scale < -9:
        return None
    shifted = num + denom
    parsed = int(shifted)  # at most 18 digits here, always fits an int64
    result = parsed * mantissa
    if result > _MAX_INT64:
        return None  # int64Multiply overflowed: Go takes the inf.Dec path
    if not positive:
        result = -result
    nanos = result * 10 ** (scale + 9)
    cached: str | None = None
    if fmt == _BINARY_SI:
        if exponent % 10 == 0 and parsed & 0x07 != 0:
            cached = text
    elif scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
        cached = text
    return _Quantity(nanos, fmt, cached, scale)


def _ceil(x: Fraction) -> int:
    """Smallest integer >= x, for non-negative x."""
    return -((-x.numerator) // x.denominator)


# --------------------------------------------------------------------------- printing


def _round_up(q: _Quantity, scale: int) -> _Quantity:
    """Go's `Quantity.RoundUp(scale)`: round away from zero to 10**scale; keeps the cached string
    when the int64 form is already at that scale."""
    if q.int_scale is not None and q.int_scale >= scale:
        return q
    step = 10 ** (scale + 9)
    magnitude = -(-abs(q.nanos) // step) * step
    new_scale = None if q.int_scale is None else scale
    return _Quantity(magnitude if q.nanos >= 0 else -magnitude, q.fmt, None, new_scale)


def _remove_factors(value: int, base: int) -> tuple[int, int]:
    """(value / base**n, n) for the largest n; value >= 0."""
    times = 0
    while value >= base and value % base == 0:
        value //= base
        times += 1
    return value, times


def _to_string(q: _Quantity) -> str:
    """Go's `Quantity.String()`: the cached input if any, else the canonical form."""
    if q.cached is not None:
        return q.cached
    if q.nanos == 0:
        return "0"
    sign = "-" if q.nanos < 0 else ""
    magnitude = abs(q.nanos)
    fmt = q.fmt
    if fmt == _BINARY_SI:
        if magnitude < 1024 * _NANO or magnitude % _NANO != 0:
            fmt = _DECIMAL_SI  # small or fractional binary values are shown as DecimalSI
        else:
            amount, times = _remove_factors(magnitude // _NANO, 1024)
            return f"{sign}{amount}{_BIN_BY_EXPONENT.get(times * 10, '')}"
    amount, times = _remove_factors(magnitude, 10)
    exponent = times - 9
    shift = exponent % 3  # Python's modulo: round the exponent down to a multiple of 3
    amount *= 10**shift
    exponent -= shift
    if fmt == _DECIMAL_EXPONENT:
        suffix = f"e{exponent}" if exponent else ""
    else:
        # Go prints no suffix at all when none exists (e.g. 1e21 as DecimalSI): kept as is
        suffix = _DEC_BY_EXPONENT.get(exponent, "")
    return f"{sign}{amount}{suffix}"
