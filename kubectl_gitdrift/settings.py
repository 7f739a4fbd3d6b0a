"""The environment knobs of a run, named and parsed in one place (kopf's configuration module).

`Settings.from_environ()` takes one look at the environment; each knob is parsed when a run
first needs it, so a bad value fails only the runs that use it, with the same message and
error class as always. Nothing else in the package reads `KUBECTL_GITDRIFT_*` variables.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from kubectl_gitdrift.errors import SourceError, UsageError

WORKERS_ENV = "KUBECTL_GITDRIFT_WORKERS"
AUTOLOAD_ENV = "KUBECTL_GITDRIFT_DISABLE_PLUGIN_AUTOLOAD"
ORIGIN_ANNOTATIONS_ENV = "KUBECTL_GITDRIFT_ORIGIN_ANNOTATIONS_MAX"
KUSTOMIZE_TIMEOUT_ENV = "KUBECTL_GITDRIFT_KUSTOMIZE_TIMEOUT"
HELM_ENV = "KUBECTL_GITDRIFT_HELM"
HELM3_ENV = "KUBECTL_GITDRIFT_HELM3"
HELM_VERSION_ENV = "KUBECTL_GITDRIFT_HELM_VERSION"
CACHE_DIR_ENV = "KUBECTL_GITDRIFT_CACHE_DIR"
CACHE_MAX_ENV = "KUBECTL_GITDRIFT_CACHE_MAX_MB"
FETCH_TIMEOUT_ENV = "KUBECTL_GITDRIFT_FETCH_TIMEOUT"
INSECURE_ENV = "KUBECTL_GITDRIFT_INSECURE_REGISTRIES"

MAX_WORKERS = 8
"""Renders in parallel, and LISTs in flight at once (live)."""
ORIGIN_ANNOTATIONS_MAX = 300
"""Kustomizations declaring more objects than this are built without originAnnotations."""
KUSTOMIZE_TIMEOUT = 120.0
"""Seconds one `kustomize build` may run."""
DEFAULT_CACHE_MAX_MB = 512
DEFAULT_FETCH_TIMEOUT = 300.0
"""Seconds one network git command (ls-remote, fetch) may run."""


@dataclass(frozen=True)
class Settings:
    """What the environment says about a run. Built once (`from_environ`) and handed down."""

    environ: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The knobs of `environ` (default: this process's environment, copied once)."""
        source = os.environ if environ is None else environ
        return cls(MappingProxyType(dict(source)))

    def _raw(self, name: str) -> str:
        return self.environ.get(name, "").strip()

    def workers(self) -> int:
        """MAX_WORKERS, or the whole number >= 1 in $KUBECTL_GITDRIFT_WORKERS."""
        raw = self._raw(WORKERS_ENV)
        if not raw:
            return MAX_WORKERS
        try:
            workers = int(raw)
        except ValueError:
            workers = 0
        if workers < 1:
            raise UsageError(f"{WORKERS_ENV}={raw!r}: expected a whole number, 1 or more")
        return workers

    def autoload_disabled(self) -> bool:
        """$KUBECTL_GITDRIFT_DISABLE_PLUGIN_AUTOLOAD set to anything but "", "0" or "false"."""
        return self._raw(AUTOLOAD_ENV).lower() not in ("", "0", "false", "no")

    def origin_annotations_max(self) -> int:
        raw = self._raw(ORIGIN_ANNOTATIONS_ENV)
        try:
            return int(raw) if raw else ORIGIN_ANNOTATIONS_MAX
        except ValueError:
            return ORIGIN_ANNOTATIONS_MAX

    def kustomize_timeout(self) -> float:
        """KUSTOMIZE_TIMEOUT, or the seconds (> 0) in $KUBECTL_GITDRIFT_KUSTOMIZE_TIMEOUT."""
        raw = self._raw(KUSTOMIZE_TIMEOUT_ENV)
        if not raw:
            return KUSTOMIZE_TIMEOUT
        try:
            value = float(raw)
        except ValueError:
            value = 0.0
        if value <= 0:
            raise SourceError(
                f"{KUSTOMIZE_TIMEOUT_ENV}={raw!r}: expected a number of seconds above 0"
            )
        return value

    def helm(self) -> str:
        """$KUBECTL_GITDRIFT_HELM: the helm binary to use ("" when unset: look on PATH)."""
        return self._raw(HELM_ENV)

    def helm3(self) -> str:
        """$KUBECTL_GITDRIFT_HELM3: a helm v3 binary ("" when unset: `helm3` on PATH)."""
        return self._raw(HELM3_ENV)

    def helm_version(self) -> str:
        """$KUBECTL_GITDRIFT_HELM_VERSION (or --helm-version): the helm major to render with,
        "3" or "4" ("" when unset: the one the app's Argo CD bundles)."""
        raw = self._raw(HELM_VERSION_ENV).lower().removeprefix("v")
        if raw not in ("", "3", "4"):
            raise UsageError(f"{HELM_VERSION_ENV}={raw!r}: expected 3 or 4")
        return raw

    def with_helm_version(self, major: str) -> Settings:
        """These settings with --helm-version's `major` in place of the environment's."""
        return Settings(MappingProxyType({**self.environ, HELM_VERSION_ENV: major}))

    def cache_dir(self) -> Path:
        """$KUBECTL_GITDRIFT_CACHE_DIR, else $XDG_CACHE_HOME/kubectl-gitdrift, else
        ~/.cache/kubectl-gitdrift."""
        explicit = self._raw(CACHE_DIR_ENV)
        if explicit:
            return Path(explicit)
        xdg = self._raw("XDG_CACHE_HOME")
        base = Path(xdg) if xdg else Path.home() / ".cache"
        return base / "kubectl-gitdrift"

    def cache_max_bytes(self) -> int:
        """The render cache's bound: $KUBECTL_GITDRIFT_CACHE_MAX_MB MiB (default 512)."""
        raw = self._raw(CACHE_MAX_ENV)
        try:
            mib = float(raw) if raw else DEFAULT_CACHE_MAX_MB
        except ValueError:
            mib = DEFAULT_CACHE_MAX_MB
        return int(max(mib, 0) * 1024 * 1024)

    def fetch_timeout(self) -> float:
        """Seconds one network git command may run: $KUBECTL_GITDRIFT_FETCH_TIMEOUT (> 0)."""
        raw = self._raw(FETCH_TIMEOUT_ENV)
        try:
            value = float(raw) if raw else DEFAULT_FETCH_TIMEOUT
        except ValueError:
            raise UsageError(f"{FETCH_TIMEOUT_ENV}={raw!r}: expected a number of seconds") from None
        if value <= 0:
            raise UsageError(f"{FETCH_TIMEOUT_ENV}={raw!r}: expected a number of seconds above 0")
        return value

    def insecure_registries(self) -> frozenset[str]:
        """Registry hosts that may be reached over plain HTTP (comma-separated, lower case)."""
        raw = self.environ.get(INSECURE_ENV, "")
        return frozenset(h.strip().lower() for h in raw.split(",") if h.strip())
