"""Where `schema.Schema` gets its definitions: the built-in Kubernetes types shipped by the
kubernetes-validate package, or a cluster's own OpenAPI v3 document (CRDs included).

An I/O edge: reads package data. No kr8s: fetching a document from a cluster is `cluster.py`'s job.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from kubectl_gitdrift.errors import GitDriftError

__all__ = ["available_versions", "definitions_from_openapi_v3", "load_builtin_definitions"]

_PACKAGE = "kubernetes_validate"
_SCHEMA_DIR = "kubernetes-json-schema"
_DIR_RE = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-local$")
_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")
_REF_PREFIXES = ("#/components/schemas/", "#/definitions/")


def _parse_version(text: str) -> tuple[int, int, int | None]:
    """`"1.33"`, `"v1.33.5"`, `"v1.33.5+k3s1"` → (1, 33, 5|None)."""
    match = _VERSION_RE.match(text.strip())
    if match is None:
        raise GitDriftError(
            f"not a Kubernetes version: {text!r}", hint="use MAJOR.MINOR, e.g. --kube-version 1.33"
        )
    major, minor, patch = match.groups()
    return int(major), int(minor), None if patch is None else int(patch)


@functools.lru_cache(maxsize=1)
def _schema_root() -> Path:
    """kubernetes-validate's schema directory, found without importing the package (its import
    pulls in jsonschema and costs ~150 ms)."""
    spec = importlib.util.find_spec(_PACKAGE)
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    for location in locations:
        root = Path(location) / _SCHEMA_DIR
        if root.is_dir():
            return root
    raise GitDriftError(
        "the kubernetes-validate package (built-in Kubernetes schemas) is not installed",
        hint="pip install kubernetes-validate",
    )


def available_versions() -> tuple[tuple[int, int, int], ...]:
    """The Kubernetes versions whose schemas kubernetes-validate ships, oldest first."""
    names = [entry.name for entry in _schema_root().iterdir()]
    found = []
    for name in names:
        match = _DIR_RE.match(name)
        if match:
            major, minor, patch = (int(g) for g in match.groups())
            found.append((major, minor, patch))
    return tuple(sorted(found))


def _pick(requested: str) -> tuple[int, int, int]:
    """The newest shipped version not newer than `requested`; the newest of all if none is."""
    versions = available_versions()
    if not versions:
        raise GitDriftError(
            "kubernetes-validate ships no schemas", hint="pip install -U kubernetes-validate"
        )
    major, minor, patch = _parse_version(requested)
    limit = (major, minor, patch if patch is not None else 10**9)
    older = [v for v in versions if v <= limit]
    return older[-1] if older else versions[-1]


def load_builtin_definitions(kube_version: str = "1.33") -> Mapping[str, Any]:
    """The built-in type definitions (`$defs` of kubernetes-validate's `_definitions.json`) for the
    closest shipped Kubernetes version ≤ `kube_version` (the newest if all are newer).

    Loaded once per process and version; the mapping is read-only, its values must not be mutated.
    """
    return _load(_pick(kube_version))


@functools.lru_cache(maxsize=4)
def _load(version: tuple[int, int, int]) -> Mapping[str, Any]:
    """Read and parse one `_definitions.json` (about 1.4 MB, ~20 ms)."""
    directory = "v{}.{}.{}-local".format(*version)
    path = _schema_root() / directory / "_definitions.json"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GitDriftError(
            f"cannot read the built-in schemas for Kubernetes {directory}: {exc}",
            hint="pip install --force-reinstall kubernetes-validate",
        ) from exc
    definitions = document.get("$defs") or document.get("definitions") or {}
    return MappingProxyType(definitions)


def definitions_from_openapi_v3(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """Turn a cluster's OpenAPI v3 document (`GET /openapi/v3/apis/<group>/<version>`) into the
    shape `load_builtin_definitions` returns: name → schema, with `$ref`s rewritten to
    `#/$defs/<name>` and single-reference `allOf: [{$ref}]` wrappers unwrapped (their sibling keys
    such as `x-kubernetes-patch-strategy` kept beside the `$ref`).

    A Swagger 2.0 document (`definitions`, `#/definitions/...`) is accepted too. Merge the results
    of several group-version documents with `{**a, **b}`.
    """
    components = doc.get("components")
    schemas = components.get("schemas") if isinstance(components, Mapping) else None
    if schemas is None:
        schemas = doc.get("definitions")
    if not isinstance(schemas, Mapping):
        raise GitDriftError(
            "not an OpenAPI document: no components.schemas (v3) or definitions (v2)",
            hint="fetch it from /openapi/v3/apis/<group>/<version>",
        )
    return {str(name): _convert(body) for name, body in schemas.items()}


def _convert(node: Any) -> Any:
    """Copy a schema, normalizing `$ref` prefixes and unwrapping `allOf: [{$ref}]`."""
    if isinstance(node, list):
        return [_convert(item) for item in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    all_of = node.get("allOf")
    if (
        isinstance(all_of, list)
        and len(all_of) == 1
        and isinstance(all_of[0], Mapping)
        and set(all_of[0]) == {"$ref"}
        and "$ref" not in node
    ):
        out["$ref"] = _rewrite_ref(all_of[0]["$ref"])
        for key, value in node.items():
            if key != "allOf":
                out[key] = _convert(value)
        return out
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str):
            out[key] = _rewrite_ref(value)
        elif key in ("properties", "patternProperties", "definitions", "$defs") and isinstance(
            value, Mapping
        ):
            out[key] = {str(k): _convert(v) for k, v in value.items()}
        elif key in ("default", "example", "enum"):
            out[key] = value  # data, not schema
        else:
            out[key] = _convert(value)
    return out


def _rewrite_ref(ref: str) -> str:
    """`#/components/schemas/X` → `#/$defs/X`."""
    for prefix in _REF_PREFIXES:
        if ref.startswith(prefix):
            return "#/$defs/" + ref[len(prefix) :]
    return ref
