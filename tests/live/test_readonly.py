"""Read-only against clusters (DESIGN.md §6): get/list/watch and SubjectAccessReview create,
nothing else.

tests/conftest.py wraps EVERY test in `_cluster_stays_read_only`: a loopback API server that saw
a write while the test ran fails it, however the server was started (the `kube_apiserver`
fixture, `serve()`, a module-scoped server). These tests prove that guard catches a write, and
that every command gitdrift has stays within the allowed verbs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import yaml

from kubectl_gitdrift.errors import ExitCode
from tests import conftest
from tests.conftest import FAST_RETRIES, ROOT, TESTDATA, Result, Runner
from tests.support.apiserver import (
    ServerFactory,
    kube_apiserver,  # noqa: F401 - the fixture
)
from tests.support.apiserver import server as apiserver

pytestmark = [
    pytest.mark.cluster,
]

INCIDENT = TESTDATA / "incident"
ALLOWED_VERBS = {"get", "list", "watch"}
SAR = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


def incident_objects() -> list[dict]:  # type: ignore[type-arg]
    return list(yaml.safe_load((INCIDENT / "snapshot.yaml").read_text())["items"])


@pytest.fixture
def run_cli(run_cli: Runner) -> Runner:
    """The CLI with short backoffs: a retried request waits milliseconds."""
    return run_cli.tuned(**FAST_RETRIES)


@pytest.mark.cluster_writes
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/v1/namespaces/prod/configmaps"),
        ("PATCH", "/apis/apps/v1/namespaces/prod/deployments/guestbook"),
        ("PUT", "/apis/apps/v1/namespaces/prod/deployments/guestbook"),
        ("DELETE", "/api/v1/namespaces/prod/services/guestbook"),
        ("PATCH", "/apis/apps/v1/namespaces/prod/deployments/guestbook/scale"),
        ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"),
    ],
)
def test_the_guard_catches_a_raw_write(
    kube_apiserver: ServerFactory,  # noqa: F811
    method: str,
    path: str,
) -> None:
    server = kube_apiserver(incident_objects(), expect_writes=True)
    before = conftest.writes_so_far()
    conftest.check_read_only(before, allowed=False)  # nothing yet
    with httpx.Client(
        base_url=server.url, verify=server.ssl_context(), headers=server.headers(), timeout=5
    ) as client:
        response = client.request(
            method,
            path,
            content=b'{"spec":{"replicas":1}}',
            headers={"Content-Type": "application/merge-patch+json"},
        )
    assert response.status_code == 405  # refused ...
    assert [(r.method, r.path) for r in server.write_violations] == [(method, path)]  # ... recorded
    server.clear_requests()  # forgetting the log does not hide it from the guard
    assert server.write_violations == []
    with pytest.raises(pytest.fail.Exception, match=f"tried to write to the cluster: {method} "):
        conftest.check_read_only(before, allowed=False)
    conftest.check_read_only(before, allowed=True)  # what @pytest.mark.cluster_writes does


def test_the_guard_lets_subject_access_reviews_through(
    kube_apiserver: ServerFactory,  # noqa: F811
) -> None:
    server = kube_apiserver(incident_objects())
    before = conftest.writes_so_far()
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "system:serviceaccount:argocd:argocd-application-controller",
            "resourceAttributes": {"verb": "patch", "group": "apps", "resource": "deployments"},
        },
    }
    with httpx.Client(
        base_url=server.url, verify=server.ssl_context(), headers=server.headers(), timeout=5
    ) as client:
        assert client.post(SAR, json=review).status_code == 201
    conftest.check_read_only(before, allowed=False)
    assert server.write_attempts == []


pytest_plugins = ["pytester"]


@pytest.mark.cluster_writes  # the inner session's write lands in this process's registry too
def test_the_autouse_guard_fails_a_test_that_writes(pytester: pytest.Pytester) -> None:
    """End to end: a test that writes through a plain `serve()` (no fixture) errors at teardown."""
    pytester.makeconftest("from tests.conftest import _cluster_stays_read_only  # noqa: F401\n")
    pytester.makepyfile(
        test_inner=f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
import httpx
import pytest
from tests.support.apiserver import serve

def test_reads_only():
    with serve([]) as server, httpx.Client(
        base_url=server.url, verify=server.ssl_context(), headers=server.headers()
    ) as client:
        assert client.get("/api/v1/namespaces").status_code == 200

def test_writes():
    with serve([]) as server, httpx.Client(
        base_url=server.url, verify=server.ssl_context(), headers=server.headers()
    ) as client:
        assert client.delete("/api/v1/namespaces/prod").status_code == 405

@pytest.mark.cluster_writes
def test_writes_on_purpose():
    with serve([]) as server, httpx.Client(
        base_url=server.url, verify=server.ssl_context(), headers=server.headers()
    ) as client:
        assert client.delete("/api/v1/namespaces/prod").status_code == 405
"""
    )
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-o", "markers=cluster_writes: allowed", "-W", "ignore"
    )
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        ["*ERROR at teardown of test_writes*", "*tried to write to the cluster: DELETE*"]
    )


def test_no_live_test_opts_out_of_the_guard() -> None:
    """Only the fixture's own tests and this file may write; every live test runs guarded."""
    allowed = {"test_apiserver.py", "test_readonly.py"}
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if path.name not in allowed:
            assert "cluster_writes" not in text, f"{path.name} opts out of the read-only guard"
            assert "expect_writes=True" not in text, f"{path.name} expects cluster writes"


def _check_requests(server: apiserver.KubeAPIServer) -> None:
    assert server.requests, "nothing was asked"
    for record in server.requests:
        if record.method == "POST":
            assert record.path == SAR, f"POST {record.path}"
            continue
        assert record.method == "GET", f"{record.method} {record.path}"
        if record.resource:
            assert record.verb in ALLOWED_VERBS, f"{record.verb} {record.path}"


def test_every_command_only_reads(
    kube_apiserver: ServerFactory,  # noqa: F811
    build_repo: Callable[[Path], Path],
    run_cli: Callable[..., Result],
    tmp_path: Path,
) -> None:
    server = kube_apiserver(incident_objects())
    repo = str(build_repo(INCIDENT / "repo-src"))
    cluster = ["--kubeconfig", str(server.kubeconfig_path), "--no-entry-points"]
    runs = [
        ["guestbook", *cluster, "--repo-root", repo],
        ["guestbook", *cluster, "--repo-root", repo, "-o", "json", "--show-suppressed"],
        ["guestbook", *cluster, "--repo-root", repo, "--write-patch", str(tmp_path / "p.diff")],
        ["--all", *cluster, "--repo-root", repo, "-o", "markdown"],
    ]
    for args in runs:
        result = run_cli(args)
        assert result.exit_code == ExitCode.DRIFT, result.stderr
    snap = run_cli(
        ["snapshot", "--all", "-o", str(tmp_path / "s.yaml"), *cluster[:2], "--repo-root", repo]
    )
    assert snap.exit_code == ExitCode.OK, snap.stderr
    _check_requests(server)
    assert server.write_attempts == []
