"""One desired/live pair made ready to compare: the context, both sides normalized as Argo CD
normalizes them, and what every strategy does with a pair the same way."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import masking, normalize
from kubectl_gitdrift.compare.normalize import Node


class SchemaLike(Protocol):
    def closest(self, group: str, version: str, kind: str) -> Node | None: ...
    def definition(self, name: str) -> Node | None: ...


DefaultsFn = Callable[[str, str, str, dict[str, Any]], dict[str, Any]]
NormalizerFn = Callable[[model.ObjectKey, dict[str, Any], str], None]

BUILTIN_PREFIX = "io.k8s.api."
"""Definitions of k8s.io/api types: the kinds Argo CD decodes, defaults and patches strategically.
"""


@dataclass(frozen=True)
class CompareContext:
    """Everything a pair comparison needs besides the two objects."""

    settings: model.Settings
    schema: SchemaLike | None
    defaults: DefaultsFn | None
    ignore_rules: Sequence[tuple[str, model.IgnoreRule]] = ()  # (plugin, rule)
    normalizer: NormalizerFn | None = None


@dataclass(frozen=True)
class Pair:
    """One desired/live pair, normalized as far as it goes before ignore rules apply."""

    key: model.ObjectKey
    version: str
    node: Node | None
    strategic: bool  # a built-in kind: strategic merge, API defaults
    desired: dict[str, Any]
    live: dict[str, Any]
    orig: dict[str, Any] | None  # last-applied, normalized; None: two-way (desired stands in)
    raw_live: model.Body
    defaults: DefaultsFn | None


def type_of(schema: SchemaLike | None, key: model.ObjectKey, version: str) -> Node | None:
    """The schema Argo CD would decode this object with: a built-in kind's (any version it
    registers), or None for CRDs and unknown kinds (JSON merge, no type normalization)."""
    if schema is None:
        return None
    memo = (id(schema), key.group, version, key.kind)
    hit = _TYPE_OF.get(memo)
    if hit is not None and hit[0] is schema:
        return hit[1]
    node = schema.closest(key.group, version, key.kind)
    if node is None or not (node.definition or "").startswith(BUILTIN_PREFIX):
        node = None
    if _TYPE_OF and (len(_TYPE_OF) >= 4096 or next(iter(_TYPE_OF.values()))[0] is not schema):
        _TYPE_OF.clear()  # one schema's answers at a time: old schemas are not kept alive
    _TYPE_OF[memo] = (schema, node)
    return node


_TYPE_OF: dict[tuple[int, str, str, str], tuple[SchemaLike, Node | None]] = {}
"""type_of's answers by (id of the schema, group, version, kind), all for one schema (held, so
its id cannot be reused while the entries live); another schema starts afresh."""


def unpaired(
    desired: model.Manifest | None, live: model.Manifest | None, ctx: CompareContext
) -> model.Drift:
    """An object on one side only: Missing (git's, not live) or Extraneous (live's, not in git),
    as every strategy reports it."""
    if desired is None and live is None:
        raise ValueError("compare needs at least one side")
    if live is None:
        assert desired is not None
        predicted = normalized(desired.body, desired.key, ctx, "desired")
        drift = model.Drift(
            desired.key,
            model.ResourceStatus.MISSING,
            origin=desired.origin,
            desired=predicted,
            predicted=predicted,
        )
        return masking.mask_drift(drift) if masking.is_secret(desired.key) else drift
    if desired is not None:
        raise ValueError("both sides are there: compare them with a strategy")
    drift = model.Drift(
        live.key,
        model.ResourceStatus.EXTRANEOUS,
        live=live.body,
        normalized_live=normalized(live.body, live.key, ctx, "live"),
    )
    return masking.mask_drift(drift) if masking.is_secret(live.key) else drift


def version_of(*bodies: model.Body) -> str:
    """The API version (`v1`, `v1beta1`) of the first body that has an apiVersion."""
    for body in bodies:
        api_version = str(body.get("apiVersion") or "")
        if api_version:
            return api_version.rpartition("/")[2]
    return ""


def normalize_side(
    body: model.Body, key: model.ObjectKey, node: Node | None, ctx: CompareContext
) -> dict[str, Any]:
    """remarshal + gitops-engine Normalize (creationTimestamp, Secret, Role, Endpoints) + status +
    known types, on a fresh copy."""
    out: dict[str, Any] = normalize.remarshal(body, node)
    normalize.normalize_object(out, key, ctx.settings)
    normalize.drop_status(out, key, ctx.settings)
    if node is None and ctx.schema is not None:
        normalize.remarshal_known_types(out, key, ctx.schema.definition)
    return out


def normalized(
    body: model.Body, key: model.ObjectKey, ctx: CompareContext, side: str
) -> dict[str, Any]:
    """One side alone (an object missing on the other side), as Argo CD shows it."""
    node = type_of(ctx.schema, key, version_of(body))
    out = normalize_side(body, key, node, ctx)
    if ctx.normalizer is not None:
        ctx.normalizer(key, out, side)
    return out


def prepare(
    desired_body: model.Body, live_body: model.Body, key: model.ObjectKey, ctx: CompareContext
) -> Pair:
    version = version_of(live_body, desired_body)
    node = type_of(ctx.schema, key, version)
    desired = normalize_side(desired_body, key, node, ctx)
    live = normalize_side(live_body, key, node, ctx)
    raw_orig = normalize.last_applied(live_body)
    orig: dict[str, Any] | None = None
    if raw_orig == desired_body:  # git has not changed since the last apply: the usual case
        # the same normalized form; only a plugin normalizer (below) would edit it in place
        orig = desired if ctx.normalizer is None else model.copy_json(desired)
    elif raw_orig is not None:
        orig = normalize_side(raw_orig, key, node, ctx)
    normalize.normalize_tracking(desired, live, ctx.settings)
    if ctx.normalizer is not None:
        ctx.normalizer(key, desired, "desired")
        ctx.normalizer(key, live, "live")
    defaults = ctx.defaults if node is not None else None
    return Pair(key, version, node, node is not None, desired, live, orig, live_body, defaults)


def defaults_for(pair: Pair) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """The API server's defaulting for this kind and version (built-in kinds only)."""
    fn = pair.defaults
    if fn is None:
        return None
    key, version = pair.key, pair.version
    return lambda body: fn(key.group, version, key.kind, body)


def caused_by(
    defaulted: Sequence[model.Change], undefaulted: Sequence[model.Change]
) -> list[model.Change]:
    """The differences after API defaulting, less those defaulting alone brought in.

    Argo CD defaults both predicted and live before it compares, so a field git omits is not drift
    while live holds its default. Defaulting can also add a difference where git and live agree:
    `sessionAffinity: ClientIP` in git makes the defaulter add `sessionAffinityConfig` to the
    predicted object only. Such a field is a consequence of the field that caused it, not a change
    of its own, so it is not listed (`-o diff` still shows it, as Argo CD's diff does). A
    difference is kept when its path lies on, above or below a path that differs before
    defaulting (a retainKeys map git resets, say, whose defaults then differ from live)."""
    roots = [c.path for c in undefaulted]
    kept = [c for c in defaulted if any(_related(c.path, root) for root in roots)]
    return kept or list(defaulted)


def _related(a: model.FieldPath, b: model.FieldPath) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def only_differing(
    managed: Mapping[str, list[model.FieldPath]], desired: Any, live: Any
) -> dict[str, list[model.FieldPath]]:
    """managedFieldsManagers only hides fields whose values differ between the two sides."""
    out: dict[str, list[model.FieldPath]] = {}
    for label, paths in managed.items():
        keep = []
        for path in paths:
            in_desired, dv = model.lookup(desired, path)
            in_live, lv = model.lookup(live, path)
            if in_desired and in_live and dv != lv:
                keep.append(path)
        out[label] = keep
    return out
