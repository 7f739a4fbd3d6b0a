"""--server-dry-run: what applying each object would store, asked of the API server.

Asked as Argo CD's Server-Side Diff asks it: a server-side apply PATCH with dryRun=All (nothing
is persisted), the only PATCH gitdrift sends.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_gitdrift.live.discovery import Discovery
from kubectl_gitdrift.live.transport import Transport, Unreadable, status_message

__all__ = ["APPLY_PATCH", "SSA_MANAGER", "DryRun", "dry_run_all"]

SSA_MANAGER = "argocd-controller"
"""The field manager Argo CD applies and dry-runs with (argo-cd common.ArgoCDSSAManager)."""
APPLY_PATCH = "application/apply-patch+yaml"


@dataclass(frozen=True)
class DryRun:
    """What one server-side apply dry-run gave: the object the server would store, or why
    there is none."""

    sent: Mapping[str, Any]  # the object applied
    predicted: dict[str, Any] | None = None  # the server's answer (with managedFields)
    error: str = ""  # non-empty: no prediction (a one-line reason)
    status: int = 0  # HTTP status (403 when `patch` is not allowed), 0 for transport failures
    requests: int = 0


async def dry_run_all(
    link: Transport, served: Discovery, objects: Sequence[Mapping[str, Any]], manager: str
) -> list[DryRun]:
    """One DryRun per object, concurrently (bounded), in `objects` order; the kinds are
    looked up in `served`."""
    return list(await asyncio.gather(*(_dry_run(link, served, o, manager) for o in objects)))


async def _dry_run(
    link: Transport, served: Discovery, body: Mapping[str, Any], manager: str
) -> DryRun:
    metadata = body.get("metadata") or {}
    name = str(metadata.get("name") or "")
    namespace = str(metadata.get("namespace") or "")
    group, _, version = str(body.get("apiVersion") or "").rpartition("/")
    kind_name = str(body.get("kind") or "")
    kind = served.find(group, kind_name, version)
    what = f"{kind_name}.{group}" if group else kind_name
    if kind is None:
        return DryRun(body, error=f"cannot dry-run {what} {name}: the kind is not served")
    where = f"{kind.resource} {namespace + '/' if kind.namespaced else ''}{name}"
    async with link.slot:
        before = link.requests
        try:
            response = await link.request(
                "PATCH",
                "/apis" if kind.group else "/api",
                version=kind.api_version,
                namespace=namespace if kind.namespaced else "",
                url=f"{kind.plural}/{name}",
                params={"dryRun": "All", "fieldManager": manager, "force": "true"},
                headers={
                    "Content-Type": APPLY_PATCH,
                    "Accept": "application/json",
                },
                content=json.dumps(body, separators=(",", ":")).encode(),
            )
        except Unreadable as exc:
            return DryRun(
                body,
                error=f"cannot dry-run {where}: {exc}",
                requests=link.requests - before,
            )
    requests = link.requests - before
    code = response.status_code
    if code == 401:
        raise link.unauthorized()
    if code == 403:
        return DryRun(
            body,
            error=f"cannot dry-run {where}: 403 Forbidden: RBAC does not allow verb 'patch' "
            f"on {kind.resource}"
            + (f" in namespace {namespace}" if kind.namespaced and namespace else "")
            + " (--server-dry-run sends a dryRun=All apply PATCH, which needs it)",
            status=403,
            requests=requests,
        )
    if code not in (200, 201):
        phrase = f"{code} {response.reason_phrase}".strip()
        tries = " after retries" if code == 429 or code >= 500 else ""
        return DryRun(
            body,
            error=f"cannot dry-run {where}: {phrase}{tries}: {status_message(response)}",
            status=code,
            requests=requests,
        )
    try:
        predicted = response.json()
    except ValueError:
        predicted = None
    if not isinstance(predicted, dict) or not isinstance(predicted.get("metadata"), dict):
        return DryRun(
            body,
            error=f"cannot dry-run {where}: the server's answer is not an object",
            status=code,
            requests=requests,
        )
    predicted = {"apiVersion": kind.api_version, "kind": kind.kind, **predicted}
    return DryRun(body, predicted, status=code, requests=requests)
