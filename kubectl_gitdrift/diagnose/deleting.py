"""Detects stuck-deleting: a live object of the app has `metadata.deletionTimestamp` and
finalizers that nobody removes.

A DELETE of an object with finalizers answers 200 with the object, now carrying
`deletionTimestamp`; the object stays, readable, until every finalizer is gone (kube-apiserver
v1.36, testdata/apiserver/v1.36/finalizer-*): `foregroundDeletion` is removed by the garbage
collector, a custom finalizer only by whatever owns it. The cause claims the whole resource
(and each of its changed fields, so no other cause tells a story about them). Pure.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import fields
from kubectl_gitdrift.diagnose import audit
from kubectl_gitdrift.diagnose import rules as diagnosis
from kubectl_gitdrift.diagnose.causes import Cause

CODE = "stuck-deleting"

KNOWN = {
    "kubernetes.io/pvc-protection": (
        "the PVC protection controller (kube-controller-manager), once no pod uses the claim"
    ),
    "kubernetes.io/pv-protection": (
        "the PV protection controller (kube-controller-manager), once no claim is bound to it"
    ),
    "foregroundDeletion": (
        "the garbage collector (kube-controller-manager), once the dependents that block their "
        "owner's deletion are gone"
    ),
    "orphan": (
        "the garbage collector (kube-controller-manager), once it has orphaned the dependents"
    ),
    "kubernetes": "the namespace controller (kube-controller-manager), once the namespace is empty",
    "batch.kubernetes.io/job-tracking": "the Job controller, once it has counted the pod",
    "customresourcecleanup.apiextensions.k8s.io": (
        "the API server's CRD finalizer, once every custom resource of the CRD is deleted"
    ),
    "service.kubernetes.io/load-balancer-cleanup": (
        "the service controller (cloud-controller-manager), once the load balancer is deleted"
    ),
}
"""Finalizer -> what normally removes it."""

ARGOCD_PREFIXES = (
    "resources-finalizer.argocd.argoproj.io",
    "post-delete-finalizer.argocd.argoproj.io",
)


def remover(finalizer: str) -> str:
    """What normally removes a finalizer (for an unknown domain: whatever owns it)."""
    if finalizer in KNOWN:
        return KNOWN[finalizer]
    if finalizer.startswith(ARGOCD_PREFIXES):
        return (
            "Argo CD's app deletion (the application controller, once it has deleted the "
            "Application's resources)"
        )
    domain = finalizer.partition("/")[0] if "/" in finalizer else finalizer
    return (
        f"the controller that owns {domain}, which may be gone (uninstalled, scaled down, failing)"
    )


def detect(ctx: diagnosis.Context) -> Iterator[Cause]:
    for drift in ctx.drifts:
        live = drift.live
        if live is None:
            continue
        metadata = live.get("metadata") or {}
        since = metadata.get("deletionTimestamp")
        held = finalizers(live)
        if not since or not held:
            continue
        evidence: dict[str, Any] = {
            "deletionTimestamp": since,
            "deletionGracePeriodSeconds": metadata.get("deletionGracePeriodSeconds"),
            "finalizers": [
                {"name": name, "removedBy": remover(name), **_set_by(live, name)} for name in held
            ],
        }
        started, now = audit.parse_time(str(since)), audit.parse_time(ctx.now)
        if started is not None and now is not None and now >= started:
            evidence["deletingForSeconds"] = int((now - started).total_seconds())
            evidence["referenceTime"] = ctx.now
        fix, verify = _fix(drift.key, held), _verify(drift.key)
        for path in [None, *(c.path for c in drift.changes)]:
            yield Cause(
                code=CODE,
                key=drift.key,
                path=path,
                evidence=evidence,
                fixes=(fix, verify),
                adoptable=False,
                revertable=False,
            )


def finalizers(live: Mapping[str, Any]) -> list[str]:
    """metadata.finalizers, and a Namespace's spec.finalizers (`kubernetes`)."""
    out = [str(f) for f in (live.get("metadata") or {}).get("finalizers") or ()]
    if live.get("kind") == "Namespace" and not str(live.get("apiVersion") or "").count("/"):
        spec = live.get("spec") or {}
        out.extend(str(f) for f in spec.get("finalizers") or () if str(f) not in out)
    return out


def _set_by(live: Mapping[str, Any], name: str) -> dict[str, Any]:
    """Who set the finalizer, from managedFields (`v:"<name>"` under f:metadata.f:finalizers)."""
    item = "v:" + json.dumps(name)
    for entry in fields.entries(live):
        tree = entry.trie.get("f:metadata")
        held = tree.get("f:finalizers") if isinstance(tree, Mapping) else None
        if isinstance(held, Mapping) and item in held:
            return {"setBy": {"manager": entry.owner.manager, "time": entry.owner.time}}
    return {}


def _verify(key: model.ObjectKey) -> model.Remedy:
    ns = f" -n {key.namespace}" if key.namespace else ""
    jsonpath = "{.metadata.deletionTimestamp} {.metadata.finalizers}"
    return model.Remedy(
        model.RemedyKind.VERIFY,
        f"Verify the deletion of {key.short()} finished",
        steps=(
            (
                "NotFound once the finalizers are gone; after a sync, the object git has is "
                "back and prints no deletionTimestamp"
            ),
        ),
        commands=(f"kubectl get {key.short()}{ns} -o jsonpath='{jsonpath}'",),
    )


def _fix(key: model.ObjectKey, held: Sequence[str]) -> model.Remedy:
    ns = f" -n {key.namespace}" if key.namespace else ""
    custom = [f for f in held if f not in ("foregroundDeletion", "orphan")]
    patch = '[{"op":"remove","path":"/metadata/finalizers"}]'
    return model.Remedy(
        model.RemedyKind.REVERT,
        f"Let the deletion of {key.short()} finish",
        steps=(
            *(f"{name}: find or restore {remover(name)}" for name in custom or held),
            (
                "once the finalizers are gone the object is deleted, and a sync re-creates it "
                "from git if git still has it"
            ),
            (
                "last resort, when whatever owns the finalizer is gone for good: remove the "
                "finalizers by hand; WARNING: the cleanup they stand for (cloud resources, "
                "volumes, dependents) is then skipped and may leak"
            ),
        ),
        commands=(f"kubectl patch {key.short()}{ns} --type=json -p '{patch}'",),
    )
