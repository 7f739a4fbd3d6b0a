"""Detector crd-missing: git has an object of a kind the cluster does not serve (its
CustomResourceDefinition is not installed), so the object is Missing and every sync fails on it.

What says the kind is not served, strongest first: the failed sync's line for the object (Argo CD
checks every kind against discovery before it applies anything: `failed to discover server
resources for group version <gv>: the server could not find the requested resource`, the phase
message `one or more synchronization tasks are not valid`; kubectl's REST mapper says `no matches
for kind ...` / `ensure CRDs are installed first`), the sync's own message naming the kind, and
the run's discovery (a live run, or a snapshot it wrote, notes `<Kind>.<group> is not served by
the cluster`: the API server answers `GET /apis/<group>/<version>` with a plain-text `404 page not
found`). A CustomResourceDefinition for the kind among the live objects means it is served (or
about to be): no claim then, nor when this app renders the CRD and no sync failed yet (a sync
applies the CRDs it has before the objects of other kinds, gitops-engine's kind order, and waits
until they are established). Built-in groups are never claimed: a built-in kind that is not served
is a removed API version, not a missing CRD.

The cause claims the whole object (path None). The fix is the CRD first: from git when this app
renders it (named), or from whatever installs it (an operator's chart, before this app: sync
waves), with `SkipDryRunOnMissingResource=true` for the case where the CRD comes in the same sync.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.diagnose import policies, rules, syncfailures
from kubectl_gitdrift.diagnose.causes import Cause

CODE = "crd-missing"
CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")
_BUILTIN = re.compile(r"^$|\.k8s\.io$|^apps$|^batch$|^policy$|^autoscaling$|^extensions$")


def note(group: str, kind: str) -> str:
    """The note a live run leaves for a kind discovery does not list (live/listing.py's plan
    words it the same way; tests hold them together)."""
    name = f"{kind}.{group}" if group else kind
    return (
        f"{name} is not served by the cluster (is its CRD installed?): its objects count as Missing"
    )


def detect(ctx: rules.Context) -> Iterator[Cause]:
    served = _served_by_live_crds(ctx)
    in_git = _crds_in_git(ctx)
    for drift in ctx.drifts:
        key = drift.key
        if drift.status is not model.ResourceStatus.MISSING or _BUILTIN.search(key.group):
            continue
        if (key.group, key.kind) in served:
            continue
        evidence = _evidence(ctx, key)
        if not evidence:
            continue
        crd = in_git.get((key.group, key.kind))
        if crd is not None and not ({"syncResult", "lastSync"} & set(evidence)):
            continue  # a sync applies the app's CRD first (and skips the check): not a failure yet
        version = str((drift.desired or {}).get("apiVersion") or "")
        evidence = {
            "apiVersion": version or None,
            "kind": key.kind,
            "crd": crd[0] if crd is not None else crd_name(key.group, key.kind),
            "crdInGit": crd[1] if crd is not None else None,
            "skipCrds": _skips_crds(ctx.app) or None,
            **evidence,
        }
        yield Cause(
            CODE,
            key,
            None,
            evidence=evidence,
            fixes=fixes_for(ctx.app, key, evidence),
            adoptable=False,
            revertable=False,
        )


def _evidence(ctx: rules.Context, key: model.ObjectKey) -> dict[str, Any]:
    out: dict[str, Any] = {}
    op = syncfailures.failed(ctx.app)
    result = syncfailures.failed_result(ctx.app, key)
    if result is not None and syncfailures.says_unserved(result.message, key):
        out["syncResult"] = {"status": result.status, "message": result.message}
    if op is not None and (
        "syncResult" in out
        or (syncfailures.says_unserved(op.message, key) and _names(op.message, key))
    ):
        out["lastSync"] = {"phase": op.phase, "revision": op.revision, "message": op.message}
    said = note(key.group, key.kind)
    if said in ctx.notes:
        out["discovery"] = said
    return out


def _names(message: str, key: model.ObjectKey) -> bool:
    """The message is about this kind: it names the kind and its group."""
    return f'"{key.kind}"' in message and key.group in message


def _served_by_live_crds(ctx: rules.Context) -> set[tuple[str, str]]:
    out = set()
    for crd in ctx.of_kind(*CRD):
        group, kind = _crd_kind(crd.body)
        if group and kind:
            out.add((group, kind))
    return out


def _crds_in_git(ctx: rules.Context) -> dict[tuple[str, str], tuple[str, str | None]]:
    """(group, kind) -> (CRD name, the file that defines it) for the CRDs this app renders."""
    out: dict[tuple[str, str], tuple[str, str | None]] = {}
    for drift in ctx.drifts:
        if (drift.key.group, drift.key.kind) != CRD or drift.desired is None:
            continue
        group, kind = _crd_kind(drift.desired)
        if group and kind:
            out[(group, kind)] = (drift.key.name, drift.origin)
    return out


def _crd_kind(body: Mapping[str, Any]) -> tuple[str, str]:
    spec = body.get("spec") or {}
    names = spec.get("names") or {} if isinstance(spec, Mapping) else {}
    group = spec.get("group") if isinstance(spec, Mapping) else None
    kind = names.get("kind") if isinstance(names, Mapping) else None
    return str(group or ""), str(kind or "")


def _skips_crds(app: model.Application) -> bool:
    return any(s.kind == "helm" and s.options.get("skipCrds") is True for s in app.sources)


def crd_name(group: str, kind: str) -> str:
    """The CRD's usual name, `<plural>.<group>`, with the plural Kubernetes guesses for a kind
    (meta.UnsafeGuessKindToResource); the CRD may choose another."""
    lower = kind.lower()
    if lower.endswith("s"):
        plural = lower + "es"
    elif lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        plural = lower[:-1] + "ies"
    else:
        plural = lower + "s"
    return f"{plural}.{group}"


def fixes_for(
    app: model.Application, key: model.ObjectKey, evidence: Mapping[str, Any]
) -> tuple[model.Remedy, ...]:
    name = policies.app_arg(app)
    crd = str(evidence.get("crd") or crd_name(key.group, key.kind))
    flag = f"{key.group}:{key.kind}:" + (
        f"{key.namespace}/{key.name}" if key.namespace else key.name
    )
    origin = evidence.get("crdInGit")
    if origin:
        first = (
            f"this app renders {crd} ({origin}): give it an earlier sync wave than "
            f'{key.short()} (annotation argocd.argoproj.io/sync-wave: "-1" on the CRD), so '
            "Argo CD creates it and waits until it is established before the wave that needs it"
        )
    else:
        first = (
            f"install {crd}, the CustomResourceDefinition of {key.kind} in {key.group}, before "
            f"this app syncs: from the operator's own chart or manifests, in an app Argo CD syncs "
            f"first (in an app of apps, an earlier argocd.argoproj.io/sync-wave on that "
            f"Application than on {name}; the parent waits for it only with the Application "
            "health check restored in argocd-cm, resource.customizations.health."
            "argoproj.io_Application)"
        )
    steps = [first]
    if evidence.get("skipCrds"):
        steps.append(
            "this app's Helm source sets skipCrds: true, so the chart's crds/ are not applied: "
            "set it to false, or install them another way"
        )
    steps.append(
        f"then sync by hand (automated sync does not retry the failed revision); "
        f"{key.short()} is created once the kind is served"
    )
    install = model.Remedy(
        model.RemedyKind.RESOLVE,
        f"Install the CRD first ({crd})",
        steps=tuple(steps),
        commands=(f"kubectl get crd {crd}", f"argocd app sync {name} --resource {flag}"),
    )
    skip = model.Remedy(
        model.RemedyKind.RESOLVE,
        f"Let the sync wait for the CRD (SkipDryRunOnMissingResource=true on {key.short()})",
        steps=(
            (
                "Argo CD checks every kind before it applies anything, so one unknown kind "
                "fails the whole sync; with the sync option it skips that check for the "
                f"resource: in git, annotate {key.short()} with argocd.argoproj.io/sync-options: "
                "SkipDryRunOnMissingResource=true (or add the option to the app's syncOptions)"
            ),
            (
                "it helps only when the CRD arrives in the same sync, in an earlier wave: "
                f"the apply of {key.short()} itself still fails while nothing serves the kind"
            ),
        ),
        snippet=(
            "metadata:\n  annotations:\n"
            "    argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true\n"
        ),
    )
    return (install, skip)
