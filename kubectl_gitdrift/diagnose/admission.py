"""Detects admission-mutation: a mutating admission webhook changed a field git sets, inside
Argo CD's own apply.

The API server runs the field manager before mutating admission, so a webhook's change is
attributed to the writer that sent the original value (kube-apiserver v1.36, recorded in
testdata/apiserver/v1.36/webhook-01): the field stays Argo CD's, with the time of its apply,
while the stored value is the webhook's. A difference is claimed when
- the field's managedFields owner is Argo CD's manager (main resource, not a subresource) and its
  time is not after the last sync, and Argo CD sent git's value there (the compared revision is
  the one last synced, or the last-applied-configuration holds git's value); and
- a MutatingWebhookConfiguration's webhook matches the object (rules: operations, apiGroups,
  apiVersions, resources, scope; namespaceSelector against the namespace's labels, known from the
  Namespace object when read, else only `kubernetes.io/metadata.name`; objectSelector against the
  object's labels), or the audit log's `patch.webhook.admission.k8s.io/round_*` annotations of a
  write of the object show a webhook patching the field (direct evidence).
Pure: the webhook configurations and Namespaces come from the live objects (a snapshot, or live
mode's LISTs). caBundle never leaves this module.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.diagnose import audit, policies, rbac
from kubectl_gitdrift.diagnose import rules as diagnosis
from kubectl_gitdrift.diagnose.causes import Cause

CODE = "admission-mutation"
GROUP = "admissionregistration.k8s.io"
KIND = "MutatingWebhookConfiguration"
NAME_LABEL = "kubernetes.io/metadata.name"  # the server sets it on every Namespace (1.21+)
_PATCH_PREFIX = "patch.webhook.admission.k8s.io/round_"
_MUTATION_PREFIX = "mutation.webhook.admission.k8s.io/round_"
_SLACK = timedelta(seconds=2)  # managedFields times have second precision


def detect(ctx: diagnosis.Context) -> Iterator[Cause]:
    configs = [m.body for m in ctx.of_kind(GROUP, KIND)]
    if not configs and ctx.audit_log is None:
        return
    for drift in ctx.drifts:
        if drift.status is not model.ResourceStatus.OUT_OF_SYNC or drift.live is None:
            continue
        if being_deleted(drift.live):
            continue  # stuck-deleting owns the whole resource
        claimed = [c for c in drift.changes if _applied_by_argocd(ctx, drift, c)]
        if not claimed:
            continue
        webhooks = matching(
            configs, drift.key, drift.live, _namespace_labels(ctx, drift.key), ctx.plurals
        )
        found = [(c, _audited(ctx, drift, c)) for c in claimed]
        by_config: dict[
            tuple[tuple[str, str], ...], list[tuple[model.Change, list[dict[str, Any]]]]
        ] = {}
        for change, writes in found:
            if not webhooks and not writes:
                continue
            names = _names(webhooks, writes)
            by_config.setdefault(names, []).append((change, writes))
        for names, group in by_config.items():
            pointers = [model.pointer(c.path, drift.live) for c, _ in group]
            fix = _fix(
                ctx.app,
                drift.key,
                names,
                pointers,
                [c.path for c, _ in group],
                dry_run_safe=_dry_run_safe(webhooks, names),
                strategy=ctx.strategy,
            )
            for change, writes in group:
                yield Cause(
                    code=CODE,
                    key=drift.key,
                    path=change.path,
                    evidence=_evidence(ctx, drift, change, webhooks, writes),
                    fixes=(fix,),
                    adoptable=True,  # writing the webhook's value in git settles it
                    revertable=False,  # a sync sends git's value and the webhook changes it again
                )


def being_deleted(body: Mapping[str, Any]) -> bool:
    metadata = body.get("metadata") or {}
    return bool(metadata.get("deletionTimestamp"))


# --------------------------------------------------------------------------- Argo CD's apply


def _applied_by_argocd(ctx: diagnosis.Context, drift: model.Drift, change: model.Change) -> bool:
    """The field is still Argo CD's, from an apply no later than the last sync, and what Argo CD
    sent there was git's value (by the last-applied-configuration, else because the last sync
    applied the compared revision)."""
    owner = change.owner
    if owner is None or not owner.is_argocd or owner.subresource or change.desired is None:
        return False
    last = ctx.app.last_sync
    if last is None or not owner.time:
        return False
    applied = audit.parse_time(owner.time)
    ends = [audit.parse_time(last.deployed_at)]
    if ctx.app.operation is not None:
        ends.append(audit.parse_time(ctx.app.operation.finished_at))
    latest = max((t for t in ends if t is not None), default=None)
    if applied is None or latest is None or applied > latest + _SLACK:
        return False
    sent = _last_applied(drift.live or {}, change)
    if sent is not None:
        return sent  # the last-applied-configuration says what Argo CD sent
    compared = ctx.app.revisions[0] if ctx.app.revisions else ""
    return bool(compared) and compared == last.revision  # the last sync applied this revision


def _last_applied(live: Mapping[str, Any], change: model.Change) -> bool | None:
    """Whether the last-applied-configuration sets the field to git's value; None when it
    does not set the field or there is none (server-side apply)."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    text = annotations.get("kubectl.kubernetes.io/last-applied-configuration")
    if not isinstance(text, str):
        return None
    try:
        applied = json.loads(text)
    except ValueError:
        return None
    found, value = model.lookup(applied, change.path)
    return (value == change.desired) if found else None


# --------------------------------------------------------------------------- matching


def matching(
    configs: Sequence[Mapping[str, Any]],
    key: model.ObjectKey,
    live: Mapping[str, Any],
    namespace_labels: tuple[Mapping[str, str], bool],
    plurals: Mapping[tuple[str, str], str] | None = None,
) -> list[dict[str, Any]]:
    """The webhooks (as evidence) whose rules and selectors match an UPDATE or CREATE of the
    object: definite matches, or, when none, the ones only the namespace's unread labels or
    matchConditions could rule out (`certain: false`)."""
    resource = rbac.plural(key.group, key.kind, plurals)
    version = str(live.get("apiVersion") or "").rpartition("/")[2]
    labels = (live.get("metadata") or {}).get("labels") or {}
    sure: list[dict[str, Any]] = []
    maybe: list[dict[str, Any]] = []
    for config in sorted(configs, key=lambda c: str((c.get("metadata") or {}).get("name"))):
        name = str((config.get("metadata") or {}).get("name") or "")
        for hook in config.get("webhooks") or ():
            if not isinstance(hook, Mapping):
                continue
            rule = _matching_rule(hook, key, resource, version)
            if rule is None:
                continue
            by_object = select(hook.get("objectSelector"), labels, known=True)
            if by_object is False:
                continue
            if key.namespace or key.kind == "Namespace":
                ns_labels, known = (labels, True) if key.kind == "Namespace" else namespace_labels
                by_namespace = select(hook.get("namespaceSelector"), ns_labels, known=known)
            else:
                by_namespace = True  # cluster-scoped: namespaceSelector does not apply
            if by_namespace is False:
                continue
            conditions = [
                str(c.get("name")) for c in hook.get("matchConditions") or () if c.get("name")
            ]
            certain = by_namespace is True and not conditions
            found = _hook_evidence(name, hook, rule, certain, known=namespace_labels[1])
            if conditions:
                found["matchConditions"] = conditions  # CEL: not evaluated here
            (sure if certain else maybe).append(found)
    return sure or maybe


def _matching_rule(
    hook: Mapping[str, Any], key: model.ObjectKey, resource: str, version: str
) -> dict[str, Any] | None:
    equivalent = str(hook.get("matchPolicy") or "Equivalent") == "Equivalent"
    for rule in hook.get("rules") or ():
        if not isinstance(rule, Mapping):
            continue
        operations = [str(o) for o in rule.get("operations") or ()]
        if not {"*", "UPDATE", "CREATE"} & set(operations):
            continue
        groups = [str(g) for g in rule.get("apiGroups") or ()]
        if "*" not in groups and key.group not in groups:
            continue
        versions = [str(v) for v in rule.get("apiVersions") or ()]
        if "*" not in versions and version not in versions and not equivalent:
            continue
        if not any(_resource_matches(str(r), resource) for r in rule.get("resources") or ()):
            continue
        scope = str(rule.get("scope") or "*")
        if scope == "Namespaced" and not key.namespace:
            continue
        if scope == "Cluster" and key.namespace:
            continue
        return {
            "operations": operations,
            "apiGroups": groups,
            "apiVersions": versions,
            "resources": [str(r) for r in rule.get("resources") or ()],
            "scope": scope,
        }
    return None


def _resource_matches(pattern: str, resource: str) -> bool:
    """The API server's rule matcher on the main resource: `*`, `deployments`, `*/*` and
    `deployments/*` match it (a `*` subresource matches none too); `deployments/scale` not."""
    res, _, sub = pattern.partition("/")
    return res in ("*", resource) and sub in ("", "*")


def select(selector: Any, labels: Mapping[str, Any], *, known: bool) -> bool | None:
    """A LabelSelector against labels: True, False, or None when it depends on labels not
    known (`known=False`: only kubernetes.io/metadata.name is). Empty or absent: everything."""
    if not isinstance(selector, Mapping):
        return True
    results: list[bool | None] = []
    for label, value in (selector.get("matchLabels") or {}).items():
        if not known and label != NAME_LABEL:
            results.append(None)
        else:
            results.append(label in labels and str(labels[label]) == str(value))
    for expr in selector.get("matchExpressions") or ():
        if not isinstance(expr, Mapping):
            continue
        label = str(expr.get("key") or "")
        if not known and label != NAME_LABEL:
            results.append(None)
            continue
        values = [str(v) for v in expr.get("values") or ()]
        op = str(expr.get("operator") or "")
        present = label in labels
        results.append(
            present and str(labels[label]) in values
            if op == "In"
            else not present or str(labels[label]) not in values
            if op == "NotIn"
            else present
            if op == "Exists"
            else not present
            if op == "DoesNotExist"
            else False
        )
    if False in results:
        return False
    return None if None in results else True


def _namespace_labels(
    ctx: diagnosis.Context, key: model.ObjectKey
) -> tuple[Mapping[str, str], bool]:
    """The namespace's labels and whether they are all known (its Namespace object was read);
    else only kubernetes.io/metadata.name, which the server always sets to the name."""
    for manifest in ctx.of_kind("", "Namespace"):
        if manifest.key.name == key.namespace:
            labels = dict((manifest.body.get("metadata") or {}).get("labels") or {})
            labels.setdefault(NAME_LABEL, key.namespace)
            return labels, True
    return {NAME_LABEL: key.namespace}, False


def _hook_evidence(
    config: str, hook: Mapping[str, Any], rule: Mapping[str, Any], certain: bool, *, known: bool
) -> dict[str, Any]:
    """What a report shows of a webhook: never its clientConfig.caBundle."""
    client = hook.get("clientConfig") or {}
    service = client.get("service") or {}
    endpoint = (
        f"service {service.get('namespace')}/{service.get('name')}"
        + (f":{service['port']}" if service.get("port") else "")
        + str(service.get("path") or "")
        if service
        else str(client.get("url") or "")
    )
    out: dict[str, Any] = {
        "configuration": config,
        "webhook": str(hook.get("name") or ""),
        "rule": dict(rule),
        "namespaceSelector": hook.get("namespaceSelector") or {},
        "objectSelector": hook.get("objectSelector") or {},
        "failurePolicy": hook.get("failurePolicy"),
        "reinvocationPolicy": hook.get("reinvocationPolicy"),
        "sideEffects": hook.get("sideEffects"),
        "endpoint": endpoint or None,
        "certain": certain,
    }
    if not known:
        out["namespaceLabels"] = f"only {NAME_LABEL} known (the Namespace was not read)"
    return out


# --------------------------------------------------------------------------- the audit log


def _audited(
    ctx: diagnosis.Context, drift: model.Drift, change: model.Change
) -> list[dict[str, Any]]:
    """Writes of the object whose audit annotations show a webhook patching this field, oldest
    first: the direct evidence (no request or patch body of a Secret is shown)."""
    log = ctx.audit_log
    if log is None:
        return []
    resource = rbac.plural(drift.key.group, drift.key.kind, ctx.plurals)
    wanted = model.pointer(change.path, drift.live or {})
    secret = policies.is_secret(drift.key, change)
    out = []
    for event in log.events:
        write = _the_write(event, drift.key, resource)
        if write is None:
            continue
        for name, raw in sorted((event.get("annotations") or {}).items()):
            if not str(name).startswith(_PATCH_PREFIX):
                continue
            patch = _json(raw)
            ops = [
                op
                for op in patch.get("patch") or ()
                if isinstance(op, Mapping) and _related(str(op.get("path") or ""), wanted)
            ]
            if not ops:
                continue
            out.append(
                {
                    "time": write.time,
                    "verb": write.verb,
                    "user": write.principal,
                    "fieldManager": write.manager,
                    "auditID": write.audit_id,
                    "configuration": patch.get("configuration"),
                    "webhook": patch.get("webhook"),
                    "round": name.removeprefix(_PATCH_PREFIX),
                    "mutated": _mutated(event, name.removeprefix(_PATCH_PREFIX)),
                    "patch": [
                        {"op": op.get("op"), "path": op.get("path")}
                        if secret
                        else {"op": op.get("op"), "path": op.get("path"), "value": op.get("value")}
                        for op in ops
                    ],
                }
            )
    return sorted(out, key=lambda w: str(w["time"]))


def _the_write(event: Mapping[str, Any], key: model.ObjectKey, resource: str) -> audit.Write | None:
    found = audit.writes_by(audit.AuditLog((event,), ""), key, resource)
    return found[0] if found else None


def _mutated(event: Mapping[str, Any], round_index: str) -> bool | None:
    raw = (event.get("annotations") or {}).get(_MUTATION_PREFIX + round_index)
    value = _json(raw).get("mutated") if raw is not None else None
    return value if isinstance(value, bool) else None


def _related(path: str, wanted: str) -> bool:
    """The patch op writes the field, a parent of it, or a part of it."""
    return path == wanted or wanted.startswith(path + "/") or path.startswith(wanted + "/")


def _json(raw: Any) -> dict[str, Any]:
    try:
        value = json.loads(str(raw))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# --------------------------------------------------------------------------- evidence, fix


def _names(
    webhooks: Sequence[Mapping[str, Any]], writes: Sequence[Mapping[str, Any]]
) -> tuple[tuple[str, str], ...]:
    """(configuration, webhook) of the writes' patches (direct evidence), else of the matches."""
    audited = sorted({(str(w["configuration"]), str(w["webhook"])) for w in writes})
    if audited:
        return tuple(audited)
    return tuple(sorted({(str(w["configuration"]), str(w["webhook"])) for w in webhooks}))


def _evidence(
    ctx: diagnosis.Context,
    drift: model.Drift,
    change: model.Change,
    webhooks: Sequence[Mapping[str, Any]],
    writes: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    owner = change.owner
    assert owner is not None
    last = ctx.app.last_sync
    out: dict[str, Any] = {
        "path": model.display_path(change.path),
        "pointer": model.pointer(change.path, drift.live or {}),
        "desired": change.desired,
        "live": change.live,
        "owner": {
            "manager": owner.manager,
            "operation": owner.operation,
            "subresource": None,
            "time": owner.time,
            "apiVersion": owner.api_version or None,
        },
        "webhooks": [dict(w) for w in webhooks],
    }
    if change.secret:
        out.update(desired=None, live=None, secret=True)  # masked tokens: not worth showing
    if last is not None:
        out["lastSync"] = {"revision": last.revision, "deployedAt": last.deployed_at}
    if writes:
        out["auditMutations"] = [dict(w) for w in writes]
    return out


def _dry_run_safe(
    webhooks: Sequence[Mapping[str, Any]], names: Sequence[tuple[str, str]]
) -> bool | None:
    """Would the webhooks run in a dry-run apply (sideEffects None or NoneOnDryRun)? None when
    a webhook named only by the audit log is not among the configurations read."""
    known = {(str(w["configuration"]), str(w["webhook"])): w for w in webhooks}
    if any(n not in known for n in names):
        return None
    return all(str(known[n].get("sideEffects")) in ("None", "NoneOnDryRun") for n in names)


def _server_side_diff(dry_run_safe: bool | None, strategy: model.DiffStrategy) -> tuple[str, ...]:
    """Server-Side Diff as a way out: Argo CD's dry-run apply goes through the webhook, so it
    expects the webhook's value (when the webhook may run in a dry run)."""
    if strategy is model.DiffStrategy.SERVER_SIDE_DIFF or dry_run_safe is False:
        return ()
    needs = (
        " (the webhook's sideEffects allow it)"
        if dry_run_safe
        else " (the webhook must declare sideEffects None or NoneOnDryRun)"
    )
    return (
        "or let Argo CD compare with Server-Side Diff (compare option ServerSideDiff=true): its "
        "dry-run apply passes through the webhook, so it expects the webhook's value" + needs,
    )


def _fix(
    app: model.Application,
    key: model.ObjectKey,
    names: Sequence[tuple[str, str]],
    pointers: Sequence[str],
    paths: Iterable[model.FieldPath],
    *,
    dry_run_safe: bool | None = None,
    strategy: model.DiffStrategy = model.DiffStrategy.LEGACY,
) -> model.Remedy:
    fields = ", ".join(model.display_path(p) for p in paths)
    webhook = " and ".join(
        f"webhook {hook} of MutatingWebhookConfiguration {config}" for config, hook in names
    )
    where = f"namespace {key.namespace}" if key.namespace else "it"
    snippet, command = policies.ignore_differences(app, key, list(pointers))
    return model.Remedy(
        model.RemedyKind.PREVENT,
        f"Settle the webhook's change to {key.short()} {fields}",
        steps=(
            (
                f"change the webhook's policy: exclude {where} or {key.short()} from {webhook} "
                f"(its namespaceSelector or objectSelector), or stop it mutating {fields}"
            ),
            (
                "or write the webhook's value in git (the adopt fix), so Argo CD applies what the "
                "webhook would set"
            ),
            (
                f"or ignore {fields} in {policies.app_arg(app)}: an exact ignoreDifferences rule "
                "(the webhook's value stays, Argo CD stops reporting it)"
            ),
            *_server_side_diff(dry_run_safe, strategy),
        ),
        commands=(command,),
        snippet=snippet,
    )
