"""The Argo CD controller's can-i, live: asked of the API server by SubjectAccessReview (as
`kubectl auth can-i VERB RESOURCE -n NS --as system:serviceaccount:argocd:...` is answered),
beside the LISTs, with no RBAC object listed; evaluated over the RBAC objects, listed then, only
when the server will not answer the reviews. The request's shape is the real server's
(testdata/apiserver/sar-01-allowed.request.json)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubectl_gitdrift.errors import ExitCode
from tests.conftest import TESTDATA, Golden, Result, Runner, context_shown
from tests.live.test_live import incident_objects, live_args
from tests.support.apiserver import (
    AccessRule,
    Attributes,
    Decision,
    Identity,
    KubeAPIServer,
    ServerFactory,
    kube_apiserver,  # noqa: F401 - the fixture
)

pytestmark = [pytest.mark.cluster]

Obj = dict[str, Any]
SA = "system:serviceaccount:argocd:argocd-application-controller"
RBAC_GROUP = "rbac.authorization.k8s.io"
RECORDED = json.loads((TESTDATA / "apiserver" / "sar-01-allowed.request.json").read_text())
GOLDEN = TESTDATA / "live" / "can-i"
VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")


@pytest.fixture
def run_cli(run_cli: Runner) -> Runner:
    return run_cli.tuned(backoff=0.01, max_backoff=0.05)


@pytest.fixture
def repo(build_repo) -> Path:  # type: ignore[no-untyped-def]
    return Path(build_repo(TESTDATA / "incident" / "repo-src"))


def prod_rbac() -> list[Obj]:
    """The controller bound in prod to a ClusterRole (aggregated, stored as the aggregation
    controller fills it) that may write Services but only read Deployments; no cluster-wide
    grant (the incident's objects, without Argo CD's own ClusterRole)."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": "argocd-prod-manager",
            "labels": {"app.kubernetes.io/part-of": "argocd"},
        },
        "aggregationRule": {
            "clusterRoleSelectors": [
                {"matchLabels": {"gitdrift.example.com/aggregate-to-prod": "true"}}
            ]
        },
        "rules": [
            {"apiGroups": [""], "resources": ["services", "configmaps"], "verbs": list(VERBS)},
            {
                "apiGroups": ["apps"],
                "resources": ["deployments"],
                "verbs": ["get", "list", "watch"],
            },
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "argocd-application-controller", "namespace": "prod"},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "argocd-prod-manager"},
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": "argocd-application-controller",
                "namespace": "argocd",
            }
        ],
    }
    return [role, binding]


def cluster(extra: list[Obj]) -> list[Obj]:
    return [o for o in incident_objects() if RBAC_GROUP not in o["apiVersion"]] + extra


READS = ("applications", "appprojects", "configmaps", "services", "deployments", "events",
         "horizontalpodautoscalers")  # fmt: skip
RBAC_READS = ("roles", "rolebindings", "clusterroles", "clusterrolebindings")


def reader(*, reviews: bool, rbac: bool) -> Identity:
    """A user who may read the app's kinds; with `reviews`, create SubjectAccessReviews; with
    `rbac`, list the RBAC objects."""
    rules = [AccessRule(verbs=("get", "list"), resources=READS + (RBAC_READS if rbac else ()))]
    if reviews:
        rules.append(
            AccessRule(
                verbs=("create",),
                resources=("subjectaccessreviews",),
                api_groups=("authorization.k8s.io",),
            )
        )
    return Identity(user="reader", token="reader-token", rules=tuple(rules))


def only_app(result: Result) -> Obj:
    (app,) = json.loads(result.stdout)["applications"]
    return dict(app)


def forbidden(app: Obj) -> Obj:
    (finding,) = [f for f in app["findings"] if f["code"] == "controller-forbidden"]
    return dict(finding)


def rbac_lists(server: KubeAPIServer) -> list[str]:
    return [r.resource for r in server.requests if r.api_group == RBAC_GROUP]


def test_can_i_is_answered_by_subject_access_review(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,
    run_cli: Callable[..., Result],
    golden: Golden,
) -> None:
    """The user may not list RBAC objects: the server answers the controller's can-i, one
    review per verb and kind the app renders, asked as the real server was asked (user and the
    service account's groups), while the Deployments' LIST is still out; none is listed."""
    server = kube_apiserver(cluster(prod_rbac()), identities=[reader(reviews=True, rbac=False)])
    server.inject(path_regex=r"/namespaces/prod/deployments$", delay=0.5, times=1)
    result = run_cli(live_args(server, repo, "-o", "json"))
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    assert rbac_lists(server) == []

    specs = server.reviews
    recorded = RECORDED["spec"]
    for spec in specs:
        assert list(spec) == list(recorded)  # user, groups, resourceAttributes
        assert (spec["user"], spec["groups"]) == (recorded["user"], recorded["groups"])
        assert set(spec["resourceAttributes"]) <= set(recorded["resourceAttributes"])
    asked = sorted(
        (a["verb"], a["group"], a["resource"], a["namespace"])
        for a in (s["resourceAttributes"] for s in specs)
    )
    assert asked == sorted(
        (verb, group, resource, "prod")
        for verb in VERBS
        for group, resource in (("apps", "deployments"), ("", "services"))
    ), "each question once"
    paths = [r.path for r in server.requests]
    deployments = paths.index("/apis/apps/v1/namespaces/prod/deployments")
    assert paths.index("/apis/authorization.k8s.io/v1/subjectaccessreviews") < deployments

    app = only_app(result)
    finding = forbidden(app)
    assert finding["severity"] == "error"
    assert finding["evidence"]["checkedBy"] == "SubjectAccessReview"
    assert finding["evidence"]["deniedVerbs"] == ["create", "delete", "patch", "update"]
    assert finding["evidence"]["neededNow"] == ["patch"]
    reason = (
        'RBAC: allowed by RoleBinding "argocd-application-controller/prod" of ClusterRole '
        '"argocd-prod-manager" to ServiceAccount "argocd-application-controller/argocd"'
    )
    assert {a["reason"] for a in finding["evidence"]["allowed"]} == {reason}
    assert "controller permissions: SubjectAccessReview" in app["notes"]
    assert not [n for n in app["notes"] if n.startswith("not checked")]
    assert not server.write_violations

    text = run_cli(live_args(server, repo))
    assert text.exit_code == ExitCode.DRIFT
    shown = context_shown(text.stdout, repo_root=repo, kubeconfig=server.kubeconfig_path)
    golden.check(GOLDEN / "expected.txt", shown)


def test_a_webhook_authorizer_decides_over_the_rbac_objects(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,
    run_cli: Callable[..., Result],
) -> None:
    """The RBAC objects (Argo CD's ClusterRole) allow the controller everything, but a webhook
    authorizer before RBAC denies it Deployments: the report has the server's answer, which no
    evaluation of RBAC objects could give."""
    server = kube_apiserver(incident_objects(), identities=[reader(reviews=True, rbac=True)])

    def webhook(attrs: Attributes) -> Decision | None:
        if attrs.resource == "deployments" and attrs.verb in ("patch", "update"):
            return Decision(False)
        return None

    server.webhook = webhook
    app = only_app(run_cli(live_args(server, repo, "-o", "json")))
    finding = forbidden(app)
    assert finding["evidence"]["deniedVerbs"] == ["patch", "update"]
    assert finding["evidence"]["checkedBy"] == "SubjectAccessReview"
    assert rbac_lists(server) == []


def test_forbidden_review_falls_back_to_the_rbac_objects(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,
    run_cli: Callable[..., Result],
) -> None:
    """The user may not create SubjectAccessReviews (403): the RBAC objects are listed then and
    evaluated, with the same verdict, and the notes say so."""
    objects = cluster(prod_rbac())
    server = kube_apiserver(objects, identities=[reader(reviews=False, rbac=True)])
    result = run_cli(live_args(server, repo, "-o", "json"))
    assert result.exit_code == ExitCode.DRIFT, result.stderr

    reviews = [r for r in server.requests if r.resource == "subjectaccessreviews"]
    assert reviews
    assert {r.status for r in reviews} == {403}
    assert sorted(rbac_lists(server)) == [
        "clusterrolebindings",
        "clusterroles",
        "rolebindings",
        "roles",
    ], "each RBAC kind once"
    assert {r.namespace for r in server.requests if r.resource in ("roles", "rolebindings")} == {
        "prod"
    }
    paths = [r.path for r in server.requests]
    first_review = paths.index("/apis/authorization.k8s.io/v1/subjectaccessreviews")
    assert paths.index("/apis/rbac.authorization.k8s.io/v1/clusterroles") > first_review

    app = only_app(result)
    source = (
        "offline RBAC over 1 clusterRoles, 0 roles, 0 clusterRoleBindings, 1 roleBindings "
        "(SubjectAccessReview forbidden)"
    )
    assert f"controller permissions: {source}" in app["notes"]
    finding = forbidden(app)
    assert finding["evidence"]["checkedBy"] == source
    assert finding["evidence"]["deniedVerbs"] == ["create", "delete", "patch", "update"]


def test_neither_reviews_nor_rbac_objects_is_not_checked(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,
    run_cli: Callable[..., Result],
) -> None:
    """No review and no RBAC object may be read: the check is missing, and the report says
    so (incomplete, exit 7), never that the controller may sync."""
    server = kube_apiserver(cluster(prod_rbac()), identities=[reader(reviews=False, rbac=False)])
    result = run_cli(live_args(server, repo, "-o", "json"))
    assert result.exit_code == ExitCode.INCOMPLETE, result.stderr
    app = only_app(result)
    assert not [f for f in app["findings"] if f["code"] == "controller-forbidden"]
    assert any("(SubjectAccessReview forbidden), so whether" in n for n in app["notes"])
    assert any(
        n.startswith("not checked: cannot list clusterroles.rbac.authorization.k8s.io")
        for n in app["notes"]
    )


def test_snapshot_export_lists_the_rbac_objects_and_asks_nothing(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,
    run_cli: Callable[..., Result],
    tmp_path: Path,
) -> None:
    """Offline mode has no server to ask: an export holds the RBAC objects, and replayed, it
    gives the verdict the server gave live."""
    server = kube_apiserver(cluster(prod_rbac()), identities=[reader(reviews=True, rbac=True)])
    live = only_app(run_cli(live_args(server, repo, "-o", "json")))
    server.clear_requests()
    export = tmp_path / "export.yaml"
    snap = run_cli(
        ["snapshot", "guestbook", "-o", str(export), "--kubeconfig", str(server.kubeconfig_path),
         "--repo-root", str(repo)]
    )  # fmt: skip
    assert snap.exit_code == ExitCode.OK, snap.stderr
    assert not [r for r in server.requests if r.resource == "subjectaccessreviews"]
    assert "clusterroles" in rbac_lists(server)
    replay = run_cli(
        ["guestbook", "--snapshot", str(export), "--repo-root", str(repo), "-o", "json",
         "--no-entry-points"]
    )  # fmt: skip
    offline = only_app(replay)
    assert (
        forbidden(offline)["evidence"]["deniedVerbs"]
        == (forbidden(live)["evidence"]["deniedVerbs"])
    )
    assert forbidden(offline)["evidence"]["checkedBy"].startswith("offline RBAC over ")
