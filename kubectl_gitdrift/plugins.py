"""Builds the plugin manager for one run: built-ins, installed team plugins, --plugin paths.

Failure policy: a plugin that fails to import, implements a hook that does not exist (a
misspelled `gitdrift_*`), or declares arguments its hook does not have fails the run with a
one-line `PluginError` naming it (exit code 4). Silently losing a team's rules is worse for a
drift gate than stopping.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pluggy

from kubectl_gitdrift import hookcalls, hookspecs, model
from kubectl_gitdrift.errors import PluginError

if TYPE_CHECKING:  # importlib.metadata (email, zipfile, csv...) only when entry points are read
    from importlib.metadata import EntryPoint

DEFAULT_PLUGINS = (
    "kubectl_gitdrift.builtin.normalizers",
    "kubectl_gitdrift.builtin.rules",
    "kubectl_gitdrift.builtin.renderers",
    "kubectl_gitdrift.builtin.unreadable",
)
BUILTIN_NAMES = {module: "builtin/" + module.rsplit(".", 1)[1] for module in DEFAULT_PLUGINS}
ENTRY_POINT_GROUP = "kubectl_gitdrift"
PATH_MODULE_PREFIX = "kubectl_gitdrift_plugin_"


@dataclass(frozen=True, slots=True)
class PluginInfo:
    name: str
    source: str  # "builtin", "entry point <dist>", or the --plugin PATH|MODULE as given
    version: str
    hooks: tuple[str, ...]


class PluginManager(pluggy.PluginManager):
    """pluggy's manager, remembering where each plugin came from."""

    def __init__(self) -> None:
        super().__init__(hookspecs.PROJECT)
        self.sources: dict[str, str] = {}


def make_plugin_manager(
    *,
    paths: Sequence[str] = (),
    entry_points: bool = True,
    blocked: Sequence[str] = (),
) -> PluginManager:
    """A fresh manager for one run.

    Order: built-ins, then installed distributions (entry-point group `kubectl_gitdrift`, sorted
    by name; skipped when `entry_points` is False: the CLI passes False for --no-entry-points
    and when the run's Settings disable autoload), then `paths` in the order given. pluggy
    calls the newest first, so team plugins run before the built-ins and override
    `gitdrift_attribute`. `blocked` names (`--disable-plugin`) are never imported. Any failure
    names the plugin and raises PluginError.
    """
    pm = PluginManager()
    pm.add_hookspecs(hookspecs)
    for name in blocked:
        pm.set_blocked(name)
    for module in DEFAULT_PLUGINS:
        if not pm.is_blocked(BUILTIN_NAMES[module]):
            _register(pm, importlib.import_module(module), BUILTIN_NAMES[module], "builtin")
    if entry_points:
        from importlib import metadata

        for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=_ep_key):
            if pm.is_blocked(ep.name):
                continue
            dist = ep.dist.name if ep.dist else "?"
            try:
                plugin = ep.load()
            except Exception as exc:
                raise PluginError(
                    f"plugin {ep.name!r} (entry point from {dist}) failed to load: "
                    f"{hookcalls.one_line(exc)}",
                    hint=f"fix or uninstall {dist}, or pass --disable-plugin {ep.name}",
                ) from exc
            _register(pm, plugin, ep.name, f"entry point {dist}")
    for spec in paths:
        name = plugin_name(spec)
        if pm.is_blocked(name):
            continue
        _register(pm, _load_path_or_module(spec, name), name, spec)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:  # pragma: no cover - _check_hooks catches first
        name = pm.get_name(exc.plugin) or "?"
        raise PluginError(f"plugin {name!r}: {hookcalls.one_line(exc)}") from exc
    return pm


def _ep_key(ep: EntryPoint) -> str:
    return ep.name


def plugin_name(spec: str) -> str:
    """The name `--plugin SPEC` registers under: a file's stem, or the module's dotted name."""
    if _is_path(spec):
        return Path(spec).stem
    return spec


def _is_path(spec: str) -> bool:
    return spec.endswith(".py") or os.sep in spec or "/" in spec or Path(spec).is_file()


def _register(pm: PluginManager, plugin: object, name: str, source: str) -> None:
    if pm.get_plugin(name) is not None or name in pm.sources:
        raise PluginError(
            f"plugin {name!r} ({source}) is loaded twice (also from {pm.sources.get(name, '?')})",
            hint="drop one of the --plugin flags, or --disable-plugin the installed one",
        )
    _check_hooks(plugin, name, source)
    try:
        pm.register(plugin, name=name)
    except pluggy.PluginValidationError as exc:
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
        detail = f"{lines[0]}: {lines[-1]}" if len(lines) > 1 else "".join(lines)
        raise PluginError(f"plugin {name!r} ({source}): {detail}") from exc
    pm.sources[name] = source


def _check_hooks(plugin: object, name: str, source: str) -> None:
    """Reject a `gitdrift_*` attribute that is no hook (misspelled) or lacks `@hookimpl`, and
    hook wrappers (gitdrift calls each implementation itself, to name the one that fails)."""
    marker = f"{hookspecs.PROJECT}_impl"
    for attr in sorted(dir(plugin)):
        if not attr.startswith("gitdrift_"):
            continue
        value = getattr(plugin, attr, None)
        if not callable(value):
            continue
        if attr not in hookspecs.HOOKS:
            raise PluginError(
                f"plugin {name!r} ({source}) implements unknown hook {attr!r}"
                + hookcalls.suggest_hook(attr),
                hint="see docs/plugins.md for the hooks, or: kubectl gitdrift plugins --all",
            )
        opts = getattr(value, marker, None)
        if opts is None:
            raise PluginError(
                f"plugin {name!r} ({source}): {attr} is not decorated with @hookimpl",
                hint="from kubectl_gitdrift import hookimpl",
            )
        if opts.get("hookwrapper") or opts.get("wrapper"):
            raise PluginError(
                f"plugin {name!r} ({source}): {attr} is a hook wrapper; gitdrift hooks do not "
                "support wrappers"
            )


def _load_path_or_module(spec: str, name: str) -> object:
    """`--plugin ./plugins/hpa_replicas.py` or `--plugin team_pkg.rules`."""
    if _is_path(spec):
        return _load_file(spec, name)
    try:
        return importlib.import_module(spec)
    except Exception as exc:
        raise PluginError(
            f"plugin {name!r} (--plugin {spec}) failed to import: {hookcalls.one_line(exc)}",
            hint="pass a file path (ending in .py) or an importable module name",
        ) from exc


def _load_file(spec: str, name: str) -> ModuleType:
    path = Path(spec)
    if not path.is_file():
        raise PluginError(f"--plugin {spec}: no such file")
    module_name = PATH_MODULE_PREFIX + name
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise PluginError(f"--plugin {spec}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module  # dataclasses and pickling look the module up by name
    try:
        loader_spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise PluginError(
            f"plugin {name!r} ({spec}) failed to import: {hookcalls.one_line(exc)}",
            hint=f"run with --debug for the traceback, or drop --plugin {spec}",
        ) from exc
    return module


def describe(pm: PluginManager, *, include_builtins: bool = False) -> list[PluginInfo]:
    """What is loaded, for `kubectl gitdrift plugins` (builtins only with `--all`): sorted,
    builtins first."""
    infos = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None:
            continue
        source = pm.sources.get(name, "?")
        if source == "builtin" and not include_builtins:
            continue
        version = _version_of(plugin, source)
        hooks = tuple(sorted(h.name for h in pm.get_hookcallers(plugin) or ()))
        infos.append(PluginInfo(name, source, version, hooks))
    return sorted(infos, key=lambda i: (i.source != "builtin", i.name))


def _version_of(plugin: object, source: str) -> str:
    if source == "builtin":
        from kubectl_gitdrift import __version__

        return __version__
    if source.startswith("entry point "):
        from importlib import metadata

        try:
            return metadata.version(source.removeprefix("entry point "))
        except metadata.PackageNotFoundError:
            return "?"
    return str(getattr(plugin, "__version__", "") or "-")


def apply_ignore_rules(
    body: Mapping[str, Any], rules: Iterable[model.IgnoreRule]
) -> dict[str, Any]:
    """A copy of `body` without the fields `rules` name (JSON pointers, jq paths), as gitdrift
    removes them before comparing: for testing a plugin's `gitdrift_ignore_rules` on real objects.
    Rules that name managers (`managed_fields_managers`) need the run's managedFields and are not
    applied here."""
    from kubectl_gitdrift.compare import normalize  # the comparison core, only when asked

    active = [normalize.ActiveRule(rule, rule.origin or "test") for rule in rules]
    result: dict[str, Any] = normalize.apply_ignores(normalize.deepcopy(dict(body)), active)
    return result
