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
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.model import Manifest, ObjectKey
from kubectl_gitdrift.sources import jsonnet as jsonnet_source

SKIP_MARKER = b"+argocd:skip-file-rendering"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
_MANIFEST_MARKERS = (b"apiVersion:", b"kind:", b"metadata:")


def collect(
    tree: Path,
    app_path: str,
    options: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    jsonnet_enabled: bool = True,
) -> list[Manifest]:
    """The objects of the directory source at `tree/app_path`, origin = repo-relative file path.

    `env` is Argo CD's build environment, substituted into jsonnet extVars and TLAs; without
    `jsonnet_enabled` (argocd-cm `jsonnet.enable: "false"`) jsonnet files are skipped."""
    options = options or {}
    display = app_path.strip("/") or "."
    app_dir = tree / app_path if display != "." else tree
    recurse = bool(options.get("recurse"))
    include = str(options.get("include") or "")
    exclude = str(options.get("exclude") or "")
    no_filter = bool(options.get("disableExtensionFilter"))
    jsonnet = options.get("jsonnet")
    if jsonnet is not None and not isinstance(jsonnet, Mapping):
        raise SourceError(
            f"{display}: directory.jsonnet: mapping expected, got {yamlio.type_name(jsonnet)}"
        )

    parts: list[list[Manifest] | Path] = []  # in walk order; a Path is a jsonnet file
    for path in _walk(app_dir, recurse):
        rel = path.relative_to(app_dir).as_posix()
        is_jsonnet = path.name.endswith(".jsonnet")
        if is_jsonnet and not jsonnet_enabled:
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
                for body in _file_objects(data, repo_rel, path.name.endswith(".json"))
            ]
        )
    files = [part for part in parts if isinstance(part, Path)]
    evaluated = iter(jsonnet_source.evaluate_all(files, tree, app_dir, jsonnet, env or {}))
    manifests: list[Manifest] = []
    for part in parts:
        manifests.extend(next(evaluated) if isinstance(part, Path) else part)
    return manifests


def glob_match(pattern: str, text: str) -> bool:
    """gobwas/glob without separators: `*`/`**` any run of characters (`/` included), `?` one
    character, `[abc]`/`[!a-z]` classes, `{a,b}` alternatives, `\\` escapes."""
    return _compile(pattern).fullmatch(text) is not None


def has_glob(path: str) -> bool:
    """Argo CD's isGlobPath: `*`, `?` or `[` (doublestar's metacharacters)."""
    return any(c in path for c in "*?[")


def filepath_glob(pattern: str) -> list[Path]:
    """doublestar.FilepathGlob: the files matching the absolute `pattern` (`*`, `?`, `[…]`,
    `{a,b}` within one path segment, `**` any number of directories), in its walk order (each
    directory's own matches first, then its subdirectories, entries in lexical order)."""
    parts = [p for p in Path(pattern).parts]
    base = Path(parts[0])
    segments = parts[1:]
    while segments and not has_glob(segments[0]) and "{" not in segments[0]:
        base = base / segments[0]
        segments = segments[1:]
    if not segments:
        return [base] if base.is_file() else []
    out: list[Path] = []
    _glob_into(base, segments, out)
    seen: set[Path] = set()
    return [p for p in out if not (p in seen or seen.add(p))]  # type: ignore[func-returns-value]


# --------------------------------------------------------------------------- internals


def _glob_into(directory: Path, segments: Sequence[str], out: list[Path]) -> None:
    if not directory.is_dir():
        return
    head, rest = segments[0], segments[1:]
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    if head == "**":
        if rest:
            _glob_into(directory, rest, out)
        else:
            out.extend(Path(e.path) for e in entries if e.is_file())
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                _glob_into(Path(entry.path), segments, out)
        return
    for entry in entries:
        if not _compile(head).fullmatch(entry.name):  # a name has no `/`: `*` stays in it
            continue
        if rest:
            if entry.is_dir():
                _glob_into(Path(entry.path), rest, out)
        elif entry.is_file():
            out.append(Path(entry.path))


def _file_objects(data: bytes, repo_rel: str, is_json: bool) -> list[dict[str, Any]]:
    """The objects of one file, or none for a YAML/JSON file that is not a manifest."""
    if is_json and not data.strip():
        raise SourceError(
            f"{repo_rel}: empty JSON file: Argo CD fails to unmarshal it (EOF)",
            hint="leave the file out with spec.source.directory.exclude, or remove it",
        )
    try:
        return yamlio.load_objects(data, repo_rel)
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


def _decodes(doc: Any) -> bool:
    """Would Kubernetes' YAML-or-JSON decoder read `doc` as an unstructured object?"""
    return isinstance(doc, Mapping) and isinstance(doc.get("kind"), str) and bool(doc["kind"])


def _selected(rel: str, include: str, exclude: str) -> bool:
    if exclude and glob_match(exclude, rel):
        return False
    return not include or glob_match(include, rel)


def _walk(app_dir: Path, recurse: bool) -> list[Path]:
    """Files in lexical order (as Go's filepath.Walk), `.git` skipped."""
    out: list[Path] = []
    for current, dirs, files in os.walk(app_dir, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != ".git") if recurse else []
        out.extend(Path(current) / f for f in files)
    return sorted(out, key=lambda p: p.relative_to(app_dir).as_posix())


def _repo_rel(path: Path, tree: Path) -> str:
    return path.relative_to(tree).as_posix()


@functools.lru_cache(maxsize=64)
def _compile(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    depth = 0
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "*":
            while i + 1 < len(pattern) and pattern[i + 1] == "*":
                i += 1
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    out.extend(")" * depth)
    return re.compile("".join(out), re.DOTALL)
