"""The API server's defaulting for built-in kinds, where it decides whether a diff shows drift.

Argo CD's legacy diff runs the Go defaulting functions (`SetObjectDefaults_*`) on both the predicted
object (live after `kubectl apply` of git) and the live one, so a field removed from git comes back
as its default and is not drift unless live differs from that default. `apply_defaults` reproduces
those functions for Kubernetes 1.33 with default feature gates, following
`k8s.io/kubernetes/pkg/apis/{core,apps,batch,networking,rbac}/v1/defaults.go` and the generated
`zz_generated.defaults.go` walkers.

Besides defaults proper, it adds what Go's JSON encoding of the typed object always writes, because
Argo CD compares objects re-encoded from Go structs: `creationTimestamp: null` in embedded
`ObjectMeta` (pod templates; claim templates only where defaulting rewrites the list, see
`_claim_templates`) and `resources: {}` in containers.

Not done here, on purpose: values the registry allocates (`clusterIP(s)`, `ipFamilies`,
`ipFamilyPolicy`, node ports, Job selectors and `controller-uid` labels), admission plugins
(service account, tolerations), `status` of top-level objects, and Quantity canonicalization
(`quantity.canonical_resource` does the ResourceList rounding).

Pure: no I/O; the input is never modified.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import Any

from kubectl_gitdrift import model

__all__ = ["apply_defaults", "has_defaults", "image_pull_policy"]

_Defaulter = Callable[[dict[str, Any]], None]

_MISSING = object()


# --------------------------------------------------------------------------- public API


def apply_defaults(group: str, version: str, kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """A defaulted deep copy of `body`, as the API server would store it for this kind.

    Kinds without defaulting rules here (CRDs, ServiceAccount, ConfigMap, unknown versions) come
    back as an unchanged copy.
    """
    obj: dict[str, Any] = {
        k: (_copy_metadata(v) if k == "metadata" else model.copy_json(v)) for k, v in body.items()
    }
    defaulter = _DEFAULTERS.get((group, version, kind))
    if defaulter is not None:
        defaulter(obj)
    return obj


def _copy_metadata(metadata: Any) -> Any:
    """`_copy`, except that `managedFields` (often most of an object, and never defaulted nor
    written here) is shared with the input rather than copied."""
    if type(metadata) is not dict:
        return model.copy_json(metadata)
    return {k: (v if k == "managedFields" else model.copy_json(v)) for k, v in metadata.items()}


def has_defaults(group: str, version: str, kind: str) -> bool:
    """True when `apply_defaults` knows defaulting rules for this kind."""
    return (group, version, kind) in _DEFAULTERS


def image_pull_policy(image: str) -> str:
    """The default `imagePullPolicy` for an image: `Always` when its tag is `latest` or no tag nor
    digest is given, else `IfNotPresent` (also for references Go cannot parse)."""
    return "Always" if _image_tag(image) == "latest" else "IfNotPresent"


# --------------------------------------------------------------------------- helpers


def _map(parent: Any, key: str) -> dict[str, Any] | None:
    """`parent[key]` when both are dicts, else None (wrongly typed input is left alone)."""
    if not isinstance(parent, dict):
        return None
    value = parent.get(key)
    return value if isinstance(value, dict) else None


def _ensure_map(parent: dict[str, Any], key: str) -> dict[str, Any] | None:
    """`parent[key]`, created as `{}` when absent or null; None when it holds something else."""
    value = parent.get(key)
    if value is None:
        value = parent[key] = {}
    return value if isinstance(value, dict) else None


def _maps(parent: Any, key: str) -> list[dict[str, Any]]:
    """The dict items of the list `parent[key]` (nothing when absent or not a list)."""
    if not isinstance(parent, dict):
        return []
    value = parent.get(key)
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]


def _unset(obj: dict[str, Any], key: str) -> bool:
    """A pointer field left nil: absent or null."""
    return obj.get(key) is None


def _empty(obj: dict[str, Any], key: str) -> bool:
    """A value field at Go's zero value: absent, null, "" or 0 (what `== ""`/`== 0` tests)."""
    value = obj.get(key, _MISSING)
    return (
        value is _MISSING
        or value is None
        or value == ""
        or (isinstance(value, int) and not isinstance(value, bool) and value == 0)
    )


def _default(obj: dict[str, Any], key: str, value: Any, *, pointer: bool = False) -> None:
    """Set `obj[key] = value` when the field is unset (nil pointer) or empty (zero value)."""
    if _unset(obj, key) if pointer else _empty(obj, key):
        obj[key] = copy.deepcopy(value)


def _object_meta(obj: dict[str, Any], key: str = "metadata") -> None:
    """An embedded (non-pointer) ObjectMeta: Go always writes it, with `creationTimestamp: null`."""
    meta = _ensure_map(obj, key)
    if meta is not None and "creationTimestamp" not in meta:
        meta["creationTimestamp"] = None


# --------------------------------------------------------------------------- images

_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_REFERENCE = re.compile(
    rf"^(?P<name>(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$"
)
_HEX_ID = re.compile(r"^[a-f0-9]{64}$")


def _image_tag(image: str) -> str:
    """The tag kubelet's `parsers.ParseImageName` finds: "latest" when neither tag nor digest is
    given, "" for a digest-only or unparsable reference."""
    if _HEX_ID.match(image):
        return ""
    match = _REFERENCE.match(image)
    if match is None or len(match.group("name")) > 255:
        return ""
    tag = match.group("tag")
    if tag:
        return tag
    return "" if match.group("digest") else "latest"


# --------------------------------------------------------------------------- core/v1 pieces


def _field_ref(selector: Any) -> None:
    """SetDefaults_ObjectFieldSelector."""
    if isinstance(selector, dict):
        _default(selector, "apiVersion", "v1")


def _http_get(action: Any) -> None:
    """SetDefaults_HTTPGetAction."""
    if isinstance(action, dict):
        _default(action, "path", "/")
        _default(action, "scheme", "HTTP")


def _probe(probe: Any) -> None:
    """SetDefaults_Probe plus the handler defaults (httpGet path/scheme, grpc service)."""
    if not isinstance(probe, dict):
        return
    _default(probe, "timeoutSeconds", 1)
    _default(probe, "periodSeconds", 10)
    _default(probe, "successThreshold", 1)
    _default(probe, "failureThreshold", 3)
    _http_get(probe.get("httpGet"))
    grpc = _map(probe, "grpc")
    if grpc is not None:
        _default(grpc, "service", "", pointer=True)


def _container(container: dict[str, Any]) -> None:
    """SetDefaults_Container and the generated walk over ports, env, probes and lifecycle."""
    if _empty(container, "imagePullPolicy"):
        image = container.get("image")
        container["imagePullPolicy"] = image_pull_policy(image if isinstance(image, str) else "")
    _default(container, "terminationMessagePath", "/dev/termination-log")
    _default(container, "terminationMessagePolicy", "File")
    for port in _maps(container, "ports"):
        _default(port, "protocol", "TCP")
    for env in _maps(container, "env"):
        _field_ref(_map(_map(env, "valueFrom"), "fieldRef"))
    if container.get("resources") is None:
        container["resources"] = {}
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(container.get(probe))
    lifecycle = _map(container, "lifecycle")
    for hook in ("postStart", "preStop"):
        _http_get(_map(_map(lifecycle, hook), "httpGet"))


def _pvc_spec(spec: Any) -> None:
    """SetDefaults_PersistentVolumeClaimSpec."""
    if isinstance(spec, dict):
        _default(spec, "volumeMode", "Filesystem", pointer=True)


_VOLUME_MODE = {"secret": 420, "configMap": 420, "downwardAPI": 420, "projected": 420}


def _volume(volume: dict[str, Any]) -> None:
    """SetDefaults_Volume and the per-source defaults of the generated walk."""
    if all(value is None for key, value in volume.items() if key != "name"):
        volume["emptyDir"] = {}
    for source, mode in _VOLUME_MODE.items():
        src = _map(volume, source)
        if src is not None:
            _default(src, "defaultMode", mode, pointer=True)
    host_path = _map(volume, "hostPath")
    if host_path is not None:
        _default(host_path, "type", "", pointer=True)
    for item in _maps(_map(volume, "downwardAPI"), "items"):
        _field_ref(item.get("fieldRef"))
    for projection in _maps(_map(volume, "projected"), "sources"):
        for item in _maps(_map(projection, "downwardAPI"), "items"):
            _field_ref(item.get("fieldRef"))
        token = _map(projection, "serviceAccountToken")
        if token is not None:
            _default(token, "expirationSeconds", 3600, pointer=True)
    iscsi = _map(volume, "iscsi")
    if iscsi is not None:
        _default(iscsi, "iscsiInterface", "default")
    rbd = _map(volume, "rbd")
    if rbd is not None:
        _default(rbd, "pool", "rbd")
        _default(rbd, "user", "admin")
        _default(rbd, "keyring", "/etc/ceph/keyring")
    azure = _map(volume, "azureDisk")
    if azure is not None:
        _default(azure, "cachingMode", "ReadWrite", pointer=True)
        _default(azure, "kind", "Shared", pointer=True)
        _default(azure, "fsType", "ext4", pointer=True)
        _default(azure, "readOnly", False, pointer=True)
    scale_io = _map(volume, "scaleIO")
    if scale_io is not None:
        _default(scale_io, "storageMode", "ThinProvisioned")
        _default(scale_io, "fsType", "xfs")
    claim = _map(_map(volume, "ephemeral"), "volumeClaimTemplate")
    if claim is not None:
        _object_meta(claim)
        _pvc_spec(claim.get("spec"))


def _pod_spec(spec: dict[str, Any]) -> None:
    """SetDefaults_PodSpec plus volumes and all three container lists."""
    _default(spec, "dnsPolicy", "ClusterFirst")
    _default(spec, "restartPolicy", "Always")
    _default(spec, "securityContext", {}, pointer=True)
    _default(spec, "terminationGracePeriodSeconds", 30, pointer=True)
    _default(spec, "schedulerName", "default-scheduler")
    for volume in _maps(spec, "volumes"):
        _volume(volume)
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in _maps(spec, key):
            _container(container)


def _pod_template(template: Any) -> None:
    """A PodTemplateSpec embedded in a workload (non-pointer: metadata and spec always exist)."""
    if not isinstance(template, dict):
        return
    _object_meta(template)
    spec = _ensure_map(template, "spec")
    if spec is not None:
        _pod_spec(spec)


def _template_labels(spec: Any) -> dict[str, Any] | None:
    return _map(_map(_map(spec, "template"), "metadata"), "labels")


# --------------------------------------------------------------------------- object defaulters


def _pod(obj: dict[str, Any]) -> None:
    """SetObjectDefaults_Pod: pod spec, plus the Pod-only rules of SetDefaults_Pod."""
    spec = _ensure_map(obj, "spec")
    if spec is None:
        return
    for key in ("containers", "initContainers"):
        for container in _maps(spec, key):
            resources = _map(container, "resources")
            limits = _map(resources, "limits")
            if resources is not None and limits is not None:
                requests = _ensure_map(resources, "requests")
                if requests is not None:
                    for name, value in limits.items():
                        requests.setdefault(name, copy.deepcopy(value))
    _default(spec, "enableServiceLinks", True, pointer=True)
    if spec.get("hostNetwork") is True:
        for key in ("containers", "initContainers"):
            for container in _maps(spec, key):
                for port in _maps(container, "ports"):
                    if _empty(port, "hostPort"):
                        port["hostPort"] = port.get("containerPort")
    _pod_spec(spec)


def _pod_template_object(obj: dict[str, Any]) -> None:
    """SetObjectDefaults_PodTemplate."""
    _pod_template(obj.get("template"))


def _replication_controller(obj: dict[str, Any]) -> None:
    """SetDefaults_ReplicationController (+ declarative replicas default)."""
    spec = _ensure_map(obj, "spec")
    if spec is None:
        return
    labels = _template_labels(spec)
    if labels is not None:
        if not spec.get("selector"):
            spec["selector"] = copy.deepcopy(labels)
        meta = _ensure_map(obj, "metadata")
        if meta is not None and not meta.get("labels"):
            meta["labels"] = copy.deepcopy(labels)
    _default(spec, "replicas", 1, pointer=True)
    _pod_template(spec.get("template"))


def _service(obj: dict[str, Any]) -> None:
    """SetDefaults_Service; allocated fields (clusterIP, ipFamilies, nodePort) are not defaults."""
    spec = _ensure_map(obj, "spec")
    if spec is None:
        return
    _default(spec, "sessionAffinity", "None")
    if spec.get("sessionAffinity") == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec.get("sessionAffinity") == "ClientIP":
        client_ip = _map(_map(spec, "sessionAffinityConfig"), "clientIP")
        if client_ip is None or _unset(client_ip, "timeoutSeconds"):
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    _default(spec, "type", "ClusterIP")
    for port in _maps(spec, "ports"):
        _default(port, "protocol", "TCP")
        if port.get("targetPort") in (None, 0, "") and "port" in port:
            port["targetPort"] = port["port"]
    kind = spec.get("type")
    externally_accessible = kind in ("LoadBalancer", "NodePort") or (
        kind == "ClusterIP" and bool(spec.get("externalIPs"))
    )
    if externally_accessible:
        _default(spec, "externalTrafficPolicy", "Cluster")
    if kind in ("NodePort", "LoadBalancer", "ClusterIP"):
        _default(spec, "internalTrafficPolicy", "Cluster", pointer=True)
    if kind == "LoadBalancer":
        _default(spec, "allocateLoadBalancerNodePorts", True, pointer=True)


def _secret(obj: dict[str, Any]) -> None:
    """SetDefaults_Secret."""
    _default(obj, "type", "Opaque")


def _namespace(obj: dict[str, Any]) -> None:
    """SetDefaults_Namespace: the `kubernetes.io/metadata.name` label."""
    meta = _map(obj, "metadata")
    name = meta.get("name") if meta is not None else None
    if meta is not None and isinstance(name, str) and name:
        labels = _ensure_map(meta, "labels")
        if labels is not None:
            labels["kubernetes.io/metadata.name"] = name


def _persistent_volume_claim(obj: dict[str, Any]) -> None:
    """SetDefaults_PersistentVolumeClaimSpec (status is left alone)."""
    _pvc_spec(obj.get("spec"))


def _persistent_volume(obj: dict[str, Any]) -> None:
    """SetDefaults_PersistentVolume (spec part)."""
    spec = _ensure_map(obj, "spec")
    if spec is None:
        return
    _default(spec, "persistentVolumeReclaimPolicy", "Retain")
    _default(spec, "volumeMode", "Filesystem", pointer=True)
    host_path = _map(spec, "hostPath")
    if host_path is not None:
        _default(host_path, "type", "", pointer=True)


def _endpoints(obj: dict[str, Any]) -> None:
    """SetDefaults_Endpoints."""
    for subset in _maps(obj, "subsets"):
        for port in _maps(subset, "ports"):
            _default(port, "protocol", "TCP")


def _deployment(obj: dict[str, Any]) -> None:
    """SetDefaults_Deployment (apps/v1) and its pod template."""
    spec = _ensure_map(obj, "spec")
    if spec is None:
        return
    _default(spec, "replicas", 1, pointer=True)
    strategy = _ensure_map(spec, "strategy")
    if strategy is not None:
        _default(strategy, "type", "RollingUpdate")
        if strategy.get("type") == "RollingUpdate":
            rolling = _ensure_map(strategy, "rollingUpdate")
            if rolling is not None:
                _default(rolling, "maxUnavailable", "25%", pointer=True)
                _default(rolling, "maxSurge", "25%", pointer=True)
    _default(spec, "revisionHistoryLimit", 10, pointer=True)
    _default(spec, "progressDeadlineSeconds", 600, pointer=True)
    _pod_template(spec.get("template"))


def _daemon_set(obj: dict[str, Any]) -> None:
    """SetDefaults_DaemonSet."""
    spec = _ensure_map(obj, "spec")
    if spec is None:
        return
    strategy = _ensure_map(spec, "updateStrategy")
    if strategy is not None:
        _default(strategy, "type", "RollingUpdate")
        if strategy.get("type") == "RollingUpdate":
            rolling = _ensure_map(strategy, "rollingUpdate")
            if rolling is not None:
                _default(rolling, "maxUnavailable", 1, pointer=True)
                _default(rolling, "maxSurge", 0, pointer=True)
    _default(spec, "revisionHistoryLimit", 10, pointer=True)
    _pod_template(spec.get("template"))


def _stateful_set(obj: dict[str, Any]) -> None:
    """SetDefaults_StatefulSet (StatefulSetAutoDeletePVC on, as in 1.27+) and claim templates."""
    spec = _ensure_map(obj, "spec")
    if spec is None:
        return
    _default(spec, "podManagementPolicy", "OrderedReady")
    strategy = _ensure_map(spec, "updateStrategy")
    if strategy is not None:
        if _empty(strategy, "type"):
            strategy["type"] = "RollingUpdate"
            if strategy.get("rollingUpdate") is None:
                strategy["rollingUpdate"] = {}
        rolling = _map(strategy, "rollingUpdate")
        if strategy.get("type") == "RollingUpdate" and rolling is not None:
            _default(rolling, "partition", 0, pointer=True)
    retention = _ensure_map(spec, "persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        _default(retention, "whenDeleted", "Retain")
        _default(retention, "whenScaled", "Retain")
    _default(spec, "replicas", 1, pointer=True)
    _default(spec, "revisionHistoryLimit", 10, pointer=True)
    _pod_template(spec.get("template"))
    _claim_templates(spec)


def _claim_templates(spec: dict[str, Any]) -> None:
    """SetDefaults_PersistentVolumeClaim(Spec) on each claim template, as Argo CD applies them.

    Argo CD defaults a typed copy and patches the JSON with the difference. `volumeClaimTemplates`
    is an atomic list, so when defaulting changes any claim the patch replaces the whole list with
    its typed encoding, and Go (k8s.io/apimachinery before v0.34, as Argo CD v2.14 links it)
    writes `creationTimestamp: null` into each claim's metadata. When nothing changes the list
    stays as the JSON had it: with `creationTimestamp: null` from API servers before 1.34, without
    from 1.34 on. So a claim template git rewrites (the server's status and volumeMode gone from
    the predicted list) differs from a 1.34+ server's live list by that null alone.
    """
    claims = _maps(spec, "volumeClaimTemplates")
    before = model.copy_json(claims)
    for claim in claims:
        _pvc_spec(claim.get("spec"))
        status = _ensure_map(claim, "status")
        if status is not None:
            _default(status, "phase", "Pending")
    if claims != before:
        for claim in claims:
            _object_meta(claim)


def _replica_set(obj: dict[str, Any]) -> None:
    """SetDefaults_ReplicaSet."""
    spec = _ensure_map(obj, "spec")
    if spec is None:
        return
    _default(spec, "replicas", 1, pointer=True)
    _pod_template(spec.get("template"))


def _job_spec(spec: dict[str, Any]) -> None:
    """SetDefaults_Job's spec part (JobPodReplacementPolicy on, as in 1.29+)."""
    if _unset(spec, "completions") and _unset(spec, "parallelism"):
        spec["completions"] = 1
        spec["parallelism"] = 1
    _default(spec, "parallelism", 1, pointer=True)
    if _unset(spec, "backoffLimit"):
        spec["backoffLimit"] = 2**31 - 1 if spec.get("backoffLimitPerIndex") is not None else 6
    _default(spec, "completionMode", "NonIndexed", pointer=True)
    _default(spec, "suspend", False, pointer=True)
    failure_policy = _map(spec, "podFailurePolicy")
    for rule in _maps(failure_policy, "rules"):
        for pattern in _maps(rule, "onPodConditions"):
            _default(pattern, "status", "True")
    if _unset(spec, "podReplacementPolicy"):
        spec["podReplacementPolicy"] = "Failed" if failure_policy else "TerminatingOrFailed"


def _job(obj: dict[str, Any]) -> None:
    """SetDefaults_Job: spec defaults, and the Job's labels copied from its template when unset."""
    spec = _ensure_map(obj, "spec")
    if spec is None:
        return
    _job_spec(spec)
    labels = _template_labels(spec)
    meta = _ensure_map(obj, "metadata")
    if labels is not None and meta is not None and not meta.get("labels"):
        meta["labels"] = copy.deepcopy(labels)
    _pod_template(spec.get("template"))


def _cron_job(obj: dict[str, Any]) -> None:
    """SetDefaults_CronJob; the job template gets pod defaults but not SetDefaults_Job."""
    spec = _ensure_map(obj, "spec")
    if spec is None:
        return
    _default(spec, "concurrencyPolicy", "Allow")
    _default(spec, "suspend", False, pointer=True)
    _default(spec, "successfulJobsHistoryLimit", 3, pointer=True)
    _default(spec, "failedJobsHistoryLimit", 1, pointer=True)
    job_template = _ensure_map(spec, "jobTemplate")
    if job_template is not None:
        _object_meta(job_template)
        job_spec = _ensure_map(job_template, "spec")
        if job_spec is not None:
            _pod_template(job_spec.get("template"))


def _network_policy(obj: dict[str, Any]) -> None:
    """SetDefaults_NetworkPolicy (policyTypes) and SetDefaults_NetworkPolicyPort (protocol)."""
    spec = _ensure_map(obj, "spec")
    if spec is None:
        return
    for direction in ("ingress", "egress"):
        for rule in _maps(spec, direction):
            for port in _maps(rule, "ports"):
                _default(port, "protocol", "TCP", pointer=True)
    if not spec.get("policyTypes"):
        types = ["Ingress"]
        if spec.get("egress"):
            types.append("Egress")
        spec["policyTypes"] = types


_RBAC = "rbac.authorization.k8s.io"


def _role_binding(obj: dict[str, Any]) -> None:
    """SetDefaults_(Cluster)RoleBinding and SetDefaults_Subject: API groups of roleRef/subjects."""
    role_ref = _map(obj, "roleRef")
    if role_ref is not None:
        _default(role_ref, "apiGroup", _RBAC)
    for subject in _maps(obj, "subjects"):
        if _empty(subject, "apiGroup") and subject.get("kind") in ("User", "Group"):
            subject["apiGroup"] = _RBAC


_ADMISSION = "admissionregistration.k8s.io"


def _webhook_configuration(mutating: bool) -> _Defaulter:
    """SetDefaults_{Mutating,Validating}Webhook, SetDefaults_Rule and SetDefaults_ServiceReference
    for every webhook of a (Mutating|Validating)WebhookConfiguration."""

    def default(obj: dict[str, Any]) -> None:
        for webhook in _maps(obj, "webhooks"):
            _default(webhook, "failurePolicy", "Fail", pointer=True)
            _default(webhook, "matchPolicy", "Equivalent", pointer=True)
            _default(webhook, "namespaceSelector", {}, pointer=True)
            _default(webhook, "objectSelector", {}, pointer=True)
            _default(webhook, "timeoutSeconds", 10, pointer=True)
            if mutating:
                _default(webhook, "reinvocationPolicy", "Never", pointer=True)
            for rule in _maps(webhook, "rules"):
                _default(rule, "scope", "*", pointer=True)
            service = _map(_map(webhook, "clientConfig"), "service")
            if service is not None:
                _default(service, "port", 443, pointer=True)

    return default


# --------------------------------------------------------------------------- retired versions
# apps/v1beta1, apps/v1beta2 and extensions/v1beta1 are no longer served, but Argo CD's scheme
# still decodes and defaults them, so manifests written against them compare as they always did.


def _selector_and_labels_from_template(obj: dict[str, Any], spec: dict[str, Any]) -> None:
    """The beta workload defaulters copy the template labels to an unset selector and to the
    object's own labels when it has none."""
    labels = _template_labels(spec)
    if labels is None:
        return
    if spec.get("selector") is None:
        spec["selector"] = {"matchLabels": copy.deepcopy(labels)}
    meta = _ensure_map(obj, "metadata")
    if meta is not None and not meta.get("labels"):
        meta["labels"] = copy.deepcopy(labels)


def _beta_deployment(
    revision_history: int, progress_deadline: int | None, max_unavailable: Any, max_surge: Any
) -> _Defaulter:
    def default(obj: dict[str, Any]) -> None:
        spec = _ensure_map(obj, "spec")
        if spec is None:
            return
        _selector_and_labels_from_template(obj, spec)
        _default(spec, "replicas", 1, pointer=True)
        strategy = _ensure_map(spec, "strategy")
        if strategy is not None:
            _default(strategy, "type", "RollingUpdate")
            if strategy.get("type") == "RollingUpdate":
                rolling = _ensure_map(strategy, "rollingUpdate")
                if rolling is not None:
                    _default(rolling, "maxUnavailable", max_unavailable, pointer=True)
                    _default(rolling, "maxSurge", max_surge, pointer=True)
        _default(spec, "revisionHistoryLimit", revision_history, pointer=True)
        if progress_deadline is not None:
            _default(spec, "progressDeadlineSeconds", progress_deadline, pointer=True)
        _pod_template(spec.get("template"))

    return default


def _beta1_stateful_set(obj: dict[str, Any]) -> None:
    """apps/v1beta1 SetDefaults_StatefulSet: as apps/v1, but the update strategy is OnDelete."""
    spec = _ensure_map(obj, "spec")
    if spec is None:
        return
    _selector_and_labels_from_template(obj, spec)
    strategy = _ensure_map(spec, "updateStrategy")
    if strategy is not None and _empty(strategy, "type"):
        strategy["type"] = "OnDelete"
    _stateful_set(obj)


def _beta_daemon_set(update: str) -> _Defaulter:
    def default(obj: dict[str, Any]) -> None:
        spec = _ensure_map(obj, "spec")
        if spec is None:
            return
        _selector_and_labels_from_template(obj, spec)
        strategy = _ensure_map(spec, "updateStrategy")
        if strategy is not None and _empty(strategy, "type"):
            strategy["type"] = update
        _daemon_set(obj)

    return default


def _beta_replica_set(obj: dict[str, Any]) -> None:
    spec = _ensure_map(obj, "spec")
    if spec is not None:
        _selector_and_labels_from_template(obj, spec)
    _replica_set(obj)


_MAX_INT32 = 2**31 - 1

_DEFAULTERS: dict[tuple[str, str, str], _Defaulter] = {
    (_ADMISSION, "v1", "MutatingWebhookConfiguration"): _webhook_configuration(mutating=True),
    (_ADMISSION, "v1", "ValidatingWebhookConfiguration"): _webhook_configuration(mutating=False),
    ("apps", "v1beta1", "Deployment"): _beta_deployment(2, 600, "25%", "25%"),
    ("apps", "v1beta1", "StatefulSet"): _beta1_stateful_set,
    ("apps", "v1beta2", "Deployment"): _deployment,
    ("apps", "v1beta2", "StatefulSet"): _stateful_set,
    ("apps", "v1beta2", "DaemonSet"): _daemon_set,
    ("apps", "v1beta2", "ReplicaSet"): _replica_set,
    ("extensions", "v1beta1", "Deployment"): _beta_deployment(_MAX_INT32, _MAX_INT32, 1, 1),
    ("extensions", "v1beta1", "DaemonSet"): _beta_daemon_set("OnDelete"),
    ("extensions", "v1beta1", "ReplicaSet"): _beta_replica_set,
    ("", "v1", "Pod"): _pod,
    ("", "v1", "PodTemplate"): _pod_template_object,
    ("", "v1", "ReplicationController"): _replication_controller,
    ("", "v1", "Service"): _service,
    ("", "v1", "Secret"): _secret,
    ("", "v1", "Namespace"): _namespace,
    ("", "v1", "PersistentVolumeClaim"): _persistent_volume_claim,
    ("", "v1", "PersistentVolume"): _persistent_volume,
    ("", "v1", "Endpoints"): _endpoints,
    ("apps", "v1", "Deployment"): _deployment,
    ("apps", "v1", "DaemonSet"): _daemon_set,
    ("apps", "v1", "StatefulSet"): _stateful_set,
    ("apps", "v1", "ReplicaSet"): _replica_set,
    ("batch", "v1", "Job"): _job,
    ("batch", "v1", "CronJob"): _cron_job,
    ("networking.k8s.io", "v1", "NetworkPolicy"): _network_policy,
    (_RBAC, "v1", "RoleBinding"): _role_binding,
    (_RBAC, "v1", "ClusterRoleBinding"): _role_binding,
}
