"""Built-in rule builtin/missing-extraneous: objects git has and the cluster lacks, and back.

Codes: missing-resource, extraneous-resource.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubectl_gitdrift.builtin.rules._common import clue_for, explained
from kubectl_gitdrift.diagnose import tracking
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, ObjectKey, ResourceStatus, Severity

ID = "builtin/missing-extraneous"
SEVERITY = Severity.WARNING
CODES = ("missing-resource", "extraneous-resource")
DOC = "Objects git has that the cluster lacks, and tracked objects git no longer has."

KUSTOMIZE_GROUP = "kustomize.config.k8s.io"
"""The group of Kustomization and Component files (a kustomization.yaml read as a manifest)."""


def check(ctx: RuleContext) -> Iterator[Finding]:
    for drift in ctx.drifts:
        if explained(ctx, drift.key, None):
            continue  # a specific cause (crd-missing, ...) tells why and what to do
        if drift.status is ResourceStatus.MISSING:
            clue = clue_for(ctx, drift.key, ())
            evidence: dict[str, Any] = {"origin": drift.origin}
            deleted = ""
            if clue is not None and clue.write is not None:
                evidence["audit"] = clue.write.evidence()
                deleted = f" {clue.write.who} deleted it at {clue.write.time} (audit log)."
            generate_name = ((drift.desired or {}).get("metadata") or {}).get("generateName")
            if not drift.key.name and isinstance(generate_name, str) and generate_name:
                # not a hook: Argo CD looks it up by its empty name, never finds it, and each
                # sync creates another `<generateName><random>` (controller/state.go, Reconcile)
                evidence["generateName"] = generate_name
                yield Finding(
                    code="missing-resource",
                    severity=Severity.WARNING,
                    message=(
                        f"{drift.key.kind.lower()} with generateName {generate_name} has no "
                        "metadata.name and is not a hook: Argo CD never finds it in the cluster, "
                        "so the app stays OutOfSync and every sync creates another one."
                    ),
                    key=drift.key,
                    evidence=evidence,
                    hint="give it a metadata.name, or make it a hook "
                    "(annotation argocd.argoproj.io/hook: Sync)",
                )
                continue
            if not drift.key.name:
                yield _unnamed(drift.key, drift.origin, evidence)
                continue
            yield Finding(
                code="missing-resource",
                severity=Severity.WARNING,
                message=f"{drift.key.short()} is in git but not in the cluster.{deleted}",
                key=drift.key,
                evidence=evidence,
                hint=f"argocd app sync {ctx.app.name}",
            )
        elif drift.status is ResourceStatus.EXTRANEOUS and not explained(ctx, drift.key, None):
            # (one being deleted already: stuck-deleting says what holds it)
            prune = ctx.app.sync_policy.automated and ctx.app.sync_policy.prune
            annotations = ((drift.live or {}).get("metadata") or {}).get("annotations") or {}
            evidence = {
                "prune": prune,
                "trackingId": annotations.get(tracking.TRACKING_ID),
                "counts": drift.counts,
            }
            yield Finding(
                code="extraneous-resource",
                severity=Severity.WARNING,
                message=(
                    f"{drift.key.short()} is tracked by this app but no longer in git; "
                    + (
                        "automated prune will delete it at the next sync."
                        if prune
                        else "nothing deletes it until a sync with prune."
                    )
                ),
                key=drift.key,
                evidence=evidence,
                hint=f"argocd app sync {ctx.app.name} --prune",
            )


def _unnamed(key: ObjectKey, origin: str | None, evidence: dict[str, Any]) -> Finding:
    """An object git has with no metadata.name: a directory source keeps it, as Argo CD's
    directory reader does (a `kustomization.yaml` read as a plain file). Argo CD shows it
    OutOfSync and Missing, and a sync fails on it: the cluster serves no Kustomization (the
    sync's `get` on the kind), or the API server refuses an object without a name."""
    where = f" ({origin})" if origin else ""
    if key.group == KUSTOMIZE_GROUP:
        return Finding(
            code="missing-resource",
            severity=Severity.WARNING,
            message=(
                f"{key.kind}{where} is a kustomize file read as a manifest: the app's "
                "directory source keeps it as an object with no name, so Argo CD shows it "
                "Missing, the app stays OutOfSync and every sync fails on it (the cluster "
                f"serves no {key.group})."
            ),
            key=key,
            evidence=evidence,
            hint="leave it out with spec.source.directory.exclude: '*kustomization.yaml' "
            "(the glob also matches in subfolders), or drop the directory block so Argo CD "
            "builds the folder with kustomize",
        )
    return Finding(
        code="missing-resource",
        severity=Severity.WARNING,
        message=(
            f"{key.kind.lower()}{where} has no metadata.name: Argo CD shows it Missing, the app "
            "stays OutOfSync and every sync fails on it."
        ),
        key=key,
        evidence=evidence,
        hint="give it a metadata.name, or leave its file out with spec.source.directory.exclude",
    )
