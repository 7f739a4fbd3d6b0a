"""Build a kustomization the way Argo CD's repo-server does.

Argo CD applies the Application's `spec.source.kustomize` options with `kustomize edit …` before
`kustomize build` (argocd-semantics.md §4.1). Here the same edits are made in Python, on a private
copy of the tree (the user's files are never written), then `kustomize build` (or `kubectl
kustomize`) runs with exec/alpha plugins off. `buildMetadata: [originAnnotations]` is added so each
object says which file defined it; that becomes `Manifest.origin` and the annotation is removed
again (unless the kustomization asked for it itself, in which case Argo CD applies it too).
"""

from __future__ import annotations

import contextlib
import functools
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import GitDriftError, SourceError
from kubectl_gitdrift.model import Manifest, ObjectKey
from kubectl_gitdrift.sources import process
from kubectl_gitdrift.sources.cache import CacheMiss, RenderCache

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
KUSTOMIZE_TIMEOUT = 120.0
"""Seconds one `kustomize build` may run."""

ORIGIN_ANNOTATION = "config.kubernetes.io/origin"
_INTERNAL_PREFIX = "internal.config.kubernetes.io/"
_FORBIDDEN_FLAGS = ("--enable-alpha-plugins", "--enable-exec", "--enable-star", "--mount")
_IMAGE_TAG = re.compile(r"^(.*):([a-zA-Z0-9._-]*|\*)$")


def find_kustomization(directory: Path) -> Path | None:
    """The kustomization file in `directory`, if any (kustomize's own lookup order)."""
    for name in KUSTOMIZATION_FILES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def build(
    tree: Path,
    app_path: str,
    options: Mapping[str, Any] | None = None,
    *,
    workdir: Path,
    env: Mapping[str, str] | None = None,
    build_options: Sequence[str] = (),
    revision: str | None = None,
    cache: RenderCache | None = None,
    cached_only: bool = False,
    allow_exec: bool = False,
    offline: bool = False,
) -> list[Manifest]:
    """Render the kustomization at `tree/app_path` with the Application's kustomize `options`.

    `tree` is only read: when the kustomization must be edited the build runs on a copy inside
    `workdir`. `env` is Argo CD's build environment (ARGOCD_APP_NAME, …) used to substitute
    `$VAR` in images and labels. `build_options` are extra flags (argocd-cm
    `kustomize.buildOptions`); plugin flags are refused unless `allow_exec` (--allow-plugins).
    With a `cache` and the commit `revision` the tree holds, a render made before is read back
    instead of running kustomize. `offline` (--offline) refuses a kustomization that would make
    kustomize download something (a remote base, a chart from a repository).

    Each object's `origin` (the file that defines it) comes from kustomize's originAnnotations
    for kustomizations of up to `origin_annotations_max()` objects; past that the annotations
    would double kustomize's time (kubernetes-sigs/kustomize#5988), so the build runs without
    them and the origin is found by scanning the kustomization's resource files for kind+name.
    """
    display = app_path.strip("/") or "."
    for flag in build_options:
        if flag.split("=", 1)[0] in _FORBIDDEN_FLAGS and not allow_exec:
            raise SourceError(
                f"kustomize build option {flag} is not allowed: it runs commands from the "
                "repository",
                hint="pass --allow-plugins to allow kustomize's exec and alpha plugins",
            )
    limit = origin_annotations_max()
    key = None
    if cache is not None and revision:
        key = cache.key(
            "kustomize", revision, app_path, options or {}, env or {}, list(build_options),
            _binary_identity(), limit,
        )  # fmt: skip
        hit = cache.get(key)
        if hit is not None:
            return hit
    if cached_only:
        raise CacheMiss(app_path)
    kdir = tree / app_path if display != "." else tree
    kfile = find_kustomization(kdir)
    if kfile is None:
        raise SourceError(f"{display}: no kustomization.yaml in the source path")
    rel_kfile = _rel(kfile, tree)
    docs = yamlio.load_documents(kfile.read_bytes(), rel_kfile)
    if len(docs) != 1:
        raise SourceError(f"{rel_kfile}: expected one kustomization document, got {len(docs)}")
    kustomization = docs[0]
    keep_origin = "originAnnotations" in _str_list(kustomization.get("buildMetadata"))
    edited = apply_options(
        kustomization, options or {}, env=env or {}, kustomization_dir=kdir, name=rel_kfile
    )
    _check_inside(tree, kdir)
    closure = _Closure.walk(tree, _rel(kdir, tree) if kdir != tree else ".")
    if offline and closure.network:
        raise SourceError(
            f"kustomize build {display}: --offline, but kustomize would download "
            f"{closure.network[0]}",
            hint="run without --offline, or vendor the base or chart into the repository",
        )
    annotate = keep_origin or closure.objects <= limit
    helm = _helm_enabled(build_options)
    copy: Path | None = None
    try:
        # with --enable-helm, kustomize pulls charts into the kustomization's chartHome: a copy
        if annotate or edited != kustomization or helm:
            workdir.mkdir(parents=True, exist_ok=True)
            copy = Path(tempfile.mkdtemp(prefix="kustomize-", dir=workdir))
            start = _rel(kdir, tree) if kdir != tree else "."
            added = [
                posixpath.normpath(posixpath.join(start, entry))
                for field in ("resources", "components")
                for entry in _str_list(edited.get(field))
                if entry not in _str_list(kustomization.get(field))
            ]
            reach = _Closure.walk(tree, start, *added) if added else closure
            _copy_tree(tree, copy / "tree", None if _unrestricted(build_options) else reach.dirs)
            root = copy / "tree"
            kdir = root / app_path if display != "." else root
            kfile = root / rel_kfile
            if annotate:
                metadata = _str_list(edited.get("buildMetadata"))
                if "originAnnotations" not in metadata:
                    edited["buildMetadata"] = [*metadata, "originAnnotations"]
            _replace_file(kfile, yaml.safe_dump(edited, sort_keys=False))
            _check_inside(root, kdir)
            if edited.get("resources") != kustomization.get("resources") or edited.get(
                "components"
            ) != kustomization.get("components"):
                closure = _Closure.walk(root, _rel(kdir, root) if kdir != root else ".")
        else:  # nothing to edit: build the tree as it is (it is only read)
            root = tree.absolute()
            kdir = root / app_path if display != "." else root
        flags = list(build_options)
        if helm:
            workdir.mkdir(parents=True, exist_ok=True)
            flags += _helm_flags(build_options, options or {}, workdir)
        output = _run_build(kdir, display, root, flags)
        manifests: list[Manifest] = []
        for body in yamlio.load_objects(output, f"kustomize build {display}"):
            origin = _take_origin(body, display, keep=keep_origin)
            objkey = ObjectKey.of(body)
            if not annotate:
                origin = closure.origin(objkey.kind, objkey.name)
            manifests.append(Manifest(key=objkey, body=body, origin=origin))
    finally:
        if copy is not None:
            shutil.rmtree(copy, ignore_errors=True)
    if key is not None and cache is not None and not closure.remote:
        cache.put(key, manifests)
    return manifests


ORIGIN_ANNOTATIONS_ENV = "KUBECTL_GITDRIFT_ORIGIN_ANNOTATIONS_MAX"
ORIGIN_ANNOTATIONS_MAX = 300
"""Kustomizations declaring more objects than this are built without originAnnotations."""
TIMEOUT_ENV = "KUBECTL_GITDRIFT_KUSTOMIZE_TIMEOUT"


def origin_annotations_max() -> int:
    raw = os.environ.get(ORIGIN_ANNOTATIONS_ENV, "").strip()
    try:
        return int(raw) if raw else ORIGIN_ANNOTATIONS_MAX
    except ValueError:
        return ORIGIN_ANNOTATIONS_MAX


def kustomize_timeout() -> float:
    """KUSTOMIZE_TIMEOUT, or the seconds (> 0) in $KUBECTL_GITDRIFT_KUSTOMIZE_TIMEOUT."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return KUSTOMIZE_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise SourceError(f"{TIMEOUT_ENV}={raw!r}: expected a number of seconds above 0")
    return value


def _binary_identity() -> list[Any]:
    """The binary kustomize builds with, for the render cache key: its path, size and mtime.
    Looked up once per PATH in a process (every app of an `--all` asks: two PATH searches and a
    stat each, a tenth of reading its cached render)."""
    path = os.environ.get("PATH", "")
    known = _IDENTITIES.get(path)
    if known is None:
        cmd = _binary()
        try:
            st = Path(cmd[0]).stat()
        except OSError:
            return cmd
        known = _IDENTITIES[path] = [*cmd, st.st_size, st.st_mtime_ns]
    return list(known)


_IDENTITIES: dict[str, list[Any]] = {}


_KIND_LINE = re.compile(rb"(?m)^kind:")
_URL_LIKE = re.compile(r"^[a-z][a-z0-9+.-]*://|^(git@|github\.com/|gitlab\.com/|bitbucket\.org/)")


class _Closure:
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
        self._index: dict[str, dict[str, set[str]]] | None = None

    @classmethod
    def walk(cls, root: Path, start: str, *also: str) -> _Closure:
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
            rel = _rel(kfile, root)
            try:
                docs = yamlio.load_documents(kfile.read_bytes(), rel)
            except (GitDriftError, OSError):
                continue  # kustomize reports it
            for doc in docs:
                if not isinstance(doc, Mapping):
                    continue
                for field in ("resources", "bases", "components"):
                    for entry in _str_list(doc.get(field)):
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


def apply_options(
    kustomization: Mapping[str, Any],
    options: Mapping[str, Any],
    *,
    env: Mapping[str, str],
    kustomization_dir: Path | None = None,
    name: str = "kustomization.yaml",
) -> dict[str, Any]:
    """A copy of `kustomization` with Argo CD's kustomize options applied, in Argo CD's order."""
    out: dict[str, Any] = dict(kustomization)
    if options.get("namePrefix"):
        out["namePrefix"] = str(options["namePrefix"])
    if options.get("nameSuffix"):
        out["nameSuffix"] = str(options["nameSuffix"])
    images = options.get("images") or []
    if images:
        out["images"] = set_images(out.get("images") or [], [envsubst(str(i), env) for i in images])
    replicas = options.get("replicas") or []
    if replicas:
        out["replicas"] = set_replicas(out.get("replicas") or [], replicas)
    labels = options.get("commonLabels") or {}
    if labels:
        _add_labels(out, options, {str(k): envsubst(str(v), env) for k, v in labels.items()}, name)
    annotations = options.get("commonAnnotations") or {}
    if annotations:
        subst = bool(options.get("commonAnnotationsEnvsubst"))
        values = {
            str(k): envsubst(str(v), env) if subst else str(v) for k, v in annotations.items()
        }
        existing = dict(out.get("commonAnnotations") or {})
        _write_map(
            existing,
            values,
            force=bool(options.get("forceCommonAnnotations")),
            what="annotation",
            name=name,
        )
        out["commonAnnotations"] = existing
    if options.get("namespace"):
        out["namespace"] = str(options["namespace"])
    patches = options.get("patches") or []
    if patches:
        out["patches"] = [*(out.get("patches") or []), *[_patch(p) for p in patches]]
    components = options.get("components") or []
    if components:
        current = list(out.get("components") or [])
        ignore_missing = bool(options.get("ignoreMissingComponents"))
        for component in (str(c) for c in components):
            local = kustomization_dir is not None and "://" not in component
            if (
                ignore_missing
                and local
                and kustomization_dir is not None
                and not (kustomization_dir / component).exists()
            ):
                continue
            if component not in current:
                current.append(component)
        out["components"] = current
    return out


def parse_image(arg: str) -> dict[str, str]:
    """`kustomize edit set image` argument → an `images:` entry.

    Forms: `name=newName:tag`, `name=newName@digest`, `name=newName`, `name:tag`, `name@digest`.
    """
    if "=" in arg:
        name, _, new = arg.partition("=")
        entry = {"name": name}
        over = _parse_overwrite(new, allow_bare=True, arg=arg)
        if over.get("name"):
            entry["newName"] = over["name"]
    else:
        over = _parse_overwrite(arg, allow_bare=False, arg=arg)
        entry = {"name": over["name"]}
    if "tag" in over:
        entry["newTag"] = over["tag"]
    if "digest" in over:
        entry["digest"] = over["digest"]
    return entry


def set_images(current: Sequence[Any], args: Sequence[str]) -> list[Any]:
    """`kustomize edit set image ARGS…` applied to an `images:` list."""
    wanted = {}
    for arg in args:
        entry = parse_image(arg)
        wanted[entry["name"]] = entry
    out: list[Any] = []
    for item in current:
        if isinstance(item, Mapping) and item.get("name") in wanted:
            new = wanted.pop(str(item["name"]))
            merged = dict(item)
            if "newName" in new:
                merged["newName"] = new["newName"]
            if "newTag" in new:
                merged["newTag"] = new["newTag"]
                merged.pop("digest", None)
            if "digest" in new:
                merged["digest"] = new["digest"]
                merged.pop("newTag", None)
            out.append(merged)
        else:
            out.append(item)
    out.extend(wanted[name] for name in sorted(wanted))
    return out


def set_replicas(current: Sequence[Any], replicas: Sequence[Any]) -> list[Any]:
    """`kustomize edit set replicas name=count…` applied to a `replicas:` list."""
    wanted: dict[str, int] = {}
    for entry in replicas:
        if not isinstance(entry, Mapping) or not entry.get("name"):
            raise SourceError(f"kustomize.replicas: entry {entry!r} has no name")
        try:
            wanted[str(entry["name"])] = int(str(entry.get("count")))
        except ValueError:
            raise SourceError(
                f"kustomize.replicas: count {entry.get('count')!r} of {entry['name']}"
                " is not a number"
            ) from None
    out: list[Any] = []
    for item in current:
        if isinstance(item, Mapping) and item.get("name") in wanted:
            out.append({**item, "count": wanted.pop(str(item["name"]))})
        else:
            out.append(item)
    out.extend({"name": name, "count": count} for name, count in wanted.items())
    return out


_ENV_REF = re.compile(r"\$(\$|\{([^}]*)\}|([A-Za-z0-9_]+))")


def envsubst(text: str, env: Mapping[str, str]) -> str:
    """Argo CD's Envsubst (Go os.Expand): `$VAR`/`${VAR}` from `env`, unknown ones empty,
    `$$` → `$`."""

    def repl(match: re.Match[str]) -> str:
        if match.group(1) == "$":
            return "$"
        return env.get(match.group(2) if match.group(2) is not None else match.group(3), "")

    return _ENV_REF.sub(repl, text)


# --------------------------------------------------------------------------- internals


def _parse_overwrite(text: str, *, allow_bare: bool, arg: str) -> dict[str, str]:
    if "@" in text:
        name, _, digest = text.partition("@")
        return {"name": name, "digest": digest}
    match = _IMAGE_TAG.match(text)
    if match:
        return {"name": match.group(1), "tag": match.group(2)}
    if text and allow_bare:
        return {"name": text}
    raise SourceError(
        f"kustomize.images: {arg!r} is not an image override",
        hint="use name=newName:tag, name:tag or name@digest",
    )


def _add_labels(
    out: dict[str, Any], options: Mapping[str, Any], values: dict[str, str], name: str
) -> None:
    force = bool(options.get("forceCommonLabels"))
    if options.get("labelWithoutSelector"):
        entry: dict[str, Any] = {"pairs": {}, "includeSelectors": False}
        if options.get("labelIncludeTemplates"):
            entry["includeTemplates"] = True
        _write_map(entry["pairs"], values, force=force, what="label", name=name)
        out["labels"] = [*(out.get("labels") or []), entry]
        return
    existing = dict(out.get("commonLabels") or {})
    _write_map(existing, values, force=force, what="label", name=name)
    out["commonLabels"] = existing


def _write_map(
    target: dict[str, Any], values: Mapping[str, str], *, force: bool, what: str, name: str
) -> None:
    for key, value in values.items():
        if key in target and not force:
            raise SourceError(
                f"{name}: {what} {key} already in the kustomization (kustomize edit add {what})",
                hint=f"set force{'CommonLabels' if what == 'label' else 'CommonAnnotations'}: true"
                " in the Application's kustomize options, as Argo CD needs it too",
            )
        target[key] = value


def _patch(patch: Any) -> Any:
    if not isinstance(patch, Mapping):
        raise SourceError(f"kustomize.patches: mapping expected, got {yamlio.type_name(patch)}")
    return {k: v for k, v in patch.items() if v not in (None, "", {}, [])}


def _str_list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _copy_tree(src: Path, dest: Path, dirs: Sequence[str] | None = None) -> None:
    """Copy `src` to `dest` (hard links where possible; files we edit are replaced, not written).

    With `dirs` (tree-relative kustomization directories) only their subtrees are copied: under
    kustomize's default LoadRestrictionsRootOnly every file a kustomization reads lies below its
    own directory. A symlink in them may point anywhere in the tree: then the whole tree is
    copied (copying it all for every app made a cold `--all` spend minutes in the filesystem)."""

    def link_or_copy(source: str, target: str) -> object:
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)
        return target

    def copy(source: Path, target: Path) -> None:
        shutil.copytree(
            source,
            target,
            symlinks=True,
            copy_function=link_or_copy,
            ignore=shutil.ignore_patterns(".git"),
        )

    tops = sorted({posixpath.normpath(d) for d in dirs or ()})
    tops = [d for d in tops if not any(_below(d, other) for other in tops if other != d)]
    if dirs is None or "." in tops or any(_has_symlink(src / d) for d in tops):
        copy(src, dest)
        return
    dest.mkdir(parents=True, exist_ok=True)
    for rel in tops:
        copy(src / rel, dest / rel)


def _below(path: str, parent: str) -> bool:
    return parent == "." or path.startswith(parent + "/")


def _has_symlink(directory: Path) -> bool:
    todo = [directory]
    while todo:
        with os.scandir(todo.pop()) as entries:
            for entry in entries:
                if entry.is_symlink():
                    return True
                if entry.is_dir(follow_symlinks=False):
                    todo.append(Path(entry.path))
    return False


def _unrestricted(build_options: Sequence[str]) -> bool:
    """`--load-restrictor LoadRestrictionsNone`: a kustomization may read any file."""
    flags = " ".join(build_options).replace("=", " ")
    return "LoadRestrictionsNone" in flags


def _check_inside(root: Path, kdir: Path) -> None:
    """Refuse a kustomization (the app's, or a base it reaches) whose resources/bases/components
    name a directory outside the tree. LoadRestrictionsRootOnly confines *files* to a
    kustomization's own directory, but kustomize follows a base wherever it points
    (`../../../../home/me/x`), and what it renders there would be read from this machine and
    shown in the report."""
    todo, seen = [_rel(kdir, root) if kdir != root else "."], set()
    while todo:
        directory = posixpath.normpath(todo.pop())
        kfile = find_kustomization(root / directory)
        if directory in seen or kfile is None:
            continue
        seen.add(directory)
        rel = _rel(kfile, root)
        for doc in yamlio.load_documents(kfile.read_bytes(), rel):
            for field in ("resources", "bases", "components"):
                for entry in _str_list(doc.get(field)):
                    target = posixpath.normpath(posixpath.join(directory, entry))
                    if entry.startswith("/") or target == ".." or target.startswith("../"):
                        raise SourceError(
                            f"{rel}: {field} entry {entry!r} points outside the repository",
                            hint="kustomize bases must live in the same repository "
                            "(or be remote URLs)",
                        )
                    if (root / target).is_dir():
                        todo.append(target)


def _replace_file(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".gitdrift-")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    Path(tmp).replace(path)  # breaks any hard link to the user's file


def _binary() -> list[str]:
    kustomize = shutil.which("kustomize")
    if kustomize:
        return [kustomize, "build"]
    kubectl = shutil.which("kubectl")
    if kubectl:
        return [kubectl, "kustomize"]
    raise SourceError(
        "kustomize sources need kustomize or kubectl on PATH",
        hint="install kubectl (it includes kustomize) or kustomize",
    )


def _helm_enabled(build_options: Sequence[str]) -> bool:
    """Argo CD's isHelmEnabled: `--enable-helm` anywhere in the build options."""
    return "--enable-helm" in " ".join(build_options)


def _helm_flags(
    build_options: Sequence[str], options: Mapping[str, Any], workdir: Path
) -> list[str]:
    """`--helm-command` (the helm gitdrift uses; kustomize before v5.8 insists on helm v3, so a
    helm v4 is given through a shim that answers its version check) and, as Argo CD's
    parseKustomizeBuildOptions, `--helm-kube-version`/`--helm-api-versions` from the
    Application's kustomize options."""
    from kubectl_gitdrift.sources import helm  # helm imports this module

    flags: list[str] = []
    given = " ".join(build_options)
    if "--helm-command" not in given:
        binary = helm.helm_binary()
        if binary is None:
            raise SourceError(
                "kustomize helmCharts (--enable-helm) need the helm binary",
                hint="install helm (tools/install_helm.sh), put it on PATH or set "
                f"${helm.HELM_ENV}",
            )
        flags += ["--helm-command", _helm_command(binary, workdir)]
    if not _knows_helm_versions(tuple(_binary())):
        return flags  # kustomize before v5.3 (Argo CD passes these only from v5.3 on)
    kube_version = str(options.get("kubeVersion") or "")
    if kube_version:
        flags += ["--helm-kube-version", kube_version]
    for api_version in options.get("apiVersions") or []:
        flags += ["--helm-api-versions", str(api_version)]
    return flags


@functools.lru_cache(maxsize=4)
def _knows_helm_versions(cmd: tuple[str, ...]) -> bool:
    """Does this kustomize take --helm-kube-version (v5.3+)? Its own --help says."""
    try:
        proc = subprocess.run(
            [*cmd, "--help"], capture_output=True, timeout=30, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"--helm-kube-version" in proc.stdout + proc.stderr


def _helm_command(binary: str, workdir: Path) -> str:
    """`binary`, or for helm v4 a shim that reports a v3 version to kustomize's check
    (`helm version -c --short`, a flag helm v4 dropped) and runs helm v4 for everything else."""
    if _helm_major(binary) != "4":
        return binary
    shim = workdir / "helm-for-kustomize"
    if not shim.exists():
        text = (
            "#!/bin/sh\n"
            "# kubectl-gitdrift: kustomize's helmCharts accept only helm v3; helm v4 renders the\n"
            "# same templates. Answer the version check, pass everything else through.\n"
            'if [ "$1" = version ]; then echo v3.99.0; exit 0; fi\n'
            f'exec {shlex.quote(binary)} "$@"\n'
        )
        tmp = workdir / f".helm-for-kustomize-{os.getpid()}-{threading.get_ident()}"
        tmp.write_text(text, encoding="utf-8")
        tmp.chmod(0o755)
        tmp.replace(shim)
    return str(shim)


@functools.lru_cache(maxsize=8)
def _helm_major(binary: str) -> str:
    try:
        proc = subprocess.run(
            [binary, "version", "--short"],
            capture_output=True,
            timeout=30,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    match = re.search(rb"v?(\d+)\.\d+", proc.stdout)
    return match.group(1).decode() if match else ""


def _run_build(kdir: Path, display: str, root: Path, build_options: Sequence[str]) -> bytes:
    cmd = [*_binary(), str(kdir), "--load-restrictor=LoadRestrictionsRootOnly", *build_options]
    tool = "kustomize build" if cmd[1] == "build" else "kubectl kustomize"
    env = dict(os.environ, LC_ALL="C")
    if "--enable-alpha-plugins" not in build_options:
        env.pop("KUSTOMIZE_PLUGIN_HOME", None)
    timeout = kustomize_timeout()
    # bounded like a plugin: kustomize starts helm (helmCharts) and, with --allow-plugins, the
    # repository's exec plugins; on a time-out they go with it (its process group)
    proc = process.run_bounded(
        cmd,
        cwd=root,
        env=env,
        timeout=timeout,
        what=f"kustomize build {display}",
        limit=yamlio.MAX_BYTES,
        hint=f"run: {tool} {display} (or raise {TIMEOUT_ENV})",
    )
    if proc.returncode != 0:
        detail = _error_detail(proc.stderr, root)
        hint = f"run: {tool} {display}"
        if "must specify --enable-helm" in detail:
            hint = (
                "helmCharts need `kustomize.buildOptions: --enable-helm` in argocd-cm, "
                "as Argo CD needs it too"
            )
        raise SourceError(
            f"kustomize build {display} failed (exit {proc.returncode}): {detail}", hint=hint
        )
    return proc.stdout


_KLOG_ERR = re.compile(r'err="((?:[^"\\]|\\.)*)"')


_ERROR_DETAIL_MAX = 400
_HELM_RUN = re.compile(
    r"\s*:? ?unable to run: '(\S+) (\S+)[^']*' with env=\[[^\]]*\].*$", re.DOTALL
)


def _error_detail(stderr: bytes, root: Path) -> str:
    """kustomize's own error, on one line: kubectl logs it through klog, on one line
    (`err="…"`) or as a block (`err=<` … `>`); kustomize prints `Error: …` and what follows.
    A helm failure under helmCharts keeps helm's message, not the command line and env."""
    text = stderr.decode("utf-8", "replace")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return "no error output"
    start = next((i for i, ln in enumerate(lines) if ln.endswith("err=<")), None)
    if start is not None:
        block = lines[start + 1 :]
        if block and block[-1] == ">":
            block = block[:-1]
        line = " ".join(block)
    else:
        first = next(
            (i for i, ln in enumerate(lines) if ln.startswith(("Error: ", "error: "))), None
        )
        line = " ".join(lines[first:]) if first is not None else lines[-1]
        match = _KLOG_ERR.search(line)  # kubectl logs through klog: E… run.go:72] "…" err="…"
        if match:
            line = match.group(1).replace('\\"', '"').replace("\\\\", "\\")
            line = line.replace("\\n", " ").replace("\\t", " ")
    line = line.replace("Use --debug flag to render out invalid YAML", "")
    helm_run = _HELM_RUN.search(line)
    if helm_run:  # `<helm> template …` with env=[HELM_*]: say which helm step failed
        line = line[: helm_run.start()].rstrip(" :") + f" (helm {helm_run.group(2)})"
    line = re.sub(r"\s+", " ", line).strip()
    line = line.removeprefix("Error: ").removeprefix("error: ")
    for prefix in sorted({str(root), str(root.resolve())}, key=len, reverse=True):
        line = line.replace(prefix + "/", "").replace(prefix, ".")
    if len(line) > _ERROR_DETAIL_MAX:
        line = line[: _ERROR_DETAIL_MAX - 1] + "…"
    return line


def _take_origin(body: dict[str, Any], display: str, *, keep: bool) -> str | None:
    """Read (and unless `keep`, remove) the origin annotation; return the repo-relative file."""
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        return None
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict):
        return None
    raw = annotations.get(ORIGIN_ANNOTATION)
    for key in [k for k in annotations if k.startswith(_INTERNAL_PREFIX)]:
        del annotations[key]
    if not keep:
        annotations.pop(ORIGIN_ANNOTATION, None)
    if not annotations:
        del metadata["annotations"]
    if not isinstance(raw, str):
        return None
    with contextlib.suppress(yaml.YAMLError):
        origin = yaml.safe_load(raw)
        if isinstance(origin, Mapping) and not origin.get("repo"):
            rel = origin.get("path") or origin.get("configuredIn")
            if isinstance(rel, str) and rel:
                base = "" if display == "." else display
                joined = posixpath.normpath(posixpath.join(base, rel))
                return None if joined.startswith("../") or joined == ".." else joined
    return None
