"""Built-in rule builtin/immutable-field: git changes a field the API server refuses to change,
so every sync of the object fails (422 Invalid) and nothing of it is written.

One finding per object and immutable field (diagnose/immutable.py decides them), quoting what the
failed sync recorded for the object when there is one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.builtin.rules._common import brief, gitdrift_context
from kubectl_gitdrift.diagnose import immutable, syncfailures
from kubectl_gitdrift.diagnose.causes import Cause
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, Severity

ID = "builtin/immutable-field"
SEVERITY = Severity.ERROR
CODES = (immutable.CODE,)
DOC = (
    "Git changes a field the API server refuses to change (selector, claim templates, "
    "clusterIP): every sync fails."
)


def check(ctx: RuleContext) -> Iterator[Finding]:
    own = gitdrift_context(ctx)
    if own is None:
        return
    by_key: dict[model.ObjectKey, list[Cause]] = {}
    for cause in own.causes.values():
        if cause.code == immutable.CODE:
            by_key.setdefault(cause.key, []).append(cause)
    drifts = {d.key: d for d in ctx.drifts}
    for key in sorted(by_key):
        causes = by_key[key]
        drift = drifts.get(key)
        held = [c for c in causes if "heldBy" in c.evidence]
        fields: dict[str, list[Cause]] = {}
        for cause in causes:
            if "field" in cause.evidence:
                fields.setdefault(str(cause.evidence["field"]), []).append(cause)
        for field, owned in sorted(fields.items()):
            yield _finding(ctx, key, drift, field, owned, held)


def _finding(
    ctx: RuleContext,
    key: model.ObjectKey,
    drift: model.Drift | None,
    field: str,
    owned: list[Cause],
    held: list[Cause],
) -> Finding:
    first = owned[0]
    root = _root(first.path or (), field)
    found_live, live = model.lookup((drift.live if drift else None) or {}, root)
    found_git, desired = model.lookup((drift.desired if drift else None) or {}, root)
    result = first.evidence.get("syncResult")
    evidence: dict[str, Any] = {
        "field": field,
        "kind": first.evidence.get("kind"),
        "rule": first.evidence.get("rule"),
        "live": live if found_live else None,
        "desired": desired if found_git else None,
        "changes": [model.display_path(c.path or ()) for c in owned],
        "heldBack": [model.display_path(c.path or ()) for c in held],
        "reported": bool(first.evidence.get("reported")),
    }
    for name in ("syncResult", "lastSync"):
        if name in first.evidence:
            evidence[name] = first.evidence[name]
    secret = drift is not None and any(c.secret for c in drift.changes)
    if secret:
        values = f"git changes {field}"
    else:
        values = (
            f"{field} is {brief(live if found_live else None)} in the cluster, "
            f"git has {brief(desired if found_git else None)}"
        )
    message = (
        f"{key.short()}: {values}, and the API server refuses to change it after creation "
        f"({first.evidence.get('rule')})."
    )
    if isinstance(result, dict) and result.get("message"):
        said = syncfailures.server_words(str(result["message"]))
        message += (
            f" The last sync failed on it with the server's 422: {syncfailures.quote(said)}. "
        )
        op = ctx.app.operation
        if op is not None and syncfailures.retrying(op):
            message += syncfailures.after_failure(ctx.app)
        else:
            message += "Every sync of it fails this way, and selfHeal cannot help: " + _after(ctx)
    else:
        message += (
            " A sync patches the object and the server answers 422 Invalid; nothing of it is "
            "written. " + syncfailures.before_failure(ctx.app)
        )
    if held:
        names = ", ".join(sorted({_parent(c.path or ()) for c in held}))
        message += (
            f" Git's other changes to it ({names}) wait with it: the server rejects the whole "
            "patch."
        )
    message += " Replace the object, re-create it, or keep the old value in git."
    return Finding(
        code=immutable.CODE,
        severity=Severity.ERROR,
        message=message,
        key=key,
        path=root,
        evidence=evidence,
        hint=(
            f"argocd app sync {ctx.app.name} --resource {_flag(key)} --force --replace "
            f"(deletes and re-creates it), or keep the old {field} in git"
        ),
    )


def _after(ctx: RuleContext) -> str:
    if not ctx.app.sync_policy.automated:
        return "it needs automated sync, which is off."
    return (
        "it runs only after a successful sync, and automated sync does not retry the failed "
        "revision."
    )


def _parent(path: model.FieldPath) -> str:
    """A held-back change as the message names it: its map (labels, annotations), not each key."""
    return model.display_path(path[:-1] if len(path) > 1 and isinstance(path[-1], str) else path)


def _root(path: model.FieldPath, field: str) -> model.FieldPath:
    """The prefix of a change's path that is the immutable field."""
    for n in range(len(path) + 1):
        if model.display_path(path[:n]) == field:
            return path[:n]
    return path


def _flag(key: model.ObjectKey) -> str:
    name = f"{key.namespace}/{key.name}" if key.namespace else key.name
    return f"{key.group}:{key.kind}:{name}"
