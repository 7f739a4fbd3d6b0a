"""Detector of `server-filled`: a difference made only of fields the API server (or Argo CD's
own defaulting of them) fills in and this app's diff does not normalize.

Nobody changed anything: every apply stores the object with those fields again, so neither a
sync nor selfHeal clears the difference. Claimed only on evidence, field by field: each leaf
that differs between git's predicted value and the live one must be one the server is known to
fill, with the very value it fills, and the field must be owned by Argo CD or by nobody (never a
human's write, by managedFields or the audit log). Known fills:

- a StatefulSet's `spec.volumeClaimTemplates[*]`: `apiVersion: v1` and
  `kind: PersistentVolumeClaim` (the apps/v1 conversion sets them, kubernetes
  pkg/apis/apps/v1/conversion.go `Convert_apps_StatefulSetSpec_To_v1_StatefulSetSpec`,
  kubernetes#87583), `status.phase: Pending` and `spec.volumeMode: Filesystem` (core/v1
  `SetDefaults_PersistentVolumeClaim(Spec)`), and `metadata.creationTimestamp: null`, which Argo
  CD's typed defaulting writes and 1.34+ servers no longer store. Structured-merge diff compares
  that atomic list whole (argo-cd#11143); the legacy diff strips them (statefulSetWorkaround).
- a custom resource's field whose CRD (live, in `ctx.live`) declares the live value as its
  openAPIV3Schema `default:` while git does not set it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from kubectl_gitdrift import model
from kubectl_gitdrift.diagnose import policies, rules
from kubectl_gitdrift.diagnose.causes import Cause
from kubectl_gitdrift.model import Remedy, RemedyKind

CODE = "server-filled"
CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")
PARAMS_CM = "argocd-cmd-params-cm"

_ABSENT: Any = object()  # a side that does not have the field


@dataclass(frozen=True, slots=True)
class Filled:
    """One differing leaf the server fills: where, the values, who fills it, can git say it."""

    path: model.FieldPath  # from the object's root
    desired: Any  # _ABSENT when git does not set it
    live: Any  # _ABSENT when the live object does not have it
    by: str  # who fills it, as the finding says it
    writable: bool  # writing the live value in git removes this leaf's difference

    def evidence(self, under: model.FieldPath = ()) -> dict[str, Any]:
        return {
            "path": model.display_path(self.path),
            "at": model.display_path(self.path[len(under) :]),
            "git": None if self.desired is _ABSENT else self.desired,
            "gitSets": self.desired is not _ABSENT,
            "live": None if self.live is _ABSENT else self.live,
            "liveHas": self.live is not _ABSENT,
            "filledBy": self.by,
        }


def detect(ctx: rules.Context) -> Iterator[Cause]:
    for drift in ctx.drifts:
        if drift.status is not model.ResourceStatus.OUT_OF_SYNC or not drift.changes:
            continue
        schema = _crd_schema(ctx, drift) if ctx.managed_fields_known else None
        claimed: list[tuple[model.Change, list[Filled]]] = []
        for change in drift.changes:
            filled = explain(drift, change, schema)
            if filled is not None and _nobody_wrote(ctx, drift.key, change):
                claimed.append((change, filled))
        if not claimed:
            continue
        remedies = fixes(ctx.app, ctx.strategy, drift, claimed)  # one set for the resource
        for change, filled in claimed:
            yield Cause(
                code=CODE,
                key=drift.key,
                path=change.path,
                evidence={
                    "path": model.display_path(change.path),
                    "pointer": model.pointer(change.path, drift.live or {}),
                    "strategy": ctx.strategy.value,
                    "fields": [f.evidence(change.path) for f in filled],
                    "owner": _owner(change.owner) if change.owner is not None else None,
                },
                fixes=remedies,
                adoptable=False,
                revertable=False,
            )


def explain(
    drift: model.Drift, change: model.Change, schema: Mapping[str, Any] | None = None
) -> list[Filled] | None:
    """Every differing leaf of the change, each a known server fill; None when any is not."""
    if change.secret:
        return None
    desired = _ABSENT if change.op is model.Op.REMOVE else change.desired
    live = _ABSENT if change.op is model.Op.ADD else change.live
    leaves = _leaves(desired, live, change.path)
    if not leaves:
        return None
    out = []
    for path, d, v in leaves:
        filled = _claim_template_fill(drift.key, path, d, v) or _schema_default(schema, path, d, v)
        if filled is None:
            return None
        out.append(filled)
    return out


def _leaves(
    desired: Any, live: Any, path: model.FieldPath
) -> list[tuple[model.FieldPath, Any, Any]]:
    """The differing leaves below `path`; a list of another length is one leaf (the server
    fills fields, it never adds items)."""
    maps = (desired is _ABSENT or isinstance(desired, Mapping)) and (
        live is _ABSENT or isinstance(live, Mapping)
    )
    if maps and (desired is not _ABSENT or live is not _ABSENT):
        d = desired if isinstance(desired, Mapping) else {}
        v = live if isinstance(live, Mapping) else {}
        out = []
        for key in sorted(set(d) | set(v)):
            out += _leaves(d.get(key, _ABSENT), v.get(key, _ABSENT), (*path, key))
        return out
    if isinstance(desired, list) and isinstance(live, list) and len(desired) == len(live):
        out = []
        for i, (d, v) in enumerate(zip(desired, live, strict=True)):
            out += _leaves(d, v, (*path, i))
        return out
    if desired is not _ABSENT and live is not _ABSENT and desired == live:
        return []
    return [(path, desired, live)]


_CONVERSION = "set by the API server's apps/v1 conversion, kubernetes#87583"
_PVC_DEFAULTS = "set by the API server's PersistentVolumeClaim defaulting"
_NULL_STAMP = (
    "written by Argo CD's own defaulting into git's copy; a 1.34+ API server no longer stores it"
)
_OLD_STAMP = "stored by the API server before 1.34"
_CRD_DEFAULT = "the CRD's schema default, filled in by the API server"
_CLAIM_FILLS: Mapping[tuple[str, ...], tuple[Any, str, bool]] = {
    ("apiVersion",): ("v1", _CONVERSION, True),
    ("kind",): ("PersistentVolumeClaim", _CONVERSION, True),
    ("status", "phase"): ("Pending", _PVC_DEFAULTS, False),
    ("spec", "volumeMode"): ("Filesystem", _PVC_DEFAULTS, True),
}


def _claim_template_fill(
    key: model.ObjectKey, path: model.FieldPath, desired: Any, live: Any
) -> Filled | None:
    if (key.group, key.kind) != ("apps", "StatefulSet") or len(path) < 4:
        return None
    if path[:2] != ("spec", "volumeClaimTemplates") or not isinstance(path[2], int):
        return None
    rest = tuple(path[3:])
    if rest == ("metadata", "creationTimestamp"):
        # null on one side, absent on the other: the encodings differ, nobody set a time
        if {desired is _ABSENT, live is _ABSENT} == {True, False} and None in (desired, live):
            by = _NULL_STAMP if live is _ABSENT else _OLD_STAMP
            return Filled(path, desired, live, by, False)
        return None
    known = _CLAIM_FILLS.get(rest)  # type: ignore[arg-type]
    if known is None or desired is not _ABSENT or live != known[0]:
        return None
    return Filled(path, desired, live, known[1], known[2])


# --------------------------------------------------------------------------- CRD defaults


def _crd_schema(ctx: rules.Context, drift: model.Drift) -> Mapping[str, Any] | None:
    """The openAPIV3Schema of the live object's version, from its CRD among the live objects."""
    key = drift.key
    if not key.group or drift.live is None:
        return None
    version = str(drift.live.get("apiVersion") or "").rpartition("/")[2]
    for crd in ctx.of_kind(*CRD):
        spec = crd.body.get("spec") or {}
        names = spec.get("names") or {}
        if spec.get("group") != key.group or names.get("kind") != key.kind:
            continue
        for served in spec.get("versions") or ():
            if isinstance(served, Mapping) and served.get("name") == version:
                schema = (served.get("schema") or {}).get("openAPIV3Schema")
                return schema if isinstance(schema, Mapping) else None
    return None


def _schema_default(
    schema: Mapping[str, Any] | None, path: model.FieldPath, desired: Any, live: Any
) -> Filled | None:
    """A field git does not set whose live value is its CRD schema's `default`."""
    if schema is None or desired is not _ABSENT or live is _ABSENT:
        return None
    node: Any = schema
    for elem in path:
        if not isinstance(node, Mapping):
            return None
        if isinstance(elem, str):
            props = node.get("properties") or {}
            extra = node.get("additionalProperties")
            node = props.get(elem) if elem in props else extra
        else:
            node = node.get("items")
    if not isinstance(node, Mapping) or "default" not in node or node["default"] != live:
        return None
    return Filled(path, desired, live, _CRD_DEFAULT, True)


# --------------------------------------------------------------------------- evidence of writers


def _nobody_wrote(ctx: rules.Context, key: model.ObjectKey, change: model.Change) -> bool:
    """The field is Argo CD's or nobody's, and no audit record or Event names a human."""
    owner = change.owner
    if owner is not None and not owner.is_argocd:
        return False
    clue = ctx.clue(key, change.path)
    return clue is None or clue.kind in ("argocd", "unknown")


def _owner(owner: model.Owner) -> dict[str, Any]:
    return {"manager": owner.manager, "operation": owner.operation, "time": owner.time}


# --------------------------------------------------------------------------- fixes


def fixes(
    app: model.Application,
    strategy: model.DiffStrategy,
    drift: model.Drift,
    claimed: Sequence[tuple[model.Change, Sequence[Filled]]],
) -> tuple[Remedy, ...]:
    """For one resource's server-filled changes: write the fields in git (when that alone clears
    them), compare with Server-Side Diff (unless the app already does), or ignore them."""
    out: list[Remedy] = []
    key = drift.key
    filled = [f for _, fs in claimed for f in fs]
    if all(f.writable for f in filled):
        where = f"{drift.origin}: " if drift.origin else ""
        added = ", ".join(
            f"{model.display_path(f.path)}: {policies.yaml_scalar(f.live)}" for f in filled
        )
        out.append(
            Remedy(
                RemedyKind.ADOPT,
                f"Write the fields the server fills in git ({key.short()})",
                steps=(
                    f"{where}add {added} to the {key.kind} (the YAML: -o markdown, -o json)",
                    "commit and push; the next sync stores the same object and the diff is empty",
                ),
                file=drift.origin,
                snippet=_git_yaml(drift, filled),
            )
        )
    if strategy is not model.DiffStrategy.SERVER_SIDE_DIFF:
        out.append(_server_side_diff(app))
    out.append(_ignore(app, drift, claimed))
    return tuple(out)


def _ignore(
    app: model.Application,
    drift: model.Drift,
    claimed: Sequence[tuple[model.Change, Sequence[Filled]]],
) -> Remedy:
    """The exact ignoreDifferences rule: each filled field's pointer, or the whole changed field
    where git's side has what live lacks (Argo CD's own defaulting: ignoring it cannot help, as
    the defaults are applied after the ignore rules)."""
    key = drift.key
    live = drift.live or {}
    pointers: list[str] = []
    whole: list[model.FieldPath] = []
    for change, filled in claimed:
        if all(f.desired is _ABSENT for f in filled):
            pointers += [model.pointer(f.path, live) for f in filled]
        else:
            pointers.append(model.pointer(change.path, live))
            whole.append(change.path)
    snippet, command = policies.ignore_differences(app, key, pointers)
    steps = [
        (
            f"ignore {', '.join(pointers)} of {key.short()} in {policies.app_arg(app)}: Argo CD "
            "then leaves them out of the comparison"
        )
    ]
    if ("spec", "volumeClaimTemplates") in whole:
        steps.append(
            "the claim templates are compared whole; an existing StatefulSet's claim templates "
            "cannot be changed by an apply anyway (the API server refuses it), so nothing a sync "
            "could do is hidden"
        )
    return Remedy(
        RemedyKind.PREVENT,
        f"Or ignore the fields the server fills in {key.short()}",
        steps=tuple(steps),
        commands=(command,),
        snippet=snippet,
    )


def _server_side_diff(app: model.Application) -> Remedy:
    current = app.annotations.get("argocd.argoproj.io/compare-options", "")
    options = [o.strip() for o in current.split(",") if o.strip() and "ServerSideDiff" not in o]
    value = ",".join([*options, "ServerSideDiff=true"])
    body = f'{{"metadata":{{"annotations":{{"argocd.argoproj.io/compare-options":"{value}"}}}}}}'
    return Remedy(
        RemedyKind.PREVENT,
        "Compare with Server-Side Diff",
        steps=(
            (
                "Argo CD then asks the API server for the apply's dry-run, which fills these "
                "fields as the stored object has them (Argo CD 2.10+)"
            ),
            (
                'for every app at once: controller.diff.server.side: "true" in '
                f"{PARAMS_CM}, then restart the application controller"
            ),
            (
                "gitdrift emulates Server-Side Diff offline from managedFields and cannot know "
                "what the server fills: check the result with --server-dry-run"
            ),
        ),
        commands=(
            f"kubectl patch application {app.name} -n {app.namespace} --type merge -p '{body}'",
            (
                f"kubectl patch configmap {PARAMS_CM} -n {app.namespace} --type merge "
                """-p '{"data":{"controller.diff.server.side":"true"}}'"""
            ),
            f"kubectl gitdrift {policies.app_arg(app)} --server-dry-run",
        ),
    )


def _git_yaml(drift: model.Drift, filled: Sequence[Filled]) -> str:
    """The object's fields to add, as YAML: the kind, the name, and each filled field at its
    path (a list item keeps its index's place, and its name: metadata.name or name)."""
    tree: dict[Any, Any] = {}
    for f in filled:
        node = tree
        for i, elem in enumerate(f.path[:-1]):
            node = node.setdefault(elem, {})
            if isinstance(elem, int):  # name the list item, as a reader finds it in git
                item = _item(drift.live, f.path[: i + 1])
                meta = item.get("metadata")
                if isinstance(meta, Mapping) and isinstance(meta.get("name"), str):
                    node.setdefault("metadata", {}).setdefault("name", meta["name"])
                elif isinstance(item.get("name"), str):
                    node.setdefault("name", item["name"])
        node[f.path[-1]] = f.live
    body = {
        "apiVersion": (drift.live or {}).get("apiVersion"),
        "kind": drift.key.kind,
        "metadata": {"name": drift.key.name},
        **_lists(tree),
    }
    return yaml.safe_dump(body, sort_keys=False, default_flow_style=False)


def _item(live: model.Body | None, path: model.FieldPath) -> Mapping[str, Any]:
    found, item = model.lookup(live or {}, path)
    return item if found and isinstance(item, Mapping) else {}


_FIRST = {"apiVersion": 0, "kind": 1, "metadata": 2, "spec": 3}


def _lists(node: Any, top: bool = True) -> Any:
    """Maps keyed by list indexes become lists, in index order; the object starts with
    apiVersion, kind, metadata and spec, a list item with its name, as manifests write them."""
    if not isinstance(node, dict):
        return node
    if node and all(isinstance(k, int) for k in node):
        return [_lists(node[k], False) for k in sorted(node)]
    if top:
        keys = sorted(node, key=lambda k: _FIRST.get(k, len(_FIRST)))
    else:
        keys = sorted(node, key=lambda k: k not in ("metadata", "name"))
    return {k: _lists(node[k], False) for k in keys}
