"""Config management plugin sources: run the plugin's own commands, as Argo CD's sidecar does.

A plugin is a `ConfigManagementPlugin` definition (the sidecar's plugin.yaml, read by
sources/cmp_defs.py): from the `argocd-cmp-cm` ConfigMap (in the snapshot, or read from the
cluster with --allow-plugins), or from `--cmp FILE`. Rendering follows Argo CD's
cmpserver/plugin/plugin.go and the repo-server's runConfigManagementPluginSidecars
(reposerver/repository/repository.go):

- which plugin: `plugin.name` names `<metadata.name>-<spec.version>` (or `<metadata.name>` when
  it has no version); a named plugin whose discovery rules are set must also match the source.
  Without a name, the plugins with discovery rules are tried in the order of their socket names
  (the names, sorted) and the first that matches renders. Discovery is, in order:
  `discover.fileName` (a glob in the source directory), `discover.find.glob` (`**` allowed),
  `discover.find.command` (matches when it prints anything). A source with no explicit type is
  tried against the plugins first, as Argo CD's discovery.AppType does.
- the repository is copied into a scratch directory (the plugin may write, e.g. `helm
  dependency build`); `init` then `generate` run in the source directory of the copy, with the
  user's environment plus the build environment (`ARGOCD_APP_NAME`, …, `KUBE_VERSION`,
  `KUBE_API_VERSIONS`), `ARGOCD_ENV_<name>` for each `plugin.env` entry (values substituted
  with the build environment) and the parameters (`ARGOCD_APP_PARAMETERS` as JSON, `PARAM_<NAME>`,
  `PARAM_<NAME>_<KEY>`, `PARAM_<NAME>_<i>`).
- generate's stdout is the manifests (YAML or JSON documents).

Running a command taken from cluster state (or a snapshot) is opt-in: `--allow-plugins`; a
plugin given with `--cmp FILE` is allowed by being named on the command line. Each command is
bounded by the kustomize time-out and an output limit; its whole process group is killed.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.model import Manifest, ObjectKey
from kubectl_gitdrift.settings import KUSTOMIZE_TIMEOUT_ENV, Settings
from kubectl_gitdrift.sources import process
from kubectl_gitdrift.sources.buildenv import envsubst
from kubectl_gitdrift.sources.cache import CacheMiss
from kubectl_gitdrift.sources.cmp_defs import CMP_CONFIGMAP, Command, Plugin
from kubectl_gitdrift.sources.context import RenderContext
from kubectl_gitdrift.sources.globs import filepath_glob

OUTPUT_LIMIT = yamlio.MAX_BYTES
ALLOW_HINT = (
    "pass --allow-plugins to run it on this machine, or --cmp FILE with a definition you trust"
)


class Plugins:
    """The config management plugin renderer: the plugin `select` picks for the source (its
    `plugin:` block names it, or discovery finds it), its init and generate commands run by
    `generate`."""

    def render(self, ctx: RenderContext) -> list[Manifest]:
        if ctx.cached_only:
            raise CacheMiss(ctx.path)
        conf = ctx.config
        plugin = select(
            conf.plugins, ctx.options, ctx.app_dir,
            plugin_env(ctx.options, ctx.env, conf.kube_version, conf.api_versions),
            conf.allow_plugins, ctx.path, conf.broken_plugins, tree=ctx.tree,
            workdir=ctx.workdir, settings=ctx.settings,
        )  # fmt: skip
        return generate(
            plugin,
            tree=ctx.tree,
            app_path=ctx.path,
            options=ctx.options,
            build_env=ctx.env,
            workdir=ctx.workdir,
            allow=conf.allow_plugins,
            kube_version=conf.kube_version,
            api_versions=conf.api_versions,
            settings=ctx.settings,
        )


def discover(
    plugins: Sequence[Plugin],
    app_dir: Path,
    env: Mapping[str, str],
    allow: bool,
    *,
    tree: Path | None = None,
    workdir: Path | None = None,
    display: str = "",
    settings: Settings | None = None,
) -> Plugin | None:
    """The plugin that claims a source with no explicit type, as Argo CD's discovery does.
    `app_dir` is inside `tree` (the repository; default `app_dir`): a `find.command` runs on
    a copy of it in `workdir`, as the sidecar runs it on the copy it is sent, under the
    kustomize time-out of `settings` (default: this process's environment, read now)."""
    settings = settings or Settings.from_environ()
    # the sidecars' sockets, `<full name>.sock`, as os.ReadDir lists them (by file name:
    # `a-v1.sock` sorts before `a.sock`)
    candidates = sorted(
        (p for p in plugins if p.has_discovery),
        key=lambda p: (f"{p.full_name}.sock", not p.trusted),
    )
    with _Copies(tree or app_dir, app_dir, workdir) as copies:
        for plugin in candidates:
            if _matches(plugin, app_dir, env, allow, copies, display, settings):
                return plugin
    return None


def select(
    plugins: Sequence[Plugin],
    options: Mapping[str, Any],
    app_dir: Path,
    env: Mapping[str, str],
    allow: bool,
    display: str,
    broken: Sequence[str] = (),
    *,
    tree: Path | None = None,
    workdir: Path | None = None,
    settings: Settings | None = None,
) -> Plugin:
    """The plugin that renders a `plugin:` source (`broken`: definitions that were left out,
    named when no plugin is found). `env` is what the repo-server sends the sidecar for
    discovery here: plugin_env's, parameters included."""
    name = str(options.get("name") or "")
    if broken and not any(p.full_name == name for p in plugins):
        raise SourceError(
            f"source path {display}: no usable config management plugin"
            + (f" named {name}" if name else "")
            + f"; a definition is broken: {broken[0]}"
        )
    if not plugins:
        what = f"config management plugin {name}" if name else "a config management plugin"
        raise SourceError(
            f"source path {display}: {what} renders this source, and no plugin definition is known",
            hint=f"pass --cmp FILE (the plugin's plugin.yaml), or --allow-plugins to read "
            f"{CMP_CONFIGMAP} from the cluster or snapshot",
        )
    if name:
        named = [p for p in plugins if p.full_name == name]
        if not named:
            known = ", ".join(sorted({p.full_name for p in plugins}))
            raise SourceError(
                f"source path {display}: config management plugin {name} is not defined "
                f"(known: {known})",
                hint="plugin.name is `<metadata.name>-<spec.version>`, or the name alone when "
                "the plugin has no version",
            )
        plugin = named[-1]
        matched = discover(
            [plugin], app_dir, env, allow, tree=tree, workdir=workdir, display=display,
            settings=settings,
        )  # fmt: skip
        if plugin.has_discovery and matched is None:
            raise SourceError(
                f"source path {display}: config management plugin {name} does not support "
                "this source (its discovery rules do not match)"
            )
        return plugin
    found = discover(
        plugins, app_dir, env, allow, tree=tree, workdir=workdir, display=display, settings=settings
    )
    if found is None:
        raise SourceError(
            f"source path {display}: no config management plugin supports this source "
            f"(discovery tried {', '.join(sorted(p.full_name for p in plugins))})"
        )
    return found


def generate(
    plugin: Plugin,
    *,
    tree: Path,
    app_path: str,
    options: Mapping[str, Any],
    build_env: Mapping[str, str],
    workdir: Path,
    allow: bool,
    kube_version: str = "",
    api_versions: Sequence[str] = (),
    settings: Settings | None = None,
) -> list[Manifest]:
    """Run `plugin`'s init and generate commands on a copy of `tree`, both within the kustomize
    time-out of `settings` (default: this process's environment, read now); the objects
    generate prints."""
    settings = settings or Settings.from_environ()
    display = app_path.strip("/") or "."
    _check_allowed(plugin, allow, display)
    env = plugin_env(options, build_env, kube_version, api_versions)
    with _Copies(tree, tree if display == "." else tree / display, workdir) as copies:
        repo, app_dir = copies.get(plugin.preserve_file_mode)
        budget = settings.kustomize_timeout()
        deadline = time.monotonic() + budget
        if plugin.init is not None:
            _run(plugin, "init", plugin.init, app_dir, env, deadline, repo, display, budget)
        out = _run(
            plugin, "generate", plugin.generate, app_dir, env, deadline, repo, display, budget
        )
    where = f"config management plugin {plugin.full_name} output"
    return [
        Manifest(key=ObjectKey.of(body), body=body, origin=None)
        for body in yamlio.load_objects(out, where)
    ]


def plugin_env(
    options: Mapping[str, Any],
    build_env: Mapping[str, str],
    kube_version: str = "",
    api_versions: Sequence[str] = (),
) -> dict[str, str]:
    """The variables the repo-server sends the sidecar (getPluginEnvs, getPluginParamEnvs)."""
    env = dict(build_env)
    env["KUBE_VERSION"] = kube_version
    env["KUBE_API_VERSIONS"] = ",".join(api_versions)
    base = dict(env)
    for entry in options.get("env") or []:
        if isinstance(entry, Mapping) and entry.get("name"):
            env[f"ARGOCD_ENV_{entry['name']}"] = envsubst(str(entry.get("value") or ""), base)
    env.update(parameter_env(options.get("parameters") or []))
    return env


def parameter_env(parameters: Iterable[Any]) -> dict[str, str]:
    """ApplicationSourcePluginParameters.Environ: ARGOCD_APP_PARAMETERS (Go's JSON of the
    parameters) and PARAM_<NAME>, PARAM_<NAME>_<KEY>, PARAM_<NAME>_<i>."""
    params = [p for p in parameters if isinstance(p, Mapping)]
    listed: list[dict[str, Any]] = []
    env: dict[str, str] = {}
    for param in params:
        # ApplicationSourcePluginParameter.MarshalJSON: a map[string]any, so the keys come out
        # sorted (array, map, name, string); name always; a map or array that is present but
        # null is {} or [] (the embedded OptionalMap/OptionalArray is allocated)
        item: dict[str, Any] = {"name": str(param.get("name") or "")}
        if param.get("string") is not None:
            item["string"] = str(param["string"])
        if "map" in param:
            item["map"] = {str(k): str(v) for k, v in sorted((param.get("map") or {}).items())}
        if "array" in param:
            item["array"] = [str(v) for v in param.get("array") or []]
        listed.append(item)
        base = "PARAM_" + _escaped(item["name"])
        if "string" in item:
            env[base] = item["string"]
        for key, value in (item.get("map") or {}).items():
            env[f"{base}_{_escaped(key)}"] = value
        for index, value in enumerate(item.get("array") or []):
            env[f"{base}_{index}"] = value
    return {"ARGOCD_APP_PARAMETERS": _go_json(listed), **env}


# --------------------------------------------------------------------------- internals


def _matches(
    plugin: Plugin,
    app_dir: Path,
    env: Mapping[str, str],
    allow: bool,
    copies: _Copies,
    display: str,
    settings: Settings,
) -> bool:
    """matchRepository: fileName, else find.glob, else find.command (exits 0 and prints
    anything)."""
    if plugin.discover_file_name:
        # Go's filepath.Glob: one directory level per segment (`**` is `*`), dotfiles match
        pattern = str(app_dir.absolute() / plugin.discover_file_name)
        return bool(glob.glob(pattern, include_hidden=True))  # noqa: PTH207 - not recursive
    if plugin.discover_glob:
        return bool(filepath_glob(str(app_dir.absolute() / plugin.discover_glob)))
    if plugin.discover_command is not None:
        _check_allowed(plugin, allow, display, what="discovers sources by running")
        proc = process.run_bounded(
            plugin.discover_command.argv,
            cwd=copies.get(plugin.preserve_file_mode)[1],
            env={**os.environ, **env},
            timeout=settings.kustomize_timeout(),
            what=f"config management plugin {plugin.full_name} discover.find.command",
            limit=OUTPUT_LIMIT,
        )
        # a command that fails is no match (cmpSupports logs it and tries the next plugin);
        # runCommand trims one trailing newline and any other output is a match
        return proc.returncode == 0 and proc.stdout.removesuffix(b"\n") != b""
    return False


class _Copies:
    """Scratch copies of the repository, one per command that needs one (`get`: the copy and
    the source directory in it; the copy before it is removed), as the sidecar gets a fresh
    archive for each request; all removed on exit: plugin commands never run in the user's
    checkout or in the cache. A symlink that leaves the repository (absolute, or `..` past its
    root) is refused first, as the repo-server's CheckOutOfBoundsSymlinks does: through it a
    command would write outside the copy. File modes are the sidecar's: 0644 files and 0755
    directories unless the plugin sets preserveFileMode."""

    def __init__(self, tree: Path, app_dir: Path, workdir: Path | None) -> None:
        self.tree, self.app_dir, self.workdir = tree, app_dir, workdir
        self.scratch: Path | None = None
        self.checked = False

    def __enter__(self) -> _Copies:  # noqa: PYI034 - final class
        return self

    def __exit__(self, *exc: object) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    def get(self, preserve_file_mode: bool) -> tuple[Path, Path]:
        if not self.checked:
            _check_symlinks(self.tree)
            self.checked = True
        self.__exit__()
        if self.workdir is not None:
            self.workdir.mkdir(parents=True, exist_ok=True)
        self.scratch = Path(tempfile.mkdtemp(prefix="cmp-", dir=self.workdir))
        repo = self.scratch / "repo"
        shutil.copytree(self.tree, repo, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        if not preserve_file_mode:  # files.Untgz without preserveFileMode
            for current, dirs, files in os.walk(repo):
                for name in dirs:
                    if not (Path(current) / name).is_symlink():
                        (Path(current) / name).chmod(0o755)
                for name in files:
                    if not (Path(current) / name).is_symlink():
                        (Path(current) / name).chmod(0o644)
        return repo, repo / self.app_dir.relative_to(self.tree)


def _check_symlinks(tree: Path) -> None:
    root = tree.absolute()
    for current, dirs, files in os.walk(root):
        here = Path(current)
        if here == root:
            dirs[:] = [d for d in dirs if d != ".git"]
        for name in [*dirs, *files]:
            path = here / name
            if not path.is_symlink():
                continue
            target = path.readlink()
            inside = not target.is_absolute()
            where = path.parent
            for part in target.parts if inside else ():  # each step stays inside
                where = Path(os.path.normpath(where / part))
                if where != root and root not in where.parents:
                    inside = False
                    break
            if not inside:
                raise SourceError(
                    "repository contains out-of-bounds symlinks. file: "
                    + path.relative_to(root).as_posix(),
                    hint="a config management plugin runs on a copy of the repository; Argo CD "
                    "refuses a symlink that points outside it too",
                )


def _check_allowed(plugin: Plugin, allow: bool, display: str, what: str = "would run") -> None:
    if plugin.trusted or allow:
        return
    command = plugin.generate if what == "would run" else plugin.discover_command
    where = f"source path {display}: " if display else ""
    raise SourceError(
        f"{where}config management plugin {plugin.full_name} (from {plugin.origin}) {what} "
        f"`{command.text if command else '?'}` on this machine; not allowed",
        hint=ALLOW_HINT,
    )


def _run(
    plugin: Plugin,
    phase: str,
    command: Command,
    app_dir: Path,
    env: Mapping[str, str],
    deadline: float,
    repo: Path,
    display: str,
    budget: float,
) -> bytes:
    what = f"source path {display}: config management plugin {plugin.full_name} {phase}"
    remaining = max(deadline - time.monotonic(), 0.001)
    proc = process.run_bounded(
        command.argv,
        cwd=app_dir,
        env={**os.environ, **env},
        timeout=remaining,
        what=what,
        limit=OUTPUT_LIMIT,
        hint=f"raise {KUSTOMIZE_TIMEOUT_ENV} if the plugin needs longer",
        budget=budget,
    )
    if proc.returncode != 0:
        raise SourceError(
            f"{what} `{command.text}` failed (exit {proc.returncode}): "
            f"{_last_line(proc.stderr, repo)}",
            hint=f"run the plugin's commands by hand in {display} to see its full output",
        )
    return proc.stdout


def _last_line(stderr: bytes, root: Path) -> str:
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    if not lines:
        return "no error output"
    line = lines[-1]
    for prefix in sorted({str(root.absolute()), str(root.resolve())}, key=len, reverse=True):
        line = line.replace(prefix + "/", "").replace(prefix, ".")
    return line[:300]


_INVALID = re.compile(r"[^A-Z0-9_]")


def _escaped(name: str) -> str:
    return _INVALID.sub("_", name.upper())


def _go_json(value: Any) -> str:
    """encoding/json.Marshal of maps: compact, keys sorted, UTF-8, `<`, `>`, `&`, U+2028 and
    U+2029 escaped."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):  # fmt: skip
        text = text.replace(char, escape)
    return text
