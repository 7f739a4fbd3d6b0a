"""--server-dry-run through the real CLI against the loopback API server, which replays what a
real kube-apiserver v1.36.2 answered to Argo CD's Server-Side Diff request
(testdata/apiserver/ssa/): the verdicts those answers imply, the exact request, the 403 path,
and that nothing of the kind is ever sent without the flag."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift.errors import ExitCode
from kubectl_gitdrift.live import cluster, discovery, dryrun, transport
from kubectl_gitdrift.run import gather, workflow
from tests import conftest
from tests.conftest import FAST_RETRIES, TESTDATA, Result, Runner
from tests.support.apiserver import (
    AccessRule,
    Identity,
    KubeAPIServer,
    ServerFactory,
    controller_rbac,
    kube_apiserver,  # noqa: F401 - the fixture
)
from tests.support.apiserver import dryrun as apiserver_dryrun
from tests.support.apiserver.status import APIError

pytestmark = [pytest.mark.cluster]

SSA = TESTDATA / "apiserver" / "ssa"
Obj = dict[str, Any]
TRACKING_ID = "argocd.argoproj.io/tracking-id"
#: recording -> (Application name, folder in the test repository)
CASES = {
    "01-configmap-dropped-keys-removed": "ref-checkout-flags",
    "02-service-co-owned-fields-kept": "ref-payments-api",
    "03-deployment-listmap-merge-by-key": "ref-edge-proxy",
}


@pytest.fixture
def run_cli(run_cli: Runner) -> Runner:
    """The CLI with short backoffs: a retried request waits milliseconds."""
    return run_cli.tuned(**FAST_RETRIES)


def read(recording: str, name: str) -> Obj:
    path = SSA / recording / name
    text = path.read_text(encoding="utf-8")
    doc = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    assert isinstance(doc, dict)
    return doc


def git_manifest(recording: str) -> Obj:
    """What git holds: the recorded desired object without the tracking-id Argo CD stamps."""
    body = copy.deepcopy(read(recording, "desired.yaml"))
    annotations = body["metadata"].pop("annotations")
    annotations.pop(TRACKING_ID)
    if annotations:
        body["metadata"]["annotations"] = annotations
    return body


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A real git repository with one folder per recording; (path, commit)."""
    src = tmp_path_factory.mktemp("ssa-repo-src")
    tree = src / "01-git"
    for recording, app in CASES.items():
        (tree / app).mkdir(parents=True)
        text = yaml.safe_dump(git_manifest(recording), sort_keys=False)
        (tree / app / "manifest.yaml").write_text(text, encoding="utf-8")
    commits = [
        {
            "dir": "01-git",
            "message": "ssa reference apps: git's new version",
            "author": "Sam Platform <sam@example.com>",
            "date": "2026-12-01T14:00:00Z",
        }
    ]
    (src / "commits.yaml").write_text(yaml.safe_dump(commits), encoding="utf-8")
    dest = tmp_path_factory.mktemp("ssa-repo") / "repo"
    make_repo = conftest.load_make_repo()
    make_repo.build_repo(src, dest)
    head = (dest / ".git" / "refs" / "heads" / "main").read_text().strip()
    return dest, head


def application(name: str, commit: str, *, compare_options: str | None) -> Obj:
    annotations = {"argocd.argoproj.io/compare-options": compare_options} if compare_options else {}
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": "argocd", "annotations": annotations},
        "spec": {
            "project": "default",
            "source": {
                "repoURL": "https://git.example.com/platform/ssa-reference.git",
                "path": name,
                "targetRevision": "main",
            },
            "destination": {
                "server": "https://kubernetes.default.svc",
                "namespace": "ssa-reference",
            },
            "syncPolicy": {"syncOptions": ["ServerSideApply=true"]},
        },
        "status": {"sync": {"status": "OutOfSync", "revision": commit}},
    }


def cluster_objects(
    commit: str, *, compare_options: str | None = "ServerSideDiff=true"
) -> list[Obj]:
    objects: list[Obj] = [
        application(app, commit, compare_options=compare_options) for app in CASES.values()
    ]
    objects.extend(read(recording, "live-before.json") for recording in CASES)
    return [*objects, *controller_rbac()]  # the server answers the controller's can-i


def run(
    run_cli: Callable[..., Result],
    server: KubeAPIServer,
    repo: Path,
    app: str,
    *extra: str,
    context: str = "",
) -> Result:
    return run_cli(
        [
            app,
            "--kubeconfig",
            str(server.kubeconfig_path),
            "--context",
            context or server.context,
            "--repo-root",
            str(repo),
            "--no-entry-points",
            "-o",
            "json",
            *extra,
        ]
    )


def only_app(result: Result) -> Obj:
    (app,) = json.loads(result.stdout)["applications"]
    return dict(app)


def the_resource(app: Obj) -> Obj:
    (found,) = [r for r in app["resources"] if r["kind"] != "Application"]
    return dict(found)


# ---------------------------------------------------------------------------- the request


@pytest.mark.server_dry_run
def test_the_request_is_argo_cds_server_side_diff_dry_run(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: tuple[Path, str],
    run_cli: Callable[..., Result],
) -> None:
    path, commit = repo
    server = kube_apiserver(cluster_objects(commit))
    result = run(run_cli, server, path, "ref-checkout-flags", "--server-dry-run")
    assert result.exit_code in (ExitCode.OK, ExitCode.DRIFT), result.stderr

    (request,) = server.dry_runs
    assert request.method == "PATCH"
    assert request.path == "/api/v1/namespaces/ssa-reference/configmaps/checkout-flags"
    assert request.query == {
        "dryRun": "All",
        "fieldManager": "argocd-controller",
        "force": "true",
    }
    assert request.content_type == "application/apply-patch+yaml"
    assert request.status == 200
    # the body is the desired object with the tracking-id Argo CD writes: the recording's
    sent = json.loads(request.body)
    assert sent == read("01-configmap-dropped-keys-removed", "desired.yaml")
    # the rest were reads; the dry-run is the only thing that is not
    others = [r for r in server.requests if r is not request and r.resource]
    assert {r.verb for r in others if r.resource != "subjectaccessreviews"} == {"list"}
    assert not server.write_violations


def test_without_the_flag_no_dry_run_is_sent(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: tuple[Path, str],
    run_cli: Callable[..., Result],
) -> None:
    """Same Server-Side Diff apps, no flag: reads only, and the controller's can-i (and the
    autouse guard, which fails any unmarked test that sends a dry-run, checks it too)."""
    path, commit = repo
    server = kube_apiserver(cluster_objects(commit))
    for app in CASES.values():
        result = run(run_cli, server, path, app)
        assert result.exit_code in (ExitCode.OK, ExitCode.DRIFT), result.stderr
        notes = only_app(result)["notes"]
        assert not any(n.startswith("--server-dry-run") for n in notes), notes
    assert server.requests
    assert server.dry_runs == []
    for record in server.requests:
        if record.resource == "subjectaccessreviews":
            assert record.method == "POST"
            continue
        assert record.method == "GET", f"{record.method} {record.path}"


# ---------------------------------------------------------------------------- verdicts


def changed_paths(resource: Obj) -> set[str]:
    return {c["path"] for c in resource["changes"]}


@pytest.mark.server_dry_run
def test_configmap_keys_git_dropped_are_removed(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: tuple[Path, str],
    run_cli: Callable[..., Result],
) -> None:
    """01: the dry-run removes the data key, annotation and label git dropped (argocd-controller
    owned them alone) and sets FLAG_DARK_MODE=on: OutOfSync on exactly those four fields."""
    path, commit = repo
    server = kube_apiserver(cluster_objects(commit))
    result = run(run_cli, server, path, "ref-checkout-flags", "--server-dry-run")
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    app = only_app(result)
    assert app["sync"]["status"] == "OutOfSync"
    resource = the_resource(app)
    assert resource["status"] == "OutOfSync"
    by_pointer = {c["pointer"]: c for c in resource["changes"]}
    assert set(by_pointer) == {
        "/data/FLAG_DARK_MODE",
        "/data/FLAG_LEGACY_COUPONS",
        "/metadata/annotations/flags.example.com~1owner",
        "/metadata/labels/app.kubernetes.io~1component",
    }
    dark_mode = by_pointer["/data/FLAG_DARK_MODE"]
    assert (dark_mode["desired"], dark_mode["live"]) == ("on", "off")
    assert by_pointer["/data/FLAG_LEGACY_COUPONS"]["desired"] is None
    assert any("--server-dry-run: 1 object(s) predicted" in n for n in app["notes"])


@pytest.mark.server_dry_run
def test_service_co_owned_fields_are_kept(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: tuple[Path, str],
    run_cli: Callable[..., Result],
) -> None:
    """02: the annotation and port monitoring-operator co-owns stay, the annotation
    kubectl-annotate took stays; only the label `team` (argocd-controller's alone) goes."""
    path, commit = repo
    server = kube_apiserver(cluster_objects(commit))
    result = run(run_cli, server, path, "ref-payments-api", "--server-dry-run")
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    resource = the_resource(only_app(result))
    assert resource["status"] == "OutOfSync"
    assert {c["pointer"] for c in resource["changes"]} == {"/metadata/labels/team"}


@pytest.mark.server_dry_run
def test_deployment_lists_merge_by_key(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: tuple[Path, str],
    run_cli: Callable[..., Result],
) -> None:
    """03: the image changes and port 9901 gives way to 9000; the human's sidecar, volume and
    mount stay (not argocd-controller's): no change reported under them."""
    path, commit = repo
    server = kube_apiserver(cluster_objects(commit))
    result = run(run_cli, server, path, "ref-edge-proxy", "--server-dry-run")
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    resource = the_resource(only_app(result))
    assert resource["status"] == "OutOfSync"
    pointers = {c["pointer"] for c in resource["changes"]}
    assert any(p.endswith("/image") for p in pointers), pointers
    assert any("/ports" in p for p in pointers), pointers
    assert not any("log-shipper" in json.dumps(c) for c in resource["changes"])
    assert not any("/volumes" in p or "/volumeMounts" in p for p in pointers), pointers


GOLDEN = TESTDATA / "server-dry-run"


@pytest.mark.server_dry_run
@pytest.mark.parametrize("app", sorted(CASES.values()))
def test_reports_match_the_golden_files(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: tuple[Path, str],
    run_cli: Callable[..., Result],
    golden: conftest.Golden,
    app: str,
) -> None:
    """The whole report (JSON and text) of each recorded case, as a golden scenario:
    `pytest --update-golden -k test_reports_match_the_golden_files` rewrites them."""
    path, commit = repo
    server = kube_apiserver(cluster_objects(commit))
    for fmt, name in (("json", "expected.json"), ("text", "expected.txt")):
        result = run(run_cli, server, path, app, "--server-dry-run", "-o", fmt)
        assert result.exit_code == ExitCode.DRIFT, result.stderr
        assert "127.0.0.1" not in result.stdout  # nothing of the test server's address
        shown = conftest.context_shown(
            result.stdout, repo_root=path, kubeconfig=server.kubeconfig_path
        )
        golden.check(GOLDEN / app / name, shown)


# ---------------------------------------------------------------------------- refusals


@pytest.mark.server_dry_run
def test_forbidden_patch_is_unknown_naming_the_verb(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: tuple[Path, str],
    run_cli: Callable[..., Result],
) -> None:
    """A user who may read everything but not patch: the resource is Unknown (never Synced),
    the note names the `patch` verb, the run exits 7 (incomplete)."""
    path, commit = repo
    reader = Identity(
        user="reader",
        token="reader-token-0123456789",
        groups=("system:authenticated",),
        rules=(AccessRule(verbs=("get", "list", "watch")),),
    )
    server = kube_apiserver(
        cluster_objects(commit),
        identities=[Identity("admin", "admin-token-0123456789", ("system:masters",)), reader],
    )
    result = run(run_cli, server, path, "ref-checkout-flags", "--server-dry-run", context="reader")
    assert result.exit_code == ExitCode.INCOMPLETE, result.stderr
    app = only_app(result)
    assert app["sync"]["status"] == "Unknown"
    resource = the_resource(app)
    assert resource["status"] == "Unknown"
    assert "403 Forbidden" in resource["reason"]
    assert "verb 'patch' on configmaps in namespace ssa-reference" in resource["reason"]
    (request,) = server.dry_runs
    assert request.status == 403


def test_server_dry_run_with_snapshot_is_a_usage_error(run_cli: Callable[..., Result]) -> None:
    result = run_cli(["app", "--snapshot", "live.yaml", "--repo-root", ".", "--server-dry-run"])
    assert result.exit_code == ExitCode.USAGE_ERROR
    assert "--server-dry-run: not allowed with argument --snapshot" in result.stderr


@pytest.mark.server_dry_run
def test_apps_not_on_server_side_diff_ask_nothing(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: tuple[Path, str],
    run_cli: Callable[..., Result],
) -> None:
    """ServerSideApply=true alone is Argo CD's structured-merge diff: no dry-run, and a note
    says --server-dry-run was not used and why."""
    path, commit = repo
    server = kube_apiserver(cluster_objects(commit, compare_options=None))
    result = run(run_cli, server, path, "ref-checkout-flags", "--server-dry-run")
    assert result.exit_code in (ExitCode.OK, ExitCode.DRIFT), result.stderr
    assert server.dry_runs == []
    (note,) = [n for n in only_app(result)["notes"] if "--server-dry-run" in n]
    assert "structured-merge" in note
    assert "not Server-Side Diff" in note


# ---------------------------------------------------------------------------- the layers


def test_the_replay_refuses_what_was_not_recorded() -> None:
    recordings = apiserver_dryrun.load_recordings()
    assert [r.name for r in recordings] == list(CASES)
    sent = read("01-configmap-dropped-keys-removed", "desired.yaml")
    live = read("01-configmap-dropped-keys-removed", "live-before.json")
    query = dict(apiserver_dryrun.RECORDED_QUERY)
    answer = apiserver_dryrun.replay(recordings, query, sent, live)
    assert answer == read("01-configmap-dropped-keys-removed", "dryrun-response.json")

    other = copy.deepcopy(sent)
    other["data"]["FLAG_NEW_CART"] = "off"
    with pytest.raises(APIError, match=r"desired\.yaml at /data/FLAG_NEW_CART"):
        apiserver_dryrun.replay(recordings, query, other, live)
    with pytest.raises(APIError, match="asked with force=false"):
        apiserver_dryrun.replay(recordings, {**query, "force": "false"}, sent, live)
    moved = copy.deepcopy(live)
    moved["metadata"]["resourceVersion"] = "1"
    with pytest.raises(APIError, match=r"not live-before\.json"):
        apiserver_dryrun.replay(recordings, query, sent, moved)


@pytest.mark.server_dry_run
def test_with_the_flag_only_dry_run_applies_are_added(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: tuple[Path, str],
    run_cli: Callable[..., Result],
) -> None:
    """--all with the flag: the same reads as without it (but discovery, cached by the first
    run), plus one dryRun=All apply per desired object of a Server-Side Diff app, and nothing
    else."""
    path, commit = repo
    server = kube_apiserver(cluster_objects(commit))
    base = [
        "--all",
        "--kubeconfig",
        str(server.kubeconfig_path),
        "--repo-root",
        str(path),
        "--no-entry-points",
        "-o",
        "json",
    ]
    without = run_cli(base)
    assert without.exit_code == ExitCode.DRIFT, without.stderr
    discovery = set(server.discovery_requests())
    assert {path.rstrip("/") for path in discovery} == {"/version", "/api", "/apis"}
    reads = sorted(
        (r.method, r.path, tuple(sorted(r.query.items())))
        for r in server.requests
        if r.path not in discovery
    )
    server.clear_requests()
    with_flag = run_cli([*base, "--server-dry-run"])
    assert with_flag.exit_code == ExitCode.DRIFT, with_flag.stderr
    assert server.discovery_requests() == []  # the first run's is in kubectl's cache
    dry_runs = server.dry_runs
    assert sorted(r.path for r in dry_runs) == [
        "/api/v1/namespaces/ssa-reference/configmaps/checkout-flags",
        "/api/v1/namespaces/ssa-reference/services/payments-api",
        "/apis/apps/v1/namespaces/ssa-reference/deployments/edge-proxy",
    ]
    for record in dry_runs:
        assert record.query == apiserver_dryrun.RECORDED_QUERY
        assert record.content_type == "application/apply-patch+yaml"
        assert record.status == 200
    others = sorted(
        (r.method, r.path, tuple(sorted(r.query.items())))
        for r in server.requests
        if not r.is_dry_run
    )
    assert others == reads
    assert {method for method, _path, _query in others} <= {"GET", "POST"}
    assert not server.write_violations


pytest_plugins = ["pytester"]


@pytest.mark.server_dry_run  # the inner session's dry-runs land in this process's registry too
def test_the_guard_fails_a_test_that_dry_runs_without_saying_so(
    pytester: pytest.Pytester,
) -> None:
    """End to end: an unmarked test that sends a dryRun=All apply errors at teardown; a marked
    one passes. (A PATCH that is not a dryRun=All apply is a write: tests/live/test_readonly.py.)"""
    pytester.makeconftest("from tests.conftest import _cluster_stays_read_only  # noqa: F401\n")
    pytester.makepyfile(
        test_inner=f"""
import sys
sys.path.insert(0, {str(conftest.ROOT)!r})
import httpx
import pytest
from tests.support.apiserver import serve

PATH = "/api/v1/namespaces/prod/configmaps/x"
APPLY = {{"Content-Type": "application/apply-patch+yaml"}}

def patch(query):
    with serve([]) as server, httpx.Client(
        base_url=server.url, verify=server.ssl_context(), headers=server.headers()
    ) as client:
        return client.patch(PATH, params=query, content=b"{{}}", headers=APPLY).status_code

def test_dry_run_unmarked():
    assert patch({{"dryRun": "All", "fieldManager": "m"}}) == 400

@pytest.mark.server_dry_run
def test_dry_run_marked():
    assert patch({{"dryRun": "All", "fieldManager": "m"}}) == 400
"""
    )
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-o", "markers=server_dry_run: allowed", "-W", "ignore"
    )
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_dry_run_unmarked*",
            "*sent server-side apply dry-runs without --server-dry-run: PATCH *dryRun=All*",
        ]
    )


# ---------------------------------------------------------------------------- failures


@pytest.mark.server_dry_run
def test_a_throttled_dry_run_is_retried(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: tuple[Path, str],
    run_cli: Callable[..., Result],
) -> None:
    """429 and 5xx are retried like the LISTs (a dry-run persists nothing: safe to repeat)."""
    path, commit = repo
    server = kube_apiserver(cluster_objects(commit))
    server.inject("PATCH", r"/configmaps/checkout-flags$", 429, retry_after=0)
    server.inject("PATCH", r"/configmaps/checkout-flags$", 503)
    result = run(run_cli, server, path, "ref-checkout-flags", "--server-dry-run")
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    assert [r.status for r in server.dry_runs] == [429, 503, 200]
    assert the_resource(only_app(result))["status"] == "OutOfSync"


@pytest.mark.server_dry_run
@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ({"status": 503, "times": None}, "503 Service Unavailable after retries"),
        ({"drop_connection": True, "times": None}, "connection failed"),
    ],
    ids=["5xx", "dropped"],
)
def test_a_dry_run_that_keeps_failing_is_unknown(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: tuple[Path, str],
    run_cli: Callable[..., Result],
    fault: dict[str, Any],
    reason: str,
) -> None:
    path, commit = repo
    server = kube_apiserver(cluster_objects(commit))
    server.inject("PATCH", r"/configmaps/checkout-flags$", **fault)
    result = run(run_cli, server, path, "ref-checkout-flags", "--server-dry-run")
    assert result.exit_code == ExitCode.INCOMPLETE, result.stderr
    resource = the_resource(only_app(result))
    assert resource["status"] == "Unknown"
    assert "cannot dry-run configmaps ssa-reference/checkout-flags" in resource["reason"]
    assert reason in resource["reason"]
    assert len(server.dry_runs) == 1 + transport.Config().retries


@pytest.mark.server_dry_run
def test_an_answer_the_server_refuses_is_unknown(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: tuple[Path, str],
    run_cli: Callable[..., Result],
) -> None:
    """The live object moved on since the recording: the loopback server has no answer for it
    (400, naming why), so the resource is Unknown with that reason, never Synced."""
    path, commit = repo
    objects = cluster_objects(commit)
    for obj in objects:
        if obj["kind"] == "ConfigMap":
            obj["metadata"]["resourceVersion"] = "999999"
    server = kube_apiserver(objects)
    result = run(run_cli, server, path, "ref-checkout-flags", "--server-dry-run")
    assert result.exit_code == ExitCode.INCOMPLETE, result.stderr
    resource = the_resource(only_app(result))
    assert resource["status"] == "Unknown"
    assert "400 Bad Request" in resource["reason"]
    assert "not live-before.json (resourceVersion '999999'" in resource["reason"]


class _Answers:
    """Stands in for cluster.Cluster in the gathering step: answers every dry-run with
    `answer` (a Secret with a marker value), as the API server would."""

    def __init__(self, answer: Obj) -> None:
        self.answer = answer
        self.discovery = discovery.Discovery(
            [discovery.Kind("", "v1", "Secret", "secrets", True, ("patch",))]
        )
        self.sent: list[Obj] = []
        self.version = {"gitVersion": "v1.33.5"}

    def dry_run_apply(self, objects: list[Obj]) -> list[Any]:
        self.sent.extend(objects)
        return [dryrun.DryRun(o, copy.deepcopy(self.answer), status=200) for o in objects]


class _Quiet:
    """A progress display that shows nothing (workflow.Progress)."""

    def __call__(self, message: str) -> None:
        pass

    def start(self, phase: str, total: int) -> None:
        pass

    def advance(self, item: str = "") -> None:
        pass


def test_secret_values_from_a_dry_run_are_fingerprinted(tmp_path: Path) -> None:
    from kubectl_gitdrift import application as argo_application
    from kubectl_gitdrift import model
    from kubectl_gitdrift.diagnose import tracking
    from kubectl_gitdrift.live import fingerprints
    from kubectl_gitdrift.sources import render as source_render

    marker = "s3cr3t-marker-value"
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "ssa-reference"},
        "stringData": {"password": marker},
    }
    answer = {  # what the server stores: stringData folded into data (base64 of the marker)
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": secret["metadata"],
        "data": {"password": "czNjcjN0LW1hcmtlci12YWx1ZQ=="},
    }
    app = argo_application.parse_application(
        application("ref-secret", "0" * 40, compare_options="ServerSideDiff=true")
    )
    manifest = model.Manifest(model.ObjectKey.of(secret), secret, None)
    rendered = source_render.Rendered(
        manifests=(manifest,), revision="0" * 40, source_path="x", tree=tmp_path
    )
    target = workflow.Target({}, "argocd/ref-secret", app=app, rendered=rendered)
    settings = model.Settings()
    kc = _Answers(answer)
    key = b"k" * 32
    live = {model.ObjectKey.of(secret): secret}
    gather._server_dry_runs(kc, [target], settings, live, [], key, _Quiet())

    (sent,) = kc.sent  # git's values go to the server as Argo CD sends them: folded into data
    assert "stringData" not in sent
    assert sent["data"] == {"password": "czNjcjN0LW1hcmtlci12YWx1ZQ=="}
    assert tracking.TRACKING_ID in sent["metadata"]["annotations"]
    assert target.dry_run is not None
    (predicted,) = target.dry_run.values()
    assert marker not in json.dumps(predicted)
    assert "czNjcjN0LW1hcmtlci12YWx1ZQ==" not in json.dumps(predicted)
    assert predicted == fingerprints.redact_secret(answer, key)


@pytest.mark.server_dry_run
def test_cluster_dry_run_apply_gives_the_servers_answer(
    kube_apiserver: ServerFactory,  # noqa: F811
) -> None:
    """The cluster layer alone: one PATCH per object, answers in order, the server's object
    verbatim (managedFields included: the webhook-mutation filter needs them)."""
    server = kube_apiserver([read(r, "live-before.json") for r in CASES])
    config = transport.Config(kubeconfig=str(server.kubeconfig_path), backoff=0.01)
    sent = [read(r, "desired.yaml") for r in CASES]
    with cluster.Cluster(config) as kc:
        answers = kc.dry_run_apply(sent)
    assert [a.error for a in answers] == ["", "", ""]
    for recording, answer in zip(CASES, answers, strict=True):
        assert answer.status == 200
        assert answer.sent is sent[list(CASES).index(recording)]
        assert answer.predicted == read(recording, "dryrun-response.json")
        assert answer.predicted is not None
        assert answer.predicted["metadata"]["managedFields"]
    assert len(server.dry_runs) == 3
    assert not server.write_violations


def test_the_applied_object_is_normalized_as_argo_cd_normalizes_it() -> None:
    """gitops-engine remarshals the config through its Go type and Normalizes it (no ignore
    rules) before the dry-run: what the server is asked to apply."""
    from kubectl_gitdrift import model
    from kubectl_gitdrift.compare import openapi, schema

    types = schema.Schema(openapi.load_builtin_definitions())
    deployment: Obj = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod", "creationTimestamp": None},
        "spec": {
            "replicas": 2.0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"creationTimestamp": None, "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "web:1", "env": []}]},
            },
        },
    }
    key = model.ObjectKey.of(deployment)
    body = gather._dry_run_body(model.Manifest(key, deployment, None), types, model.Settings())
    assert body == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {  # Go writes a zero metav1.Time as null: only the top one goes
                "metadata": {"creationTimestamp": None, "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "web:1"}]},
            },
        },
    }
    assert isinstance(body["spec"]["replicas"], int)
    assert deployment["metadata"]["creationTimestamp"] is None  # git's object is untouched
