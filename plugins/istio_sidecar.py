"""What istio's sidecar injector adds to a Pod is not drift.

Load it with `kubectl gitdrift APP --plugin plugins/istio_sidecar.py`.

istio's mutating webhook (`istio-sidecar-injector`) rewrites Pods as they are created. A Pod that
Argo CD manages directly, or a pod template someone ran through `istioctl kube-inject` in the
cluster, then differs from git in ways nobody changed by hand:

- containers `istio-proxy` and initContainers `istio-init`/`istio-validation` (or `istio-proxy`
  as a native sidecar), and volumes `istio-envoy`, `istio-data`, `istio-podinfo`, `istio-token`,
  `istiod-ca-cert`, `workload-socket`, `credential-socket`, `workload-certs`;
- labels `security.istio.io/tlsMode`, `service.istio.io/canonical-*` and annotations
  `sidecar.istio.io/status`, `istio.io/rev`, `kubectl.kubernetes.io/default-container`,
  `kubectl.kubernetes.io/default-logs-container`;
- HTTP/TCP probes of app containers, rewritten to the agent (`/app-health/<c>/readyz` on 15020),
  with the originals kept in the proxy's `ISTIO_KUBE_APP_PROBERS` env;
- `prometheus.io/*` annotations pointed at the agent (merged metrics), with the originals kept in
  the proxy's `ISTIO_PROMETHEUS_ANNOTATIONS` env.

`gitdrift_normalize` undoes exactly that on the live side of objects carrying
`sidecar.istio.io/status` (the injector's receipt, which lists what it added): it removes what
was added and restores the rewritten probes and annotations from istio's own record. Nothing is
touched on objects without the receipt, or on the git side. Pods and the pod templates of
Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and CronJobs are handled.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from kubectl_gitdrift import ObjectKey, hookimpl

__version__ = "1.0.0"

STATUS = "sidecar.istio.io/status"
CONTAINERS = ("istio-proxy",)
INIT_CONTAINERS = ("istio-init", "istio-validation", "istio-proxy")
VOLUMES = (
    "istio-envoy",
    "istio-data",
    "istio-podinfo",
    "istio-token",
    "istiod-ca-cert",
    "workload-socket",
    "credential-socket",
    "workload-certs",
)
LABELS = (
    "security.istio.io/tlsMode",
    "service.istio.io/canonical-name",
    "service.istio.io/canonical-revision",
)
ANNOTATIONS = (
    STATUS,
    "istio.io/rev",
    "kubectl.kubernetes.io/default-container",
    "kubectl.kubernetes.io/default-logs-container",
)
TEMPLATE_KINDS = frozenset(
    {
        ("apps", "Deployment"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("apps", "ReplicaSet"),
        ("batch", "Job"),
    }
)
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")


@hookimpl
def gitdrift_normalize(key: ObjectKey, body: dict[str, Any], side: str) -> None:
    if side != "live":
        return
    for pod in _pods(key, body):
        uninject(pod)


def _pods(key: ObjectKey, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The pod-shaped parts of an object: {metadata, spec} of a Pod or pod template."""
    spec = body.get("spec")
    if not isinstance(spec, dict):
        return
    if (key.group, key.kind) == ("", "Pod"):
        yield body
    elif (key.group, key.kind) in TEMPLATE_KINDS:
        if isinstance(spec.get("template"), dict):
            yield spec["template"]
    elif (key.group, key.kind) == ("batch", "CronJob"):
        job = (spec.get("jobTemplate") or {}).get("spec") or {}
        if isinstance(job.get("template"), dict):
            yield job["template"]


def uninject(pod: dict[str, Any]) -> None:
    """Undo the injection recorded in the pod's `sidecar.istio.io/status`, in place."""
    metadata = pod.get("metadata")
    spec = pod.get("spec")
    if not isinstance(metadata, dict) or not isinstance(spec, dict):
        return
    annotations = metadata.get("annotations")
    if not isinstance(annotations, dict) or STATUS not in annotations:
        return
    receipt = _json(annotations.get(STATUS), {})
    containers = _names(receipt, "containers", CONTAINERS)
    init_containers = _names(receipt, "initContainers", INIT_CONTAINERS)
    volumes = _names(receipt, "volumes", VOLUMES)

    proxy = _proxy(spec)
    probers = _json(_env(proxy, "ISTIO_KUBE_APP_PROBERS"), {})
    prometheus = _json(_env(proxy, "ISTIO_PROMETHEUS_ANNOTATIONS"), None)

    _drop_named(spec, "containers", containers)
    _drop_named(spec, "initContainers", init_containers)
    _drop_named(spec, "volumes", volumes)
    for container in spec.get("containers") or ():
        if isinstance(container, dict):
            _restore_probes(container, probers)
    _restore_prometheus(annotations, prometheus)
    for name in ANNOTATIONS:
        annotations.pop(name, None)
    if not annotations:
        del metadata["annotations"]
    labels = metadata.get("labels")
    if isinstance(labels, dict):
        for name in LABELS:
            labels.pop(name, None)
        if not labels:
            del metadata["labels"]


def _json(raw: Any, default: Any) -> Any:
    if not isinstance(raw, str) or not raw:
        return default
    try:
        return json.loads(raw)
    except ValueError:
        return default


def _names(receipt: Any, field: str, fallback: tuple[str, ...]) -> set[str]:
    listed = receipt.get(field) if isinstance(receipt, dict) else None
    if isinstance(listed, list):
        return {str(name) for name in listed}
    return set(fallback)


def _proxy(spec: dict[str, Any]) -> dict[str, Any]:
    for field in ("containers", "initContainers"):
        for container in spec.get(field) or ():
            if isinstance(container, dict) and container.get("name") == "istio-proxy":
                return container
    return {}


def _env(container: dict[str, Any], name: str) -> Any:
    for env in container.get("env") or ():
        if isinstance(env, dict) and env.get("name") == name:
            return env.get("value")
    return None


def _drop_named(spec: dict[str, Any], field: str, names: set[str]) -> None:
    items = spec.get(field)
    if not isinstance(items, list):
        return
    kept = [i for i in items if not (isinstance(i, dict) and i.get("name") in names)]
    if kept:
        spec[field] = kept
    else:
        del spec[field]


def _restore_probes(container: dict[str, Any], probers: Any) -> None:
    """`/app-health/<container>/{livez,readyz,startupz}` → the probe's original action."""
    if not isinstance(probers, dict):
        return
    suffix = {"livenessProbe": "livez", "readinessProbe": "readyz", "startupProbe": "startupz"}
    for probe_field in PROBES:
        probe = container.get(probe_field)
        if not isinstance(probe, dict):
            continue
        original = probers.get(f"/app-health/{container.get('name')}/{suffix[probe_field]}")
        if not isinstance(original, dict):
            continue
        for action in ("httpGet", "tcpSocket", "grpc"):
            probe.pop(action, None)
        for action in ("httpGet", "tcpSocket", "grpc"):
            if action in original:
                probe[action] = original[action]


def _restore_prometheus(annotations: dict[str, Any], original: Any) -> None:
    """Merged metrics point prometheus.io/* at the agent; put the app's values back."""
    if not isinstance(original, dict):
        return
    for name in ("scrape", "path", "port"):
        annotation = f"prometheus.io/{name}"
        if original.get(name):
            annotations[annotation] = original[name]
        else:
            annotations.pop(annotation, None)
