"""encoding/json and sigs.k8s.io/yaml as Argo CD's goTemplate functions write and read them.

`go_json` is json.Marshal (MarshalIndent with an indent): keys sorted, Go's float format, `<>&`
escaped unless raw. `to_yaml` is sigs.k8s.io/yaml's Marshal, which writes JSON and converts it
with yaml.v2: whole floats come out as ints, keys in yaml.v2's natural order (`a2` before
`a10`, non-letters before letters), strings that would read as something else double-quoted
(`"1e3"`, `"y"`, `"on"`), others plain or single-quoted as the emitter (PyYAML's here, libyaml's
port there) decides, lines as a literal block. `from_yaml` reads with the project's bounded
YAML loader and converts through JSON, every number a float64 as encoding/json decodes it.
Known difference: PyYAML reads `1e3` and `y`/`n` as strings where yaml.v2 reads a number and
booleans.
"""

from __future__ import annotations

import functools
import json
import math
import re
from datetime import datetime
from typing import Any

import yaml

from kubectl_gitdrift.appsets.govalues import (
    MISSING,
    FuncError,
    Int64,
    format_float,
    go_int,
    kind_name,
    type_name,
)
from kubectl_gitdrift.appsets.inputs import AppSetError
from kubectl_gitdrift.yamlio import load_any

__all__ = ["from_yaml", "go_json", "json_floats", "to_yaml"]


def go_json(v: Any, indent: str | None = None, html: bool = True, depth: int = 0) -> str:
    """encoding/json's Marshal (MarshalIndent with `indent`): keys sorted, Go's floats."""
    if v is None or v is MISSING:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        if not math.isfinite(v):
            raise FuncError(f"json: unsupported value: {format_float(v)}")
        text = format_float(v, "e" if v and not 1e-6 <= abs(v) < 1e21 else "f")
        return re.sub(r"e-0(\d)$", r"e-\1", text)
    if isinstance(v, str):
        text = json.dumps(v, ensure_ascii=False)
        if html:
            text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    if isinstance(v, datetime):
        return json.dumps(v.isoformat().replace("+00:00", "Z"))
    if isinstance(v, dict | list | tuple):
        is_map = isinstance(v, dict)
        items = [
            (go_json(k, None, html) + (": " if indent is not None else ":") if is_map else "")
            + go_json(v[k] if is_map else k, indent, html, depth + 1)
            for k in (sorted(v) if is_map else v)
        ]
        start, end = ("{", "}") if is_map else ("[", "]")
        if indent is None or not items:
            return start + ",".join(items) + end
        pad = "\n" + indent * (depth + 1)
        return start + pad + ("," + pad).join(items) + "\n" + indent * depth + end
    raise FuncError(f"json: unsupported type: {type_name(v)}")


def json_floats(v: Any) -> Any:
    """What encoding/json decodes into interface{}: every number a float64."""
    if isinstance(v, dict):
        return {k: json_floats(e) for k, e in v.items()}
    if isinstance(v, list):
        return [json_floats(e) for e in v]
    if isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    return v


class _GoYamlDumper(yaml.SafeDumper):
    """yaml.v2's choices where PyYAML's differ."""


def _yaml_str(dumper: yaml.SafeDumper, s: str) -> yaml.ScalarNode:
    """A literal block for lines; double quotes for what yaml.v2 reads as another type."""
    style = "|" if "\n" in s else '"' if _resolves_otherwise(dumper, s) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", s, style=style)


def _resolves_otherwise(dumper: yaml.SafeDumper, s: str) -> bool:
    if s in ("y", "Y", "n", "N") or _resolve(dumper, s) != _STR:
        return True
    if s[:1] not in "0123456789+-.":
        return False
    try:
        float(s.replace("_", ""))
    except ValueError:
        return go_int(s.replace("_", "")) is not None
    return True


def _resolve(dumper: yaml.SafeDumper, text: str) -> str:
    """The tag PyYAML reads a plain scalar as."""
    return str(dumper.resolve(yaml.ScalarNode, text, (True, False)))  # type: ignore[no-untyped-call]


_STR = "tag:yaml.org,2002:str"
_FLOAT = "tag:yaml.org,2002:float"


def _yaml_float(dumper: yaml.SafeDumper, f: float) -> yaml.ScalarNode:
    """strconv.FormatFloat(f, 'g', -1): `1e-07` is plain for yaml.v2 and PyYAML alike."""
    text = format_float(f)
    tag = _FLOAT if _resolve(dumper, text) == _FLOAT else _STR
    return dumper.represent_scalar(tag, text)


_GoYamlDumper.add_representer(str, _yaml_str)
_GoYamlDumper.add_representer(float, _yaml_float)
_GoYamlDumper.add_representer(Int64, yaml.SafeDumper.represent_int)


def _key_less(a: str, b: str) -> bool:
    """yaml.v2's keyList.Less for string keys: letters after other runes, digit runs by value."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x == y:
            continue
        if x.isalpha() or y.isalpha():
            return x < y if x.isalpha() and y.isalpha() else y.isalpha()
        an = bn = 0
        if "0" in (x, y):
            j = i - 1
            while j >= 0 and a[j].isdecimal():
                if a[j] != "0":
                    an = bn = 1
                    break
                j -= 1
        ai, bi = i, i
        while ai < len(a) and a[ai].isdecimal():
            an, ai = an * 10 + ord(a[ai]) - 48, ai + 1
        while bi < len(b) and b[bi].isdecimal():
            bn, bi = bn * 10 + ord(b[bi]) - 48, bi + 1
        if an != bn:
            return an < bn
        return ai < bi if ai != bi else x < y
    return len(a) < len(b)


def _key_cmp(a: str, b: str) -> int:
    return -1 if _key_less(a, b) else int(_key_less(b, a))


_KEY = functools.cmp_to_key(_key_cmp)


def _yaml_order(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _yaml_order(v[k]) for k in sorted(v, key=_KEY)}
    if isinstance(v, list):
        return [_yaml_order(e) for e in v]
    return v


def to_yaml(v: Any) -> str:
    """toYaml: sigs.k8s.io/yaml's Marshal, the trailing newline cut as Argo CD cuts it."""
    data = _yaml_order(json.loads(go_json(v)))
    text = yaml.dump(
        data, Dumper=_GoYamlDumper, default_flow_style=False, allow_unicode=True, sort_keys=False
    )
    return text.removesuffix("\n").removesuffix("\n...")


def _key_text(k: Any) -> str:
    """How sigs.k8s.io/yaml's YAML-to-JSON writes a non-string key."""
    if isinstance(k, str):
        return k
    if isinstance(k, bool) or k is None:
        return json.dumps(k)
    return format_float(k) if isinstance(k, float) else str(k)


def _string_keys(v: Any) -> Any:
    if isinstance(v, dict):
        return {_key_text(k): _string_keys(e) for k, e in v.items()}
    if isinstance(v, list):
        return [_string_keys(e) for e in v]
    return v


def from_yaml(s: str, want: type) -> Any:
    """fromYaml (want dict) and fromYamlArray (want list): the first document."""
    try:
        docs = load_any(s, "fromYaml", error=AppSetError)
    except AppSetError as err:
        raise FuncError(err.message) from None
    doc = docs[0] if docs else None
    if doc is None:
        return want()
    if not isinstance(doc, want):
        go = "map[string]interface {}" if want is dict else "[]interface {}"
        kind = {"map": "object", "slice": "array", "float64": "number", "int": "number"}.get(
            kind_name(doc), kind_name(doc)
        )
        why = f"json: cannot unmarshal {kind} into Go value of type {go}"
        raise FuncError(f"error unmarshaling JSON: while decoding JSON: {why}")
    return json_floats(json.loads(go_json(_string_keys(doc))))
