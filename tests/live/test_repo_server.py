"""Live: the helm a helm source renders with comes from the Argo CD version, and when argocd-cm's
version label does not say it (nor --helm-version), from the argocd-repo-server Deployment's
image, read with ONE GET, only when an app renders with helm (sources/tools.choose_helm,
run/gather.py's _RepoServer). A 403 or 404 there is the default helm, with a note saying why.
The export records what was read (`argocdRepoServer`), and its replay reports the same.

The cluster and repository are testdata/scenarios/source-helm-major-3's: the istio 1.23 gateway
chart's schema shape, which helm 3 accepts and helm 4 refuses, and a repo-server image
quay.io/argoproj/argocd:v3.1.5 (Argo CD v3.1 bundles helm v3.18.4)."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift.errors import ExitCode
from kubectl_gitdrift.settings import Settings
from kubectl_gitdrift.sources import git, tools
from tests.conftest import FAST_RETRIES, TESTDATA, Result, Runner, load_make_repo
from tests.support.apiserver import (
    KubeAPIServer,
    ServerFactory,
    controller_rbac,
    kube_apiserver,  # noqa: F401 - the fixture
    live_args,
)

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(
        tools.helm4_binary(Settings.from_environ({})) is None
        or tools.helm3_binary(Settings.from_environ({})) is None,
        reason="needs helm 4 and helm 3 (tools/install_helm.sh)",
    ),
]

SCENARIO = TESTDATA / "scenarios" / "source-helm-major-3"
Obj = dict[str, Any]
DEPLOYMENT_PATH = "/apis/apps/v1/namespaces/argocd/deployments/argocd-repo-server"


@pytest.fixture
def run_cli(run_cli: Runner) -> Runner:
    return run_cli.tuned(**FAST_RETRIES)


def _objects(*, label: str = "", repo_server: bool = True, revision: str = "") -> list[Obj]:
    items = copy.deepcopy(yaml.safe_load((SCENARIO / "snapshot.yaml").read_text())["items"])
    if not repo_server:
        items = [i for i in items if i["kind"] != "Deployment"]
    if revision:
        app = next(i for i in items if i["kind"] == "Application")
        app["status"]["sync"]["revision"] = revision
        for entry in app["status"]["history"]:
            entry["revision"] = revision
    labels = {"app.kubernetes.io/part-of": "argocd"}
    if label:
        labels["app.kubernetes.io/version"] = label
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", "namespace": "argocd", "labels": labels},
        "data": {},
    }
    return [*items, cm, *controller_rbac()]


def _commit(repo: Path, rel: str, old: str, new: str) -> None:
    """One more commit on the repository's branch: `old` replaced by `new` in `rel`."""
    path = repo / rel
    path.write_text(path.read_text().replace(old, new, 1))
    who = {"NAME": "Sam Platform", "EMAIL": "sam@example.com"}
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    env.update({f"GIT_{role}_{k}": v for role in ("AUTHOR", "COMMITTER") for k, v in who.items()})
    for argv in (["add", rel], ["commit", "-qm", f"edit {rel}"]):
        subprocess.run(["git", "-C", str(repo), *argv], check=True, env=env, capture_output=True)


def _gets(server: KubeAPIServer) -> list[str]:
    return [r.path for r in server.requests if r.verb == "get" and r.resource]


def _app(result: Result) -> Obj:
    (app,) = json.loads(result.stdout)["applications"]
    return app  # type: ignore[no-any-return]


@pytest.fixture
def repo(build_repo) -> Path:  # type: ignore[no-untyped-def]
    return Path(build_repo(SCENARIO / "repo-src"))


@pytest.fixture
def lenient_repo(tmp_path: Path) -> tuple[Path, str]:
    """The chart without its values schema (helm 4 renders it too), and its commit."""
    src = tmp_path / "src"
    shutil.copytree(SCENARIO / "repo-src", src)
    (src / "01-initial/charts/gateway/values.schema.json").unlink()
    built = tmp_path / "repo"
    load_make_repo().build_repo(src, built)
    return built, git.resolve_revision(built, "HEAD")


def test_the_image_chooses_helm_3_with_one_get(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,
    run_cli: Callable[..., Result],
    tmp_path: Path,
) -> None:
    server = kube_apiserver(_objects())
    result = run_cli(live_args("istio-gateway", server, repo, "-o", "json"))
    assert result.exit_code == ExitCode.OK, result.stderr
    assert _app(result)["sync"]["status"] == "Synced"
    assert "rendered with helm v3.17.3 (Argo CD v3.1 bundles helm v3.18.4)" in _app(result)["notes"]
    assert _gets(server) == [DEPLOYMENT_PATH]  # the one GET of an object

    export = tmp_path / "export.yaml"
    server.clear_requests()
    snap = run_cli(
        ["snapshot", "istio-gateway", "-o", str(export), "--kubeconfig",
         str(server.kubeconfig_path), "--repo-root", str(repo)]
    )  # fmt: skip
    assert snap.exit_code == ExitCode.OK, snap.stderr
    assert _gets(server) == [DEPLOYMENT_PATH]
    document = yaml.safe_load(export.read_text())
    assert document["argocdRepoServer"] == {"image": "quay.io/argoproj/argocd:v3.1.5"}
    assert not [o for o in document["objects"] if o["kind"] == "Deployment"]  # the image only
    replay = run_cli(["istio-gateway", "--snapshot", str(export), "--repo-root", str(repo),
                      "--no-entry-points", "-o", "json"])  # fmt: skip
    assert replay.exit_code == ExitCode.OK, replay.stderr
    assert _app(replay)["notes"] == [
        n for n in _app(result)["notes"] if not n.startswith("controller permissions")
    ]
    # a preview against the export renders with the helm the image names, as the replay does
    _commit(repo, "charts/gateway/values.yaml", "replicaCount: 2\n", "replicaCount: 3\n")
    preview = run_cli(["preview", "--base", "HEAD~1", "--head", "HEAD", "--repo-root", str(repo),
                       "--snapshot", str(export), "--no-entry-points", "-o", "json"])  # fmt: skip
    assert preview.exit_code == ExitCode.DRIFT, preview.stderr + preview.stdout
    (app,) = json.loads(preview.stdout)["apps"]
    assert (app["name"], app["action"], app["error"]) == ("istio-gateway", "changed", None)


def test_an_export_without_renders_reads_the_image_for_a_chart_app(
    kube_apiserver: ServerFactory,  # noqa: F811
    run_cli: Callable[..., Result],
    tmp_path: Path,
) -> None:
    objects = _objects()
    app = next(o for o in objects if o["kind"] == "Application")
    app["spec"]["source"]["helm"] = {"releaseName": "istio-gateway"}  # helm options: a helm app
    server = kube_apiserver(objects)
    export = tmp_path / "export.yaml"
    snap = run_cli(
        ["snapshot", "istio-gateway", "-o", str(export), "--kubeconfig",
         str(server.kubeconfig_path)]
    )  # fmt: skip
    assert snap.exit_code == ExitCode.OK, snap.stderr
    assert _gets(server) == [DEPLOYMENT_PATH]
    assert yaml.safe_load(export.read_text())["argocdRepoServer"]["image"].endswith(":v3.1.5")


def test_the_label_or_the_flag_decide_without_a_get(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,
    run_cli: Callable[..., Result],
) -> None:
    server = kube_apiserver(_objects(label="v3.1.5"))
    result = run_cli(live_args("istio-gateway", server, repo, "-o", "json"))
    assert result.exit_code == ExitCode.OK, result.stderr
    assert "rendered with helm v3.17.3 (Argo CD v3.1 bundles helm v3.18.4)" in _app(result)["notes"]
    flagged = kube_apiserver(_objects())
    result = run_cli(live_args("istio-gateway", flagged, repo, "-o", "json", "--helm-version", "3"))
    assert result.exit_code == ExitCode.OK, result.stderr
    assert "rendered with helm v3.17.3 (--helm-version 3)" in _app(result)["notes"]
    assert _gets(server) == _gets(flagged) == []


@pytest.mark.parametrize(
    ("fault", "why"),
    [
        (403, ("403 Forbidden: RBAC does not allow verb 'get' on deployments.apps "
               "argocd-repo-server in namespace argocd")),
        (None, "404 Not Found: no deployments.apps argocd-repo-server in namespace argocd"),
    ],
)  # fmt: skip
def test_a_repo_server_that_cannot_be_read_is_the_default_helm_and_says_why(
    kube_apiserver: ServerFactory,  # noqa: F811
    lenient_repo: tuple[Path, str],
    run_cli: Callable[..., Result],
    tmp_path: Path,
    fault: int | None,
    why: str,
) -> None:
    repo, head = lenient_repo
    server = kube_apiserver(_objects(repo_server=fault is not None, revision=head))
    if fault is not None:
        server.inject("GET", DEPLOYMENT_PATH + "$", fault, times=None)
    result = run_cli(live_args("istio-gateway", server, repo, "-o", "json"))
    assert result.exit_code == ExitCode.OK, result.stderr
    helm = tools.helm_version(tools.helm_binary(Settings.from_environ()) or "")
    note = (
        f"rendered with helm {helm}, the default: which helm Argo CD bundles is unknown (the "
        f"argocd-repo-server Deployment could not be read: {why}); --helm-version 3 or 4 "
        "chooses"
    )
    assert note in _app(result)["notes"]
    assert _gets(server) == [DEPLOYMENT_PATH]  # asked once, not retried

    export = tmp_path / "export.json"
    snap = run_cli(
        ["snapshot", "istio-gateway", "-o", str(export), "--kubeconfig",
         str(server.kubeconfig_path), "--repo-root", str(repo)]
    )  # fmt: skip
    assert snap.exit_code == ExitCode.OK, snap.stderr
    assert json.loads(export.read_text())["argocdRepoServer"] == {"image": "", "unreadable": why}
    replay = run_cli(["istio-gateway", "--snapshot", str(export), "--repo-root", str(repo),
                      "--no-entry-points", "-o", "json"])  # fmt: skip
    assert note in _app(replay)["notes"]
