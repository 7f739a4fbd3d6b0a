"""What the API server serves: its version, its resource types and their OpenAPI documents.

Discovery as kubectl (client-go) does it: aggregated discovery (one GET of `/api` and one of
`/apis` as APIGroupDiscoveryList, apidiscovery.k8s.io v2 or v2beta1), or, from a server
without it, the plain `/api` and `/apis` and then every group-version's APIResourceList
(concurrently). Group-versions aggregated discovery marks `freshness: Stale` (an aggregated
API server that is down) are left out, as client-go leaves them out, and remembered
(`Discovery.stale`). What was discovered is kept in kubectl's own disk cache
(`~/.kube/cache/discovery/<host_port>/`, `$KUBECACHEDIR`, or `--cache-dir`): the same files
(`servergroups.json`, `<group-version>/serverresources.json`), the same freshness (each file
six hours from when it was written) and the same atomic writes, so kubectl and gitdrift warm
each other's runs; beside them `gitdrift_version.json` keeps `/version` (kubectl caches none;
no API group can be named so). A warm run sends no discovery request at all. A cache file that
is missing, expired or unreadable makes the run discover again, never fails it.
`/openapi/v3` documents come when asked, through the transport.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from kubectl_gitdrift.live.transport import Transport, Unreadable, in_order, status_message

__all__ = ["Discovery", "DiskCache", "Kind", "Served", "discover", "openapi_documents"]

AGGREGATED_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
    "application/json"
)
"""What kubectl 1.30-1.36 asks `/api` and `/apis` for (client-go's acceptDiscoveryFormats)."""
CACHE_TTL = 6 * 60 * 60.0
"""Seconds a discovery cache file is fresh: kubectl's (cli-runtime's ToDiscoveryClient)."""
VERSION_FILE = "gitdrift_version.json"
"""`/version` beside kubectl's files: no API group is named with an underscore."""


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
    """What the server serves: (group, kind) → its versions, preferred first; the
    group-versions whose discovery was stale or failed (`stale`: their kinds are not known,
    not known to be absent); whether it came from the disk cache (`cached`: possibly hours
    old, so a kind it lacks is worth asking the server about)."""

    def __init__(
        self, kinds: Iterable[Kind], *, stale: Iterable[str] = (), cached: bool = False
    ) -> None:
        self.stale = frozenset(stale)
        self.cached = cached
        self._by_gk: dict[tuple[str, str], list[Kind]] = {}
        self._scalable: set[tuple[str, str]] = set()  # (group, plural) with a /scale
        for kind in kinds:
            if kind.plural.endswith("/scale"):
                self._scalable.add((kind.group, kind.plural.partition("/")[0]))
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

    def serves(self, group: str, kind: str, version: str) -> bool:
        """Whether this exact version of the kind is served."""
        return any(k.version == version for k in self._by_gk.get((group, kind)) or ())

    def stale_in(self, group: str) -> list[str]:
        """The group's group-versions whose discovery was stale or failed."""
        return sorted(gv for gv in self.stale if gv.rpartition("/")[0] == group)

    def namespaced(self, group: str, kind: str) -> bool | None:
        found = self.find(group, kind)
        return None if found is None else found.namespaced

    def scalable(self, group: str, kind: str) -> bool:
        """Whether the kind serves a /scale subresource: what a HorizontalPodAutoscaler's
        scaleTargetRef can name (a Deployment, a StatefulSet, a CRD that declares one)."""
        found = self._by_gk.get((group, kind)) or ()
        return any((k.group, k.plural) in self._scalable for k in found)

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


@dataclass
class Served:
    """What discovery found, in kubectl's own terms: the APIGroupList (the core group first,
    named ""), each group-version's APIResourceList, and the group-versions that were stale or
    failed (left out of both)."""

    groups: list[dict[str, Any]]
    resources: dict[str, dict[str, Any]]  # group-version ("v1", "apps/v1") -> APIResourceList
    stale: set[str] = field(default_factory=set)

    def kinds(self) -> list[Kind]:
        kinds: list[Kind] = []
        for group_version in self.group_versions():
            doc = self.resources.get(group_version) or {}
            group, _, version = group_version.rpartition("/")
            for res in doc.get("resources") or ():
                if not isinstance(res, dict):
                    continue
                kinds.append(
                    Kind(
                        group=group,
                        version=version,
                        kind=str(res.get("kind") or ""),
                        plural=str(res.get("name") or ""),
                        namespaced=bool(res.get("namespaced")),
                        verbs=tuple(str(v) for v in res.get("verbs") or ()),
                    )
                )
        return kinds

    def group_versions(self) -> list[str]:
        return [
            str(v.get("groupVersion") or "")
            for g in self.groups
            for v in g.get("versions") or ()
            if isinstance(v, dict) and v.get("groupVersion")
        ]


async def discover(
    link: Transport,
    cache: DiskCache | None = None,
    *,
    refresh: bool = False,
    cached: tuple[Served, dict[str, Any] | None] | None = None,
) -> tuple[dict[str, Any], Discovery]:
    """`/version` and what the server serves: from `cache` when it is fresh (no request;
    `cached`: what the caller already read from it), else asked (aggregated discovery,
    `/version` with it unless connecting asked it) and written to `cache`; `refresh` ignores
    what the cache holds. A failure is a ClusterError, said as if the requests ran in order
    (`/version`, `/api`, `/apis`)."""
    if cached is None and cache is not None and not refresh:
        cached = cache.read()
    if cache is not None and cached is not None:
        served, known = cached
        version: dict[str, Any] = known or link.version
        if not known:  # a cache kubectl wrote: it keeps no /version
            if not version:
                version = await link.essential(link.get_json("/version"), "/version")
            cache.write_version(version)
        return version, Discovery(served.kinds(), stale=served.stale, cached=True)
    if link.version:
        version, served = link.version, await link.essential(_served(link), "discovery")
    else:
        version, served = await in_order(
            link.essential(link.get_json("/version"), "/version"),
            link.essential(_served(link), "discovery"),
        )
    if cache is not None:
        cache.write(served, version)
    return version, Discovery(served.kinds(), stale=served.stale)


async def _served(link: Transport) -> Served:
    """Aggregated discovery of `/api` and `/apis` (two requests), or, from a server that
    answers the plain APIVersions and APIGroupList, every group-version asked one by one."""
    responses = await in_order(
        *(link.get(base, headers={"Accept": AGGREGATED_ACCEPT}) for base in ("/api", "/apis"))
    )
    docs: list[Any] = []
    aggregated = True
    for base, response in zip(("/api", "/apis"), responses, strict=True):
        if response.status_code == 404 and base == "/api":
            docs.append(None)  # tolerated as client-go does (aggregated API servers)
            continue
        if response.status_code != 200:
            raise Unreadable(
                f"GET {base} answered {response.status_code}: {status_message(response)}",
                response.status_code,
            )
        aggregated = aggregated and _is_aggregated(response.headers.get("content-type", ""))
        try:
            docs.append(response.json())
        except ValueError:
            raise Unreadable(f"GET {base}: the server's answer is not JSON") from None
    core: dict[str, Any] = docs[0] if isinstance(docs[0], dict) else {}
    apis: dict[str, Any] = docs[1] if isinstance(docs[1], dict) else {}
    if aggregated:
        served = Served([], {})
        _split_aggregated(core, served)
        _split_aggregated(apis, served)
        return served
    groups = [_core_group(core), *(g for g in apis.get("groups") or () if isinstance(g, dict))]
    served = Served([g for g in groups if g.get("versions")], {})
    found = await asyncio.gather(*(_resource_list(link, gv) for gv in served.group_versions()))
    for group_version, resources in zip(served.group_versions(), found, strict=True):
        if resources is None:
            served.stale.add(group_version)
        else:
            served.resources[group_version] = resources
    return served


def _is_aggregated(content_type: str) -> bool:
    """An APIGroupDiscoveryList (v2 or v2beta1), whatever the order of the parameters."""
    base, *params = (p.strip() for p in content_type.split(";"))
    named = dict(p.partition("=")[::2] for p in params)
    return (
        base == "application/json"
        and named.get("g") == "apidiscovery.k8s.io"
        and named.get("v") in ("v2", "v2beta1")
        and named.get("as") == "APIGroupDiscoveryList"
    )


def _core_group(doc: Mapping[str, Any]) -> dict[str, Any]:
    versions = [{"groupVersion": str(v), "version": str(v)} for v in doc.get("versions") or () if v]
    group: dict[str, Any] = {"name": "", "versions": versions}
    if versions:
        group["preferredVersion"] = dict(versions[0])
    return group


async def _resource_list(link: Transport, group_version: str) -> dict[str, Any] | None:
    """One group-version's APIResourceList; None if the server would not give it (client-go
    counts it a failed group and goes on)."""
    base = "/apis" if "/" in group_version else "/api"
    async with link.slot:
        try:
            doc = await link.get_json(base, url=group_version)
        except Unreadable as exc:
            if exc.status == 401:
                raise
            return None
    return doc if isinstance(doc, dict) else None


def _split_aggregated(doc: Mapping[str, Any], served: Served) -> None:
    """An APIGroupDiscoveryList as client-go's SplitGroupsAndResources reads it: each group's
    versions (stale ones left out), the first kept one preferred, each version's resources
    and subresources as an APIResourceList."""
    for item in doc.get("items") or ():
        if not isinstance(item, dict):
            continue
        name = str((item.get("metadata") or {}).get("name") or "")
        group: dict[str, Any] = {"name": name, "versions": []}
        for entry in item.get("versions") or ():
            if not isinstance(entry, dict):
                continue
            version = str(entry.get("version") or "")
            group_version = f"{name}/{version}" if name else version
            if entry.get("freshness") == "Stale":
                served.stale.add(group_version)
                continue
            listed = {"groupVersion": group_version, "version": version}
            group["versions"].append(listed)
            group.setdefault("preferredVersion", dict(listed))
            served.resources[group_version] = {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": group_version,
                "resources": _resources(entry.get("resources") or ()),
            }
        served.groups.append(group)


def _resources(entries: Iterable[Any]) -> list[dict[str, Any]]:
    """Aggregated resources as APIResource rows (client-go's convertAPIResource and
    convertAPISubresource): one without a kind is left out, its subresources kept."""
    out: list[dict[str, Any]] = []
    for res in entries:
        if not isinstance(res, dict):
            continue
        row: dict[str, Any] = {
            "name": str(res.get("resource") or ""),
            "singularName": str(res.get("singularResource") or ""),
            "namespaced": res.get("scope") == "Namespaced",
        }
        kind = res.get("responseKind") or {}
        _set_kind(row, kind)
        row["verbs"] = list(res.get("verbs") or ())
        for key in ("shortNames", "categories"):
            if res.get(key):
                row[key] = list(res[key])
        if kind.get("kind"):
            out.append(row)
        for sub in res.get("subresources") or ():
            if not isinstance(sub, dict) or not (sub.get("responseKind") or {}).get("kind"):
                continue
            sub_row: dict[str, Any] = {
                "name": f"{row['name']}/{sub.get('subresource') or ''}",
                "singularName": row["singularName"],
                "namespaced": row["namespaced"],
            }
            _set_kind(sub_row, sub["responseKind"])
            sub_row["verbs"] = list(sub.get("verbs") or ())
            out.append(sub_row)
    return out


def _set_kind(row: dict[str, Any], kind: Mapping[str, Any]) -> None:
    for key in ("group", "version"):
        if kind.get(key):
            row[key] = str(kind[key])
    row["kind"] = str(kind.get("kind") or "")


# --------------------------------------------------------------------------- the disk cache

_UNSAFE = re.compile(r"[^(\w/.)]", re.ASCII)


def default_cache_dir() -> Path:
    """kubectl's: `$KUBECACHEDIR`, else `~/.kube/cache`."""
    return Path(os.environ.get("KUBECACHEDIR") or Path.home() / ".kube" / "cache")


@dataclass(frozen=True)
class DiskCache:
    """kubectl's discovery cache of one server (client-go's disk CachedDiscoveryClient)."""

    directory: Path
    ttl: float = CACHE_TTL

    @classmethod
    def of(cls, cache_dir: str | Path | None, server: str) -> DiskCache:
        """The cache of `server` (the kubeconfig's URL) under `cache_dir` (--cache-dir, else
        kubectl's default), named as cli-runtime's computeDiscoverCacheDir names it."""
        host = server.replace("https://", "", 1).replace("http://", "", 1)
        root = Path(cache_dir) if cache_dir else default_cache_dir()
        return cls(root / "discovery" / _UNSAFE.sub("_", host))

    def read(self) -> tuple[Served, dict[str, Any] | None] | None:
        """What the cache holds while every file discovery needs is fresh and readable, and
        the version (None when that file alone is missing or expired); else None."""
        groups = self._load(self.directory / "servergroups.json", "APIGroupList")
        if groups is None or not isinstance(groups.get("groups"), list):
            return None
        served = Served([g for g in groups["groups"] if isinstance(g, dict)], {})
        for group_version in served.group_versions():
            doc = self._load(self._resources_file(group_version), "APIResourceList")
            if doc is None or not isinstance(doc.get("resources"), list):
                return None
            served.resources[group_version] = doc
        return served, self._load(self.directory / VERSION_FILE)

    def write(self, served: Served, version: Mapping[str, Any]) -> None:
        """Each group-version's file, then the group list (the file a reader starts from),
        then the version; each written whole and renamed into place. Best effort: a cache
        that cannot be written costs the next run its discovery, nothing else."""
        if not served.groups:
            return
        for group_version, doc in served.resources.items():
            self._write(self._resources_file(group_version), doc)
        self._write(
            self.directory / "servergroups.json",
            {"kind": "APIGroupList", "apiVersion": "v1", "groups": served.groups},
        )
        self.write_version(version)

    def write_version(self, version: Mapping[str, Any]) -> None:
        self._write(self.directory / VERSION_FILE, dict(version))

    def _resources_file(self, group_version: str) -> Path:
        return self.directory.joinpath(*group_version.split("/"), "serverresources.json")

    def _load(self, path: Path, kind: str = "") -> dict[str, Any] | None:
        try:
            with path.open("rb") as f:
                if time.time() > os.fstat(f.fileno()).st_mtime + self.ttl:
                    return None
                doc = json.loads(f.read())
        except (OSError, ValueError):
            return None
        if not isinstance(doc, dict) or (kind and doc.get("kind") != kind):
            return None
        return doc

    def _write(self, path: Path, doc: Mapping[str, Any]) -> None:
        import tempfile  # only a cold run writes

        try:
            path.parent.mkdir(mode=0o750, parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
            tmp = Path(name)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(json.dumps(doc, separators=(",", ":")).encode() + b"\n")
                tmp.chmod(0o660)
                tmp.replace(path)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
        except OSError:
            pass


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
