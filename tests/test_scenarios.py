"""Every directory under testdata/scenarios/ runs through the real CLI, offline, against its
golden files. Adding a test is adding a directory; `pytest --update-golden` rewrites goldens."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from kubectl_gitdrift.sources import helm
from tests.conftest import ROOT, TESTDATA

SCENARIOS = sorted(p for p in (TESTDATA / "scenarios").iterdir() if p.is_dir())


def _args(scenario: Path, spec: dict, repo: Path) -> list[str]:  # type: ignore[type-arg]
    return [
        spec["app"],
        "--snapshot",
        str((scenario / spec.get("snapshot", "live.yaml")).resolve()),
        "--repo-root",
        str(repo),
        "--no-entry-points",
        *(_expand(str(arg), scenario) for arg in spec.get("args", [])),
    ]


def _missing_tools(spec: dict) -> list[str]:  # type: ignore[type-arg]
    """`requires: [helm, kustomize, …]` in scenario.yaml: tools the scenario cannot run without."""
    found = {
        "helm": lambda: helm.helm_binary() is not None,
        "kustomize": lambda: bool(shutil.which("kustomize") or shutil.which("kubectl")),
    }
    return [
        str(tool)
        for tool in spec.get("requires") or []
        if not found.get(str(tool), lambda t=str(tool): shutil.which(t) is not None)()
    ]


def _expand(arg: str, scenario: Path) -> str:
    """`{root}` is the checkout, `{scenario}` the scenario's directory (e.g. for --plugin)."""
    return arg.replace("{root}", str(ROOT)).replace("{scenario}", str(scenario.resolve()))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_scenario(scenario: Path, run_cli, build_repo, golden) -> None:  # type: ignore[no-untyped-def]
    spec = yaml.safe_load((scenario / "scenario.yaml").read_text())
    missing = _missing_tools(spec)
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (see scenario.yaml requires)")
    repo = build_repo(scenario / spec.get("repo", "repo"))
    args = _args(scenario, spec, repo)
    for fmt, name in (("json", "expected.json"), ("text", "expected.txt")):
        result = run_cli([*args, "-o", fmt])
        assert result.stderr == "", result.stderr
        assert result.exit_code == spec["exit_code"], result.stdout
        golden.check(scenario / name, result.stdout)
    report = json.loads((scenario / "expected.json").read_text())
    app = report["applications"][0]
    assert app["sync"]["status"] == spec.get("sync", app["sync"]["status"])
