"""The user's own helm credentials, handed to helm for the chart repositories a run may use.

Argo CD's repository Secrets are never read: credentials come from the user's helm configuration
(`repositories.yaml` entries, the registry config `helm registry login` writes, docker's as helm's
fallback). Each helm run gets a private configuration built from them: a repositories.yaml of
the repositories it needs (owner-only: it may hold passwords) and, where the AppProject denies
some repositories, registry credentials filtered to the hosts it permits.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml


def _helm_config_home() -> Path:
    explicit = os.environ.get("HELM_CONFIG_HOME", "").strip()
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".config") / "helm"


def _user_registry_config() -> Path:
    explicit = os.environ.get("HELM_REGISTRY_CONFIG", "").strip()
    return Path(explicit) if explicit else _helm_config_home() / "registry" / "config.json"


def user_repositories() -> list[dict[str, Any]]:
    """The entries (with a url) of the user's own repositories.yaml; none when it is unreadable."""
    explicit = os.environ.get("HELM_REPOSITORY_CONFIG", "").strip()
    path = Path(explicit) if explicit else _helm_config_home() / "repositories.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return []
    repos = data.get("repositories") if isinstance(data, Mapping) else None
    return [dict(r) for r in repos or [] if isinstance(r, Mapping) and r.get("url")]


def _same_url(a: str, b: str) -> bool:
    return a.strip().rstrip("/") == b.strip().rstrip("/")


_ENTRY_FIELDS = (
    "username",
    "password",
    "certFile",
    "keyFile",
    "caFile",
    "insecure_skip_tls_verify",
    "pass_credentials_all",
)


def repository_entry(url: str, *, name: str, credentials: bool = True) -> dict[str, Any]:
    """A repositories.yaml entry for `url`, with the user's own credentials for it."""
    entry: dict[str, Any] = {"name": name, "url": url.rstrip("/")}
    if credentials:
        for repo in user_repositories():
            if _same_url(str(repo.get("url")), url):
                entry.update({k: repo[k] for k in _ENTRY_FIELDS if repo.get(k)})
                break
    return entry


def write_repositories(scratch: Path, entries: list[dict[str, Any]]) -> None:
    """A private repositories.yaml (it may hold the user's credentials: owner-only)."""
    path = scratch / "repositories.yaml"
    text = yaml.safe_dump(
        {"apiVersion": "", "generated": "0001-01-01T00:00:00Z", "repositories": entries},
        sort_keys=True,
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def permitted_credentials(scratch: Path, permitted: Sequence[str]) -> dict[str, str]:
    """Registry credentials for the hosts of `permitted` OCI repositories only (the repo-server
    only gets the credentials of repositories the project permits): the user's helm registry
    config and docker config (helm's fallback), each filtered, as environment overrides."""
    hosts = {urlsplit(r).netloc.lower() for r in permitted}
    docker_dir = os.environ.get("DOCKER_CONFIG", "").strip()
    docker = Path(docker_dir) if docker_dir else Path.home() / ".docker"
    (scratch / "docker").mkdir(mode=0o700)
    _write_filtered(_user_registry_config(), scratch / "registry.json", hosts)
    _write_filtered(docker / "config.json", scratch / "docker" / "config.json", hosts)
    return {
        "HELM_REGISTRY_CONFIG": str(scratch / "registry.json"),
        "DOCKER_CONFIG": str(scratch / "docker"),
    }


def _write_filtered(source: Path, dest: Path, hosts: set[str]) -> None:
    try:
        data = json.loads(source.read_bytes())
    except (OSError, ValueError):
        data = {}
    kept: dict[str, Any] = {}
    for name in ("auths", "credHelpers"):
        value = data.get(name) if isinstance(data, dict) else None
        if isinstance(value, dict):
            kept[name] = {h: v for h, v in value.items() if str(h).lower() in hosts}
    store = data.get("credsStore") if isinstance(data, dict) else None
    if store and hosts:  # a global helper: only for the permitted hosts
        kept["credHelpers"] = {**{h: store for h in sorted(hosts)}, **kept.get("credHelpers", {})}
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(kept, handle)


def helm_environment(scratch: Path) -> dict[str, str]:
    """helm's environment: the user's HOME, TLS settings and registry config (and docker's, as
    helm falls back to it), a private repositories.yaml, repository cache and plugin
    directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HELM_") and k != "KUBECONFIG"}
    env.update(
        LC_ALL="C",
        HELM_CONFIG_HOME=str(scratch / "config"),
        HELM_CACHE_HOME=str(scratch / "cache"),
        HELM_DATA_HOME=str(scratch / "data"),
        HELM_PLUGINS=str(scratch / "plugins"),
        HELM_REPOSITORY_CONFIG=str(scratch / "repositories.yaml"),
        HELM_REPOSITORY_CACHE=str(scratch / "repository"),
        HELM_REGISTRY_CONFIG=str(_user_registry_config()),
        KUBECONFIG=os.devnull,
    )
    return env
