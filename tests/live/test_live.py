"""Live mode against the loopback API server (tests/apiserver) holding the incident's state:
the same report as offline, LISTs only, and every failure the API can throw at us."""

from __future__ import annotations

import base64
import copy
import json
import re
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kr8s
import pytest
import yaml

from kubectl_gitdrift import __version__
from kubectl_gitdrift.errors import ExitCode
from kubectl_gitdrift.run import workflow
from tests.conftest import (
    FAST_RETRIES,
    TESTDATA,
    Result,
    Runner,
    text_without_run_context,
    without_run_context,
)
from tests.support import apiserver
from tests.support.apiserver import (
    AccessRule,
    Identity,
    KubeAPIServer,
    ServerFactory,
    controller_rbac,
    kube_apiserver,  # noqa: F401 - the fixture
)

pytestmark = [
    pytest.mark.cluster,
]

INCIDENT = TESTDATA / "incident"
Obj = dict[str, Any]


def incident_objects() -> list[Obj]:
    """The incident's cluster, with the permissions Argo CD's install gives its controller (the
    server answers the controller's can-i from them)."""
    items = list(yaml.safe_load((INCIDENT / "snapshot.yaml").read_text())["items"])
    return [*items, *controller_rbac()]


@pytest.fixture
def run_cli(run_cli: Runner) -> Runner:
    """The CLI with short backoffs: a retried request waits milliseconds."""
    return run_cli.tuned(**FAST_RETRIES)


@pytest.fixture
def repo(build_repo) -> Path:  # type: ignore[no-untyped-def]
    return Path(build_repo(INCIDENT / "repo-src"))


@pytest.fixture
def incident(kube_apiserver: ServerFactory) -> KubeAPIServer:  # noqa: F811
    return kube_apiserver(incident_objects())


def live_args(server: KubeAPIServer, repo: Path, *extra: str, context: str = "") -> list[str]:
    return apiserver.live_args("guestbook", server, repo, *extra, context=context or server.context)


def offline_args(snapshot: Path, repo: Path, *extra: str) -> list[str]:
    args = ["guestbook", "--snapshot", str(snapshot), "--repo-root", str(repo)]
    return [*args, "--no-entry-points", *extra]


def without_mode(text: str) -> Obj:
    """The report but its mode and how the controller's permissions were checked (live: the
    API server's SubjectAccessReviews; offline: the snapshot's RBAC objects, if any)."""
    doc = json.loads(text)
    assert doc.pop("mode") in ("live", "offline")
    return without_run_context(doc)


def resource(report: Obj, kind: str) -> Obj:
    (app,) = report["applications"]
    return next(r for r in app["resources"] if r["kind"] == kind)


def assert_read_only_lists(server: KubeAPIServer) -> None:
    resource_requests = [r for r in server.requests if r.resource]
    assert resource_requests
    reads = [r for r in resource_requests if r.resource != "subjectaccessreviews"]
    assert {r.verb for r in reads} == {"list"}, "per-object GETs or writes"
    assert not server.write_violations


# ---------------------------------------------------------------------------- equivalence


def test_live_report_equals_offline_on_snapshot_and_on_its_export(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    live = run_cli(live_args(incident, repo, "-o", "json"))
    assert live.exit_code == ExitCode.DRIFT, live.stderr
    assert live.stderr == ""
    assert json.loads(live.stdout)["mode"] == "live"
    original = run_cli(offline_args(INCIDENT / "snapshot.yaml", repo, "-o", "json"))
    assert without_mode(live.stdout) == without_mode(original.stdout)

    export = tmp_path / "export.yaml"
    snap = run_cli(
        [
            "snapshot",
            "guestbook",
            "-o",
            str(export),
            "--kubeconfig",
            str(incident.kubeconfig_path),
            "--repo-root",
            str(repo),
        ]
    )
    assert snap.exit_code == ExitCode.OK, snap.stderr
    replay = run_cli(offline_args(export, repo, "-o", "json"))
    assert replay.exit_code == ExitCode.DRIFT
    assert without_mode(replay.stdout) == without_mode(live.stdout)
    text_live = run_cli(live_args(incident, repo))
    text_replay = run_cli(offline_args(export, repo))
    # the snapshot holds the RBAC objects: offline, they answer what the server answered live
    assert text_without_run_context(text_live.stdout) == text_without_run_context(
        text_replay.stdout + "\nNOTES\n- controller permissions: SubjectAccessReview\n"
    )
    assert_read_only_lists(incident)


def test_lists_once_per_kind_and_namespace(incident: KubeAPIServer, repo: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(live_args(incident, repo, "-o", "json"))
    assert result.exit_code == ExitCode.DRIFT
    lists = [(r.api_group, r.resource, r.namespace) for r in incident.requests_for(verb="list")]
    assert len(lists) == len(set(lists)), "a kind/namespace was listed twice"
    assert {
        ("argoproj.io", "applications", "argocd"),
        ("", "configmaps", "argocd"),
        ("apps", "deployments", "prod"),
        ("", "services", "prod"),
        ("", "events", "prod"),
    } <= set(lists)
    # the API server answers the controller's can-i: no RBAC object is listed
    assert not [r for r in lists if r[0] == "rbac.authorization.k8s.io"]
    for request in incident.requests_for(verb="list"):
        assert request.query.get("limit"), "LIST without a limit"
    assert_read_only_lists(incident)


def test_every_request_says_who_sends_it(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result]
) -> None:
    """kubectl's form of User-Agent, on every request (connecting's `/version` too), so that
    an operator tells gitdrift's reads from any other kr8s client's in the audit log."""
    result = run_cli(live_args(incident, repo, "-o", "json"))
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    agents = {r.user_agent for r in incident.requests}
    (agent,) = agents
    assert re.fullmatch(
        rf"kubectl-gitdrift/{re.escape(__version__)} \((linux|darwin|windows)/[a-z0-9]+\) "
        rf"kr8s/{re.escape(kr8s.__version__)}",
        agent,
    ), agent
    assert "/version" in {r.path.rstrip("/") for r in incident.requests}  # kr8s asks on connecting
    assert "subjectaccessreviews" in {r.resource for r in incident.requests}


def test_lists_known_from_the_application_run_while_it_renders(
    incident: KubeAPIServer,
    repo: Path,
    run_cli: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What Argo CD says the app tracks (status.resources) and its namespace's context kinds
    are listed while the app renders (issue 18), each once, and counted once the listing
    phase begins."""
    prepare = workflow.prepare
    seen_before_render: list[tuple[str, str]] = []

    def render_once_listed(*args: Any, **kwargs: Any) -> list[workflow.Target]:
        deadline = time.monotonic() + 30
        while not incident.requests_for(verb="list", resource="deployments", namespace="prod"):
            assert time.monotonic() < deadline, "the Deployments were not listed before rendering"
            time.sleep(0.01)
        seen_before_render.extend(
            (r.resource, r.namespace) for r in incident.requests_for(verb="list")
        )
        return prepare(*args, **kwargs)

    monkeypatch.setattr(workflow, "prepare", render_once_listed)
    result = run_cli(live_args(incident, repo, "-o", "json", "--progress=always"))
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    assert ("deployments", "prod") in seen_before_render
    # the context kinds are read after the compare, for what differs (live/context.py)
    assert ("events", "prod") not in seen_before_render
    lists = [(r.api_group, r.resource, r.namespace) for r in incident.requests_for(verb="list")]
    assert len(lists) == len(set(lists)), "a kind/namespace was listed twice"
    counted = [
        line.split()[2]
        for line in result.stderr.splitlines()
        if line.startswith("gitdrift: listing")
    ]
    argocd = {"applications", "appprojects"}  # and argocd's ConfigMaps, read before rendering
    after = {"events", "horizontalpodautoscalers", "mutatingwebhookconfigurations"}
    assert {r[1] for r in lists} & after, "the drift's context was not read after the compare"
    total = len(
        [r for r in lists if r[1] not in argocd | after and r[1:] != ("configmaps", "argocd")]
    )
    assert counted == [f"{n}/{total}" for n in range(1, total + 1)]
    offline = json.loads(
        run_cli(offline_args(INCIDENT / "snapshot.yaml", repo, "-o", "json")).stdout
    )
    offline.pop("mode")
    assert without_mode(result.stdout) == without_run_context(offline)


def test_argo_cd_objects_are_listed_while_discovery_runs(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result]
) -> None:
    """The Application, Argo CD's ConfigMaps and AppProjects are listed as soon as kr8s has
    connected, with the kinds Argo CD's CRDs serve, while discovery answers (slowly here):
    their answers are used once discovery agrees, and nothing is listed twice."""
    incident.inject(path_regex=r"^/apis/?$", delay=1.5, times=1)
    result = run_cli(live_args(incident, repo, "-o", "json"))
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    paths = [r.path.rstrip("/") for r in incident.requests]
    apps = "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications"
    assert paths.index(apps) < paths.index("/apis")  # answered while /apis still waited
    assert paths.count(apps) == 1
    assert paths.count("/api/v1/namespaces/argocd/configmaps") == 1
    offline = run_cli(offline_args(INCIDENT / "snapshot.yaml", repo, "-o", "json"))
    assert without_mode(result.stdout) == without_mode(offline.stdout)


def test_render_error_with_lists_in_flight(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result]
) -> None:
    """The app's render fails while its early LISTs still wait on the server: the render's
    error, as when nothing was listed before rendering (the LISTs still out after a grace
    are cancelled, and nothing is left open)."""
    incident.inject(path_regex=r"/deployments$", delay=5.0, times=1)
    result = run_cli(live_args(incident, repo, "--revision", "no-such-revision"))
    assert result.exit_code == ExitCode.ERROR, result.stderr
    assert result.stderr.startswith("error: "), result.stderr
    assert "no-such-revision" in result.stderr


# ---------------------------------------------------------------------------- authorization


def restricted(*, deny: str) -> Identity:
    allowed = (
        "applications",
        "appprojects",
        "configmaps",
        "services",
        "deployments",
        "events",
        "horizontalpodautoscalers",
        "roles",
        "rolebindings",
        "clusterroles",
        "clusterrolebindings",
    )
    rule = AccessRule(verbs=("get", "list"), resources=tuple(r for r in allowed if r != deny))
    return Identity(user="viewer", token="viewer-token", rules=(rule,))


def test_forbidden_kind_is_unknown_and_exits_7(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,
    run_cli: Callable[..., Result],
    tmp_path: Path,
) -> None:
    server = kube_apiserver(incident_objects(), identities=[restricted(deny="deployments")])
    result = run_cli(live_args(server, repo, "-o", "json"))
    assert result.exit_code == ExitCode.INCOMPLETE, result.stderr
    report = json.loads(result.stdout)
    assert report["applications"][0]["sync"]["status"] == "Unknown"
    deployment = resource(report, "Deployment")
    assert deployment["status"] == "Unknown"
    assert "list" in deployment["reason"]
    assert "deployments.apps" in deployment["reason"]
    assert "403" in deployment["reason"]
    assert resource(report, "Service")["status"] == "Synced"
    assert "warning: cannot list deployments.apps in namespace prod" in result.stderr
    # kr8s would retry a 403 three times; gitdrift asks once
    assert len(server.requests_for(resource="deployments")) == 1
    # nothing read differs: no context object is asked for (live/context.py)
    assert server.requests_for(resource="mutatingwebhookconfigurations") == []
    assert server.requests_for(resource="events") == []

    export = tmp_path / "partial.json.gz"
    snap = run_cli(
        ["snapshot", "guestbook", "-o", str(export), "--kubeconfig", str(server.kubeconfig_path)]
    )
    assert snap.exit_code == ExitCode.INCOMPLETE
    replay = run_cli(offline_args(export, repo, "-o", "json"))
    assert replay.exit_code == ExitCode.INCOMPLETE
    # the snapshot lists every context kind and records that the webhook configurations were
    # forbidden; the live run reads them only for a difference a webhook could have made, and
    # nothing read differs here (live/context.py)
    replayed = without_mode(replay.stdout)
    (app,) = replayed["applications"]
    (note,) = app["notes"]
    assert note.startswith("mutating webhook configurations were not read (")
    app["notes"] = []
    assert replayed == without_mode(result.stdout)


def test_unauthorized_is_a_one_line_cluster_error(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result]
) -> None:
    result = run_cli(live_args(incident, repo, context="unauthorized"))
    assert result.exit_code == ExitCode.CLUSTER_ERROR
    assert result.stdout == ""
    first, *rest = result.stderr.splitlines()
    assert first.startswith("error: ")
    assert incident.url in first
    assert "context unauthorized" in first
    assert "401" in first
    assert rest
    assert all(line.startswith("  hint: ") for line in rest)


def test_unreachable_server_is_a_cluster_error(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = yaml.safe_load(incident.kubeconfig_path.read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    result = run_cli(
        [
            "guestbook",
            "--kubeconfig",
            str(kubeconfig),
            "--repo-root",
            str(repo),
            "--no-entry-points",
        ]
    )
    assert result.exit_code == ExitCode.CLUSTER_ERROR
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"error: cannot reach https://127.0.0.1:{port}"), first


def test_missing_kubeconfig_context(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result]
) -> None:
    result = run_cli(live_args(incident, repo, context="nope"))
    assert result.exit_code == ExitCode.CLUSTER_ERROR
    assert "nope" in result.stderr.splitlines()[0]


def test_unknown_app_lists_those_in_the_cluster(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result]
) -> None:
    args = live_args(incident, repo)
    args[0] = "questbook"
    result = run_cli(args)
    assert result.exit_code == ExitCode.ERROR
    assert "Application argocd/questbook not found" in result.stderr
    assert "argocd/guestbook" in result.stderr
    assert_read_only_lists(incident)


# ---------------------------------------------------------------------------- kinds


def test_kind_without_crd_counts_as_missing(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    clone = tmp_path / "clone"
    shutil.copytree(repo, clone)
    overlay = clone / "overlays/prod/guestbook"
    (overlay / "widget.yaml").write_text(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n"
    )
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    kustomization["resources"] = [*kustomization.get("resources", []), "widget.yaml"]
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    result = run_cli([*live_args(incident, clone, "-o", "json"), "--local"])
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    report = json.loads(result.stdout)
    assert resource(report, "Widget")["status"] == "Missing"
    assert any("Widget.example.com is not served" in n for n in report["applications"][0]["notes"])
    assert not incident.requests_for(resource="widgets")
    # the cause is the missing CRD (from discovery), not "a sync creates it"
    findings = report["applications"][0]["findings"]
    (finding,) = [f for f in findings if f["resource"] and f["resource"]["kind"] == "Widget"]
    assert finding["code"] == "crd-missing"
    assert finding["evidence"]["crd"] == "widgets.example.com"
    assert "not served" in finding["evidence"]["discovery"]


def test_kind_listing_404_counts_as_empty(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result]
) -> None:
    incident.inject(path_regex=r"/deployments$", status=404, times=None)
    result = run_cli(live_args(incident, repo, "-o", "json"))
    assert result.exit_code == ExitCode.DRIFT
    report = json.loads(result.stdout)
    assert resource(report, "Deployment")["status"] == "Missing"
    assert any("not found (404)" in n for n in report["applications"][0]["notes"])


# ---------------------------------------------------------------------------- faults


def test_429_is_retried_after_retry_after(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result]
) -> None:
    expected = run_cli(live_args(incident, repo, "-o", "json")).stdout
    incident.clear_requests()
    incident.inject(path_regex=r"/deployments$", status=429, times=1, retry_after=1)
    began = time.monotonic()
    result = run_cli(live_args(incident, repo, "-o", "json"))
    assert time.monotonic() - began >= 1.0
    assert result.exit_code == ExitCode.DRIFT
    assert result.stdout == expected
    assert [r.status for r in incident.requests_for(resource="deployments")] == [429, 200]


def test_500_is_retried_then_reported_unknown(
    incident: KubeAPIServer,
    repo: Path,
    run_cli: Runner,
) -> None:
    run_cli = run_cli.tuned(retries=2)
    incident.inject(path_regex=r"/deployments$", status=500, times=None)
    result = run_cli(live_args(incident, repo, "-o", "json"))
    assert result.exit_code == ExitCode.INCOMPLETE
    deployment = resource(json.loads(result.stdout), "Deployment")
    assert deployment["status"] == "Unknown"
    assert "500 Internal Server Error after retries" in deployment["reason"]
    assert "injected fault" in deployment["reason"]
    assert [r.status for r in incident.requests_for(resource="deployments")] == [500] * 3
    assert "warning: cannot list deployments.apps in namespace prod: 500" in result.stderr


def test_500_then_recovery(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result]
) -> None:
    incident.inject(path_regex=r"/services$", status=503, times=2)
    result = run_cli(live_args(incident, repo, "-o", "json"))
    assert result.exit_code == ExitCode.DRIFT
    assert [r.status for r in incident.requests_for(resource="services")] == [503, 503, 200]


def test_slow_answer_times_out_and_is_retried(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result]
) -> None:
    fault = incident.inject(path_regex=r"/deployments$", delay=2.0, times=1)
    began = time.monotonic()
    result = run_cli(live_args(incident, repo, "-o", "json", "--request-timeout", "0.5"))
    assert time.monotonic() - began < 2.0
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    assert resource(json.loads(result.stdout), "Deployment")["status"] == "OutOfSync"
    assert fault.hits == 1  # the slow one was given up on (the server logs it when it answers)
    assert [r.status for r in incident.requests_for(resource="deployments")] == [200]


def test_persistent_timeout_is_unknown(
    incident: KubeAPIServer,
    repo: Path,
    run_cli: Runner,
) -> None:
    run_cli = run_cli.tuned(retries=1)
    incident.inject(path_regex=r"/deployments$", delay=1.0, times=None)
    result = run_cli(live_args(incident, repo, "-o", "json", "--request-timeout", "0.3"))
    assert result.exit_code == ExitCode.INCOMPLETE
    reason = resource(json.loads(result.stdout), "Deployment")["reason"]
    assert "no answer within 0.3s, 2 attempts" in reason


def test_connection_dropped_mid_list_is_retried(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result]
) -> None:
    incident.inject(path_regex=r"/deployments$", drop_connection=True, times=1)
    result = run_cli(live_args(incident, repo, "-o", "json"))
    assert result.exit_code == ExitCode.DRIFT
    assert [r.dropped for r in incident.requests_for(resource="deployments")] == [True, False]


@pytest.fixture
def many_events() -> list[Obj]:
    objects = incident_objects()
    event = next(o for o in objects if o["kind"] == "Event")
    for i in range(5):
        extra = copy.deepcopy(event)
        extra["metadata"]["name"] = f"guestbook.extra{i}"
        extra["metadata"].pop("uid", None)
        objects.append(extra)
    return objects


def test_pagination_follows_continue(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,
    run_cli: Runner,
    many_events: list[Obj],
) -> None:
    server = kube_apiserver(many_events)
    whole = run_cli(live_args(server, repo, "-o", "json"))
    server.clear_requests()
    run_cli = run_cli.tuned(page_size=2)
    paged = run_cli(live_args(server, repo, "-o", "json"))
    assert paged.stdout == whole.stdout
    events = server.requests_for(verb="list", resource="events")
    assert len(events) == 4  # 7 events, 2 per page
    assert [bool(r.query.get("continue")) for r in events] == [False, True, True, True]
    assert all(r.query["limit"] == "2" for r in events)


def test_expired_continue_restarts_the_list_once(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,
    run_cli: Runner,
    many_events: list[Obj],
) -> None:
    server = kube_apiserver(many_events)
    whole = run_cli(live_args(server, repo, "-o", "json"))
    server.clear_requests()
    run_cli = run_cli.tuned(page_size=2)
    # the first continue request of the events LIST gets 410, as after an etcd compaction
    server.inject(path_regex=r"/events$", query_regex="continue=", status=410, times=1)
    paged = run_cli(live_args(server, repo, "-o", "json"))
    assert paged.exit_code == ExitCode.DRIFT, paged.stderr
    assert paged.stdout == whole.stdout
    statuses = [
        (bool(r.query.get("continue")), r.status)
        for r in server.requests_for(verb="list", resource="events")
    ]
    assert statuses[:2] == [(False, 200), (True, 410)]
    assert statuses[2] == (False, 200)  # started over
    assert len(statuses) == 6


def test_expired_continue_after_compaction(
    kube_apiserver: ServerFactory,  # noqa: F811
    many_events: list[Obj],
) -> None:
    from kubectl_gitdrift.live import cluster, listing, transport

    server = kube_apiserver(many_events)
    # compact etcd just as the first continue request arrives: its token is then expired
    server.inject(path_regex=r"/events$", query_regex="continue=", delay=0.001, times=1)
    server._sleep = lambda seconds: server.expire_continue_tokens()  # type: ignore[method-assign]
    config = transport.Config(kubeconfig=str(server.kubeconfig_path), page_size=2, backoff=0.01)
    with cluster.Cluster(config) as kc:
        kind = kc.discovery.find("", "Event")
        assert kind is not None
        (result,) = kc.fetch([listing.Query(kind, "prod")])
    assert result.error == ""
    assert len(result.items) == 7
    assert all(i["kind"] == "Event" and i["apiVersion"] == "v1" for i in result.items)
    statuses = [r.status for r in server.requests_for(resource="events")]
    assert statuses == [200, 410, 200, 200, 200, 200]


def test_expired_twice_is_unreadable(
    kube_apiserver: ServerFactory,  # noqa: F811
    many_events: list[Obj],
) -> None:
    from kubectl_gitdrift.live import cluster, listing, transport

    server = kube_apiserver(many_events)
    server.inject(path_regex=r"/events$", query_regex="continue=", status=410, times=None)
    config = transport.Config(kubeconfig=str(server.kubeconfig_path), page_size=2)
    with cluster.Cluster(config) as kc:
        kind = kc.discovery.find("", "Event")
        assert kind is not None
        (result,) = kc.fetch([listing.Query(kind, "prod")])
    assert result.status == 410
    assert "expired twice" in result.error
    assert len(server.requests_for(resource="events")) == 4


# ---------------------------------------------------------------------------- Secrets


MARKER = "s3cr3t-MARKER-7f1c9e"


def secret_state() -> list[Obj]:
    objects = incident_objects()
    app = next(o for o in objects if o["kind"] == "Application")
    app["status"]["resources"].append(
        {"kind": "Secret", "name": "guestbook-db", "namespace": "prod", "version": "v1"}
    )
    applied = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "guestbook-db", "namespace": "prod"},
        "stringData": {"password": MARKER},
    }
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {
                "name": "guestbook-db",
                "namespace": "prod",
                "annotations": {
                    "argocd.argoproj.io/tracking-id": "guestbook:/Secret:prod/guestbook-db",
                    "kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied),
                },
            },
            "data": {
                "password": base64.b64encode(MARKER.encode()).decode(),
                "user": base64.b64encode(b"guestbook").decode(),
            },
        }
    )
    return objects


def assert_no_marker(text: str | bytes, where: str) -> None:
    data = text.encode() if isinstance(text, str) else text
    for needle in (MARKER, base64.b64encode(MARKER.encode()).decode()):
        assert needle.encode() not in data, f"Secret value leaked into {where}"


@pytest.mark.parametrize("name", ["snap.yaml", "snap.json", "snap.yaml.gz"])
def test_snapshot_round_trips_without_secret_values(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,
    run_cli: Callable[..., Result],
    tmp_path: Path,
    name: str,
) -> None:
    server = kube_apiserver(secret_state())
    live = run_cli(live_args(server, repo, "-o", "json"))
    assert live.exit_code == ExitCode.DRIFT
    secret = resource(json.loads(live.stdout), "Secret")
    assert secret["status"] == "Extraneous"
    path = tmp_path / name
    snap = run_cli(
        [
            "snapshot",
            "guestbook",
            "-o",
            str(path),
            "--kubeconfig",
            str(server.kubeconfig_path),
            "--repo-root",
            str(repo),
        ]
    )
    assert snap.exit_code == ExitCode.OK, snap.stderr
    assert_no_marker(path.read_bytes(), name)
    if name.endswith(".gz"):
        import gzip

        assert_no_marker(gzip.decompress(path.read_bytes()), name)
    replay = run_cli(offline_args(path, repo, "-o", "json"))
    assert without_mode(replay.stdout) == without_mode(live.stdout)
    for fmt in ("text", "json", "yaml"):
        for result in (
            run_cli(live_args(server, repo, "-o", fmt)),
            run_cli(offline_args(path, repo, "-o", fmt)),
        ):
            assert_no_marker(result.stdout + result.stderr, f"-o {fmt}")
    assert_no_marker(live.stdout + snap.stderr, "the reports")
    assert not list(tmp_path.glob(".*tmp"))


@pytest.mark.parametrize("target", ["-", "yaml", "json"])
def test_snapshot_to_standard_output_as_kubectl_users_type_it(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,
    run_cli: Callable[..., Result],
    tmp_path: Path,
    target: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`-o -` and `-o yaml` print YAML, `-o json` JSON, to standard output; no file named
    after the flag's value is written, and the printed snapshot replays like a file."""
    server = kube_apiserver(secret_state())
    monkeypatch.chdir(tmp_path)
    snap = run_cli(
        ["snapshot", "guestbook", "-o", target, "--kubeconfig", str(server.kubeconfig_path),
         "--repo-root", str(repo)]
    )  # fmt: skip
    assert snap.exit_code == ExitCode.OK, snap.stderr
    assert not (tmp_path / target).exists()
    assert "wrote standard output" in snap.stderr
    doc = json.loads(snap.stdout) if target == "json" else yaml.safe_load(snap.stdout)
    assert doc["kind"] == "Snapshot"
    assert_no_marker(snap.stdout.encode(), target)
    path = tmp_path / ("s.json" if target == "json" else "s.yaml")
    path.write_text(snap.stdout)
    live = run_cli(live_args(server, repo, "-o", "json"))
    replay = run_cli(offline_args(path, repo, "-o", "json"))
    assert without_mode(replay.stdout) == without_mode(live.stdout)


def test_snapshot_secret_equal_values_compare_equal(
    kube_apiserver: ServerFactory,  # noqa: F811
    tmp_path: Path,
    run_cli: Callable[..., Result],
) -> None:
    from kubectl_gitdrift.live import snapshot

    server = kube_apiserver(secret_state())
    path = tmp_path / "s.yaml"
    run_cli(["snapshot", "guestbook", "-o", str(path), "--kubeconfig", str(server.kubeconfig_path)])
    state = snapshot.load(path)
    (secret,) = [m for m in state.objects if m.key.kind == "Secret"]
    assert state.capture is not None
    assert state.capture.fingerprint_key is not None
    desired = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "guestbook-db", "namespace": "prod"},
        "stringData": {"password": MARKER},
        "data": {"user": base64.b64encode(b"guestbook").decode()},
    }
    (redacted,) = state.redact_desired([snapshot.model.Manifest(secret.key, desired)])
    assert redacted.body["data"]["user"] == secret.body["data"]["user"]
    folded = base64.b64encode(redacted.body["stringData"]["password"].encode()).decode()
    assert folded == secret.body["data"]["password"]
    applied = json.loads(
        secret.body["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    )
    assert applied["stringData"]["password"] == redacted.body["stringData"]["password"]
