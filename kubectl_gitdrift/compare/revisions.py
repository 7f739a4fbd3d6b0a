"""What a change does to an app's objects between two renders (gitdrift preview): the objects
added, removed and changed, and, for a changed one, the fields, compared as Argo CD would
compare each of them with a live object: normalized the way it normalizes a desired object,
merge-keyed lists item by item, no edit where the API server's defaults make both the same,
Secret values masked.

Pure: the built-in Kubernetes types are the ones every run has loaded (`openapi`, read once per
process), unless the caller hands in its own schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import changes, defaults, masking, pairs
from kubectl_gitdrift.compare.normalize import Node
from kubectl_gitdrift.errors import SourceError

_Slot = tuple[model.ObjectKey, str]
"""An object's place in a render: its key, and for an unnamed one its generateName and rank."""


def edits(
    base: Sequence[model.Manifest],
    head: Sequence[model.Manifest],
    *,
    schema: pairs.SchemaLike | None = None,
    settings: model.Settings | None = None,
) -> list[model.ObjectChange]:
    """The objects only head renders (added), only base renders (removed), and those both
    render differently (changed, with their field edits), sorted by key.

    `schema` gives the merge keys of lists (containers by name, env by name, ports by
    containerPort, ...); without it, the built-in Kubernetes types. `settings` says which
    tracking metadata Argo CD writes itself (never an edit of git's); without it, Argo CD's
    defaults. A key rendered twice keeps its last object, as Argo CD does."""
    settings = settings if settings is not None else model.Settings()
    ctx = pairs.CompareContext(
        settings=settings, schema=schema if schema is not None else _builtin_schema(), defaults=None
    )
    before, after = _slots(base), _slots(head)
    out: list[model.ObjectChange] = []
    for slot in sorted(before.keys() | after.keys()):
        old, new = before.get(slot), after.get(slot)
        if old is None:
            assert new is not None
            out.append(model.ObjectChange(new.key, model.PreviewAction.ADDED, origin=new.origin))
        elif new is None:
            out.append(model.ObjectChange(old.key, model.PreviewAction.REMOVED, origin=old.origin))
        else:
            found = _object_edits(old, new, ctx)
            if found:
                out.append(
                    model.ObjectChange(
                        new.key,
                        model.PreviewAction.CHANGED,
                        tuple(found),
                        origin=new.origin or old.origin,
                    )
                )
    return out


@lru_cache(maxsize=1)
def _builtin_schema() -> pairs.SchemaLike:
    """The built-in types' schema (kubernetes-validate's definitions, loaded once per process
    and shared with the run's engine options)."""
    from kubectl_gitdrift.compare import openapi, schema

    return schema.Schema(openapi.load_builtin_definitions())


def _slots(manifests: Iterable[model.Manifest]) -> dict[_Slot, model.Manifest]:
    """Each object by its key; objects with only a generateName, which no key tells apart, by
    their generateName and their rank among those (the n-th of base pairs with the n-th of
    head). Later objects of one key replace earlier ones."""
    out: dict[_Slot, model.Manifest] = {}
    ranks: dict[tuple[model.ObjectKey, str], int] = {}
    for manifest in manifests:
        body = manifest.body
        if not isinstance(body, Mapping):
            where = manifest.origin or manifest.key.short()
            raise SourceError(
                f"{where}: {manifest.key.short()} is not an object "
                f"(a YAML {type(body).__name__}, not a mapping)",
                hint="each document of a manifest file must be one Kubernetes object",
            )
        slot: _Slot = (manifest.key, "")
        metadata = body.get("metadata")
        generate = metadata.get("generateName") if isinstance(metadata, Mapping) else None
        if not manifest.key.name and isinstance(generate, str) and generate:
            rank = ranks.get((manifest.key, generate), 0)
            ranks[(manifest.key, generate)] = rank + 1
            slot = (manifest.key, f"{generate}#{rank}")
        out[slot] = manifest
    return out


def _object_edits(
    old: model.Manifest, new: model.Manifest, ctx: pairs.CompareContext
) -> list[model.Edit]:
    """The fields where two renders of one object differ once both are normalized."""
    if old.body == new.body:  # most objects of a change: rendered the same
        return []
    key = new.key
    node = pairs.type_of(ctx.schema, key, pairs.version_of(new.body, old.body))
    before = _comparable(old.body, key, ctx)
    after = _comparable(new.body, key, ctx)
    if before == after:
        return []
    found = changes.diff_bodies(after, before, node, strategic=node is not None)
    if found and node is not None:
        found = _beyond_defaults(found, (old.body, before), (new.body, after), key)
    if masking.is_secret(key):
        # head plays git's part (its values numbered first), base the live object's
        drift = model.Drift(
            key,
            model.ResourceStatus.OUT_OF_SYNC,
            changes=tuple(found),
            desired=after,
            normalized_live=before,
        )
        found = list(masking.mask_drift(drift).changes)
    return [model.Edit(c.op, c.path, c.live, c.desired, secret=c.secret) for c in found]


def _beyond_defaults(
    found: list[model.Change],
    old: tuple[model.Body, Any],
    new: tuple[model.Body, Any],
    key: model.ObjectKey,
) -> list[model.Change]:
    """The edits the API server's defaulting leaves standing: git now spelling out a default
    (`imagePullPolicy: IfNotPresent` for a tagged image, a port's `protocol: TCP`) changes
    nothing the server stores, while git dropping a field the server defaults to another value
    does. Edits keep git's own values (not the defaulted ones)."""
    sides = []
    for raw, body in (old, new):
        version = pairs.version_of(raw)
        if not defaults.has_defaults(key.group, version, key.kind):
            return found
        sides.append(defaults.apply_defaults(key.group, version, key.kind, body))
    before, after = sides
    return [c for c in found if not _same_at(before, after, c.path)]


def _same_at(before: Any, after: Any, path: model.FieldPath) -> bool:
    found_before, value_before = model.lookup(before, path)
    found_after, value_after = model.lookup(after, path)
    return found_before and found_after and value_before == value_after


def _comparable(body: model.Body, key: model.ObjectKey, ctx: pairs.CompareContext) -> Any:
    """One render of an object as Argo CD compares a desired object: remarshalled through its
    Go type (quantities, number spelling, empty optional fields), Secret stringData folded into
    data, status dropped, and without the tracking metadata Argo CD writes over git's."""
    node: Node | None = pairs.type_of(ctx.schema, key, pairs.version_of(body))
    out = pairs.normalize_side(body, key, node, ctx)
    _drop_tracking(out, ctx.settings)
    return out


def _drop_tracking(body: dict[str, Any], settings: model.Settings) -> None:
    """Argo CD writes its tracking-id annotation (and installation-id) or its instance label on
    every object it applies, whatever git says there (diagnose/tracking.py's prepare_desired):
    a render that changes them changes nothing Argo CD applies. CRDs get no tracking."""
    if body.get("kind") == "CustomResourceDefinition":
        return
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        return
    annotations, labels = settings.tracking_keys()
    _drop_keys(metadata, "annotations", annotations)
    _drop_keys(metadata, "labels", labels)


def _drop_keys(metadata: dict[str, Any], field: str, keys: Sequence[str]) -> None:
    values = metadata.get(field)
    if not isinstance(values, Mapping) or not any(k in values for k in keys):
        return
    kept = {k: v for k, v in values.items() if k not in keys}
    if kept:
        metadata[field] = kept
    else:  # only Argo CD's own keys were there: as if git had none
        del metadata[field]
