"""Argo CD directory sources: plain YAML/JSON files under the source path.

Follows `findManifests` in Argo CD's repo-server: `recurse` walks subdirectories; `exclude` is
matched before `include`, both gobwas-style globs against the path relative to the source path
(`*` also crosses `/`, `{a,b}` alternatives); only `*.yaml`, `*.yml`, `*.json` and `*.jsonnet`
are read (`disableExtensionFilter` reads every file); a file containing
`+argocd:skip-file-rendering` is skipped. `*.jsonnet` files are evaluated (sources/jsonnet.py).

A YAML file that is not a manifest is skipped as Argo CD's `getObjsFromYAMLOrJSON` skips it: when
its first document does not decode as a Kubernetes object (not a mapping, no `kind`, not YAML at
all) and the file does not contain all of `apiVersion:`, `kind:` and `metadata:` (a Helm values
file, a config file, a mkdocs.yml). After a valid object, a bad document is an error, and so is
a bad file that looks like a manifest. JSON files get no such leniency: Argo CD keeps a `*.json`
object without `kind` as a manifest (3.1+ reads it as a possible OCI image manifest, then appends
it anyway), and the controller then fails the whole comparison ("Object 'Kind' is missing"), so
here it is an error naming the file (exclude it with `directory.exclude`).

An object needs only a `kind` (Kubernetes' YAML-or-JSON decoder into an Unstructured): one with
no metadata or no metadata.name is kept with an empty name, as Argo CD keeps it. That is what a
`kustomization.yaml` with apiVersion and kind becomes under an explicit `directory:` block (or
in a subfolder with `recurse`): Argo CD shows it Missing and a sync fails on it
(builtin/missing-extraneous says so).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.model import Manifest, ObjectKey
from kubectl_gitdrift.sources import globs
from kubectl_gitdrift.sources.context import RenderContext

SKIP_MARKER = b"+argocd:skip-file-rendering"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
_MANIFEST_MARKERS = (b"apiVersion:", b"kind:", b"metadata:")

EvaluateJsonnet = Callable[[list[Path]], list[list[Manifest]]]
"""Evaluates `*.jsonnet` files of a source: each file's objects, in order."""


class Directory:
    """The directory renderer: `collect`, read back from the render cache for a commit (its
    files never change; the key holds everything else the objects depend on): parsing a
    source's YAML is the longest part of a warm run of a directory app (400 files: 0.1 s, the
    cached JSON 10 ms). A source with Jsonnet files to evaluate is not stored (the evaluator is
    not part of the key); the working tree is never cached. Jsonnet files are evaluated by the
    context's jsonnet renderer."""

    def render(self, ctx: RenderContext) -> list[Manifest]:
        jsonnet = ctx.jsonnet is not None
        cache = ctx.cache if ctx.revision is not None else None
        key = None
        if cache is not None:
            key = cache.key("directory", ctx.revision, ctx.path, ctx.options, ctx.env, jsonnet)
            hit = cache.get(key)
            if hit is not None:
                return hit
        noted = len(ctx.notes)
        objs = collect(
            ctx.tree, ctx.path, ctx.options, ctx.env, jsonnet=_jsonnet(ctx), notes=ctx.notes
        )
        recurse = bool(ctx.options.get("recurse"))
        noting = len(ctx.notes) != noted  # told each run: not stored
        evaluated = jsonnet and _has_jsonnet(ctx, recurse)
        if key is not None and cache is not None and not noting and not evaluated:
            cache.put(key, objs)
        return objs


def collect(
    tree: Path,
    app_path: str,
    options: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    jsonnet: EvaluateJsonnet | None = None,
    notes: list[str] | None = None,
) -> list[Manifest]:
    """The objects of the directory source at `tree/app_path`, origin = repo-relative file path.

    `env` is Argo CD's build environment, substituted into jsonnet extVars and TLAs. `jsonnet`
    evaluates the `*.jsonnet` files (the Directory renderer passes its context's jsonnet
    renderer); without it (argocd-cm `jsonnet.enable: "false"`), jsonnet files are skipped.
    `notes`: where a duplicate mapping key was kept at its last value (one line each)."""
    options = options or {}
    display = app_path.strip("/") or "."
    app_dir = tree / app_path if display != "." else tree
    recurse = bool(options.get("recurse"))
    include = str(options.get("include") or "")
    exclude = str(options.get("exclude") or "")
    no_filter = bool(options.get("disableExtensionFilter"))
    jsonnet_options = options.get("jsonnet")
    if jsonnet_options is not None and not isinstance(jsonnet_options, Mapping):
        raise SourceError(
            f"{display}: directory.jsonnet: mapping expected, got "
            f"{yamlio.type_name(jsonnet_options)}"
        )

    parts: list[list[Manifest] | Path] = []  # in walk order; a Path is a jsonnet file
    for path in _walk(app_dir, recurse):
        rel = path.relative_to(app_dir).as_posix()
        is_jsonnet = path.name.endswith(".jsonnet")
        if is_jsonnet and jsonnet is None:
            continue
        if not no_filter and not is_jsonnet and not path.name.endswith(MANIFEST_SUFFIXES):
            continue
        if not _selected(rel, include, exclude):
            continue
        repo_rel = _repo_rel(path, tree)
        if path.is_symlink() and not path.resolve().is_relative_to(tree.resolve()):
            raise SourceError(f"{repo_rel}: symlink points outside the repository")
        if not path.is_file():
            continue  # a dangling symlink, a fifo: Argo CD ignores them
        data = path.read_bytes()
        if SKIP_MARKER in data:
            continue
        if is_jsonnet:
            parts.append(path)
            continue
        parts.append(
            [
                Manifest(key=ObjectKey.of(body), body=body, origin=repo_rel)
                for body in _file_objects(data, repo_rel, path.name.endswith(".json"), notes)
            ]
        )
    files = [part for part in parts if isinstance(part, Path)]
    evaluated = iter(jsonnet(files) if jsonnet is not None and files else [])
    manifests: list[Manifest] = []
    for part in parts:
        manifests.extend(next(evaluated) if isinstance(part, Path) else part)
    return manifests


# --------------------------------------------------------------------------- internals


def _jsonnet(ctx: RenderContext) -> EvaluateJsonnet | None:
    """The context's jsonnet renderer, over the files `collect` hands it."""
    renderer = ctx.jsonnet
    if renderer is None:
        return None
    return lambda files: renderer.render_each(dataclasses.replace(ctx, files=tuple(files)))


def _has_jsonnet(ctx: RenderContext, recurse: bool) -> bool:
    """A `*.jsonnet` file in the source directory (or under it, with `recurse`)."""
    for _current, dirs, files in os.walk(ctx.app_dir):
        if not recurse:
            dirs.clear()
        if any(name.endswith(".jsonnet") for name in files):
            return True
    return False


def _file_objects(
    data: bytes, repo_rel: str, is_json: bool, notes: list[str] | None = None
) -> list[dict[str, Any]]:
    """The objects of one file, or none for a YAML/JSON file that is not a manifest. A key
    given twice keeps its last value, as in Argo CD, and is noted in `notes`."""
    if is_json and not data.strip():
        raise SourceError(
            f"{repo_rel}: empty JSON file: Argo CD fails to unmarshal it (EOF)",
            hint="leave the file out with spec.source.directory.exclude, or remove it",
        )
    duplicates: list[str] = []
    try:
        objs = yamlio.load_objects(data, repo_rel, unnamed=True, duplicates=duplicates)
    except SourceError:
        if not is_json and all(marker in data for marker in _MANIFEST_MARKERS):
            raise  # looks like a manifest: a broken one
        try:
            docs = [doc for doc in yamlio.load_any(data, repo_rel) if doc is not None]
        except SourceError:
            if is_json:
                raise
            return []  # not YAML at all, and not manifest-like
        if not docs or _decodes(docs[0]):
            raise  # the first document is an object (a later one is bad, or a field is)
        if is_json and not isinstance(docs[0], Mapping):
            raise  # Argo CD: "Failed to unmarshal"
        if is_json:
            raise SourceError(
                f"{repo_rel}: Object 'Kind' is missing: Argo CD reads every *.json file of a "
                "directory source as a manifest, and its comparison fails on this one "
                "(ComparisonError)",
                hint="leave the file out with spec.source.directory.exclude, or move it out "
                "of the source path",
            ) from None
        return []
    if notes is not None:
        notes.extend(
            f"{repo_rel}: {where}: the last value is used, as Argo CD's decoder keeps it"
            for where in duplicates
        )
    return objs


def _decodes(doc: Any) -> bool:
    """Would Kubernetes' YAML-or-JSON decoder read `doc` as an unstructured object?"""
    return isinstance(doc, Mapping) and isinstance(doc.get("kind"), str) and bool(doc["kind"])


def _selected(rel: str, include: str, exclude: str) -> bool:
    if exclude and globs.glob_match(exclude, rel):
        return False
    return not include or globs.glob_match(include, rel)


def _walk(app_dir: Path, recurse: bool) -> list[Path]:
    """Files in lexical order (as Go's filepath.Walk), `.git` skipped."""
    out: list[Path] = []
    for current, dirs, files in os.walk(app_dir, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != ".git") if recurse else []
        out.extend(Path(current) / f for f in files)
    return sorted(out, key=lambda p: p.relative_to(app_dir).as_posix())


def _repo_rel(path: Path, tree: Path) -> str:
    return path.relative_to(tree).as_posix()
