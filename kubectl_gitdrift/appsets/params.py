"""Generator params as Argo CD's Go code shapes them: flattened with dots, printed with `%v`,
merged the ways mergo merges them, names normalized.

- `flatten` is jeremywohl/flatten's DotStyle (`a.b`, list items `a.0`; empty mappings and lists
  leave no key) with each leaf printed as Go's `fmt.Sprintf("%v")` prints it (`go_str`): numbers
  read from YAML or JSON are float64 in Go, so `8080` stays `8080` but `1000000` is `1e+06`,
  and null is `<nil>`.
- `override` is `mergo.Merge(dst, src, mergo.WithOverride)` over plain maps: src wins, mappings
  on both sides merge key by key.
- `fill` is `mergo.Merge(dst, src)` without override, as a generator's own `template` is filled
  from the ApplicationSet's: a field the generator's template leaves empty (absent, null, "",
  0, false, [] or {}) takes the ApplicationSet's; mappings merge key by key, anything else is
  kept as the generator's template has it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from kubectl_gitdrift.appsets import govalues

_INVALID_DNS = re.compile(r"[^-a-z0-9.]")
_RAW = frozenset({"valuesObject"})  # runtime.RawExtension in Go: merged as one value


def sanitize_name(name: str) -> str:
    """Argo CD's `SanitizeName` (the `*Normalized` params, the `normalize` function): lower
    case, anything but `[-a-z0-9.]` made `-`, at most 253 characters, `-` and `.` trimmed."""
    name = _INVALID_DNS.sub("-", name.lower())[:253]
    return name.strip("-.")


def go_str(value: Any) -> str:
    """`fmt.Sprintf("%v", value)` of a value decoded from JSON in Go."""
    if isinstance(value, str):
        return value
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return govalues.format_float(float(value))
    if isinstance(value, Mapping):
        items = " ".join(f"{k}:{go_str(value[k])}" for k in sorted(value, key=str))
        return f"map[{items}]"
    if isinstance(value, list | tuple):
        return "[" + " ".join(go_str(v) for v in value) + "]"
    return str(value)


def flatten(params: Mapping[str, Any]) -> dict[str, str]:
    """Nested params as one level of dotted keys, each value printed by `go_str`."""
    out: dict[str, str] = {}
    _flatten_into(out, params, "")
    return out


def _flatten_into(out: dict[str, str], nested: Any, prefix: str) -> None:
    items = (
        nested.items()
        if isinstance(nested, Mapping)
        else ((str(i), v) for i, v in enumerate(nested))
    )
    for key, value in items:
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping | list):
            _flatten_into(out, value, name)
        else:
            out[name] = go_str(value)


def override(dst: Mapping[str, Any], src: Mapping[str, Any]) -> dict[str, Any]:
    """dst merged with src, src winning; a mapping on both sides merges recursively."""
    out = dict(dst)
    for key, value in src.items():
        here = out.get(key)
        if isinstance(here, Mapping) and isinstance(value, Mapping):
            out[key] = override(here, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def fill(dst: Any, src: Any, *, key: str = "") -> Any:
    """dst with its empty fields taken from src (mergo.Merge without override)."""
    if _empty(dst):
        return copy.deepcopy(src) if not _empty(src) else dst
    if isinstance(dst, Mapping) and isinstance(src, Mapping) and key not in _RAW:
        out = dict(dst)
        for name, value in src.items():
            merged = fill(dst.get(name), value, key=name)
            if merged is not None or name in dst:
                out[name] = merged
        return out
    return dst


def _empty(value: Any) -> bool:
    return (
        value is None
        or value is False
        or (not isinstance(value, bool) and value in ("", 0))
        or (isinstance(value, Mapping | list) and not value)
    )
