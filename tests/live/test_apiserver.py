"""The loopback API server fixture, driven by real kr8s, raw httpx and (if present) kubectl.

Bodies are compared with the recordings from a real kube-apiserver v1.33.5
(``testdata/apiserver``) wherever one exists.
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import kr8s
import pytest
import yaml

from tests.support.apiserver import (
    REFERENCE_DIR,
    AccessRule,
    Identity,
    KubeAPIServer,
    ServerFactory,
    default_identities,
    load_objects,
    serve,
    server_factory,
)

pytestmark = [
    pytest.mark.cluster,
]

Obj = dict[str, Any]
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def ref(name: str) -> Any:
    """A recording from the real API server."""
    return json.loads((REFERENCE_DIR / name).read_text())


def configmap(namespace: str, name: str, labels: dict[str, str] | None = None) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": name}}


WIDGET_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "shortNames": ["wd"],
        },
        "versions": [
            {"name": "v1", "served": True, "storage": True, "subresources": {"status": {}}},
        ],
    },
}

SELECTOR_CMS = [
    configmap("sel", "a", {"app": "web", "tier": "front", "env": "prod"}),
    configmap("sel", "b", {"app": "web", "tier": "back"}),
    configmap("sel", "c", {"app": "db", "tier": "back", "env": "dev"}),
    configmap("sel", "d", {}),
]


def cluster_objects() -> list[Obj]:
    objects: list[Obj] = []
    for name in (
        "list-01-deployments-labelselector.json",
        "list-02-deployments-limit2-page1.json",
        "list-03-deployments-limit2-page2.json",
        "incident-01-deployment-after-argocd-apply.json",
        "incident-06-secret-applied-with-stringdata.json",
        "list-04-clusterroles.json",
        "list-05-applications.json",
    ):
        objects += load_objects(REFERENCE_DIR / name)
    objects += SELECTOR_CMS
    objects += [configmap("bulk", f"cm-{i:03d}") for i in range(130)]
    objects += [configmap("prod", "guestbook-config")]
    objects += [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}}]
    objects += [
        WIDGET_CRD,
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "prod"},
            "spec": {"size": 3},
        },
    ]
    return objects


READER = Identity(
    user="reader",
    token="reader-token",
    rules=(AccessRule(verbs=("get", "list"), resources=("configmaps",), namespaces=("prod",)),),
)


@pytest.fixture
def kube_apiserver() -> Iterator[ServerFactory]:
    """The same as ``tests.support.apiserver.kube_apiserver`` (a conftest can import it as is)."""
    with server_factory() as start:
        yield start


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    with serve(cluster_objects(), identities=[*default_identities(), READER]) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _fresh_log(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test starts with an empty log and no faults on the shared server."""
    if "server" not in request.fixturenames:
        yield
        return
    srv: KubeAPIServer = request.getfixturevalue("server")
    srv.clear_faults()
    srv.clear_requests()
    yield
    srv.clear_faults()


@pytest.fixture(scope="module")
def http(server: KubeAPIServer) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=server.url, verify=server.ssl_context(), headers=server.headers(), timeout=5
    ) as client:
        yield client


@pytest.fixture(scope="module")
def api(server: KubeAPIServer) -> kr8s.Api:
    return kr8s.api(kubeconfig=str(server.kubeconfig_path), context=server.context)


# ---------------------------------------------------------------------------- lifecycle, config
def test_starts_fast_serves_and_stops_cleanly() -> None:
    began = time.monotonic()
    with serve([configmap("x", "y")]) as srv:
        elapsed = time.monotonic() - began
        port = srv.port
        with httpx.Client(verify=srv.ssl_context(), headers=srv.headers()) as client:
            assert client.get(f"{srv.url}/version").status_code == 200
        kubeconfig = srv.kubeconfig_path
        assert kubeconfig.is_file()
    assert elapsed < 0.5
    assert not kubeconfig.exists()
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port)):
        pass


def test_kubeconfig_has_ca_token_users_and_contexts(server: KubeAPIServer) -> None:
    config = yaml.safe_load(server.kubeconfig_path.read_text())
    (cluster,) = config["clusters"]
    assert cluster["cluster"]["server"] == server.url
    ca = base64.b64decode(cluster["cluster"]["certificate-authority-data"])
    assert ca == server.ca_path.read_bytes()
    assert ca.startswith(b"-----BEGIN CERTIFICATE-----")
    users = {u["name"]: u["user"]["token"] for u in config["users"]}
    assert users == {
        "admin": server.token("admin"),
        "dev": server.token("dev"),
        "reader": "reader-token",
        "unauthorized": server.token("unauthorized"),
    }
    assert {c["name"] for c in config["contexts"]} == set(users)
    assert config["current-context"] == server.context == "admin"


# ---------------------------------------------------------------------------- discovery
def test_version_via_kr8s_and_raw(server: KubeAPIServer, api: kr8s.Api, http: httpx.Client) -> None:
    assert api.version() == ref("discovery-01-version.json")
    response = http.get("/version")
    assert response.json() == ref("discovery-01-version.json")
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-cache, private"
    assert "audit-id" in response.headers


def test_kr8s_api_resources_uses_unaggregated_discovery(
    server: KubeAPIServer, api: kr8s.Api
) -> None:
    resources = api.api_resources()
    by_key = {(r["version"], r["name"]): r for r in resources}
    assert by_key[("apps/v1", "deployments")]["shortNames"] == ["deploy"]
    assert by_key[("argoproj.io/v1alpha1", "applications")]["namespaced"] is True
    assert by_key[("example.com/v1", "widgets")]["kind"] == "Widget"  # from the store's CRD
    assert by_key[("v1", "pods")]["kind"] == "Pod"
    assert not any("/" in r["name"] for r in resources)  # kr8s drops subresources
    paths = [r.path.rstrip("/") for r in server.requests]
    assert paths[:3] == ["/api", "/api/v1", "/apis"]
    assert "/apis/autoscaling/v2" in paths  # derived from the aggregated recording
    assert all(AGGREGATED not in r.accept for r in server.requests)


def test_unaggregated_discovery_matches_recordings(http: httpx.Client) -> None:
    recorded = "v1.36/discovery/"
    assert http.get("/api").json() == ref(recorded + "api.json")
    assert http.get("/api/v1").json() == ref(recorded + "api_v1.json")
    assert http.get("/apis/apps/v1").json() == ref(recorded + "apis_apps_v1.json")
    assert http.get("/apis/argoproj.io/v1alpha1").json() == ref(
        recorded + "apis_argoproj_io_v1alpha1.json"
    )
    groups = http.get("/apis").json()["groups"]
    assert groups[:-1] == ref(recorded + "apis.json")["groups"]
    assert groups[-1] == {
        "name": "example.com",
        "versions": [{"groupVersion": "example.com/v1", "version": "v1"}],
        "preferredVersion": {"groupVersion": "example.com/v1", "version": "v1"},
    }
    for group in groups[:-1]:  # every recorded group-version, as the server sent it
        for entry in group["versions"]:
            name = "apis_" + entry["groupVersion"].replace(".", "_").replace("/", "_")
            got = http.get(f"/apis/{entry['groupVersion']}").json()
            assert got == ref(f"{recorded}{name}.json"), entry
    widgets = http.get("/apis/example.com/v1").json()["resources"]
    assert [r["name"] for r in widgets] == ["widgets", "widgets/status"]


def test_aggregated_discovery_when_asked(http: httpx.Client) -> None:
    accept = f"{AGGREGATED},application/json"
    response = http.get("/apis", headers={"Accept": accept})
    assert response.headers["content-type"] == AGGREGATED
    assert response.headers["cache-control"] == "public"
    assert response.headers["etag"].startswith('"')
    body = response.json()
    recorded = ref("v1.36/discovery/aggregated-apis.json")
    assert len(recorded["items"]) == 21
    assert sum(len(i["versions"]) for i in recorded["items"]) == 22
    assert body["items"][:-1] == recorded["items"]
    extra = body["items"][-1]
    assert extra["metadata"]["name"] == "example.com"
    (widget,) = extra["versions"][0]["resources"]
    assert widget["responseKind"] == {"group": "example.com", "version": "v1", "kind": "Widget"}
    core = http.get("/api", headers={"Accept": accept}).json()
    assert core == ref("v1.36/discovery/aggregated-api.json")
    resources = core["items"][0]["versions"][0]["resources"]
    pods = next(r for r in resources if r["resource"] == "pods")
    assert {s["subresource"] for s in pods["subresources"]} >= {"status", "log", "exec"}


def test_aggregated_discovery_only_at_the_exact_path(
    server: KubeAPIServer, http: httpx.Client
) -> None:
    """`/apis/` is kube-aggregator's plain APIGroupList handler, as on a real server; a
    server without aggregated discovery answers the plain documents whatever is asked."""
    accept = f"{AGGREGATED},application/json"
    slash = http.get("/apis/", headers={"Accept": accept})
    assert slash.headers["content-type"] == "application/json"
    assert slash.json()["kind"] == "APIGroupList"
    server.aggregated_discovery = False
    try:
        for path, kind in (("/api", "APIVersions"), ("/apis", "APIGroupList")):
            plain = http.get(path, headers={"Accept": accept})
            assert plain.headers["content-type"] == "application/json"
            assert plain.json()["kind"] == kind
    finally:
        server.aggregated_discovery = True


# ---------------------------------------------------------------------------- LIST / GET
def test_list_namespaced_with_kr8s_is_one_list(server: KubeAPIServer, api: kr8s.Api) -> None:
    api.api_resources()  # warm kr8s's discovery cache
    server.clear_requests()
    deployments = list(api.get("deployments", namespace="web"))
    assert sorted(d.name for d in deployments) == ["backend", "frontend"]
    raw = list(api.get("deployments", namespace="web", raw=True))
    assert "kind" not in raw[0]  # built-in LIST items carry no kind/apiVersion
    lists = server.requests_for(verb="list", resource="deployments")
    assert [(r.namespace, r.query, r.user, r.status) for r in lists] == [
        ("web", {"limit": "100"}, "admin", 200)
    ] * 2
    assert not server.requests_for(verb="get", resource="deployments")


def test_list_all_namespaces_and_cluster_scoped(api: kr8s.Api, http: httpx.Client) -> None:
    names = sorted(f"{d.namespace}/{d.name}" for d in api.get("deployments", namespace=kr8s.ALL))
    assert names == [
        "catalog/catalog",
        "checkout/checkout",
        "orders/orders-api",
        "prod-audit/guestbook",
        "prod/guestbook",
        "web/backend",
        "web/frontend",
    ]
    body = http.get("/apis/rbac.authorization.k8s.io/v1/clusterroles").json()
    recorded = ref("list-04-clusterroles.json")
    assert body["kind"] == "ClusterRoleList"
    assert body["metadata"] == {"resourceVersion": body["metadata"]["resourceVersion"]}
    assert sorted(i["metadata"]["name"] for i in body["items"]) == sorted(
        i["metadata"]["name"] for i in recorded["items"]
    )
    assert all("namespace" not in i["metadata"] for i in body["items"])
    roles = list(api.get("clusterroles"))
    assert len(roles) == len(recorded["items"])


def test_list_body_shapes_match_recordings(http: httpx.Client) -> None:
    body = http.get(
        "/apis/apps/v1/namespaces/web/deployments",
        params={"labelSelector": "app.kubernetes.io/part-of=web"},
    ).json()
    recorded = ref("list-01-deployments-labelselector.json")
    assert list(body) == list(recorded) == ["kind", "apiVersion", "metadata", "items"]
    assert body["items"] == recorded["items"]
    apps = http.get("/apis/argoproj.io/v1alpha1/namespaces/argocd/applications").json()
    recorded_apps = ref("list-05-applications.json")
    assert list(apps) == list(recorded_apps) == ["apiVersion", "items", "kind", "metadata"]
    assert apps["metadata"]["continue"] == ""
    assert apps["items"] == recorded_apps["items"]
    assert apps["items"][0]["kind"] == "Application"


def test_get_one_object_exact_body(http: httpx.Client) -> None:
    response = http.get("/apis/apps/v1/namespaces/prod/deployments/guestbook")
    recorded = ref("incident-01-deployment-after-argocd-apply.json")
    assert response.status_code == 200
    assert response.json() == recorded
    assert list(response.json()) == list(recorded)
    widget = http.get("/apis/example.com/v1/namespaces/prod/widgets/w1").json()
    assert list(widget) == sorted(widget)  # unstructured: sorted keys
    assert widget["metadata"]["uid"]  # filled for objects loaded without one
    namespace = http.get("/api/v1/namespaces/prod").json()
    assert namespace["kind"] == "Namespace"


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["a", "b"]),
        ("app==web", ["a", "b"]),
        ("app!=web", ["c", "d"]),
        ("tier in (front, back),app notin (db)", ["a", "b"]),
        ("env", ["a", "c"]),
        ("!env", ["b", "d"]),
        ("app=web,!env", ["b"]),
        ("env notin (prod)", ["b", "c", "d"]),
    ],
)
def test_label_selector(api: kr8s.Api, selector: str, expected: list[str]) -> None:
    found = api.get("configmaps", namespace="sel", label_selector=selector)
    assert sorted(cm.name for cm in found) == expected


def test_field_selector(http: httpx.Client) -> None:
    def names(selector: str) -> list[str]:
        response = http.get("/api/v1/configmaps", params={"fieldSelector": selector})
        assert response.status_code == 200, response.text
        return sorted(i["metadata"]["name"] for i in response.json()["items"])

    assert names("metadata.name=b") == ["b"]
    assert names("metadata.namespace==sel,metadata.name!=a") == ["b", "c", "d"]
    assert names("metadata.name=guestbook-config,") == ["guestbook-config"]  # kr8s's form
    bad = http.get("/api/v1/configmaps", params={"fieldSelector": "spec.foo=1"})
    assert bad.status_code == 400
    assert bad.json()["message"] == "field label not supported: spec.foo"


def test_pagination_with_continue(server: KubeAPIServer, http: httpx.Client) -> None:
    first = http.get("/apis/apps/v1/deployments", params={"limit": 2}).json()
    token = first["metadata"]["continue"]
    decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    assert decoded == {
        "v": "meta.k8s.io/v1",
        "rv": int(first["metadata"]["resourceVersion"]),
        "start": "checkout/checkout\u0000",
    }
    recorded = ref("list-02-deployments-limit2-page1.json")["metadata"]["continue"]
    assert (
        json.loads(base64.urlsafe_b64decode(recorded + "=" * (-len(recorded) % 4)))["start"]
        == (decoded["start"])
    )
    assert first["metadata"]["remainingItemCount"] == 5
    names = [i["metadata"]["name"] for i in first["items"]]
    while token:
        page = http.get("/apis/apps/v1/deployments", params={"limit": 2, "continue": token})
        body = page.json()
        assert body["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        names += [i["metadata"]["name"] for i in body["items"]]
        token = body["metadata"].get("continue", "")
    expected = ["catalog", "checkout", "orders-api", "guestbook", "guestbook", "backend"]
    assert names == [*expected, "frontend"]


def test_kr8s_follows_continue_tokens(server: KubeAPIServer, api: kr8s.Api) -> None:
    api.api_resources()
    server.clear_requests()
    names = [cm.name for cm in api.get("configmaps", namespace="bulk")]
    assert names == [f"cm-{i:03d}" for i in range(130)]
    lists = server.requests_for(verb="list", resource="configmaps")
    assert len(lists) == 2
    assert "continue" not in lists[0].query
    assert lists[1].query["continue"]


def test_kr8s_get_by_name_is_a_filtered_list(server: KubeAPIServer, api: kr8s.Api) -> None:
    api.api_resources()
    server.clear_requests()
    (deployment,) = api.get("deployments", "guestbook", namespace="prod")
    assert deployment.raw["spec"]["replicas"] == 3
    (record,) = server.requests
    assert (record.verb, record.query["fieldSelector"]) == ("list", "metadata.name=guestbook,")


# ---------------------------------------------------------------------------- errors
def test_404_not_found(http: httpx.Client, api: kr8s.Api) -> None:
    response = http.get("/apis/apps/v1/namespaces/prod/deployments/does-not-exist")
    assert response.status_code == 404
    assert response.json() == ref("error-01-get-404-notfound.json")
    core = http.get("/api/v1/namespaces/prod/secrets/nope").json()
    assert core["message"] == 'secrets "nope" not found'
    assert core["details"] == {"name": "nope", "kind": "secrets"}
    unknown = http.get("/apis/apps/v1/namespaces/prod/gizmos")
    assert unknown.status_code == 404
    assert unknown.json()["message"] == "the server could not find the requested resource"
    assert http.get("/apis/nope.example/v1/things").status_code == 404
    # kr8s looks objects up with a filtered LIST: a missing one is an empty list, not a 404
    with pytest.raises(kr8s.NotFoundError):
        kr8s.objects.Deployment.get("does-not-exist", namespace="prod", api=api, timeout=0.2)


def test_401_unauthorized(server: KubeAPIServer, http: httpx.Client) -> None:
    path = "/apis/apps/v1/namespaces/prod/deployments"
    response = http.get(path, headers=server.headers("unauthorized"))
    assert response.status_code == 401
    assert response.json() == ref("error-04-401-unauthorized.json")
    no_token = httpx.get(server.url + "/version", verify=server.ssl_context())
    assert no_token.status_code == 401
    with pytest.raises(kr8s.ServerError) as caught:
        kr8s.api(kubeconfig=str(server.kubeconfig_path), context="unauthorized")
    assert caught.value.response is not None
    assert caught.value.response.status_code == 401
    # kr8s re-authenticates and retries a 401 three times before giving up
    assert len(server.requests_for(user=None)) == 2 + 4


def test_403_forbidden_bodies(server: KubeAPIServer, http: httpx.Client) -> None:
    dev = server.headers("dev")
    listing = http.get("/apis/apps/v1/namespaces/prod/deployments", headers=dev)
    assert listing.status_code == 403
    assert listing.json() == ref("error-02-list-403-forbidden.json")
    getting = http.get("/apis/apps/v1/namespaces/prod/deployments/guestbook", headers=dev)
    assert getting.json() == ref("error-03-get-403-forbidden.json")
    cluster = http.get("/api/v1/nodes", headers=dev).json()
    assert cluster["message"] == (
        'nodes is forbidden: User "dev" cannot list resource "nodes" in API group "" '
        "at the cluster scope"
    )
    assert http.get("/apis", headers=dev).status_code == 200  # discovery is open to all


def test_403_through_kr8s(server: KubeAPIServer) -> None:
    dev = kr8s.api(kubeconfig=str(server.kubeconfig_path), context="dev")
    with pytest.raises(kr8s.ServerError) as caught:
        list(dev.get("deployments", namespace="prod"))
    assert caught.value.status == ref("error-02-list-403-forbidden.json")


def test_identity_with_static_rules(server: KubeAPIServer, http: httpx.Client) -> None:
    reader = server.headers("reader")
    assert http.get("/api/v1/namespaces/prod/configmaps", headers=reader).status_code == 200
    assert http.get("/api/v1/namespaces/sel/configmaps", headers=reader).status_code == 403
    assert http.get("/api/v1/namespaces/prod/secrets", headers=reader).status_code == 403


def test_410_expired_continue_then_inconsistent_continue(
    server: KubeAPIServer, http: httpx.Client
) -> None:
    path = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    first = http.get(path, params={"limit": 2}).json()
    server.expire_continue_tokens()
    expired = http.get(path, params={"limit": 2, "continue": first["metadata"]["continue"]})
    assert expired.status_code == 410
    body = expired.json()
    recorded = ref("error-06-continue-expired-410.json")
    assert {k: v for k, v in body.items() if k != "metadata"} == {
        k: v for k, v in recorded.items() if k != "metadata"
    }
    inconsistent = body["metadata"]["continue"]
    decoded = json.loads(base64.urlsafe_b64decode(inconsistent + "=" * (-len(inconsistent) % 4)))
    last = first["items"][-1]["metadata"]["name"]
    assert decoded == {"v": "meta.k8s.io/v1", "rv": -1, "start": last + "\u0000"}
    # following it is a 200 at the current resourceVersion (list-06)
    resumed = http.get(path, params={"limit": 2, "continue": inconsistent}).json()
    assert resumed["metadata"]["resourceVersion"] == str(server.store.resource_version)
    assert resumed["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
    assert resumed["items"][0]["metadata"]["name"] > last
    assert resumed["metadata"]["remainingItemCount"] > 0


def test_400_malformed_continue(http: httpx.Client) -> None:
    response = http.get(
        "/apis/apps/v1/deployments", params={"limit": 2, "continue": "not-a-valid-token"}
    )
    assert response.status_code == 400
    assert response.json() == ref("error-05-continue-malformed.json")


def test_429_with_retry_after(server: KubeAPIServer, http: httpx.Client, api: kr8s.Api) -> None:
    api.api_resources()
    fault = server.inject(path_regex=r"/deployments$", status=429, times=2, retry_after=1)
    path = "/apis/apps/v1/namespaces/prod/deployments"
    first = http.get(path)
    assert first.status_code == 429
    assert first.headers["retry-after"] == "1"
    assert first.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Too many requests, please try again later.",
        "reason": "TooManyRequests",
        "details": {"retryAfterSeconds": 1},
        "code": 429,
    }
    with pytest.raises(kr8s.ServerError) as caught:
        list(api.get("deployments", namespace="prod"))
    assert caught.value.response is not None
    assert caught.value.response.status_code == 429
    assert fault.hits == 2
    assert fault.exhausted
    assert http.get(path).status_code == 200
    assert [r.status for r in server.requests_for(resource="deployments")] == [429, 429, 200]


def test_500_and_custom_body(server: KubeAPIServer, http: httpx.Client, api: kr8s.Api) -> None:
    api.api_resources()
    server.inject(path_regex="/configmaps$", status=500)
    response = http.get("/api/v1/namespaces/prod/configmaps")
    assert response.status_code == 500
    assert response.json()["reason"] == "InternalError"
    assert response.json()["message"] == "Internal error occurred: injected fault"
    server.inject(path_regex="/configmaps$", status=500)
    with pytest.raises(kr8s.ServerError):
        list(api.get("configmaps", namespace="prod"))
    server.inject(path_regex="/secrets$", status=503, body="upstream down")
    text = http.get("/api/v1/namespaces/prod/secrets")
    assert (text.status_code, text.text) == (503, "upstream down")


def test_injected_delay(server: KubeAPIServer, http: httpx.Client) -> None:
    server.inject(path_regex="/namespaces/prod/configmaps$", delay=0.3)
    began = time.monotonic()
    assert http.get("/api/v1/namespaces/prod/configmaps").status_code == 200
    assert time.monotonic() - began >= 0.3
    server.inject(path_regex="/namespaces/prod/configmaps$", delay=1.0)
    with pytest.raises(httpx.ReadTimeout):
        http.get("/api/v1/namespaces/prod/configmaps", timeout=0.2)
    began = time.monotonic()
    assert http.get("/api/v1/namespaces/sel/configmaps").status_code == 200  # others unaffected
    assert time.monotonic() - began < 0.5


def test_dropped_connection(server: KubeAPIServer, http: httpx.Client, api: kr8s.Api) -> None:
    api.api_resources()
    server.inject(path_regex="/namespaces/prod/deployments$", drop_connection=True, times=2)
    with pytest.raises(httpx.RemoteProtocolError):
        http.get("/apis/apps/v1/namespaces/prod/deployments")
    with pytest.raises(httpx.TransportError):
        list(api.get("deployments", namespace="prod"))
    assert len(list(api.get("deployments", namespace="prod"))) == 1  # recovers
    assert [r.dropped for r in server.requests_for(resource="deployments")] == [True, True, False]


# ---------------------------------------------------------------------------- read-only guard
@pytest.mark.cluster_writes
def test_writes_are_refused_and_recorded(
    server: KubeAPIServer, http: httpx.Client, api: kr8s.Api
) -> None:
    path = "/apis/apps/v1/namespaces/prod/deployments"
    assert http.post(path, json={"kind": "Deployment"}).status_code == 405
    patched = http.patch(
        path + "/guestbook",
        content=b'{"spec":{"replicas":1}}',
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 405
    assert patched.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'patch is not supported on resources of kind "deployments.apps"',
        "reason": "MethodNotAllowed",
        "details": {"group": "apps", "kind": "deployments"},
        "code": 405,
    }
    assert http.put(path + "/guestbook", json={}).status_code == 405
    assert http.delete(path + "/guestbook").status_code == 405
    assert http.delete(path, headers=server.headers("dev")).status_code == 405
    (deployment,) = api.get("deployments", "guestbook", namespace="prod")
    with pytest.raises(kr8s.ServerError):
        deployment.scale(1)
    violations = [(r.method, r.verb, r.name) for r in server.write_violations]
    assert violations == [
        ("POST", "create", ""),
        ("PATCH", "patch", "guestbook"),
        ("PUT", "update", "guestbook"),
        ("DELETE", "delete", "guestbook"),
        ("DELETE", "deletecollection", ""),
        ("PATCH", "patch", "guestbook"),
    ]
    assert server.write_violations[-1].query == {}  # kr8s scales with a plain PATCH
    assert http.get(path + "/guestbook").json()["spec"]["replicas"] == 3  # unchanged


def test_minimal_watch_stream(http: httpx.Client) -> None:
    response = http.get("/api/v1/namespaces/sel/configmaps", params={"watch": "true"})
    events = [json.loads(line) for line in response.text.splitlines()]
    assert [e["type"] for e in events] == ["ADDED"] * 4
    assert events[0]["object"]["kind"] == "ConfigMap"


# ---------------------------------------------------------------------------- SubjectAccessReview
def _rbac_objects() -> list[Obj]:
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "argocd-application-controller", "namespace": "orders"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "argocd-orders-manager",
        },
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": "argocd-application-controller",
                "namespace": "argocd",
            }
        ],
    }
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "cm-reader", "namespace": "orders"},
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["configmaps"],
                "verbs": ["get"],
                "resourceNames": ["orders-config"],
            }
        ],
    }
    role_binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "sre-read", "namespace": "orders"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
        "subjects": [{"kind": "Group", "name": "sre"}],
    }
    return [*load_objects(REFERENCE_DIR / "list-04-clusterroles.json"), binding, role, role_binding]


CLUSTER_ADMIN_BINDING: Obj = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRoleBinding",
    "metadata": {"name": "argocd-application-controller"},
    "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "argocd-application-controller",
    },
    "subjects": [
        {"kind": "ServiceAccount", "name": "argocd-application-controller", "namespace": "argocd"}
    ],
}


def _sar(srv: KubeAPIServer, user: str, groups: list[str], **attributes: str) -> tuple[int, Obj]:
    request = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": groups, "resourceAttributes": attributes},
    }
    response = httpx.post(
        srv.url + "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        json=request,
        headers={**srv.headers(), "User-Agent": "gitdrift-reference-capture/0.1"},
        verify=srv.ssl_context(),
    )
    return response.status_code, response.json()


def _without_time(body: Obj) -> Obj:
    body = json.loads(json.dumps(body))
    for entry in body["metadata"]["managedFields"]:
        entry.pop("time")
    return body


def test_sar_allowed_and_denied_like_recordings(kube_apiserver: ServerFactory) -> None:
    srv = kube_apiserver(_rbac_objects())
    for name in ("sar-01-allowed", "sar-02-denied"):
        request = ref(f"{name}.request.json")
        spec = request["spec"]
        code, body = _sar(srv, spec["user"], spec["groups"], **spec["resourceAttributes"])
        assert code == 201
        assert _without_time(body) == _without_time(ref(f"{name}.response.json"))
    assert not srv.write_violations  # the SAR POST is not a write


SA = "system:serviceaccount:argocd:argocd-application-controller"
SA_GROUPS = ["system:serviceaccounts", "system:serviceaccounts:argocd", "system:authenticated"]


@pytest.mark.parametrize(
    ("user", "groups", "attributes", "reason"),
    [
        (
            SA,
            SA_GROUPS,
            {"namespace": "orders", "verb": "get", "resource": "configmaps"},
            (
                'RBAC: allowed by RoleBinding "argocd-application-controller/orders" of '
                'ClusterRole "argocd-orders-manager" to ServiceAccount '
                '"argocd-application-controller/argocd"'
            ),
        ),
        (SA, SA_GROUPS, {"namespace": "billing", "verb": "get", "resource": "configmaps"}, None),
        (
            "jane",
            ["sre"],
            {
                "namespace": "orders",
                "verb": "get",
                "resource": "configmaps",
                "name": "orders-config",
            },
            'RBAC: allowed by RoleBinding "sre-read/orders" of Role "cm-reader" to Group "sre"',
        ),
        ("jane", ["sre"], {"namespace": "orders", "verb": "get", "resource": "configmaps"}, None),
        ("jane", ["sre"], {"namespace": "other", "verb": "get", "resource": "configmaps"}, None),
        ("root", ["system:masters"], {"verb": "delete", "resource": "nodes"}, ""),
    ],
)
def test_sar_rbac_cases(
    kube_apiserver: ServerFactory,
    user: str,
    groups: list[str],
    attributes: dict[str, str],
    reason: str | None,
) -> None:
    srv = kube_apiserver(_rbac_objects())
    _, body = _sar(srv, user, groups, **attributes)
    expected: Obj = {"allowed": reason is not None}
    if reason:
        expected["reason"] = reason
    assert body["status"] == expected


def test_sar_cluster_role_binding_wins(kube_apiserver: ServerFactory) -> None:
    srv = kube_apiserver([*_rbac_objects(), CLUSTER_ADMIN_BINDING])
    _, body = _sar(
        srv, SA, SA_GROUPS, namespace="orders", verb="patch", group="apps", resource="statefulsets"
    )
    assert body["status"] == {
        "allowed": True,
        "reason": 'RBAC: allowed by ClusterRoleBinding "argocd-application-controller" of '
        'ClusterRole "argocd-application-controller" to ServiceAccount '
        '"argocd-application-controller/argocd"',
    }


def test_rbac_backed_identity(kube_apiserver: ServerFactory) -> None:
    controller = Identity(user=SA, token="sa-token", groups=tuple(SA_GROUPS), use_rbac=True)
    orders = [configmap("orders", "orders-config"), configmap("billing", "billing-config")]
    srv = kube_apiserver([*_rbac_objects(), *orders], identities=[controller])
    with httpx.Client(base_url=srv.url, verify=srv.ssl_context(), headers=srv.headers()) as c:
        assert c.get("/api/v1/namespaces/orders/configmaps").status_code == 200
        denied = c.get("/api/v1/namespaces/billing/configmaps")
        assert denied.status_code == 403
        assert f'User "{SA}" cannot list resource "configmaps"' in denied.json()["message"]
    api = kr8s.api(kubeconfig=str(srv.kubeconfig_path), context=SA)
    assert [cm.name for cm in api.get("configmaps", namespace="orders")] == ["orders-config"]


# ---------------------------------------------------------------------------- fixture, loading
def test_fixture_factory_loads_list_yaml_with_crd(
    kube_apiserver: ServerFactory, tmp_path: Path
) -> None:
    manifest = tmp_path / "objects.yaml"
    manifest.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [
                    WIDGET_CRD,
                    {
                        "apiVersion": "example.com/v1",
                        "kind": "Widget",
                        "metadata": {"name": "w2", "namespace": "lab"},
                    },
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lab"}},
                ],
            }
        )
    )
    srv = kube_apiserver(manifest)
    api = kr8s.api(kubeconfig=str(srv.kubeconfig_path), context=srv.context)
    (widget,) = api.get("widgets", namespace="lab", raw=True)
    assert (widget["apiVersion"], widget["kind"]) == ("example.com/v1", "Widget")  # CRD items
    (ns,) = api.get("namespaces", raw=True)
    assert "namespace" not in ns["metadata"]


def test_live_changes_bump_resource_version(kube_apiserver: ServerFactory) -> None:
    srv = kube_apiserver([configmap("prod", "one")])
    with httpx.Client(base_url=srv.url, verify=srv.ssl_context(), headers=srv.headers()) as c:
        before = c.get("/api/v1/namespaces/prod/configmaps").json()["metadata"]["resourceVersion"]
        srv.load([configmap("prod", "two")])
        after = c.get("/api/v1/namespaces/prod/configmaps").json()
        assert int(after["metadata"]["resourceVersion"]) > int(before)
        assert [i["metadata"]["name"] for i in after["items"]] == ["one", "two"]
        assert srv.delete_object("v1", "ConfigMap", "one", "prod")
        assert c.get("/api/v1/namespaces/prod/configmaps/one").status_code == 404


# ---------------------------------------------------------------------------- kubectl
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")
def test_kubectl_talks_to_it(server: KubeAPIServer, tmp_path: Path) -> None:
    result = subprocess.run(
        [
            "kubectl",
            "--kubeconfig",
            str(server.kubeconfig_path),
            "--cache-dir",
            str(tmp_path),
            "get",
            "deploy",
            "-n",
            "prod",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    (item,) = json.loads(result.stdout)["items"]
    assert (item["kind"], item["metadata"]["name"]) == ("Deployment", "guestbook")
    assert any(AGGREGATED in r.accept for r in server.requests)  # kubectl asks for v2
    lists = server.requests_for(verb="list", resource="deployments")
    assert [(r.namespace, r.query) for r in lists] == [("prod", {"limit": "500"})]
    assert not server.write_violations
