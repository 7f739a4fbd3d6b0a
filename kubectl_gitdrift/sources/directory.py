"""Argo CD directory sources: plain YAML/JSON files under the source path.

Follows `findManifests` in Argo CD's repo-server: `recurse` walks subdirectories; `exclude` is
matched before `include`, both gobwas-style globs against the path relative to the source path
(`*` also crosses `/`, `{a,b}` alternatives); only `*.yaml`, `*.yml` and `*.json` are read; a file
containing `+argocd:skip-file-rendering` is skipped. Jsonnet is not supported yet.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.model import Manifest, ObjectKey

SKIP_MARKER = b"+argocd:skip-file-rendering"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def collect(tree: Path, app_path: str, options: Mapping[str, Any] | None = None) -> list[Manifest]:
    """The objects of the directory source at `tree/app_path`, origin = repo-relative file path."""
    options = options or {}
    display = app_path.strip("/") or "."
    app_dir = tree / app_path if display != "." else tree
    recurse = bool(options.get("recurse"))
    include = str(options.get("include") or "")
    exclude = str(options.get("exclude") or "")
    no_filter = bool(options.get("disableExtensionFilter"))
    jsonnet = options.get("jsonnet")
    if isinstance(jsonnet, Mapping) and any(jsonnet.values()):
        raise SourceError(f"{display}: jsonnet sources are not supported yet")

    manifests: list[Manifest] = []
    for path in _walk(app_dir, recurse):
        rel = path.relative_to(app_dir).as_posix()
        if path.name.endswith(".jsonnet"):
            if _selected(rel, include, exclude):
                raise SourceError(
                    f"{_repo_rel(path, tree)}: jsonnet sources are not supported yet",
                    hint="exclude the file with spec.source.directory.exclude to diff the rest",
                )
            continue
        if not no_filter and not path.name.endswith(MANIFEST_SUFFIXES):
            continue
        if not _selected(rel, include, exclude):
            continue
        repo_rel = _repo_rel(path, tree)
        if path.is_symlink() and not path.resolve().is_relative_to(tree.resolve()):
            raise SourceError(f"{repo_rel}: symlink points outside the repository")
        data = path.read_bytes()
        if SKIP_MARKER in data:
            continue
        for body in yamlio.load_objects(data, repo_rel):
            manifests.append(Manifest(key=ObjectKey.of(body), body=body, origin=repo_rel))
    return manifests


def glob_match(pattern: str, text: str) -> bool:
    """gobwas/glob without separators: `*`/`**` any run of characters (`/` included), `?` one
    character, `[abc]`/`[!a-z]` classes, `{a,b}` alternatives, `\\` escapes."""
    return _compile(pattern).fullmatch(text) is not None


# --------------------------------------------------------------------------- internals


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
