"""What a kustomization reaches, walked without running kustomize: the files, bases, components
and generators it names.

The walk decides three things about a build (sources/kustomize.py): the object count, which
decides whether kustomize adds originAnnotations (they double its time past a few hundred
objects, kubernetes-sigs/kustomize#5988); each object's origin file by kind and name when it
does not; and what kustomize would download (a remote base, a chart from a repository), which
--offline refuses and the render cache never stores. `check_inside` refuses a base outside the
tree before kustomize reads it.
"""

from __future__ import annotations

import contextlib
import posixpath
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import GitDriftError, SourceError

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def find_kustomization(directory: Path) -> Path | None:
    """The kustomization file in `directory`, if any (kustomize's own lookup order)."""
    for name in KUSTOMIZATION_FILES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


_KIND_LINE = re.compile(rb"(?m)^kind:")
_URL_LIKE = re.compile(r"^[a-z][a-z0-9+.-]*://|^(git@|github\.com/|gitlab\.com/|bitbucket\.org/)")


class Closure:
    """The files a kustomization reaches (resources, bases, components, generators), for the
    object count and, lazily, the origin of each rendered object by kind and name."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: list[str] = []  # resource files, tree-relative
        self.dirs: list[str] = []  # kustomization directories reached, tree-relative
        self.generated: list[tuple[str, str, str]] = []  # (kind, name, kustomization file)
        self.objects = 0
        self.remote = False
        self.network: list[str] = []  # what kustomize would download: remote bases, chart repos
        self.helm: list[str] = []  # helm charts inflated (`app/kustomization.yaml: helmCharts x`)
        self._index: dict[str, dict[str, set[str]]] | None = None

    @classmethod
    def walk(cls, root: Path, start: str, *also: str) -> Closure:
        """From the kustomization in `start` (and the directories in `also`, tree-relative)."""
        out = cls(root)
        todo, seen = [start, *also], set()
        while todo:
            directory = posixpath.normpath(todo.pop())
            if directory in seen:
                continue
            seen.add(directory)
            kfile = find_kustomization(root / directory)
            if kfile is None:
                continue
            out.dirs.append(directory)
            rel = tree_rel(kfile, root)
            try:
                docs = yamlio.load_documents(kfile.read_bytes(), rel)
            except (GitDriftError, OSError):
                continue  # kustomize reports it
            for doc in docs:
                if not isinstance(doc, Mapping):
                    continue
                for field in ("resources", "bases", "components"):
                    for entry in str_list(doc.get(field)):
                        target = posixpath.normpath(posixpath.join(directory, entry))
                        path = root / target
                        if path.is_dir():
                            todo.append(target)
                        elif path.is_file():
                            out.files.append(target)
                            with contextlib.suppress(OSError):
                                out.objects += len(_KIND_LINE.findall(path.read_bytes()))
                        elif _URL_LIKE.search(entry) or "?" in entry or not path.exists():
                            out.remote = True
                            if _URL_LIKE.search(entry):
                                out.network.append(f"{rel}: {field} {entry}")
                for generator, kind in (("configMapGenerator", "ConfigMap"),
                                        ("secretGenerator", "Secret")):  # fmt: skip
                    for item in doc.get(generator) or ():
                        if isinstance(item, Mapping) and item.get("name"):
                            out.generated.append((kind, str(item["name"]), rel))
                            out.objects += 1
                if doc.get("helmCharts") or doc.get("helmChartInflationGenerator"):
                    out.remote = True
                for field in ("helmCharts", "helmChartInflationGenerator"):
                    for chart in doc.get(field) or ():
                        if isinstance(chart, Mapping):
                            name = chart.get("name") or chart.get("chartName") or "(no name)"
                            out.helm.append(f"{rel}: {field} {name}")
                for chart in doc.get("helmCharts") or ():
                    if isinstance(chart, Mapping) and chart.get("repo"):
                        out.network.append(
                            f"{rel}: helmCharts {chart.get('name')} from {chart.get('repo')}"
                        )
        return out

    def origin(self, kind: str, name: str) -> str | None:
        """The file declaring the object: the one whose kind matches and whose name is the
        rendered name, or the longest declared name inside it (namePrefix/Suffix, hashes)."""
        if self._index is None:
            self._index = self._build_index()
        names = self._index.get(kind)
        if not names:
            return None
        files = names.get(name)
        if files is None:
            best = max((n for n in names if n and n in name), key=len, default=None)
            files = names.get(best) if best is not None else None
        if not files or len(files) != 1:
            return None
        return next(iter(files))

    def _build_index(self) -> dict[str, dict[str, set[str]]]:
        index: dict[str, dict[str, set[str]]] = {}

        def add(kind: str, name: str, file: str) -> None:
            index.setdefault(kind, {}).setdefault(name, set()).add(file)

        for rel in self.files:
            try:
                docs = yamlio.load_documents((self.root / rel).read_bytes(), rel)
            except (GitDriftError, OSError):
                continue
            for doc in docs:
                items = doc.get("items") if doc.get("kind") == "List" else [doc]
                for obj in items if isinstance(items, list) else ():
                    if not isinstance(obj, Mapping):
                        continue
                    metadata = obj.get("metadata")
                    name = metadata.get("name") if isinstance(metadata, Mapping) else None
                    if isinstance(obj.get("kind"), str) and isinstance(name, str):
                        add(obj["kind"], name, rel)
        for kind, name, rel in self.generated:
            add(kind, name, rel)
        return index


def check_inside(root: Path, kdir: Path) -> None:
    """Refuse a kustomization (the app's, or a base it reaches) whose resources/bases/components
    name a directory outside the tree. LoadRestrictionsRootOnly confines *files* to a
    kustomization's own directory, but kustomize follows a base wherever it points
    (`../../../../home/me/x`), and what it renders there would be read from this machine and
    shown in the report."""
    todo, seen = [tree_rel(kdir, root) if kdir != root else "."], set()
    while todo:
        directory = posixpath.normpath(todo.pop())
        kfile = find_kustomization(root / directory)
        if directory in seen or kfile is None:
            continue
        seen.add(directory)
        rel = tree_rel(kfile, root)
        for doc in yamlio.load_documents(kfile.read_bytes(), rel):
            for field in ("resources", "bases", "components"):
                for entry in str_list(doc.get(field)):
                    target = posixpath.normpath(posixpath.join(directory, entry))
                    if entry.startswith("/") or target == ".." or target.startswith("../"):
                        raise SourceError(
                            f"{rel}: {field} entry {entry!r} points outside the repository",
                            hint="kustomize bases must live in the same repository "
                            "(or be remote URLs)",
                        )
                    if (root / target).is_dir():
                        todo.append(target)


def str_list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def tree_rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()
