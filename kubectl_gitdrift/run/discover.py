"""The Applications a repository defines at one commit, as Argo CD would come to have them.

Three ways, in this order, a later one winning for a name an earlier one found:
- literal: every YAML/JSON document of kind Application or ApplicationSet (argoproj.io) in
  the tree, whatever the file is called (one `ls-tree`, one `cat-file --batch`). A file that
  does not parse (a Helm template) is skipped: Argo CD could not apply it as it is; the file
  is remembered, as an app's render may make Applications of it;
- ApplicationSets, expanded as the controller does (appsets/expand.py), their Applications
  recorded with the ApplicationSet as origin; one that cannot be expanded is recorded failed,
  with its one-line error, and the rest go on;
- app-of-apps: an app whose inputs hold an Application-defining file (the caller decides,
  `parent`) is rendered (`render`, the caller's), and the Applications and ApplicationSets it
  renders are its children, recorded with it as origin; recursively, each version of an app
  rendered once and no app its own descendant (the cycle guard), at most MAX_DEPTH rounds of
  renders down.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubectl_gitdrift import model, yamlio
from kubectl_gitdrift.errors import GitDriftError
from kubectl_gitdrift.sources import commits

APP_KINDS = ("Application", "ApplicationSet")
MAX_DEPTH = 8
"""Levels of app-of-apps below a literal app (Argo CD has no limit; a deeper tree is almost
always a cycle through names that change)."""
SUFFIXES = (".yaml", ".yml", ".json")
_MENTIONS = re.compile(rb"kind:\s*[\"']?Application(?:Set)?\b|\"kind\"\s*:\s*\"Application")


@dataclass(frozen=True, slots=True)
class Found:
    """One Application (or a failed ApplicationSet) a commit defines."""

    name: str  # namespace/name
    body: model.Body  # the Application as Argo CD would have it
    origin: str  # its file, "ApplicationSet argocd/x", "app argocd/root", "cluster"
    file: str = ""  # the repository file behind it (its own, its ApplicationSet's, the parent's)
    kind: str = "Application"  # ApplicationSet: one that could not be expanded (error)
    error: str = ""
    depth: int = 0  # app-of-apps levels below a literal one
    parent: str = ""  # the app or ApplicationSet (kind namespace/name) it came from


@dataclass
class Discovered:
    """What one commit defines."""

    sha: str
    apps: dict[str, Found] = field(default_factory=dict)  # by namespace/name
    failed: dict[str, Found] = field(default_factory=dict)  # ApplicationSets, by namespace/name
    appsets: dict[str, Found] = field(default_factory=dict)  # expanded ones, by namespace/name
    app_files: frozenset[str] = frozenset()  # files that define (or template) an Application
    skipped: tuple[str, ...] = ()  # Application-mentioning files that do not parse
    notes: dict[str, list[str]] = field(default_factory=dict)  # by app namespace/name
    unknown: dict[str, str] = field(default_factory=dict)
    """Parents whose Applications are not known ("app ns/x", "ApplicationSet ns/y"): why."""

    def lineage(self, found: Found) -> list[str]:
        """The parents above `found`, nearest first ("app ns/x", "ApplicationSet ns/y")."""
        out: list[str] = []
        via = found.parent
        while via and via not in out:
            out.append(via)
            kind, _, name = via.partition(" ")
            above = self.apps.get(name) if kind == "app" else self.appsets.get(name)
            above = above or (self.failed.get(name) if kind != "app" else None)
            via = above.parent if above is not None else ""
        return out

    def note(self, name: str, text: str) -> None:
        self.notes.setdefault(name, []).append(text)


Expand = Callable[[model.Body], list[dict[str, Any]]]
"""An ApplicationSet's Applications (appsets.expand.expand over the run's inputs)."""
Render = Callable[[Found], Sequence[model.Manifest]]
"""An app's rendered objects at this commit; raises GitDriftError."""
Mapper = Callable[[Callable[[Found], Any], Sequence[Found]], Iterable[Any]]


def discover(
    top: Path,
    sha: str,
    *,
    expand: Expand,
    render: Render | None = None,
    parent: Callable[[Found, frozenset[str]], bool] | None = None,
    map_fn: Mapper = map,
) -> Discovered:
    """Every Application commit `sha` of the repository at `top` defines. With `render` and
    `parent` (does this app's input hold one of these files?), app-of-apps children too;
    `map_fn` renders one level of parents (a thread pool's map: in parallel)."""
    out = Discovered(sha)
    literal, app_files, skipped = scan(top, sha)
    out.app_files, out.skipped = frozenset(app_files), tuple(skipped)
    for path, body in literal:
        _add(out, body, path, path, expand, via="")
    if render is None or parent is None:
        return out
    done: dict[str, model.Body] = {}  # rendered as parents: each version once
    level = [f for f in out.apps.values() if parent(f, out.app_files)]
    rounds = 0
    while level:
        if rounds == MAX_DEPTH:
            for found in level:
                out.note(found.name, f"its child Applications, more than {MAX_DEPTH} levels "
                         "of app-of-apps down, are left out (a cycle of new names?)")  # fmt: skip
            break
        rounds += 1
        done.update((f.name, f.body) for f in level)
        later: dict[str, Found] = {}
        for found, children in map_fn(lambda f: _children(f, render), level):
            if isinstance(children, str):
                out.note(found.name, f"its child Applications are not known: {children}")
                out.unknown[f"app {found.name}"] = children
                continue
            above = _ancestors(out, out.apps.get(found.name, found))
            namespace = _dest_namespace(found.body)
            for manifest in children:
                if qualified(manifest.body, namespace) in above:
                    continue  # an app that manages itself, or a cycle back to an ancestor
                names = _add(out, manifest.body, f"app {found.name}",
                             manifest.origin or found.file, expand, via=f"app {found.name}",
                             namespace=namespace, keep=above)  # fmt: skip
                for name in names:
                    child = out.apps[name]
                    if done.get(name) != child.body and parent(child, out.app_files):
                        later[name] = child
        level = list(later.values())
    for name, found in out.apps.items():
        out.apps[name] = dataclasses.replace(found, depth=len(_ancestors(out, found)) - 1)
    return out


def _ancestors(out: Discovered, found: Found) -> set[str]:
    """The app and the apps above it (app-of-apps parents, through ApplicationSets too)."""
    return {found.name, *(via.partition(" ")[2] for via in out.lineage(found))}


def scan(top: Path, sha: str) -> tuple[list[tuple[str, model.Body]], list[str], list[str]]:
    """(file, document) of each literal Application/ApplicationSet of commit `sha`, in path
    order; the files that define or mention one; those of them that do not parse."""
    listed = [(p, b) for p, b in commits.files(top, sha) if p.lower().endswith(SUFFIXES)]
    blobs = commits.read_blobs(top, (b for _, b in listed))
    found: list[tuple[str, model.Body]] = []
    mentions: list[str] = []
    skipped: list[str] = []
    for path, blob in listed:
        data = blobs[blob]
        if b"argoproj.io" not in data or not _MENTIONS.search(data):
            continue
        mentions.append(path)
        try:
            docs = yamlio.load_documents(data, path)
        except GitDriftError:
            skipped.append(path)  # a template: Argo CD could not apply it either
            continue
        found.extend((path, doc) for doc in _documents(docs) if is_app_kind(doc))
    return found, mentions, skipped


def is_app_kind(doc: Any) -> bool:
    return (
        isinstance(doc, Mapping)
        and doc.get("kind") in APP_KINDS
        and str(doc.get("apiVersion") or "").startswith("argoproj.io/")
    )


def qualified(body: model.Body, namespace: str = "argocd") -> str:
    metadata = body.get("metadata") or {}
    return f"{metadata.get('namespace') or namespace}/{metadata.get('name') or '?'}"


def _documents(docs: Iterable[Any]) -> Iterator[Any]:
    for doc in docs:
        if isinstance(doc, Mapping) and doc.get("kind") == "List":
            yield from doc.get("items") or ()
        else:
            yield doc


def _add(
    out: Discovered,
    body: model.Body,
    origin: str,
    file: str,
    expand: Expand,
    *,
    via: str,
    namespace: str = "argocd",
    keep: set[str] | frozenset[str] = frozenset(),
) -> list[str]:
    """Record an Application, or an ApplicationSet's; the names recorded (none in `keep`)."""
    if not is_app_kind(body):
        return []
    body = _with_namespace(body, namespace)
    name = qualified(body)
    if body.get("kind") == "Application":
        out.apps[name] = Found(name, body, origin, file, parent=via)
        return [name]
    try:
        generated = expand(body)
    except GitDriftError as exc:
        out.failed[name] = Found(name, body, origin, file, "ApplicationSet", line(exc),
                                 parent=via)  # fmt: skip
        out.unknown[f"ApplicationSet {name}"] = line(exc)
        return []
    out.failed.pop(name, None)
    out.appsets[name] = Found(name, body, origin, file, "ApplicationSet", parent=via)
    names = []
    for app in generated:
        child = qualified(app, name.partition("/")[0])
        if child in keep:
            continue
        out.apps[child] = Found(child, app, f"ApplicationSet {name}", file,
                                parent=f"ApplicationSet {name}")  # fmt: skip
        names.append(child)
    return names


def _children(found: Found, render: Render) -> tuple[Found, Sequence[model.Manifest] | str]:
    try:
        rendered = render(found)
    except GitDriftError as exc:
        return found, line(exc)
    return found, [m for m in rendered if is_app_kind(m.body)]


def _with_namespace(body: model.Body, namespace: str) -> model.Body:
    metadata = body.get("metadata") or {}
    if metadata.get("namespace"):
        return body
    return {**body, "metadata": {**metadata, "namespace": namespace}}


def _dest_namespace(body: model.Body) -> str:
    """Where a parent's namespaced objects without a namespace land: its destination's."""
    spec = body.get("spec") or {}
    destination = spec.get("destination") if isinstance(spec, Mapping) else None
    found = destination.get("namespace") if isinstance(destination, Mapping) else None
    return str(found or "argocd")


def line(exc: GitDriftError) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
