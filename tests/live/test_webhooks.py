"""Live mode reads the mutating webhook configurations an admission-mutation needs, against the
loopback API server holding diag-admission-mutation's state (the v1.36 webhook recordings): one
cluster-scoped LIST, only for an app with differences to explain, a 403 on it a note, and never
a caBundle in a report or an exported snapshot."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift.errors import ExitCode
from tests.conftest import FAST_RETRIES, TESTDATA, Result, Runner, without_run_context
from tests.support.apiserver import (
    AccessRule,
    Identity,
    KubeAPIServer,
    ServerFactory,
    controller_rbac,
    kube_apiserver,  # noqa: F401 - the fixture
    live_args,
)

pytestmark = [pytest.mark.cluster]

SCENARIO = TESTDATA / "scenarios" / "diag-admission-mutation"
RECORDED = TESTDATA / "apiserver" / "v1.36" / "webhook-02-mutatingwebhookconfigurations-list.json"
Obj = dict[str, Any]
READABLE = (
    *("applications", "appprojects", "configmaps", "deployments", "events"),
    *("horizontalpodautoscalers", "roles", "rolebindings", "clusterroles", "clusterrolebindings"),
)
"""Everything a run of demo-web lists but the mutating webhook configurations."""


def objects() -> list[Obj]:
    """The scenario's state, and Argo CD's own controller RBAC (which a real cluster has)."""
    items = list(yaml.safe_load((SCENARIO / "snapshot.yaml").read_text())["items"])
    return [*items, *controller_rbac()]


def ca_bundle() -> str:
    recorded = json.loads(RECORDED.read_text())
    return str(recorded["items"][0]["webhooks"][0]["clientConfig"]["caBundle"])


@pytest.fixture
def run_cli(run_cli: Runner) -> Runner:
    return run_cli.tuned(**FAST_RETRIES)


@pytest.fixture
def repo(build_repo) -> Path:  # type: ignore[no-untyped-def]
    return Path(build_repo(SCENARIO / "repo-src"))


def without_mode(text: str) -> Obj:
    """The report without its mode and the note on how the controller's can-i was answered
    (live by SubjectAccessReview, offline by the snapshot's RBAC objects)."""
    doc = json.loads(text)
    assert doc.pop("mode") in ("live", "offline")
    return without_run_context(dict(doc))


def webhook_lists(server: KubeAPIServer) -> list[Any]:
    return server.requests_for(verb="list", resource="mutatingwebhookconfigurations")


def test_live_reads_the_webhook_configurations_and_agrees_with_offline(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,
    run_cli: Callable[..., Result],
    tmp_path: Path,
) -> None:
    server = kube_apiserver(objects())
    live = run_cli(live_args("demo-web", server, repo, "-o", "json", context=server.context))
    assert live.exit_code == ExitCode.DRIFT, live.stderr
    (app,) = json.loads(live.stdout)["applications"]
    (finding,) = [f for f in app["findings"] if f["code"] == "admission-mutation"]
    (hook,) = finding["evidence"]["webhooks"]
    assert (hook["configuration"], hook["webhook"]) == (
        "wm-pay-pull-policy",
        "always-pull.policy.example.com",
    )
    (listed,) = webhook_lists(server)  # one LIST, cluster-scoped, paged like every other
    assert listed.namespace == ""
    assert listed.query.get("limit")
    offline = run_cli(
        [
            *("demo-web", "--snapshot", str(SCENARIO / "snapshot.yaml")),
            *("--repo-root", str(repo), "--no-entry-points", "-o", "json"),
        ]
    )
    assert without_mode(live.stdout) == without_mode(offline.stdout)
    assert ca_bundle() not in live.stdout

    export = tmp_path / "export.yaml"
    snap = run_cli(
        [
            *("snapshot", "demo-web", "-o", str(export)),
            *("--kubeconfig", str(server.kubeconfig_path), "--repo-root", str(repo)),
        ]
    )
    assert snap.exit_code == ExitCode.OK, snap.stderr
    text = export.read_text()
    assert "wm-pay-pull-policy" in text
    assert ca_bundle() not in text
    replay = run_cli(
        ["demo-web", "--snapshot", str(export), "--repo-root", str(repo), "-o", "json"]
    )
    assert without_mode(replay.stdout) == without_mode(live.stdout)


def test_a_forbidden_webhook_list_is_a_note(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,
    run_cli: Callable[..., Result],
) -> None:
    viewer = Identity(
        user="viewer",
        token="viewer-token",
        rules=(
            AccessRule(
                verbs=("get", "list"),
                resources=READABLE,
            ),
        ),
    )
    server = kube_apiserver(objects(), identities=[viewer])
    result = run_cli(live_args("demo-web", server, repo, "-o", "json", context=server.context))
    assert result.exit_code == ExitCode.DRIFT, result.stderr  # not an error, not Unknown
    (app,) = json.loads(result.stdout)["applications"]
    assert app["sync"]["status"] == "OutOfSync"
    (note,) = [n for n in app["notes"] if "mutatingwebhookconfigurations" in n]
    assert "403" in note
    assert "--audit-log" in note
    assert not [f for f in app["findings"] if f["code"] == "admission-mutation"]
    assert len(webhook_lists(server)) == 1


def test_an_app_argo_cd_reports_synced_does_not_list_them(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,
    run_cli: Callable[..., Result],
) -> None:
    state = copy.deepcopy(objects())
    app = next(o for o in state if o["kind"] == "Application")
    app["status"]["sync"]["status"] = "Synced"
    for res in app["status"]["resources"]:
        res["status"] = "Synced"
    server = kube_apiserver(state)
    result = run_cli(live_args("demo-web", server, repo, "-o", "json", context=server.context))
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    assert webhook_lists(server) == []
