"""The external tools renderers run: which kustomize and helm binaries, what they can do, and how
long a helm render may take.

A leaf of the sources edge: kustomize (whose helmCharts run helm) and helm find their binaries
here, not in each other. helm is `$KUBECTL_GITDRIFT_HELM` (Settings.helm) or `helm` on PATH;
a helm source, and a kustomization's helmCharts, render with the helm major its Argo CD bundles
(`choose_helm`: 3 before Argo CD v3.5, 4 from it; or the major
`--helm-version`/`$KUBECTL_GITDRIFT_HELM_VERSION` asks for), helm 3 being
`$KUBECTL_GITDRIFT_HELM3`, else `helm3` on PATH, else `helm` when it is a v3. The Argo CD version
is argocd-cm's `app.kubernetes.io/version` label, else the argocd-repo-server Deployment's image
tag (`RepoServer`: read only when neither the flag nor the label decides). kustomize is
`kustomize` on PATH, else `kubectl kustomize`. The kustomize time-out is a knob
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.settings import HELM3_ENV, HELM_ENV, Settings

HELM_TIMEOUT = 120.0
"""Seconds one `helm template` may run."""
INSTALL_HELM = f"install helm (tools/install_helm.sh), put it on PATH or set ${HELM_ENV}"
"""The hint for a render that needs helm and finds none."""


def helm_binary(settings: Settings) -> str | None:
    """`$KUBECTL_GITDRIFT_HELM`, else `helm` on PATH; None when there is neither."""
    return settings.helm() or shutil.which("helm")


ARGOCD_HELM4 = (3, 5)
"""The first Argo CD release whose repo-server bundles helm 4: v3.5.0. Argo CD's
hack/tool-versions.sh has `helm4_version=4.2.1` from tag v3.5.0-rc1 (commit 586430c1a3, "Migrate
from Helm 3 to Helm 4") through v3.5.1, and `helm3_version` in every release before it: 3.16.3
at v2.14.0, 3.17.1 at v3.0.0-v3.0.23, 3.18.4 at v3.1.0-v3.2.12, 3.19.4 at v3.3.0-v3.4.7."""


ARGOCD_HELM = {
    (3, 0): "v3.17.1",
    (3, 1): "v3.18.4",
    (3, 2): "v3.18.4",
    (3, 3): "v3.19.4",
    (3, 4): "v3.19.4",
    (3, 5): "v4.2.1",
}
"""The helm each Argo CD 3.x minor bundles (hack/tool-versions.sh, the same at every patch tag
from vX.Y.0 through v3.0.23, v3.1.16, v3.2.12, v3.3.14, v3.4.7 and v3.5.1). Patch versions
matter: the istio 1.23 gateway chart's schema passes helm v3.18.4 and fails v3.18.5+ and helm 4
(helm/helm#31160)."""


def argocd_helm(argocd_version: str) -> str:
    """The helm the Argo CD release bundles, `v3.18.4` when known (ARGOCD_HELM), else its major
    (`3`, `4`), else ""."""
    match = re.match(r"^\s*v?(\d+)\.(\d+)", argocd_version)
    if match is None:
        return ""
    known = ARGOCD_HELM.get((int(match.group(1)), int(match.group(2))))
    return known or argocd_helm_major(argocd_version)


def argocd_helm_major(argocd_version: str) -> str:
    """The helm major the Argo CD release `argocd_version` (`v3.1.5`, `3.1`) bundles: "3" or
    "4" ("" when the version is not one)."""
    match = re.match(r"^\s*v?(\d+)\.(\d+)", argocd_version)
    if match is None:
        return ""
    return "4" if (int(match.group(1)), int(match.group(2))) >= ARGOCD_HELM4 else "3"


@dataclass(frozen=True, slots=True)
class RepoServer:
    """What a run read of the argocd-repo-server Deployment: its repo-server container's image
    (`quay.io/argoproj/argocd:v3.5.1`), or "" and why it could not be read."""

    image: str = ""
    unreadable: str = ""  # e.g. "403 Forbidden: ..."; "" when it was read (or not asked)


_TAG = re.compile(r":(v?\d+\.\d+[^@:/]*)(?:@.*)?$")


def image_version(image: str) -> str:
    """The release an image reference's tag names: `quay.io/argoproj/argocd:v3.1.5` (with a
    `@sha256:` digest, or a registry with a port: `registry.local:5000/argocd:v3.0.6`) →
    `v3.1.5`; "" for no tag, a digest alone, or a tag that is no version (`latest`)."""
    match = _TAG.search(image.strip())
    return match.group(1) if match else ""


@dataclass(frozen=True, slots=True)
class HelmChoice:
    """The helm binary a helm source renders with, and what the report says about it."""

    binary: str | None  # None: no helm at all
    note: str = ""  # "" when no helm major was asked for


def choose_helm(
    settings: Settings,
    argocd_version: str = "",
    repo_server: Callable[[], RepoServer] | None = None,
) -> HelmChoice:
    """The helm of the major `--helm-version` asks for, else the one Argo CD `argocd_version`
    bundles (argocd_helm_major), else the one the `repo_server` image's tag names (asked only
    then: a live run's one GET), else `helm_binary`. When that major is not installed, the helm
    that is renders, and the note says so (never an error); when the repo-server could not be
    read, the note says why the default rendered."""
    asked = settings.helm_version()
    unknown = ""
    if not asked and not argocd_helm_major(argocd_version) and repo_server is not None:
        read = repo_server()
        argocd_version = image_version(read.image)
        if read.unreadable:
            unknown = f"the argocd-repo-server Deployment could not be read: {read.unreadable}"
        elif not argocd_version:
            unknown = f"the argocd-repo-server image {read.image or '(none)'} names no version"
    wanted = asked or argocd_helm_major(argocd_version)
    default = helm_binary(settings)
    if not wanted:
        if not unknown or default is None:
            return HelmChoice(default)
        return HelmChoice(
            default,
            f"rendered with helm {helm_version(default) or default}, the default: which helm "
            f"Argo CD bundles is unknown ({unknown}); --helm-version 3 or 4 chooses",
        )
    if asked:
        why = f"--helm-version {asked}"
    else:
        short = ".".join(argocd_version.strip().lstrip("v").split(".")[:2])
        why = f"Argo CD v{short} bundles helm {argocd_helm(argocd_version)}"
    found = helm3_binary(settings) if wanted == "3" else helm4_binary(settings)
    if found is not None:
        return HelmChoice(found, f"rendered with helm {helm_version(found) or found} ({why})")
    other = default or helm3_binary(settings)
    if other is None:
        return HelmChoice(None)
    where = f"set ${HELM3_ENV} or put helm3 on PATH" if wanted == "3" else f"set ${HELM_ENV}"
    return HelmChoice(
        other,
        f"rendered with helm {helm_version(other) or other}, not helm {wanted} ({why}; "
        f"no helm {wanted} found: {where}); the render may differ from Argo CD's",
    )


def helm3_binary(settings: Settings) -> str | None:
    """`$KUBECTL_GITDRIFT_HELM3`, else `helm3` on PATH, else `helm_binary` when it is a v3."""
    found = settings.helm3() or shutil.which("helm3")
    if found:
        return found
    default = helm_binary(settings)
    return default if default is not None and helm_major(default) == "3" else None


def helm4_binary(settings: Settings) -> str | None:
    """`helm_binary` when it is a v4, else `helm4` on PATH."""
    default = helm_binary(settings)
    if default is not None and helm_major(default) == "4":
        return default
    return shutil.which("helm4")


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


def helm_major(binary: str) -> str:
    """The major version `binary version --short` reports ("" when it cannot say)."""
    match = re.match(r"v?(\d+)\.", helm_version(binary))
    return match.group(1) if match else ""


@functools.lru_cache(maxsize=8)
def helm_version(binary: str) -> str:
    """The version `binary version --short` reports, `v3.17.3` ("" when it cannot say)."""
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
    match = re.search(rb"v?\d+\.\d+(?:\.\d+)?", proc.stdout)
    if match is None:
        return ""
    text = match.group(0).decode()
    return text if text.startswith("v") else f"v{text}"
