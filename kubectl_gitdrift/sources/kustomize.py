"""Build a kustomization the way Argo CD's repo-server does.

Argo CD applies the Application's `spec.source.kustomize` options with `kustomize edit …` before
`kustomize build` (argocd-semantics.md §4.1). Here the same edits are made in Python
(sources/kustomize_edit.py), on a private copy of the tree (the user's files are never written),
then `kustomize build` (or `kubectl kustomize`, sources/tools.py) runs with exec/alpha plugins
off. `buildMetadata: [originAnnotations]` is added so each object says which file defined it;
that becomes `Manifest.origin` and the annotation is removed again (unless the kustomization
asked for it itself, in which case Argo CD applies it too). What the kustomization reaches is
walked first (sources/kustomize_closure.py).

helmCharts (with `--enable-helm`) inflate with the helm the app's Argo CD bundles, as the
repo-server's kustomize runs the `helm` on its PATH, its bundled one (Argo CD passes no
`--helm-command`): kustomize is given `--helm-command` with tools.choose_helm's helm, and the
source's notes say which helm rendered. A `--helm-command` in `kustomize.buildOptions` names a
binary in the repo-server's image: it is kept when this machine has it, else replaced by that
choice (noted). The render cache key of a kustomization with helmCharts names the helm.
"""

from __future__ import annotations

import contextlib
import functools
import os
import posixpath
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.model import Manifest, ObjectKey
from kubectl_gitdrift.settings import KUSTOMIZE_TIMEOUT_ENV, Settings
from kubectl_gitdrift.sources import process, tools
from kubectl_gitdrift.sources.buildenv import with_cluster_versions
from kubectl_gitdrift.sources.cache import CacheMiss, RenderCache
from kubectl_gitdrift.sources.context import RenderContext
from kubectl_gitdrift.sources.kustomize_closure import (
    Closure,
    check_inside,
    find_kustomization,
    str_list,
    tree_rel,
)
from kubectl_gitdrift.sources.kustomize_edit import apply_options

ORIGIN_ANNOTATION = "config.kubernetes.io/origin"
_INTERNAL_PREFIX = "internal.config.kubernetes.io/"
_FORBIDDEN_FLAGS = ("--enable-alpha-plugins", "--enable-exec", "--enable-star", "--mount")


class Kustomize:
    """The kustomize renderer: `build` with the flags argocd-cm gives (unless the caller gives
    its own), after Argo CD's check of the kustomize version the source asks for; the cluster's
    versions reach kustomize only with --enable-helm (Argo CD passes them to its helmCharts)."""

    def render(self, ctx: RenderContext) -> list[Manifest]:
        conf = ctx.config
        conf.check_kustomize_version(str(ctx.options.get("version") or ""), ctx.path)
        flags = ctx.build_options or conf.kustomize_flags()
        options = ctx.options
        if _helm_enabled(flags):  # only then: other builds, and their cache keys, keep these
            options = with_cluster_versions(options, conf.kube_version, conf.api_versions)
        return build(
            ctx.tree,
            ctx.path,
            options,
            workdir=ctx.workdir,
            env=ctx.env,
            build_options=flags,
            revision=ctx.revision,
            cache=ctx.cache,
            cached_only=ctx.cached_only,
            allow_exec=conf.allow_plugins,
            offline=ctx.offline,
            settings=ctx.settings,
            helm_choice=functools.partial(
                tools.choose_helm, ctx.settings, conf.argocd_version, conf.repo_server
            ),
            notes=ctx.notes,
        )


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
    settings: Settings | None = None,
    helm_choice: Callable[[], tools.HelmChoice] | None = None,
    notes: list[str] | None = None,
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
    for kustomizations of up to `settings.origin_annotations_max()` objects; past that the
    annotations would double kustomize's time (kubernetes-sigs/kustomize#5988), so the build runs
    without them and the origin is found by scanning the kustomization's resource files for
    kind+name. `settings` (default: this process's environment, read now) also give the time
    limit. `helm_choice` chooses the helm that helmCharts inflate with (default: tools.choose_helm
    without an Argo CD version), asked only for a kustomization that has helmCharts; which
    helm rendered is added to `notes` when the choice says.
    """
    settings = settings or Settings.from_environ()
    choose = helm_choice or functools.partial(tools.choose_helm, settings)
    display = app_path.strip("/") or "."
    for flag in build_options:
        if flag.split("=", 1)[0] in _FORBIDDEN_FLAGS and not allow_exec:
            raise SourceError(
                f"kustomize build option {flag} is not allowed: it runs commands from the "
                "repository",
                hint="pass --allow-plugins to allow kustomize's exec and alpha plugins",
            )
    limit = settings.origin_annotations_max()
    helm = _helm_enabled(build_options)
    own_helm = bool(helm and _local_helm_command(build_options))  # the build options' own
    key = None
    chosen: tools.HelmChoice | None = None
    walked: tuple[str, Closure] | None = None  # the walk the cache key needed (from where)
    if cache is not None and revision:
        parts: list[Any] | None = [
            "kustomize", revision, app_path, options or {}, env or {}, list(build_options),
            tools.kustomize_identity(), limit,
        ]  # fmt: skip
        if helm and not own_helm:  # the helm that inflates its helmCharts is in the render
            walked = _walk(tree, app_path.strip("/") or ".")
            if walked is None:
                parts = None  # not walkable: the build below says why
            elif walked[1].helm:
                chosen = choose()
                parts = [*(parts or ()), chosen.binary, tools.helm_version(chosen.binary or "")]
        key = cache.key(*parts) if parts is not None else None
        hit = cache.get(key) if key is not None else None
        if hit is not None:
            _note(notes, chosen)
            return hit
    if cached_only:
        raise CacheMiss(app_path)
    kdir = tree / app_path if display != "." else tree
    kfile = find_kustomization(kdir)
    if kfile is None:
        raise SourceError(f"{display}: no kustomization.yaml in the source path")
    rel_kfile = tree_rel(kfile, tree)
    docs = yamlio.load_documents(kfile.read_bytes(), rel_kfile)
    if len(docs) != 1:
        raise SourceError(f"{rel_kfile}: expected one kustomization document, got {len(docs)}")
    kustomization = docs[0]
    keep_origin = "originAnnotations" in str_list(kustomization.get("buildMetadata"))
    edited = apply_options(
        kustomization, options or {}, env=env or {}, kustomization_dir=kdir, name=rel_kfile
    )
    check_inside(tree, kdir)
    start = tree_rel(kdir, tree) if kdir != tree else "."
    closure = walked[1] if walked is not None and walked[0] == start else Closure.walk(tree, start)
    if closure.helm and not helm:
        # kustomize refuses before it downloads anything: say that first, not --offline
        raise SourceError(
            f"kustomize build {display}: {closure.helm[0]}: kustomize inflates helm charts "
            "only with --enable-helm, and Argo CD's build fails the same way: must specify "
            "--enable-helm",
            hint=ENABLE_HELM_HINT,
        )
    if offline and closure.network:
        raise SourceError(
            f"kustomize build {display}: --offline, but kustomize would download "
            f"{closure.network[0]}",
            hint="run without --offline, or vendor the base or chart into the repository",
        )
    annotate = keep_origin or closure.objects <= limit
    copy: Path | None = None
    try:
        # with --enable-helm, kustomize pulls charts into the kustomization's chartHome: a copy
        if annotate or edited != kustomization or helm:
            workdir.mkdir(parents=True, exist_ok=True)
            copy = Path(tempfile.mkdtemp(prefix="kustomize-", dir=workdir))
            added = [
                posixpath.normpath(posixpath.join(start, entry))
                for field in ("resources", "components")
                for entry in str_list(edited.get(field))
                if entry not in str_list(kustomization.get(field))
            ]
            reach = Closure.walk(tree, start, *added) if added else closure
            _copy_tree(tree, copy / "tree", None if _unrestricted(build_options) else reach.dirs)
            root = copy / "tree"
            kdir = root / app_path if display != "." else root
            kfile = root / rel_kfile
            if annotate:
                metadata = str_list(edited.get("buildMetadata"))
                if "originAnnotations" not in metadata:
                    edited["buildMetadata"] = [*metadata, "originAnnotations"]
            _replace_file(kfile, yaml.safe_dump(edited, sort_keys=False))
            check_inside(root, kdir)
            if edited.get("resources") != kustomization.get("resources") or edited.get(
                "components"
            ) != kustomization.get("components"):
                closure = Closure.walk(root, tree_rel(kdir, root) if kdir != root else ".")
        else:  # nothing to edit: build the tree as it is (it is only read)
            root = tree.absolute()
            kdir = root / app_path if display != "." else root
        flags = list(build_options)
        if helm:
            workdir.mkdir(parents=True, exist_ok=True)
            if closure.helm and chosen is None and not own_helm:
                chosen = choose()
            flags = _helm_flags(build_options, options or {}, workdir, settings, chosen, notes)
        output = _run_build(kdir, display, root, flags, settings)
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
    _note(notes, chosen)
    return manifests


def _walk(tree: Path, start: str) -> tuple[str, Closure] | None:
    """The closure of the kustomization in `start` (and `start`, for the build to reuse it),
    whose helmCharts (Closure.helm) go into the cache key; None when the walk fails (the build
    then fails with the reason)."""
    try:
        return start, Closure.walk(tree, start)
    except (SourceError, OSError):
        return None


def _note(notes: list[str] | None, chosen: tools.HelmChoice | None) -> None:
    """Which helm inflated the helmCharts, when the choice says (once per render)."""
    if notes is None or chosen is None or not chosen.note:
        return
    if f"helmCharts: {chosen.note}" not in notes:
        notes.append(f"helmCharts: {chosen.note}")


# --------------------------------------------------------------------------- internals


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


def _replace_file(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".gitdrift-")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    Path(tmp).replace(path)  # breaks any hard link to the user's file


ENABLE_HELM_HINT = (
    "add `kustomize.buildOptions: --enable-helm` to argocd-cm (Argo CD needs it too); gitdrift "
    "reads it from the cluster's argocd-cm, or from the one in the --snapshot file"
)


def _helm_enabled(build_options: Sequence[str]) -> bool:
    """Argo CD's isHelmEnabled: `--enable-helm` anywhere in the build options."""
    return "--enable-helm" in " ".join(build_options)


def _helm_flags(
    build_options: Sequence[str],
    options: Mapping[str, Any],
    workdir: Path,
    settings: Settings,
    chosen: tools.HelmChoice | None = None,
    notes: list[str] | None = None,
) -> list[str]:
    """The build options with `--helm-command` (the `chosen` helm, else the default one;
    kustomize before v5.8 insists on helm v3, so a helm v4 is given through a shim that answers
    its version check) and, as Argo CD's parseKustomizeBuildOptions, `--helm-kube-version`/
    `--helm-api-versions` from the Application's kustomize options. A `--helm-command` of the
    build options stays when this machine has that binary; else the chosen helm replaces it,
    and `notes` say so."""
    flags, given = _without_helm_command(build_options)
    if _local_helm_command(build_options):
        flags = list(build_options)
    else:
        binary = chosen.binary if chosen is not None else tools.helm_binary(settings)
        if binary is None:
            raise SourceError(
                "kustomize helmCharts (--enable-helm) need the helm binary",
                hint=tools.INSTALL_HELM,
            )
        if given and notes is not None:
            notes.append(
                f"kustomize.buildOptions --helm-command {given} is not on this machine (a "
                f"path in the repo-server's image): helmCharts ran {binary} instead"
            )
        flags += ["--helm-command", tools.helm_for_kustomize(binary, workdir)]
    if not tools.kustomize_knows_helm_versions(tuple(tools.kustomize_command())):
        return flags  # kustomize before v5.3 (Argo CD passes these only from v5.3 on)
    kube_version = str(options.get("kubeVersion") or "")
    if kube_version:
        flags += ["--helm-kube-version", kube_version]
    for api_version in options.get("apiVersions") or []:
        flags += ["--helm-api-versions", str(api_version)]
    return flags


def _local_helm_command(build_options: Sequence[str]) -> str:
    """The `--helm-command` of the build options when this machine has that binary, else ""."""
    given = _without_helm_command(build_options)[1]
    return given if given and shutil.which(given) else ""


def _without_helm_command(build_options: Sequence[str]) -> tuple[list[str], str]:
    """The build options without `--helm-command X` (or `--helm-command=X`), and X ("")."""
    out: list[str] = []
    given = ""
    items = list(build_options)
    i = 0
    while i < len(items):
        flag = items[i]
        if flag == "--helm-command" and i + 1 < len(items):
            given = items[i + 1]
            i += 2
            continue
        if flag.startswith("--helm-command="):
            given = flag.split("=", 1)[1]
        else:
            out.append(flag)
        i += 1
    return out, given


def _run_build(
    kdir: Path, display: str, root: Path, build_options: Sequence[str], settings: Settings
) -> bytes:
    cmd = [
        *tools.kustomize_command(),
        str(kdir),
        "--load-restrictor=LoadRestrictionsRootOnly",
        *build_options,
    ]
    tool = "kustomize build" if cmd[1] == "build" else "kubectl kustomize"
    env = dict(os.environ, LC_ALL="C")
    if "--enable-alpha-plugins" not in build_options:
        env.pop("KUSTOMIZE_PLUGIN_HOME", None)
    timeout = settings.kustomize_timeout()
    # bounded like a plugin: kustomize starts helm (helmCharts) and, with --allow-plugins, the
    # repository's exec plugins; on a time-out they go with it (its process group)
    proc = process.run_bounded(
        cmd,
        cwd=root,
        env=env,
        timeout=timeout,
        what=f"kustomize build {display}",
        limit=yamlio.MAX_BYTES,
        hint=f"run: {tool} {display} (or raise {KUSTOMIZE_TIMEOUT_ENV})",
    )
    if proc.returncode != 0:
        detail = _error_detail(proc.stderr, root)
        hint = f"run: {tool} {display}"
        if "must specify --enable-helm" in detail:
            hint = ENABLE_HELM_HINT
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
