"""kustomize helmCharts inflate with the helm the app's Argo CD bundles (sources/kustomize.py,
tools.choose_helm), as the repo-server's kustomize runs its bundled `helm`: the real kustomize
and both real helm majors (.tools/bin/helm is helm 4, .tools/bin/helm3 helm 3).

The chart has the istio 1.23 gateway chart's schema shape (as testdata/scenarios/
source-helm-major-3): helm 3 accepts its values, helm 4 refuses `replicaCount`, so the result
says which helm ran."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.settings import Settings
from kubectl_gitdrift.sources import cache as source_cache
from kubectl_gitdrift.sources import kustomize, tools

SETTINGS = Settings.from_environ({})
pytestmark = [
    pytest.mark.skipif(
        tools.helm4_binary(SETTINGS) is None or tools.helm3_binary(SETTINGS) is None,
        reason="needs helm 4 and helm 3 (tools/install_helm.sh)",
    ),
    pytest.mark.skipif(
        not (shutil.which("kustomize") or shutil.which("kubectl")), reason="needs kustomize"
    ),
]

SCHEMA = {
    "$schema": "http://json-schema.org/schema#",
    "$defs": {"values": {"type": "object", "properties": {"replicaCount": {"type": "integer"}}}},
    "type": "object",
    "additionalProperties": False,
    "properties": {"_internal_defaults_do_not_set": {"$ref": "#/$defs/values"}},
    "$ref": "#/$defs/values",
}


def _tree(root: Path) -> Path:
    files = {
        "app/kustomization.yaml": (
            "helmCharts:\n- name: gateway\n  releaseName: edge\n  version: 1.23.0\n"
        ),
        "app/charts/gateway/Chart.yaml": "apiVersion: v2\nname: gateway\nversion: 1.23.0\n",
        "app/charts/gateway/values.yaml": "replicaCount: 2\n",
        "app/charts/gateway/values.schema.json": json.dumps(SCHEMA),
        "app/charts/gateway/templates/cm.yaml": (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}-settings'}\n"
            "data: {replicas: '{{ .Values.replicaCount }}'}\n"
        ),
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _build(tree: Path, work: Path, argocd: str, **kw):  # type: ignore[no-untyped-def]
    notes: list[str] = []
    kw.setdefault("build_options", ["--enable-helm"])
    built = kustomize.build(
        tree,
        "app",
        {},
        workdir=work,
        settings=SETTINGS,
        helm_choice=lambda: tools.choose_helm(SETTINGS, argocd),
        notes=notes,
        **kw,
    )
    return built, notes


def test_argo_cd_before_3_5_inflates_with_helm_3(tmp_path: Path) -> None:
    (manifest,), notes = _build(_tree(tmp_path / "tree"), tmp_path / "w", "v3.1.5")
    assert manifest.body["data"] == {"replicas": "2"}
    helm3 = tools.helm_version(tools.helm3_binary(SETTINGS) or "")
    assert notes == [f"helmCharts: rendered with helm {helm3} (Argo CD v3.1 bundles helm v3.18.4)"]


def test_argo_cd_3_5_inflates_with_helm_4(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as err:
        _build(_tree(tmp_path / "tree"), tmp_path / "w", "v3.5.1")
    assert "additional properties 'replicaCount' not allowed" in err.value.message


def test_the_cache_key_names_the_helm(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    cache = source_cache.RenderCache(tmp_path / "cache")
    first, _ = _build(tree, tmp_path / "w1", "v3.1.5", cache=cache, revision="a" * 40)
    again, notes = _build(tree, tmp_path / "w2", "v3.1.5", cache=cache, revision="a" * 40)
    assert again == first
    assert len(notes) == 1  # a cache hit says which helm too
    assert notes[0].startswith("helmCharts: rendered with helm v3.")
    with pytest.raises(SourceError, match="additional properties"):  # not helm 3's render
        _build(tree, tmp_path / "w3", "v3.5.1", cache=cache, revision="a" * 40)


def test_a_helm_command_build_option_missing_here_is_replaced(tmp_path: Path) -> None:
    options = ["--enable-helm", "--helm-command", "/custom-tools/helm-v3"]
    (manifest,), notes = _build(
        _tree(tmp_path / "tree"), tmp_path / "w", "v3.1.5", build_options=options
    )
    assert manifest.body["data"] == {"replicas": "2"}
    helm3 = tools.helm3_binary(SETTINGS)
    assert notes[0] == (
        "kustomize.buildOptions --helm-command /custom-tools/helm-v3 is not on this machine (a "
        f"path in the repo-server's image): helmCharts ran {helm3} instead"
    )


def test_a_helm_command_build_option_found_here_is_used(tmp_path: Path) -> None:
    helm3 = tools.helm3_binary(SETTINGS)
    assert helm3 is not None
    # Argo CD v3.5 bundles helm 4, but argocd-cm's build options name a helm 3: kustomize runs it
    (manifest,), notes = _build(
        _tree(tmp_path / "tree"),
        tmp_path / "w",
        "v3.5.1",
        build_options=["--enable-helm", f"--helm-command={helm3}"],
    )
    assert manifest.body["data"] == {"replicas": "2"}
    assert notes == []  # no helm was chosen: the build options said which


def test_no_helm_charts_choose_no_helm(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "app").mkdir(parents=True)
    (tree / "app/kustomization.yaml").write_text("resources: [cm.yaml]\n", encoding="utf-8")
    (tree / "app/cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n", encoding="utf-8"
    )
    asked: list[str] = []

    def choice() -> tools.HelmChoice:
        asked.append("helm")
        return tools.choose_helm(SETTINGS, "v3.1.5")

    cache = source_cache.RenderCache(tmp_path / "cache")
    for work in ("w1", "w2"):
        notes: list[str] = []
        (manifest,) = kustomize.build(
            tree, "app", {}, workdir=tmp_path / work, settings=SETTINGS,
            build_options=["--enable-helm"], helm_choice=choice, notes=notes,
            cache=cache, revision="b" * 40,
        )  # fmt: skip
        assert manifest.key.name == "plain"
        assert notes == []
    assert asked == []  # a live run's repo-server GET is never made for it
