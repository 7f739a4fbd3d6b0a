"""Config management plugin sources: run the plugin's own commands, as Argo CD's sidecar does.

A plugin is a `ConfigManagementPlugin` definition (the sidecar's plugin.yaml): from the
`argocd-cmp-cm` ConfigMap (in the snapshot, or read from the cluster with --allow-plugins), or
from `--cmp FILE`. Rendering follows Argo CD's cmpserver/plugin/plugin.go and the repo-server's
runConfigManagementPluginSidecars (reposerver/repository/repository.go):

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
import shlex
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import SourceError, UsageError
from kubectl_gitdrift.model import Manifest, ObjectKey
from kubectl_gitdrift.sources import directory, process
from kubectl_gitdrift.sources.kustomize import TIMEOUT_ENV, envsubst, kustomize_timeout

CMP_CONFIGMAP = "argocd-cmp-cm"
KIND = "ConfigManagementPlugin"
OUTPUT_LIMIT = yamlio.MAX_BYTES
ALLOW_HINT = (
    "pass --allow-plugins to run it on this machine, or --cmp FILE with a definition you trust"
)


@dataclass(frozen=True, slots=True)
class Command:
    command: tuple[str, ...]
    args: tuple[str, ...] = ()

    @property
    def argv(self) -> list[str]:
        return [*self.command, *self.args]

    @property
    def text(self) -> str:
        return shlex.join(self.argv)


@dataclass(frozen=True, slots=True)
class Plugin:
    """One ConfigManagementPlugin definition."""

    name: str  # metadata.name
    version: str
    generate: Command
    init: Command | None = None
    discover_file_name: str = ""
    discover_glob: str = ""
    discover_command: Command | None = None
    origin: str = ""  # where the definition came from, for messages
    trusted: bool = False  # named on the command line (--cmp FILE)
    preserve_file_mode: bool = False  # spec.preserveFileMode: the repository's modes, +x kept

    @property
    def full_name(self) -> str:
        """What `plugin.name` names, and the sidecar's socket name: `<name>-<version>`."""
        return f"{self.name}-{self.version}" if self.version else self.name

    @property
    def has_discovery(self) -> bool:
        return bool(self.discover_file_name or self.discover_glob or self.discover_command)


def from_configmap(body: Mapping[str, Any], errors: list[str] | None = None) -> list[Plugin]:
    """The plugin definitions in an `argocd-cmp-cm` ConfigMap (one per data key). The
    ConfigMap is mounted into the sidecars as files, so other keys (a script the plugin runs)
    are not YAML or not a ConfigManagementPlugin: they are left alone. A broken definition
    (no name, no generate command) is a sidecar that would not start: with `errors` it is left
    out and its error appended there, so other sources still render."""
    data = body.get("data")
    if not isinstance(data, Mapping):
        return []
    namespace = (body.get("metadata") or {}).get("namespace") or "argocd"
    out: list[Plugin] = []
    for key in sorted(data):
        text = data[key]
        if not isinstance(text, str):
            continue
        where = f"{CMP_CONFIGMAP} ({namespace}) {key}"
        try:
            docs = yamlio.load_any(text, where)
        except SourceError:
            continue
        for doc in docs:
            if not (isinstance(doc, Mapping) and doc.get("kind") == KIND):
                continue
            try:
                out.append(_plugin(doc, where, trusted=False))
            except SourceError as exc:
                if errors is None:
                    raise
                errors.append(exc.message)
    return out


def from_file(path: Path) -> list[Plugin]:
    """The plugin definitions in a plugin.yaml given with --cmp (trusted: named by the user)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"--cmp {path}: {exc.strerror}") from None
    plugins = [
        _plugin(doc, f"--cmp {path}", trusted=True)
        for doc in yamlio.load_documents(data, f"--cmp {path}", error=UsageError)
        if doc.get("kind") == KIND
    ]
    if not plugins:
        raise UsageError(f"--cmp {path}: no {KIND} in the file")
    return plugins


def discover(
    plugins: Sequence[Plugin],
    app_dir: Path,
    env: Mapping[str, str],
    allow: bool,
    *,
    tree: Path | None = None,
    workdir: Path | None = None,
    display: str = "",
) -> Plugin | None:
    """The plugin that claims a source with no explicit type, as Argo CD's discovery does.
    `app_dir` is inside `tree` (the repository; default `app_dir`): a `find.command` runs on
    a copy of it in `workdir`, as the sidecar runs it on the copy it is sent."""
    # the sidecars' sockets, `<full name>.sock`, as os.ReadDir lists them (by file name:
    # `a-v1.sock` sorts before `a.sock`)
    candidates = sorted(
        (p for p in plugins if p.has_discovery),
        key=lambda p: (f"{p.full_name}.sock", not p.trusted),
    )
    with _Copies(tree or app_dir, app_dir, workdir) as copies:
        for plugin in candidates:
            if _matches(plugin, app_dir, env, allow, copies, display):
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
            [plugin], app_dir, env, allow, tree=tree, workdir=workdir, display=display
        )
        if plugin.has_discovery and matched is None:
            raise SourceError(
                f"source path {display}: config management plugin {name} does not support "
                "this source (its discovery rules do not match)"
            )
        return plugin
    found = discover(plugins, app_dir, env, allow, tree=tree, workdir=workdir, display=display)
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
) -> list[Manifest]:
    """Run `plugin`'s init and generate commands on a copy of `tree`; the objects generate
    prints."""
    display = app_path.strip("/") or "."
    _check_allowed(plugin, allow, display)
    env = plugin_env(options, build_env, kube_version, api_versions)
    with _Copies(tree, tree if display == "." else tree / display, workdir) as copies:
        repo, app_dir = copies.get(plugin.preserve_file_mode)
        deadline = time.monotonic() + kustomize_timeout()
        if plugin.init is not None:
            _run(plugin, "init", plugin.init, app_dir, env, deadline, repo, display)
        out = _run(plugin, "generate", plugin.generate, app_dir, env, deadline, repo, display)
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


def _plugin(doc: Mapping[str, Any], where: str, *, trusted: bool) -> Plugin:
    """ValidatePluginConfig: kind, metadata.name and a generate command are required."""
    if doc.get("kind") != KIND:
        raise SourceError(f"{where}: kind should be {KIND}, found {doc.get('kind')!r}")
    metadata = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
    name = str((metadata or {}).get("name") or "")
    if not name:
        raise SourceError(f"{where}: {KIND} metadata.name should be non-empty")
    spec = doc.get("spec") if isinstance(doc.get("spec"), Mapping) else {}
    spec = spec or {}
    generate = _command(spec.get("generate"), f"{where}: {name} spec.generate")
    if generate is None:
        raise SourceError(f"{where}: {KIND} {name}: spec.generate command should be non-empty")
    discover = spec.get("discover") if isinstance(spec.get("discover"), Mapping) else {}
    discover = discover or {}
    find = discover.get("find") if isinstance(discover.get("find"), Mapping) else {}
    find = find or {}
    return Plugin(
        name=name,
        version=str(spec.get("version") or ""),
        generate=generate,
        init=_command(spec.get("init"), f"{where}: {name} spec.init"),
        discover_file_name=str(discover.get("fileName") or ""),
        discover_glob=str(find.get("glob") or ""),
        discover_command=_command(find, f"{where}: {name} spec.discover.find"),
        origin=where,
        trusted=trusted,
        preserve_file_mode=spec.get("preserveFileMode") is True,
    )


def _command(raw: Any, where: str) -> Command | None:
    if not isinstance(raw, Mapping) or not raw.get("command"):
        return None
    command, args = raw.get("command"), raw.get("args") or []
    if not isinstance(command, list) or not isinstance(args, list):
        raise SourceError(f"{where}: command and args must be lists of strings")
    return Command(tuple(str(c) for c in command), tuple(str(a) for a in args))


def _matches(
    plugin: Plugin,
    app_dir: Path,
    env: Mapping[str, str],
    allow: bool,
    copies: _Copies,
    display: str = "",
) -> bool:
    """matchRepository: fileName, else find.glob, else find.command (exits 0 and prints
    anything)."""
    if plugin.discover_file_name:
        # Go's filepath.Glob: one directory level per segment (`**` is `*`), dotfiles match
        pattern = str(app_dir.absolute() / plugin.discover_file_name)
        return bool(glob.glob(pattern, include_hidden=True))  # noqa: PTH207 - not recursive
    if plugin.discover_glob:
        return bool(directory.filepath_glob(str(app_dir.absolute() / plugin.discover_glob)))
    if plugin.discover_command is not None:
        _check_allowed(plugin, allow, display, what="discovers sources by running")
        proc = process.run_bounded(
            plugin.discover_command.argv,
            cwd=copies.get(plugin.preserve_file_mode)[1],
            env={**os.environ, **env},
            timeout=kustomize_timeout(),
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
        hint=f"raise {TIMEOUT_ENV} if the plugin needs longer",
        budget=kustomize_timeout(),
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
