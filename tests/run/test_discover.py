"""run/discover.py: the Applications a commit defines, on real git repositories: literal ones
in any file, app-of-apps children rendered by the real renderers (helm too), the cycle guard
and the depth limit."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from kubectl_gitdrift import application, model
from kubectl_gitdrift.errors import GitDriftError
from kubectl_gitdrift.run import discover, touched
from kubectl_gitdrift.sources import git, helm
from kubectl_gitdrift.sources import render as source_render
from tests.support.gitrepo import URL, Repo
from tests.support.gitrepo import application as app_yaml


def no_appsets(body: model.Body) -> list[dict[str, Any]]:
    raise AssertionError(f"no ApplicationSet expected: {body}")


class Renders:
    """The real renderers at one commit, and the parent rule preview uses (the app's inputs
    hold an Application-defining file)."""

    def __init__(self, repo: Repo, sha: str, tmp_path: Path) -> None:
        self.repo, self.sha, self.tmp = repo, sha, tmp_path
        self.tree = tmp_path / f"tree-{sha[:8]}"
        git.export_tree(repo.path, sha, self.tree)
        self.rendered: list[str] = []

    def render(self, found: discover.Found) -> Sequence[model.Manifest]:
        self.rendered.append(found.name)
        app = application.parse_application(found.body)
        work = self.tmp / f"work-{len(self.rendered)}"
        return source_render.render(app, self.repo.path, revision=self.sha, workdir=work).manifests

    def parent(self, found: discover.Found, files: frozenset[str]) -> bool:
        app = application.parse_application(found.body)
        inputs = touched.inputs(app, self.tree, lambda url: url == URL)
        return inputs.reaches_any(touched.Paths.of(files))

    def discover(self) -> discover.Discovered:
        return discover.discover(
            self.repo.path, self.sha, expand=no_appsets, render=self.render, parent=self.parent
        )


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path / "repo")


def test_literal_apps_in_any_file_lists_too_and_templates_skipped(repo: Repo) -> None:
    sha = repo.commit({
        "clusters/prod/everything.yml": app_yaml("web", "web") + "---\n" + app_yaml(
            "api", "api", namespace="team-a"),
        "odd name.json": '{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", '
        '"metadata": {"name": "json-app"}, "spec": {"source": {"repoURL": "x", "path": "p"}}}',
        "list.yaml": "apiVersion: v1\nkind: List\nitems:\n- " + app_yaml("listed", "l").replace(
            "\n", "\n  ").rstrip() + "\n",
        "chart/templates/app.yaml": "{{- range .Values.apps }}\n" + app_yaml("{{ . }}", "x")
        + "{{- end }}\n",
        "other/kind.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Application}\n",
        "not-argo.yaml": "apiVersion: example.com/v1\nkind: Application\nmetadata: {name: n}\n",
        "README.md": app_yaml("not-yaml-file", "x"),
    })  # fmt: skip
    found = discover.discover(repo.path, sha, expand=no_appsets)
    assert sorted(found.apps) == ["argocd/json-app", "argocd/listed", "argocd/web", "team-a/api"]
    assert found.apps["team-a/api"].origin == "clusters/prod/everything.yml"
    assert found.apps["argocd/json-app"].file == "odd name.json"
    assert found.skipped == ("chart/templates/app.yaml",)
    assert "chart/templates/app.yaml" in found.app_files
    assert "other/kind.yaml" not in found.app_files


def test_app_of_apps_children_recursively_with_their_parent_as_origin(
    repo: Repo, tmp_path: Path
) -> None:
    sha = repo.commit({
        "root.yaml": app_yaml("root", "apps"),
        "apps/team.yaml": app_yaml("team", "team-apps"),
        "team-apps/web.yaml": app_yaml("web", "web", dest="web"),
        "web/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n",
    })  # fmt: skip
    renders = Renders(repo, sha, tmp_path)
    found = renders.discover()
    assert sorted(found.apps) == ["argocd/root", "argocd/team", "argocd/web"]
    assert found.apps["argocd/root"].origin == "root.yaml"
    # team.yaml is a literal file too: the parent's render is what Argo CD applies, and wins
    assert found.apps["argocd/team"].origin == "app argocd/root"
    assert found.apps["argocd/team"].file == "apps/team.yaml"
    assert (found.apps["argocd/web"].origin, found.apps["argocd/web"].depth) == (
        "app argocd/team",
        2,
    )
    assert sorted(renders.rendered) == ["argocd/root", "argocd/team"]  # web's has no Application


@pytest.mark.skipif(helm.helm_binary() is None, reason="no helm binary")
def test_a_helm_parent_makes_its_children_from_a_template(repo: Repo, tmp_path: Path) -> None:
    template = app_yaml("{{ . }}", "services/{{ . }}").replace("name: {{ . }}", "name: '{{ . }}'")
    sha = repo.commit({
        "root.yaml": app_yaml("root", "charts/apps"),
        "charts/apps/Chart.yaml": "apiVersion: v2\nname: apps\nversion: 1.0.0\n",
        "charts/apps/values.yaml": "apps: [billing, search]\n",
        "charts/apps/templates/apps.yaml": "{{- range .Values.apps }}\n---\n" + template
        + "{{- end }}\n",
    })  # fmt: skip
    found = Renders(repo, sha, tmp_path).discover()
    assert sorted(found.apps) == ["argocd/billing", "argocd/root", "argocd/search"]
    billing = found.apps["argocd/billing"]
    assert billing.origin == "app argocd/root"
    assert billing.body["spec"]["source"]["path"] == "services/billing"
    assert found.skipped == ("charts/apps/templates/apps.yaml",)


def test_a_cycle_renders_each_app_once_and_a_self_managing_root_stays_literal(
    repo: Repo, tmp_path: Path
) -> None:
    sha = repo.commit({
        "a/a.yaml": app_yaml("a", "b"),  # a renders b/, which defines b
        "a/self.yaml": app_yaml("self", "a"),  # renders a/: itself and a
        "b/b.yaml": app_yaml("b", "a"),  # b renders a/ again
    })  # fmt: skip
    renders = Renders(repo, sha, tmp_path)
    found = renders.discover()
    assert sorted(found.apps) == ["argocd/a", "argocd/b", "argocd/self"]
    assert sorted(renders.rendered) == ["argocd/a", "argocd/b", "argocd/self"]
    assert found.apps["argocd/self"].origin == "a/self.yaml"


@pytest.mark.skipif(helm.helm_binary() is None, reason="no helm binary")
def test_depth_limit_stops_a_chain_of_ever_new_names(repo: Repo, tmp_path: Path) -> None:
    # each render makes the next level's app, rendering the same chart with n + 1
    template = app_yaml("level-{{ $n }}", "chain", extra_source=(
        "helm:\n  parameters:\n  - {name: n, value: '{{ $n }}'}"))  # fmt: skip
    sha = repo.commit({
        "root.yaml": app_yaml("level-0", "chain"),
        "chain/Chart.yaml": "apiVersion: v2\nname: chain\nversion: 1.0.0\n",
        "chain/values.yaml": "n: 0\n",
        "chain/templates/app.yaml": "{{- $n := add1 .Values.n }}\n" + template,
    })  # fmt: skip
    renders = Renders(repo, sha, tmp_path)
    found = renders.discover()
    names = [f"argocd/level-{n}" for n in range(discover.MAX_DEPTH + 1)]
    assert sorted(found.apps) == sorted(names)
    assert [found.apps[n].depth for n in names] == list(range(discover.MAX_DEPTH + 1))
    assert renders.rendered == names[:-1]  # the last level found is not rendered
    last = names[-1]
    assert list(found.notes) == [last]
    assert f"more than {discover.MAX_DEPTH} levels" in found.notes[last][0]


@pytest.mark.skipif(helm.helm_binary() is None, reason="no helm binary")
def test_a_parent_that_cannot_render_is_noted(repo: Repo, tmp_path: Path) -> None:
    sha = repo.commit({
        "root.yaml": app_yaml("root", "charts/apps"),
        "charts/apps/Chart.yaml": "apiVersion: v2\nname: apps\nversion: 1.0.0\n",
        "charts/apps/templates/apps.yaml": "{{- range (required \"apps is required\" "
        ".Values.apps) }}\n---\n" + app_yaml("{{ . }}", "x") + "{{- end }}\n",
    })  # fmt: skip
    renders = Renders(repo, sha, tmp_path)
    found = renders.discover()
    assert sorted(found.apps) == ["argocd/root"]
    (note,) = found.notes["argocd/root"]
    assert note.startswith("its child Applications are not known: helm template charts/apps")
    assert "apps is required" in note
    assert "\n" not in note
    with pytest.raises(GitDriftError):
        renders.render(found.apps["argocd/root"])
