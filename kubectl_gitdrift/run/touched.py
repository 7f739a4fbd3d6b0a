"""Which Applications a change between two commits reaches: each app's inputs in this
repository, matched against the names `git diff --name-only base head` gives.

An app's inputs, per source of this repository (a source of another repository is not changed
by this one's commits): its path, and everything under it (the files directly in it, for a
directory source without `recurse`); a Helm chart's value files, `$ref/…` ones in the ref
source's tree, and its `file://` dependencies (theirs too); the kustomization directories
(bases, components) and resource files the kustomization reaches (sources/kustomize_closure.py
walks them), and everything under each (patches, generator files); a Jsonnet source's `libs`.
What is found on the tree of one side; the caller asks both (a base a change removes reaches
the app at base).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.errors import GitDriftError
from kubectl_gitdrift.sources import chart_deps, kustomize_closure
from kubectl_gitdrift.sources import render as source_render
from kubectl_gitdrift.sources.buildenv import build_env, envsubst

_GLOB = re.compile(r"[*?\[]")


@dataclass(frozen=True, slots=True)
class Inputs:
    """What of the repository an app renders from (repository-relative posix paths)."""

    trees: frozenset[str] = frozenset()  # directories: every file under them ("." the whole)
    flat: frozenset[str] = frozenset()  # directories: the files directly in them
    files: frozenset[str] = frozenset()

    def reached(self, changed: Iterable[str]) -> tuple[str, ...]:
        """The changed paths among the inputs, in the order given."""
        return tuple(p for p in changed if self.reaches(p))

    def reaches(self, path: str) -> bool:
        if path in self.files:
            return True
        parent = posixpath.dirname(path) or "."
        if parent in self.flat:
            return True
        if "." in self.trees:
            return True
        while parent != ".":
            if parent in self.trees:
                return True
            parent = posixpath.dirname(parent) or "."
        return False

    def reaches_any(self, paths: Paths) -> bool:
        """Some path of `paths` is an input (in time proportional to the inputs alone)."""
        if not paths.files:
            return False
        return (
            not self.files.isdisjoint(paths.files)
            or not self.flat.isdisjoint(paths.parents)
            or not self.trees.isdisjoint(paths.ancestors)
        )

    def __or__(self, other: Inputs) -> Inputs:
        return Inputs(self.trees | other.trees, self.flat | other.flat, self.files | other.files)


@dataclass(frozen=True, slots=True)
class Paths:
    """Files indexed for `Inputs.reaches_any`: every app asks about the same few hundred."""

    files: frozenset[str]
    parents: frozenset[str]  # the directory of each ("." at the top)
    ancestors: frozenset[str]  # every directory above each, "." included

    @classmethod
    def of(cls, files: Iterable[str]) -> Paths:
        listed = frozenset(files)
        parents = {posixpath.dirname(f) or "." for f in listed}
        ancestors = {"."} if listed else set()
        for parent in parents:
            while parent != "." and parent not in ancestors:
                ancestors.add(parent)
                parent = posixpath.dirname(parent) or "."
        return cls(listed, frozenset(parents), frozenset(ancestors))


def inputs(app: model.Application, tree: Path, ours: Callable[[str], bool]) -> Inputs:
    """The inputs of `app` in the exported `tree` of this repository; `ours(repoURL)` says
    whether a source's repository is this one. A source whose files cannot be read (its path
    is gone at this side) counts by its path alone."""
    trees: set[str] = set()
    flat: set[str] = set()
    files: set[str] = set()
    refs = {s.ref: s for s in app.sources if s.ref}
    for source in app.sources:
        if not ours(source.repo_url) or not source.path:  # a ref-only source has no path
            if source.chart and not source.path:
                helm = source_render.source_options(source).get("helm") or {}
                _helm_values(app, source, helm, None, tree, refs, ours, files, trees)
            continue
        try:
            path = source_render._clean_path(source.path)
        except GitDriftError:
            continue
        app_dir = tree if path == "." else tree / path
        blocks = source_render.source_options(source)
        try:
            kind = source_render.detect_type(blocks, app_dir, explicit_kind=source.kind)
        except GitDriftError:
            kind = "plugin"  # several tool blocks: it fails to render either way
        if kind == "kustomize" and app_dir.is_dir():
            closure = kustomize_closure.Closure.walk(tree, path)
            trees.update(closure.dirs or [path])
            files.update(closure.files)
        elif kind == "helm":
            trees.add(path)
            _chart_dependencies(tree, path, trees)
            helm = blocks.get("helm") or {}
            _helm_values(app, source, helm, path, tree, refs, ours, files, trees)
        elif kind == "directory":
            options = blocks.get("directory") or {}
            (trees if options.get("recurse") else flat).add(path)
            libs = (options.get("jsonnet") or {}).get("libs") or []
            for lib in libs if isinstance(libs, list) else []:
                trees.add(_rel(str(lib).lstrip("/")) if str(lib).startswith("/") else
                          _rel(posixpath.join(path, str(lib))))  # fmt: skip
        else:  # a config management plugin reads what it likes under its path
            trees.add(path)
    return Inputs(frozenset(trees), frozenset(flat), frozenset(files))


def spec_changed(base: Mapping[str, Any] | None, head: Mapping[str, Any] | None) -> bool:
    """The Application's own definition differs between the two sides (spec, or the
    metadata Argo CD acts on: labels, annotations, finalizers)."""
    if base is None or head is None:
        return base is not head
    return bool(_definition(base) != _definition(head))


def _definition(body: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    metadata = body.get("metadata") or {}
    kept = {k: metadata.get(k) for k in ("labels", "annotations", "finalizers")}
    return body.get("spec"), kept


def _helm_values(
    app: model.Application,
    source: model.AppSource,
    options: Mapping[str, Any],
    path: str | None,
    tree: Path,
    refs: Mapping[str, model.AppSource],
    ours: Callable[[str], bool],
    files: set[str],
    trees: set[str],
) -> None:
    """Value files: relative to the chart (`path`), absolute ones to the repository root,
    `$ref/…` to the ref source's repository (when it is this one); a glob counts by the
    directory before its first wildcard. `options`: the source's helm block."""
    env = build_env(app, source, "")
    for raw in (str(v) for v in options.get("valueFiles") or []):
        head, _, rest = raw.partition("/")
        if raw.startswith("$") and head[1:] in refs:
            if not ours(refs[head[1:]].repo_url):
                continue
            rel = _rel(envsubst(rest, env))
        elif path is None:
            continue  # a pulled chart's own value files are in the chart, not here
        elif raw.startswith("/"):
            rel = _rel(envsubst(raw.lstrip("/"), env))
        else:
            rel = _rel(posixpath.join(path, envsubst(raw, env)))
        if rel.startswith("../"):
            continue
        wildcard = _GLOB.search(rel)
        if wildcard is not None:
            trees.add(_rel(posixpath.dirname(rel[: wildcard.start()]) or "."))
        else:
            files.add(rel)


def _chart_dependencies(tree: Path, path: str, trees: set[str], depth: int = 0) -> None:
    """`file://` dependencies of the chart at `path` in this repository, and theirs."""
    if depth > 10:
        return
    for dep in chart_deps.dependencies(tree / path if path != "." else tree):
        repo = str(dep.get("repository") or "")
        if not repo.startswith("file://"):
            continue
        target = _rel(posixpath.join(path, repo.removeprefix("file://")))
        if target.startswith("../") or target in trees:
            continue
        trees.add(target)
        _chart_dependencies(tree, target, trees, depth + 1)


def _rel(path: str) -> str:
    return posixpath.normpath(path) if path else "."


def touched_by(base: Inputs | None, head: Inputs | None, changed: Sequence[str]) -> tuple[str, ...]:
    """The changed files that reach an app at either side (sorted)."""
    both = (base or Inputs()) | (head or Inputs())
    return tuple(sorted(both.reached(changed)))
