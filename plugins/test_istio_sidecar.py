"""Unit tests for plugins/istio_sidecar.py (scenario: team-plugin-istio-sidecar)."""

from __future__ import annotations

import copy
import json
from typing import Any

import istio_sidecar
import pytest

from kubectl_gitdrift import ObjectKey

RECEIPT = json.dumps(
    {"initContainers": ["istio-init"], "containers": ["istio-proxy"],
     "volumes": ["istio-envoy", "istio-token"], "imagePullSecrets": None, "revision": "default"}
)  # fmt: skip
PROBERS = json.dumps(
    {"/app-health/app/readyz": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"}},
     "/app-health/app/livez": {"tcpSocket": {"port": 8080}}}
)  # fmt: skip


def _git_pod() -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "x"}, "annotations": {"prometheus.io/port": "9090"}},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "readinessProbe": {
                        "httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"}
                    },
                    "livenessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 5},
                }
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }


def _injected() -> dict[str, Any]:
    pod = _git_pod()
    pod["metadata"]["labels"]["security.istio.io/tlsMode"] = "istio"
    pod["metadata"]["annotations"].update(
        {
            "sidecar.istio.io/status": RECEIPT,
            "prometheus.io/port": "15020",
            "prometheus.io/path": "/stats/prometheus",
            "kubectl.kubernetes.io/default-container": "app",
        }
    )
    app = pod["spec"]["containers"][0]
    app["readinessProbe"] = {
        "httpGet": {"path": "/app-health/app/readyz", "port": 15020, "scheme": "HTTP"}
    }
    app["livenessProbe"] = {
        "httpGet": {"path": "/app-health/app/livez", "port": 15020},
        "periodSeconds": 5,
    }
    env = [
        {"name": "ISTIO_KUBE_APP_PROBERS", "value": PROBERS},
        {"name": "ISTIO_PROMETHEUS_ANNOTATIONS", "value": '{"scrape":"","path":"","port":"9090"}'},
    ]
    pod["spec"]["containers"].append({"name": "istio-proxy", "env": env})
    pod["spec"]["initContainers"] = [{"name": "istio-init"}]
    pod["spec"]["volumes"] += [{"name": "istio-envoy"}, {"name": "istio-token"}]
    return pod


POD = ObjectKey("", "Pod", "ops", "x")


def test_uninject_pod_gives_back_git() -> None:
    live = _injected()
    istio_sidecar.gitdrift_normalize(POD, live, "live")
    assert live == _git_pod()


def test_idempotent_and_desired_side_untouched() -> None:
    live = _injected()
    istio_sidecar.gitdrift_normalize(POD, live, "live")
    once = copy.deepcopy(live)
    istio_sidecar.gitdrift_normalize(POD, live, "live")
    assert live == once
    desired = _injected()
    istio_sidecar.gitdrift_normalize(POD, desired, "desired")
    assert desired == _injected()


def test_without_receipt_nothing_changes() -> None:
    live = _injected()
    del live["metadata"]["annotations"]["sidecar.istio.io/status"]
    before = copy.deepcopy(live)
    istio_sidecar.gitdrift_normalize(POD, live, "live")
    assert live == before


@pytest.mark.parametrize(
    ("key", "wrap"),
    [
        (ObjectKey("apps", "Deployment", "ops", "x"), lambda t: {"spec": {"template": t}}),
        (ObjectKey("batch", "CronJob", "ops", "x"),
         lambda t: {"spec": {"jobTemplate": {"spec": {"template": t}}}}),
    ],
)  # fmt: skip
def test_pod_templates(key: ObjectKey, wrap: Any) -> None:
    live = wrap(_injected())
    istio_sidecar.gitdrift_normalize(key, live, "live")
    assert live == wrap(_git_pod())
