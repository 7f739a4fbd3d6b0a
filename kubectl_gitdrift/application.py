"""Reads Argo CD's own objects (an Application, argocd-cm) into model values."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from kubectl_gitdrift import model, yamlio
from kubectl_gitdrift.errors import AppError

_SOURCE_TYPES = ("helm", "kustomize", "directory", "plugin")
APPLICATION_KEY = ("argoproj.io", "Application")


def is_application(body: Mapping[str, Any]) -> bool:
    api_version = str(body.get("apiVersion") or "")
    return body.get("kind") == "Application" and api_version.startswith("argoproj.io/")


def parse_application(body: Mapping[str, Any]) -> model.Application:
    """The parts of an Application a drift diagnosis needs; raises AppError when unusable."""
    metadata = _map(body.get("metadata"))
    name = str(metadata.get("name") or "")
    where = f"Application {metadata.get('namespace') or '?'}/{name or '?'}"
    spec = _map(body.get("spec"))
    status = _map(body.get("status"))

    raw_sources = spec.get("sources") or ([spec["source"]] if spec.get("source") else [])
    if spec.get("sourceHydrator") is not None:
        raw_sources = [_hydrated_source(spec["sourceHydrator"], where)]
    if not isinstance(raw_sources, list) or not raw_sources:
        raise AppError(
            f"{where}: spec.source is missing", hint="the Application has nothing to render"
        )
    sources = tuple(_source(_map(s), where, i) for i, s in enumerate(raw_sources))
    if spec.get("sourceHydrator") is not None:
        sources = (dataclasses.replace(sources[0], dry_source=_dry_source(spec["sourceHydrator"])),)

    destination = _map(spec.get("destination"))
    policy = _map(spec.get("syncPolicy"))
    automated = policy.get("automated")
    automated_on = isinstance(automated, Mapping) and automated.get("enabled", True) is not False
    auto = _map(automated)

    sync = _map(status.get("sync"))
    revisions = tuple(
        str(r) for r in (sync.get("revisions") or [sync.get("revision")] if sync else []) if r
    )

    return model.Application(
        name=name,
        namespace=str(metadata.get("namespace") or "argocd"),
        project=str(spec.get("project") or "default"),
        sources=sources,
        dest_server=str(destination.get("server") or ""),
        dest_name=str(destination.get("name") or ""),
        dest_namespace=str(destination.get("namespace") or ""),
        sync_policy=model.SyncPolicy(
            automated=automated_on,
            prune=bool(auto.get("prune")) and automated_on,
            self_heal=bool(auto.get("selfHeal")) and automated_on,
            allow_empty=bool(auto.get("allowEmpty")),
            sync_options=tuple(str(o) for o in policy.get("syncOptions") or ()),
        ),
        ignore_rules=tuple(
            ignore_rule(
                _map(r), origin="application", rule_id=f"application/ignoreDifferences[{i}]"
            )
            for i, r in enumerate(spec.get("ignoreDifferences") or ())
        ),
        sync_status=str(sync.get("status") or ""),
        revisions=revisions,
        history=tuple(_history(_map(h)) for h in status.get("history") or ()),
        operation=_operation(_map(status.get("operationState"))),
        annotations={str(k): str(v) for k, v in _map(metadata.get("annotations")).items()},
        reconciled_at=str(status.get("reconciledAt") or ""),
    )


def _hydrated_source(raw: Any, where: str) -> dict[str, Any]:
    """Argo CD 3.x `spec.sourceHydrator`: what the controller compares is the sync source
    (SourceHydrator.GetSyncSource): the hydrated manifests committed at `syncSource.path` on
    `syncSource.targetBranch` of `syncSource.repoURL` (default: the dry source's repoURL), read
    as a plain source; `source`/`sources` are ignored. The dry source is what the hydrator
    renders from, not what is compared."""
    hydrator = _map(raw)
    dry = _map(hydrator.get("drySource"))
    sync = _map(hydrator.get("syncSource"))
    if not sync.get("path") or not sync.get("targetBranch"):
        raise AppError(
            f"{where}: spec.sourceHydrator.syncSource needs path and targetBranch",
            hint="the hydrated manifests are read from syncSource.path on syncSource.targetBranch",
        )
    repo_url = sync.get("repoURL") or dry.get("repoURL")
    if not repo_url:
        raise AppError(f"{where}: spec.sourceHydrator.drySource.repoURL is missing")
    return {
        "repoURL": str(repo_url),
        "path": str(sync["path"]),
        "targetRevision": str(sync["targetBranch"]),
    }


def _dry_source(raw: Any) -> str:
    dry = _map(_map(raw).get("drySource"))
    path = str(dry.get("path") or ".")
    return f"{dry.get('repoURL') or ''} {path} @ {dry.get('targetRevision') or 'HEAD'}"


def _source(raw: Mapping[str, Any], where: str, index: int) -> model.AppSource:
    if not raw.get("repoURL"):
        raise AppError(f"{where}: spec.sources[{index}].repoURL is missing")
    explicit = [t for t in _SOURCE_TYPES if raw.get(t) is not None]
    if len(explicit) > 1:
        raise AppError(f"{where}: source {index} sets more than one of {', '.join(explicit)}")
    kind = explicit[0] if explicit else ""
    return model.AppSource(
        repo_url=str(raw["repoURL"]),
        path=str(raw.get("path") or ""),
        target_revision=str(raw.get("targetRevision") or ""),
        chart=str(raw.get("chart") or ""),
        ref=str(raw.get("ref") or ""),
        name=str(raw.get("name") or ""),
        kind=kind,
        options=dict(_map(raw.get(kind))) if kind else {},
    )


def _history(raw: Mapping[str, Any]) -> model.HistoryEntry:
    initiated = _map(raw.get("initiatedBy"))
    revisions = raw.get("revisions") or [raw.get("revision")]
    return model.HistoryEntry(
        id=int(raw.get("id") or 0),
        revision=str(revisions[0] or ""),
        deployed_at=str(raw.get("deployedAt") or ""),
        initiated_by=str(initiated.get("username") or ""),
        automated=bool(initiated.get("automated")),
    )


def _operation(raw: Mapping[str, Any]) -> model.OperationState | None:
    if not raw:
        return None
    operation = _map(raw.get("operation"))
    sync = _map(operation.get("sync"))
    result = _map(raw.get("syncResult"))
    revisions = result.get("revisions") or [result.get("revision") or sync.get("revision")]
    retry = _map(operation.get("retry"))
    limit = retry.get("limit")
    return model.OperationState(
        phase=str(raw.get("phase") or ""),
        message=str(raw.get("message") or ""),
        revision=str(revisions[0] or ""),
        started_at=str(raw.get("startedAt") or ""),
        finished_at=str(raw.get("finishedAt") or ""),
        automated=bool(_map(operation.get("initiatedBy")).get("automated")),
        auto_heal_attempts=int(sync.get("autoHealAttemptsCount") or 0),
        resources=tuple(_resource_result(r) for r in _list(result.get("resources"))),
        retry_count=_int(raw.get("retryCount")),
        retry_limit=_int(limit) if limit is not None else None,
    )


def _resource_result(raw: Mapping[str, Any]) -> model.ResourceResult:
    """One `syncResult.resources[]` entry (Argo CD's ResourceResult)."""
    return model.ResourceResult(
        group=str(raw.get("group") or ""),
        kind=str(raw.get("kind") or ""),
        namespace=str(raw.get("namespace") or ""),
        name=str(raw.get("name") or ""),
        status=str(raw.get("status") or ""),
        message=str(raw.get("message") or ""),
        hook_phase=str(raw.get("hookPhase") or ""),
        sync_phase=str(raw.get("syncPhase") or ""),
        hook_type=str(raw.get("hookType") or ""),
    )


def _list(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def ignore_rule(raw: Mapping[str, Any], *, origin: str, rule_id: str) -> model.IgnoreRule:
    return model.IgnoreRule(
        group=str(raw.get("group") or ""),
        kind=str(raw.get("kind") or ""),
        name=str(raw.get("name") or ""),
        namespace=str(raw.get("namespace") or ""),
        json_pointers=tuple(str(p) for p in raw.get("jsonPointers") or ()),
        jq_paths=tuple(str(p) for p in raw.get("jqPathExpressions") or ()),
        managers=tuple(str(p) for p in raw.get("managedFieldsManagers") or ()),
        origin=origin,
        rule_id=rule_id,
    )


# --------------------------------------------------------------------------- argocd-cm


PARAMS_CM = "argocd-cmd-params-cm"
"""The ConfigMap behind the Argo CD components' command-line flags (the controller's
`--server-side-diff-enabled` is its `controller.diff.server.side`)."""


def is_argocd_cm(body: Mapping[str, Any]) -> bool:
    metadata = _map(body.get("metadata"))
    return body.get("kind") == "ConfigMap" and metadata.get("name") == "argocd-cm"


def is_params_cm(body: Mapping[str, Any]) -> bool:
    metadata = _map(body.get("metadata"))
    return body.get("kind") == "ConfigMap" and metadata.get("name") == PARAMS_CM


def parse_settings(
    configmap: Mapping[str, Any] | None, params: Mapping[str, Any] | None = None
) -> model.Settings:
    """Comparison and tracking settings from argocd-cm (Argo CD's defaults when None), and the
    controller's flags from argocd-cmd-params-cm (`params`), where Argo CD reads them."""
    params_data = {str(k): str(v) for k, v in _map((params or {}).get("data")).items()}
    server_side_diff = params_data.get("controller.diff.server.side", "").strip().lower() == "true"
    if configmap is None:
        return model.Settings(server_side_diff=server_side_diff)
    data = {str(k): str(v) for k, v in _map(configmap.get("data")).items()}
    name = f"argocd-cm ({_map(configmap.get('metadata')).get('namespace') or 'argocd'})"
    method = data.get("application.resourceTrackingMethod", "").strip() or "annotation"
    try:
        tracking = model.TrackingMethod(method)
    except ValueError:
        tracking = model.TrackingMethod.ANNOTATION
    options = _yaml(data.get("resource.compareoptions", ""), f"{name} resource.compareoptions")
    status_field = str(_map(options).get("ignoreResourceStatusField", "all")).lower()
    if status_field in ("none", "off", "false"):
        status_field = "none"
    elif status_field != "crd":
        status_field = "all"
    return model.Settings(
        tracking_method=tracking,
        instance_label_key=data.get("application.instanceLabelKey", "").strip()
        or "app.kubernetes.io/instance",
        installation_id=data.get("installationID", "").strip(),
        ignore_rules=tuple(_cm_ignore_rules(data, name)),
        ignore_aggregated_roles=bool(_map(options).get("ignoreAggregatedRoles", False)),
        ignore_status=status_field,
        reconciliation_timeout=data.get("timeout.reconciliation", "").strip() or "120s",
        from_configmap=True,
        controller_namespace=str(_map(configmap.get("metadata")).get("namespace") or "argocd"),
        server_side_diff=server_side_diff,
    )


def _cm_ignore_rules(data: Mapping[str, str], name: str) -> Iterable[model.IgnoreRule]:
    prefix = "resource.customizations.ignoreDifferences."
    for key in sorted(data):
        if not key.startswith(prefix):
            continue
        group_kind = key[len(prefix) :]
        if group_kind == "all":
            group, kind = "*", "*"
        elif "_" in group_kind:
            group, _, kind = group_kind.rpartition("_")
        else:
            group, kind = "", group_kind
        raw = _map(_yaml(data[key], f"{name} {key}"))
        yield ignore_rule(
            {**raw, "group": group, "kind": kind}, origin="argocd-cm", rule_id=f"argocd-cm/{key}"
        )
    legacy = _map(_yaml(data.get("resource.customizations", ""), f"{name} resource.customizations"))
    for group_kind in sorted(legacy):
        override = _map(legacy[group_kind])
        if "ignoreDifferences" not in override:
            continue
        group, _, kind = str(group_kind).rpartition("/")
        raw = override["ignoreDifferences"]
        parsed = _map(
            _yaml(raw, f"{name} resource.customizations") if isinstance(raw, str) else raw
        )
        yield ignore_rule(
            {**parsed, "group": group, "kind": kind},
            origin="argocd-cm",
            rule_id=f"argocd-cm/resource.customizations/{group_kind}",
        )


def _yaml(text: str, where: str) -> Any:
    """One YAML document from an argocd-cm value, under yamlio's bounds (size, aliases,
    depth, duplicate keys): argocd-cm is input like any other."""
    if not text.strip():
        return {}
    docs = yamlio.load_any(text, where, error=AppError)
    if len(docs) > 1:
        raise AppError(f"{where}: expected one YAML document, got {len(docs)}")
    return docs[0] if docs else {}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
