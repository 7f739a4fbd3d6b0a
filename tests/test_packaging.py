"""The package, the krew manifest and the README agree with each other and with the code."""

from __future__ import annotations

import re

import tomllib
import yaml

from kubectl_gitdrift import __version__, cli
from tests.conftest import ROOT, TESTDATA


def test_versions_agree() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    manifest = yaml.safe_load((ROOT / "krew-manifest.yaml").read_text())
    assert pyproject["project"]["version"] == __version__
    assert manifest["spec"]["version"] == f"v{__version__}"
    for platform in manifest["spec"]["platforms"]:
        assert f"v{__version__}" in platform["uri"]


def test_krew_manifest_shape() -> None:
    manifest = yaml.safe_load((ROOT / "krew-manifest.yaml").read_text())
    assert manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert manifest["kind"] == "Plugin"
    assert manifest["metadata"]["name"] == "gitdrift"
    spec = manifest["spec"]
    for field in ("version", "homepage", "shortDescription", "description", "platforms"):
        assert spec[field], field
    assert len(spec["shortDescription"]) <= 50
    for platform in spec["platforms"]:
        assert re.fullmatch(r"[0-9a-f]{64}", platform["sha256"])
        assert platform["bin"] == "kubectl-gitdrift"
        assert platform["selector"]


def test_console_scripts_resolve() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    scripts = pyproject["project"]["scripts"]
    assert scripts == {
        "kubectl-gitdrift": "kubectl_gitdrift.cli:run",
        "argocd-gitdrift": "kubectl_gitdrift.cli:run_argocd",
    }
    assert callable(cli.run)
    assert callable(cli.run_argocd)


def test_readme_shows_the_real_demo_output() -> None:
    readme = (ROOT / "README.md").read_text()
    sample = (TESTDATA / "scenarios/incident-replicas-scaled/expected.txt").read_text()
    assert sample in readme, "README's sample output is stale: paste expected.txt into it"
