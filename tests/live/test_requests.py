"""The requests a live run sends for one app (issue 25): besides discovery, the app's LISTs, the
Application, Argo CD's ConfigMaps, the AppProjects and the SubjectAccessReviews, and then only
the context objects the diagnosis of what differs reads (live/context.py): the Events of a
Deployment whose replicas differ and the HPAs of its namespace, never a namespace's Events."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubectl_gitdrift.errors import ExitCode
from tests.conftest import Result
from tests.live.test_live import (
    INCIDENT,
    incident_objects,
    live_args,
    offline_args,
    repo,  # noqa: F401 - the fixture
    run_cli,  # noqa: F401 - the fixture
    without_mode,
)
from tests.support.apiserver import (
    KubeAPIServer,
    ServerFactory,
    kube_apiserver,  # noqa: F401 - the fixture
)

pytestmark = [pytest.mark.cluster]

Obj = dict[str, Any]

BASE = {
    "GET /apis/argoproj.io/v1alpha1/namespaces/argocd/applications",
    "GET /api/v1/namespaces/argocd/configmaps",
    "GET /apis/argoproj.io/v1alpha1/namespaces/argocd/appprojects",
    "GET /apis/apps/v1/namespaces/prod/deployments",
    "GET /api/v1/namespaces/prod/services",
    "POST /apis/authorization.k8s.io/v1/subjectaccessreviews",
}
"""What any run of the incident's app sends besides discovery: the Application (by name),
Argo CD's ConfigMaps and AppProjects, the app's two LISTs, the controller's can-i."""


def sent(server: KubeAPIServer) -> dict[str, list[dict[str, str]]]:
    """The requests that are not discovery, by method and path, with their selectors."""
    discovery = set(server.discovery_requests())
    out: dict[str, list[dict[str, str]]] = {}
    for r in server.requests:
        if r.method == "GET" and r.path in discovery:
            continue
        selectors = {k: v for k, v in r.query.items() if k.endswith("Selector")}
        out.setdefault(f"{r.method} {r.path}", []).append(selectors)
    return out


def test_a_scaled_deployment_asks_its_events_and_hpas_and_nothing_else(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,  # noqa: F811
    run_cli: Callable[..., Result],  # noqa: F811
) -> None:
    """The bench's drift (a Deployment scaled by hand through /scale): the Events of that
    Deployment (one LIST, by fieldSelector) and the HPAs of its namespace follow the compare;
    the webhook configurations do not (kubectl owns the field, not Argo CD's apply). The
    report is the snapshot's, which holds every context object."""
    server = kube_apiserver(incident_objects())
    result = run_cli(live_args(server, repo, "-o", "json"))
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    requests = sent(server)
    events = "GET /api/v1/namespaces/prod/events"
    hpas = "GET /apis/autoscaling/v2/namespaces/prod/horizontalpodautoscalers"
    assert set(requests) == BASE | {events, hpas}
    assert requests[events] == [
        {"fieldSelector": "involvedObject.kind=Deployment,involvedObject.name=guestbook"}
    ]
    assert len(requests[hpas]) == 1
    assert all(len(v) == 1 for k, v in requests.items() if not k.startswith("POST"))
    (app,) = json.loads(result.stdout)["applications"]
    dated = [f for f in app["findings"] if "event" in (f.get("evidence") or {})]
    assert dated, "the Event read after the compare did not date the scale"
    offline = run_cli(offline_args(INCIDENT / "snapshot.yaml", repo, "-o", "json"))
    assert without_mode(result.stdout) == without_mode(offline.stdout)


def test_nothing_differs_nothing_more_is_asked(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,  # noqa: F811
    run_cli: Callable[..., Result],  # noqa: F811
) -> None:
    """The incident scaled back to git's replicas: no Events, no HPAs, no webhooks."""
    objects = copy.deepcopy(incident_objects())
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    deployment["spec"]["replicas"] = 3
    server = kube_apiserver(objects)
    result = run_cli(live_args(server, repo, "-o", "json"))
    (app,) = json.loads(result.stdout)["applications"]
    assert app["sync"]["status"] == "Synced", result.stdout
    assert result.exit_code == ExitCode.OK, result.stderr
    assert set(sent(server)) == BASE
