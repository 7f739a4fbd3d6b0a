"""Helm sources: run the real `helm template` the way Argo CD's repo-server builds the command.

Follows `helmTemplate` in Argo CD's reposerver/repository/repository.go and `template` in
util/helm/cmd.go (argocd-semantics.md §4.1)::

    helm template . --name-template <releaseName or app name> --namespace <helm.namespace or
      destination namespace> [--kube-version v] --set k=v… --set-string k=v… --set-file k=path…
      --values <each valueFiles, in order> --values <values/valuesObject tempfile>
      --api-versions a… [--include-crds unless skipCrds] [--skip-schema-validation] [--skip-tests]

Value files are env-substituted and resolved against the chart directory (absolute paths against
the repository root); `$<ref>/path` resolves against the tree of the source whose `ref` is
`<ref>`. A missing value file is an error unless `ignoreMissingValueFiles`. `valuesObject` wins
over `values`. `--set*` values have unescaped commas escaped, as Argo CD's `cleanSetParameters`.

Charts from Helm repositories and OCI registries are pulled, and dependencies missing from
`charts/` built, by `sources/charts.py` (into the cache, as Argo CD's repo-server does); `helm
template` then runs on the pulled chart, or on a copy of the git chart with its dependencies.
Remote value files are refused. Hooks are not run (`helm template` never runs them); hook
objects are in the output and dropped by the engine.

The helm binary: `$KUBECTL_GITDRIFT_HELM`, else `helm` on PATH, or a helm 3 where the app's
Argo CD bundles helm 3 (or --helm-version says 3): sources/tools.py's choose_helm.
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.model import Application, AppSource, Manifest, ObjectKey
from kubectl_gitdrift.settings import Settings
from kubectl_gitdrift.sources import charts as chart_fetch
from kubectl_gitdrift.sources import process, tools
from kubectl_gitdrift.sources.buildenv import envsubst, with_cluster_versions
from kubectl_gitdrift.sources.cache import CacheMiss
from kubectl_gitdrift.sources.context import RenderContext
from kubectl_gitdrift.sources.globs import filepath_glob, has_glob

_SOURCE_LINE = re.compile(r"^# Source: (.+?)\s*$", re.MULTILINE)
_DOC_SPLIT = re.compile(r"^---[ \t]*(?:#.*)?$", re.MULTILINE)
_REMOTE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


def helm_binary(settings: Settings | None = None) -> str | None:
    """`$KUBECTL_GITDRIFT_HELM`, else `helm` on PATH (tools.helm_binary), as `settings` say
    (default: this process's environment, read now); where tests ask whether helm is there."""
    return tools.helm_binary(settings or Settings.from_environ())


class RefTrees(Mapping[str, Path]):
    """`ref` name → exported tree of that source, exported only when a value file asks for it."""

    def __init__(self, app: Application, export: Callable[[int, AppSource], Path]) -> None:
        self._sources = {s.ref: (i, s) for i, s in enumerate(app.sources) if s.ref}
        self._export = export
        self._trees: dict[str, Path] = {}

    def __getitem__(self, ref: str) -> Path:
        if ref not in self._trees:
            index, source = self._sources[ref]
            self._trees[ref] = self._export(index, source)
        return self._trees[ref]

    def __contains__(self, ref: object) -> bool:
        return ref in self._sources  # without exporting

    def __iter__(self) -> Iterator[str]:
        return iter(self._sources)

    def __len__(self) -> int:
        return len(self._sources)


class Helm:
    """The helm renderer: `template` over the chart at the context's source directory, with
    the source's helm options (the cluster's kubeVersion and apiVersions where it names none)."""

    def render(self, ctx: RenderContext) -> list[Manifest]:
        if ctx.cached_only:
            raise CacheMiss(ctx.path)
        conf = ctx.config
        return template(
            ctx.app_dir,
            app=ctx.app,
            source=ctx.source,
            options=with_cluster_versions(ctx.options, conf.kube_version, conf.api_versions),
            tree_for_ref=ctx.refs,
            workdir=ctx.workdir,
            env=ctx.env,
            tree=ctx.tree,
            charts=ctx.charts,
            policy=ctx.policy,
            revision=ctx.revision,
            display=ctx.display,
            origins=ctx.origins,
            settings=ctx.settings,
            argocd_version=conf.argocd_version,
            repo_server=conf.repo_server,
        )


def template(
    chart_dir: Path,
    *,
    app: Application,
    source: AppSource,
    options: Mapping[str, Any] | None,
    tree_for_ref: Mapping[str, Path],
    workdir: Path,
    env: Mapping[str, str],
    tree: Path | None = None,
    charts: chart_fetch.Charts | None = None,
    policy: chart_fetch.RepoPolicy | None = None,
    revision: str | None = None,
    display: str | None = None,
    origins: bool = True,
    settings: Settings | None = None,
    argocd_version: str = "",
    repo_server: Callable[[], tools.RepoServer] | None = None,
) -> list[Manifest]:
    """Render the chart at `chart_dir` with the Application's helm `options`.

    `tree` is the repository tree `chart_dir` lives in (default: derived from `source.path`);
    origins are reported relative to it (none with `origins=False`: a pulled chart is no file
    in git). `tree_for_ref` maps a source's `ref` to its tree, for `$<ref>/…` value files.
    `env` is Argo CD's build environment (ARGOCD_APP_NAME, …). Dependencies missing from
    `charts/` are built with `charts` (under the AppProject `policy`; cached when `revision`,
    the commit or chart digest, is known); without `charts` they are an error. The helm binary
    is the one `settings` name (default: this process's environment, read now), of the major
    Argo CD `argocd_version` (else the `repo_server` image) bundles when it is installed
    (tools.choose_helm).
    """
    options = options or {}
    settings = settings or Settings.from_environ()
    if source.chart and not source.path and display is None:
        raise SourceError(
            f"helm chart {source.chart} from {source.repo_url or 'a chart repository'}: "
            "charts from Helm or OCI repositories cannot be rendered offline",
            hint="vendor the chart into git and point the source's path at it",
        )
    display = display or _display(source.path)
    if tree is None:
        tree = chart_dir
        for _ in [] if display == "." else display.split("/"):
            tree = tree.parent
    chart = _chart_metadata(chart_dir, display)
    missing = _missing_dependencies(chart_dir, display, chart, fail=charts is None)
    _check_symlinks(chart_dir, tree, display)
    helm = tools.choose_helm(settings, argocd_version, repo_server).binary
    if helm is None:
        raise SourceError(
            f"source path {display}: helm sources need the helm binary", hint=tools.INSTALL_HELM
        )

    workdir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="helm-", dir=workdir))
    try:
        run_dir = chart_dir
        if missing and charts is not None:
            # Argo CD: `helm dependency build` when template says dependencies are missing
            run_dir = charts.build_dependencies(
                chart_dir,
                tree,
                display,
                policy=policy,
                pass_credentials=bool(options.get("passCredentials")),
                revision=revision,
            )
        args = _arguments(chart_dir, tree, app, options, tree_for_ref, env, scratch, display)
        output = _run(helm, args, run_dir, scratch, display, tree)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return _parse(output, display, str(chart.get("name") or ""), tree if origins else None)


def set_value(value: str) -> str:
    """Argo CD's cleanSetParameters: escape `,` not already escaped, except in `{a,b}` lists."""
    if value.startswith("{") and value.endswith("}"):
        return value
    return re.sub(r"(?<!\\),", r"\\,", value)


# --------------------------------------------------------------------------- internals


def _display(path: str) -> str:
    clean = path.strip().strip("/")
    return posixpath.normpath(clean) if clean else "."


def _chart_metadata(chart_dir: Path, display: str) -> dict[str, Any]:
    chart_file = chart_dir / "Chart.yaml"
    rel = posixpath.join(display, "Chart.yaml") if display != "." else "Chart.yaml"
    if not chart_file.is_file():
        raise SourceError(f"{rel}: not found; a helm source path must hold a chart")
    docs = yamlio.load_documents(chart_file.read_bytes(), rel)
    if len(docs) != 1:
        raise SourceError(f"{rel}: expected one document, got {len(docs)}")
    return dict(docs[0])


def _missing_dependencies(
    chart_dir: Path, display: str, chart: Mapping[str, Any], *, fail: bool
) -> list[Mapping[str, Any]]:
    """The dependencies not vendored in charts/ (Argo CD then runs `helm dependency build`);
    with `fail`, the first of them is an error instead."""
    deps = chart.get("dependencies")
    requirements = chart_dir / "requirements.yaml"  # apiVersion v1 charts
    if not deps and requirements.is_file():
        docs = yamlio.load_documents(requirements.read_bytes(), f"{display}/requirements.yaml")
        deps = (docs[0] if docs else {}).get("dependencies")
    if not isinstance(deps, list):
        return []
    vendored = _vendored_charts(chart_dir / "charts")
    name = chart.get("name") or display
    missing: list[Mapping[str, Any]] = []
    for dep in deps:
        if not isinstance(dep, Mapping) or not dep.get("name"):
            continue
        dep_name = str(dep["name"])
        if dep_name in vendored:
            continue
        if not fail:
            missing.append(dep)
            continue
        where = chart_fetch.redact(str(dep.get("repository") or "")) or "no repository"
        raise SourceError(
            f"source path {display}: helm chart {name} depends on {dep_name} ({where}), which is "
            "not vendored in charts/; gitdrift does not download charts",
            hint=f"run `helm dependency build {display}` and commit charts/, or render with "
            "Argo CD (`argocd app manifests`)",
        )
    return missing


def _vendored_charts(charts: Path) -> set[str]:
    names: set[str] = set()
    if not charts.is_dir():
        return names
    for entry in charts.iterdir():
        if entry.is_dir() and (entry / "Chart.yaml").is_file():
            try:
                meta = yaml.safe_load((entry / "Chart.yaml").read_text(encoding="utf-8"))
            except (yaml.YAMLError, UnicodeDecodeError):
                meta = None
            names.add(str(meta.get("name")) if isinstance(meta, Mapping) else entry.name)
            names.add(entry.name)
        elif entry.name.endswith(".tgz"):
            names.add(re.sub(r"-v?\d[^-]*(?:-[^-]+)*\.tgz$", "", entry.name))
            names.add(entry.name.removesuffix(".tgz"))
    return names


def _check_symlinks(chart_dir: Path, tree: Path, display: str) -> None:
    """helm follows symlinks in a chart; refuse any that leave the repository."""
    root = tree.resolve()
    for current, dirs, files in os.walk(chart_dir):
        for entry in (*dirs, *files):
            path = Path(current) / entry
            if path.is_symlink() and not path.resolve().is_relative_to(root):
                rel = path.relative_to(tree).as_posix()
                raise SourceError(
                    f"{rel}: symlink in helm chart {display} points outside the repository"
                )


def _resolve_file(raw: str, base: Path, root: Path, what: str, display: str) -> Path:
    """Argo CD's ResolveValueFilePathOrUrl: relative to `base`, absolute relative to `root`,
    never outside `root`; URLs are refused (no network)."""
    if _REMOTE.match(raw):
        raise SourceError(
            f"source path {display}: {what} {raw} is remote; gitdrift does not download files",
            hint="commit the file to the repository and reference it by path",
        )
    joined = root / raw.lstrip("/") if raw.startswith("/") else base / raw
    resolved = Path(os.path.normpath(joined))
    real_root = root.resolve()
    real = resolved.resolve() if resolved.exists() else resolved
    if not (
        resolved.is_relative_to(root) and (not resolved.exists() or real.is_relative_to(real_root))
    ):
        raise SourceError(
            f"source path {display}: {what} {raw} resolves outside the repository root"
        )
    return resolved


def value_files(
    chart_dir: Path,
    tree: Path,
    options: Mapping[str, Any],
    tree_for_ref: Mapping[str, Path],
    env: Mapping[str, str],
    display: str,
) -> list[Path]:
    """The value files `helm template` is given, in Argo CD's order (globs expanded, missing
    ones dropped with ignoreMissingValueFiles): the last one wins."""
    ignore_missing = bool(options.get("ignoreMissingValueFiles"))
    resolved: list[tuple[str, Path, Path]] = []  # (as written, path or glob, its tree)
    for raw in (str(v) for v in options.get("valueFiles") or []):
        head = raw.split("/", 1)[0]
        root = tree
        if raw.startswith("$") and head[1:] in tree_for_ref:
            # `$ref/…`: env substitution after the ref is resolved, path relative to that tree
            ref_root = root = tree_for_ref[head[1:]]
            rest = envsubst("/" + raw.split("/", 1)[1] if "/" in raw else "/", env)
            path = _resolve_file(rest, ref_root, ref_root, "value file", display)
        elif re.fullmatch(r"\$[A-Za-z_][A-Za-z0-9_]*", head) and head[1:] not in env and "/" in raw:
            # Argo CD would expand the unknown `$name` to "" and read `/rest` from the repo root;
            # that is almost always a ref typo, so say so
            raise SourceError(
                f"source path {display}: value file {raw} refers to ref {head[1:]}, but no "
                "source of the application has that ref",
                hint=f"add a source with `ref: {head[1:]}` to spec.sources, or fix the path",
            )
        else:
            path = _resolve_file(envsubst(raw, env), chart_dir, tree, "value file", display)
        resolved.append((raw, path, root))
    # Argo CD's getResolvedValueFiles: a glob (`*`, `?`, `[`; `**` any directories) expands to
    # its matches in doublestar's order, minus files also listed explicitly (they keep their own
    # place); a file listed twice is passed once
    explicit = {path for _, path, _ in resolved if not has_glob(str(path))}
    out: list[Path] = []
    for raw, path, root in resolved:
        if has_glob(str(path)):
            matches = filepath_glob(str(path))
            if not matches and not ignore_missing:
                raise SourceError(
                    f"source path {display}: values file glob {raw!r} matched no files",
                    hint="fix spec.source.helm.valueFiles, or set ignoreMissingValueFiles: true",
                )
            for match in matches:
                if not match.resolve().is_relative_to(root.resolve()):
                    raise SourceError(
                        f"source path {display}: values file glob {raw!r}: "
                        f"{match.relative_to(root).as_posix()} is a symlink out of the repository"
                    )
            out.extend(m for m in matches if m not in explicit and m not in out)
            continue
        if not path.is_file():
            if ignore_missing:
                continue
            raise SourceError(
                f"source path {display}: value file {raw} does not exist",
                hint="fix spec.source.helm.valueFiles, or set ignoreMissingValueFiles: true",
            )
        if path not in out:
            out.append(path)
    return out


def _values_yaml(options: Mapping[str, Any]) -> str:
    """Argo CD's ValuesYAML: valuesObject (as YAML) if set, else the values string."""
    obj = options.get("valuesObject")
    if obj is not None:
        return yaml.safe_dump(obj, sort_keys=True, default_flow_style=False)
    values = options.get("values")
    if values is None:
        return ""
    if isinstance(values, str):
        return values
    return yaml.safe_dump(values, sort_keys=True, default_flow_style=False)


def _arguments(
    chart_dir: Path,
    tree: Path,
    app: Application,
    options: Mapping[str, Any],
    tree_for_ref: Mapping[str, Path],
    env: Mapping[str, str],
    scratch: Path,
    display: str,
) -> list[str]:
    release = str(options.get("releaseName") or "") or app.name.rsplit("_", 1)[-1]
    namespace = str(options.get("namespace") or "") or app.dest_namespace
    args = ["template", ".", "--name-template", release]
    if namespace:
        args += ["--namespace", namespace]
    kube_version = str(options.get("kubeVersion") or "")
    if kube_version:
        args += ["--kube-version", kube_version]
    sets: dict[str, str] = {}
    set_strings: dict[str, str] = {}
    for param in options.get("parameters") or []:
        if not isinstance(param, Mapping) or not param.get("name"):
            raise SourceError(f"source path {display}: helm parameter {param!r} has no name")
        target = set_strings if param.get("forceString") else sets
        value = param.get("value")
        target[str(param["name"])] = "" if value is None else _scalar(value)
    set_files: dict[str, str] = {}
    for param in options.get("fileParameters") or []:
        if not isinstance(param, Mapping) or not param.get("name"):
            raise SourceError(f"source path {display}: helm fileParameter {param!r} has no name")
        raw = envsubst(str(param.get("path") or ""), env)
        path = _resolve_file(raw, chart_dir, tree, "file parameter", display)
        if not path.is_file():
            raise SourceError(
                f"source path {display}: file parameter {param['name']} path {raw} does not exist"
            )
        set_files[str(param["name"])] = str(path)
    # Argo CD keeps these in Go maps (random order); names are unique, so sorted is equivalent.
    for key, value in sorted(sets.items()):
        args += ["--set", f"{key}={set_value(value)}"]
    for key, value in sorted(set_strings.items()):
        args += ["--set-string", f"{key}={set_value(value)}"]
    for key, value in sorted(set_files.items()):
        args += ["--set-file", f"{key}={set_value(value)}"]
    for path in value_files(chart_dir, tree, options, tree_for_ref, env, display):
        args += ["--values", str(path)]
    inline = _values_yaml(options)
    if inline:
        values_file = scratch / "values.yaml"
        values_file.write_text(inline, encoding="utf-8")
        args += ["--values", str(values_file)]
    for api_version in options.get("apiVersions") or []:
        args += ["--api-versions", str(api_version)]
    if not options.get("skipCrds"):
        args.append("--include-crds")
    if options.get("skipSchemaValidation"):
        args.append("--skip-schema-validation")
    if options.get("skipTests"):
        args.append("--skip-tests")
    return args


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _run(
    helm: str, args: list[str], chart_dir: Path, scratch: Path, display: str, tree: Path
) -> bytes:
    home = scratch / "home"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("HELM_") and k not in ("KUBECONFIG",)
    }
    env.update(
        LC_ALL="C",
        HOME=str(home),
        HELM_CACHE_HOME=str(home / "cache"),
        HELM_CONFIG_HOME=str(home / "config"),
        HELM_DATA_HOME=str(home / "data"),
        HELM_PLUGINS=str(home / "plugins"),
        KUBECONFIG=os.devnull,
    )
    proc = process.run_tool(
        [helm, *args],
        cwd=chart_dir,
        env=env,
        timeout=tools.HELM_TIMEOUT,
        what=f"helm template {display}",
        hint=f"run: helm template {display}",
    )
    if proc.returncode != 0:
        raise SourceError(
            f"helm template {display} failed (exit {proc.returncode}): "
            f"{_error_detail(proc.stderr, chart_dir, tree, scratch)}",
            hint=f"run: helm template {display}",
        )
    return proc.stdout


_ERROR_DETAIL_MAX = 600
_USE_DEBUG = "Use --debug flag to render out invalid YAML"  # after a parse error: not for us


def _error_detail(stderr: bytes, chart_dir: Path, tree: Path, scratch: Path) -> str:
    """helm's error on one line: its last `Error: …` line with the lines after it (helm prints
    the error last; a schema failure lists each problem under a line ending in a colon:
    `… in the following chart(s): gateway: - at '': additional properties 'name' not
    allowed; - at …`), warnings before it left out, the run's paths made relative."""
    text = stderr.decode("utf-8", "replace")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and ln.strip() != _USE_DEBUG]
    if not lines:
        return "no error output"
    starts = [i for i, ln in enumerate(lines) if ln.lower().startswith("error")]
    line = ""
    for part in lines[starts[-1] :] if starts else lines[-1:]:
        joint = "; " if part.startswith("- ") and line and not line.endswith(":") else " "
        line = f"{line}{joint}{part}" if line else part
    line = re.sub(r"^(?:Error|error):\s*", "", line)
    for path, shown in (
        (scratch / "values.yaml", "<inline values>"),
        (tree, "."),
        (chart_dir, "."),
    ):
        for prefix in {str(path), str(path.resolve())}:
            line = line.replace(prefix + "/", "" if shown == "." else shown + "/")
            line = line.replace(prefix, shown)
    if len(line) > _ERROR_DETAIL_MAX:
        line = line[: _ERROR_DETAIL_MAX - 1] + "…"
    return line


def _parse(output: bytes, display: str, chart_name: str, tree: Path | None) -> list[Manifest]:
    text = output.decode("utf-8", "replace")
    manifests: list[Manifest] = []
    for chunk in _DOC_SPLIT.split(text):
        if not chunk.strip():
            continue
        match = _SOURCE_LINE.search(chunk)
        origin = _origin(match.group(1), display, chart_name, tree) if match and tree else None
        name = origin or f"helm template {display}"
        for body in yamlio.load_objects(chunk, name):
            manifests.append(Manifest(key=ObjectKey.of(body), body=body, origin=origin))
    return manifests


def _origin(source: str, display: str, chart_name: str, tree: Path) -> str | None:
    """`<chart>/templates/x.yaml` (or `<chart>/charts/sub/templates/y.yaml`) → repo-relative."""
    first, _, rest = source.partition("/")
    if not rest or (chart_name and first != chart_name):
        return None
    joined = posixpath.normpath(posixpath.join("" if display == "." else display, rest))
    if joined == ".." or joined.startswith("../"):
        return None
    if (tree / joined).is_file():
        return joined
    # a template of a packaged subchart (charts/sub-1.0.0.tgz): name the archive
    parts = rest.split("/")
    if len(parts) > 2 and parts[0] == "charts":
        base = posixpath.join("" if display == "." else display, "charts")
        for archive in sorted((tree / base).glob(f"{parts[1]}-*.tgz")):
            return posixpath.join(base, archive.name)
    return joined
