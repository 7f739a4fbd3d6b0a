"""What Argo CD's configuration and the command line say about rendering sources.

From argocd-cm (util/settings GetKustomizeSettings): `kustomize.buildOptions` (flags for every
`kustomize build`, e.g. `--enable-helm`), and the kustomize versions it registers
(`kustomize.version.<v>` or `kustomize.path.<v>`); an Application naming another
`kustomize.version` fails in Argo CD ("kustomize version <v> is not registered"). From
argocd-cmp-cm and `--cmp FILE`: config management plugin definitions (sources/cmp.py), and
whether running them is allowed (`--allow-plugins`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.sources import cmp

BUILD_OPTIONS_KEY = "kustomize.buildOptions"
CMP_CONFIGMAP = cmp.CMP_CONFIGMAP
_VERSION_PREFIXES = ("kustomize.version.", "kustomize.path.")
_EXEC_FLAGS = ("--enable-alpha-plugins", "--enable-exec", "--enable-star")
_ENABLE_KEYS = {"kustomize.enable": "kustomize", "helm.enable": "helm", "jsonnet.enable": "jsonnet"}


@dataclass(frozen=True, slots=True)
class RenderConfig:
    kustomize_build_options: tuple[str, ...] = ()
    kustomize_versions: frozenset[str] = frozenset()
    argocd_cm_read: bool = False  # False: Argo CD's defaults (no argocd-cm seen)
    plugins: tuple[cmp.Plugin, ...] = ()
    allow_plugins: bool = False
    # argocd-cm `kustomize.enable`/`helm.enable`/`jsonnet.enable: "false"` (GetEnabledSourceTypes):
    # such sources are read as plain YAML, and jsonnet files are skipped
    disabled: frozenset[str] = frozenset()
    # the destination cluster's version as Argo CD passes it to helm, kustomize's helmCharts and
    # plugins (parseKubeVersion: "1.31.2" from "v1.31.2+k3s1"); "" when unknown
    kube_version: str = ""
    broken_plugins: tuple[str, ...] = ()  # argocd-cmp-cm definitions left out, and why

    def kustomize_flags(self) -> tuple[str, ...]:
        """`kustomize.buildOptions` to build with: the flags that run commands from the
        repository (exec and alpha KRM plugins, `--mount`) only with --allow-plugins; without
        it they are left out, and a kustomization that needs them fails with kustomize's own
        message."""
        if self.allow_plugins:
            return self.kustomize_build_options
        out: list[str] = []
        skip = False
        for flag in self.kustomize_build_options:
            if skip:
                skip = False
                continue
            name = flag.split("=", 1)[0]
            if name in _EXEC_FLAGS:
                continue
            if name == "--mount":
                skip = "=" not in flag
                continue
            out.append(flag)
        return tuple(out)

    def check_kustomize_version(self, version: str, display: str) -> None:
        """GetKustomizeBinaryPath: a version the Application names must be registered."""
        if not version or version in self.kustomize_versions:
            return
        known = ", ".join(sorted(self.kustomize_versions)) or "none"
        where = "argocd-cm" if self.argocd_cm_read else "argocd-cm (not read: Argo CD's defaults)"
        raise SourceError(
            f"source path {display}: kustomize version {version} is not registered in {where}; "
            f"Argo CD fails this source too (registered: {known})",
            hint=f"add kustomize.version.{version} to argocd-cm, or remove "
            "spec.source.kustomize.version",
        )


def of(
    configmaps: Iterable[Mapping[str, Any]],
    *,
    cmp_files: Sequence[Path] = (),
    allow_plugins: bool = False,
    kube_version: str = "",
) -> RenderConfig:
    """The render settings from argocd-cm and argocd-cmp-cm (any order, others ignored) and
    the `--cmp` files."""
    build: tuple[str, ...] = ()
    versions: set[str] = set()
    read = False
    disabled: set[str] = set()
    plugins: list[cmp.Plugin] = []
    broken: list[str] = []
    for body in configmaps:
        if body.get("kind") != "ConfigMap":
            continue
        name = (body.get("metadata") or {}).get("name")
        data = body.get("data") if isinstance(body.get("data"), Mapping) else {}
        if name == "argocd-cm":
            read = True
            build = tuple(str((data or {}).get(BUILD_OPTIONS_KEY) or "").split())
            for key, kind in _ENABLE_KEYS.items():
                value = str((data or {}).get(key) or "")
                if value and value != "true":
                    disabled.add(kind)
            for key in data or {}:
                for prefix in _VERSION_PREFIXES:
                    if str(key).startswith(prefix) and len(str(key)) > len(prefix):
                        versions.add(str(key)[len(prefix) :])
        elif name == cmp.CMP_CONFIGMAP:
            plugins.extend(cmp.from_configmap(body, broken))
    for path in cmp_files:
        plugins.extend(cmp.from_file(path))  # named on the command line: these win
    return RenderConfig(
        kustomize_build_options=build,
        kustomize_versions=frozenset(versions),
        argocd_cm_read=read,
        plugins=tuple(plugins),
        allow_plugins=allow_plugins,
        disabled=frozenset(disabled),
        kube_version=parse_kube_version(kube_version),
        broken_plugins=tuple(broken),
    )


def parse_kube_version(git_version: str) -> str:
    """Argo CD's parseKubeVersion (k8s.io version.ParseGeneric(...).String()): the numeric
    components of a server's gitVersion, `v1.31.2+k3s1` → `1.31.2`; "" when there is none."""
    match = re.match(r"^\s*v?(\d+(?:\.\d+)+)", git_version)
    return match.group(1) if match else ""
