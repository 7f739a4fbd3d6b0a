"""Detector immutable-field: git changes a field the API server refuses to change after creation,
so every sync of the object fails with 422 Invalid and nothing of the object is written.

Which fields, from Kubernetes' own update validation (v1.36 keeps them):
- Deployment, ReplicaSet, DaemonSet `spec.selector` (apps/v1: `pkg/registry/apps/*/strategy.go`
  ValidateUpdate, ValidateImmutableField on the selector);
- StatefulSet: every `spec` field but replicas, ordinals, template, updateStrategy,
  persistentVolumeClaimRetentionPolicy and minReadySeconds (`ValidateStatefulSetUpdate`:
  "updates to statefulset spec for fields other than ... are forbidden"), so `selector`,
  `serviceName`, `volumeClaimTemplates`, `podManagementPolicy`, `revisionHistoryLimit`;
- Job `spec.selector`, `spec.template` (a suspended Job that never started may change its
  scheduling directives, labels and annotations), `spec.completions` (an Indexed Job may change it
  together with parallelism), `completionMode`, `podFailurePolicy`, `backoffLimitPerIndex`
  (`ValidateJobSpecUpdate`);
- Service `spec.clusterIP` and `spec.clusterIPs` once set, unless either side is ExternalName
  (`ValidateServiceUpdate`, `validateUpgradeDowngradeClusterIPs`; git leaving it empty is fine:
  the server keeps the allocated address);
- PersistentVolumeClaim `spec`, except `resources.requests` and `volumeAttributesClassName` of a
  bound claim and a `volumeName` set for the first time (`ValidatePersistentVolumeClaimUpdate`);
- ConfigMap `data`, `binaryData` and `immutable`, and Secret `data` and `immutable`, once live
  says `immutable: true`; Secret `type` always (`ValidateConfigMapUpdate`, `ValidateSecretUpdate`);
- RoleBinding and ClusterRoleBinding `roleRef` ("cannot change roleRef").
Any other kind counts when the failed sync's own 422 names the field (a CRD's `self == oldSelf`).

The cause claims each changed field under an immutable one; the other changes of the same object
that Argo CD applied before (git moved them too) are claimed beside it, held back by it: the
server rejects the whole patch. The fix is a replace (sync `--force --replace`), a planned delete
and re-create, or a commit that keeps the old value (adopt); a sync alone never gets there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.diagnose import attribution, policies, rules, syncfailures
from kubectl_gitdrift.diagnose.causes import Cause

CODE = "immutable-field"

Check = Callable[[model.FieldPath, Mapping[str, Any], Mapping[str, Any]], "model.FieldPath | None"]
"""(change path, live, desired) -> the immutable field the change falls under, or None."""


def detect(ctx: rules.Context) -> Iterator[Cause]:
    for drift in ctx.drifts:
        if drift.status is not model.ResourceStatus.OUT_OF_SYNC or not drift.changes:
            continue
        if drift.live is None:
            continue
        yield from _causes(ctx, drift)


def _causes(ctx: rules.Context, drift: model.Drift) -> Iterator[Cause]:
    key = drift.key
    live, desired = drift.live or {}, drift.desired or {}
    check = CHECKS.get((key.group, key.kind))
    result = syncfailures.failed_result(ctx.app, key)
    said = syncfailures.immutable_errors(result.message) if result is not None else []
    # the table knows its kinds; a 422's bare `spec` (StatefulSet, PVC) is what the table details
    named = [e.path for e in said if check is None or len(e.path) > 1]
    roots: dict[model.FieldPath, model.FieldPath] = {}
    for change in drift.changes:
        if (key.group, key.kind) == ("apps", "StatefulSet") and _server_filled_claim(change):
            continue
        root = check(change.path, live, desired) if check is not None else None
        if root is None:
            root = next((p for p in named if change.path[: len(p)] == p), None)
        if root is not None:
            roots[change.path] = root
    if not roots:
        return
    fixes = fixes_for(ctx.app, key, sorted({_field(r) for r in roots.values()}))
    base: dict[str, Any] = {"kind": f"{key.group}/{key.kind}"}
    if result is not None:
        base["syncResult"] = {"status": result.status, "message": result.message}
    op = syncfailures.failed(ctx.app)
    if op is not None:
        base["lastSync"] = {"phase": op.phase, "revision": op.revision, "message": op.message}
    fields = sorted({_field(r) for r in roots.values()})
    for change in drift.changes:
        root = roots.get(change.path)
        if root is not None:
            field = _field(root)
            yield Cause(
                CODE,
                key,
                change.path,
                evidence={
                    **base,
                    "field": field,
                    "rule": RULES_TEXT.get((key.group, key.kind), "the server's own 422"),
                    "reported": any(e.path == root[: len(e.path)] for e in said),
                },
                fixes=fixes,
                adoptable=True,
                revertable=False,
            )
        elif _applied_by_argocd(ctx, key, change):
            yield Cause(
                CODE,
                key,
                change.path,
                evidence={**base, "heldBy": fields},
                fixes=fixes,
                adoptable=True,
                revertable=False,
            )


def _applied_by_argocd(ctx: rules.Context, key: model.ObjectKey, change: model.Change) -> bool:
    """The live value is Argo CD's earlier apply (git moved it), not another writer's."""
    clue = ctx.clue(key, change.path)
    kind = clue.kind if clue is not None else attribution.writer_kind(change.owner)
    return kind in ("argocd", "unknown")


def _field(path: model.FieldPath) -> str:
    return model.display_path(path)


# --------------------------------------------------------------------------- the table


def _under(path: model.FieldPath, *root: model.PathElem) -> model.FieldPath | None:
    return tuple(root) if path[: len(root)] == root else None


def _selector(
    path: model.FieldPath, live: Mapping[str, Any], desired: Mapping[str, Any]
) -> model.FieldPath | None:
    return _under(path, "spec", "selector")


_STS_MUTABLE = frozenset(
    {
        "replicas",
        "ordinals",
        "template",
        "updateStrategy",
        "persistentVolumeClaimRetentionPolicy",
        "minReadySeconds",
    }
)
_SERVER_FILLED_CLAIM = ("apiVersion", "kind", "status")


def _statefulset(
    path: model.FieldPath, live: Mapping[str, Any], desired: Mapping[str, Any]
) -> model.FieldPath | None:
    if len(path) < 2 or path[0] != "spec" or path[1] in _STS_MUTABLE:
        return None
    return ("spec", str(path[1]))


def _server_filled_claim(change: model.Change) -> bool:
    """A StatefulSet claim-template difference that is only what the server fills into each
    claim (apiVersion, kind, status, a null creationTimestamp): server-filled's, not git's."""
    path = change.path
    if path[:2] != ("spec", "volumeClaimTemplates"):
        return False
    if len(path) == 2:
        return _claims(change.desired) == _claims(change.live)
    if len(path) == 3:
        return _claims([change.desired]) == _claims([change.live])
    if path[3] in _SERVER_FILLED_CLAIM:
        return True
    return path[3:5] == ("metadata", "creationTimestamp")


def _claims(items: Any) -> list[Any]:
    out = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping):
            out.append(item)
            continue
        kept = {k: v for k, v in item.items() if k not in _SERVER_FILLED_CLAIM}
        meta = kept.get("metadata")
        if isinstance(meta, Mapping):
            kept["metadata"] = {k: v for k, v in meta.items() if k != "creationTimestamp"}
        out.append(kept)
    return out


_JOB_IMMUTABLE = ("selector", "completionMode", "podFailurePolicy", "backoffLimitPerIndex")
_JOB_SCHEDULING = (
    ("metadata", "labels"),
    ("metadata", "annotations"),
    ("spec", "nodeSelector"),
    ("spec", "tolerations"),
    ("spec", "affinity", "nodeAffinity"),
    ("spec", "schedulingGates"),
)


def _job(
    path: model.FieldPath, live: Mapping[str, Any], desired: Mapping[str, Any]
) -> model.FieldPath | None:
    if len(path) < 2 or path[0] != "spec":
        return None
    if path[1] in _JOB_IMMUTABLE:
        return ("spec", path[1])
    spec = live.get("spec") or {}
    if path[1] == "template":
        suspended = spec.get("suspend") is True and not (live.get("status") or {}).get("startTime")
        inner = path[2:]
        if suspended and any(inner[: len(p)] == p for p in _JOB_SCHEDULING):
            return None
        return ("spec", "template")
    if path[1] == "completions":
        want = desired.get("spec") or {}
        if want.get("completionMode") == "Indexed" and want.get("completions") == want.get(
            "parallelism"
        ):
            return None  # elastic Indexed Job: completions changes with parallelism
        return ("spec", "completions")
    return None


def _service(
    path: model.FieldPath, live: Mapping[str, Any], desired: Mapping[str, Any]
) -> model.FieldPath | None:
    if len(path) < 2 or path[:1] != ("spec",) or path[1] not in ("clusterIP", "clusterIPs"):
        return None
    old, new = live.get("spec") or {}, desired.get("spec") or {}
    if "ExternalName" in (old.get("type"), new.get("type")):
        return None
    if path[1] == "clusterIP":
        before, after = old.get("clusterIP"), new.get("clusterIP")
    else:
        before, after = _first(old.get("clusterIPs")), _first(new.get("clusterIPs"))
    if before and after and before != after:  # git leaving it empty keeps the allocated one
        return ("spec", str(path[1]))
    return None


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else None


def _pvc(
    path: model.FieldPath, live: Mapping[str, Any], desired: Mapping[str, Any]
) -> model.FieldPath | None:
    if len(path) < 2 or path[0] != "spec":
        return None
    bound = (live.get("status") or {}).get("phase") == "Bound"
    if bound and (path[1:3] == ("resources", "requests") or path[1] == "volumeAttributesClassName"):
        return None
    if path[1] == "volumeName" and not (live.get("spec") or {}).get("volumeName"):
        return None  # binding sets it once
    return ("spec",)


def _configmap(
    path: model.FieldPath, live: Mapping[str, Any], desired: Mapping[str, Any]
) -> model.FieldPath | None:
    if live.get("immutable") is not True or not path:
        return None
    return (path[0],) if path[0] in ("data", "binaryData", "immutable") else None


def _secret(
    path: model.FieldPath, live: Mapping[str, Any], desired: Mapping[str, Any]
) -> model.FieldPath | None:
    if path == ("type",):
        return ("type",) if live.get("type") and desired.get("type") else None
    if live.get("immutable") is not True or not path:
        return None
    return (path[0],) if path[0] in ("data", "immutable") else None


def _role_ref(
    path: model.FieldPath, live: Mapping[str, Any], desired: Mapping[str, Any]
) -> model.FieldPath | None:
    return _under(path, "roleRef")


RBAC = "rbac.authorization.k8s.io"
CHECKS: dict[tuple[str, str], Check] = {
    ("apps", "Deployment"): _selector,
    ("apps", "ReplicaSet"): _selector,
    ("apps", "DaemonSet"): _selector,
    ("apps", "StatefulSet"): _statefulset,
    ("batch", "Job"): _job,
    ("", "Service"): _service,
    ("", "PersistentVolumeClaim"): _pvc,
    ("", "ConfigMap"): _configmap,
    ("", "Secret"): _secret,
    (RBAC, "RoleBinding"): _role_ref,
    (RBAC, "ClusterRoleBinding"): _role_ref,
}
"""(group, kind) -> which changed paths the API server refuses on update."""

RULES_TEXT: dict[tuple[str, str], str] = {
    ("apps", "Deployment"): "apps/v1 Deployments may not change spec.selector",
    ("apps", "ReplicaSet"): "apps/v1 ReplicaSets may not change spec.selector",
    ("apps", "DaemonSet"): "apps/v1 DaemonSets may not change spec.selector",
    ("apps", "StatefulSet"): (
        "a StatefulSet may change only replicas, ordinals, template, updateStrategy, "
        "persistentVolumeClaimRetentionPolicy and minReadySeconds of its spec"
    ),
    ("batch", "Job"): (
        "a Job may not change spec.selector, spec.template, spec.completions, "
        "completionMode, podFailurePolicy or backoffLimitPerIndex"
    ),
    ("", "Service"): "a Service's clusterIP and clusterIPs may not change once set",
    ("", "PersistentVolumeClaim"): (
        "a PersistentVolumeClaim's spec is immutable after creation except resources.requests "
        "and volumeAttributesClassName of a bound claim"
    ),
    ("", "ConfigMap"): "a ConfigMap with immutable: true may not change data or binaryData",
    ("", "Secret"): "a Secret may not change its type, nor its data once immutable: true",
    (RBAC, "RoleBinding"): "a RoleBinding may not change its roleRef",
    (RBAC, "ClusterRoleBinding"): "a ClusterRoleBinding may not change its roleRef",
}


# --------------------------------------------------------------------------- the fixes

_WHAT_BREAKS: dict[tuple[str, str], str] = {
    ("apps", "Deployment"): (
        "deleting the Deployment deletes its ReplicaSets and pods: every pod restarts at once, "
        "not as a rolling update; to keep serving, delete it with --cascade=orphan (the old pods "
        "keep running), sync, then delete the old ReplicaSet once the new pods are ready"
    ),
    ("apps", "ReplicaSet"): "deleting the ReplicaSet deletes its pods: they all restart at once",
    ("apps", "DaemonSet"): (
        "deleting the DaemonSet deletes its pods on every node: they all restart at once"
    ),
    ("apps", "StatefulSet"): (
        "deleting the StatefulSet deletes its pods; delete it with --cascade=orphan instead: the "
        "pods keep running and the PVCs made from its volumeClaimTemplates keep their data, and "
        "the new StatefulSet adopts the pods its selector still matches. The claims are never "
        "changed by the StatefulSet: resize or re-create each PVC by hand if its template changed"
    ),
    ("batch", "Job"): "deleting the Job deletes its pods: a running Job starts again from scratch",
    ("", "Service"): (
        "the re-created Service gets a new cluster IP (a LoadBalancer Service a new load "
        "balancer); clients holding the old address lose their connections"
    ),
    ("", "PersistentVolumeClaim"): (
        "deleting the claim deletes its volume and data when the PersistentVolume's "
        "reclaimPolicy is Delete (the default for dynamically provisioned volumes), and it waits "
        "while a pod still mounts it (finalizer kubernetes.io/pvc-protection): copy the data, or "
        "set the volume's reclaimPolicy to Retain and bind the new claim to it, first"
    ),
    ("", "ConfigMap"): (
        "pods that mount it keep the old content until they restart; a new name (and a rollout "
        "of its users) is the usual way to change an immutable ConfigMap"
    ),
    ("", "Secret"): (
        "pods that mount it keep the old content until they restart; a new name (and a rollout "
        "of its users) is the usual way to change an immutable Secret"
    ),
    (RBAC, "RoleBinding"): "its subjects lose the role between the delete and the create",
    (RBAC, "ClusterRoleBinding"): "its subjects lose the role between the delete and the create",
}
_DEFAULT_BREAKS = "what only the live object has (status, fields other writers set) is lost"


def what_breaks(key: model.ObjectKey) -> str:
    return _WHAT_BREAKS.get((key.group, key.kind), _DEFAULT_BREAKS)


def fixes_for(
    app: model.Application, key: model.ObjectKey, fields: list[str]
) -> tuple[model.Remedy, ...]:
    """Replace it (sync --force --replace) and a planned delete and re-create; the third way, a
    commit keeping the old value, is the adopt remedy (the cause is adoptable)."""
    name = policies.app_arg(app)
    flag = f"{key.group}:{key.kind}:" + (
        f"{key.namespace}/{key.name}" if key.namespace else key.name
    )
    which = ", ".join(fields)
    ns = f" -n {key.namespace}" if key.namespace else ""
    breaks = what_breaks(key)
    orphan = key.group == "apps" and key.kind in ("Deployment", "StatefulSet")
    replace = model.Remedy(
        model.RemedyKind.REVERT,
        f"Replace {key.short()} from git (sync with --force --replace)",
        steps=(
            (
                f"a sync patches {which}, and Replace=true alone sends a PUT: the server "
                "refuses both with the same 422; with --force and --replace Argo CD deletes the "
                "object and creates it from git (kubectl replace --force)"
            ),
            breaks,
            (
                "or set it in git for this object alone, annotation "
                "argocd.argoproj.io/sync-options: Force=true,Replace=true, and take it out again "
                "once synced: every sync of the object re-creates it while it is there"
            ),
        ),
        commands=(f"argocd app sync {name} --resource {flag} --force --replace",),
        snippet=(
            "metadata:\n  annotations:\n"
            "    argocd.argoproj.io/sync-options: Force=true,Replace=true\n"
        ),
    )
    recreate = model.Remedy(
        model.RemedyKind.REVERT,
        f"Delete and re-create {key.short()} (planned)",
        steps=(
            (
                "delete it at a moment that suits, then sync: Argo CD creates it from git "
                f"with the new {which}"
            ),
            breaks,
        ),
        commands=(
            f"kubectl delete {key.short()}{ns}" + (" --cascade=orphan" if orphan else ""),
            f"argocd app sync {name} --resource {flag}",
        ),
    )
    return (replace, recreate)
