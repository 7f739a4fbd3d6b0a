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

The files of one source are evaluated in one child process (sources/jsonnet_child.py), under the
kustomize time-out, the output limit and a memory limit (MAX_MEMORY): Jsonnet can recurse for
ever (tail calls) or build huge values, and a source must not hang or exhaust gitdrift or the
machine.

One difference, on purpose: an import that resolves outside the repository (an absolute path,
`../` past the root, a symlink out) is an error here; Argo CD's FileImporter would read it from
the repo-server's disk, gitdrift would read it from yours and show it in the report.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.model import Manifest, ObjectKey
from kubectl_gitdrift.settings import KUSTOMIZE_TIMEOUT_ENV, Settings
from kubectl_gitdrift.sources import process
from kubectl_gitdrift.sources.buildenv import envsubst
from kubectl_gitdrift.sources.context import RenderContext

MAX_STACK = 500  # go-jsonnet's default
MAX_MEMORY = 2 << 30  # bytes of heap one source's evaluation may use
_NO_MEMORY = ("fatal error: runtime: cannot allocate memory", "fatal error: runtime: out of memory")


def evaluate(
    file: Path,
    tree: Path,
    app_dir: Path,
    options: Mapping[str, Any] | None,
    env: Mapping[str, str],
    *,
    settings: Settings | None = None,
) -> list[Manifest]:
    """The objects `file` (a `.jsonnet` file under `app_dir` in `tree`) evaluates to."""
    return evaluate_all([file], tree, app_dir, options, env, settings=settings)[0]


def evaluate_all(
    files: Sequence[Path],
    tree: Path,
    app_dir: Path,
    options: Mapping[str, Any] | None,
    env: Mapping[str, str],
    *,
    settings: Settings | None = None,
) -> list[list[Manifest]]:
    """The objects of each of `files`, evaluated in order in one child process, bounded by the
    kustomize time-out of `settings` (default: this process's environment, read now) and the
    output limit (Jsonnet can recurse for ever, or build huge values); the first file that
    fails is the error."""
    if not files:
        return []
    options = options or {}
    rel = files[0].relative_to(tree).as_posix()
    ext_vars, ext_codes = _variables(options.get("extVars"), "extVars", rel, env)
    tla_vars, tla_codes = _variables(options.get("tlas"), "tlas", rel, env)
    jpaths = [app_dir.absolute(), *(_lib(lib, tree, rel) for lib in _libs(options, rel))]
    request = {
        "tree": str(tree.absolute()),
        "jpaths": [str(p) for p in jpaths],
        "files": [str(f.absolute()) for f in files],
        "ext_vars": ext_vars,
        "ext_codes": ext_codes,
        "tla_vars": tla_vars,
        "tla_codes": tla_codes,
    }
    display = app_dir.relative_to(tree).as_posix() if app_dir != tree else "."
    results = _run_child(request, display, settings or Settings.from_environ())
    out: list[list[Manifest]] = []
    for file, result in zip(files, results, strict=False):
        file_rel = file.relative_to(tree).as_posix()
        if "error" in result:
            raise SourceError(
                f"{file_rel}: jsonnet: {_first_line(str(result['error']), tree)}",
                hint="check the file with `jsonnet` (the Application's extVars, tlas and libs "
                "apply)",
            )
        out.append(_objects(str(result["ok"]), file_rel))
    if len(out) != len(files):
        raise SourceError(f"{display}: jsonnet evaluation ended early (no result for every file)")
    return out


class Jsonnet:
    """The Jsonnet renderer: the `*.jsonnet` files of a directory source (`ctx.files`, which
    sources/directory.py selects), under the source's `directory.jsonnet` options."""

    def render(self, ctx: RenderContext) -> list[Manifest]:
        return [manifest for objs in self.render_each(ctx) for manifest in objs]

    def render_each(self, ctx: RenderContext) -> list[list[Manifest]]:
        options, settings = ctx.options.get("jsonnet"), ctx.settings
        return evaluate_all(ctx.files, ctx.tree, ctx.app_dir, options, ctx.env, settings=settings)


# --------------------------------------------------------------------------- internals


_CHILD = Path(__file__).with_name("jsonnet_child.py")  # run as a script: no package imports


def _run_child(
    request: Mapping[str, Any], display: str, settings: Settings
) -> list[dict[str, Any]]:
    fd, name = tempfile.mkstemp(prefix="gitdrift-jsonnet-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(request, handle)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        proc = process.run_bounded(
            [sys.executable, str(_CHILD), name, str(MAX_STACK), str(MAX_MEMORY)],
            cwd=Path(str(request["tree"])),
            env=env,
            timeout=settings.kustomize_timeout(),
            what=f"jsonnet evaluation of {display}",
            limit=yamlio.MAX_BYTES,
            hint=f"raise {KUSTOMIZE_TIMEOUT_ENV} if the jsonnet needs longer",
        )
    finally:
        Path(name).unlink()
    try:
        results = json.loads(proc.stdout)
    except ValueError:
        results = None
    if proc.returncode != 0 or not isinstance(results, list):
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        if any(line.startswith(_NO_MEMORY) for line in tail):
            raise SourceError(
                f"{display}: jsonnet evaluation ran out of memory "
                f"(more than {MAX_MEMORY >> 20} MiB)",
                hint="the jsonnet builds a value too large to render",
            )
        fatal = [line for line in tail if line.startswith("fatal error:")]
        tail = fatal[:1] or tail
        raise SourceError(
            f"{display}: jsonnet evaluation failed (exit {proc.returncode}): "
            f"{tail[-1] if tail else 'no output'}"
        )
    return [r for r in results if isinstance(r, dict)]


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
