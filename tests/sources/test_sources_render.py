from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift import settings, yamlio
from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.model import Application, AppSource, Manifest, ObjectKey, SyncPolicy
from kubectl_gitdrift.settings import Settings
from kubectl_gitdrift.sources import (
    buildenv,
    globs,
    helm,
    kustomize,
    kustomize_closure,
    kustomize_edit,
)
from kubectl_gitdrift.sources.render import Rendered, render

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook
spec:
  replicas: 1
  selector:
    matchLabels: {app: guestbook}
  template:
    metadata:
      labels: {app: guestbook}
    spec:
      containers:
      - name: app
        image: nginx:IMAGE
"""
SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: guestbook
spec:
  selector: {app: guestbook}
  ports: [{port: 80}]
"""


def git(repo: Path, *args: str, date: str = "2024-01-01T10:00:00+00:00") -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Alice Example",
        "GIT_AUTHOR_EMAIL": "alice@example.com",
        "GIT_COMMITTER_NAME": "Alice Example",
        "GIT_COMMITTER_EMAIL": "alice@example.com",
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, check=True, capture_output=True, text=True
    )
    return proc.stdout.strip()


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def make_app(
    path: str,
    *,
    name: str = "guestbook",
    kind: str = "",
    options: Mapping[str, Any] | None = None,
    revisions: tuple[str, ...] = (),
    target: str = "",
    sources: tuple[AppSource, ...] | None = None,
) -> Application:
    source = AppSource(
        repo_url="https://git.example.com/org/deploy.git",
        path=path,
        target_revision=target,
        kind=kind,
        options=dict(options or {}),
    )
    return Application(
        name=name,
        namespace="argocd",
        project="default",
        sources=sources or (source,),
        dest_server="https://kubernetes.default.svc",
        dest_name="",
        dest_namespace="prod",
        sync_policy=SyncPolicy(),
        ignore_rules=(),
        sync_status="OutOfSync",
        revisions=revisions,
        history=(),
        operation=None,
    )


class Repo:
    def __init__(self, root: Path, first: str, head: str) -> None:
        self.root = root
        self.first = first
        self.head = head


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write(
        root, "base/guestbook/kustomization.yaml", "resources:\n- deployment.yaml\n- service.yaml\n"
    )
    write(root, "base/guestbook/deployment.yaml", DEPLOYMENT.replace("IMAGE", "1.0"))
    write(root, "base/guestbook/service.yaml", SERVICE)
    write(
        root,
        "overlays/prod/guestbook/kustomization.yaml",
        "resources:\n- ../../../base/guestbook\nreplicas:\n- name: guestbook\n  count: 3\n",
    )
    write(
        root,
        "overlays/staging/guestbook/kustomization.yaml",
        "resources:\n- ../../../base/guestbook\npatches:\n- path: replicas.yaml\n",
    )
    write(
        root,
        "overlays/staging/guestbook/replicas.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: guestbook\n"
        "spec:\n  replicas: 2\n",
    )
    write(root, "overlays/broken/kustomization.yaml", "resources:\n- missing.yaml\n")
    write(root, "plain/a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
    write(root, "plain/b.yml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n")
    write(
        root, "plain/c.json", '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}'
    )
    write(root, "plain/sub/d.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\n")
    write(root, "plain/sub/e.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: e}\n")
    write(
        root,
        "plain/skip.yaml",
        "# +argocd:skip-file-rendering\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n",
    )
    write(root, "plain/README.md", "not: a manifest\n")
    write(root, "plain/values.txt", "- junk\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    first = git(root, "rev-parse", "HEAD")
    write(root, "base/guestbook/deployment.yaml", DEPLOYMENT.replace("IMAGE", "2.0"))
    git(root, "commit", "-q", "-am", "bump to 2.0", date="2024-02-01T10:00:00+00:00")
    return Repo(root, first, git(root, "rev-parse", "HEAD"))


def by_key(rendered: Rendered) -> dict[tuple[str, str], Manifest]:
    return {(m.key.kind, m.key.name): m for m in rendered.manifests}


def image(manifest: Manifest) -> str:
    return str(manifest.body["spec"]["template"]["spec"]["containers"][0]["image"])


def test_kustomize_overlay_replicas_and_origin(repo: Repo, tmp_path: Path) -> None:
    rendered = render(make_app("overlays/prod/guestbook"), repo.root, workdir=tmp_path / "w")
    objs = by_key(rendered)
    assert sorted(objs) == [("Deployment", "guestbook"), ("Service", "guestbook")]
    deploy = objs["Deployment", "guestbook"]
    assert deploy.key == ObjectKey("apps", "Deployment", "", "guestbook")
    assert deploy.body["spec"]["replicas"] == 3
    assert deploy.origin == "base/guestbook/deployment.yaml"
    assert objs["Service", "guestbook"].origin == "base/guestbook/service.yaml"
    assert "annotations" not in deploy.body["metadata"]
    assert rendered.revision == repo.head
    assert rendered.source_path == "overlays/prod/guestbook"
    assert (rendered.tree / "overlays/prod/guestbook/kustomization.yaml").is_file()
    assert rendered.tree.is_relative_to(tmp_path / "w")


def test_revision_choice_older_head_and_local(repo: Repo, tmp_path: Path) -> None:
    write(repo.root, "base/guestbook/deployment.yaml", DEPLOYMENT.replace("IMAGE", "3.0"))
    app = make_app("overlays/prod/guestbook")
    key = ("Deployment", "guestbook")
    at_head = render(app, repo.root, workdir=tmp_path / "w")
    assert image(by_key(at_head)[key]) == "nginx:2.0"
    older = render(app, repo.root, revision=repo.first[:10], workdir=tmp_path / "w")
    assert image(by_key(older)[key]) == "nginx:1.0"
    assert older.revision == repo.first
    compared = render(
        make_app("overlays/prod/guestbook", revisions=(repo.first,)),
        repo.root,
        workdir=tmp_path / "w",
    )
    assert compared.revision == repo.first  # status.sync.revision wins over targetRevision
    local = render(app, repo.root, local=True, workdir=tmp_path / "w")
    assert image(by_key(local)[key]) == "nginx:3.0"
    assert local.revision == "working tree"
    assert local.tree == repo.root.resolve()
    # the user's files are untouched by the builds
    assert git(repo.root, "status", "--porcelain") == "M base/guestbook/deployment.yaml"
    assert (
        "buildMetadata"
        not in (repo.root / "overlays/prod/guestbook/kustomization.yaml").read_text()
    )


def test_application_kustomize_options(repo: Repo, tmp_path: Path) -> None:
    options = {
        "namePrefix": "prod-",
        "images": ["nginx=registry.example.com/nginx:$ARGOCD_APP_REVISION_SHORT"],
        "commonLabels": {"team": "web", "app": "guestbook"},
        "forceCommonLabels": True,
        "commonAnnotations": {"owner": "${ARGOCD_APP_NAME}"},
        "namespace": "shop",
        "replicas": [{"name": "guestbook", "count": "5"}],
    }
    rendered = render(
        make_app("overlays/prod/guestbook", kind="kustomize", options=options),
        repo.root,
        workdir=tmp_path / "w",
    )
    deploy = by_key(rendered)["Deployment", "prod-guestbook"]
    assert deploy.key.namespace == "shop"
    assert deploy.body["spec"]["replicas"] == 5
    assert image(deploy) == f"registry.example.com/nginx:{repo.head[:7]}"
    assert deploy.body["metadata"]["labels"] == {"team": "web", "app": "guestbook"}
    assert deploy.body["spec"]["selector"]["matchLabels"]["team"] == "web"
    assert deploy.body["spec"]["template"]["metadata"]["labels"]["team"] == "web"
    # annotations are not env-substituted unless commonAnnotationsEnvsubst
    assert deploy.body["metadata"]["annotations"] == {"owner": "${ARGOCD_APP_NAME}"}
    assert deploy.origin == "base/guestbook/deployment.yaml"


def test_outer_form_options_and_label_without_selector(repo: Repo, tmp_path: Path) -> None:
    options = {"kustomize": {"commonLabels": {"team": "web"}, "labelWithoutSelector": True}}
    rendered = render(
        make_app("overlays/prod/guestbook", options=options), repo.root, workdir=tmp_path / "w"
    )
    deploy = by_key(rendered)["Deployment", "guestbook"]
    assert deploy.body["metadata"]["labels"] == {"team": "web"}
    assert "team" not in deploy.body["spec"]["selector"]["matchLabels"]
    assert "team" not in deploy.body["spec"]["template"]["metadata"]["labels"]


def test_argocd_source_override_file(repo: Repo, tmp_path: Path) -> None:
    write(
        repo.root,
        "overlays/prod/guestbook/.argocd-source.yaml",
        "kustomize:\n  namePrefix: shared-\n",
    )
    write(
        repo.root,
        "overlays/prod/guestbook/.argocd-source-guestbook.yaml",
        "kustomize:\n  namePrefix: mine-\n  images: [nginx:7.7]\n",
    )
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "override")
    rendered = render(make_app("overlays/prod/guestbook"), repo.root, workdir=tmp_path / "w")
    assert image(by_key(rendered)["Deployment", "mine-guestbook"]) == "nginx:7.7"


def test_kustomize_failure_message(repo: Repo, tmp_path: Path) -> None:
    with pytest.raises(SourceError) as info:
        render(make_app("overlays/broken"), repo.root, workdir=tmp_path / "w")
    message = info.value.message
    assert message.startswith("kustomize build overlays/broken failed (exit 1): ")
    assert "missing.yaml" in message
    assert str(tmp_path / "w") not in message
    assert "\n" not in message
    assert info.value.hint in (
        "run: kubectl kustomize overlays/broken",
        "run: kustomize build overlays/broken",
    )


def test_missing_revision(repo: Repo, tmp_path: Path) -> None:
    missing = "0123456789abcdef0123456789abcdef01234567"
    app = make_app("overlays/prod/guestbook", revisions=(missing,))
    with pytest.raises(SourceError) as info:
        render(app, repo.root, workdir=tmp_path / "w")
    assert info.value.message == f"revision {missing} is not in {repo.root}"
    assert info.value.hint == f"run: git -C {repo.root} fetch origin {missing}"


def test_missing_path(repo: Repo, tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"^source path overlays/nope does not exist in "):
        render(make_app("overlays/nope"), repo.root, workdir=tmp_path / "w")
    with pytest.raises(SourceError, match="outside the repository"):
        render(make_app("../elsewhere"), repo.root, workdir=tmp_path / "w")


@pytest.mark.parametrize(
    ("options", "names"),
    [
        ({}, ["a", "b", "c"]),
        ({"recurse": True}, ["a", "b", "c", "d", "e"]),
        ({"recurse": True, "exclude": "sub/*"}, ["a", "b", "c"]),
        ({"recurse": True, "include": "{a.yaml,sub/*}"}, ["a", "d", "e"]),
        ({"recurse": True, "include": "*.yaml", "exclude": "*e.yaml"}, ["a", "d"]),
    ],
)
def test_directory_source(
    repo: Repo, tmp_path: Path, options: dict[str, Any], names: list[str]
) -> None:
    app = make_app("plain", options={"directory": options} if options else None)
    rendered = render(app, repo.root, workdir=tmp_path / "w")
    assert sorted(m.key.name for m in rendered.manifests) == names
    origins = {m.key.name: m.origin for m in rendered.manifests}
    assert origins["a"] == "plain/a.yaml"
    if "d" in origins:
        assert origins["d"] == "plain/sub/d.yaml"


def test_glob_match() -> None:
    assert globs.glob_match("*.yaml", "sub/deep/x.yaml")
    assert globs.glob_match("{a,b}/*.y?ml", "b/x.yaml")
    assert not globs.glob_match("{a,b}/*.y?ml", "b/x.yml")
    assert not globs.glob_match("{a,b}/*.yaml", "c/x.yaml")
    assert globs.glob_match("[!x]*.json", "y.json")
    assert not globs.glob_match("[!x]*.json", "x.json")


def test_jsonnet_is_evaluated(repo: Repo, tmp_path: Path) -> None:
    # an object without kind is an error, as Argo CD's "Failed to unmarshal generated json"
    write(repo.root, "plain/app.jsonnet", "{}\n")
    with pytest.raises(SourceError, match=r"^plain/app.jsonnet: document 1: apiVersion missing"):
        render(make_app("plain"), repo.root, local=True, workdir=tmp_path / "w")


def test_source_type_detection(repo: Repo, tmp_path: Path) -> None:
    both = {"kustomize": {"namePrefix": "x-"}, "directory": {"recurse": True}}
    with pytest.raises(SourceError, match="multiple application sources defined"):
        render(make_app("plain", options=both), repo.root, workdir=tmp_path / "w")
    write(repo.root, "chart/Chart.yaml", "apiVersion: v2\nname: c\nversion: 0.1.0\n")
    if helm.helm_binary() is None:
        with pytest.raises(SourceError, match="helm sources need the helm binary"):
            render(make_app("chart"), repo.root, local=True, workdir=tmp_path / "w")
    # an explicit directory source wins over a kustomization file, which is no manifest (no
    # kind, no `apiVersion:`): skipped, as Argo CD's getObjsFromYAMLOrJSON skips it
    rendered = render(
        make_app("overlays/prod/guestbook", kind="directory"), repo.root, workdir=tmp_path / "w"
    )
    assert all(not (m.origin or "").endswith("kustomization.yaml") for m in rendered.manifests)


def test_directory_source_keeps_a_kustomization_file_with_kind(repo: Repo, tmp_path: Path) -> None:
    # a kustomization.yaml with apiVersion and kind decodes as an object (Kubernetes' decoder
    # asks only for kind): Argo CD's directory reader keeps it, with no name, beside the rest
    write(
        repo.root,
        "plain/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- a.yaml\n",
    )
    app = make_app("plain", kind="directory")
    rendered = render(app, repo.root, local=True, workdir=tmp_path / "w")
    kept = [m for m in rendered.manifests if m.key.kind == "Kustomization"]
    assert [(m.key.group, m.key.name, m.origin) for m in kept] == [
        ("kustomize.config.k8s.io", "", "plain/kustomization.yaml")
    ]
    assert sorted(m.key.name for m in rendered.manifests) == ["", "a", "b", "c"]


def test_directory_source_refuses_metadata_that_is_no_mapping(repo: Repo, tmp_path: Path) -> None:
    # the repo-server fails to set its tracking label on such an object
    write(repo.root, "plain/x.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: x\n")
    with pytest.raises(SourceError, match=r"plain/x.yaml: document 1: ConfigMap: metadata missing"):
        render(make_app("plain", kind="directory"), repo.root, local=True, workdir=tmp_path / "w")


def test_directory_source_keeps_the_last_of_a_duplicate_key(repo: Repo, tmp_path: Path) -> None:
    # Argo CD's decoder (sigs.k8s.io/yaml over go-yaml v2) is not strict: the last value wins
    write(
        repo.root,
        "plain/x.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: '1'\n  a: '2'\n",
    )
    rendered = render(make_app("plain", kind="directory"), repo.root, local=True, workdir=tmp_path)
    (obj,) = [m for m in rendered.manifests if m.key.name == "x"]
    assert obj.body["data"] == {"a": "2"}
    note = (
        "plain/x.yaml: document 1: line 7: duplicate key 'a': the last value is used, as Argo "
        "CD's decoder keeps it"
    )
    assert rendered.notes == (note,)


def test_kustomize_output_still_refuses_a_duplicate_key() -> None:
    # kustomize (kyaml) refuses one itself; a snapshot or a patch is no Argo CD manifest
    with pytest.raises(SourceError, match="duplicate key 'a'"):
        yamlio.load_objects("kind: A\nmetadata: {name: x}\na: 1\na: 2\n", "kustomize build x")


def test_multi_source_skips_ref_only_sources(repo: Repo, tmp_path: Path) -> None:
    url = "https://git.example.com/org/deploy.git"
    sources = (
        AppSource(repo_url="https://charts.example.com", ref="values"),
        AppSource(repo_url=url, path="overlays/prod/guestbook"),
        AppSource(repo_url=url, path="plain"),
    )
    rendered = render(make_app("", sources=sources), repo.root, workdir=tmp_path / "w")
    assert sorted(m.key.name for m in rendered.manifests) == [
        "a",
        "b",
        "c",
        "guestbook",
        "guestbook",
    ]
    assert [s.index for s in rendered.sources] == [1, 2]
    assert [s.kind for s in rendered.sources] == ["kustomize", "directory"]


def test_multi_repo_sources_need_a_matching_clone(repo: Repo, tmp_path: Path) -> None:
    sources = (
        AppSource(repo_url="https://git.example.com/org/one.git", path="plain"),
        AppSource(repo_url="https://git.example.com/org/two.git", path="plain"),
    )
    git(repo.root, "remote", "add", "origin", "git@git.example.com:org/one.git")
    with pytest.raises(SourceError, match=r"is not a clone of https://git.example.com/org/two"):
        render(make_app("", sources=sources), repo.root, workdir=tmp_path / "w")


def test_apply_options_image_forms() -> None:
    parse_image = kustomize_edit.parse_image
    assert parse_image("nginx=reg/nginx:1.2") == {
        "name": "nginx",
        "newName": "reg/nginx",
        "newTag": "1.2",
    }
    assert parse_image("nginx:1.2") == {"name": "nginx", "newTag": "1.2"}
    assert parse_image("nginx@sha256:abc") == {"name": "nginx", "digest": "sha256:abc"}
    assert parse_image("nginx=reg/nginx") == {"name": "nginx", "newName": "reg/nginx"}
    assert parse_image("reg:5000/nginx:1") == {"name": "reg:5000/nginx", "newTag": "1"}
    merged = kustomize_edit.set_images(
        [{"name": "nginx", "newTag": "1", "newName": "a"}, {"name": "redis", "newTag": "6"}],
        ["nginx@sha256:abc", "busybox:1"],
    )
    assert merged == [
        {"name": "nginx", "newName": "a", "digest": "sha256:abc"},
        {"name": "redis", "newTag": "6"},
        {"name": "busybox", "newTag": "1"},
    ]


def test_apply_options_label_conflict_without_force() -> None:
    with pytest.raises(SourceError, match="label app already in the kustomization"):
        kustomize_edit.apply_options(
            {"commonLabels": {"app": "x"}}, {"commonLabels": {"app": "y"}}, env={}
        )


def test_apply_options_patches_and_components(tmp_path: Path) -> None:
    (tmp_path / "comp").mkdir()
    out = kustomize_edit.apply_options(
        {"patches": [{"path": "a.yaml"}], "components": ["comp"]},
        {
            "patches": [{"patch": "- op: add", "target": {"kind": "Deployment"}}],
            "components": ["comp", "missing"],
            "ignoreMissingComponents": True,
        },
        env={},
        kustomization_dir=tmp_path,
    )
    assert out["patches"] == [
        {"path": "a.yaml"},
        {"patch": "- op: add", "target": {"kind": "Deployment"}},
    ]
    assert out["components"] == ["comp"]


def test_envsubst() -> None:
    env = {"A": "1", "B_2": "two"}
    assert buildenv.envsubst("x-$A-${B_2}-$MISSING-$$", env) == "x-1-two--$"


def test_plugin_flags_are_refused(repo: Repo, tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="--enable-exec is not allowed"):
        render(
            make_app("overlays/prod/guestbook"),
            repo.root,
            workdir=tmp_path / "w",
            build_options=["--enable-exec"],
        )


@pytest.mark.parametrize("path", ["overlays/prod/guestbook", "overlays/staging/guestbook"])
def test_origin_scan_matches_origin_annotations(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """Past ORIGIN_ANNOTATIONS_MAX objects kustomize runs without originAnnotations and the
    origin is found by scanning the resource files: same objects, same origins."""
    app = make_app(path, options={"kustomize": {"namePrefix": "p-"}} if "staging" in path else None)
    annotated = render(app, repo.root, workdir=tmp_path / "a")
    monkeypatch.setenv(settings.ORIGIN_ANNOTATIONS_ENV, "0")
    scanned = render(app, repo.root, workdir=tmp_path / "b")
    assert [(m.key, m.body, m.origin) for m in scanned.manifests] == [
        (m.key, m.body, m.origin) for m in annotated.manifests
    ]
    assert all(m.origin for m in scanned.manifests)


def test_render_cache_second_render_skips_kustomize(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubectl_gitdrift.sources.cache import RenderCache

    cache = RenderCache(tmp_path / "cache")
    app = make_app("overlays/prod/guestbook")
    first = render(app, repo.root, workdir=tmp_path / "w1", cache=cache)

    def no_build(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("kustomize ran although the render is cached")

    monkeypatch.setattr(kustomize, "_run_build", no_build)
    second = render(app, repo.root, workdir=tmp_path / "w2", cache=cache)
    assert [(m.key, m.body, m.origin) for m in second.manifests] == [
        (m.key, m.body, m.origin) for m in first.manifests
    ]
    other = make_app("overlays/prod/guestbook", options={"kustomize": {"namePrefix": "x-"}})
    with pytest.raises(AssertionError):  # other options: another key
        render(other, repo.root, workdir=tmp_path / "w3", cache=cache)
    with pytest.raises(AssertionError):  # the working tree is never cached
        render(app, repo.root, local=True, workdir=tmp_path / "w4", cache=cache)


def test_kustomize_timeout_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(settings.KUSTOMIZE_TIMEOUT_ENV, raising=False)
    assert Settings.from_environ().kustomize_timeout() == settings.KUSTOMIZE_TIMEOUT
    monkeypatch.setenv(settings.KUSTOMIZE_TIMEOUT_ENV, "600")
    assert Settings.from_environ().kustomize_timeout() == 600
    monkeypatch.setenv(settings.KUSTOMIZE_TIMEOUT_ENV, "soon")
    with pytest.raises(SourceError, match="KUBECTL_GITDRIFT_KUSTOMIZE_TIMEOUT"):
        Settings.from_environ().kustomize_timeout()


def _write(root: Path, files: Mapping[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def _kustomized_tree(root: Path) -> None:
    _write(
        root,
        {
            "apps/a/base/kustomization.yaml": "resources: [deployment.yaml]\n",
            "apps/a/base/deployment.yaml": DEPLOYMENT.replace("IMAGE", "1.0"),
            "apps/a/prod/kustomization.yaml": "resources: [../base]\npatches: [{path: p.yaml}]\n",
            "apps/a/prod/p.yaml": "apiVersion: apps/v1\nkind: Deployment\n"
            "metadata: {name: guestbook}\nspec: {replicas: 4}\n",
            "apps/a/extra/kustomization.yaml": "kind: Component\n"
            "apiVersion: kustomize.config.k8s.io/v1alpha1\ncommonAnnotations: {c: x}\n",
            "apps/b/base/kustomization.yaml": "resources: [service.yaml]\n",
            "apps/b/base/service.yaml": SERVICE,
        },
    )


def test_copy_tree_takes_only_the_kustomization_closure(tmp_path: Path) -> None:
    """A kustomization edited for the Application's options is built on a copy of just the
    directories it reaches (all of them, with their files), not of the whole repository."""
    tree = tmp_path / "tree"
    _kustomized_tree(tree)
    closure = kustomize_closure.Closure.walk(tree, "apps/a/prod", "apps/a/extra")
    assert sorted(closure.dirs) == ["apps/a/base", "apps/a/extra", "apps/a/prod"]
    kustomize._copy_tree(tree, tmp_path / "copy", closure.dirs)
    copied = sorted(str(p.relative_to(tmp_path / "copy")) for p in (tmp_path / "copy").rglob("*"))
    assert "apps/b" not in copied
    assert {"apps/a/prod/p.yaml", "apps/a/base/deployment.yaml"} <= set(copied)
    assert "apps/a/extra/kustomization.yaml" in copied

    (tree / "apps/a/prod/link.yaml").symlink_to("../../b/base/service.yaml")
    kustomize._copy_tree(tree, tmp_path / "full", closure.dirs)  # a symlink: everything
    assert (tmp_path / "full/apps/b/base/service.yaml").is_file()
    kustomize._copy_tree(tree, tmp_path / "none", None)
    assert (tmp_path / "none/apps/b/base/service.yaml").is_file()


def test_edited_build_on_the_closure_copy_renders_like_kustomize(tmp_path: Path) -> None:
    """Options that edit the kustomization (images, a component the Application adds) build on
    the partial copy exactly as kustomize builds the edited file in place."""
    tree = tmp_path / "tree"
    _kustomized_tree(tree)
    options = {"images": ["nginx:2.0"], "components": ["../extra"]}
    built = kustomize.build(tree, "apps/a/prod", options, workdir=tmp_path / "w")
    (deployment,) = [m.body for m in built]
    assert deployment["spec"]["replicas"] == 4
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2.0"
    assert deployment["metadata"]["annotations"] == {"c": "x"}

    expected_tree = tmp_path / "expected"
    _kustomized_tree(expected_tree)
    (expected_tree / "apps/a/prod/kustomization.yaml").write_text(
        "resources: [../base]\npatches: [{path: p.yaml}]\ncomponents: [../extra]\n"
        "images: [{name: nginx, newTag: '2.0'}]\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        ["kubectl", "kustomize", str(expected_tree / "apps/a/prod")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert deployment == yaml.safe_load(proc.stdout)


def test_exported_trees_are_kept_between_runs(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a tree cache, a commit is exported once; later runs (new Exports, as a new
    process would make) render from the kept tree without touching git's objects."""
    from kubectl_gitdrift.sources import git as source_git
    from kubectl_gitdrift.sources.cache import RenderCache, TreeCache
    from kubectl_gitdrift.sources.render import Exports

    store = TreeCache(tmp_path / "cache")
    cache = RenderCache(tmp_path / "cache")
    app = make_app("overlays/staging/guestbook")
    first = render(
        app,
        repo.root,
        workdir=tmp_path / "w1",
        exports=Exports(tmp_path / "t1", store),
        cache=cache,
    )
    assert first.tree == store.get(repo.head)
    assert (first.tree / "overlays/staging/guestbook/replicas.yaml").is_file()

    def no_export(*args: object, **kwargs: object) -> str:
        raise AssertionError("the commit was exported again")

    monkeypatch.setattr(source_git, "export_tree", no_export)
    second = render(
        app,
        repo.root,
        workdir=tmp_path / "w2",
        exports=Exports(tmp_path / "t2", store),
        cache=cache,
    )
    assert second.tree == first.tree
    assert [(m.key, m.body) for m in second.manifests] == [(m.key, m.body) for m in first.manifests]
    assert not (tmp_path / "t2").exists()


def test_tree_cache_refuses_big_trees_and_keeps_the_recent_ones(repo: Repo, tmp_path: Path) -> None:
    from kubectl_gitdrift.sources import cache as source_cache
    from kubectl_gitdrift.sources import git as source_git

    store = source_cache.TreeCache(tmp_path / "cache")

    def export(sha: str) -> tuple[Any, int]:
        return (
            lambda dest: source_git.export_tree(repo.root, sha, dest),
            source_git.tree_bytes(repo.root, sha),
        )

    small = source_cache.TreeCache(tmp_path / "cache", 1048)  # 1 KiB: a quarter is 262 bytes
    assert small.put(repo.head, *export(repo.head)) is None
    assert small.get(repo.head) is None
    assert [p.name for p in (tmp_path / "cache/trees").iterdir()] == []  # no scratch left

    kept = store.put(repo.head, *export(repo.head))
    assert kept is not None
    assert store.put(repo.head, *export(repo.head)) == kept  # a second put finds it in place
    for i in range(source_cache.TREES_KEPT + 2):  # old, unused trees beyond the kept ones go
        old = tmp_path / "cache/trees" / f"{i:040x}"
        old.mkdir()
        os.utime(old, (1, 1))
    store.put(repo.first, *export(repo.first))
    names = sorted(p.name for p in (tmp_path / "cache/trees").iterdir())
    assert repo.head in names
    assert repo.first in names
    assert len(names) == source_cache.TREES_KEPT


def test_cache_directory_is_owner_only(repo: Repo, tmp_path: Path) -> None:
    """Renders and trees are copies of git's files (Secret manifests included): the cache
    directory gitdrift creates is readable by its owner only."""
    from kubectl_gitdrift.sources.cache import RenderCache, TreeCache
    from kubectl_gitdrift.sources.render import Exports

    directory = tmp_path / "cache"
    render(
        make_app("overlays/prod/guestbook"),
        repo.root,
        workdir=tmp_path / "w",
        exports=Exports(tmp_path / "t", TreeCache(directory)),
        cache=RenderCache(directory),
    )
    assert (directory / "trees").is_dir()
    assert list((directory / "renders").glob("*/*.json"))
    assert directory.stat().st_mode & 0o777 == 0o700
