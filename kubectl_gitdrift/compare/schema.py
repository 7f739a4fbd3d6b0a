"""Kubernetes type knowledge read from OpenAPI definitions: merge keys, patch strategies, list
types, and which fields hold Quantities, IntOrStrings and times.

The definitions map a definition name to its JSON schema, as returned by
`openapi.load_builtin_definitions` (kubernetes-validate's `_definitions.json`) or
`openapi.definitions_from_openapi_v3` (a cluster's `/openapi/v3` document, CRDs included).
`$ref`s of any prefix (`#/$defs/`, `#/definitions/`, `#/components/schemas/`) and `allOf`
wrappers are resolved lazily and memoized: building a `Schema` only indexes the kinds, and each
look-up after the first is a dict hit.

Pure: no I/O, no kr8s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["BUILTIN_PREFIX", "INT_OR_STRING", "QUANTITY", "Node", "Schema"]

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
OPAQUE = frozenset(
    {
        "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
        "io.k8s.apimachinery.pkg.runtime.RawExtension",
    }
)
"""Definitions whose JSON Go's types hold as raw bytes (not decoded, so not normalized)."""
_TIMES = frozenset(
    {"io.k8s.apimachinery.pkg.apis.meta.v1.Time", "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"}
)
BUILTIN_PREFIX = "io.k8s.api."
"""Definitions of the types in k8s.io/api: the kinds client-go's scheme (and so Argo CD) knows."""

_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})
_EMPTY: Mapping[str, Any] = {}


def _ref_name(ref: str) -> str:
    """`#/components/schemas/io.k8s.api.core.v1.Pod` → `io.k8s.api.core.v1.Pod`."""
    return ref.rsplit("/", 1)[-1]


class Node:
    """The schema of one field at one place in an object.

    Extensions written where the field is used (`x-kubernetes-patch-strategy` beside a `$ref`) win
    over those of the referenced definition. Children are built on first use and memoized.
    """

    __slots__ = (
        "_children",
        "_int_or_string",
        "_items",
        "_known",
        "_map_of_values",
        "_merge_key",
        "_name",
        "_quantity",
        "_raw",
        "_refs",
        "_schema",
        "_site",
        "_strategies",
        "_type",
        "_values",
        "opaque",
        "plain_object",
        "scalar_type",
    )

    def __init__(
        self,
        schema: Schema,
        site: Mapping[str, Any],
        raw: Mapping[str, Any],
        refs: frozenset[str],
        name: str | None = None,
    ) -> None:
        self._schema = schema
        self._name = name  # set for the node of a whole definition
        self._site = site  # the schema where the field is declared (may hold $ref/allOf)
        self._raw = raw  # the resolved schema
        self._refs = refs  # every definition name passed through while resolving
        self._children: dict[str, Node | None] = {}
        self._items: Node | bool | None = False  # False: not computed yet
        self._values: Node | bool | None = False
        # pure functions of (site, raw, refs), read in every hot loop: computed once
        self._type = self._compute_type()
        self._quantity = self._compute_quantity()
        self._int_or_string = not self._quantity and (
            INT_OR_STRING in refs
            or self._ext("x-kubernetes-int-or-string") is True
            or raw.get("format") == "int-or-string"
        )
        self.scalar_type: str | None = (
            self._type
            if self._type in ("string", "integer", "number", "boolean")
            and not self._quantity
            and not self._int_or_string
            else None
        )
        """The JSON type of a plain scalar field (not a Quantity nor an IntOrString), else None."""
        self._map_of_values = "properties" not in raw and isinstance(
            raw.get("additionalProperties"), Mapping
        )
        self._known = self._compute_known()
        self.opaque = bool(refs & OPAQUE)
        """Raw JSON Go keeps byte for byte (managedFields' fieldsV1, RawExtension)."""
        self.plain_object = (
            self._type == "object"
            and not self._quantity
            and not self._int_or_string
            and not self.opaque
        )
        """A JSON object decoded field by field (a struct or a map), nothing special."""
        merge_key = self._ext("x-kubernetes-patch-merge-key")
        self._merge_key: str | None = (
            merge_key if isinstance(merge_key, str) and merge_key else None
        )
        strategy = self._ext("x-kubernetes-patch-strategy")
        self._strategies: frozenset[str] = (
            frozenset(part.strip() for part in strategy.split(",") if part.strip())
            if isinstance(strategy, str)
            else frozenset()
        )

    def __repr__(self) -> str:
        return f"Node({self.definition or self.type or 'any'})"

    # ----------------------------------------------------------------- navigation

    def field(self, name: str) -> Node | None:
        """The schema of property `name`; for a map (`additionalProperties`), the value schema for
        any key. None when the field is unknown or the object is free-form."""
        try:
            return self._children[name]
        except KeyError:
            pass
        props = self._raw.get("properties")
        child: Node | None = None
        if isinstance(props, Mapping) and isinstance(props.get(name), Mapping):
            child = self._schema._node(props[name])
        else:
            child = self.values()
        self._children[name] = child
        return child

    def values(self) -> Node | None:
        """The value schema of a map (`additionalProperties`), or None."""
        if self._values is False:
            extra = self._raw.get("additionalProperties")
            self._values = self._schema._node(extra) if isinstance(extra, Mapping) else None
        return self._values if isinstance(self._values, Node) else None

    def items(self) -> Node | None:
        """The schema of a list's items, or None when this is not a typed list."""
        if self._items is False:
            items = self._raw.get("items")
            self._items = self._schema._node(items) if isinstance(items, Mapping) else None
        return self._items if isinstance(self._items, Node) else None

    def path(self, *names: str) -> Node | None:
        """Walk several fields at once; lists are stepped through to their items, so
        `path("spec", "template", "spec", "containers", "ports")` is the container port list."""
        node: Node | None = self
        for name in names:
            if node is None:
                return None
            if node.type == "array":
                node = node.items()
                if node is None:
                    return None
            node = node.field(name)
        return node

    # ----------------------------------------------------------------- shape

    @property
    def definition(self) -> str | None:
        """The definition name this field refers to (`io.k8s.api.core.v1.Container`), if any."""
        if self._name is not None:
            return self._name
        ref = self._site.get("$ref")
        if isinstance(ref, str):
            return _ref_name(ref)
        for sub in self._site.get("allOf") or ():
            if isinstance(sub, Mapping) and isinstance(sub.get("$ref"), str):
                return _ref_name(sub["$ref"])
        return None

    @property
    def type(self) -> str | None:
        """ "object", "array", "string", "integer", "number", "boolean", or None (unknown/oneOf)."""
        return self._type

    def _compute_type(self) -> str | None:
        declared = self._raw.get("type")
        if isinstance(declared, str):
            return declared if declared in _TYPES else None
        if isinstance(declared, list):
            for t in declared:
                if t in _TYPES:
                    return str(t)
        if "properties" in self._raw or "additionalProperties" in self._raw:
            return "object"
        if "items" in self._raw:
            return "array"
        return None

    @property
    def is_map_of_values(self) -> bool:
        """True for `map[string]T` fields (labels, `resources.requests`): any key, one schema."""
        return self._map_of_values

    def known_fields(self) -> frozenset[str] | None:
        """The declared property names of a structured object; None when any key may appear (maps,
        preserve-unknown-fields, untyped objects) or when this is not an object."""
        return self._known

    def _compute_known(self) -> frozenset[str] | None:
        props = self._raw.get("properties")
        if not isinstance(props, Mapping) or self._ext("x-kubernetes-preserve-unknown-fields"):
            return None
        if self._raw.get("additionalProperties") not in (None, False):
            return None
        return frozenset(props)

    # ----------------------------------------------------------------- merge semantics

    def _ext(self, key: str) -> Any:
        """An extension, from the field's declaration first, then from its definition."""
        if key in self._site:
            return self._site[key]
        return self._raw.get(key)

    @property
    def patch_merge_key(self) -> str | None:
        """`x-kubernetes-patch-merge-key`: the key that matches list items in a strategic merge."""
        return self._merge_key

    @property
    def patch_strategies(self) -> frozenset[str]:
        """`x-kubernetes-patch-strategy`, split: {"merge"}, {"retainKeys"}, or both."""
        return self._strategies

    @property
    def list_type(self) -> str | None:
        """`x-kubernetes-list-type`: "atomic", "set", "map", or None when undeclared."""
        value = self._ext("x-kubernetes-list-type")
        return value if isinstance(value, str) else None

    @property
    def list_map_keys(self) -> tuple[str, ...]:
        """`x-kubernetes-list-map-keys` of a `list-type: map` list (server-side apply's keys)."""
        value = self._ext("x-kubernetes-list-map-keys")
        return tuple(str(k) for k in value) if isinstance(value, list) else ()

    @property
    def map_type(self) -> str | None:
        """`x-kubernetes-map-type`: "atomic" or "granular", or None when undeclared."""
        value = self._ext("x-kubernetes-map-type")
        return value if isinstance(value, str) else None

    # ----------------------------------------------------------------- value kinds

    @property
    def is_quantity(self) -> bool:
        """A `resource.Quantity` (`"500m"`, `"1Gi"`): compared in canonical form, as Argo CD does.
        CRD fields count when they carry kubebuilder's int-or-string quantity pattern."""
        return self._quantity

    def _compute_quantity(self) -> bool:
        if QUANTITY in self._refs:
            return True
        pattern = self._raw.get("pattern")
        return (
            self._ext("x-kubernetes-int-or-string") is True
            and isinstance(pattern, str)
            and "[KMGTPE]i" in pattern
        )

    @property
    def is_int_or_string(self) -> bool:
        """An `IntOrString` (`targetPort`, `maxSurge`): `80` and `"80"` are different values."""
        return self._int_or_string

    @property
    def is_time(self) -> bool:
        """A `metav1.Time`/`MicroTime` or any `date-time` string."""
        return bool(self._refs & _TIMES) or self._raw.get("format") == "date-time"

    @property
    def is_preserve_unknown_fields(self) -> bool:
        """`x-kubernetes-preserve-unknown-fields: true`: the subtree is free-form."""
        return self._ext("x-kubernetes-preserve-unknown-fields") is True


class Schema:
    """OpenAPI definitions indexed by kind; hands out memoized `Node`s."""

    __slots__ = ("_by_gk", "_by_gvk", "_definitions", "_nodes", "_resolved")

    def __init__(self, definitions: Mapping[str, Any]) -> None:
        """Index `definitions` (name → schema) by `x-kubernetes-group-version-kind`; nothing else is
        read until asked for."""
        self._definitions = definitions
        self._by_gvk: dict[tuple[str, str, str], str] = {}
        self._by_gk: dict[tuple[str, str], list[str]] = {}
        self._nodes: dict[int, Node] = {}
        # id(site) -> (site, resolved, refs); the site is kept so its id stays unique
        self._resolved: dict[int, tuple[Mapping[str, Any], Mapping[str, Any], frozenset[str]]] = {}
        for name, body in definitions.items():
            if not isinstance(body, Mapping):
                continue
            for gvk in body.get("x-kubernetes-group-version-kind") or ():
                if not isinstance(gvk, Mapping):
                    continue
                key = (str(gvk.get("group", "")), str(gvk.get("version", "")), str(gvk["kind"]))
                # a kind listed by several definitions: the one of its own API group wins
                if key not in self._by_gvk or name.startswith(BUILTIN_PREFIX):
                    self._by_gvk[key] = name
                self._by_gk.setdefault((key[0], key[2]), []).append(name)

    def root(self, group: str, version: str, kind: str) -> Node | None:
        """The schema of a whole object of this kind (`("apps", "v1", "Deployment")`), or None."""
        name = self._by_gvk.get((group, version, kind))
        return None if name is None else self.definition(name)

    def closest(self, group: str, version: str, kind: str) -> Node | None:
        """The schema to patch and compare an object of this kind with: `root` when this version is
        defined, else another version of the same built-in kind (`v1` first, then the newest),
        else the kind's successor group for the retired `extensions` versions.

        Argo CD decodes every version client-go registers (apps/v1beta1 StatefulSets, extensions/
        v1beta1 Deployments) even though a current API server no longer serves them; their patch
        metadata (merge keys, strategies, Quantity fields) is that of the version that replaced
        them, so the replacement's schema stands in for them.
        """
        node = self.root(group, version, kind)
        if node is not None:
            return node
        for candidate in (group, _SUCCESSOR_GROUPS.get((group, kind))):
            if candidate is None or not self.is_builtin(candidate, kind):
                continue
            versions = self.versions(candidate, kind)
            preferred = "v1" if "v1" in versions else max(versions, key=_version_rank)
            return self.root(candidate, preferred, kind)
        return None

    def definition(self, name: str) -> Node | None:
        """The schema of a named definition (`io.k8s.api.core.v1.PodSpec`), or None."""
        body = self._definitions.get(name)
        return self._node(body, name) if isinstance(body, Mapping) else None

    def versions(self, group: str, kind: str) -> tuple[str, ...]:
        """The versions that define this kind, sorted."""
        return tuple(sorted(v for (g, v, k) in self._by_gvk if g == group and k == kind))

    def is_builtin(self, group: str, kind: str) -> bool:
        """True when this kind is a built-in Kubernetes type (defined in k8s.io/api), the set
        Argo CD decodes into Go types, defaults and patches with strategic merge. CRDs, aggregated
        APIs, CustomResourceDefinition and APIService themselves are not."""
        names = self._by_gk.get((group, kind), ())
        return any(name.startswith(BUILTIN_PREFIX) for name in names)

    # ----------------------------------------------------------------- resolution

    def _node(self, site: Mapping[str, Any], name: str | None = None) -> Node:
        """The memoized node for a schema site (a definition body when `name` is given)."""
        node = self._nodes.get(id(site))
        if node is None:
            _, raw, refs = self._resolve(site)
            node = Node(self, site, raw, refs | {name} if name else refs, name)
            self._nodes[id(site)] = node
        return node

    def _resolve(
        self, site: Mapping[str, Any], seen: frozenset[str] = frozenset()
    ) -> tuple[Mapping[str, Any], Mapping[str, Any], frozenset[str]]:
        """Follow `$ref` and merge `allOf` members: (site, resolved schema, definitions passed)."""
        cached = self._resolved.get(id(site))
        if cached is not None:
            return cached
        raw: Mapping[str, Any] = site
        refs: frozenset[str] = frozenset()
        ref = site.get("$ref")
        if isinstance(ref, str):
            raw, refs = self._follow(_ref_name(ref), site, seen)
        elif isinstance(site.get("allOf"), list):
            merged: dict[str, Any] = {}
            for sub in site["allOf"]:
                if isinstance(sub, Mapping):
                    _, sub_raw, sub_refs = self._resolve(sub, seen)
                    _merge_into(merged, sub_raw)
                    refs |= sub_refs
            _merge_into(merged, {k: v for k, v in site.items() if k != "allOf"})
            raw = merged
        result = (site, raw, refs)
        self._resolved[id(site)] = result
        return result

    def _follow(
        self, name: str, site: Mapping[str, Any], seen: frozenset[str]
    ) -> tuple[Mapping[str, Any], frozenset[str]]:
        """Resolve a reference to definition `name`; a cycle or a dangling ref yields `{}`."""
        target = self._definitions.get(name)
        if name in seen or not isinstance(target, Mapping):
            return _EMPTY, frozenset({name})
        _, raw, refs = self._resolve(target, seen | {name})
        if len(site) > 1:  # sibling keywords beside $ref (OpenAPI 3.1 style): overlay them
            merged = dict(raw)
            _merge_into(merged, {k: v for k, v in site.items() if k != "$ref"})
            raw = merged
        return raw, refs | {name}


# kinds the retired `extensions/v1beta1` group served, and where they live now
_SUCCESSOR_GROUPS: dict[tuple[str, str], str] = {
    ("extensions", "Deployment"): "apps",
    ("extensions", "DaemonSet"): "apps",
    ("extensions", "ReplicaSet"): "apps",
    ("extensions", "Ingress"): "networking.k8s.io",
    ("extensions", "NetworkPolicy"): "networking.k8s.io",
}

_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def _version_rank(version: str) -> tuple[int, int, int]:
    """Kubernetes version priority: v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > anything else."""
    match = _VERSION.match(version)
    if match is None:
        return (-1, 0, 0)
    major, stage, minor = match.groups()
    return (int(major), {"alpha": 0, "beta": 1, None: 2}[stage], int(minor or 0))


def _merge_into(target: dict[str, Any], extra: Mapping[str, Any]) -> None:
    """Shallow merge for `allOf`: properties are united, other keys overwritten."""
    for key, value in extra.items():
        if key == "properties" and isinstance(value, Mapping):
            props = dict(target.get("properties") or {})
            props.update(value)
            target[key] = props
        else:
            target[key] = value
