"""The offline RBAC evaluator: plurals, wildcards, resourceNames, groups, aggregation; and that it
answers exactly as the loopback API server's SubjectAccessReview does on the same objects."""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx
import pytest

from kubectl_gitdrift import model
from kubectl_gitdrift.diagnose import rbac
from tests.support.apiserver import REFERENCE_DIR, load_objects, serve

SA = rbac.CONTROLLER
RBAC_V1 = "rbac.authorization.k8s.io/v1"


@pytest.mark.parametrize(
    ("kind", "group", "expected"),
    [
        ("Deployment", "apps", "deployments"),
        ("Endpoints", "", "endpoints"),
        ("Ingress", "networking.k8s.io", "ingresses"),
        ("NetworkPolicy", "networking.k8s.io", "networkpolicies"),
        ("StorageClass", "storage.k8s.io", "storageclasses"),
        ("ComponentStatus", "", "componentstatuses"),
        ("Gateway", "gateway.networking.k8s.io", "gateways"),
    ],
)
def test_plural(kind: str, group: str, expected: str) -> None:
    assert rbac.plural(group, kind) == expected


def test_plural_from_discovery_or_crd() -> None:
    crd = {
        "kind": "CustomResourceDefinition",
        "spec": {"group": "example.com", "names": {"kind": "Octopus", "plural": "octopodes"}},
    }
    known = rbac.plurals_from([crd])
    assert rbac.plural("example.com", "Octopus", known) == "octopodes"


def test_service_account_groups() -> None:
    assert rbac.subject(SA).groups == (
        "system:serviceaccounts",
        "system:serviceaccounts:argocd",
        "system:authenticated",
    )
    assert rbac.service_account_user("argocd:my-controller") == (
        "system:serviceaccount:argocd:my-controller"
    )
    with pytest.raises(ValueError, match="NAMESPACE:NAME"):
        rbac.service_account_user("nope")


def _role(
    name: str,
    rules: list[dict[str, Any]],
    labels: dict[str, str] | None = None,
    agg: dict[str, str] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": RBAC_V1,
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels or {}},
        "rules": rules,
    }
    if agg is not None:
        body["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": agg}]}
    return body


def _binding(role: str, subject: dict[str, str], namespace: str = "") -> dict[str, Any]:
    meta = {"name": f"bind-{role}"} | ({"namespace": namespace} if namespace else {})
    return {
        "apiVersion": RBAC_V1,
        "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [subject],
    }


SA_SUBJECT = {
    "kind": "ServiceAccount",
    "name": "argocd-application-controller",
    "namespace": "argocd",
}


def test_aggregated_role_with_empty_stored_rules_gets_the_union() -> None:
    objects = [
        _role("manager", [], agg={"aggregate-to-prod": "true"}),
        _role(
            "core",
            [{"apiGroups": [""], "resources": ["services"], "verbs": ["*"]}],
            labels={"aggregate-to-prod": "true"},
        ),
        _role(
            "apps-read",
            [{"apiGroups": ["apps"], "resources": ["*"], "verbs": ["get"]}],
            labels={"aggregate-to-prod": "true"},
        ),
        _role("other", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
        _binding("manager", SA_SUBJECT, namespace="prod"),
    ]
    evaluator = rbac.Evaluator(objects)
    who = rbac.subject(SA)

    def ask(verb: str, group: str, res: str, ns: str = "prod") -> bool:
        return evaluator.authorize(who, rbac.Question(verb, group, res, ns)).allowed

    assert ask("patch", "", "services")
    assert ask("get", "apps", "deployments")
    assert not ask("patch", "apps", "deployments")
    assert not ask("patch", "", "services", "staging")
    answer = evaluator.authorize(who, rbac.Question("delete", "", "services", "prod"))
    assert answer.reason == (
        'RBAC: allowed by RoleBinding "bind-manager/prod" of ClusterRole "manager" to '
        'ServiceAccount "argocd-application-controller/argocd"'
    )


def test_resource_names_subresources_and_groups() -> None:
    objects = [
        _role(
            "named",
            [
                {
                    "apiGroups": ["apps"],
                    "resources": ["deployments", "*/scale"],
                    "verbs": ["patch"],
                    "resourceNames": ["guestbook"],
                }
            ],
        ),
        _binding("named", {"kind": "Group", "name": "system:serviceaccounts:argocd"}, "prod"),
    ]
    evaluator = rbac.Evaluator(objects)
    who = rbac.subject(SA)
    q = rbac.Question("patch", "apps", "deployments", "prod")
    assert not evaluator.authorize(who, q).allowed  # namespace-wide: resourceNames do not cover it
    assert evaluator.authorize(
        who, rbac.Question("patch", "apps", "deployments", "prod", "guestbook")
    ).allowed
    assert evaluator.authorize(
        who, rbac.Question("patch", "apps", "statefulsets", "prod", "guestbook", "scale")
    ).allowed
    assert not evaluator.authorize(rbac.subject("jane"), q).allowed


def test_questions_cover_every_kind_and_verb() -> None:
    keys = [
        model.ObjectKey("apps", "Deployment", "prod", "a"),
        model.ObjectKey("apps", "Deployment", "prod", "b"),
        model.ObjectKey("", "Namespace", "", "prod"),
    ]
    questions = rbac.questions(keys)
    assert len(questions) == 2 * len(rbac.VERBS)
    assert rbac.Question("patch", "apps", "deployments", "prod") in questions
    assert rbac.Question("create", "", "namespaces", "") in questions


# --------------------------------------------------------------------------- against the server


def _recorded_rbac() -> list[dict[str, Any]]:
    binding = _binding("argocd-orders-manager", SA_SUBJECT, namespace="orders")
    group_binding = _binding("view", {"kind": "Group", "name": "system:serviceaccounts"}, "orders")
    group_binding["metadata"]["name"] = "all-sa-view"
    cluster = _binding("argocd-orders-core", {"kind": "User", "name": "jane.sre@example.com"})
    return [
        *load_objects(REFERENCE_DIR / "list-04-clusterroles.json"),
        binding,
        group_binding,
        cluster,
    ]


@pytest.mark.cluster
def test_offline_answers_match_subject_access_review() -> None:
    objects = _recorded_rbac()
    evaluator = rbac.Evaluator(objects)
    users = [
        rbac.subject(SA),
        rbac.subject("jane.sre@example.com", ["sre", "system:authenticated"]),
    ]
    resources = [
        ("apps", "deployments"),
        ("apps", "statefulsets"),
        ("", "services"),
        ("", "configmaps"),
        ("", "secrets"),
        ("rbac.authorization.k8s.io", "roles"),
    ]
    compared = 0
    with (
        serve(objects) as srv,
        httpx.Client(base_url=srv.url, verify=srv.ssl_context(), headers=srv.headers()) as client,
    ):
        for who, (group, resource), verb, ns in itertools.product(
            users, resources, rbac.VERBS, ("orders", "billing", "")
        ):
            question = rbac.Question(verb, group, resource, ns)
            response = client.post(
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                json={
                    "apiVersion": "authorization.k8s.io/v1",
                    "kind": "SubjectAccessReview",
                    "spec": {
                        "user": who.user,
                        "groups": list(who.groups),
                        "resourceAttributes": question.attributes(),
                    },
                },
            )
            assert response.status_code == 201
            status = response.json()["status"]
            mine = evaluator.authorize(who, question)
            assert (mine.allowed, mine.reason) == (status["allowed"], status.get("reason", "")), (
                json.dumps(question.attributes())
            )
            compared += 1
    assert compared == 2 * 6 * 7 * 3
    # the recorded aggregated role allows deployments through its aggregation
    allowed = evaluator.authorize(
        rbac.subject(SA), rbac.Question("patch", "apps", "deployments", "orders")
    )
    assert allowed.allowed
    assert not evaluator.authorize(
        rbac.subject(SA), rbac.Question("patch", "apps", "statefulsets", "orders")
    ).allowed


@pytest.mark.cluster
def test_cluster_review_asks_subject_access_review_through_kr8s() -> None:
    """The live path: cluster.Cluster.review POSTs one SubjectAccessReview per question through
    kr8s and agrees with the offline evaluator; nothing else is written."""
    from kubectl_gitdrift.live import cluster, transport

    objects = _recorded_rbac()
    evaluator = rbac.Evaluator(objects)
    who = rbac.subject(SA)
    questions = [
        rbac.Question(verb, group, resource, "orders")
        for verb in ("get", "patch", "delete")
        for group, resource in (("apps", "deployments"), ("apps", "statefulsets"), ("", "secrets"))
    ]
    with serve(objects) as srv:
        config = transport.Config(kubeconfig=str(srv.kubeconfig_path), context=srv.context)
        with cluster.Cluster(config) as kc:
            reviews = kc.review(who.user, who.groups, questions)
        assert reviews.failure == ""
        answers = [reviews.answer(q) for q in questions]
        posts = [r for r in srv.requests if r.method == "POST"]
        assert len(posts) == len(questions)
        assert all(r.resource == "subjectaccessreviews" for r in posts)
        assert srv.write_violations == []
    for question, answer in zip(questions, answers, strict=True):
        assert answer is not None
        assert answer.how == "SubjectAccessReview"
        mine = evaluator.authorize(who, question)
        assert (answer.allowed, answer.reason) == (mine.allowed, mine.reason), question
    assert any(a is not None and a.allowed for a in answers)
    assert any(a is not None and not a.allowed for a in answers)
