"""Puts desired and live objects in the shape Argo CD compares them in.

Pure functions over plain dicts: remarshal (quantities, number spelling, empty optional fields),
kind-specific rules (Secret stringData, Role rules, Endpoints order), the status field, and
ignoreDifferences (JSON pointers, jq paths, trusted managers). Each returns a new object.
"""

from __future__ import annotations

import base64
import fnmatch
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import fields, quantity
from kubectl_gitdrift.errors import AppError


class Node(Protocol):
    """The schema node interface normalize and diff rely on (see schema.Node)."""

    @property
    def type(self) -> str | None: ...
    @property
    def patch_merge_key(self) -> str | None: ...
    @property
    def patch_strategies(self) -> frozenset[str]: ...
    @property
    def is_quantity(self) -> bool: ...
    @property
    def is_map_of_values(self) -> bool: ...
    @property
    def is_int_or_string(self) -> bool: ...
    @property
    def definition(self) -> str | None: ...
    @property
    def scalar_type(self) -> str | None: ...
    @property
    def opaque(self) -> bool: ...
    @property
    def plain_object(self) -> bool: ...
    def known_fields(self) -> frozenset[str] | None: ...
    def field(self, name: str) -> Node | None: ...
    def items(self) -> Node | None: ...


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

# Fields whose zero value (`false`, `0`) survives a round-trip through the Go type: pointers and
# fields without omitempty. Every other bool/int at its zero value disappears. Keyed by field
# name, which is unambiguous for the built-in kinds except `readOnly` (a plain bool in
# VolumeMount, the common case) and `timeoutSeconds` (a plain int32 in probes, the common case).
_POINTER_BOOLS = frozenset(
    {
        "allowPrivilegeEscalation", "automountServiceAccountToken", "enableServiceLinks",
        "hostUsers", "immutable", "optional", "privileged", "readOnlyRootFilesystem",
        "runAsNonRoot", "setHostnameAsFQDN", "shareProcessNamespace", "suspend",
        "allocateLoadBalancerNodePorts", "manualSelector", "ready", "serving", "terminating",
    }
)  # fmt: skip
_POINTER_INTS = frozenset(
    {
        "replicas", "revisionHistoryLimit", "progressDeadlineSeconds", "partition",
        "terminationGracePeriodSeconds", "activeDeadlineSeconds", "priority", "runAsUser",
        "runAsGroup", "fsGroup", "defaultMode", "mode", "expirationSeconds", "parallelism",
        "completions", "backoffLimit", "backoffLimitPerIndex", "maxFailedIndexes",
        "ttlSecondsAfterFinished", "startingDeadlineSeconds", "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit", "minReplicas", "stabilizationWindowSeconds", "minDomains",
        "maxSkew", "weight", "containerPort", "port", "maxReplicas",
    }
)  # fmt: skip


# List fields whose Go struct tag lacks omitempty, where the round-trip keeps an empty or null
# value instead of dropping it: (definition, field). Role/ClusterRole `rules` is the one that
# decides verdicts: git's `rules: []` survives remarshal, becomes null in normalizeRole, and the
# three-way patch then deletes the rules live has (an aggregated role's, filled by the
# controller). Other such fields (PodSpec.containers, PolicyRule.verbs) cannot be empty on a
# server, so dropping or keeping their empty value never changes a verdict.
_NOT_OMITEMPTY = frozenset(
    {
        ("io.k8s.api.rbac.v1.ClusterRole", "rules"),
        ("io.k8s.api.rbac.v1.Role", "rules"),
    }
)


def deepcopy(body: Any) -> Any:
    """A deep copy of JSON-like data (model.copy_json)."""
    return model.copy_json(body)


# --------------------------------------------------------------------------- remarshal


def remarshal(body: Any, node: Node | None, *, top: bool = True) -> Any:
    """What Argo CD's remarshal (a JSON round-trip through the Go type) does to built-in kinds:
    canonical quantities, integral floats as ints, null, empty and zero-valued optional fields
    dropped (pointer fields keep `false`/`0`; fields without omitempty, `_NOT_OMITEMPTY`, keep
    `[]` and null; a zero `creationTimestamp`, a struct in Go, stays null). Always returns a new
    object, sharing no containers with `body` but the raw JSON below.

    `node` None means an unknown kind (a CRD): only number spelling changes. So does an object
    Go could not decode strictly (a field the type does not have, a string in an integer field):
    Argo CD then compares it as written, and the unknown field stays drift for good.

    Raw JSON the Go types keep byte for byte (managedFields' `fieldsV1`, RawExtension) is neither
    normalized nor copied: it is shared with `body`, and read-only like `body` itself.
    """
    if node is not None and top:
        try:  # one pass: remarshal as the type, checking on the way that Go would decode it
            return _remarshal_typed(body, node, top=True)
        except _Undecodable:
            node = None
    return _remarshal(body, node, top=top)


class _Undecodable(Exception):
    """Go's strict decoder would reject the object: it is compared as written."""


_SCALARS = (str, int, float)


def _remarshal_typed(body: Any, node: Node, *, top: bool) -> Any:
    """`_remarshal(body, node)`, raising `_Undecodable` where `decodes(body, node)` is False."""
    cls = type(body)
    if cls is dict and node.plain_object:
        return _typed_object(body, node, top)
    if body is None:
        return None
    if node.opaque:
        return body
    if node.is_quantity or node.is_int_or_string:
        if cls is str:
            return (quantity.canonical(body) or body) if node.is_quantity else body
        if not isinstance(body, _SCALARS) or isinstance(body, bool):
            raise _Undecodable
        if isinstance(body, float) and body.is_integer():
            return int(body)
        if node.is_quantity:
            return quantity.canonical(body) or body
        return body
    kind = node.type
    if kind is not None:
        if (kind, cls) not in _TYPE_OK and not _json_type_ok(body, kind):
            raise _Undecodable
    elif isinstance(body, float) and body.is_integer():
        return int(body)
    if cls is str or cls is int or cls is bool:
        return body
    if cls is dict or (cls is not list and isinstance(body, Mapping)):
        return _typed_object(body, node, top)
    if isinstance(body, list):
        item = node.items()
        if item is None:
            return [_remarshal(v, None, top=False) for v in body]
        if item.plain_object:
            return [
                _typed_object(v, item, False)
                if type(v) is dict
                else _remarshal_typed(v, item, top=False)
                for v in body
            ]
        leaf = _LEAF_TYPES.get(item.scalar_type or "")
        if leaf is not None:  # a list of strings (args, verbs): items are kept as they are
            return [v if type(v) is leaf else _remarshal_typed(v, item, top=False) for v in body]
        return [_remarshal_typed(v, item, top=False) for v in body]
    if isinstance(body, float) and body.is_integer():
        return int(body)
    return body


_LEAF_TYPES = {"string": str, "integer": int, "boolean": bool}


class _Plan(dict):  # type: ignore[type-arg]
    """Per schema node, per key of its objects: (child node, the scalar type kept inline, keep
    it when falsy, True for a plain object child and `_OPAQUE` for raw JSON, else False); built
    on first use of each key."""

    __slots__ = ("node",)

    def __init__(self, node: Node) -> None:
        super().__init__()
        self.node = node

    def __missing__(self, key: str) -> tuple[Node | None, Any, bool, bool | str]:
        node = self.node
        known = node.known_fields()
        step: tuple[Node | None, Any, bool, bool | str]
        if known is not None and key not in known:
            step = (None, _REJECT, False, False)  # Go's strict decoder rejects the object
        else:
            child = node.field(key)
            if child is None:
                step = (None, None, False, False)
            else:
                leaf = _LEAF_TYPES.get(child.scalar_type or "")
                keep = (
                    node.is_map_of_values  # map[string]T: Go keeps every entry, "" and 0 too
                    or (leaf is int and key in _POINTER_INTS)
                    or (leaf is bool and key in _POINTER_BOOLS)
                )
                plain = child.plain_object or (_OPAQUE if child.opaque else False)
                step = (child, leaf, keep, plain)
        self[key] = step
        return step


_REJECT = object()
_OPAQUE = "opaque"
_PLANS: dict[Node, _Plan] = {}
"""The plans of the schema nodes met so far, all of one schema: a node of another schema (a
long-running process builds one per cycle) starts afresh, so old schemas are not kept alive."""
_PLANS_MAX = 8192
_plans_schema: list[Any] = [None]  # the schema the plans' nodes belong to


def _plan(node: Node) -> _Plan:
    plan = _PLANS.get(node)
    if plan is None:
        owner = getattr(node, "_schema", None)
        if owner is not _plans_schema[0] or len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
            _plans_schema[0] = owner
        plan = _PLANS[node] = _Plan(node)
    return plan


def _typed_object(body: Mapping[str, Any], node: Node, top: bool) -> dict[str, Any]:
    """`_remarshal_typed` of a dict at a plain object node: the hot loop, with the common
    scalar leaves (a str, int or bool where the schema says so) decided inline from the node's
    plan (`_Plan`)."""
    plan = _PLANS.get(node) or _plan(node)
    out: dict[str, Any] = {}
    for key, value in body.items():
        child, leaf, keep, plain = plan[key]
        cls = type(value)
        if cls is leaf:
            if keep or value:
                out[key] = value
            continue
        if child is None:
            if leaf is _REJECT:
                raise _Undecodable
            out[key] = value if cls in _PLAIN_ATOMS else _untyped(value)
            continue
        if cls is dict and value and plain:
            if plain is True:
                out[key] = _typed_object(value, child, False)
            else:  # raw JSON (managedFields' fieldsV1): shared, as _remarshal_typed does
                out[key] = value
            continue
        if (cls is list or cls is str) and value:  # never an omitted empty value
            out[key] = _remarshal_typed(value, child, top=False)
            continue
        if key == "creationTimestamp" and value is None:
            out[key] = None  # metav1.Time is a struct: Go keeps the zero time as null
            continue
        if node.is_map_of_values and value is not None:
            pass
        elif (value is None or value == []) and (node.definition, key) in _NOT_OMITEMPTY:
            out[key] = None if value is None else []
            continue
        elif _empty_optional(key, value, child):
            if value is not None and not decodes(value, child):
                raise _Undecodable
            continue
        out[key] = _remarshal_typed(value, child, top=False)
    return out


def _json_type_ok(body: Any, kind: str) -> bool:
    """The JSON type check of `decodes` for a node of declared type `kind`."""
    cls = type(body)
    if (kind, cls) in _TYPE_OK:
        return True
    if cls is float and kind == "integer":
        return body.is_integer()  # type: ignore[no-any-return]
    if cls in _EXACT:
        return False
    if not isinstance(body, _JSON_TYPES[kind]) or (kind in ("integer", "number") and body is True):
        return False
    if isinstance(body, bool) and kind != "boolean":
        return False
    return not (kind == "integer" and isinstance(body, float) and not body.is_integer())


_TYPE_OK = frozenset(
    {
        ("string", str), ("integer", int), ("number", int), ("number", float),
        ("boolean", bool), ("object", dict), ("array", list),
    }
)  # fmt: skip
_EXACT = frozenset({str, int, float, bool, dict, list})


def _remarshal(body: Any, node: Node | None, *, top: bool) -> Any:
    if node is None:
        return _untyped(body)
    if node.opaque:
        return body
    if isinstance(body, float) and body.is_integer():
        return int(body)
    if node.is_quantity and isinstance(body, (str, int, float)) and not isinstance(body, bool):
        return quantity.canonical(body) or body
    if isinstance(body, Mapping):
        out: dict[str, Any] = {}
        entries = node.is_map_of_values  # map[string]T: Go keeps every entry, "" and 0 too
        for key, value in body.items():
            child = node.field(key)
            if key == "creationTimestamp" and value is None:
                out[key] = None  # metav1.Time is a struct: Go keeps the zero time as null
                continue
            if entries and value is not None:
                pass
            elif (value is None or value == []) and (node.definition, key) in _NOT_OMITEMPTY:
                out[key] = None if value is None else []
                continue
            elif child is not None and _empty_optional(key, value, child):
                continue
            out[key] = _remarshal(value, child, top=False)
        return out
    if isinstance(body, list):
        item = node.items()
        return [_remarshal(v, item, top=False) for v in body]
    return body


def _untyped(body: Any) -> Any:
    """`_remarshal(body, None)`: a copy with integral floats as ints."""
    cls = type(body)
    if cls is dict:
        return {k: (v if type(v) in _PLAIN_ATOMS else _untyped(v)) for k, v in body.items()}
    if cls is list:
        return [v if type(v) in _PLAIN_ATOMS else _untyped(v) for v in body]
    if cls in _PLAIN_ATOMS:
        return body
    if isinstance(body, float) and body.is_integer():
        return int(body)
    if isinstance(body, Mapping):
        return {k: _untyped(v) for k, v in body.items()}
    if isinstance(body, list):
        return [_untyped(v) for v in body]
    return body


_PLAIN_ATOMS = frozenset({str, int, bool, type(None)})


def _empty_optional(key: str, value: Any, node: Node) -> bool:
    if value is None:
        return True  # nil pointers, maps and slices are omitted
    if value == [] or value == "":
        return True
    if value is False and node.type == "boolean":
        return key not in _POINTER_BOOLS
    if (
        value == 0
        and isinstance(value, int)
        and not isinstance(value, bool)
        and node.type == "integer"
    ):
        return key not in _POINTER_INTS
    return value == {} and node.is_map_of_values


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int, float),
    "number": (int, float),
    "boolean": (bool,),
    "object": (Mapping,),
    "array": (list,),
}


def decodes(body: Any, node: Node) -> bool:
    """Would Go's strict decoder (DisallowUnknownFields) accept `body` as this type? False for a
    field the type does not declare and for a value of the wrong JSON type (`replicas: "3"`)."""
    if body is None or node.opaque:
        return True
    if node.is_quantity or node.is_int_or_string:
        return isinstance(body, (str, int, float)) and not isinstance(body, bool)
    kind = node.type
    if kind is not None:
        allowed = _JSON_TYPES[kind]
        if not isinstance(body, allowed) or (kind in ("integer", "number") and body is True):
            return False
        if isinstance(body, bool) and kind != "boolean":
            return False
        if kind == "integer" and isinstance(body, float) and not body.is_integer():
            return False
    if isinstance(body, Mapping):
        known = node.known_fields()
        for key, value in body.items():
            if known is not None and key not in known:
                return False
            child = node.field(key)
            if child is not None and not decodes(value, child):
                return False
    elif isinstance(body, list):
        item = node.items()
        if item is not None:
            return all(decodes(v, item) for v in body)
    return True


def remarshal_known_types(
    body: dict[str, Any], key: model.ObjectKey, definition: Callable[[str], Node | None]
) -> None:
    """Argo CD's known-types normalizer, in place: CRD fields that hold a Kubernetes type
    (Rollout `spec.template.spec` is a PodSpec) are re-marshalled as that type."""
    for path, name in KNOWN_TYPE_FIELDS.get((key.group, key.kind), ()):
        node = definition(name)
        if node is not None:
            _remarshal_at(body, path, node)


KNOWN_TYPE_FIELDS: Mapping[tuple[str, str], tuple[tuple[tuple[str, ...], str], ...]] = {
    ("argoproj.io", "Rollout"): ((("spec", "template", "spec"), "io.k8s.api.core.v1.PodSpec"),),
}


def _remarshal_at(body: Any, path: Sequence[str], node: Node) -> None:
    if isinstance(body, list):  # the field path walks through lists
        for item in body:
            _remarshal_at(item, path, node)
        return
    if not isinstance(body, dict) or not path or path[0] not in body:
        return
    if len(path) == 1:
        value = body[path[0]]
        if isinstance(value, Mapping) and decodes(value, node):
            body[path[0]] = _remarshal(value, node, top=False)
        return
    _remarshal_at(body[path[0]], path[1:], node)


# --------------------------------------------------------------------------- kind rules


def normalize_object(body: dict[str, Any], key: model.ObjectKey, settings: model.Settings) -> None:
    """Argo CD's gitops-engine Normalize, in place: creationTimestamp, Secret, Role, Endpoints."""
    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("creationTimestamp", None)
    if key.group == "" and key.kind == "Secret":
        normalize_secret(body)
    elif key.group == "rbac.authorization.k8s.io" and key.kind in ("Role", "ClusterRole"):
        if settings.ignore_aggregated_roles and isinstance(body.get("aggregationRule"), Mapping):
            body["rules"] = None
        if body.get("rules") == []:
            body["rules"] = None
    elif key.group == "" and key.kind == "Endpoints":
        normalize_endpoints(body)


def normalize_endpoints(body: dict[str, Any]) -> None:
    """Default port protocols to TCP, then sort addresses (by IP, then target UID), ports and
    subsets, so two Endpoints listing the same members compare equal (Argo CD's SortSubsets;
    ports and subsets are ordered by content, not by Go's md5 hash: only equality matters)."""
    subsets = body.get("subsets")
    if not isinstance(subsets, list):
        return
    for subset in subsets:
        if not isinstance(subset, dict):
            continue
        ports = subset.get("ports")
        if isinstance(ports, list):
            for port in ports:
                if isinstance(port, dict) and not port.get("protocol"):
                    port["protocol"] = "TCP"
            ports.sort(key=_canonical)
        for field in ("addresses", "notReadyAddresses"):
            addresses = subset.get(field)
            if isinstance(addresses, list):
                addresses.sort(key=_address_order)
    subsets.sort(key=_canonical)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _address_order(address: Any) -> tuple[str, int, str]:
    if not isinstance(address, Mapping):
        return ("", 0, _canonical(address))
    ref = address.get("targetRef")
    uid = ref.get("uid") if isinstance(ref, Mapping) else None
    return (str(address.get("ip") or ""), 0 if uid is None else 1, str(uid or ""))


def normalize_secret(body: dict[str, Any]) -> None:
    """Fold `stringData` into base64 `data`; null data values become ""."""
    string_data = body.pop("stringData", None)
    data = body.get("data")
    if isinstance(string_data, Mapping):
        data = dict(data) if isinstance(data, Mapping) else {}
        for k, v in string_data.items():
            data[k] = base64.b64encode(str(v).encode()).decode() if isinstance(v, str) else v
        body["data"] = data
    if isinstance(data, Mapping):
        body["data"] = {k: ("" if v is None else v) for k, v in data.items()}


def drop_status(body: dict[str, Any], key: model.ObjectKey, settings: model.Settings) -> None:
    """`status` is never compared (resource.compareoptions.ignoreResourceStatusField)."""
    if settings.ignore_status == "all" or (settings.ignore_status == "crd" and not _builtin(key)):
        body.pop("status", None)


_BUILTIN_GROUPS = re.compile(r"^$|\.k8s\.io$|^apps$|^batch$|^policy$|^autoscaling$|^extensions$")


def _builtin(key: model.ObjectKey) -> bool:
    return _builtin_group(key.group)


@lru_cache(maxsize=1024)
def _builtin_group(group: str) -> bool:
    return bool(_BUILTIN_GROUPS.search(group))


def last_applied(live: Mapping[str, Any]) -> dict[str, Any] | None:
    """The parsed last-applied-configuration annotation, or None when absent or unparsable."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(LAST_APPLIED)
    if not isinstance(raw, str):
        return None
    try:
        parsed = loads(raw)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def loads(text: str) -> Any:
    """`json.loads(text)`, read by msgspec (2.5x faster on last-applied texts) when msgspec
    reads it: msgspec refuses what it would read differently (NaN, Infinity, 1e400, lone
    surrogates), and json.loads then reads it, or raises its own error, as before."""
    try:
        return _msgspec_decode()(text)
    except (ValueError, RecursionError):  # msgspec.DecodeError and ValidationError: ValueErrors
        return json.loads(text)


@lru_cache(maxsize=1)
def _msgspec_decode() -> Callable[[str], Any]:
    import msgspec  # a run that never reads a last-applied text need not import it

    return msgspec.json.Decoder().decode


def stripped_for_patch(body: Mapping[str, Any]) -> dict[str, Any]:
    """Before the 3-way patch (gitops-engine removeNamespaceAnnotation): desired and original
    lose `metadata.namespace`, and `metadata.annotations` when null or empty. A shallow copy:
    only `metadata` is rebuilt."""
    out = dict(body)
    metadata = out.get("metadata")
    if isinstance(metadata, Mapping):
        metadata = dict(metadata)
        metadata.pop("namespace", None)
        if "annotations" in metadata and not metadata["annotations"]:
            del metadata["annotations"]
        out["metadata"] = metadata
    return out


# --------------------------------------------------------------------------- ignoreDifferences


@dataclass(frozen=True, slots=True)
class ActiveRule:
    """An ignore rule matched to one object, with the plugin that contributed it."""

    rule: model.IgnoreRule
    plugin: str

    @property
    def label(self) -> str:
        return self.rule.rule_id or f"{self.rule.origin} {self.rule.group}/{self.rule.kind}"


def matching_rules(
    rules: Iterable[tuple[str, model.IgnoreRule]], key: model.ObjectKey
) -> list[ActiveRule]:
    """The ignore rules whose group/kind globs and name/namespace select this object."""
    out = []
    for plugin, rule in rules:
        if not _glob(rule.group, key.group) or not _glob(rule.kind, key.kind):
            continue
        if rule.name and rule.name != key.name:
            continue
        if rule.namespace and rule.namespace != key.namespace:
            continue
        out.append(ActiveRule(rule, plugin))
    return out


def _glob(pattern: str, value: str) -> bool:
    if not pattern:
        return value == ""
    return _compile_glob(pattern)(value)


@lru_cache(maxsize=512)
def _compile_glob(pattern: str) -> Callable[[str], bool]:
    """gobwas/glob without separators: `*`, `?`, `[...]`, `{a,b}`."""
    alternatives = [pattern]
    match = re.search(r"\{([^{}]*)\}", pattern)
    if match:
        alternatives = [
            pattern[: match.start()] + alt + pattern[match.end() :]
            for alt in match.group(1).split(",")
        ]
    regexes = [re.compile(fnmatch.translate(alt)) for alt in alternatives]
    return lambda value: any(r.match(value) for r in regexes)


def parse_pointer(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise AppError(f"JSON pointer {pointer!r} must start with '/'")
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")]


def remove_pointer(body: Any, pointer: str) -> bool:
    """RFC 6902 remove; a missing path is silently ignored, as Argo CD does. True if removed."""
    parts = parse_pointer(pointer)
    if not parts:
        return False
    node = body
    for part in parts[:-1]:
        node = _step(node, part)
        if node is None:
            return False
    last = parts[-1]
    if isinstance(node, dict) and last in node:
        del node[last]
        return True
    if isinstance(node, list) and last.isdigit() and int(last) < len(node):
        del node[int(last)]
        return True
    return False


def _step(node: Any, part: str) -> Any:
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list) and part.isdigit() and int(part) < len(node):
        return node[int(part)]
    return None


@lru_cache(maxsize=256)
def _jq_program(expr: str) -> Any:
    import jq

    try:
        return jq.compile(f"del({expr})")
    except ValueError as exc:
        raise AppError(f"invalid jq path expression {expr!r}: {str(exc).splitlines()[0]}") from None


def remove_jq(body: Any, expr: str) -> Any:
    """`del(<expr>)` with real jq semantics; must yield exactly one document."""
    program = _jq_program(expr)
    try:
        results = program.input_value(body).all()
    except ValueError:
        return body  # Argo CD skips an expression that fails on this object
    return results[0] if len(results) == 1 else body


def apply_ignores(
    body: Any,
    rules: Sequence[ActiveRule],
    managed_paths: Mapping[str, Sequence[model.FieldPath]] | None = None,
) -> Any:
    """Remove every field the rules name (pointer, jq, and the per-rule managed-field paths)."""
    for active in rules:
        try:
            for pointer in active.rule.json_pointers:
                remove_pointer(body, pointer)
            for expr in active.rule.jq_paths:
                body = remove_jq(body, expr)
        except AppError as exc:  # name the rule: the Application's, argocd-cm's, a plugin's
            raise AppError(
                f"ignoreDifferences {active.label}: {exc.message}",
                hint="fix the rule where it is defined (Argo CD cannot use it either)",
            ) from None
        for path in (managed_paths or {}).get(active.label, ()):
            remove_path(body, path)
    return body


def remove_path(body: Any, path: model.FieldPath) -> bool:
    """Delete the field at a FieldPath (merge-keyed items found by key)."""
    if not path:
        return False
    found, parent = model.lookup(body, path[:-1])
    if not found:
        return False
    last = path[-1]
    if isinstance(last, model.ListKey) and isinstance(parent, list):
        for i, item in enumerate(parent):
            if last.matches(item):
                del parent[i]
                return True
        return False
    if isinstance(last, int) and isinstance(parent, list) and last < len(parent):
        del parent[last]
        return True
    if isinstance(last, str) and isinstance(parent, dict) and last in parent:
        del parent[last]
        return True
    return False


def trusted_manager_paths(
    live: Mapping[str, Any], rules: Sequence[ActiveRule]
) -> dict[str, list[model.FieldPath]]:
    """For managedFieldsManagers rules: the live fields each rule's managers own."""
    out: dict[str, list[model.FieldPath]] = {}
    for active in rules:
        if active.rule.managers:
            out[active.label] = fields.paths_owned_by(live, active.rule.managers)
    return out


# --------------------------------------------------------------------------- tracking

TRACKING_ID = model.TRACKING_ID


def normalize_tracking(
    desired: dict[str, Any], live: dict[str, Any], settings: model.Settings
) -> None:
    """Migrating from label to annotation tracking must not look like drift (Argo CD's
    resource-tracking Normalize): live objects still carrying only the instance label get the
    desired tracking-id; an instance label git no longer sets is dropped from live."""
    if settings.tracking_method is model.TrackingMethod.LABEL:
        return
    if live.get("kind") == "CustomResourceDefinition":
        return
    live_md = live.get("metadata")
    desired_md = desired.get("metadata")
    if not isinstance(live_md, dict) or not isinstance(desired_md, dict):
        return
    live_labels = live_md.get("labels")
    if not isinstance(live_labels, dict) or settings.instance_label_key not in live_labels:
        return
    live_annotations = live_md.get("annotations")
    desired_id = (desired_md.get("annotations") or {}).get(TRACKING_ID)
    has_id = isinstance(live_annotations, dict) and TRACKING_ID in live_annotations
    if not has_id and desired_id is not None:
        annotations = dict(live_annotations) if isinstance(live_annotations, dict) else {}
        annotations[TRACKING_ID] = desired_id
        live_md["annotations"] = annotations
    if settings.instance_label_key not in (desired_md.get("labels") or {}):
        labels = dict(live_labels)
        del labels[settings.instance_label_key]
        if labels:
            live_md["labels"] = labels
        else:  # like kube.RemoveLabel: no labels left, no labels map
            del live_md["labels"]
