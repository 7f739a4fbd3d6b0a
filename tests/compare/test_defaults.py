"""defaults.apply_defaults against upstream's defaulting rules and a real API server's output."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kubectl_gitdrift.compare.defaults import apply_defaults, has_defaults, image_pull_policy

REFERENCE = Path(__file__).resolve().parents[2] / "testdata" / "apiserver"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _deployment(pod_spec: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": pod_spec}, **spec},
    }


def _pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


@pytest.mark.parametrize(
    "name",
    [
        "incident-01-deployment-after-argocd-apply.json",
        "incident-02-deployment-after-jane-scale.json",
    ],
)
def test_reproduces_server_defaults_from_last_applied(name: str) -> None:
    """Defaulting the applied manifest gives exactly the spec the API server stored."""
    path = REFERENCE / name
    live = json.loads(path.read_text(encoding="utf-8"))
    applied = json.loads(live["metadata"]["annotations"][LAST_APPLIED])
    if name.startswith("incident-02"):  # kubectl scale changed replicas after the apply
        applied["spec"]["replicas"] = live["spec"]["replicas"]
    defaulted = apply_defaults("apps", "v1", "Deployment", applied)
    assert defaulted["spec"] == live["spec"]


def test_defaulting_is_idempotent_and_pure() -> None:
    body = _deployment({"containers": [{"name": "app", "image": "nginx"}]})
    before = copy.deepcopy(body)
    once = apply_defaults("apps", "v1", "Deployment", body)
    assert body == before
    assert apply_defaults("apps", "v1", "Deployment", once) == once


def test_deployment_defaults() -> None:
    spec = apply_defaults("apps", "v1", "Deployment", _deployment({"containers": []}))["spec"]
    assert spec["replicas"] == 1
    assert spec["revisionHistoryLimit"] == 10
    assert spec["progressDeadlineSeconds"] == 600
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert spec["template"]["metadata"] == {"labels": {"a": "b"}, "creationTimestamp": None}


def test_deployment_recreate_gets_no_rolling_update() -> None:
    body = _deployment({"containers": []}, strategy={"type": "Recreate"})
    spec = apply_defaults("apps", "v1", "Deployment", body)["spec"]
    assert spec["strategy"] == {"type": "Recreate"}


def test_deployment_partial_rolling_update_keeps_set_values() -> None:
    body = _deployment({"containers": []}, strategy={"rollingUpdate": {"maxSurge": 0}})
    strategy = apply_defaults("apps", "v1", "Deployment", body)["spec"]["strategy"]
    assert strategy == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "25%"},
    }


def test_explicit_values_win() -> None:
    body = _deployment(
        {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0, "containers": []},
        replicas=0,
        revisionHistoryLimit=0,
    )
    spec = apply_defaults("apps", "v1", "Deployment", body)["spec"]
    assert spec["replicas"] == 0  # pointer field: 0 is a value, not unset
    assert spec["revisionHistoryLimit"] == 0
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert spec["template"]["spec"]["terminationGracePeriodSeconds"] == 0


def test_pod_spec_and_container_defaults() -> None:
    container = {
        "name": "app",
        "image": "nginx:1.25",
        "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}],
        "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "livenessProbe": {"httpGet": {"port": 80}},
        "readinessProbe": {"grpc": {"port": 9090}, "periodSeconds": 5},
        "startupProbe": {"exec": {"command": ["true"]}, "timeoutSeconds": 0},
        "lifecycle": {"preStop": {"httpGet": {"port": "http", "path": "/stop"}}},
    }
    spec = _pod_spec(
        apply_defaults("apps", "v1", "Deployment", _deployment({"containers": [container]}))
    )
    assert spec["restartPolicy"] == "Always"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["securityContext"] == {}
    assert spec["schedulerName"] == "default-scheduler"
    assert "enableServiceLinks" not in spec  # Pod-only default
    got = spec["containers"][0]
    assert got["imagePullPolicy"] == "IfNotPresent"
    assert got["terminationMessagePath"] == "/dev/termination-log"
    assert got["terminationMessagePolicy"] == "File"
    assert got["resources"] == {}
    assert got["ports"] == [
        {"containerPort": 80, "protocol": "TCP"},
        {"containerPort": 53, "protocol": "UDP"},
    ]
    assert got["env"][0]["valueFrom"]["fieldRef"] == {
        "fieldPath": "metadata.name",
        "apiVersion": "v1",
    }
    probe_defaults = {
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert got["livenessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
        **probe_defaults,
    }
    assert got["readinessProbe"] == {
        "grpc": {"port": 9090, "service": ""},
        **probe_defaults,
        "periodSeconds": 5,
    }
    assert got["startupProbe"]["timeoutSeconds"] == 1
    assert got["lifecycle"]["preStop"]["httpGet"] == {
        "port": "http",
        "path": "/stop",
        "scheme": "HTTP",
    }


def test_init_and_ephemeral_containers_are_defaulted() -> None:
    body = _deployment(
        {
            "initContainers": [{"name": "init", "image": "busybox"}],
            "containers": [{"name": "app", "image": "app:latest"}],
        }
    )
    spec = _pod_spec(apply_defaults("apps", "v1", "Deployment", body))
    assert spec["initContainers"][0]["imagePullPolicy"] == "Always"
    assert spec["containers"][0]["imagePullPolicy"] == "Always"
    assert spec["initContainers"][0]["terminationMessagePolicy"] == "File"


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("docker.io/library/nginx", "Always"),
        ("localhost:5000/team/app", "Always"),
        ("localhost:5000/team/app:latest", "Always"),
        ("nginx:1.25", "IfNotPresent"),
        ("registry.example.com/guestbook:1.4.2", "IfNotPresent"),
        ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
        ("nginx:latest@sha256:" + "a" * 64, "Always"),
        ("nginx:1.0@sha256:" + "a" * 64, "IfNotPresent"),
        ("Nginx", "IfNotPresent"),  # not a valid reference: Go's parser fails, tag is ""
        ("", "IfNotPresent"),
        ("a" * 64, "IfNotPresent"),
    ],
)
def test_image_pull_policy(image: str, policy: str) -> None:
    assert image_pull_policy(image) == policy


def test_explicit_pull_policy_is_kept() -> None:
    body = _deployment(
        {"containers": [{"name": "a", "image": "nginx", "imagePullPolicy": "Never"}]}
    )
    assert (
        _pod_spec(apply_defaults("apps", "v1", "Deployment", body))["containers"][0][
            "imagePullPolicy"
        ]
        == "Never"
    )


def test_volume_defaults() -> None:
    volumes = [
        {"name": "scratch"},
        {"name": "cm", "configMap": {"name": "c"}},
        {"name": "sec", "secret": {"secretName": "s", "defaultMode": 256}},
        {"name": "host", "hostPath": {"path": "/var/log"}},
        {
            "name": "dapi",
            "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]},
        },
        {
            "name": "proj",
            "projected": {
                "sources": [
                    {"serviceAccountToken": {"path": "token"}},
                    {
                        "downwardAPI": {
                            "items": [{"path": "l", "fieldRef": {"fieldPath": "metadata.labels"}}]
                        }
                    },
                ]
            },
        },
        {
            "name": "eph",
            "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}},
        },
    ]
    spec = _pod_spec(
        apply_defaults(
            "apps", "v1", "Deployment", _deployment({"volumes": volumes, "containers": []})
        )
    )
    got = {v["name"]: v for v in spec["volumes"]}
    assert got["scratch"] == {"name": "scratch", "emptyDir": {}}
    assert got["cm"]["configMap"] == {"name": "c", "defaultMode": 420}
    assert got["sec"]["secret"]["defaultMode"] == 256
    assert got["host"]["hostPath"] == {"path": "/var/log", "type": ""}
    assert got["dapi"]["downwardAPI"]["defaultMode"] == 420
    assert got["dapi"]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"] == "v1"
    projected = got["proj"]["projected"]
    assert projected["defaultMode"] == 420
    assert projected["sources"][0]["serviceAccountToken"]["expirationSeconds"] == 3600
    assert projected["sources"][1]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"] == "v1"
    claim = got["eph"]["ephemeral"]["volumeClaimTemplate"]
    assert claim["spec"]["volumeMode"] == "Filesystem"
    assert claim["metadata"] == {"creationTimestamp": None}


def test_statefulset_defaults() -> None:
    body = {
        "spec": {
            "serviceName": "db",
            "template": {"spec": {"containers": [{"name": "db", "image": "postgres:16"}]}},
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {"resources": {"requests": {"storage": "1Gi"}}},
                }
            ],
        }
    }
    spec = apply_defaults("apps", "v1", "StatefulSet", body)["spec"]
    assert spec["replicas"] == 1
    assert spec["revisionHistoryLimit"] == 10
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    claim = spec["volumeClaimTemplates"][0]
    assert claim["spec"]["volumeMode"] == "Filesystem"
    assert claim["metadata"] == {"name": "data", "creationTimestamp": None}
    assert claim["status"] == {"phase": "Pending"}
    assert spec["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"


@pytest.mark.parametrize(
    ("claim_metadata", "expected"),
    [
        ({"name": "data"}, {"name": "data"}),  # a 1.34+ server omits the zero timestamp
        ({"name": "data", "creationTimestamp": None}, {"name": "data", "creationTimestamp": None}),
    ],
)
def test_claim_templates_defaulting_leaves_alone_keep_their_json(
    claim_metadata: dict[str, Any], expected: dict[str, Any]
) -> None:
    """Argo CD patches the JSON with what defaulting changed; volumeClaimTemplates is atomic, so
    a list defaulting does not change keeps the JSON's metadata, creationTimestamp or not."""
    claim = {
        "metadata": claim_metadata,
        "spec": {"resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"},
        "status": {"phase": "Pending"},
    }
    body = {"spec": {"volumeClaimTemplates": [claim]}}
    spec = apply_defaults("apps", "v1", "StatefulSet", body)["spec"]
    assert spec["volumeClaimTemplates"] == [{**claim, "metadata": expected}]


def test_statefulset_on_delete_strategy() -> None:
    body = {
        "spec": {"updateStrategy": {"type": "OnDelete"}, "template": {"spec": {"containers": []}}}
    }
    spec = apply_defaults("apps", "v1", "StatefulSet", body)["spec"]
    assert spec["updateStrategy"] == {"type": "OnDelete"}


def test_daemonset_and_replicaset() -> None:
    ds = apply_defaults(
        "apps", "v1", "DaemonSet", {"spec": {"template": {"spec": {"containers": []}}}}
    )["spec"]
    assert ds["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
    }
    assert ds["revisionHistoryLimit"] == 10
    assert "replicas" not in ds
    rs = apply_defaults(
        "apps", "v1", "ReplicaSet", {"spec": {"template": {"spec": {"containers": []}}}}
    )["spec"]
    assert rs["replicas"] == 1
    assert rs["template"]["spec"]["dnsPolicy"] == "ClusterFirst"


def test_job_and_cronjob() -> None:
    template = {
        "metadata": {"labels": {"job": "x"}},
        "spec": {"restartPolicy": "Never", "containers": []},
    }
    job = apply_defaults(
        "batch", "v1", "Job", {"metadata": {"name": "j"}, "spec": {"template": template}}
    )
    assert job["metadata"]["labels"] == {"job": "x"}
    spec = job["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert spec["completionMode"] == "NonIndexed"
    assert spec["suspend"] is False
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert spec["template"]["spec"]["terminationGracePeriodSeconds"] == 30

    parallel = apply_defaults(
        "batch", "v1", "Job", {"spec": {"parallelism": 3, "template": template}}
    )["spec"]
    assert "completions" not in parallel
    assert parallel["parallelism"] == 3

    cron = apply_defaults(
        "batch",
        "v1",
        "CronJob",
        {"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}}},
    )["spec"]
    assert cron["concurrencyPolicy"] == "Allow"
    assert cron["suspend"] is False
    assert cron["successfulJobsHistoryLimit"] == 3
    assert cron["failedJobsHistoryLimit"] == 1
    job_spec = cron["jobTemplate"]["spec"]
    assert "backoffLimit" not in job_spec  # SetDefaults_Job is for Jobs, not job templates
    assert job_spec["template"]["spec"]["schedulerName"] == "default-scheduler"
    assert cron["jobTemplate"]["metadata"] == {"creationTimestamp": None}


def test_pod_only_defaults() -> None:
    body = {
        "spec": {
            "hostNetwork": True,
            "containers": [
                {
                    "name": "a",
                    "image": "a:1",
                    "ports": [{"containerPort": 8080}],
                    "resources": {"limits": {"cpu": "1"}, "requests": {"memory": "1Gi"}},
                }
            ],
        }
    }
    spec = apply_defaults("", "v1", "Pod", body)["spec"]
    assert spec["enableServiceLinks"] is True
    container = spec["containers"][0]
    assert container["resources"]["requests"] == {"memory": "1Gi", "cpu": "1"}
    assert container["ports"][0] == {"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}


def test_service_defaults() -> None:
    body = {
        "spec": {
            "ports": [
                {"port": 80},
                {"port": 443, "targetPort": "https"},
                {"port": 53, "protocol": "UDP"},
            ]
        }
    }
    spec = apply_defaults("", "v1", "Service", body)["spec"]
    assert spec["type"] == "ClusterIP"
    assert spec["sessionAffinity"] == "None"
    assert spec["internalTrafficPolicy"] == "Cluster"
    assert spec["ports"] == [
        {"port": 80, "protocol": "TCP", "targetPort": 80},
        {"port": 443, "targetPort": "https", "protocol": "TCP"},
        {"port": 53, "protocol": "UDP", "targetPort": 53},
    ]
    for allocated in (
        "clusterIP",
        "clusterIPs",
        "ipFamilies",
        "ipFamilyPolicy",
        "externalTrafficPolicy",
    ):
        assert allocated not in spec


def test_load_balancer_service() -> None:
    body = {
        "spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP", "ports": [{"port": 80}]}
    }
    spec = apply_defaults("", "v1", "Service", body)["spec"]
    assert spec["externalTrafficPolicy"] == "Cluster"
    assert spec["allocateLoadBalancerNodePorts"] is True
    assert spec["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}
    assert "nodePort" not in spec["ports"][0]


def test_external_name_service() -> None:
    spec = apply_defaults(
        "", "v1", "Service", {"spec": {"type": "ExternalName", "externalName": "x.example"}}
    )["spec"]
    assert "internalTrafficPolicy" not in spec
    assert spec["sessionAffinity"] == "None"


def test_session_affinity_none_drops_config() -> None:
    body = {"spec": {"sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 5}}}}
    assert "sessionAffinityConfig" not in apply_defaults("", "v1", "Service", body)["spec"]


def test_other_core_kinds() -> None:
    assert apply_defaults("", "v1", "Secret", {"data": {}})["type"] == "Opaque"
    assert (
        apply_defaults("", "v1", "Secret", {"type": "kubernetes.io/tls"})["type"]
        == "kubernetes.io/tls"
    )
    sa = {"metadata": {"name": "sa"}, "secrets": [{"name": "t"}]}
    assert apply_defaults("", "v1", "ServiceAccount", sa) == sa
    ns = apply_defaults("", "v1", "Namespace", {"metadata": {"name": "prod"}})
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "prod"}
    pvc = apply_defaults(
        "", "v1", "PersistentVolumeClaim", {"spec": {"accessModes": ["ReadWriteOnce"]}}
    )
    assert pvc["spec"]["volumeMode"] == "Filesystem"
    rc = apply_defaults(
        "",
        "v1",
        "ReplicationController",
        {"spec": {"template": {"metadata": {"labels": {"a": "1"}}, "spec": {}}}},
    )
    assert rc["spec"]["selector"] == {"a": "1"}
    assert rc["spec"]["replicas"] == 1
    assert rc["metadata"]["labels"] == {"a": "1"}


def test_network_policy_and_rbac() -> None:
    np = apply_defaults(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        {"spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}},
    )["spec"]
    assert np["policyTypes"] == ["Ingress", "Egress"]
    assert np["egress"][0]["ports"][0]["protocol"] == "TCP"
    binding = {
        "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"kind": "User", "name": "jane"},
            {"kind": "ServiceAccount", "name": "x", "namespace": "y"},
        ],
    }
    got = apply_defaults("rbac.authorization.k8s.io", "v1", "RoleBinding", binding)
    assert got["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
    assert got["subjects"][0]["apiGroup"] == "rbac.authorization.k8s.io"
    assert "apiGroup" not in got["subjects"][1]


def test_unknown_kinds_are_copied_unchanged() -> None:
    body = {"spec": {"replicas": None, "nested": {"a": [1]}}}
    got = apply_defaults("argoproj.io", "v1alpha1", "Rollout", body)
    assert got == body
    assert got["spec"]["nested"] is not body["spec"]["nested"]
    assert not has_defaults("argoproj.io", "v1alpha1", "Rollout")
    assert has_defaults("apps", "v1", "Deployment")
    assert apply_defaults("apps", "v1alpha9", "Deployment", {"spec": {}}) == {"spec": {}}


def test_malformed_input_is_left_alone() -> None:
    body = {
        "spec": {
            "template": {"spec": {"containers": "oops", "volumes": [None, 3]}},
            "strategy": "x",
        }
    }
    got = apply_defaults("apps", "v1", "Deployment", body)
    assert got["spec"]["strategy"] == "x"
    assert got["spec"]["template"]["spec"]["containers"] == "oops"
    assert apply_defaults("apps", "v1", "Deployment", {"spec": 5}) == {"spec": 5}
