"""Every directory under testdata/preview/scenarios/ runs `kubectl gitdrift preview` through the
real CLI against its golden text, JSON and markdown; every one under testdata/preview/errors/
checks the one line and exit code a bad input gets. Adding a test is adding a directory;
`pytest --update-golden` rewrites goldens.

A scenario's `repo-src/` is a git history in make_repo's layout (testdata/make_repo.py): its
commits are pinned, so the SHAs in the goldens are the same on every machine. The built clone
gets `remote:` (default https://git.example.com/platform/gitops.git) as its origin, the URL its
Applications name as repoURL, so the preview knows them as this repository's. `snapshot:` adds
a live side (an exported cluster), `args:` the rest of the command line; the clone's path shows
as `${REPO_ROOT}` in the goldens."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import TESTDATA

PREVIEW = TESTDATA / "preview"
SCENARIOS = sorted(p for p in (PREVIEW / "scenarios").iterdir() if p.is_dir())
ERRORS = sorted(p for p in (PREVIEW / "errors").iterdir() if p.is_dir())
REMOTE = "https://git.example.com/platform/gitops.git"


def _clone(scenario: Path, spec: dict, build_repo) -> Path:  # type: ignore[no-untyped-def,type-arg]
    repo = build_repo(scenario / spec.get("repo", "repo-src"))
    remote = str(spec.get("remote", REMOTE))
    found = subprocess.run(
        ["git", "-C", str(repo), "remote", "get-url", "origin"],
        check=False,
        capture_output=True,
        text=True,
    )
    if found.returncode != 0:
        subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", remote], check=True)
    return repo


def _args(scenario: Path, spec: dict, repo: Path) -> list[str]:  # type: ignore[type-arg]
    snapshot = spec.get("snapshot")
    return [
        "preview",
        "--repo-root",
        str(repo),
        "--no-entry-points",
        *(["--snapshot", str((scenario / snapshot).resolve())] if snapshot else []),
        *(str(a) for a in spec.get("args", [])),
    ]


def _shown(output: str, repo: Path, scenario: Path, spec: dict) -> str:  # type: ignore[type-arg]
    output = output.replace(str(repo), "${REPO_ROOT}")
    if spec.get("snapshot"):
        snapshot = (scenario / spec["snapshot"]).resolve()
        output = output.replace(str(snapshot), str(snapshot.relative_to(TESTDATA.parent)))
    return output


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_preview_scenario(scenario: Path, run_cli, build_repo, golden) -> None:  # type: ignore[no-untyped-def]
    spec = yaml.safe_load((scenario / "scenario.yaml").read_text())
    repo = _clone(scenario, spec, build_repo)
    args = _args(scenario, spec, repo)
    for fmt, name in (
        ("json", "expected.json"),
        ("text", "expected.txt"),
        ("markdown", "expected.md"),
    ):
        result = run_cli([*args, "-o", fmt])
        assert result.stderr == "", result.stderr
        assert result.exit_code == spec["exit_code"], result.stdout
        golden.check(scenario / name, _shown(result.stdout, repo, scenario, spec))
    doc = json.loads((scenario / "expected.json").read_text())
    assert doc["kind"] == "Preview"
    assert bool(doc["apps"]) or spec["exit_code"] == 0


@pytest.mark.parametrize("case", ERRORS, ids=lambda p: p.name)
def test_preview_bad_input(case: Path, run_cli, build_repo) -> None:  # type: ignore[no-untyped-def]
    spec = yaml.safe_load((case / "scenario.yaml").read_text())
    repo = _clone(case, spec, build_repo)
    result = run_cli(_args(case, spec, repo))
    assert result.exit_code == spec["exit_code"], (result.stdout, result.stderr)
    assert result.exit_code > 1
    first = _shown(result.stderr, repo, case, spec).splitlines()[0]
    assert first == spec["error"], result.stderr
