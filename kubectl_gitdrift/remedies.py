"""The fixes for a drifted application: adopt into git, revert the cluster, prevent, verify."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.model import Remedy, RemedyKind


@dataclass(frozen=True, slots=True)
class Location:
    """Where in git a desired value is set (or the overlay to patch when nothing sets it)."""

    file: str
    line: int
    how: str  # "literal" | "kustomization-replicas" | "kustomization-images" | "overlay"
    text: str = ""  # the line as written, for the adopt instructions


Locator = Callable[[model.Drift, model.Change], "Location | None"]


def recommend(
    app: model.Application,
    drifts: Sequence[model.Drift],
    findings: Sequence[model.Finding],
    locate: Locator | None = None,
) -> list[Remedy]:
    """Both ways out (adopt, revert), how to keep it from recurring, and how to check the fix."""
    modified = [d for d in drifts if d.status is model.ResourceStatus.OUT_OF_SYNC and d.changes]
    missing = [d for d in drifts if d.status is model.ResourceStatus.MISSING]
    extraneous = [d for d in drifts if d.status is model.ResourceStatus.EXTRANEOUS]
    if not (modified or missing or extraneous):
        return []
    out: list[Remedy] = []
    for drift in modified:
        out.append(_adopt(app, drift, locate))
    out.append(_revert(app, modified, missing, extraneous))
    codes = {f.code for f in findings}
    out.extend(_prevent(app, codes))
    out.append(_verify(app, modified))
    return out


def _adopt(app: model.Application, drift: model.Drift, locate: Locator | None) -> Remedy:
    steps: list[str] = []
    file = None
    line = None
    for change in drift.changes:
        field = model.display_path(change.path)
        if change.secret:
            steps.append(f"{field}: the Secret value differs; re-seal or re-encrypt it in git")
            continue
        where = locate(drift, change) if locate is not None else None
        live = _yaml_value(change.live)
        if where is None:
            target = drift.origin or "the app's source"
            steps.append(
                f"set {field} to {live} in {target} (git has {_yaml_value(change.desired)})"
            )
            continue
        file, line = file or where.file, line or (where.line or None)
        at = f"{where.file}:{where.line}" if where.line else where.file
        if change.op is model.Op.REMOVE:
            steps.append(f"{at}: add {field}: {live} (git does not set it)")
        elif where.how == "overlay":
            steps.append(
                f"{at}: patch {field} to {live} (git renders {_yaml_value(change.desired)})"
            )
        else:
            steps.append(f"{at}: change {field} from {_yaml_value(change.desired)} to {live}")
    steps.append("commit, push, and let Argo CD sync the new revision")
    return Remedy(
        RemedyKind.ADOPT,
        f"Adopt the cluster's values into git ({drift.key.short()})",
        steps=tuple(steps),
        file=file,
        line=line,
    )


def _revert(
    app: model.Application,
    modified: Sequence[model.Drift],
    missing: Sequence[model.Drift],
    extraneous: Sequence[model.Drift],
) -> Remedy:
    commands = []
    resources = [*modified, *missing]
    if resources:
        flags = " ".join(f"--resource {_resource_flag(d.key)}" for d in resources)
        commands.append(f"argocd app sync {_app_arg(app)} {flags}")
    if extraneous:
        commands.append(f"argocd app sync {_app_arg(app)} --prune")
    for drift in modified:
        commands.extend(_kubectl_revert(drift))
    return Remedy(
        RemedyKind.REVERT,
        "Revert the cluster to git",
        steps=(
            "sync the drifted resources from git (Argo CD rewrites the fields it applied)",
            "or, without Argo CD access, put the git value back with kubectl",
        ),
        commands=tuple(commands),
    )


def _kubectl_revert(drift: model.Drift) -> list[str]:
    key = drift.key
    ns = f" -n {key.namespace}" if key.namespace else ""
    out = []
    patch: dict[str, Any] = {}
    for change in drift.changes:
        if change.secret:
            continue
        if change.path == ("spec", "replicas") and change.desired is not None:
            out.append(f"kubectl scale {key.short()}{ns} --replicas={change.desired}")
            continue
        if any(not isinstance(p, str) for p in change.path):
            continue
        node = patch
        for part in change.path[:-1]:
            node = node.setdefault(str(part), {})
        node[str(change.path[-1])] = change.desired
    if patch:
        body = json.dumps(patch, sort_keys=True, separators=(",", ":"))
        out.append(f"kubectl patch {key.short()}{ns} --type merge -p {shlex.quote(body)}")
    return out


def _prevent(app: model.Application, codes: set[str]) -> Iterable[Remedy]:
    name = _app_arg(app)
    if "selfheal-disabled" in codes or "automated-sync-disabled" in codes:
        patch = json.dumps(
            {"spec": {"syncPolicy": {"automated": {"selfHeal": True}}}}, separators=(",", ":")
        )
        yield Remedy(
            RemedyKind.PREVENT,
            "Let Argo CD undo manual changes (selfHeal)",
            steps=(
                (
                    "with selfHeal on, Argo CD re-syncs OutOfSync resources of an already-synced "
                    "revision on its own (after a short backoff)"
                ),
                (
                    "teams that keep selfHeal off should alert on "
                    f'argocd_app_info{{name="{app.name}",sync_status="OutOfSync"}} instead'
                ),
            ),
            commands=(
                (
                    f"kubectl patch application {app.name} -n {app.namespace} --type merge "
                    f"-p {shlex.quote(patch)}"
                ),
            ),
        )
    if "manual-drift" in codes:
        yield Remedy(
            RemedyKind.PREVENT,
            "Make git the only write path",
            steps=(
                (
                    "take update/patch on the app's kinds in its namespace away from humans "
                    "(RBAC); keep a break-glass group"
                ),
                (
                    "or reject writes by anyone but the Argo CD controller with a "
                    "ValidatingAdmissionPolicy"
                ),
                f"scale through git; for autoscaling use an HPA and ignore spec.replicas in {name}",
            ),
        )


def _verify(app: model.Application, modified: Sequence[model.Drift]) -> Remedy:
    name = _app_arg(app)
    commands = [f"kubectl gitdrift {name}", f"argocd app get {name} --refresh"]
    for drift in modified:
        key = drift.key
        ns = f" -n {key.namespace}" if key.namespace else ""
        for change in drift.changes:
            if change.secret or any(not isinstance(p, str) for p in change.path):
                continue
            jsonpath = "{." + ".".join(str(p) for p in change.path) + "}"
            commands.append(f"kubectl get {key.short()}{ns} -o jsonpath={shlex.quote(jsonpath)}")
    return Remedy(
        RemedyKind.VERIFY,
        "Verify",
        steps=("gitdrift exits 0 and Argo CD reports Synced",),
        commands=tuple(commands),
    )


def _app_arg(app: model.Application) -> str:
    return app.name if app.namespace == "argocd" else f"{app.namespace}/{app.name}"


def _resource_flag(key: model.ObjectKey) -> str:
    name = f"{key.namespace}/{key.name}" if key.namespace else key.name
    return f"{key.group}:{key.kind}:{name}"


def _yaml_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)
