"""Detector of `ignore-rule-unmatched`: an ignoreDifferences rule of the app (or a resource
customization in argocd-cm) matches no resource of the app, while a difference it would hide
remains on a resource it nearly names.

Argo CD matches a rule's `group` and `kind` as globs against the object's API group (without the
version: `apps`, not `apps/v1`; the core group is empty) and its kind, and `name`/`namespace`
exactly (normalize.matching_rules does the same). A rule that matches nothing is claimed for a
change only when both hold: the rule, corrected to match that resource, removes the difference
(its jsonPointers / jqPathExpressions, applied to both sides as Argo CD applies them), and each
field it gets wrong is a likely slip (the group with a version, a core group spelled `core` or
`v1`, a kind's case, plural or a near typo, a near typo of the name or namespace, a namespace on
a cluster-scoped kind). A rule naming another object or namespace outright may be meant for
another copy of the app, and is left alone.
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import yaml

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import normalize
from kubectl_gitdrift.diagnose import attribution, rules
from kubectl_gitdrift.diagnose.causes import Cause
from kubectl_gitdrift.errors import GitDriftError
from kubectl_gitdrift.model import Remedy, RemedyKind

CODE = "ignore-rule-unmatched"
CM_PREFIX = "resource.customizations.ignoreDifferences."
_APP_RULE = re.compile(r"^application/ignoreDifferences\[(\d+)\]$")


@dataclass(frozen=True, slots=True)
class Correction:
    """One field of a rule that keeps it from matching the resource, and what would."""

    field: str  # group | kind | name | namespace
    wrong: str
    right: str
    why: str

    def evidence(self) -> dict[str, str]:
        return {"field": self.field, "rule": self.wrong, "resource": self.right, "why": self.why}


def detect(ctx: rules.Context) -> Iterator[Cause]:
    keys = [d.key for d in ctx.drifts]
    candidates = [*ctx.app.ignore_rules, *ctx.settings.ignore_rules]
    for rule in candidates:
        if rule.origin not in ("application", "argocd-cm"):
            continue
        if not (rule.json_pointers or rule.jq_paths):
            continue  # managedFieldsManagers alone: what it would hide needs the managers' sets
        if any(_matches(rule, key) for key in keys):
            continue
        for drift in ctx.drifts:
            if drift.status is not model.ResourceStatus.OUT_OF_SYNC or not drift.changes:
                continue
            fixes = corrections(rule, drift.key)
            if not fixes:
                continue
            corrected = _corrected(rule, fixes)
            for change in drift.changes:
                if change.secret or not hides(corrected, drift, change):
                    continue
                yield _cause(ctx, rule, fixes, drift, change)


def _matches(rule: model.IgnoreRule, key: model.ObjectKey) -> bool:
    return bool(normalize.matching_rules([("", rule)], key))


def corrections(rule: model.IgnoreRule, key: model.ObjectKey) -> list[Correction] | None:
    """What makes the rule match `key`: one Correction per wrong field (at most two), or None
    when some field is not a likely slip for this resource (or nothing is wrong)."""
    out: list[Correction] = []
    group = _group(rule.group, key.group)
    kind = _kind(rule.kind, key.kind)
    if group is None or kind is None:
        return None
    out += group + kind
    if rule.name and rule.name != key.name:
        if not _typo(rule.name, key.name):
            return None  # another object's name, perhaps on purpose: not a slip
        out.append(Correction("name", rule.name, key.name, f"no {key.kind} is named {rule.name}"))
    if rule.namespace and rule.namespace != key.namespace:
        if key.namespace and not _typo(rule.namespace, key.namespace):
            return None  # another namespace (a staging copy?): not a slip
        why = (
            f"{key.kind} is cluster-scoped"
            if not key.namespace
            else f"the {key.kind} {key.name} is in namespace {key.namespace}"
        )
        out.append(Correction("namespace", rule.namespace, key.namespace, why))
    if not out or len(out) > 2:
        return None
    return out


def _typo(wrong: str, right: str) -> bool:
    return difflib.SequenceMatcher(None, wrong.lower(), right.lower()).ratio() >= 0.8


def _glob(pattern: str, value: str) -> bool:
    return _matches(model.IgnoreRule(group=pattern, kind="*"), model.ObjectKey(value, "K", "", ""))


def _group(pattern: str, group: str) -> list[Correction] | None:
    if _glob(pattern, group):
        return []
    head, slash, version = pattern.partition("/")
    if slash and version and _glob(head, group):
        shown = group or "empty for core kinds"
        why = f"Argo CD matches the API group alone ({shown}), without the version"
        return [Correction("group", pattern, group, why)]
    if not group and pattern.lower() in ("core", "v1", "core/v1"):
        return [Correction("group", pattern, "", "core kinds have the empty group")]
    if pattern.lower() == group.lower():
        return [Correction("group", pattern, group, "groups are matched case-sensitively")]
    return None


def _kind(pattern: str, kind: str) -> list[Correction] | None:
    if _glob_kind(pattern, kind):
        return []
    low, want = pattern.lower(), kind.lower()
    if low == want:
        return [Correction("kind", pattern, kind, "kinds are matched case-sensitively")]
    plurals = {want + "s", want + "es", want[:-1] + "ies" if want.endswith("y") else ""}
    if low in plurals:
        return [Correction("kind", pattern, kind, "the rule names the resource, not the kind")]
    if _typo(low, want):
        return [Correction("kind", pattern, kind, f"no kind {pattern} in the app")]
    return None


def _glob_kind(pattern: str, kind: str) -> bool:
    return _matches(model.IgnoreRule(group="*", kind=pattern), model.ObjectKey("g", kind, "", ""))


def _corrected(rule: model.IgnoreRule, fixes: list[Correction]) -> model.IgnoreRule:
    return replace(rule, **{f.field: f.right for f in fixes})  # type: ignore[arg-type]


def hides(rule: model.IgnoreRule, drift: model.Drift, change: model.Change) -> bool:
    """The rule's paths, removed from both sides as Argo CD removes them, make the change's
    field the same on both."""
    desired = drift.predicted if drift.predicted is not None else drift.desired
    live = drift.normalized_live if drift.normalized_live is not None else drift.live
    if desired is None or live is None:
        return False
    before = (model.lookup(desired, change.path), model.lookup(live, change.path))
    if before[0] == before[1]:
        return False
    try:
        d, v = _without(rule, desired), _without(rule, live)
    except GitDriftError:
        return False  # an invalid pointer or jq expression: Argo CD skips it too
    return model.lookup(d, change.path) == model.lookup(v, change.path)


def _without(rule: model.IgnoreRule, body: model.Body) -> Any:
    out = model.copy_json(dict(body))
    for pointer in rule.json_pointers:
        normalize.remove_pointer(out, pointer)
    for expr in rule.jq_paths:
        out = normalize.remove_jq(out, expr)
    return out


# --------------------------------------------------------------------------- the cause


def _cause(
    ctx: rules.Context,
    rule: model.IgnoreRule,
    fixes: list[Correction],
    drift: model.Drift,
    change: model.Change,
) -> Cause:
    clue = ctx.clue(drift.key, change.path)
    writer = clue.kind if clue is not None else attribution.writer_kind(change.owner)
    owner = change.owner
    evidence: dict[str, Any] = {
        "rule": rule_evidence(rule),
        "corrections": [f.evidence() for f in fixes],
        "path": model.display_path(change.path),
        "pointer": model.pointer(change.path, drift.live or {}),
        "desired": change.desired,
        "live": change.live,
        "writer": writer,
        "owner": (
            {"manager": owner.manager, "operation": owner.operation, "time": owner.time}
            if owner is not None
            else None
        ),
    }
    return Cause(
        code=CODE,
        key=drift.key,
        path=change.path,
        evidence=evidence,
        fixes=(fix(ctx.app, ctx.settings, rule, fixes),),
        adoptable=False,
        # a sync writes git's value; it stays unless a controller keeps writing the field
        revertable=writer != "controller",
    )


def rule_evidence(rule: model.IgnoreRule) -> dict[str, Any]:
    out: dict[str, Any] = {"id": rule.rule_id, "origin": rule.origin}
    out.update({"group": rule.group, "kind": rule.kind})
    if rule.name:
        out["name"] = rule.name
    if rule.namespace:
        out["namespace"] = rule.namespace
    if rule.json_pointers:
        out["jsonPointers"] = list(rule.json_pointers)
    if rule.jq_paths:
        out["jqPathExpressions"] = list(rule.jq_paths)
    if rule.managers:
        out["managedFieldsManagers"] = list(rule.managers)
    return out


def fix(
    app: model.Application,
    settings: model.Settings,
    rule: model.IgnoreRule,
    fixes: list[Correction],
) -> Remedy:
    """The corrected rule, as the exact patch of the Application (or of argocd-cm)."""
    said = ", ".join(f"{f.field}: {json.dumps(f.right)}" for f in fixes)
    title = f"Correct the ignore rule {rule.rule_id} ({said})"
    index = _APP_RULE.match(rule.rule_id)
    if rule.origin == "application" and index is not None:
        base = f"/spec/ignoreDifferences/{index.group(1)}"
        ops: list[dict[str, Any]] = []
        for f in fixes:
            ops.append({"op": "test", "path": f"{base}/{f.field}", "value": f.wrong})
            if f.field in ("name", "namespace") and not f.right:
                ops.append({"op": "remove", "path": f"{base}/{f.field}"})
            else:
                ops.append({"op": "replace", "path": f"{base}/{f.field}", "value": f.right})
        body = json.dumps(ops, separators=(",", ":"))
        entry = rule_evidence(_corrected(rule, fixes))
        for drop in ("id", "origin"):
            entry.pop(drop)
        return Remedy(
            RemedyKind.PREVENT,
            title,
            steps=(
                (
                    f"in {app.name}'s spec.ignoreDifferences, set {said}; the patch checks the old "
                    "values first"
                ),
            ),
            commands=(
                (
                    f"kubectl patch application {app.name} -n {app.namespace} --type json "
                    f"-p {shlex.quote(body)}"
                ),
            ),
            snippet=yaml.safe_dump({"spec": {"ignoreDifferences": [entry]}}, sort_keys=False),
        )
    return _cm_fix(settings, rule, fixes, title, said)


def _cm_fix(
    settings: model.Settings,
    rule: model.IgnoreRule,
    fixes: list[Correction],
    title: str,
    said: str,
) -> Remedy:
    corrected = _corrected(rule, fixes)
    new_key = CM_PREFIX + (
        f"{corrected.group}_{corrected.kind}" if corrected.group else corrected.kind
    )
    old_key = rule.rule_id.removeprefix("argocd-cm/")
    value: dict[str, Any] = {}
    if rule.json_pointers:
        value["jsonPointers"] = list(rule.json_pointers)
    if rule.jq_paths:
        value["jqPathExpressions"] = list(rule.jq_paths)
    if rule.managers:
        value["managedFieldsManagers"] = list(rule.managers)
    text = yaml.safe_dump(value, sort_keys=False)
    ns = settings.controller_namespace
    if not old_key.startswith(CM_PREFIX):  # the legacy resource.customizations block
        return Remedy(
            RemedyKind.PREVENT,
            title,
            steps=(
                (
                    f"in argocd-cm's resource.customizations, move the ignoreDifferences of "
                    f"{rule.group}/{rule.kind} under {corrected.group}/{corrected.kind}"
                ),
            ),
            commands=(f"kubectl edit configmap argocd-cm -n {ns}",),
        )
    ops = [
        {"op": "add", "path": "/data/" + _escape(new_key), "value": text},
        {"op": "remove", "path": "/data/" + _escape(old_key)},
    ]
    body = json.dumps(ops, separators=(",", ":"))
    return Remedy(
        RemedyKind.PREVENT,
        title,
        steps=(f"rename the argocd-cm key {old_key} to {new_key} ({said})",),
        commands=(f"kubectl patch configmap argocd-cm -n {ns} --type json -p {shlex.quote(body)}",),
        snippet=yaml.safe_dump({"data": {new_key: text}}, sort_keys=False),
    )


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
