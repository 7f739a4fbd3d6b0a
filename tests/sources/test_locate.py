from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kubectl_gitdrift.model import Application, AppSource, ListKey, Manifest, ObjectKey, SyncPolicy
from kubectl_gitdrift.sources import locate as locate_module
from kubectl_gitdrift.sources.locate import Location, locate
from kubectl_gitdrift.sources.render import Rendered, render
from kubectl_gitdrift.yamlio import yamlload

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
        image: nginx:1.0
"""
IMAGE = ("spec", "template", "spec", "containers", ListKey((("name", "app"),)), "image")
REPLICAS = ("spec", "replicas")

FILES = {
    "base/guestbook/kustomization.yaml": "resources:\n- deployment.yaml\n",
    "base/guestbook/deployment.yaml": DEPLOYMENT,
    "overlays/prod/guestbook/kustomization.yaml": (
        "resources:\n- ../../../base/guestbook\nreplicas:\n- name: guestbook\n  count: 3\n"
    ),
    "overlays/staging/guestbook/kustomization.yaml": (
        "resources:\n- ../../../base/guestbook\npatches:\n- path: replicas.yaml\n"
    ),
    "overlays/staging/guestbook/replicas.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: guestbook\n"
        "spec:\n  replicas: 2\n"
    ),
    "overlays/images/kustomization.yaml": (
        "resources:\n- ../../base/guestbook\nimages:\n- name: nginx\n  newTag: '9.9'\n"
    ),
    "overlays/inline/kustomization.yaml": """\
resources:
- ../../base/guestbook
patches:
- target: {kind: Deployment, name: guestbook}
  patch: |-
    - op: replace
      path: /spec/replicas
      value: 4
- patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: guestbook
    spec:
      template:
        spec:
          containers:
          - name: app
            image: nginx:5.0
""",
    "plain/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n",
}


def git(repo: Path, *args: str) -> None:
    date = "2024-01-01T10:00:00+00:00"
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
    subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("locate") / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def app(path: str, options: Mapping[str, Any] | None = None) -> Application:
    source = AppSource(
        repo_url="https://git.example.com/deploy.git",
        path=path,
        kind="kustomize" if options else "",
        options=dict(options or {}),
    )
    return Application(
        name="guestbook",
        namespace="argocd",
        project="default",
        sources=(source,),
        dest_server="",
        dest_name="",
        dest_namespace="prod",
        sync_policy=SyncPolicy(),
        ignore_rules=(),
        sync_status="",
        revisions=(),
        history=(),
        operation=None,
    )


def rendered(repo: Path, tmp_path: Path, path: str, **options: Any) -> tuple[Rendered, Manifest]:
    result = render(app(path, options), repo, workdir=tmp_path / "w")
    (manifest,) = [m for m in result.manifests if m.key.kind in ("Deployment", "ConfigMap")]
    return result, manifest


def test_kustomization_replicas_count_line(repo: Path, tmp_path: Path) -> None:
    result, deploy = rendered(repo, tmp_path, "overlays/prod/guestbook")
    assert locate(result.tree, result.source_path, deploy, REPLICAS, 3) == Location(
        "overlays/prod/guestbook/kustomization.yaml", 5, "replicas"
    )


def test_kustomization_replicas_with_a_name_prefix(repo: Path, tmp_path: Path) -> None:
    result, deploy = rendered(repo, tmp_path, "overlays/prod/guestbook", namePrefix="prod-")
    assert deploy.key.name == "prod-guestbook"
    found = locate(result.tree, result.source_path, deploy, REPLICAS, 3)
    assert found == Location("overlays/prod/guestbook/kustomization.yaml", 5, "replicas")


def test_patch_file_line(repo: Path, tmp_path: Path) -> None:
    result, deploy = rendered(repo, tmp_path, "overlays/staging/guestbook")
    assert deploy.body["spec"]["replicas"] == 2
    assert locate(result.tree, result.source_path, deploy, REPLICAS, 2) == Location(
        "overlays/staging/guestbook/replicas.yaml", 6, "patch"
    )


def test_image_set_in_the_base_resource(repo: Path, tmp_path: Path) -> None:
    result, deploy = rendered(repo, tmp_path, "overlays/staging/guestbook")
    assert locate(result.tree, result.source_path, deploy, IMAGE, "nginx:1.0") == Location(
        "base/guestbook/deployment.yaml", 15, "resource"
    )


def test_kustomization_images_entry(repo: Path, tmp_path: Path) -> None:
    result, deploy = rendered(repo, tmp_path, "overlays/images")
    assert locate(result.tree, result.source_path, deploy, IMAGE, "nginx:9.9") == Location(
        "overlays/images/kustomization.yaml", 5, "images"
    )


def test_inline_patches(repo: Path, tmp_path: Path) -> None:
    result, deploy = rendered(repo, tmp_path, "overlays/inline")
    assert deploy.body["spec"]["replicas"] == 4
    assert locate(result.tree, result.source_path, deploy, REPLICAS, 4) == Location(
        "overlays/inline/kustomization.yaml", 8, "patch"
    )
    assert locate(result.tree, result.source_path, deploy, IMAGE, "nginx:5.0") == Location(
        "overlays/inline/kustomization.yaml", 19, "patch"
    )


def test_nothing_sets_it_literally(repo: Path, tmp_path: Path) -> None:
    result, deploy = rendered(repo, tmp_path, "overlays/prod/guestbook")
    path = ("metadata", "labels", "team")
    assert locate(result.tree, result.source_path, deploy, path, "web") == Location(
        "overlays/prod/guestbook/kustomization.yaml", 0, "overlay"
    )
    # a value the Application (not git) sets is not attributed to git's different count
    assert locate(result.tree, result.source_path, deploy, REPLICAS, 5) == Location(
        "overlays/prod/guestbook/kustomization.yaml", 0, "overlay"
    )


def test_directory_source_origin(repo: Path, tmp_path: Path) -> None:
    result, cm = rendered(repo, tmp_path, "plain")
    assert locate(result.tree, result.source_path, cm, ("data", "k"), "v") == Location(
        "plain/cm.yaml", 6, "resource"
    )
    assert locate(result.tree, result.source_path, cm, ("data", "other"), "x") == Location(
        "plain/cm.yaml", 1, "overlay"
    )


def test_no_file_to_point_at(tmp_path: Path) -> None:
    manifest = Manifest(key=ObjectKey("apps", "Deployment", "", "x"), body={}, origin=None)
    assert locate(tmp_path, "chart", manifest, REPLICAS, 1) is None


def test_each_file_is_parsed_once(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bounds check and the line marks come from one composition of each file."""
    result, deploy = rendered(repo, tmp_path, "overlays/staging/guestbook")
    parsed: list[str] = []

    class CountingLoader(yamlload._Loader):
        def __init__(self, stream: str) -> None:
            parsed.append(stream)
            super().__init__(stream)

    monkeypatch.setattr(yamlload, "_Loader", CountingLoader)
    locate_module._composed.cache_clear()
    locate_module._heads.cache_clear()
    assert locate(result.tree, result.source_path, deploy, IMAGE, "nginx:1.0") == Location(
        "base/guestbook/deployment.yaml", 15, "resource"
    )
    files = locate_module._composed.cache_info().currsize
    assert files == 4  # two kustomizations, the patch, the deployment
    assert len(parsed) == files


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("", Location("app/deployment.yaml", 6, "resource")),
        ("metadata:\n  name: again\n", Location("app/kustomization.yaml", 0, "overlay")),
        ("other: &a [*a]\n", Location("app/kustomization.yaml", 0, "overlay")),
    ],
    ids=["fine", "duplicate-key", "recursive-alias"],
)
def test_files_yamlio_refuses_are_not_searched(
    tmp_path: Path, extra: str, expected: Location
) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "kustomization.yaml").write_text("resources:\n- deployment.yaml\n")
    (tmp_path / "app" / "deployment.yaml").write_text(DEPLOYMENT + extra)
    deploy = Manifest(
        key=ObjectKey("apps", "Deployment", "prod", "guestbook"), body={}, origin=None
    )
    assert locate(tmp_path, "app", deploy, REPLICAS, 1) == expected
