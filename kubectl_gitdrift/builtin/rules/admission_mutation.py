"""Built-in rule builtin/admission-mutation: a mutating admission webhook changed a field git
sets, inside Argo CD's own apply (diagnose/admission.py decides it).

A sync sends git's value and the webhook changes it again, so neither a sync nor selfHeal
clears it; the fix is the webhook's policy, git, or an ignore rule.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from kubectl_gitdrift.builtin.rules._common import brief, gitdrift_context
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import DiffStrategy, Finding, Severity

ID = "builtin/admission-mutation"
SEVERITY = Severity.WARNING
CODES = ("admission-mutation",)
DOC = (
    "A mutating admission webhook changes a field git sets, inside Argo CD's own apply "
    "(names the webhook configuration)."
)


def check(ctx: RuleContext) -> Iterator[Finding]:
    own = gitdrift_context(ctx)
    if own is None:
        return
    self_heal = ctx.app.sync_policy.automated and ctx.app.sync_policy.self_heal
    for cause in own.causes.values():
        if cause.code != CODES[0] or cause.path is None:
            continue
        evidence = dict(cause.evidence)
        field = str(evidence.get("path"))
        who = _who(evidence.get("auditMutations") or (), evidence.get("webhooks") or ())
        owner = evidence.get("owner") or {}
        values = (
            f"{field} differs from git"
            if evidence.get("secret")
            else f"{field} is {brief(evidence.get('live'))} in the cluster but "
            f"{brief(evidence.get('desired'))} in git"
        )
        heal = (
            "selfHeal re-applies it forever (each apply is mutated again, and one the webhook "
            "undoes is often a no-op write)"
            if self_heal
            else "selfHeal, if turned on, would re-apply it forever"
        )
        outcome = (
            "Argo CD compares this app with Server-Side Diff, whose dry-run apply passes "
            "through the webhook, so Argo CD itself expects the webhook's value; gitdrift's "
            "offline comparison runs no webhook (--server-dry-run asks the API server as Argo "
            "CD does)."
            if own.strategy is DiffStrategy.SERVER_SIDE_DIFF
            else "A sync sends git's value and the webhook changes it again, so the app stays "
            f"OutOfSync; {heal}."
        )
        yield Finding(
            code=CODES[0],
            severity=Severity.WARNING,
            message=(
                f"{values}: {who} changes it inside Argo CD's own apply (the field is still "
                f"{owner.get('manager')}'s, from its apply at {owner.get('time')}: the field "
                f"manager runs before mutating admission). {outcome}"
            ),
            key=cause.key,
            path=cause.path,
            evidence=evidence,
            hint=(
                "change the webhook's policy, write its value in git, or ignore the field "
                "(see FIX and PREVENT)"
            ),
        )


def _who(writes: Sequence[Mapping[str, Any]], webhooks: Sequence[Mapping[str, Any]]) -> str:
    """The webhook, named from the audit log's patch annotations first, else from the
    configurations that match."""
    if writes:
        names = sorted({(str(w.get("configuration")), str(w.get("webhook"))) for w in writes})
        named = " and ".join(f"{hook} (MutatingWebhookConfiguration {c})" for c, hook in names)
        return f"the mutating webhook {named}, as the audit log's patch annotations show,"
    sure = [w for w in webhooks if w.get("certain")]
    names = sorted({(str(w.get("configuration")), str(w.get("webhook"))) for w in webhooks})
    named = " or ".join(f"{hook} (MutatingWebhookConfiguration {c})" for c, hook in names)
    if sure:
        return f"the mutating webhook {named}"
    return f"the mutating webhook {named}, if its namespace labels or match conditions select it,"
