"""The external tools renderers run: which kustomize and helm binaries, what they can do, and how
long a helm render may take.

A leaf of the sources edge: kustomize (whose helmCharts run helm) and helm find their binaries
here, not in each other. helm is `$KUBECTL_GITDRIFT_HELM` (Settings.helm) or `helm` on PATH;
kustomize is `kustomize` on PATH, else `kubectl kustomize`. The kustomize time-out is a knob
(Settings.kustomize_timeout); helm's is fixed.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.settings import HELM_ENV, Settings

HELM_TIMEOUT = 120.0
"""Seconds one `helm template` may run."""
INSTALL_HELM = f"install helm (tools/install_helm.sh), put it on PATH or set ${HELM_ENV}"
"""The hint for a render that needs helm and finds none."""


def helm_binary(settings: Settings) -> str | None:
    """`$KUBECTL_GITDRIFT_HELM`, else `helm` on PATH; None when there is neither."""
    return settings.helm() or shutil.which("helm")


def kustomize_command() -> list[str]:
    """`kustomize build`, else `kubectl kustomize` (the binaries on PATH)."""
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


def kustomize_identity() -> list[Any]:
    """The binary kustomize builds with, for the render cache key: its path, size and mtime.
    Looked up once per PATH in a process (every app of an `--all` asks: two PATH searches and a
    stat each, a tenth of reading its cached render)."""
    path = os.environ.get("PATH", "")
    known = _IDENTITIES.get(path)
    if known is None:
        cmd = kustomize_command()
        try:
            st = Path(cmd[0]).stat()
        except OSError:
            return cmd
        known = _IDENTITIES[path] = [*cmd, st.st_size, st.st_mtime_ns]
    return list(known)


_IDENTITIES: dict[str, list[Any]] = {}


@functools.lru_cache(maxsize=4)
def kustomize_knows_helm_versions(cmd: tuple[str, ...]) -> bool:
    """Does this kustomize take --helm-kube-version (v5.3+)? Its own --help says."""
    try:
        proc = subprocess.run(
            [*cmd, "--help"], capture_output=True, timeout=30, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"--helm-kube-version" in proc.stdout + proc.stderr


def helm_for_kustomize(binary: str, workdir: Path) -> str:
    """`binary`, or for helm v4 a shim that reports a v3 version to kustomize's check
    (`helm version -c --short`, a flag helm v4 dropped) and runs helm v4 for everything else."""
    if helm_major(binary) != "4":
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
def helm_major(binary: str) -> str:
    """The major version `binary version --short` reports ("" when it cannot say)."""
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
