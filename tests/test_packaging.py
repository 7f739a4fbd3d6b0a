"""The package, the krew manifest and the README agree with each other and with the code."""

from __future__ import annotations

import re

import tomllib
import yaml

from kubectl_gitdrift import __version__
from kubectl_gitdrift.cli import main as cli
from tests.conftest import ROOT


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
        "kubectl-gitdrift": "kubectl_gitdrift.cli.main:run",
        "argocd-gitdrift": "kubectl_gitdrift.cli.main:run_argocd",
        "kubectl_complete-gitdrift": "kubectl_gitdrift.cli.completion:kubectl_complete",
    }
    assert callable(cli.run)
    assert callable(cli.run_argocd)


_DEMO = re.compile(
    r"(<!-- demo-output: (\S+) -->\n```text\n)(.*?)(```\n<!-- /demo-output -->)", re.DOTALL
)


def test_readme_shows_the_real_demo_output(golden) -> None:  # type: ignore[no-untyped-def]
    """The README's sample is a golden file's content; --update-golden refreshes it."""
    path = ROOT / "README.md"
    readme = path.read_text()
    match = _DEMO.search(readme)
    assert match, "README lost its demo-output markers"
    sample = (ROOT / match.group(2)).read_text()
    if golden.update:
        path.write_text(readme[: match.start(3)] + sample + readme[match.end(3) :])
        return
    assert match.group(3) == sample, "README's sample output is stale: run pytest --update-golden"
