"""The LISTs a run sends: planned, sent concurrently and paged, never one GET per object.

Planned from what the apps need; each gives its items or a one-line reason it could not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.live import fingerprints
from kubectl_gitdrift.live.discovery import Discovery, Kind
from kubectl_gitdrift.live.transport import Transport, Unreadable, status_message

__all__ = [
    "CONTEXT_KINDS",
    "RBAC_KINDS",
    "WEBHOOK_KINDS",
    "ListResult",
    "Query",
    "for_diagnosis",
    "in_namespaces",
    "list_all",
    "plan",
    "webhooks",
    "webhooks_not_read",
]


@dataclass(frozen=True, order=True)
class Query:
    """One LIST: a kind in one namespace ("" = cluster-scoped, or every namespace)."""

    kind: Kind
    namespace: str = ""
    label_selector: str = ""
    field_selector: str = ""

    def describe(self) -> str:
        where = (
            f"in namespace {self.namespace}"
            if self.namespace
            else ("in all namespaces" if self.kind.namespaced else "(cluster-scoped)")
        )
        selectors = ",".join(s for s in (self.label_selector, self.field_selector) if s)
        return f"{self.kind.resource} {where}" + (f" [{selectors}]" if selectors else "")


@dataclass(frozen=True)
class ListResult:
    """What one LIST gave: the items (with apiVersion and kind set), or why it could not."""

    query: Query
    items: tuple[dict[str, Any], ...] = ()
    error: str = ""  # non-empty: the kind/namespace could not be read (a one-line reason)
    status: int = 0  # HTTP status behind `error` (403, 500 …), 0 for transport failures
    not_found: bool = False  # 404: the kind is not served (any more)
    requests: int = 0


class _Expired(Exception):
    """410 Gone on a continue token."""


# --------------------------------------------------------------------------- sending


async def list_all(
    link: Transport, queries: Sequence[Query], done: Callable[[ListResult], None] | None = None
) -> list[ListResult]:
    """The LISTs, concurrently (bounded by the transport), in `queries` order; `done` hears
    of each result as it arrives."""

    async def one(query: Query) -> ListResult:
        result = await _list(link, query)
        if done is not None:
            done(result)
        return result

    return list(await asyncio.gather(*(one(q) for q in queries)))


async def _list(link: Transport, query: Query) -> ListResult:
    async with link.slot:
        before = link.requests
        try:
            try:
                items = await _pages(link, query)
            except _Expired:  # 410 on a continue token: start over once, consistently
                items = await _pages(link, query)
        except _Expired:
            return ListResult(
                query,
                error=f"cannot list {query.describe()}: continue token expired twice (410)",
                status=410,
                requests=link.requests - before,
            )
        except Unreadable as exc:
            if exc.status == 401:
                raise link.unauthorized() from None
            if exc.status == 404:
                return ListResult(query, not_found=True, requests=link.requests - before)
            return ListResult(
                query,
                error=f"cannot list {query.describe()}: {exc}",
                status=exc.status,
                requests=link.requests - before,
            )
        return ListResult(query, tuple(items), requests=link.requests - before)


async def _pages(link: Transport, query: Query) -> list[dict[str, Any]]:
    kind = query.kind
    params: dict[str, str] = {"limit": str(max(1, link.config.page_size))}
    if query.label_selector:
        params["labelSelector"] = query.label_selector
    if query.field_selector:
        params["fieldSelector"] = query.field_selector
    items: list[dict[str, Any]] = []
    token = ""
    while True:
        page = dict(params, **({"continue": token} if token else {}))
        response = await link.get(
            "/apis" if kind.group else "/api",
            version=kind.api_version,
            namespace=query.namespace,
            url=kind.plural,
            params=page,
        )
        code = response.status_code
        if code == 410 and token:
            raise _Expired
        if code == 403:
            raise Unreadable(
                f"403 Forbidden: RBAC does not allow verb 'list' on {kind.resource}"
                + (f" in namespace {query.namespace}" if query.namespace else ""),
                403,
            )
        if code != 200:
            phrase = f"{code} {response.reason_phrase}".strip()
            tries = " after retries" if code == 429 or code >= 500 else ""
            raise Unreadable(f"{phrase}{tries}: {status_message(response)}", code)
        try:
            body = response.json()
        except ValueError:
            raise Unreadable("the server answered something that is not JSON") from None
        if not isinstance(body, dict) or not isinstance(body.get("items"), list):
            raise Unreadable("the server's answer is not a list")
        for item in body["items"]:
            if isinstance(item, dict):
                items.append({"apiVersion": kind.api_version, "kind": kind.kind, **item})
        token = str((body.get("metadata") or {}).get("continue") or "")
        if not token:
            return items


# --------------------------------------------------------------------------- planning

#: Kinds read beside an app's own objects, for diagnosis: Events (who scaled) and HPAs that own
#: replicas.
CONTEXT_KINDS = (
    ("", "Event"),
    ("autoscaling", "HorizontalPodAutoscaler"),
)
#: The RBAC objects an offline can-i for the Argo CD controller needs: listed when the API
#: server does not answer SubjectAccessReviews, and for a snapshot (offline mode has no server).
RBAC_KINDS = (
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
)


#: Kinds read only when a difference may be an admission webhook's (an app Argo CD reports
#: OutOfSync): the cluster-scoped mutating webhook configurations (diagnose/admission.py).
WEBHOOK_KINDS = (("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),)


def for_diagnosis(item: dict[str, Any]) -> dict[str, Any]:
    """A listed context object as the diagnosis reads it: a webhook configuration
    (WEBHOOK_KINDS) without its webhooks' caBundle (nor the last-applied-configuration that
    repeats it), which nothing reads and nothing shows or writes to a snapshot; anything else
    as listed."""
    key = model.ObjectKey.of(item)
    if (key.group, key.kind) not in WEBHOOK_KINDS:
        return item
    out = dict(item)
    metadata = out.get("metadata")
    if isinstance(metadata, Mapping) and isinstance(metadata.get("annotations"), Mapping):
        annotations = {
            k: v for k, v in metadata["annotations"].items() if k != fingerprints.LAST_APPLIED
        }
        out["metadata"] = {**metadata, "annotations": annotations}
    hooks = out.get("webhooks")
    if isinstance(hooks, list):
        out["webhooks"] = [
            {
                **hook,
                "clientConfig": {k: v for k, v in hook["clientConfig"].items() if k != "caBundle"},
            }
            if isinstance(hook, Mapping) and isinstance(hook.get("clientConfig"), Mapping)
            else hook
            for hook in hooks
        ]
    return out


def webhooks_not_read(error: str) -> str:
    """The note of a LIST of webhook configurations that failed (`error`: why)."""
    return (
        f"mutating webhook configurations were not read ({error}): a webhook's change to a "
        "field (admission-mutation) is named only from the audit log (--audit-log)"
    )


def webhooks(discovery: Discovery) -> list[Query]:
    """The LISTs of the WEBHOOK_KINDS the server serves (one cluster-wide LIST each)."""
    found = (discovery.find(group, kind) for group, kind in WEBHOOK_KINDS)
    return [Query(kind, "") for kind in found if kind is not None]


def plan(
    discovery: Discovery,
    wants: Iterable[tuple[str, str, str, str]],
    namespaces: Iterable[str],
    *,
    tracking_label: str = "",
    rbac: bool = True,
    context: bool = True,
) -> tuple[list[Query], list[str]]:
    """The LISTs for (group, version, kind, namespace) wants: one per kind and namespace (one
    per kind for cluster-scoped kinds), the context kinds in `namespaces` unless `context` is
    false (read after the compare, for what differs: live/context.py), the RBAC kinds too
    unless `rbac` is false (the reviews answer can-i), and with label tracking one
    cluster-wide LIST per kind selecting the tracking label. Returns the queries (sorted) and
    notes about kinds the server does not serve."""
    queries: set[Query] = set()
    notes: set[str] = set()
    namespaces = list(namespaces)
    for group, version, kind_name, namespace in wants:
        kind = discovery.find(group, kind_name, version)
        if kind is None:
            name = f"{kind_name}.{group}" if group else kind_name
            notes.add(
                f"{name} is not served by the cluster (is its CRD installed?): "
                "its objects count as Missing"
            )
            continue
        queries.add(Query(kind, namespace if kind.namespaced else ""))
        if tracking_label:
            queries.add(Query(kind, "", label_selector=tracking_label))
    if context:
        queries.update(in_namespaces(discovery, CONTEXT_KINDS, namespaces))
    if rbac:
        queries.update(in_namespaces(discovery, RBAC_KINDS, namespaces))
    return sorted(queries), sorted(notes)


def in_namespaces(
    discovery: Discovery, kinds: Iterable[tuple[str, str]], namespaces: Iterable[str]
) -> list[Query]:
    """The LISTs of `kinds` (group, kind) the server serves: each namespaced one in every
    namespace of `namespaces`, each cluster-scoped one once; sorted."""
    queries: set[Query] = set()
    namespaces = [ns for ns in namespaces if ns]
    for group, kind_name in kinds:
        kind = discovery.find(group, kind_name)
        if kind is None:
            continue
        if kind.namespaced:
            queries.update(Query(kind, ns) for ns in namespaces)
        else:
            queries.add(Query(kind, ""))
    return sorted(queries)
