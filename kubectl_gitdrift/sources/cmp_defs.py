"""Config management plugin definitions: `ConfigManagementPlugin` documents (the sidecar's
plugin.yaml), read from the `argocd-cmp-cm` ConfigMap or from `--cmp FILE` and checked as the
sidecar's ValidatePluginConfig checks them.

What Argo CD's configuration says (sources/config.py) and what runs (sources/cmp.py) both read
these; this module runs nothing.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import SourceError, UsageError

CMP_CONFIGMAP = "argocd-cmp-cm"
KIND = "ConfigManagementPlugin"


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
