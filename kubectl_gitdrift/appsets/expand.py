"""One ApplicationSet into the Applications its controller would make, as
applicationset/controllers/template does it:

- each generator in turn (`generators.transform`), each param set filling the template (the
  generator's own template filled from the ApplicationSet's): every string of metadata (name,
  namespace, labels, annotations, finalizers) and spec, map keys included, is templated with
  the param set (goTemplate: Go text/template with `goTemplateOptions`; else fasttemplate). An
  empty param set leaves the template as it is, as Argo CD's renderer does.
- with at least one param, Argo CD's `resources-finalizer.argocd.argoproj.io` finalizer is added
  when the template has no finalizer and the ApplicationSet's `syncPolicy` does not set
  `preserveResourcesOnDeletion`.
- `templatePatch` (a YAML or JSON string) is templated with the same params, then applied as a
  strategic merge patch (mappings merged, lists replaced, `null` deletes, finalizers joined);
  `spec.project` cannot be patched. Argo CD's documentation says templatePatch works with
  goTemplate only; its controller applies it in either syntax, and so does this.
- each Application's namespace is the ApplicationSet's; an Application without a name, or two
  of one name, is an error. The list is sorted by name, the order the controller creates them in.

Every error is an AppSetError naming the ApplicationSet, the generator and the field:
`ApplicationSet argocd/addons: generators[0].matrix.generators[1].git.files[0].path: ...`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.appsets import generators
from kubectl_gitdrift.appsets.generators import Context, Generated
from kubectl_gitdrift.appsets.inputs import AppSetError, Inputs

API_VERSION = "argoproj.io/v1alpha1"
RESOURCES_FINALIZER = "resources-finalizer.argocd.argoproj.io"
_META_FIELDS = ("name", "namespace", "labels", "annotations", "finalizers")


def expand(appset: Mapping[str, Any], inputs: Inputs) -> list[dict[str, Any]]:
    """The Applications `appset` generates with `inputs`, complete, sorted by name."""
    metadata = appset.get("metadata") if isinstance(appset, Mapping) else None
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get("name"), str):
        raise AppSetError("ApplicationSet without metadata.name")
    namespace = metadata.get("namespace") or ""
    label = (
        f"ApplicationSet {namespace}/{metadata['name']}"
        if namespace
        else (f"ApplicationSet {metadata['name']}")
    )
    try:
        apps = _expand(appset, inputs, namespace)
    except AppSetError as exc:
        raise AppSetError(f"{label}: {exc.message}", hint=exc.hint) from None
    return apps


def _expand(appset: Mapping[str, Any], inputs: Inputs, namespace: str) -> list[dict[str, Any]]:
    spec = appset.get("spec")
    if not isinstance(spec, Mapping):
        raise AppSetError(f"spec: a mapping expected, got {yamlio.type_name(spec)}")
    go_template = spec.get("goTemplate", False)
    if not isinstance(go_template, bool):
        raise AppSetError("spec.goTemplate: true or false expected")
    options = spec.get("goTemplateOptions") or []
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise AppSetError("spec.goTemplateOptions: a list of strings expected")
    template = spec.get("template") or {}
    if not isinstance(template, Mapping):
        raise AppSetError(f"spec.template: a mapping expected, got {yamlio.type_name(template)}")
    patch = spec.get("templatePatch")
    if patch is not None and not isinstance(patch, str):
        raise AppSetError(f"spec.templatePatch: a string expected, got {yamlio.type_name(patch)}")
    entries = spec.get("generators") or []
    if not isinstance(entries, list):
        raise AppSetError(f"spec.generators: a list expected, got {yamlio.type_name(entries)}")
    sync_policy = spec.get("syncPolicy")
    preserve = isinstance(sync_policy, Mapping) and bool(
        sync_policy.get("preserveResourcesOnDeletion")
    )
    ctx = Context(inputs=inputs, go_template=go_template, options=tuple(options))
    apps: list[dict[str, Any]] = []
    for i, entry in enumerate(entries):
        for result in generators.transform(entry, ctx, where=f"generators[{i}]", template=template):
            for found in result.params:
                app = _application(result, found, ctx, preserve=preserve)
                if patch is not None:
                    app = _patched(app, patch, found, ctx, result.where)
                app["metadata"]["namespace"] = namespace
                apps.append(_complete(app, result.where))
    return _checked(apps)


def _application(
    result: Generated, found: Mapping[str, Any], ctx: Context, *, preserve: bool
) -> dict[str, Any]:
    """The template filled with one param set (Argo CD's RenderTemplateParams)."""
    template = result.template
    raw_meta = template.get("metadata") or {}
    if not isinstance(raw_meta, Mapping):
        raise AppSetError(f"{result.where}: template.metadata: a mapping expected")
    app: dict[str, Any] = {
        "metadata": {k: raw_meta[k] for k in _META_FIELDS if raw_meta.get(k)},
        "spec": template.get("spec") or {},
    }
    if not found:
        return copy.deepcopy(app)

    def replace(text: str) -> str:
        return ctx.replace(text, found)

    app = _render(app, replace, result.where, "template")  # every dict and list made anew
    if not app["metadata"].get("finalizers") and not preserve:
        app["metadata"]["finalizers"] = [RESOURCES_FINALIZER]
    return app


def _render(value: Any, replace: Callable[[str], str], where: str, field: str) -> Any:
    """Every string of `value` (map keys too) templated; null map values dropped, as Go's
    typed copy has no such field."""
    if isinstance(value, str):
        try:
            return replace(value)
        except AppSetError as exc:
            raise AppSetError(f"{where}: {field}: {exc.message}", hint=exc.hint) from None
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if item is None:
                continue
            name = _render(str(key), replace, where, f"{field} key {key!r}")
            out[name] = _render(item, replace, where, f"{field}.{key}")
        return out
    if isinstance(value, list):
        return [_render(item, replace, where, f"{field}[{i}]") for i, item in enumerate(value)]
    return value


def _patched(
    app: dict[str, Any], patch: str, found: Mapping[str, Any], ctx: Context, where: str
) -> dict[str, Any]:
    """`app` with the templatePatch templated by `found` applied (Argo CD's applyTemplatePatch)."""
    try:
        text = ctx.replace(patch, found)
    except AppSetError as exc:
        raise AppSetError(f"{where}: templatePatch: {exc.message}", hint=exc.hint) from None
    docs = yamlio.load_any(text, f"{where}: templatePatch", error=AppSetError)
    doc = docs[0] if docs else None
    if doc is None:
        return app
    if not isinstance(doc, Mapping):
        raise AppSetError(
            f"{where}: templatePatch: an Application (mapping) expected, got "
            f"{yamlio.type_name(doc)}"
        )
    for field in ("metadata", "spec"):
        if doc.get(field) is not None and not isinstance(doc[field], Mapping):
            raise AppSetError(
                f"{where}: templatePatch: {field}: a mapping expected, got "
                f"{yamlio.type_name(doc[field])}"
            )
    project = app["spec"].get("project") if isinstance(app.get("spec"), Mapping) else None
    out: dict[str, Any] = _strategic(app, doc, ())
    out.setdefault("metadata", {})
    out.setdefault("spec", {})
    if not isinstance(out["metadata"], dict) or not isinstance(out["spec"], dict):
        raise AppSetError(f"{where}: templatePatch: metadata and spec must stay mappings")
    if project is None:
        out["spec"].pop("project", None)
    else:
        out["spec"]["project"] = project  # Argo CD keeps the template's project
    return out


def _strategic(base: Any, patch: Any, path: tuple[str, ...]) -> Any:
    """A strategic merge patch over Application: no list has a merge key but metadata's
    finalizers, which are joined."""
    if not isinstance(patch, Mapping) or not isinstance(base, Mapping):
        return copy.deepcopy(patch)
    out = dict(base)
    for key, value in patch.items():
        here = (*path, str(key))
        if value is None:
            out.pop(key, None)
        elif here == ("metadata", "finalizers") and isinstance(value, list):
            have = list(out.get(key) or [])
            out[key] = have + [v for v in value if v not in have]
        else:
            out[key] = _strategic(out.get(key), value, here)
    return out


def _complete(app: dict[str, Any], where: str) -> dict[str, Any]:
    metadata = {k: v for k, v in app["metadata"].items() if v not in ({}, [], "", None)}
    metadata["namespace"] = app["metadata"]["namespace"]
    name = metadata.get("name", "")
    if not isinstance(name, str) or not name:
        raise AppSetError(
            f"{where}: an Application with no name: set the template's metadata.name "
            "(or a templatePatch that sets it)"
        )
    return {
        "apiVersion": API_VERSION,
        "kind": "Application",
        "metadata": metadata,
        "spec": app["spec"],
    }


def _checked(apps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    for app in apps:
        name = app["metadata"]["name"]
        if name in seen:
            raise AppSetError(
                f"two Applications are named {name}",
                hint="template the name with a param that differs",
            )
        seen.add(name)
    return sorted(apps, key=lambda app: app["metadata"]["name"])
