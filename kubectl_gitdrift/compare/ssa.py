"""What the two server-side-apply strategies share: merge types, their context, and comparing a
predicted object with live.

Structured-merge predicts the object by emulating the apply (`structured`), Server-Side Diff takes
the API server's dry-run answer (`serverside`); from there both go the same way (`evaluate`): the
sides normalized as every strategy normalizes them (`pairs`), the ignore rules applied, defaulted
for built-in kinds when asked, and compared in order, as Argo CD compares the two objects as JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import changes, masking, normalize, pairs, smd
from kubectl_gitdrift.compare.normalize import Node
from kubectl_gitdrift.compare.schema import Schema
from kubectl_gitdrift.compare.strategies import Choice

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
CRD_KEY = ("apiextensions.k8s.io", "CustomResourceDefinition")


@dataclass
class Types:
    """Where merge types come from: the schema (built-in kinds, or the cluster's OpenAPI) and the
    CRDs among the live objects."""

    schema: pairs.SchemaLike | None
    crds: Mapping[tuple[str, str], model.Body] = field(default_factory=dict)
    _memo: dict[tuple[str, str, str], tuple[smd.Type | None, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, schema: pairs.SchemaLike | None, live: Sequence[model.Manifest]) -> Types:
        crds: dict[tuple[str, str], model.Body] = {}
        for manifest in live:
            if (manifest.key.group, manifest.key.kind) != CRD_KEY:
                continue
            spec = manifest.body.get("spec") or {}
            names = spec.get("names") or {}
            if isinstance(spec, Mapping) and isinstance(names, Mapping):
                crds[(str(spec.get("group") or ""), str(names.get("kind") or ""))] = manifest.body
        return cls(schema, crds)

    def root(self, group: str, version: str, kind: str) -> tuple[smd.Type | None, str]:
        """(the object's merge type, "") or (None, why there is none)."""
        key = (group, version, kind)
        if key not in self._memo:
            self._memo[key] = self._find(group, version, kind)
        return self._memo[key]

    def _find(self, group: str, version: str, kind: str) -> tuple[smd.Type | None, str]:
        crd = self.crds.get((group, kind))
        if crd is not None:
            return self._from_crd(crd, group, version, kind)
        node = self.schema.closest(group, version, kind) if self.schema is not None else None
        if node is not None:
            return smd.of(node), ""
        return None, (
            f"no schema for {group or 'core'}/{version} {kind} (its CRD is not among the live "
            "objects), so its list and map types, and so the server-side apply, are unknown"
        )

    def _from_crd(
        self, crd: model.Body, group: str, version: str, kind: str
    ) -> tuple[smd.Type | None, str]:
        spec = crd.get("spec") or {}
        found = None
        for entry in spec.get("versions") or ():
            if isinstance(entry, Mapping) and entry.get("name") == version:
                found = (entry.get("schema") or {}).get("openAPIV3Schema")
        if found is None:  # apiextensions v1beta1's one validation for all versions
            found = (spec.get("validation") or {}).get("openAPIV3Schema")
        if not isinstance(found, Mapping):
            return None, (
                f"the CRD of {group}/{version} {kind} has no openAPIV3Schema for {version}, so "
                "its list and map types, and so the server-side apply, are unknown"
            )
        name = f"crd/{group}/{version}/{kind}"
        gvk = [{"group": group, "version": version, "kind": kind}]
        node = Schema({name: {**found, "x-kubernetes-group-version-kind": gvk}}).root(
            group, version, kind
        )
        if node is None:
            return None, f"the CRD of {group}/{version} {kind} has an unusable schema"
        root = smd.of(node)
        meta = self.schema.definition(OBJECT_META) if self.schema is not None else None
        if meta is not None:
            root._fields["metadata"] = smd.of(meta)  # custom resources embed ObjectMeta
        return root, ""


@dataclass(frozen=True)
class Context:
    """A pair comparison's needs besides the two objects, for the server-side strategies."""

    base: pairs.CompareContext
    types: Types
    choice: Choice


Predict = Callable[[dict[str, Any], dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]]
"""(normalized desired, normalized live) -> (predicted, live), both ready to compare."""


def evaluate(
    desired: model.Manifest,
    live: model.Manifest,
    ctx: Context,
    predict: Predict,
    *,
    defaults: bool,
) -> model.Drift:
    """Normalize both sides as every strategy does, predict, default (built-in kinds), compare
    in order."""
    key = desired.key
    t, _ = ctx.types.root(key.group, pairs.version_of(desired.body, live.body), key.kind)
    pair = pairs.prepare(desired.body, live.body, key, ctx.base)
    rules = normalize.matching_rules(ctx.base.ignore_rules, key)
    defaults_fn = pairs.defaults_for(pair) if defaults else None

    def run(active: Sequence[normalize.ActiveRule]) -> tuple[dict, dict, list[model.Change]]:  # type: ignore[type-arg]
        config, current = pair.desired, pair.live
        managed: dict[str, list[model.FieldPath]] = {}
        if active:
            managed = normalize.trusted_manager_paths(pair.raw_live, active)
            if managed:
                managed = pairs.only_differing(managed, config, current)
            config = normalize.apply_ignores(normalize.deepcopy(config), active, managed)
            current = normalize.apply_ignores(normalize.deepcopy(current), active, managed)
        predicted, current = predict(config, current)
        if active:  # Server-Side Diff's answer is normalized like live (a no-op for the merge)
            predicted = normalize.apply_ignores(normalize.deepcopy(predicted), active, managed)
        found = ordered_changes(predicted, current, pair.node, t)
        if defaults_fn is None or not found:
            return predicted, current, found
        predicted_d, current_d = defaults_fn(predicted), defaults_fn(current)
        found_d = ordered_changes(predicted_d, current_d, pair.node, t)
        return predicted_d, current_d, pairs.caused_by(found_d, found)

    predicted, current, found = run(rules)
    suppressed: list[model.Suppressed] = []
    if rules:
        kept = {c.path for c in found}
        hidden = [c for c in run(())[2] if c.path not in kept]
        if hidden:
            shown = [{c.path for c in run((rule,))[2]} for rule in rules]
            for change in hidden:
                by = [r for r, s in zip(rules, shown, strict=True) if change.path not in s]
                joiner = ", " if by else " + "
                by = by or list(rules)
                suppressed.append(
                    model.Suppressed(
                        change,
                        joiner.join(r.label for r in by),
                        ", ".join(dict.fromkeys(r.plugin for r in by)),
                    )
                )
    status = model.ResourceStatus.OUT_OF_SYNC if found else model.ResourceStatus.SYNCED
    drift = model.Drift(
        key,
        status,
        changes=tuple(found),
        suppressed=tuple(suppressed),
        origin=desired.origin,
        desired=pair.desired,
        live=live.body,
        predicted=predicted,
        normalized_live=current,
    )
    return masking.mask_drift(drift) if masking.is_secret(key) else drift


def ordered_changes(
    predicted: Mapping[str, Any],
    live: Mapping[str, Any],
    node: Node | None,
    t: smd.Type | None = None,
) -> list[model.Change]:
    """`changes.diff_bodies`, plus keyed lists whose items are the same but in another order:
    Argo CD compares the two objects as JSON, so order counts (reported as the list itself).
    Kinds without a built-in schema (custom resources) are walked by their merge type, so the
    items of a `list-type: map` list are named by all their keys."""
    if node is None and t is not None:
        typed: list[model.Change] = []
        _typed_changes((), predicted, live, t, typed)
        typed.sort(key=lambda c: model.display_path(c.path))
        return typed
    found = changes.diff_bodies(predicted, live, node, strategic=True)
    moved: list[model.Change] = []
    _moved((), predicted, live, node, moved)
    if not moved:
        return found
    out = [*found, *moved]
    out.sort(key=lambda c: model.display_path(c.path))
    return out


def _moved(
    path: model.FieldPath, predicted: Any, live: Any, node: Node | None, out: list[model.Change]
) -> None:
    if predicted == live:
        return
    if isinstance(predicted, Mapping) and isinstance(live, Mapping):
        for key, value in predicted.items():
            if key in live:
                child = node.field(key) if node is not None else None
                _moved((*path, key), value, live[key], child, out)
        return
    if not (isinstance(predicted, list) and isinstance(live, list)) or node is None:
        return
    merge_key = node.patch_merge_key
    if not merge_key:
        return
    items = [*predicted, *live]
    if not all(isinstance(i, Mapping) and merge_key in i for i in items):
        return
    p_keys = [i[merge_key] for i in predicted]
    l_keys = [i[merge_key] for i in live]
    if len(set(map(repr, p_keys))) != len(p_keys) or len(set(map(repr, l_keys))) != len(l_keys):
        return
    if sorted(map(repr, p_keys)) == sorted(map(repr, l_keys)) and p_keys != l_keys:
        out.append(
            model.Change(model.Op.CHANGE, path, changes.plain(predicted), changes.plain(live))
        )
    by_key = {repr(i[merge_key]): i for i in live}
    item_node = node.items()
    for item in predicted:
        other = by_key.get(repr(item[merge_key]))
        if other is not None:
            list_key = model.ListKey(((merge_key, item[merge_key]),))
            _moved((*path, list_key), item, other, item_node, out)


def _typed_changes(
    path: model.FieldPath, predicted: Any, live: Any, t: smd.Type, out: list[model.Change]
) -> None:
    if predicted == live:
        return
    if isinstance(predicted, Mapping) and isinstance(live, Mapping) and not t.atomic:
        for key, value in live.items():
            if key not in predicted:
                out.append(model.Change(model.Op.REMOVE, (*path, key), None, changes.plain(value)))
        for key, value in predicted.items():
            if key not in live:
                out.append(model.Change(model.Op.ADD, (*path, key), changes.plain(value), None))
            else:
                _typed_changes((*path, key), value, live[key], t.field(key), out)
        return
    p_items, l_items = _keyed(predicted, t), _keyed(live, t)
    if p_items is None or l_items is None:
        out.append(
            model.Change(model.Op.CHANGE, path, changes.plain(predicted), changes.plain(live))
        )
        return
    if p_items.keys() == l_items.keys() and list(p_items) != list(l_items):
        # the same items, moved: the list differs as a whole
        out.append(
            model.Change(model.Op.CHANGE, path, changes.plain(predicted), changes.plain(live))
        )
    item_type = t.items()
    for list_key, item in l_items.items():
        if list_key not in p_items:
            out.append(model.Change(model.Op.REMOVE, (*path, list_key), None, changes.plain(item)))
    for list_key, item in p_items.items():
        if list_key not in l_items:
            out.append(model.Change(model.Op.ADD, (*path, list_key), changes.plain(item), None))
        else:
            _typed_changes((*path, list_key), item, l_items[list_key], item_type, out)


def _keyed(value: Any, t: smd.Type) -> dict[model.ListKey, Any] | None:
    """The items of a `list-type: map` list by their keys; None for anything else."""
    if not isinstance(value, list) or t.kind != "list" or t.atomic or not t.keys:
        return None
    out: dict[model.ListKey, Any] = {}
    for item in value:
        if not isinstance(item, Mapping) or not all(k in item for k in t.keys):
            return None
        list_key = model.ListKey(tuple((k, item[k]) for k in t.keys))
        if list_key in out:
            return None
        out[list_key] = item
    return out


def unknown(desired: model.Manifest, live: model.Manifest, why: str) -> model.Drift:
    """Read, but not comparable: Unknown, never Synced (live kept, so it says "compared")."""
    drift = model.Drift(
        desired.key,
        model.ResourceStatus.UNKNOWN,
        origin=desired.origin,
        live=live.body,
        reason=why,
    )
    return masking.mask_drift(drift) if masking.is_secret(desired.key) else drift
