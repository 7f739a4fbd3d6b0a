"""run/preview.py end to end on real git repositories with two commits (or a work tree), the
real kustomize and helm: which apps a change touches, what each renders differently, the
work tree made into a commit without touching the user's index, refs or files, failures per
app, and with a snapshot what syncing head would do."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift import model
from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.run import preview
from kubectl_gitdrift.run.request import Change, ClusterSide, GitSide, Request
from kubectl_gitdrift.settings import Settings
from kubectl_gitdrift.sources import helm
from kubectl_gitdrift.sources.fetch import RepoRoot
from tests.support.apiserver import (
    controller_rbac,
    kube_apiserver,  # noqa: F401 - the fixture
)
from tests.support.gitrepo import URL, Repo, configmap
from tests.support.gitrepo import application as app_yaml

needs_helm = pytest.mark.skipif(helm.helm_binary() is None, reason="no helm binary")
Action = model.PreviewAction


class Recorder:
    """A workflow.Progress that keeps what it was told."""

    def __init__(self) -> None:
        self.phases: dict[str, int] = {}
        self.items: list[str] = []

    def __call__(self, message: str) -> None:
        self.items.append(message)

    def start(self, phase: str, total: int) -> None:
        self.phases[phase] = total

    def advance(self, item: str = "") -> None:
        self.items.append(item)


def request(repo: Repo, base: str | None, head: str | None, **change: Any) -> Request:
    snapshot = change.pop("snapshot", None)
    return Request(
        git=GitSide(repo_roots=(RepoRoot(repo.path),), offline=True),
        cluster=ClusterSide(snapshot=snapshot),
        change=Change(base=base, head=head, live=snapshot is not None, **change),
        settings=Settings.from_environ(),
    )


def run(repo: Repo, base: str | None, head: str | None, **change: Any) -> model.Preview:
    return preview.run(request(repo, base, head, **change), Recorder())


def by_name(result: model.Preview) -> dict[str, model.AppPreview]:
    return {a.name: a for a in result.apps}


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path / "repo")


CHART = {
    "charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n",
    "charts/web/values.yaml": "replicas: 1\ncolor: blue\n",
    "charts/web/templates/cm.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n"
        "  color: {{ .Values.color | quote }}\n  replicas: {{ .Values.replicas | quote }}\n"
    ),
}


VALUES = "helm: {{valueFiles: [../../envs/{}/values.yaml]}}"


@needs_helm
def test_a_changed_value_file_touches_only_the_helm_app_using_it(repo: Repo) -> None:
    base = repo.commit({
        **CHART,
        "envs/prod/values.yaml": "color: green\n",
        "envs/dev/values.yaml": "color: red\n",
        "apps/prod.yaml": app_yaml("web-prod", "charts/web",
                                   extra_source=VALUES.format("prod")),
        "apps/dev.yaml": app_yaml("web-dev", "charts/web", dest="dev",
                                  extra_source=VALUES.format("dev")),
        "static/cm.yaml": configmap("static", a="1"),
        "apps/static.yaml": app_yaml("static", "static"),
    })  # fmt: skip
    head = repo.commit({"envs/prod/values.yaml": "color: purple\n"})
    progress = Recorder()
    result = preview.run(request(repo, base, head), progress)
    assert (result.base, result.head, result.base_ref, result.head_ref) == (base, head, base, head)
    (app,) = result.apps
    assert (app.name, app.action, app.touched_by) == (
        "argocd/web-prod",
        Action.CHANGED,
        ("envs/prod/values.yaml",),
    )
    assert app.origin == "apps/prod.yaml"
    assert app.source == "charts/web"
    (obj,) = app.objects
    assert (obj.key.kind, obj.key.name, obj.action) == ("ConfigMap", "web", Action.CHANGED)
    assert [(e.path, e.base, e.head) for e in obj.edits] == [(("data", "color"), "green", "purple")]
    assert result.untouched == 2
    assert result.changed
    assert progress.phases == {"finding apps": 2, "rendering": 2}  # the untouched not rendered


def test_apps_added_and_removed_and_a_changed_spec(repo: Repo) -> None:
    base = repo.commit({
        "a/cm.yaml": configmap("a", x="1"),
        "b/cm.yaml": configmap("b", x="1"),
        "apps/a.yaml": app_yaml("a", "a"),
        "apps/old.yaml": app_yaml("old", "b"),
        "apps/moved.yaml": app_yaml("moved", "a"),
    })  # fmt: skip
    head = repo.commit({
        "apps/old.yaml": None,
        "apps/new.yaml": app_yaml("new", "b"),
        "apps/moved.yaml": app_yaml("moved", "b"),
    })  # fmt: skip
    apps = by_name(run(repo, base, head))
    assert sorted(apps) == ["argocd/moved", "argocd/new", "argocd/old"]
    new, old, moved = apps["argocd/new"], apps["argocd/old"], apps["argocd/moved"]
    assert new.action is Action.ADDED
    assert [(o.key.name, o.action) for o in new.objects] == [("b", Action.ADDED)]
    assert old.action is Action.REMOVED
    assert [(o.key.name, o.action) for o in old.objects] == [("b", Action.REMOVED)]
    assert moved.action is Action.CHANGED
    assert moved.touched_by == ("apps/moved.yaml",)
    assert (new.touched_by, old.touched_by) == (("apps/new.yaml",), ("apps/old.yaml",))
    assert [(e.path, e.base, e.head) for e in moved.spec] == [
        (("spec", "source", "path"), "a", "b")
    ]
    assert sorted((o.key.name, o.action) for o in moved.objects) == [
        ("a", Action.REMOVED),
        ("b", Action.ADDED),
    ]


def test_a_change_that_touches_no_app(repo: Repo) -> None:
    base = repo.commit({"a/cm.yaml": configmap("a", x="1"), "apps/a.yaml": app_yaml("a", "a"),
                        "README.md": "one\n"})  # fmt: skip
    head = repo.commit({"README.md": "two\n", "apps/a.yaml": app_yaml("a", "a") + "# note\n"})
    result = run(repo, base, head)
    assert (result.apps, result.untouched, result.changed) == ((), 1, False)
    every = run(repo, base, head, all_apps=True)
    assert [(a.name, a.action) for a in every.apps] == [("argocd/a", Action.UNCHANGED)]
    assert not every.changed


def test_the_work_tree_is_previewed_without_touching_index_refs_or_files(repo: Repo) -> None:
    base = repo.commit({"a/cm.yaml": configmap("a", x="1"), "apps/a.yaml": app_yaml("a", "a"),
                        ".gitignore": "ignored/\n"})  # fmt: skip
    clean = run(repo, base, None)
    assert (clean.head, clean.head_ref, clean.apps) == (base, "work tree", ())
    repo.write({
        "a/cm.yaml": configmap("a", x="2"),  # tracked, changed
        "a/new.yaml": configmap("a-new", y="1"),  # untracked
        "ignored/cm.yaml": configmap("ignored", z="1"),
    })  # fmt: skip
    repo.git("add", "a/cm.yaml")  # the user's staged change stays staged
    git_dir = repo.path / ".git"
    before = (
        (git_dir / "index").read_bytes(),
        repo.git("status", "--porcelain"),
        repo.git("for-each-ref"),
        repo.git("rev-parse", "HEAD"),
    )
    result = run(repo, base, None)
    after = (
        (git_dir / "index").read_bytes(),
        repo.git("status", "--porcelain"),
        repo.git("for-each-ref"),
        repo.git("rev-parse", "HEAD"),
    )
    assert after == before
    assert result.head != base
    assert repo.git("rev-parse", f"{result.head}^") == base
    (app,) = result.apps
    assert app.touched_by == ("a/cm.yaml", "a/new.yaml")
    assert sorted((o.key.name, o.action) for o in app.objects) == [
        ("a", Action.CHANGED),
        ("a-new", Action.ADDED),
    ]
    again = run(repo, base, None)
    assert again.head == result.head  # the same work tree is the same commit (cached renders)


def test_the_work_tree_commit_needs_no_identity_of_the_user(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user whose git config says user.useConfigOnly and names nobody still previews the work
    tree: its commit has an identity of its own."""
    base = repo.commit({"a/cm.yaml": configmap("a", x="1"), "apps/a.yaml": app_yaml("a", "a")})
    repo.write({"a/cm.yaml": configmap("a", x="2")})
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tuseConfigOnly = true\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    for name in ("NAME", "EMAIL"):
        for role in ("AUTHOR", "COMMITTER"):
            monkeypatch.delenv(f"GIT_{role}_{name}", raising=False)
    (app,) = run(repo, base, None).apps
    assert [(o.key.name, o.action) for o in app.objects] == [("a", Action.CHANGED)]


def test_the_default_base_is_the_merge_base_with_the_default_branch(repo: Repo) -> None:
    fork = repo.commit({"a/cm.yaml": configmap("a", x="1"), "apps/a.yaml": app_yaml("a", "a")})
    repo.git("checkout", "-q", "-b", "feature")
    head = repo.commit({"a/cm.yaml": configmap("a", x="2")})
    repo.git("checkout", "-q", "main")
    repo.commit({"other.txt": "main moved on\n"})
    repo.git("checkout", "-q", "feature")
    result = run(repo, None, "feature")
    assert (result.base, result.base_ref, result.head, result.head_ref) == (
        fork,
        "main",
        head,
        "feature",
    )
    assert [a.name for a in result.apps] == ["argocd/a"]


def test_a_revision_that_does_not_exist_is_one_line_naming_it(repo: Repo) -> None:
    repo.commit({"apps/a.yaml": app_yaml("a", "a")})
    with pytest.raises(SourceError, match=r"^--base no-such-branch: no such revision in ") as exc:
        run(repo, "no-such-branch", "HEAD")
    assert "\n" not in str(exc.value)
    with pytest.raises(SourceError, match=r"^--head 0123456: no such revision"):
        run(repo, "HEAD", "0123456")


def test_a_render_that_fails_is_that_app_failed_and_the_rest_reported(repo: Repo) -> None:
    base = repo.commit({
        "a/cm.yaml": configmap("a", x="1"), "apps/a.yaml": app_yaml("a", "a"),
        "b/kustomization.yaml": "resources: [cm.yaml]\n", "b/cm.yaml": configmap("b", x="1"),
        "apps/b.yaml": app_yaml("b", "b"),
    })  # fmt: skip
    head = repo.commit({"a/cm.yaml": configmap("a", x="2"),
                        "b/kustomization.yaml": "resources: [missing.yaml]\n"})  # fmt: skip
    apps = by_name(run(repo, base, head))
    assert apps["argocd/a"].action is Action.CHANGED
    failed = apps["argocd/b"]
    assert failed.action is Action.FAILED
    assert failed.error.startswith("head: kustomize build b failed")
    assert "\n" not in failed.error


def test_an_app_of_apps_child_changed(repo: Repo) -> None:
    base = repo.commit({
        "root.yaml": app_yaml("root", "apps"),
        "apps/child.yaml": app_yaml("child", "child"),
        "child/cm.yaml": configmap("child", x="1"),
    })  # fmt: skip
    head = repo.commit({"child/cm.yaml": configmap("child", x="2")})
    (app,) = run(repo, base, head).apps
    assert (app.name, app.origin, app.action) == ("argocd/child", "app argocd/root", Action.CHANGED)
    assert app.touched_by == ("child/cm.yaml",)


@needs_helm
def test_a_multi_source_values_file_changed(repo: Repo) -> None:
    multi = f"""\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {{name: web, namespace: argocd}}
spec:
  project: default
  destination: {{server: https://kubernetes.default.svc, namespace: prod}}
  sources:
  - repoURL: {URL}
    path: charts/web
    targetRevision: main
    helm: {{valueFiles: [$values/config/prod.yaml]}}
  - repoURL: {URL}
    targetRevision: main
    ref: values
"""
    base = repo.commit({**CHART, "config/prod.yaml": "replicas: 2\n", "apps/web.yaml": multi})
    head = repo.commit({"config/prod.yaml": "replicas: 3\n"})
    (app,) = run(repo, base, head).apps
    assert (app.action, app.touched_by) == (Action.CHANGED, ("config/prod.yaml",))
    (obj,) = app.objects
    assert [(e.path, e.base, e.head) for e in obj.edits] == [(("data", "replicas"), "2", "3")]


def test_applicationset_git_directories_adds_an_app(repo: Repo) -> None:
    appset = f"""\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {{name: services, namespace: argocd}}
spec:
  generators:
  - git:
      repoURL: {URL}
      revision: main
      directories: [{{path: "services/*"}}]
  template:
    metadata: {{name: "svc-{{{{path.basename}}}}"}}
    spec:
      project: default
      destination: {{server: https://kubernetes.default.svc, namespace: "{{{{path.basename}}}}"}}
      source: {{repoURL: {URL}, targetRevision: main, path: "{{{{path}}}}"}}
"""
    base = repo.commit({"appset.yaml": appset, "services/a/cm.yaml": configmap("a", x="1")})
    head = repo.commit({"services/b/cm.yaml": configmap("b", x="1")})
    result = run(repo, base, head)
    (app,) = result.apps
    assert (app.name, app.action, app.origin) == (
        "argocd/svc-b",
        Action.ADDED,
        "ApplicationSet argocd/services",
    )
    assert [(o.key.name, o.action) for o in app.objects] == [("b", Action.ADDED)]
    assert result.untouched == 1


def test_an_applicationset_that_cannot_be_expanded_fails_alone(repo: Repo) -> None:
    broken = """\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: remote, namespace: argocd}
spec:
  generators:
  - pullRequest: {github: {owner: org, repo: deploy}}
  template:
    metadata: {name: "pr-{{number}}"}
    spec: {project: default, destination: {server: x}, source: {repoURL: x, path: y}}
"""
    base = repo.commit({"a/cm.yaml": configmap("a", x="1"), "apps/a.yaml": app_yaml("a", "a")})
    head = repo.commit({"a/cm.yaml": configmap("a", x="2"), "appsets/remote.yaml": broken})
    apps = by_name(run(repo, base, head))
    assert apps["argocd/a"].action is Action.CHANGED
    failed = apps["argocd/remote"]
    assert failed.action is Action.FAILED
    assert failed.error.startswith("head: ApplicationSet argocd/remote")
    assert "pullRequest" in failed.error
    assert "\n" not in failed.error


LIVE_CM = """\
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: a
    namespace: prod
    uid: 6f1c2c55-7f7e-4d55-9a43-0c2c7a1d5b01
    resourceVersion: "1200"
    creationTimestamp: "2026-01-01T10:00:00Z"
    annotations:
      argocd.argoproj.io/tracking-id: a:/ConfigMap:prod/a
    managedFields:
    - manager: argocd-controller
      operation: Apply
      apiVersion: v1
      time: "2026-01-01T10:00:00Z"
      fieldsType: FieldsV1
      fieldsV1: {"f:data": {"f:x": {}}, "f:metadata": {"f:annotations": {
        "f:argocd.argoproj.io/tracking-id": {}}}}
    - manager: kubectl-edit
      operation: Update
      apiVersion: v1
      time: "2026-01-02T09:00:00Z"
      fieldsType: FieldsV1
      fieldsV1: {"f:data": {"f:y": {}}}
  data: {x: "1", y: by-hand}
"""


def write_list(path: Path, *apps: dict[str, Any]) -> Path:
    """A `kubectl get -o yaml` List of the apps and the live ConfigMap."""
    items = [*apps, *yaml.safe_load(LIVE_CM)]
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def test_with_a_snapshot_head_is_compared_with_live(repo: Repo, tmp_path: Path) -> None:
    base = repo.commit({"a/cm.yaml": configmap("a", x="1"), "apps/a.yaml": app_yaml("a", "a")})
    head = repo.commit({"a/cm.yaml": configmap("a", x="2")})
    live_app = {**yaml.safe_load(app_yaml("a", "a")),
                "status": {"sync": {"status": "Synced", "revision": base}}}  # fmt: skip
    snapshot = write_list(tmp_path / "live.yaml", live_app)
    result = run(repo, base, head, snapshot=snapshot)
    assert result.live == f"snapshot {snapshot}"
    (app,) = result.apps
    assert app.action is Action.CHANGED
    sets = [(e.action, e.path, e.live, e.head) for e in app.sync if e.key.name == "a"]
    assert ("set", ("data", "x"), "1", "2") in sets


def test_a_snapshot_secret_without_labels_is_no_cluster(repo: Repo, tmp_path: Path) -> None:
    """A clusters generator reads the snapshot's cluster Secrets; a Secret whose labels are null
    (as `kubectl get -o yaml` may write them) is simply not one."""
    appset = f"""\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {{name: everywhere, namespace: argocd}}
spec:
  generators: [{{clusters: {{}}}}]
  template:
    metadata: {{name: "a-{{{{name}}}}"}}
    spec:
      project: default
      destination: {{server: "{{{{server}}}}", namespace: a}}
      source: {{repoURL: {URL}, targetRevision: main, path: a}}
"""
    base = repo.commit({"a/cm.yaml": configmap("a", x="1"), "appset.yaml": appset})
    head = repo.commit({"a/cm.yaml": configmap("a", x="2")})
    plain = {"apiVersion": "v1", "kind": "Secret",
             "metadata": {"name": "tls", "namespace": "argocd", "labels": None}}  # fmt: skip
    result = run(repo, base, head, snapshot=write_list(tmp_path / "live.yaml", plain))
    assert [(a.name, a.action) for a in result.apps] == [("argocd/a-in-cluster", Action.CHANGED)]


def test_live_defined_apps_of_this_repository_count(repo: Repo, tmp_path: Path) -> None:
    base = repo.commit({"a/cm.yaml": configmap("a", x="1")})
    head = repo.commit({"a/cm.yaml": configmap("a", x="2")})
    other = app_yaml("elsewhere", "a", repo_url="https://git.example.com/org/other.git")
    snapshot = write_list(
        tmp_path / "live.yaml", yaml.safe_load(app_yaml("a", "a")), yaml.safe_load(other)
    )
    result = run(repo, base, head, snapshot=snapshot)
    (app,) = result.apps
    assert (app.name, app.origin, app.action) == ("argocd/a", "cluster", Action.CHANGED)


LIST_APPSET = f"""\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {{name: envs, namespace: argocd}}
spec:
  generators:
  - list: {{elements: [{{env: prod}}]}}
  template:
    metadata: {{name: "web-{{{{env}}}}"}}
    spec:
      project: default
      destination: {{server: https://kubernetes.default.svc, namespace: "{{{{env}}}}"}}
      source: {{repoURL: {URL}, targetRevision: main, path: web}}
"""


@needs_helm
def test_apps_of_a_parent_unknown_at_head_fail_rather_than_look_removed(repo: Repo) -> None:
    template = app_yaml("{{ . }}", "web").replace("name: {{ . }}", "name: '{{ . }}'")
    base = repo.commit({
        "appset.yaml": LIST_APPSET,
        "web/cm.yaml": configmap("web", x="1"),
        "root.yaml": app_yaml("root", "charts/apps"),
        "charts/apps/Chart.yaml": "apiVersion: v2\nname: apps\nversion: 1.0.0\n",
        "charts/apps/values.yaml": "apps: [billing]\n",
        "charts/apps/templates/apps.yaml": "{{- range (required \"apps is required\" "
        ".Values.apps) }}\n---\n" + template + "{{- end }}\n",
    })  # fmt: skip
    head = repo.commit({
        "appset.yaml": LIST_APPSET.replace("- list:", "- nosuchgenerator:"),
        "charts/apps/values.yaml": "other: 1\n",
    })  # fmt: skip
    apps = by_name(run(repo, base, head))
    assert sorted(apps) == ["argocd/billing", "argocd/envs", "argocd/root", "argocd/web-prod"]
    assert {a.action for a in apps.values()} == {Action.FAILED}
    assert apps["argocd/envs"].error.startswith("head: ApplicationSet argocd/envs")
    assert apps["argocd/web-prod"].error.startswith(
        "head: the Applications of ApplicationSet argocd/envs are not known: ApplicationSet"
    )
    assert apps["argocd/root"].error.startswith("head: helm template charts/apps failed")
    assert apps["argocd/billing"].error.startswith(
        "head: the Applications of app argocd/root are not known: helm template charts/apps"
    )
    assert all("\n" not in a.error for a in apps.values())


@pytest.mark.cluster
def test_with_a_live_cluster_head_is_compared_with_it(
    repo: Repo,
    tmp_path: Path,
    kube_apiserver: Any,  # noqa: F811
) -> None:
    base = repo.commit({"a/cm.yaml": configmap("a", x="1"), "apps/a.yaml": app_yaml("a", "a")})
    head = repo.commit({"a/cm.yaml": configmap("a", x="2")})
    live_app = {**yaml.safe_load(app_yaml("a", "a")),
                "status": {"sync": {"status": "Synced", "revision": base}}}  # fmt: skip
    server = kube_apiserver([live_app, *yaml.safe_load(LIVE_CM), *controller_rbac()])
    asked = dataclasses.replace(
        request(repo, base, head),
        cluster=ClusterSide(kubeconfig=str(server.kubeconfig_path)),
        change=Change(base=base, head=head, live=True),
    )
    result = preview.run(asked, Recorder())
    assert result.live.startswith("context ")
    (app,) = result.apps
    assert app.action is Action.CHANGED
    sets = [(e.action, e.path, e.live, e.head) for e in app.sync if e.key.name == "a"]
    assert ("set", ("data", "x"), "1", "2") in sets


def test_all_apps_with_a_snapshot_shows_what_syncing_an_untouched_app_does(
    repo: Repo, tmp_path: Path
) -> None:
    base = repo.commit({"a/cm.yaml": configmap("a", x="3"), "apps/a.yaml": app_yaml("a", "a"),
                        "README.md": "one\n"})  # fmt: skip
    head = repo.commit({"README.md": "two\n"})
    snapshot = write_list(tmp_path / "live.yaml", yaml.safe_load(app_yaml("a", "a")))
    assert run(repo, base, head, snapshot=snapshot).apps == ()
    progress = Recorder()
    result = preview.run(request(repo, base, head, all_apps=True, snapshot=snapshot), progress)
    (app,) = result.apps
    assert app.action is Action.UNCHANGED
    assert ("set", ("data", "x"), "1", "3") in [
        (e.action, e.path, e.live, e.head) for e in app.sync
    ]
    assert result.changed  # syncing would change the cluster
    assert progress.phases["rendering"] == 1  # rendered at base only: head is the same


def test_the_default_branch_is_origin_head_s_target_first(repo: Repo) -> None:
    trunk = repo.commit({"a/cm.yaml": configmap("a", x="1"), "apps/a.yaml": app_yaml("a", "a")})
    repo.git("update-ref", "refs/remotes/origin/trunk", trunk)
    repo.git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk")
    head = repo.commit({"a/cm.yaml": configmap("a", x="2")})
    result = run(repo, None, "HEAD")
    assert (result.base, result.base_ref, result.head) == (trunk, "origin/trunk", head)


def test_no_default_branch_asks_for_base(repo: Repo) -> None:
    repo.git("checkout", "-q", "-b", "topic")  # before any commit: no main, no origin/*
    repo.commit({"apps/a.yaml": app_yaml("a", "a")})
    assert repo.git("branch", "--all", "--format=%(refname)") == "refs/heads/topic"
    with pytest.raises(SourceError, match=r"no default branch to compare with") as exc:
        run(repo, None, "HEAD")
    assert exc.value.hint == "name the base revision: --base REV"
