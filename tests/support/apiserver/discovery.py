"""API discovery documents, as a real kube-apiserver v1.36.2 serves them.

The recorded documents (``testdata/apiserver/v1.36/discovery/``: the 21 groups and 22
group-versions of ``/apis``, the core group of ``/api``, both also as aggregated discovery, and
every group-version's APIResourceList) are served as they are; ``/version`` is the v1.33.5
server's (``testdata/apiserver/discovery-01-version.json``), which the other recordings come
from. Kinds that the recordings lack (a ``CustomResourceDefinition`` in the store, or an object
of an unknown kind) are added to *all* forms of discovery, so ``/apis``, ``/apis/<g>/<v>`` and
the aggregated ``/apis`` always agree.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

JSON = dict[str, Any]
DATA_DIR = Path(__file__).resolve().parents[3] / "testdata" / "apiserver"
DISCOVERY_DIR = DATA_DIR / "v1.36" / "discovery"

#: Verbs (in the order a CRD's discovery lists them) for custom resources.
CRD_VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update", "watch")
#: Groups in the recordings that are served by CRDs (list items keep apiVersion/kind).
RECORDED_CUSTOM_GROUPS = frozenset({"argoproj.io"})


@dataclass(frozen=True)
class ResourceType:
    """One servable resource (``deployments`` in ``apps/v1``) and how it behaves."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...] = CRD_VERBS
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    custom: bool = False
    """Served like a CRD: unstructured JSON (sorted keys), list items carry apiVersion/kind."""
    subresources: tuple[str, ...] = ()

    @property
    def group_version(self) -> str:
        """``apps/v1``, or ``v1`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """``deployments.apps``, or ``pods`` for the core group."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """Same hash the server computes (``discovery.StorageVersionHash``)."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def _load(name: str) -> JSON:
    data: JSON = json.loads((DATA_DIR / name).read_text())
    return data


def _load_discovery(name: str) -> JSON:
    data: JSON = json.loads((DISCOVERY_DIR / name).read_text())
    return data


def version_sort_key(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version priority: GA > beta > alpha, higher numbers first (sort ascending)."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if match is None:
        return (3, 0, 0, version)
    major, stage, minor = match.groups()
    rank = {"": 0, "beta": 1, "alpha": 2}[stage or ""]
    return (rank, -int(major), -int(minor or 0), version)


class Discovery:
    """All discovery documents, extendable with extra resource types."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # documents are extended while requests read them
        self.version_info = _load("discovery-01-version.json")
        self._api_versions = _load_discovery("api.json")
        self._group_list = _load_discovery("apis.json")
        self._aggregated = _load_discovery("aggregated-apis.json")
        self._aggregated_core = _load_discovery("aggregated-api.json")
        self._resource_lists: dict[str, JSON] = {"v1": _load_discovery("api_v1.json")}
        for group in self._group_list["groups"]:
            for entry in group["versions"]:
                name = "apis_" + entry["groupVersion"].replace(".", "_").replace("/", "_")
                self._resource_lists[entry["groupVersion"]] = _load_discovery(name + ".json")
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        for group_version, doc in self._resource_lists.items():
            group, _, version = group_version.rpartition("/")
            for res in doc["resources"]:
                plural, _, sub = res["name"].partition("/")
                if sub:
                    continue
                subs = tuple(
                    r["name"].partition("/")[2]
                    for r in doc["resources"]
                    if r["name"].startswith(plural + "/")
                )
                self._types[(group, version, plural)] = ResourceType(
                    group=group,
                    version=version,
                    plural=plural,
                    singular=res.get("singularName") or res["kind"].lower(),
                    kind=res["kind"],
                    namespaced=res["namespaced"],
                    verbs=tuple(res["verbs"]),
                    short_names=tuple(res.get("shortNames", ())),
                    categories=tuple(res.get("categories", ())),
                    custom=group in RECORDED_CUSTOM_GROUPS,
                    subresources=subs,
                )

    # ------------------------------------------------------------------ lookups
    def resource(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The resource type served at ``/apis/<group>/<version>/<plural>``."""
        return self._types.get((group, version, plural))

    def serves(self, group: str, version: str) -> bool:
        """Whether the group-version exists at all."""
        gv = f"{group}/{version}" if group else version
        return gv in self._resource_lists

    def for_kind(self, api_version: str, kind: str) -> ResourceType | None:
        """The resource type of objects with this ``apiVersion`` and ``kind``."""
        group, _, version = api_version.rpartition("/")
        for rtype in self.types():
            if rtype.group == group and rtype.version == version and rtype.kind == kind:
                return rtype
        return None

    def types(self) -> list[ResourceType]:
        """Every servable resource type."""
        with self._lock:
            return list(self._types.values())

    # ------------------------------------------------------------------ extension
    def add(self, rtype: ResourceType) -> None:
        """Serve ``rtype`` in every discovery document (no-op if it is already there)."""
        with self._lock:
            self._add(rtype)

    def _add(self, rtype: ResourceType) -> None:
        key = (rtype.group, rtype.version, rtype.plural)
        if key in self._types:
            return
        self._types[key] = rtype
        gv = rtype.group_version
        entries = [_resource_list_entry(rtype)]
        for sub in rtype.subresources:
            entries.append(_subresource_list_entry(rtype, sub))
        if gv in self._resource_lists:
            self._resource_lists[gv]["resources"].extend(entries)
        else:
            self._resource_lists[gv] = {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": gv,
                "resources": entries,
            }
        if not rtype.group:
            return  # the core group is fixed at v1 and only lives in /api
        self._add_to_group_list(rtype)
        self._add_to_aggregated(rtype)

    def _add_to_group_list(self, rtype: ResourceType) -> None:
        groups = self._group_list["groups"]
        group = next((g for g in groups if g["name"] == rtype.group), None)
        gv = {"groupVersion": rtype.group_version, "version": rtype.version}
        if group is None:
            groups.append({"name": rtype.group, "versions": [gv], "preferredVersion": gv})
            return
        if all(v["version"] != rtype.version for v in group["versions"]):
            group["versions"].append(gv)
            group["versions"].sort(key=lambda v: version_sort_key(v["version"]))
            group["preferredVersion"] = dict(group["versions"][0])

    def _add_to_aggregated(self, rtype: ResourceType) -> None:
        items = self._aggregated["items"]
        item = next((i for i in items if i["metadata"]["name"] == rtype.group), None)
        if item is None:
            item = {"metadata": {"name": rtype.group, "creationTimestamp": None}, "versions": []}
            items.append(item)
        entry = next((v for v in item["versions"] if v["version"] == rtype.version), None)
        if entry is None:
            entry = {"version": rtype.version, "resources": [], "freshness": "Current"}
            item["versions"].append(entry)
            item["versions"].sort(key=lambda v: version_sort_key(v["version"]))
        entry["resources"].append(_aggregated_entry(rtype))

    def add_crd(self, crd: JSON) -> list[ResourceType]:
        """Serve every served version of an ``apiextensions.k8s.io/v1`` CRD object."""
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        added = []
        for version in spec.get("versions") or []:
            if not version.get("served", True):
                continue
            subresources = version.get("subresources") or {}
            rtype = ResourceType(
                group=spec["group"],
                version=version["name"],
                plural=names["plural"],
                singular=names.get("singular") or names["kind"].lower(),
                kind=names["kind"],
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                custom=True,
                subresources=tuple(s for s in ("scale", "status") if s in subresources),
            )
            self.add(rtype)
            added.append(rtype)
        return added

    # ------------------------------------------------------------------ documents
    def api_versions(self) -> JSON:
        """``GET /api``: APIVersions."""
        with self._lock:
            return copy.deepcopy(self._api_versions)

    def group_list(self) -> JSON:
        """``GET /apis``: APIGroupList (unaggregated)."""
        with self._lock:
            return copy.deepcopy(self._group_list)

    def aggregated_apis(self) -> JSON:
        """``GET /apis`` with the aggregated Accept: APIGroupDiscoveryList (v2)."""
        with self._lock:
            return copy.deepcopy(self._aggregated)

    def aggregated_core(self) -> JSON:
        """``GET /api`` with the aggregated Accept: the core group as APIGroupDiscoveryList."""
        with self._lock:
            return copy.deepcopy(self._aggregated_core)

    def resource_list(self, group: str, version: str) -> JSON | None:
        """``GET /api/v1`` or ``/apis/<group>/<version>``: APIResourceList, None if unknown."""
        with self._lock:
            doc = self._resource_lists.get(f"{group}/{version}" if group else version)
            return copy.deepcopy(doc) if doc is not None else None


def _resource_list_entry(rtype: ResourceType) -> JSON:
    entry: JSON = {
        "name": rtype.plural,
        "singularName": rtype.singular,
        "namespaced": rtype.namespaced,
        "kind": rtype.kind,
        "verbs": list(rtype.verbs),
    }
    if rtype.short_names:
        entry["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        entry["categories"] = list(rtype.categories)
    entry["storageVersionHash"] = storage_version_hash(rtype.group, rtype.version, rtype.kind)
    return entry


def _subresource_list_entry(rtype: ResourceType, sub: str) -> JSON:
    entry: JSON = {
        "name": f"{rtype.plural}/{sub}",
        "singularName": "",
        "namespaced": rtype.namespaced,
    }
    if sub == "scale":
        entry.update(group="autoscaling", version="v1", kind="Scale")
    else:
        entry["kind"] = rtype.kind
    entry["verbs"] = ["get", "patch", "update"]
    return entry


def _aggregated_entry(rtype: ResourceType) -> JSON:
    own_kind = {
        "group": rtype.group if rtype.custom else "",
        "version": rtype.version if rtype.custom else "",
        "kind": rtype.kind,
    }
    entry: JSON = {
        "resource": rtype.plural,
        "responseKind": own_kind,
        "scope": "Namespaced" if rtype.namespaced else "Cluster",
        "singularResource": rtype.singular,
        "verbs": list(rtype.verbs),
    }
    if rtype.short_names:
        entry["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        entry["categories"] = list(rtype.categories)
    if rtype.subresources:
        entry["subresources"] = [
            {
                "subresource": sub,
                "responseKind": (
                    {"group": "autoscaling", "version": "v1", "kind": "Scale"}
                    if sub == "scale"
                    else dict(own_kind)
                ),
                "verbs": ["get", "patch", "update"],
            }
            for sub in rtype.subresources
        ]
    return entry
