"""Find where in the source tree a desired field's value is written (for "adopt into git" fixes).

Searches from the overlay outward: the app's kustomization (`replicas:` for spec.replicas,
`images:` for container images), the patches it references, its resource files, then the
kustomizations it builds on (breadth first), and finally the object's origin file. A hit is a
document that names the object (kind and name; a name prefix/suffix added later is allowed) and
sets the path to the value. Lines come from `yaml.compose` marks. When nothing writes the value
literally, the app's kustomization (or the origin file) is returned with `how="overlay"`: that is
where a patch would go.

`Location.how` is one of: `replicas` (a kustomization `replicas:` count), `images` (a
kustomization `images:` entry), `patch` (a patch file or inline patch), `resource` (a resource
file), `generator` (a configMapGenerator or secretGenerator entry makes the object: the line of
its name), `overlay` (nothing sets it literally).
"""

from __future__ import annotations

import functools
import posixpath
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import GitDriftError
from kubectl_gitdrift.model import FieldPath, ListKey, Manifest, pointer
from kubectl_gitdrift.sources.kustomize_closure import find_kustomization

_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


@dataclass(frozen=True, slots=True)
class Location:
    file: str  # repo-relative
    line: int  # 1-based; 0 = the file as a whole
    how: str  # replicas | images | patch | resource | overlay


def locate(
    tree: Path, source_path: str, manifest: Manifest, path: FieldPath, value: Any
) -> Location | None:
    """Where `path` of `manifest` is set to `value` in `tree`, or None when there is no file at all
    to point at (no kustomization and no origin)."""
    root = tree.resolve()
    rel = _norm(source_path)
    app_dir = root if rel in ("", ".") else root / rel
    kfile = find_kustomization(app_dir) if app_dir.is_dir() else None
    search = _Search(root, manifest, path, value)
    if kfile is not None:
        found = search.kustomizations(app_dir)
        if found:
            return found
    if manifest.origin:
        found = search.file(manifest.origin, how="resource")
        if found:
            return found
    if kfile is not None:
        return Location(kfile.relative_to(root).as_posix(), 0, "overlay")
    if manifest.origin:
        return Location(manifest.origin, search.object_line(manifest.origin), "overlay")
    return None


# --------------------------------------------------------------------------- internals


class _Search:
    def __init__(self, root: Path, manifest: Manifest, path: FieldPath, value: Any) -> None:
        self.root = root
        self.manifest = manifest
        self.kind = manifest.key.kind
        self.group = manifest.key.group
        self.name = manifest.key.name
        self.path = path
        self.value = value
        self._inside_root: dict[Path, bool] = {}

    # ---- kustomizations, breadth first from the overlay

    def kustomizations(self, app_dir: Path) -> Location | None:
        queue: deque[Path] = deque([app_dir])
        seen: set[Path] = set()
        while queue:
            kdir = queue.popleft()
            kfile = find_kustomization(kdir)
            if kfile is None or kfile in seen:
                continue
            seen.add(kfile)
            rel = kfile.relative_to(self.root).as_posix()
            docs = self._compose(rel)
            if not docs or not isinstance(docs[0], MappingNode):
                continue
            knode = docs[0]
            found = self._replicas(knode, rel) or self._images(knode, rel)
            if found:
                return found
            found = self._patches(knode, kdir, rel) or self._generator(knode, rel)
            if found:
                return found
            base = kdir.relative_to(self.root).as_posix()
            for entry in self._strings(knode, "resources", "bases", "components"):
                if self._elsewhere(posixpath.normpath(posixpath.join(base, entry))):
                    continue
                target = self._local(kdir, entry)
                if target is None:
                    continue
                if target.is_dir():
                    queue.append(target)
                elif target.is_file():
                    found = self.file(target.relative_to(self.root).as_posix(), how="resource")
                    if found:
                        return found
        return None

    def _replicas(self, knode: MappingNode, rel: str) -> Location | None:
        if tuple(self.path) != ("spec", "replicas"):
            return None
        for entry in _items(_get(knode, "replicas")):
            name = _scalar(_get(entry, "name"))
            count = _get(entry, "count")
            if (
                isinstance(name, str)
                and self._name_matches(name)
                and count is not None
                and _same(_construct(count), self.value)
            ):
                return Location(rel, count.start_mark.line + 1, "replicas")
        return None

    def _images(self, knode: MappingNode, rel: str) -> Location | None:
        if not (
            len(self.path) >= 3 and self.path[-1] == "image" and self.path[-3] in _CONTAINER_LISTS
        ):
            return None
        if not isinstance(self.value, str):
            return None
        want_name, want_tag, want_digest = _split_image(self.value)
        for entry in _items(_get(knode, "images")):
            data = _construct(entry)
            if not isinstance(data, Mapping):
                continue
            name = str(data.get("newName") or data.get("name") or "")
            if name != want_name:
                continue
            tag, digest = data.get("newTag"), data.get("digest")
            if digest is not None and str(digest) == want_digest:
                return Location(rel, _line(_get(entry, "digest")), "images")
            if tag is not None and str(tag) == want_tag:
                return Location(rel, _line(_get(entry, "newTag")), "images")
            if tag is None and digest is None and data.get("newName"):
                return Location(rel, _line(_get(entry, "newName")), "images")
        return None

    def _generator(self, knode: MappingNode, rel: str) -> Location | None:
        """The configMapGenerator or secretGenerator entry that makes the object (its `name:`
        line): the value comes from a literal or a file it reads, not from a YAML field."""
        key = {"ConfigMap": "configMapGenerator", "Secret": "secretGenerator"}.get(self.kind)
        if self.group or key is None:
            return None
        for entry in _items(_get(knode, key)):
            name = _scalar(_get(entry, "name"))
            if isinstance(name, str) and self._name_matches(name):
                return Location(rel, _line(_get(entry, "name")), "generator")
        return None

    def _patches(self, knode: MappingNode, kdir: Path, rel: str) -> Location | None:
        for key in ("patches", "patchesJson6902", "patchesStrategicMerge"):
            for entry in _items(_get(knode, key)):
                if isinstance(entry, ScalarNode):  # patchesStrategicMerge: a path or inline YAML
                    text = str(entry.value)
                    if "\n" in text or ":" in text:
                        found = self._inline(entry, rel, target=None)
                    else:
                        found = self._patch_file(kdir, text, target=None)
                elif isinstance(entry, MappingNode):
                    target = _construct(_get(entry, "target")) if _get(entry, "target") else None
                    if target is not None and not self._target_matches(target):
                        continue
                    inline = _get(entry, "patch")
                    patch_path = _scalar(_get(entry, "path"))
                    if isinstance(inline, ScalarNode):
                        found = self._inline(inline, rel, target=target)
                    elif isinstance(patch_path, str):
                        found = self._patch_file(kdir, patch_path, target=target)
                    else:
                        found = None
                else:
                    found = None
                if found:
                    return found
        return None

    def _patch_file(self, kdir: Path, entry: str, *, target: Any) -> Location | None:
        file = self._local(kdir, entry)
        if file is None or not file.is_file():
            return None
        rel = file.relative_to(self.root).as_posix()
        for doc in self._compose(rel):
            line = self._in_document(doc, targeted=target is not None)
            if line:
                return Location(rel, line, "patch")
        return None

    def _inline(self, node: ScalarNode, rel: str, *, target: Any) -> Location | None:
        try:
            docs = yamlio.compose_documents(str(node.value), rel)
        except GitDriftError:
            return None
        first = node.start_mark.line + (1 if node.style in ("|", ">") else 0)
        for doc in docs:
            line = self._in_document(doc, targeted=target is not None)
            if line:
                return Location(
                    rel, first + line if node.style in ("|", ">") else first + 1, "patch"
                )
        return None

    # ---- documents

    def file(self, rel: str, *, how: str) -> Location | None:
        for obj, kind, api_version, name in self._heads(rel):  # what _names_object reads
            if kind is not None and kind != self.kind:
                continue
            if isinstance(api_version, str) and api_version.rpartition("/")[0] != self.group:
                continue
            if not isinstance(name, str) or not self._name_matches(name):
                continue
            node = _find(obj, self.path)
            if node is not None and _same(_construct(node), self.value):
                return Location(rel, node.start_mark.line + 1, how)
        return None

    def _heads(self, rel: str) -> tuple[tuple[MappingNode, Any, Any, Any], ...]:
        file = self.root / rel
        try:
            if not self._inside(file) or not file.is_file():
                return ()
            st = file.stat()
            stamp = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            return _heads(str(file), stamp, rel)
        except (OSError, GitDriftError):
            return ()

    def object_line(self, rel: str) -> int:
        for doc in self._compose(rel):
            if doc is None:
                continue
            for obj in _objects(doc):
                if self._names_object(obj):
                    return obj.start_mark.line + 1
        return 0

    def _in_document(self, doc: Node | None, *, targeted: bool) -> int:
        """1-based line (relative to the document's text) where `doc` sets the value, else 0."""
        if isinstance(doc, SequenceNode) and targeted:  # JSON 6902 operations
            return self._json6902(doc)
        if doc is None:
            return 0
        for obj in _objects(doc):
            if not targeted and not self._names_object(obj):
                continue
            if targeted and not self._kind_ok(obj):
                continue
            node = _find(obj, self.path)
            if node is not None and _same(_construct(node), self.value):
                return node.start_mark.line + 1
        return 0

    def _json6902(self, ops: SequenceNode) -> int:
        want = pointer(self.path, self.manifest.body)
        for op in ops.value:
            if not isinstance(op, MappingNode):
                continue
            if _scalar(_get(op, "op")) not in ("add", "replace"):
                continue
            value = _get(op, "value")
            path = _scalar(_get(op, "path"))
            if path == want and value is not None and _same(_construct(value), self.value):
                return value.start_mark.line + 1
        return 0

    def _names_object(self, obj: MappingNode) -> bool:
        metadata = _get(obj, "metadata")
        name = _scalar(_get(metadata, "name")) if isinstance(metadata, MappingNode) else None
        return self._kind_ok(obj) and isinstance(name, str) and self._name_matches(name)

    def _kind_ok(self, obj: MappingNode) -> bool:
        kind = _scalar(_get(obj, "kind"))
        if kind is not None and kind != self.kind:
            return False
        api_version = _scalar(_get(obj, "apiVersion"))
        return not isinstance(api_version, str) or api_version.rpartition("/")[0] == self.group

    def _name_matches(self, name: str) -> bool:
        """The name as written at some level: equal, or before a prefix/suffix was added."""
        return bool(name) and (name == self.name or name in self.name)

    def _target_matches(self, target: Any) -> bool:
        if not isinstance(target, Mapping):
            return True
        if target.get("kind") and target["kind"] != self.kind:
            return False
        if target.get("group") is not None and target.get("group") != self.group:
            return False
        name = target.get("name")
        return not name or self._name_matches(str(name))

    # ---- files

    @staticmethod
    def _strings(knode: MappingNode, *keys: str) -> list[str]:
        out: list[str] = []
        for key in keys:
            for item in _items(_get(knode, key)):
                value = _scalar(item)
                if isinstance(value, str):
                    out.append(value)
        return out

    def _elsewhere(self, rel: str) -> bool:
        """A resource file other than the one kustomize says the object comes from: it cannot
        declare the object too (kustomize refuses duplicates), so it is not read."""
        origin = self.manifest.origin
        return bool(origin) and rel != origin and rel.endswith((".yaml", ".yml", ".json"))

    def _local(self, kdir: Path, entry: str) -> Path | None:
        """A path a kustomization references, if it is local and inside the tree."""
        if "://" in entry or entry.startswith(("github.com/", "git@")) or "?ref=" in entry:
            return None
        base = kdir.relative_to(self.root).as_posix()
        joined = posixpath.normpath(posixpath.join(base, entry))
        if joined == ".." or joined.startswith("../") or posixpath.isabs(joined):
            return None
        target = self.root / joined
        try:
            if not self._inside(target):
                return None
        except OSError:
            return None
        return target

    def _inside(self, path: Path) -> bool:
        """Whether `path` resolves inside the tree (symlinks followed), memoized for the search:
        a resource file is vetted when its kustomization names it and again when it is read."""
        inside = self._inside_root.get(path)
        if inside is None:
            inside = self._inside_root[path] = path.resolve().is_relative_to(self.root)
        return inside

    def _compose(self, rel: str) -> list[Node | None]:
        file = self.root / rel
        try:
            if not self._inside(file) or not file.is_file():
                return []
            st = file.stat()
            stamp = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            return list(_composed(str(file), stamp, rel))
        except (OSError, GitDriftError):
            return []


@functools.lru_cache(maxsize=1024)
def _heads(
    file: str, stamp: tuple[int, ...], rel: str
) -> tuple[tuple[MappingNode, Any, Any, Any], ...]:
    """Each object of a file with its kind, apiVersion and metadata.name, memoized."""
    out = []
    for doc in _composed(file, stamp, rel):
        if doc is None:
            continue
        for obj in _objects(doc):
            metadata = _get(obj, "metadata")
            name = _scalar(_get(metadata, "name")) if isinstance(metadata, MappingNode) else None
            out.append((obj, _scalar(_get(obj, "kind")), _scalar(_get(obj, "apiVersion")), name))
    return tuple(out)


@functools.lru_cache(maxsize=1024)
def _composed(file: str, stamp: tuple[int, ...], rel: str) -> tuple[Node | None, ...]:
    """The composed documents of a file, memoized by path and stat stamp: every drifted field's
    search walks the same kustomizations and resource files (the nodes are only read)."""
    return tuple(yamlio.compose_documents(Path(file).read_bytes(), rel))  # under load_any's bounds


def _objects(doc: Node) -> Iterator[MappingNode]:
    """The object mappings of a document (items of a `*List`)."""
    if not isinstance(doc, MappingNode):
        return
    kind = _scalar(_get(doc, "kind"))
    items = _get(doc, "items")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(items, SequenceNode):
        yield from (item for item in items.value if isinstance(item, MappingNode))
    else:
        yield doc


def _find(node: Node | None, path: FieldPath) -> Node | None:
    for elem in path:
        if node is None:
            return None
        if isinstance(elem, ListKey):
            if not isinstance(node, SequenceNode):
                return None
            node = next(
                (item for item in node.value if elem.matches(_construct_keys(item, elem))), None
            )
        elif isinstance(elem, int):
            if not isinstance(node, SequenceNode) or elem >= len(node.value):
                return None
            node = node.value[elem]
        else:
            node = _get(node, elem)
    return node


def _construct_keys(item: Node, key: ListKey) -> dict[str, Any]:
    if not isinstance(item, MappingNode):
        return {}
    return {name: _construct(_get(item, name)) for name, _ in key.fields}


def _get(node: Node | None, key: str) -> Node | None:
    if not isinstance(node, MappingNode):
        return None
    for key_node, value_node in node.value:
        if isinstance(key_node, ScalarNode) and key_node.value == key:
            return value_node  # type: ignore[no-any-return]
    return None


def _items(node: Node | None) -> list[Node]:
    return list(node.value) if isinstance(node, SequenceNode) else []


def _scalar(node: Node | None) -> Any:
    return _construct(node) if isinstance(node, ScalarNode) else None


def _construct(node: Node | None) -> Any:
    if node is None:
        return None
    constructor = yaml.constructor.SafeConstructor()
    try:
        return constructor.construct_document(node)
    except yaml.YAMLError:
        return None


def _line(node: Node | None) -> int:
    return node.start_mark.line + 1 if node is not None else 0


def _same(found: Any, want: Any) -> bool:
    if found == want and type(found) is type(want):
        return True
    if isinstance(found, (Mapping, list)) or isinstance(want, (Mapping, list)):
        return bool(found == want)
    return _text(found) == _text(want)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


def _split_image(image: str) -> tuple[str, str, str]:
    """`reg/app:1.2@sha256:…` → (`reg/app`, `1.2`, `sha256:…`)."""
    name, _, digest = image.partition("@")
    base, sep, tag = name.rpartition(":")
    if sep and "/" not in tag:
        return base, tag, digest
    return name, "", digest


def _norm(path: str) -> str:
    path = path.strip().strip("/")
    return posixpath.normpath(path) if path else "."


__all__ = ["Location", "locate"]
