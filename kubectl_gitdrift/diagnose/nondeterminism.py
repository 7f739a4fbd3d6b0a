"""Detector of `nondeterministic-render`: the drifted field is one the source renders differently
on every render (Helm's randAlphaNum, genCA, uuidv4, now, htpasswd, ...).

The sources wing reports each template that does so (model.VaryingRender: the calls in its
text, and the fields that differed between two renders). A drifted field is claimed when a
second render gave it another value (the proof), or, for a time function (`now`), when the line
that calls it sets the field's key. Argo CD turns OutOfSync again whenever its repo-server
renders anew (a hard refresh, its render cache expiring, a new commit): neither adopting the live
value into git nor a sync clears it (a sync writes yet another value), and selfHeal would rotate
the value at every refresh. The fixes: a fixed value (the chart value that guards the call, or
its existingSecret), or an exact ignore rule that a sync respects.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import yaml

from kubectl_gitdrift import model
from kubectl_gitdrift.diagnose import policies, rules
from kubectl_gitdrift.diagnose.causes import Cause
from kubectl_gitdrift.model import RemedyKind, RenderCall, VaryingRender

CODE = "nondeterministic-render"
TIMED = frozenset({"now", "ago"})
_RENDER_AGAIN = (
    "a hard refresh makes the repo-server render the source again: the app stays Synced once "
    "the field no longer changes from render to render"
)
_ANY = object()  # a list element: matches an index or a merge key


def detect(ctx: rules.Context) -> Iterator[Cause]:
    varying: Sequence[VaryingRender] = getattr(ctx, "varying", ())
    if not varying:
        return
    by_key: dict[model.ObjectKey, list[VaryingRender]] = {}
    for render in varying:
        for key in render.objects:
            by_key.setdefault(key, []).append(render)
    for drift in ctx.drifts:
        if drift.status is not model.ResourceStatus.OUT_OF_SYNC or not drift.changes:
            continue
        renders = by_key.get(drift.key) or by_key.get(_unplaced(drift.key))
        if not renders:
            continue
        claimed = []
        for change in drift.changes:
            found = _match(renders, drift.key, change.path)
            if found is not None:
                claimed.append((change, *found))
        if not claimed:
            continue
        fixes = _fixes(ctx.app, drift, claimed, varying)
        for change, render, call, confirmed in claimed:
            yield Cause(
                code=CODE,
                key=drift.key,
                path=change.path,
                evidence=_evidence(drift, change, render, call, confirmed, varying),
                fixes=fixes,
                adoptable=False,
                revertable=False,
            )


def _unplaced(key: model.ObjectKey) -> model.ObjectKey:
    """The key as rendered when the template sets no namespace (the engine gives it the
    destination's)."""
    return model.ObjectKey(key.group, key.kind, "", key.name)


def describe(call: RenderCall) -> str:
    """`templates/secret.yaml line 9 (randAlphaNum)`, with the named template it is in."""
    via = f", in {call.via}" if call.via else ""
    return f"{call.file} line {call.line} ({call.function}{via})"


# --------------------------------------------------------------------------- matching


def _match(
    renders: Sequence[VaryingRender], key: model.ObjectKey, path: model.FieldPath
) -> tuple[VaryingRender, RenderCall | None, bool] | None:
    """(the template, its call, proven by two renders) that explains the field, if one does."""
    for render in renders:
        for other, varied in render.varied:
            if other in (key, _unplaced(key)) and _related(_secret_path(key, varied), path):
                return render, _call_for(render.calls, path), True
    leaf = _leaf(key, path)
    for render in renders:
        for call in render.calls:
            if leaf in call.fields and (call.function in TIMED or not render.compared):
                return render, call, False
    return None


def _related(a: model.FieldPath, b: model.FieldPath) -> bool:
    """One path is the other, or inside it (list items by index or merge key alike)."""
    n = min(len(a), len(b))
    return all(
        _elem(x) is _ANY or _elem(y) is _ANY or x == y for x, y in zip(a[:n], b[:n], strict=True)
    )


def _elem(elem: Any) -> Any:
    return elem if isinstance(elem, str) else _ANY


def _secret_path(key: model.ObjectKey, path: model.FieldPath) -> model.FieldPath:
    """A Secret's stringData key is compared as its data key (Argo CD's normalization)."""
    if key.group == "" and key.kind == "Secret" and path[:1] == ("stringData",):
        return ("data", *path[1:])
    return path


def _leaf(key: model.ObjectKey, path: model.FieldPath) -> str:
    strings = [e for e in path if isinstance(e, str)]
    return strings[-1] if strings else ""


def _call_for(calls: Sequence[RenderCall], path: model.FieldPath) -> RenderCall | None:
    """The call whose line sets the field's key, else the first one (None: the template only
    derives from another template's calls, e.g. a checksum of it)."""
    leaf = next((e for e in reversed(path) if isinstance(e, str)), "")
    for call in calls:
        if leaf in call.fields:
            return call
    return calls[0] if calls else None


# --------------------------------------------------------------------------- evidence and fixes


def _evidence(
    drift: model.Drift,
    change: model.Change,
    render: VaryingRender,
    call: RenderCall | None,
    confirmed: bool,
    varying: Sequence[VaryingRender],
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": model.display_path(change.path),
        "pointer": model.pointer(change.path, drift.live or {}),
        "template": render.template,
        "chart": render.chart,
        "renderedTwice": "differed" if confirmed else "not compared",
    }
    if call is not None:
        out["call"] = _call_evidence(call)
    else:
        out["derivedFrom"] = [_call_evidence(c) for c in _chart_calls(render, varying)]
    if call is not None and call.value:
        out["chartValue"] = call.value
    if render.existing_secret:
        out["existingSecret"] = render.existing_secret
    if render.lookup:
        out["lookup"] = (
            "the template also calls lookup, which Argo CD's repo-server answers with nothing "
            "(it renders without cluster access), so a keep-the-existing-value branch never runs"
        )
    return out


def _call_evidence(call: RenderCall) -> dict[str, Any]:
    out: dict[str, Any] = {"file": call.file, "line": call.line, "function": call.function}
    if call.via:
        out["namedTemplate"] = call.via
    if call.fields:
        out["fields"] = list(call.fields)
    return out


def _chart_calls(render: VaryingRender, varying: Sequence[VaryingRender]) -> list[RenderCall]:
    """The calls of the chart's other templates (what a derived value, a checksum, comes from)."""
    out: list[RenderCall] = []
    for other in varying:
        if other.chart == render.chart:
            out.extend(c for c in other.calls if c not in out)
    return out


def _fixes(
    app: model.Application,
    drift: model.Drift,
    claimed: Sequence[tuple[model.Change, VaryingRender, RenderCall | None, bool]],
    varying: Sequence[VaryingRender],
) -> tuple[model.Remedy, ...]:
    """A fixed value for each call (its chart value, or existingSecret), then one ignore rule
    for the object's claimed fields that a sync respects."""
    out: list[model.Remedy] = []
    for _change, render, call, _confirmed in claimed:
        calls = [call] if call is not None else _chart_calls(render, varying)
        for one in calls:
            fix = _fixed_value(render, one)
            if fix not in out:
                out.append(fix)
    pointers = sorted({model.pointer(c.path, drift.live or {}) for c, *_ in claimed})
    snippet, command = policies.ignore_differences(app, drift.key, pointers)
    fields = ", ".join(model.display_path(c.path) for c, *_ in claimed)
    out.append(
        model.Remedy(
            RemedyKind.PREVENT,
            f"Or ignore {drift.key.short()} {fields} (rendered anew each time)",
            steps=(
                (
                    "Argo CD then leaves the value the object already has; with "
                    "RespectIgnoreDifferences=true a sync does not write a new one either"
                ),
                "selfHeal is no fix for it: it would write a new value at every refresh",
            ),
            commands=(command,),
            snippet=snippet,
        )
    )
    name = policies.app_arg(app)
    out.append(
        model.Remedy(
            RemedyKind.VERIFY,
            "Verify a new render leaves it Synced",
            steps=(_RENDER_AGAIN,),
            commands=(f"argocd app get {name} --hard-refresh",),
        )
    )
    return tuple(out)


def _fixed_value(render: VaryingRender, call: RenderCall) -> model.Remedy:
    where = describe(call)
    what = call.fields[0] if call.fields else "the value"
    if call.value or render.existing_secret:
        steps: list[str] = []
        snippet = ""
        if call.value:
            steps.append(
                f"set {call.value} in the app's Helm values (a values file, or "
                f"spec.source.helm.valuesObject): {where} then renders it instead of a new one"
            )
            snippet += "# a fixed value:\n" + _values_yaml(call.value, "<a fixed value>")
        if render.existing_secret:
            steps.append(
                f"{'or ' if call.value else ''}create the Secret yourself (sealed-secrets, "
                f"external-secrets, a vault) and name it in {render.existing_secret}: the chart "
                "then renders no secret value"
            )
            snippet += f"# {'or ' if call.value else ''}a Secret you manage:\n" + _values_yaml(
                render.existing_secret, "<the Secret's name>"
            )
        if call.value:
            steps.append(
                "a secret value belongs in a Secret you manage, not in plain values in git"
            )
        title = (
            f"Give {render.chart} a fixed {what} instead of {call.function}"
            if call.value
            else f"Give {render.chart} a Secret you manage instead of {call.function}"
        )
        return model.Remedy(
            RemedyKind.PREVENT,
            title,
            steps=tuple(steps),
            snippet=snippet,
        )
    return model.Remedy(
        RemedyKind.PREVENT,
        f"Make {call.file} render {what} the same every time",
        steps=(
            (
                f"{where} calls {call.function} with no chart value to replace it: change the "
                "template to take the value from .Values (or an existing Secret), or create the "
                "object outside the chart"
            ),
        ),
    )


def _values_yaml(dotted: str, value: str) -> str:
    """`auth.password` -> the Helm values YAML that sets it."""
    doc: Any = value
    for part in reversed(dotted.split(".")):
        doc = {part: doc}
    return str(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))
