"""`--write-patch` for Helm apps, through the real CLI with the real helm: the patch edits the
values file that sets the drifted field (its comments and layout kept), `git apply` takes it,
and after a commit the next run is Synced. For a git chart with `valueFiles`, and for a chart
from a Helm repository (on loopback) with its values from a git `ref` source, where the patch
is for the values repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kubectl_gitdrift.sources import helm
from tests.conftest import TESTDATA, load_make_repo
from tests.support import registry

SCENARIOS = TESTDATA / "scenarios"

pytestmark = pytest.mark.skipif(helm.helm_binary() is None, reason="needs helm")

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, **_GIT_ENV}
    proc = subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    return proc.stdout


def _build(src: Path, dest: Path) -> Path:
    load_make_repo().build_repo(src, dest)
    return dest


def _adopt_and_commit(repo: Path, patch: Path) -> None:
    _git(repo, "apply", "--check", str(patch))
    _git(repo, "apply", str(patch))
    _git(repo, "commit", "-qam", "adopt live values")


def test_git_chart_with_value_files(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """source-helm-values: LOG_LEVEL is config.logLevel of values-prod.yaml (values-eu.yaml,
    applied later, does not set it)."""
    scenario = SCENARIOS / "source-helm-values"
    repo = _build(scenario / "repo-src", tmp_path / "repo")
    patch = tmp_path / "adopt.patch"
    base = ["shop", "--snapshot", str(scenario / "snapshot.yaml"), "--repo-root", str(repo)]
    result = run_cli([*base, "--no-entry-points", "--write-patch", str(patch)])
    assert (result.exit_code, result.stderr) == (1, "")
    assert patch.read_text() == (
        "diff --git a/charts/shop/values-prod.yaml b/charts/shop/values-prod.yaml\n"
        "--- a/charts/shop/values-prod.yaml\n"
        "+++ b/charts/shop/values-prod.yaml\n"
        "@@ -1,4 +1,4 @@\n"
        " replicaCount: 3\n"
        " config:\n"
        "-  logLevel: warn\n"
        "+  logLevel: debug\n"
        "   region: us-east-1\n"
    )
    _adopt_and_commit(repo, patch)
    after = run_cli([*base, "--revision", "HEAD", "--no-entry-points"])
    assert (after.exit_code, after.stderr) == (0, ""), after.stdout
    assert "Synced" in after.stdout.splitlines()[0]


def test_several_objects_set_from_one_value_file(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """fix-helm-values-file: the ConfigMap's and the Deployment's adopt diffs both edit
    values-prod.yaml; the written patch merges them, and everything a file sets is adopted
    (SCHEMA_VERSION, a helm parameter of the Application, stays OutOfSync)."""
    scenario = SCENARIOS / "fix-helm-values-file"
    repo = _build(scenario / "repo-src", tmp_path / "repo")
    patch = tmp_path / "adopt.patch"
    base = ["shop", "--snapshot", str(scenario / "snapshot.yaml"), "--repo-root", str(repo)]
    result = run_cli([*base, "--no-entry-points", "--write-patch", str(patch)])
    assert result.exit_code == 1
    assert patch.read_text().count("diff --git a/charts/shop/values-prod.yaml") == 1
    _adopt_and_commit(repo, patch)
    after = run_cli([*base, "--revision", "HEAD", "--no-entry-points", "-o", "json"])
    drifted = [
        (r["kind"], c["path"])
        for r in json.loads(after.stdout)["applications"][0]["resources"]
        for c in r.get("changes") or ()
    ]
    assert drifted == [("ConfigMap", "data.SCHEMA_VERSION")], after.stdout


def test_key_added_to_the_last_value_file(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A field rendered from the chart's own default (values.yaml) is adopted by adding the key
    to the app's last values file, at its nesting, comments kept."""
    scenario = SCENARIOS / "source-helm-values"
    repo = _build(scenario / "repo-src", tmp_path / "repo")
    snapshot = tmp_path / "snapshot.yaml"
    text = (scenario / "snapshot.yaml").read_text()
    # someone also changed BUILD_NUMBER (the chart's default "0") live
    assert text.count("BUILD_NUMBER: '0'") >= 1
    snapshot.write_text(text.replace("BUILD_NUMBER: '0'", "BUILD_NUMBER: '7'", 1))
    patch = tmp_path / "adopt.patch"
    base = ["shop", "--snapshot", str(snapshot), "--repo-root", str(repo)]
    result = run_cli([*base, "--no-entry-points", "--write-patch", str(patch)])
    assert (result.exit_code, result.stderr) == (1, "")
    assert "charts/shop/values-eu.yaml: add config.buildNumber: 7 (" in result.stdout
    assert '+  buildNumber: "7"\n' in patch.read_text()
    _adopt_and_commit(repo, patch)
    eu = (repo / "charts/shop/values-eu.yaml").read_text()
    assert eu.startswith("# applied after values-prod.yaml")  # the comment is kept
    after = run_cli([*base, "--revision", "HEAD", "--no-entry-points"])
    assert (after.exit_code, after.stderr) == (0, ""), after.stdout


def test_a_value_the_template_writes_literally(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A field no values key renders (the Service's `targetPort: http` in templates/service.yaml)
    is adopted by editing that template line."""
    scenario = SCENARIOS / "source-helm-values"
    repo = _build(scenario / "repo-src", tmp_path / "repo")
    snapshot = tmp_path / "snapshot.yaml"
    text = (scenario / "snapshot.yaml").read_text()
    assert text.count("      targetPort: http\n") == 1
    snapshot.write_text(text.replace("      targetPort: http\n", "      targetPort: web\n"))
    patch = tmp_path / "adopt.patch"
    base = ["shop", "--snapshot", str(snapshot), "--repo-root", str(repo)]
    result = run_cli([*base, "--no-entry-points", "--write-patch", str(patch)])
    assert (result.exit_code, result.stderr) == (1, "")
    step = "charts/shop/templates/service.yaml:13: change spec.ports[port=80].targetPort from http"
    assert step in result.stdout
    assert "-    targetPort: http\n+    targetPort: web\n" in patch.read_text()
    _adopt_and_commit(repo, patch)
    after = run_cli([*base, "--revision", "HEAD", "--no-entry-points"])
    assert "/Service shop/shop           Synced" in after.stdout


def test_git_chart_with_values_from_a_ref_source(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """fix-helm-values-ref: two fields of two objects set in `$values/envs/prod/values.yaml`
    (the same repository): paths relative to the repository's root."""
    scenario = SCENARIOS / "fix-helm-values-ref"
    repo = _build(scenario / "repo-src", tmp_path / "repo")
    patch = tmp_path / "adopt.patch"
    base = ["shop-eu", "--snapshot", str(scenario / "snapshot.yaml"), "--repo-root", str(repo)]
    result = run_cli([*base, "--no-entry-points", "--write-patch", str(patch)])
    assert (result.exit_code, result.stderr) == (1, "")
    first = "diff --git a/envs/prod/values.yaml b/envs/prod/values.yaml\n"
    assert patch.read_text().startswith(first)
    _adopt_and_commit(repo, patch)
    assert "replicaCount: 4\n" in (repo / "envs/prod/values.yaml").read_text()
    after = run_cli([*base, "--revision", "HEAD", "--no-entry-points"])
    assert (after.exit_code, after.stderr) == (0, ""), after.stdout


def test_registry_chart_with_values_from_a_ref_source(  # type: ignore[no-untyped-def]
    run_cli, tmp_path: Path, monkeypatch
) -> None:
    """source-chart-registry-values-ref: the chart comes from a Helm repository, replicaCount
    from `$values/envs/prod/web-values.yaml`; the patch is for the values repository."""
    scenario = SCENARIOS / "source-chart-registry-values-ref"
    served = registry.serve_helm_repo(TESTDATA / "scenario-charts", tmp_path / "serve")
    try:
        monkeypatch.setenv("HELM_CONFIG_HOME", str(tmp_path / "helm-config"))
        repo = _build(scenario / "repo-src", tmp_path / "values-repo")
        head = _git(repo, "rev-parse", "HEAD").strip()
        snapshot = tmp_path / "live.yaml"
        snapshot.write_text(
            (scenario / "live.yaml")
            .read_text()
            .replace("${HELM_REPO_URL}", served.url)
            .replace("${REPO_HEAD}", head)
        )
        patch = tmp_path / "adopt.patch"
        base = ["web-prod", "--snapshot", str(snapshot), "--repo-root", str(repo)]
        result = run_cli([*base, "--no-entry-points", "--write-patch", str(patch)])
        assert (result.exit_code, result.stderr) == (1, "")
        assert (
            "in the values repository https://github.com/example/platform-values.git:"
            in result.stdout
        )
        assert patch.read_text() == (
            "diff --git a/envs/prod/web-values.yaml b/envs/prod/web-values.yaml\n"
            "--- a/envs/prod/web-values.yaml\n"
            "+++ b/envs/prod/web-values.yaml\n"
            "@@ -1,2 +1,2 @@\n"
            "-replicaCount: 3\n"
            "+replicaCount: 5\n"
            " greeting: hello from prod\n"
        )
        _adopt_and_commit(repo, patch)
        after = run_cli([*base, "--revision", "HEAD", "--no-entry-points"])
        assert (after.exit_code, after.stderr) == (0, ""), after.stdout
        assert "Synced" in after.stdout.splitlines()[0]
    finally:
        served.stop()
        shutil.rmtree(tmp_path / "serve", ignore_errors=True)
