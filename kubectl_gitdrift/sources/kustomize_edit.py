"""Argo CD's `kustomize edit` steps, made in Python on a kustomization's content.

Argo CD applies an Application's `spec.source.kustomize` options with `kustomize edit …` before
`kustomize build` (argocd-semantics.md §4.1): name prefix and suffix, images, replicas, common
labels and annotations (env-substituted with the build environment), namespace, patches and
components, in that order. `apply_options` returns the edited kustomization; the build
(sources/kustomize.py) writes it into a private copy of the tree.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.sources.buildenv import envsubst

_IMAGE_TAG = re.compile(r"^(.*):([a-zA-Z0-9._-]*|\*)$")


def apply_options(
    kustomization: Mapping[str, Any],
    options: Mapping[str, Any],
    *,
    env: Mapping[str, str],
    kustomization_dir: Path | None = None,
    name: str = "kustomization.yaml",
) -> dict[str, Any]:
    """A copy of `kustomization` with Argo CD's kustomize options applied, in Argo CD's order."""
    out: dict[str, Any] = dict(kustomization)
    if options.get("namePrefix"):
        out["namePrefix"] = str(options["namePrefix"])
    if options.get("nameSuffix"):
        out["nameSuffix"] = str(options["nameSuffix"])
    images = options.get("images") or []
    if images:
        out["images"] = set_images(out.get("images") or [], [envsubst(str(i), env) for i in images])
    replicas = options.get("replicas") or []
    if replicas:
        out["replicas"] = set_replicas(out.get("replicas") or [], replicas)
    labels = options.get("commonLabels") or {}
    if labels:
        _add_labels(out, options, {str(k): envsubst(str(v), env) for k, v in labels.items()}, name)
    annotations = options.get("commonAnnotations") or {}
    if annotations:
        subst = bool(options.get("commonAnnotationsEnvsubst"))
        values = {
            str(k): envsubst(str(v), env) if subst else str(v) for k, v in annotations.items()
        }
        existing = dict(out.get("commonAnnotations") or {})
        _write_map(
            existing,
            values,
            force=bool(options.get("forceCommonAnnotations")),
            what="annotation",
            name=name,
        )
        out["commonAnnotations"] = existing
    if options.get("namespace"):
        out["namespace"] = str(options["namespace"])
    patches = options.get("patches") or []
    if patches:
        out["patches"] = [*(out.get("patches") or []), *[_patch(p) for p in patches]]
    components = options.get("components") or []
    if components:
        current = list(out.get("components") or [])
        ignore_missing = bool(options.get("ignoreMissingComponents"))
        for component in (str(c) for c in components):
            local = kustomization_dir is not None and "://" not in component
            if (
                ignore_missing
                and local
                and kustomization_dir is not None
                and not (kustomization_dir / component).exists()
            ):
                continue
            if component not in current:
                current.append(component)
        out["components"] = current
    return out


def parse_image(arg: str) -> dict[str, str]:
    """`kustomize edit set image` argument → an `images:` entry.

    Forms: `name=newName:tag`, `name=newName@digest`, `name=newName`, `name:tag`, `name@digest`.
    """
    if "=" in arg:
        name, _, new = arg.partition("=")
        entry = {"name": name}
        over = _parse_overwrite(new, allow_bare=True, arg=arg)
        if over.get("name"):
            entry["newName"] = over["name"]
    else:
        over = _parse_overwrite(arg, allow_bare=False, arg=arg)
        entry = {"name": over["name"]}
    if "tag" in over:
        entry["newTag"] = over["tag"]
    if "digest" in over:
        entry["digest"] = over["digest"]
    return entry


def set_images(current: Sequence[Any], args: Sequence[str]) -> list[Any]:
    """`kustomize edit set image ARGS…` applied to an `images:` list."""
    wanted = {}
    for arg in args:
        entry = parse_image(arg)
        wanted[entry["name"]] = entry
    out: list[Any] = []
    for item in current:
        if isinstance(item, Mapping) and item.get("name") in wanted:
            new = wanted.pop(str(item["name"]))
            merged = dict(item)
            if "newName" in new:
                merged["newName"] = new["newName"]
            if "newTag" in new:
                merged["newTag"] = new["newTag"]
                merged.pop("digest", None)
            if "digest" in new:
                merged["digest"] = new["digest"]
                merged.pop("newTag", None)
            out.append(merged)
        else:
            out.append(item)
    out.extend(wanted[name] for name in sorted(wanted))
    return out


def set_replicas(current: Sequence[Any], replicas: Sequence[Any]) -> list[Any]:
    """`kustomize edit set replicas name=count…` applied to a `replicas:` list."""
    wanted: dict[str, int] = {}
    for entry in replicas:
        if not isinstance(entry, Mapping) or not entry.get("name"):
            raise SourceError(f"kustomize.replicas: entry {entry!r} has no name")
        try:
            wanted[str(entry["name"])] = int(str(entry.get("count")))
        except ValueError:
            raise SourceError(
                f"kustomize.replicas: count {entry.get('count')!r} of {entry['name']}"
                " is not a number"
            ) from None
    out: list[Any] = []
    for item in current:
        if isinstance(item, Mapping) and item.get("name") in wanted:
            out.append({**item, "count": wanted.pop(str(item["name"]))})
        else:
            out.append(item)
    out.extend({"name": name, "count": count} for name, count in wanted.items())
    return out


# --------------------------------------------------------------------------- internals


def _parse_overwrite(text: str, *, allow_bare: bool, arg: str) -> dict[str, str]:
    if "@" in text:
        name, _, digest = text.partition("@")
        return {"name": name, "digest": digest}
    match = _IMAGE_TAG.match(text)
    if match:
        return {"name": match.group(1), "tag": match.group(2)}
    if text and allow_bare:
        return {"name": text}
    raise SourceError(
        f"kustomize.images: {arg!r} is not an image override",
        hint="use name=newName:tag, name:tag or name@digest",
    )


def _add_labels(
    out: dict[str, Any], options: Mapping[str, Any], values: dict[str, str], name: str
) -> None:
    force = bool(options.get("forceCommonLabels"))
    if options.get("labelWithoutSelector"):
        entry: dict[str, Any] = {"pairs": {}, "includeSelectors": False}
        if options.get("labelIncludeTemplates"):
            entry["includeTemplates"] = True
        _write_map(entry["pairs"], values, force=force, what="label", name=name)
        out["labels"] = [*(out.get("labels") or []), entry]
        return
    existing = dict(out.get("commonLabels") or {})
    _write_map(existing, values, force=force, what="label", name=name)
    out["commonLabels"] = existing


def _write_map(
    target: dict[str, Any], values: Mapping[str, str], *, force: bool, what: str, name: str
) -> None:
    for key, value in values.items():
        if key in target and not force:
            raise SourceError(
                f"{name}: {what} {key} already in the kustomization (kustomize edit add {what})",
                hint=f"set force{'CommonLabels' if what == 'label' else 'CommonAnnotations'}: true"
                " in the Application's kustomize options, as Argo CD needs it too",
            )
        target[key] = value


def _patch(patch: Any) -> Any:
    if not isinstance(patch, Mapping):
        raise SourceError(f"kustomize.patches: mapping expected, got {yamlio.type_name(patch)}")
    return {k: v for k, v in patch.items() if v not in (None, "", {}, [])}
