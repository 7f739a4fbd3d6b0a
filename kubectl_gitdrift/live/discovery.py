"""What the API server serves: its version, its resource types and their OpenAPI documents.

`/version` and discovery when connecting, `/openapi/v3` when asked, through the transport.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from kubectl_gitdrift.live.transport import Transport, Unreadable, in_order, status_message

__all__ = ["Discovery", "Kind", "discover", "openapi_documents"]

_AGGREGATED = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
)


@dataclass(frozen=True, order=True)
class Kind:
    """One served resource type (a row of discovery)."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    verbs: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def resource(self) -> str:
        """kubectl's name for it: `deployments.apps`, `services`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def to_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.plural,
            "namespaced": self.namespaced,
            "verbs": list(self.verbs),
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Kind:
        """From kr8s's `api_resources()` rows (`version` is the group-version) or `to_dict`."""
        group_version = str(raw.get("apiVersion") or raw.get("version") or "")
        group, _, version = group_version.rpartition("/")
        return cls(
            group=group,
            version=version,
            kind=str(raw.get("kind") or ""),
            plural=str(raw.get("name") or ""),
            namespaced=bool(raw.get("namespaced")),
            verbs=tuple(str(v) for v in raw.get("verbs") or ()),
        )


class Discovery:
    """What the server serves: (group, kind) → its versions, preferred first."""

    def __init__(self, kinds: Iterable[Kind]) -> None:
        self._by_gk: dict[tuple[str, str], list[Kind]] = {}
        for kind in kinds:
            if not kind.kind or "/" in kind.plural:
                continue
            served = self._by_gk.setdefault((kind.group, kind.kind), [])
            if all(k.version != kind.version for k in served):
                served.append(kind)
        for served in self._by_gk.values():
            served.sort(key=lambda k: _version_priority(k.version))

    @classmethod
    def from_dicts(cls, rows: Iterable[Mapping[str, Any]]) -> Discovery:
        return cls(Kind.from_dict(r) for r in rows)

    def find(self, group: str, kind: str, version: str = "") -> Kind | None:
        """The served version `version` if there is one, else the preferred version."""
        served = self._by_gk.get((group, kind))
        if not served:
            return None
        return next((k for k in served if k.version == version), served[0])

    def namespaced(self, group: str, kind: str) -> bool | None:
        found = self.find(group, kind)
        return None if found is None else found.namespaced

    def kinds(self) -> list[Kind]:
        return sorted(k for served in self._by_gk.values() for k in served)


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def _version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version priority, highest first: v2 < v1 < v2beta1 < v1beta1 < v1alpha1 <
    anything else (alphabetically)."""
    match = _VERSION.match(version)
    if match is None:
        return (3, 0, 0, version)
    major, stage, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -int(major), -int(minor or 0), version)


# --------------------------------------------------------------------------- discovery


async def discover(link: Transport) -> tuple[dict[str, Any], Discovery]:
    """`/version` and what the server serves, asked at once (`/version`, `/api` and `/apis`);
    a failure is a ClusterError, said as if they ran in that order."""
    version, kinds = await in_order(
        link.essential(link.get_json("/version"), "/version"),
        link.essential(_aggregated_discovery(link), "discovery"),
    )
    if kinds is None:  # no aggregated discovery (before 1.30): kr8s walks every group
        kinds = [Kind.from_dict(r) for r in await link.essential(link.api.api_resources(), "")]
    return version, Discovery(kinds)


async def _aggregated_discovery(link: Transport) -> list[Kind] | None:
    """Every group's resources in two requests (`/api`, `/apis` as APIGroupDiscoveryList,
    what kubectl 1.30+ asks for); None when the server does not speak it."""
    kinds: list[Kind] = []
    responses = await in_order(
        *(link.get(base, headers={"Accept": _AGGREGATED}) for base in ("/api", "/apis"))
    )
    for base, response in zip(("/api", "/apis"), responses, strict=True):
        if response.status_code != 200:
            raise Unreadable(
                f"GET {base} answered {response.status_code}: {status_message(response)}",
                response.status_code,
            )
        if "as=APIGroupDiscoveryList" not in response.headers.get("content-type", ""):
            return None
        for group in response.json().get("items") or ():
            name = str((group.get("metadata") or {}).get("name") or "")
            for version in group.get("versions") or ():
                for res in version.get("resources") or ():
                    kind = (res.get("responseKind") or {}).get("kind")
                    if not kind:
                        continue
                    kinds.append(
                        Kind(
                            group=name,
                            version=str(version.get("version") or ""),
                            kind=str(kind),
                            plural=str(res.get("resource") or ""),
                            namespaced=res.get("scope") == "Namespaced",
                            verbs=tuple(str(v) for v in res.get("verbs") or ()),
                        )
                    )
    return kinds


# --------------------------------------------------------------------------- OpenAPI


async def openapi_documents(
    link: Transport, group_versions: list[str]
) -> tuple[dict[str, Any], list[str]]:
    """The `/openapi/v3` documents of these group-versions (`apps/v1`, `v1`), and notes
    about the ones the server would not give."""
    docs: dict[str, Any] = {}
    notes: list[str] = []
    if not group_versions:
        return docs, notes
    try:
        index = await link.get_json("/openapi", url="v3")
    except Unreadable as exc:
        return docs, [f"OpenAPI v3 index not available: {exc}"]
    paths = index.get("paths") if isinstance(index, dict) else None
    paths = paths if isinstance(paths, dict) else {}

    async def one(gv: str) -> None:
        key = f"apis/{gv}" if "/" in gv else f"api/{gv}"
        entry = paths.get(key)
        if not isinstance(entry, dict) or not entry.get("serverRelativeURL"):
            notes.append(f"the server publishes no OpenAPI v3 document for {gv}")
            return
        split = urlsplit(str(entry["serverRelativeURL"]))
        path = split.path.removeprefix("/openapi/v3/")
        try:
            async with link.slot:
                docs[gv] = await link.get_json(
                    "/openapi/v3", url=path, params=dict(parse_qsl(split.query))
                )
        except Unreadable as exc:
            notes.append(f"OpenAPI v3 document for {gv} not available: {exc}")

    await asyncio.gather(*(one(gv) for gv in group_versions))
    return docs, sorted(notes)
