"""Live mode under faults (tests/apiserver injects them): every failure is bounded, reported and
never mistaken for "in sync".

For each fault that leaves a kind unreadable: the retries are bounded (counted in the server's
request log), the run completes, the kind's resources are Unknown with a `resource-unreadable`
finding saying what could not be read and why, the exit code is 7 (INCOMPLETE), and nothing of
that kind is reported Synced. tests/live/test_live.py covers the transient cases (a 429 or 5xx that
clears, a single timeout or dropped connection, one expired continue token).
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from kubectl_gitdrift.errors import ExitCode
from tests.conftest import FAST_RETRIES, TESTDATA, Result, Runner, without_run_context
from tests.live.test_live import incident_objects, live_args, resource
from tests.support.apiserver import (
    KubeAPIServer,
    ServerFactory,
    kube_apiserver,  # noqa: F401 - the fixture
)

pytestmark = [
    pytest.mark.cluster,
]

Obj = dict[str, Any]
RETRIES = 2  # extra attempts per request in these tests (the default is 4)
ATTEMPTS = RETRIES + 1


@pytest.fixture
def run_cli(run_cli: Runner) -> Runner:
    """The CLI with short backoffs and caps, and RETRIES extra attempts."""
    return run_cli.tuned(**FAST_RETRIES, retries=RETRIES, max_retry_after=0.05)


@pytest.fixture
def repo(build_repo) -> Any:  # type: ignore[no-untyped-def]
    return build_repo(TESTDATA / "incident" / "repo-src")


def with_extra_deployments(count: int = 4) -> list[Obj]:
    """The incident plus untracked Deployments in prod, so a LIST of them spans pages."""
    objects = incident_objects()
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    for i in range(count):
        extra = copy.deepcopy(deployment)
        extra["metadata"]["name"] = f"other-{i}"
        for key in ("uid", "annotations", "managedFields"):
            extra["metadata"].pop(key, None)
        objects.append(extra)
    return objects


def unreadable_findings(report: Obj) -> list[Obj]:
    (app,) = report["applications"]
    return [f for f in app["findings"] if f["code"] == "resource-unreadable"]


def assert_incomplete(result: Result, kind: str, why: str) -> Obj:
    """Exit 7; `kind` Unknown with `why` in its reason and in a resource-unreadable finding;
    the app Unknown; nothing of `kind` Synced; every other resource still compared."""
    assert result.exit_code == ExitCode.INCOMPLETE, result.stderr
    report: Obj = json.loads(result.stdout)
    (app,) = report["applications"]
    assert app["sync"]["status"] == "Unknown"
    assert report["summary"]["unknown"] == 1
    unread = resource(report, kind)
    assert unread["status"] == "Unknown"
    assert why in unread["reason"]
    assert unread["changes"] == []
    for res in app["resources"]:
        if res["kind"] == kind:
            assert res["status"] == "Unknown", res
        else:
            assert res["status"] in ("Synced", "OutOfSync"), res  # the rest was read
    (finding,) = [f for f in unreadable_findings(report) if f["resource"]]
    assert finding["severity"] == "error"
    assert finding["resource"]["kind"] == kind
    assert finding["rule"] == "builtin/resource-unreadable"
    assert why in finding["message"]
    assert finding["evidence"]["reason"] == unread["reason"]
    assert f"warning: {unread['reason']}" in result.stderr
    assert "Traceback" not in result.stderr
    return report


@dataclass(frozen=True)
class Case:
    id: str
    inject: dict[str, Any]
    why: str
    requests: int  # exactly this many LISTs of deployments, retries included
    args: tuple[str, ...] = ()


CASES = [
    Case("403", {"status": 403, "times": None}, "403 Forbidden", 1),
    Case("429", {"status": 429, "retry_after": 1, "times": None}, "429", ATTEMPTS),
    Case(
        "500", {"status": 500, "times": None}, "500 Internal Server Error after retries", ATTEMPTS
    ),
    Case("502", {"status": 502, "times": None}, "502", ATTEMPTS),
    Case("503", {"status": 503, "times": None}, "503", ATTEMPTS),
    Case("504", {"status": 504, "times": None}, "504", ATTEMPTS),
    Case(
        "timeout",
        {"delay": 1.0, "times": None},
        f"no answer within 0.2s, {ATTEMPTS} attempts",
        ATTEMPTS,
        ("--request-timeout", "0.2"),
    ),
    Case(
        "dropped",
        {"drop_connection": True, "times": None},
        "connection failed (RemoteProtocolError",
        ATTEMPTS,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_unreadable_kind_is_unknown_and_exits_7(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Any,
    run_cli: Callable[..., Result],
    case: Case,
) -> None:
    server = kube_apiserver(incident_objects())
    fault = server.inject(path_regex=r"/namespaces/prod/deployments$", **case.inject)
    began = time.monotonic()
    result = run_cli(live_args(server, repo, "-o", "json", *case.args))
    assert time.monotonic() - began < 10  # Retry-After and backoff are capped
    assert_incomplete(result, "Deployment", case.why)
    assert fault.hits == case.requests  # bounded: the answers may still be on their way
    assert all(r.status != 200 or r.dropped for r in server.requests_for(resource="deployments"))
    assert len(server.requests_for(resource="services")) == 1  # the rest asked once


def test_retry_after_is_honoured_up_to_the_cap(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Any,
    run_cli: Runner,
) -> None:
    run_cli = run_cli.tuned(max_retry_after=0.4)
    server = kube_apiserver(incident_objects())
    server.inject(path_regex=r"/deployments$", status=429, retry_after=30, times=None)
    began = time.monotonic()
    result = run_cli(live_args(server, repo, "-o", "json"))
    elapsed = time.monotonic() - began
    assert 2 * 0.4 <= elapsed < 5  # waited the capped Retry-After twice, not 30s
    assert_incomplete(result, "Deployment", "429")
    assert len(server.requests_for(resource="deployments")) == ATTEMPTS


def test_a_failing_page_discards_the_pages_before_it(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Any,
    run_cli: Runner,
) -> None:
    """Page 1 of the Deployments arrives, page 2 keeps failing: the kind is Unknown, not
    compared on half a list (the guestbook Deployment may be on the missing page)."""
    run_cli = run_cli.tuned(page_size=2)
    server = kube_apiserver(with_extra_deployments())
    server.inject(path_regex=r"/deployments$", query_regex="continue=", status=500, times=None)
    result = run_cli(live_args(server, repo, "-o", "json"))
    assert_incomplete(result, "Deployment", "500")
    lists = server.requests_for(verb="list", resource="deployments")
    assert [(bool(r.query.get("continue")), r.status) for r in lists] == [
        (False, 200),
        *[(True, 500)] * ATTEMPTS,
    ]


def test_continue_token_expired_twice_is_unknown(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Any,
    run_cli: Runner,
) -> None:
    run_cli = run_cli.tuned(page_size=2)
    server = kube_apiserver(with_extra_deployments())
    server.inject(path_regex=r"/deployments$", query_regex="continue=", status=410, times=None)
    result = run_cli(live_args(server, repo, "-o", "json"))
    assert_incomplete(result, "Deployment", "continue token expired twice (410)")
    lists = server.requests_for(verb="list", resource="deployments")
    assert [(bool(r.query.get("continue")), r.status) for r in lists] == [
        (False, 200),
        (True, 410),
        (False, 200),
        (True, 410),
    ]  # restarted once, then gave up: never an endless loop


def test_paginated_list_reads_every_page(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Any,
    run_cli: Runner,
) -> None:
    server = kube_apiserver(with_extra_deployments())
    whole = run_cli(live_args(server, repo, "-o", "json"))
    server.clear_requests()
    run_cli = run_cli.tuned(page_size=2)
    paged = run_cli(live_args(server, repo, "-o", "json"))
    assert paged.exit_code == ExitCode.DRIFT, paged.stderr
    assert paged.stdout == whole.stdout
    lists = server.requests_for(verb="list", resource="deployments")
    assert len(lists) == 3  # 5 Deployments, 2 a page
    assert unreadable_findings(json.loads(paged.stdout)) == []


def test_unreadable_context_kind_is_a_finding_and_exits_7(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Any,
    run_cli: Callable[..., Result],
) -> None:
    """Events and RBAC (listed when SubjectAccessReviews are forbidden) are read for the
    diagnosis, not compared: their resources keep their verdict, but the report says what was
    not checked and the run is incomplete."""
    server = kube_apiserver(incident_objects())
    server.inject(method="POST", path_regex=r"/subjectaccessreviews$", status=403, times=None)
    server.inject(path_regex=r"/namespaces/prod/events$", status=403, times=None)
    server.inject(path_regex=r"/clusterroles$", status=500, times=None)
    result = run_cli(live_args(server, repo, "-o", "json"))
    assert result.exit_code == ExitCode.INCOMPLETE, result.stderr
    report = json.loads(result.stdout)
    (app,) = report["applications"]
    assert app["sync"]["status"] == "OutOfSync"  # the Deployment and Service were read
    assert resource(report, "Deployment")["status"] == "OutOfSync"
    findings = unreadable_findings(report)
    assert [f["resource"] for f in findings] == [None, None]
    messages = sorted(f["message"] for f in findings)
    assert "clusterroles.rbac.authorization.k8s.io (cluster-scoped): 500" in messages[0]
    assert "events in namespace prod: 403 Forbidden" in messages[1]
    assert all(f"not checked: {f['evidence']['reason']}" in app["notes"] for f in findings)
    assert len(server.requests_for(resource="events")) == 1
    assert len(server.requests_for(resource="clusterroles")) == ATTEMPTS
    text = run_cli(live_args(server, repo))
    assert text.exit_code == ExitCode.INCOMPLETE
    assert "resource-unreadable" in text.stdout


def test_401_mid_run_is_a_cluster_error_asked_once(
    incident_server: KubeAPIServer, repo: Any, run_cli: Callable[..., Result]
) -> None:
    incident_server.inject(path_regex=r"/deployments$", status=401, times=None)
    result = run_cli(live_args(incident_server, repo, "-o", "json"))
    assert result.exit_code == ExitCode.CLUSTER_ERROR
    assert result.stdout == ""
    first, *rest = result.stderr.splitlines()
    assert first.startswith("error: ")
    assert "401 Unauthorized" in first
    assert all(line.startswith("  hint: ") for line in rest)
    assert len(incident_server.requests_for(resource="deployments")) == 1  # no retry on 401


def test_404_for_a_kind_whose_crd_went_away_is_missing_not_synced(
    incident_server: KubeAPIServer, repo: Any, run_cli: Callable[..., Result]
) -> None:
    """Discovery served the kind but its LIST says 404 (the CRD was deleted in between): the
    kind has no objects, so git's are Missing (as Argo CD shows them), never Synced."""
    incident_server.inject(path_regex=r"/deployments$", status=404, times=None)
    result = run_cli(live_args(incident_server, repo, "-o", "json"))
    assert result.exit_code == ExitCode.DRIFT
    report = json.loads(result.stdout)
    assert resource(report, "Deployment")["status"] == "Missing"
    assert any("not found (404)" in n for n in report["applications"][0]["notes"])
    assert len(incident_server.requests_for(resource="deployments")) == 1  # not retried


@pytest.fixture
def incident_server(kube_apiserver: ServerFactory) -> KubeAPIServer:  # noqa: F811
    return kube_apiserver(incident_objects())


def test_offline_replay_of_a_partial_export_is_just_as_incomplete(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Any,
    run_cli: Callable[..., Result],
    tmp_path: Any,
) -> None:
    server = kube_apiserver(incident_objects())
    server.inject(path_regex=r"/deployments$", status=503, times=None)
    server.inject(path_regex=r"/namespaces/prod/events$", status=403, times=None)
    live = run_cli(live_args(server, repo, "-o", "json"))
    export = tmp_path / "partial.yaml"
    snap = run_cli(
        ["snapshot", "guestbook", "-o", str(export), "--kubeconfig", str(server.kubeconfig_path),
         "--repo-root", str(repo)]
    )  # fmt: skip
    assert snap.exit_code == ExitCode.INCOMPLETE
    args = ["guestbook", "--snapshot", str(export), "--repo-root", str(repo), "-o", "json"]
    replay = run_cli([*args, "--no-entry-points"])
    assert replay.exit_code == ExitCode.INCOMPLETE
    a, b = json.loads(live.stdout), json.loads(replay.stdout)
    assert (a.pop("mode"), b.pop("mode")) == ("live", "offline")
    assert len(unreadable_findings(b)) == 2
    # the export lists the Events up front and records them forbidden; the live run reads a
    # drift's Events after the compare, and the Deployment it would read them for is Unknown
    (app,) = b["applications"]
    events = [n for n in app["notes"] if n.startswith("not checked: cannot list events")]
    assert len(events) == 1
    app["notes"] = [n for n in app["notes"] if n not in events]
    app["findings"] = [
        f for f in app["findings"] if f"not checked: {f['evidence'].get('reason')}" not in events
    ]
    assert without_run_context(a) == without_run_context(b)
