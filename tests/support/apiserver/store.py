"""The object store behind the fake API server: GET, LIST with selectors and pagination.

Objects are plain dicts keyed by (API group, resource plural, namespace, name), so an object is
served at every version of its group that has the resource (as stored: no conversion).
Ordering, continue tokens (``{"v":"meta.k8s.io/v1","rv":N,"start":"<key>\\u0000"}`` in
unpadded URL-safe base64), ``remainingItemCount`` and list shapes follow the etcd3 storage of
kube-apiserver (see ``list-0*.json`` in the reference recordings).

Limitation: the store keeps no history, so a continued LIST shows the current objects (with the
token's resourceVersion) rather than a snapshot.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import re
import threading
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .discovery import Discovery, ResourceType
from .selectors import field_matcher, label_matcher
from .status import APIError, bad_request, error, expired_continue, not_found

Obj = dict[str, Any]
Key = tuple[str, str, str, str]  # (group, plural, namespace, name)

#: Timestamp given to objects loaded without ``metadata.creationTimestamp``.
DEFAULT_CREATION_TIMESTAMP = "2026-11-30T04:00:00Z"
_CONTINUE_VERSION = "meta.k8s.io/v1"
_B64URL = re.compile(r"[A-Za-z0-9_-]*")
_YAMLLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_objects(source: Iterable[Obj] | Obj | str | Path) -> list[Obj]:
    """Flatten objects from a list, a ``kind: List``/``*List`` dict, or a YAML/JSON file.

    Items of a typed list (``DeploymentList`` from a LIST recording) lack apiVersion/kind;
    they get them from the list. Files may hold several YAML documents.
    """
    if isinstance(source, (str, Path)):
        text = Path(source).read_text()
        if Path(source).suffix == ".json":
            return load_objects(json.loads(text))
        docs = [d for d in yaml.load_all(text, Loader=_YAMLLoader) if d]
        return [obj for doc in docs for obj in load_objects(doc)]
    if isinstance(source, dict):
        kind = str(source.get("kind", ""))
        if not kind.endswith("List") or "items" not in source:
            return [copy.deepcopy(source)]
        item_kind = kind[: -len("List")] if kind != "List" else ""
        out: list[Obj] = []
        for item in source.get("items") or []:
            for obj in load_objects(item):
                if item_kind and "kind" not in obj:
                    obj = {"apiVersion": source.get("apiVersion"), "kind": item_kind, **obj}
                out.append(obj)
        return out
    return [obj for item in source for obj in load_objects(item)]


def _pluralize(kind: str) -> str:
    lower = kind.lower()
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    if lower.endswith("y") and lower[-2:-1] not in tuple("aeiou"):
        return lower[:-1] + "ies"
    return lower + "s"


def sorted_json(value: Any) -> Any:
    """A deep copy with every mapping's keys sorted (how unstructured objects serialise)."""
    if isinstance(value, dict):
        return {k: sorted_json(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_json(v) for v in value]
    return value


@dataclass(frozen=True)
class ListOptions:
    """The query parameters of a LIST."""

    label_selector: str = ""
    field_selector: str = ""
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""


class Store:
    """Thread-safe object store with a global resourceVersion counter."""

    def __init__(self, discovery: Discovery, *, fill_metadata: bool = True) -> None:
        self.discovery = discovery
        self.fill_metadata = fill_metadata
        self._lock = threading.RLock()
        self._objects: dict[Key, Obj] = {}
        self._types: dict[Key, ResourceType] = {}
        self._rv = 1
        self._compacted_rv = 0

    # ------------------------------------------------------------------ writes (out of band)
    @property
    def resource_version(self) -> int:
        """The store's current resourceVersion (what a LIST reports)."""
        return self._rv

    def load(self, objects: Iterable[Obj], *, bump: bool = False) -> None:
        """Add or replace objects. CRDs are registered in discovery before the objects.

        Objects keep their ``metadata.resourceVersion`` unless ``bump`` (a live change), in
        which case each gets a new one; the store's resourceVersion becomes the highest seen.
        """
        objects = [copy.deepcopy(o) for o in objects]
        with self._lock:
            for obj in objects:
                if obj.get("kind") == "CustomResourceDefinition":
                    self.discovery.add_crd(obj)
            for obj in objects:
                self._put(obj, bump=bump)

    def _put(self, obj: Obj, *, bump: bool) -> None:
        rtype = self.type_of(obj)
        meta = obj.setdefault("metadata", {})
        if rtype.namespaced:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        name = meta.get("name")
        if not name:
            raise ValueError(f"object without metadata.name: {obj!r:.200}")
        key = (rtype.group, rtype.plural, meta.get("namespace", ""), name)
        rv = str(meta.get("resourceVersion", ""))
        if bump or not rv.isdigit():
            if bump or self.fill_metadata:
                self._rv += 1
                meta["resourceVersion"] = str(self._rv)
        else:
            self._rv = max(self._rv, int(rv))
        if self.fill_metadata:
            meta.setdefault("uid", str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(key))))
            meta.setdefault("creationTimestamp", DEFAULT_CREATION_TIMESTAMP)
        self._objects[key] = obj
        self._types[key] = rtype

    def delete(self, api_version: str, kind: str, name: str, namespace: str = "") -> bool:
        """Remove an object (a live change: bumps the resourceVersion). True if it existed."""
        rtype = self.type_of({"apiVersion": api_version, "kind": kind})
        key = (rtype.group, rtype.plural, namespace if rtype.namespaced else "", name)
        with self._lock:
            if self._objects.pop(key, None) is None:
                return False
            self._types.pop(key, None)
            self._rv += 1
            return True

    def compact(self) -> None:
        """Simulate an etcd compaction: every continue token issued so far expires (410)."""
        with self._lock:
            self._rv += 1
            self._compacted_rv = self._rv

    def type_of(self, obj: Obj) -> ResourceType:
        """The resource type of an object, synthesised (CRD-like) if discovery lacks it."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not api_version or not kind:
            raise ValueError(f"object without apiVersion/kind: {obj!r:.200}")
        rtype = self.discovery.for_kind(api_version, kind)
        if rtype is None:
            group, _, version = str(api_version).rpartition("/")
            namespaced = bool((obj.get("metadata") or {}).get("namespace"))
            rtype = ResourceType(
                group=group,
                version=version,
                plural=_pluralize(kind),
                singular=kind.lower(),
                kind=kind,
                namespaced=namespaced,
                custom=True,
            )
            self.discovery.add(rtype)
        return rtype

    # ------------------------------------------------------------------ reads
    def objects(self, group: str, plural: str, namespace: str | None = None) -> list[Obj]:
        """Deep copies of the stored objects of one resource (optionally one namespace)."""
        with self._lock:
            return [
                copy.deepcopy(obj)
                for (g, p, ns, _), obj in self._objects.items()
                if g == group and p == plural and (namespace is None or ns == namespace)
            ]

    def all_objects(self) -> list[Obj]:
        """Deep copies of every stored object."""
        with self._lock:
            return [copy.deepcopy(obj) for obj in self._objects.values()]

    def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj:
        """``GET .../{name}``: the object with apiVersion/kind, or a 404 :class:`APIError`."""
        with self._lock:
            obj = self._objects.get((rtype.group, rtype.plural, namespace, name))
            if obj is None:
                raise not_found(rtype.plural, rtype.group, name)
            return self.render(rtype, obj)

    def render(self, rtype: ResourceType, obj: Obj) -> Obj:
        """An object as the server writes it: ``kind``/``apiVersion`` first (sorted if CRD)."""
        out: Obj = {"kind": obj["kind"], "apiVersion": obj["apiVersion"]}
        out.update((k, copy.deepcopy(v)) for k, v in obj.items() if k not in out)
        return sorted_json(out) if rtype.custom else out

    def list(self, rtype: ResourceType, namespace: str, options: ListOptions) -> Obj:
        """``LIST``: a ``<Kind>List`` body honouring selectors, limit and continue."""
        labels = label_matcher(options.label_selector)
        fields = field_matcher(options.field_selector, rtype.plural)
        with self._lock:
            list_rv, start = self._list_start(options)
            entries = sorted(
                (self._sort_key(key, namespace), obj)
                for key, obj in self._objects.items()
                if key[0] == rtype.group
                and key[1] == rtype.plural
                and (not namespace or key[2] == namespace)
            )
            keys = [k for k, _ in entries]
            objs = [o for _, o in entries]
            items: list[Obj] = []
            last_key = ""
            read = 0  # keys examined, as etcd pages through them
            for key, obj in zip(keys, objs, strict=True):
                if options.limit and len(items) >= options.limit:
                    break
                read += 1
                if start and key < start:
                    continue
                if labels(obj) and fields(obj):
                    items.append(obj)
                    last_key = key
            remaining = len(keys) - read
            has_more = bool(options.limit) and len(items) >= options.limit and remaining > 0

            metadata: Obj = {"resourceVersion": str(list_rv)}
            if has_more:
                metadata["continue"] = encode_continue(list_rv, last_key + "\x00")
                if not options.label_selector and not options.field_selector:
                    metadata["remainingItemCount"] = remaining
            list_kind = rtype.kind + "List"
            if rtype.custom:
                body = {
                    "apiVersion": rtype.group_version,
                    "items": [self.render(rtype, o) for o in items],
                    "kind": list_kind,
                    "metadata": {"continue": "", **metadata},
                }
                sorted_body: Obj = sorted_json(body)
                return sorted_body
            rendered = [
                {k: copy.deepcopy(v) for k, v in o.items() if k not in ("apiVersion", "kind")}
                for o in items
            ]
            return {
                "kind": list_kind,
                "apiVersion": rtype.group_version,
                "metadata": metadata,
                "items": rendered,
            }

    def watch_events(
        self, rtype: ResourceType, namespace: str, options: ListOptions
    ) -> Iterator[Obj]:
        """``ADDED`` events for the current matching objects (a watch that ends at once)."""
        body = self.list(
            rtype, namespace, ListOptions(options.label_selector, options.field_selector)
        )
        for item in body["items"]:
            obj = (
                item
                if rtype.custom
                else {"kind": rtype.kind, "apiVersion": rtype.group_version, **item}
            )
            yield {"type": "ADDED", "object": obj}

    @staticmethod
    def _sort_key(key: Key, namespace: str) -> str:
        """The etcd key relative to the LIST's prefix: ``ns/name``, or ``name``."""
        _, _, ns, name = key
        return f"{ns}/{name}" if ns and not namespace else name

    def _list_start(self, options: ListOptions) -> tuple[int, str]:
        """(resourceVersion to report, first key to return) for a LIST's options."""
        if options.continue_token:
            if options.resource_version not in ("", "0"):
                raise bad_request("specifying resource version is not allowed when using continue")
            rv, start = decode_continue(options.continue_token)
            if rv == -1:
                return self._rv, start
            if rv < self._compacted_rv:
                raise expired_continue(encode_continue(-1, start))
            return rv, start
        if options.resource_version not in ("", "0"):
            if not options.resource_version.isdigit():
                raise bad_request(f"invalid resource version: {options.resource_version}")
            wanted = int(options.resource_version)
            if wanted > self._rv:
                err = error(
                    504,
                    f"Too large resource version: {wanted}, current: {self._rv}",
                    details={
                        "causes": [
                            {
                                "reason": "ResourceVersionTooLarge",
                                "message": "Too large resource version",
                            }
                        ],
                        "retryAfterSeconds": 1,
                    },
                )
                raise err
            if options.resource_version_match == "Exact":
                if wanted < self._compacted_rv:
                    raise error(
                        410,
                        "The resourceVersion for the provided list is too old.",
                        reason="Expired",
                    )
                return wanted, ""
        return self._rv, ""


def encode_continue(rv: int, start: str) -> str:
    """A continue token in the apiserver's format (unpadded URL-safe base64 of JSON)."""
    raw = json.dumps({"v": _CONTINUE_VERSION, "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    """Decode a continue token; 400 BadRequest (server wording) when it is not valid."""

    def invalid(why: str) -> APIError:
        return bad_request(f"invalid continue token: continue key is not valid: {why}")

    bad_char = _B64URL.match(token)
    assert bad_char is not None
    if bad_char.end() < len(token):
        raise invalid(f"illegal base64 data at input byte {bad_char.end()}")
    if len(token) % 4 == 1:
        raise invalid(f"illegal base64 data at input byte {len(token) - 1}")
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise invalid(str(exc)) from exc
    if not isinstance(data, dict) or data.get("v") != _CONTINUE_VERSION:
        raise invalid("server does not recognize this encoded version")
    rv, start = data.get("rv"), data.get("start")
    if not isinstance(rv, int) or rv == 0 or not isinstance(start, str):
        raise invalid(f"incorrect encoded start resourceVersion (version {_CONTINUE_VERSION})")
    return rv, start
