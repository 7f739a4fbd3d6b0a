"""What Argo CD's configuration and the command line say about rendering sources.

From argocd-cm (util/settings GetKustomizeSettings): `kustomize.buildOptions` (flags for every
`kustomize build`, e.g. `--enable-helm`), and the kustomize versions it registers
(`kustomize.version.<v>` or `kustomize.path.<v>`); an Application naming another
`kustomize.version` fails in Argo CD ("kustomize version <v> is not registered"). From
argocd-cmp-cm and `--cmp FILE`: config management plugin definitions (sources/cmp_defs.py), and
whether running them is allowed (`--allow-plugins`). The Argo CD version (which helm major its
repo-server bundles, sources/tools.py): argocd-cm's `app.kubernetes.io/version` label (set by
the argo-cd Helm chart), else the `argocd-repo-server` Deployment's image tag: a Deployment among
the objects given, or `RenderConfig.repo_server`, which a live run reads on first need.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.sources import cmp_defs, tools

BUILD_OPTIONS_KEY = "kustomize.buildOptions"
CMP_CONFIGMAP = cmp_defs.CMP_CONFIGMAP
_VERSION_PREFIXES = ("kustomize.version.", "kustomize.path.")
_EXEC_FLAGS = ("--enable-alpha-plugins", "--enable-exec", "--enable-star")
_ENABLE_KEYS = {"kustomize.enable": "kustomize", "helm.enable": "helm", "jsonnet.enable": "jsonnet"}


@dataclass(frozen=True, slots=True)
class RenderConfig:
    kustomize_build_options: tuple[str, ...] = ()
    kustomize_versions: frozenset[str] = frozenset()
    argocd_cm_read: bool = False  # False: Argo CD's defaults (no argocd-cm seen)
    plugins: tuple[cmp_defs.Plugin, ...] = ()
    allow_plugins: bool = False
    # argocd-cm `kustomize.enable`/`helm.enable`/`jsonnet.enable: "false"` (GetEnabledSourceTypes):
    # such sources are read as plain YAML, and jsonnet files are skipped
    disabled: frozenset[str] = frozenset()
    # the destination cluster's version as Argo CD passes it to helm, kustomize's helmCharts and
    # plugins (parseKubeVersion: "1.31.2" from "v1.31.2+k3s1"); "" when unknown
    kube_version: str = ""
    broken_plugins: tuple[str, ...] = ()  # argocd-cmp-cm definitions left out, and why
    # the destination cluster's API versions as Argo CD sends them to helm, kustomize helmCharts
    # and plugins (APIResourcesToStrings: `group/version` and `group/version/Kind`, sorted)
    api_versions: tuple[str, ...] = ()
    argocd_version: str = ""  # `v3.1.5`, the running Argo CD's (argocd_version_of); "" unknown
    # with argocd_version unknown: the argocd-repo-server image, asked only by a render that
    # chooses a helm (tools.choose_helm; a live run's one GET, a snapshot's `argocdRepoServer`)
    repo_server: Callable[[], tools.RepoServer] | None = None

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
    api_versions: Iterable[str] = (),
    repo_server: Callable[[], tools.RepoServer] | None = None,
) -> RenderConfig:
    """The render settings from argocd-cm and argocd-cmp-cm (any order, others ignored) and
    the `--cmp` files; `repo_server` reads the argocd-repo-server image when needed."""
    build: tuple[str, ...] = ()
    versions: set[str] = set()
    read = False
    disabled: set[str] = set()
    plugins: list[cmp_defs.Plugin] = []
    broken: list[str] = []
    configmaps = list(configmaps)
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
        elif name == cmp_defs.CMP_CONFIGMAP:
            plugins.extend(cmp_defs.from_configmap(body, broken))
    for path in cmp_files:
        plugins.extend(cmp_defs.from_file(path))  # named on the command line: these win
    return RenderConfig(
        kustomize_build_options=build,
        kustomize_versions=frozenset(versions),
        argocd_cm_read=read,
        plugins=tuple(plugins),
        allow_plugins=allow_plugins,
        disabled=frozenset(disabled),
        kube_version=parse_kube_version(kube_version),
        broken_plugins=tuple(broken),
        api_versions=tuple(sorted(set(api_versions))),
        argocd_version=argocd_version_of(configmaps),
        repo_server=repo_server,
    )


REPO_SERVER = "argocd-repo-server"
_VERSION_LABEL = "app.kubernetes.io/version"


def argocd_version_of(bodies: Iterable[Mapping[str, Any]]) -> str:
    """The Argo CD version among `bodies`: argocd-cm's `app.kubernetes.io/version` label, else
    the image tag of the `argocd-repo-server` Deployment's repo-server container
    (`quay.io/argoproj/argocd:v3.1.5` → `v3.1.5`); "" when neither says. The label first: a
    live run has argocd-cm anyway, and reads the Deployment only when the label is silent."""
    image = ""
    for body in bodies:
        md = body.get("metadata") or {}
        if body.get("kind") == "Deployment" and md.get("name") == REPO_SERVER:
            image = image or tools.image_version(repo_server_image(body))
        elif body.get("kind") == "ConfigMap" and md.get("name") == "argocd-cm":
            value = str((md.get("labels") or {}).get(_VERSION_LABEL) or "")
            if re.match(r"^v?\d+\.\d+", value):
                return value
    return image


def repo_server_image(deployment: Mapping[str, Any]) -> str:
    """The image of the argocd-repo-server Deployment's repo-server container (the container
    named `argocd-repo-server`, else the first); "" when it has none."""
    spec = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    containers = [c for c in spec.get("containers") or () if isinstance(c, Mapping)]
    named = [c for c in containers if c.get("name") == REPO_SERVER] or containers[:1]
    return str(named[0].get("image") or "") if named else ""


def parse_kube_version(git_version: str) -> str:
    """Argo CD's parseKubeVersion (k8s.io version.ParseGeneric(...).String()): the numeric
    components of a server's gitVersion, `v1.31.2+k3s1` → `1.31.2`; "" when there is none."""
    match = re.match(r"^\s*v?(\d+(?:\.\d+)+)", git_version)
    return match.group(1) if match else ""


def api_versions(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Argo CD's APIResourcesToStrings(resources, true) over discovery rows (`apiVersion`,
    `kind`, `name`, `verbs`): for each kind its preferred version (Kubernetes' version priority)
    among those that can be listed and watched (the cluster cache's resources), as
    `group/version` and `group/version/Kind`, sorted. Subresources are left out."""
    best: dict[tuple[str, str], tuple[tuple[int, int, int, str], str]] = {}
    for row in rows:
        group_version, kind = str(row.get("apiVersion") or ""), str(row.get("kind") or "")
        verbs = {str(v) for v in row.get("verbs") or ()}
        if not group_version or not kind or "/" in str(row.get("name") or ""):
            continue
        if verbs and not {"list", "watch"} <= verbs:
            continue
        group, _, version = group_version.rpartition("/")
        rank = (_version_priority(version), group_version)
        if (group, kind) not in best or rank < best[(group, kind)]:
            best[(group, kind)] = rank
    out: set[str] = set()
    for (_, kind), (_, group_version) in best.items():
        out.update((group_version, f"{group_version}/{kind}"))
    return sorted(out)


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def _version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version priority, highest first: v2, v1, v2beta1, v1beta1, v1alpha1, then
    anything else alphabetically."""
    match = _VERSION.match(version)
    if match is None:
        return (3, 0, 0, version)
    major, stage, minor = match.groups()
    return ({None: 0, "beta": 1, "alpha": 2}[stage], -int(major), -int(minor or 0), version)
