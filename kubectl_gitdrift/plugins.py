"""Builds the plugin manager for one run: built-ins, installed team plugins, --plugin paths."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pluggy

from kubectl_gitdrift import hookspecs
from kubectl_gitdrift.errors import PluginError

DEFAULT_PLUGINS = (
    "kubectl_gitdrift.builtin.normalizers",
    "kubectl_gitdrift.builtin.rules",
    "kubectl_gitdrift.builtin.renderers",
)
BUILTIN_NAMES = {module: "builtin/" + module.rsplit(".", 1)[1] for module in DEFAULT_PLUGINS}
ENTRY_POINT_GROUP = "kubectl_gitdrift"
AUTOLOAD_ENV = "KUBECTL_GITDRIFT_DISABLE_PLUGIN_AUTOLOAD"


@dataclass(frozen=True, slots=True)
class PluginInfo:
    name: str
    source: str  # "builtin", "entry point <dist>", "path <file>", "module <name>"
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
    """A fresh manager for one run. Built-ins first, so team plugins (registered later) are
    called first. Any failure to load names the plugin and raises PluginError."""
    pm = PluginManager()
    pm.add_hookspecs(hookspecs)
    for name in blocked:
        pm.set_blocked(name)
    for module in DEFAULT_PLUGINS:
        _register(pm, importlib.import_module(module), BUILTIN_NAMES[module], "builtin")
    if entry_points and not os.environ.get(AUTOLOAD_ENV):
        for ep in sorted(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP), key=_ep_key):
            if pm.is_blocked(ep.name):
                continue
            dist = ep.dist.name if ep.dist else "?"
            try:
                plugin = ep.load()
            except Exception as exc:
                raise PluginError(
                    f"plugin {ep.name!r} (entry point from {dist}) failed to load: "
                    f"{type(exc).__name__}: {exc}",
                    hint=f"fix or uninstall {dist}, or pass --disable-plugin {ep.name}",
                ) from exc
            _register(pm, plugin, ep.name, f"entry point {dist}")
    for spec in paths:
        name, plugin = _load_path_or_module(spec)
        if not pm.is_blocked(name):
            _register(pm, plugin, name, spec)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"plugin {exc.plugin!r}: {exc}") from exc
    return pm


def _ep_key(ep: importlib.metadata.EntryPoint) -> str:
    return ep.name


def _register(pm: PluginManager, plugin: object, name: str, source: str) -> None:
    if pm.get_plugin(name) is not None:
        raise PluginError(f"plugin {name!r} is loaded twice", hint="drop one of the --plugin flags")
    try:
        pm.register(plugin, name=name)
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"plugin {name!r} ({source}): {exc}") from exc
    pm.sources[name] = source


def _load_path_or_module(spec: str) -> tuple[str, ModuleType]:
    """`--plugin ./plugins/hpa_replicas.py` or `--plugin team_pkg.rules`."""
    path = Path(spec)
    if spec.endswith(".py") or path.is_file():
        if not path.is_file():
            raise PluginError(f"--plugin {spec}: no such file")
        name = path.stem
        module_name = f"kubectl_gitdrift_plugin_{name}"
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise PluginError(f"--plugin {spec}: cannot be imported as a Python module")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module
        try:
            loader_spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(module_name, None)
            raise PluginError(
                f"plugin {name!r} ({spec}) failed to import: {type(exc).__name__}: {exc}"
            ) from exc
        return name, module
    try:
        module = importlib.import_module(spec)
    except Exception as exc:
        raise PluginError(
            f"--plugin {spec}: failed to import module: {type(exc).__name__}: {exc}"
        ) from exc
    return spec, module


def describe(pm: PluginManager) -> list[PluginInfo]:
    """What is loaded, for `kubectl gitdrift plugins`."""
    infos = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None:
            continue
        source = pm.sources.get(name, "?")
        version = _version_of(plugin, source)
        hooks = tuple(sorted(h.name for h in pm.get_hookcallers(plugin) or ()))
        infos.append(PluginInfo(name, source, version, hooks))
    return sorted(infos, key=lambda i: (i.source != "builtin", i.name))


def _version_of(plugin: object, source: str) -> str:
    if source == "builtin":
        from kubectl_gitdrift import __version__

        return __version__
    if source.startswith("entry point "):
        try:
            return importlib.metadata.version(source.removeprefix("entry point "))
        except importlib.metadata.PackageNotFoundError:
            return "?"
    return str(getattr(plugin, "__version__", "") or "-")
