"""ApplicationSets expanded as the controller would, one golden case per directory of
testdata/appsets/expand/: `appset.yaml`, the files of its git repository under `repo/` (committed
into a real repository, which every repoURL reads), the cluster Secrets in `clusters.yaml`,
`inputs.yaml` (`offline`, `allow_plugins`), and the Applications it makes in `expected.yaml`, or
the one-line error in `expected-error.txt` (pytest --update-golden rewrites them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift.appsets.expand import expand
from kubectl_gitdrift.appsets.inputs import AppSetError, Inputs
from kubectl_gitdrift.run.appset_inputs import clusters
from tests.appsets.repos import commit, repo_of
from tests.conftest import TESTDATA, Golden

CASES = TESTDATA / "appsets" / "expand"


def _case_files(src: Path) -> dict[str, bytes]:
    return {
        p.relative_to(src).as_posix(): p.read_bytes() for p in sorted(src.rglob("*")) if p.is_file()
    }


def run_case(case: Path, tmp_path: Path) -> tuple[str, str]:
    """(golden file name, text) for one case directory."""
    appset = yaml.safe_load((case / "appset.yaml").read_text())
    repo = tmp_path / "repo"
    commit(repo, _case_files(case / "repo") if (case / "repo").is_dir() else {})
    secrets = []
    if (case / "clusters.yaml").is_file():
        secrets = [d for d in yaml.safe_load_all((case / "clusters.yaml").read_text()) if d]
    options: dict[str, Any] = {}
    if (case / "inputs.yaml").is_file():
        options = yaml.safe_load((case / "inputs.yaml").read_text()) or {}
    inputs = Inputs(repo=repo_of(repo), clusters=clusters(secrets, namespace="argocd"), **options)
    try:
        apps = expand(appset, inputs)
    except AppSetError as exc:
        return "expected-error.txt", exc.message + "\n"
    return "expected.yaml", yaml.safe_dump_all(apps, sort_keys=True) if apps else ""


@pytest.mark.parametrize("case", sorted(p.name for p in CASES.iterdir() if p.is_dir()))
def test_expand_case(case: str, tmp_path: Path, golden: Golden) -> None:
    name, text = run_case(CASES / case, tmp_path)
    other = {"expected.yaml": "expected-error.txt", "expected-error.txt": "expected.yaml"}[name]
    if not golden.update:
        assert not (CASES / case / other).exists(), f"{case}: expected {other}, got {name}:\n{text}"
    golden.check(CASES / case / name, text)
