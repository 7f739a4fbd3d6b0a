"""The build environment Argo CD gives every renderer: `$ARGOCD_APP_*`, `envsubst` over it, and the
destination cluster's versions where a renderer passes them on.

A leaf of the sources edge: every renderer (directory, jsonnet, kustomize, helm, plugins) reads
its options through these, and none has to import another renderer for them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from kubectl_gitdrift.model import Application, AppSource


def build_env(app: Application, source: AppSource, revision: str) -> dict[str, str]:
    """Argo CD's build environment (what `$ARGOCD_APP_*` in options expand to)."""
    return {
        "ARGOCD_APP_NAME": app.name,
        "ARGOCD_APP_NAMESPACE": app.dest_namespace,
        "ARGOCD_APP_PROJECT_NAME": app.project,
        "ARGOCD_APP_REVISION": revision,
        "ARGOCD_APP_REVISION_SHORT": revision[:7],
        "ARGOCD_APP_REVISION_SHORT_8": revision[:8],
        "ARGOCD_APP_SOURCE_REPO_URL": source.repo_url,
        "ARGOCD_APP_SOURCE_PATH": source.path,
        "ARGOCD_APP_SOURCE_TARGET_REVISION": source.target_revision,
    }


_ENV_REF = re.compile(r"\$(\$|\{([^}]*)\}|([A-Za-z0-9_]+))")


def envsubst(text: str, env: Mapping[str, str]) -> str:
    """Argo CD's Envsubst (Go os.Expand): `$VAR`/`${VAR}` from `env`, unknown ones empty,
    `$$` → `$`."""

    def repl(match: re.Match[str]) -> str:
        if match.group(1) == "$":
            return "$"
        return env.get(match.group(2) if match.group(2) is not None else match.group(3), "")

    return _ENV_REF.sub(repl, text)


def with_cluster_versions(
    options: Mapping[str, Any], kube_version: str, api_versions: Sequence[str]
) -> Mapping[str, Any]:
    """GetKubeVersionOrDefault and GetAPIVersionsOrDefault: the source's kubeVersion and
    apiVersions, else the destination cluster's (when known), in a copy of `options`."""
    out = dict(options)
    if not options.get("kubeVersion") and kube_version:
        out["kubeVersion"] = kube_version
    if not options.get("apiVersions") and api_versions:
        out["apiVersions"] = list(api_versions)
    return out
