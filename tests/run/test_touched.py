"""run/touched.py: which apps a change between two commits reaches, on real git repositories
(the names `git diff` gives, the inputs read from the exported tree)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubectl_gitdrift import application
from kubectl_gitdrift.run import touched
from kubectl_gitdrift.sources import commits, git
from tests.support.gitrepo import URL, Repo
from tests.support.gitrepo import application as app_yaml

KUSTOMIZE_BASE = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [deploy.yaml]
"""


def ours(url: str) -> bool:
    return url == URL


def inputs_at(repo: Repo, sha: str, manifest: str, tmp_path: Path) -> touched.Inputs:
    tree = tmp_path / f"tree-{sha[:8]}"
    if not tree.exists():
        git.export_tree(repo.path, sha, tree)
    import yaml

    app = application.parse_application(yaml.safe_load(manifest))
    return touched.inputs(app, tree, ours)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path / "repo")


def test_kustomize_bases_and_components_reached_from_the_path(repo: Repo, tmp_path: Path) -> None:
    files = {
        "base/kustomization.yaml": KUSTOMIZE_BASE,
        "base/deploy.yaml": "kind: ConfigMap\n",
        "components/tls/kustomization.yaml": "kind: Component\n",
        "overlays/prod/kustomization.yaml": (
            "resources: [../../base, extra.yaml]\ncomponents: [../../components/tls]\n"
            "patches: [{path: patch.yaml}]\n"
        ),
        "overlays/prod/extra.yaml": "kind: Secret\n",
        "overlays/prod/patch.yaml": "kind: Deployment\n",
        "overlays/dev/kustomization.yaml": "resources: [../../base]\n",
        "unrelated/x.yaml": "a: 1\n",
    }
    base = repo.commit(files)
    head = repo.commit({
        "base/deploy.yaml": "kind: ConfigMap\nx: 1\n",
        "components/tls/kustomization.yaml": "kind: Component\nresources: []\n",
        "overlays/prod/patch.yaml": "kind: Deployment\ny: 2\n",
        "overlays/dev/kustomization.yaml": "resources: [../../base]\nnamePrefix: d-\n",
        "unrelated/x.yaml": "a: 2\n",
    })  # fmt: skip
    changed = commits.changed(repo.path, base, head)
    assert changed == [
        "base/deploy.yaml",
        "components/tls/kustomization.yaml",
        "overlays/dev/kustomization.yaml",
        "overlays/prod/patch.yaml",
        "unrelated/x.yaml",
    ]
    prod = inputs_at(repo, head, app_yaml("prod", "overlays/prod"), tmp_path)
    assert prod.reached(changed) == (
        "base/deploy.yaml",
        "components/tls/kustomization.yaml",
        "overlays/prod/patch.yaml",
    )
    dev = inputs_at(repo, head, app_yaml("dev", "overlays/dev"), tmp_path)
    assert dev.reached(changed) == ("base/deploy.yaml", "overlays/dev/kustomization.yaml")


def test_helm_value_files_refs_and_file_dependencies(repo: Repo, tmp_path: Path) -> None:
    chart = "apiVersion: v2\nname: web\nversion: 1.0.0\n"
    base = repo.commit({
        "charts/web/Chart.yaml": chart + "dependencies:\n- name: lib\n  version: 1.0.0\n"
        "  repository: file://../lib\n",
        "charts/web/values.yaml": "a: 1\n",
        "charts/lib/Chart.yaml": "apiVersion: v2\nname: lib\nversion: 1.0.0\n",
        "envs/prod/values.yaml": "a: 2\n",
        "envs/prod/other.yaml": "a: 3\n",
        "shared/values-prod.yaml": "b: 1\n",
        "shared/values-dev.yaml": "b: 1\n",
    })  # fmt: skip
    head = repo.commit({
        "charts/lib/Chart.yaml": "apiVersion: v2\nname: lib\nversion: 1.0.1\n",
        "envs/prod/values.yaml": "a: 20\n",
        "envs/prod/other.yaml": "a: 30\n",
        "shared/values-prod.yaml": "b: 2\n",
        "shared/values-dev.yaml": "b: 2\n",
    })  # fmt: skip
    changed = commits.changed(repo.path, base, head)
    manifest = app_yaml(
        "web",
        "charts/web",
        extra_source="helm:\n  valueFiles: [../../envs/prod/values.yaml, /shared/values-prod.yaml]",
    )
    found = inputs_at(repo, head, manifest, tmp_path)
    assert found.reached(changed) == (
        "charts/lib/Chart.yaml",
        "envs/prod/values.yaml",
        "shared/values-prod.yaml",
    )
    multi = f"""\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {{name: web, namespace: argocd}}
spec:
  project: default
  destination: {{server: https://kubernetes.default.svc, namespace: prod}}
  sources:
  - repoURL: https://charts.example.com
    chart: web
    targetRevision: 1.0.0
    helm: {{valueFiles: [$values/envs/prod/values.yaml]}}
  - repoURL: {URL}
    targetRevision: main
    ref: values
"""
    assert inputs_at(repo, head, multi, tmp_path).reached(changed) == ("envs/prod/values.yaml",)


def test_directory_sources_flat_unless_recurse(repo: Repo, tmp_path: Path) -> None:
    base = repo.commit({"apps/a.yaml": "kind: ConfigMap\n", "apps/sub/b.yaml": "kind: Secret\n"})
    head = repo.commit({"apps/sub/b.yaml": "kind: Secret\nx: 1\n", "apps-two/c.yaml": "x: 1\n"})
    changed = commits.changed(repo.path, base, head)
    flat = inputs_at(repo, head, app_yaml("a", "apps"), tmp_path)
    assert flat.reached(changed) == ()
    deep = inputs_at(repo, head, app_yaml("a", "apps", extra_source="directory: {recurse: true}"),
                     tmp_path)  # fmt: skip
    assert deep.reached(changed) == ("apps/sub/b.yaml",)  # not apps-two/: a sibling, not below


def test_other_repositories_are_not_inputs(repo: Repo, tmp_path: Path) -> None:
    base = repo.commit({"apps/a.yaml": "x: 1\n"})
    head = repo.commit({"apps/a.yaml": "x: 2\n"})
    changed = commits.changed(repo.path, base, head)
    elsewhere = app_yaml("a", "apps", repo_url="https://git.example.com/org/other.git")
    assert inputs_at(repo, head, elsewhere, tmp_path).reached(changed) == ()
    assert inputs_at(repo, head, app_yaml("a", "apps"), tmp_path).reached(changed) == (
        "apps/a.yaml",
    )


def test_a_renamed_file_reaches_by_both_names(repo: Repo, tmp_path: Path) -> None:
    base = repo.commit({"apps/a.yaml": "kind: ConfigMap\nmetadata: {name: a}\n"})
    head = repo.commit(
        {"apps/a.yaml": None, "other/a.yaml": "kind: ConfigMap\nmetadata: {name: a}\n"}
    )
    changed = commits.changed(repo.path, base, head)
    assert changed == ["apps/a.yaml", "other/a.yaml"]
    assert touched.touched_by(
        inputs_at(repo, base, app_yaml("a", "apps"), tmp_path),
        inputs_at(repo, head, app_yaml("a", "apps"), tmp_path),
        changed,
    ) == ("apps/a.yaml",)


def test_spec_changed_ignores_status_and_unrelated_metadata() -> None:
    body = {"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"project": "default"}}
    assert not touched.spec_changed(body, {**body, "status": {"sync": {"status": "Synced"}}})
    assert not touched.spec_changed(
        body, {**body, "metadata": {**body["metadata"], "resourceVersion": "9"}}
    )
    assert touched.spec_changed(body, {**body, "spec": {"project": "team"}})
    assert touched.spec_changed(body, {**body, "metadata": {"name": "a", "labels": {"x": "2"}}})
    assert touched.spec_changed(None, body)
    assert not touched.spec_changed(None, None)


def test_reaches_any_agrees_with_reaches() -> None:
    inputs = touched.Inputs(
        trees=frozenset({"charts/web", "lib"}),
        flat=frozenset({"apps", "."}),
        files=frozenset({"envs/prod/values.yaml"}),
    )
    cases = [
        ["charts/web/templates/a.yaml"], ["charts/webx/a.yaml"], ["apps/a.yaml"],
        ["apps/sub/a.yaml"], ["root.yaml"], ["envs/prod/values.yaml"], ["envs/prod/x.yaml"],
        ["lib"], ["libx/a"], [], ["other/a.yaml", "lib/deep/er/x.libsonnet"],
    ]  # fmt: skip
    for paths in cases:
        expected = any(inputs.reaches(p) for p in paths)
        assert inputs.reaches_any(touched.Paths.of(paths)) is expected, paths
    whole = touched.Inputs(trees=frozenset({"."}))
    assert whole.reaches_any(touched.Paths.of(["a/b/c"]))
    assert not whole.reaches_any(touched.Paths.of([]))
