"""Jsonnet files of a directory source, evaluated as Argo CD's repo-server evaluates them.

Follows `makeJsonnetVM` and `findManifests` in Argo CD's reposerver/repository/repository.go,
with the same implementation (go-jsonnet, through the `gojsonnet` bindings):

- `directory.jsonnet.extVars` and `tlas`: `{name, value, code}`; the value is env-substituted
  with the build environment (`$ARGOCD_APP_NAME`, …) first; `code: true` passes it as Jsonnet
  code, else as a string.
- import search path: the importing file's directory, then `libs` (relative to the repository
  root) in reverse order, then the source path (go-jsonnet's FileImporter searches its JPaths
  last first; Argo CD passes `[appPath, *libs]`).
- the result is a JSON array of objects or one object (`*List` kinds are flattened, as Argo CD
  does for every source).

One difference, on purpose: an import that resolves outside the repository (an absolute path,
`../` past the root, a symlink out) is an error here; Argo CD's FileImporter would read it from
the repo-server's disk, gitdrift would read it from yours and show it in the report.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import _gojsonnet  # type: ignore[import-not-found]  # go-jsonnet's bindings (no type stubs)

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.model import Manifest, ObjectKey
from kubectl_gitdrift.sources.kustomize import envsubst

MAX_STACK = 500  # go-jsonnet's default


def evaluate(
    file: Path,
    tree: Path,
    app_dir: Path,
    options: Mapping[str, Any] | None,
    env: Mapping[str, str],
) -> list[Manifest]:
    """The objects `file` (a `.jsonnet` file under `app_dir` in `tree`) evaluates to."""
    rel = file.relative_to(tree).as_posix()
    options = options or {}
    ext_vars, ext_codes = _variables(options.get("extVars"), "extVars", rel, env)
    tla_vars, tla_codes = _variables(options.get("tlas"), "tlas", rel, env)
    jpaths = [app_dir.absolute(), *(_lib(lib, tree, rel) for lib in _libs(options, rel))]
    importer = _Importer(tree, jpaths)
    try:
        text = _gojsonnet.evaluate_file(
            str(file.absolute()),
            max_stack=MAX_STACK,
            ext_vars=ext_vars,
            ext_codes=ext_codes,
            tla_vars=tla_vars,
            tla_codes=tla_codes,
            import_callback=importer,
        )
    except (RuntimeError, UnicodeDecodeError) as exc:
        # the bindings garble long messages raised by an import callback: the importer keeps
        # its own account of what it refused
        detail = importer.problem or _first_line(str(exc), tree)
        raise SourceError(
            f"{rel}: jsonnet: {detail}",
            hint="check the file with `jsonnet` (the Application's extVars, tlas and libs apply)",
        ) from None
    return _objects(text, rel)


# --------------------------------------------------------------------------- internals


class _Importer:
    """go-jsonnet's FileImporter (the importing file's directory, then the JPaths last first),
    confined to the repository tree."""

    def __init__(self, tree: Path, jpaths: Sequence[Path]) -> None:
        self.problem = ""  # why the last import failed, in full
        self.tree = tree.absolute()
        self.real_tree = tree.resolve()
        self.jpaths = list(jpaths)

    def __call__(self, base: str, rel: str) -> tuple[str, bytes]:
        if Path(rel).is_absolute():
            candidates = [Path(rel)]
        else:
            candidates = [Path(base or ".") / rel, *(p / rel for p in reversed(self.jpaths))]
        for candidate in candidates:
            path = Path(os.path.normpath(candidate.absolute()))
            if not path.is_file():
                continue
            if not (
                path.is_relative_to(self.tree) and path.resolve().is_relative_to(self.real_tree)
            ):
                self.problem = f"import {rel!r} resolves outside the repository"
                raise RuntimeError("import refused")
            return str(path), path.read_bytes()
        self.problem = (
            f"couldn't open import {rel!r}: no match locally or in the Jsonnet library paths"
        )
        raise RuntimeError("import not found")


def _variables(
    raw: Any, field: str, rel: str, env: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """(string values, code values) of `extVars` or `tlas`, the last of a name winning."""
    strings: dict[str, str] = {}
    codes: dict[str, str] = {}
    if raw is None:
        return strings, codes
    if not isinstance(raw, list):
        raise SourceError(
            f"{rel}: directory.jsonnet.{field}: list expected, got {yamlio.type_name(raw)}"
        )
    for entry in raw:
        if (
            not isinstance(entry, Mapping)
            or not isinstance(entry.get("name"), str)
            or not entry["name"]
        ):
            raise SourceError(f"{rel}: directory.jsonnet.{field}: entry {entry!r} has no name")
        name = str(entry["name"])
        value = envsubst(_text(entry.get("value")), env)
        strings.pop(name, None)
        codes.pop(name, None)
        (codes if entry.get("code") else strings)[name] = value
    return strings, codes


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _libs(options: Mapping[str, Any], rel: str) -> list[str]:
    libs = options.get("libs")
    if libs is None:
        return []
    if not isinstance(libs, list):
        raise SourceError(
            f"{rel}: directory.jsonnet.libs: list expected, got {yamlio.type_name(libs)}"
        )
    return [str(lib) for lib in libs]


def _lib(lib: str, tree: Path, rel: str) -> Path:
    """A `libs` entry, relative to the repository root (Argo CD's ResolveFileOrDirectoryPath)."""
    root = tree.absolute()
    path = Path(os.path.normpath(root / lib.lstrip("/")))
    if not path.is_relative_to(root) or (
        path.exists() and not path.resolve().is_relative_to(tree.resolve())
    ):
        raise SourceError(
            f"{rel}: directory.jsonnet.libs entry {lib!r} points outside the repository"
        )
    return path


def _first_line(message: str, tree: Path) -> str:
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    line = lines[0] if lines else "evaluation failed"
    for prefix in sorted({str(tree.absolute()), str(tree.resolve())}, key=len, reverse=True):
        line = line.replace(prefix + "/", "")
    return line


def _objects(text: str, rel: str) -> list[Manifest]:
    try:
        value = json.loads(text)
    except ValueError as exc:  # go-jsonnet always writes JSON; kept for safety
        raise SourceError(f"{rel}: jsonnet output is not JSON: {exc}") from None
    items = value if isinstance(value, list) else [value]
    manifests: list[Manifest] = []
    for index, item in enumerate(items):
        if item is None:
            continue
        if not isinstance(item, dict):
            where = f"[{index}]" if isinstance(value, list) else "the result"
            raise SourceError(
                f"{rel}: jsonnet {where}: object expected, got {yamlio.type_name(item)}"
            )
        for body in yamlio.load_objects(json.dumps(item), rel):
            manifests.append(Manifest(key=ObjectKey.of(body), body=body, origin=rel))
    return manifests
