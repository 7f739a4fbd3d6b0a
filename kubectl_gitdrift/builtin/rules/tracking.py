"""Built-in rule builtin/tracking: the live object's tracking-id is missing, malformed, another
app's, or copied (tracking-id-missing, -invalid, -mismatch, -copied)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from kubectl_gitdrift.builtin.rules._common import gitdrift_context
from kubectl_gitdrift.diagnose import tracking
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, Severity

ID = "builtin/tracking"
SEVERITY = Severity.ERROR
CODES = (tracking.MISSING, tracking.INVALID, tracking.MISMATCH, tracking.COPIED)
DOC = "The live object's tracking-id is missing, malformed, another app's, or copied."


def check(ctx: RuleContext) -> Iterator[Finding]:
    extra = gitdrift_context(ctx)
    if extra is not None:
        issues: Sequence[tracking.TrackingIssue] = extra.tracking
    else:
        issues = tracking.audit(ctx.drifts, ctx.live, ctx.app, ctx.settings)
    for issue in issues:
        what = issue.key.short()
        if issue.code == tracking.MISSING:
            severity = Severity.WARNING
            message = (
                f"{what} exists live without Argo CD's tracking "
                f"({'label' if issue.method == 'label' else 'tracking-id annotation'}): Argo CD "
                "did not create it, or someone removed the mark; the next sync adopts it."
            )
        elif issue.code == tracking.INVALID:
            severity = Severity.WARNING
            message = (
                f"{what} has a malformed tracking-id {issue.found!r} (Argo CD: wrong resource "
                "tracking format), so Argo CD treats it as untracked."
            )
        elif issue.code == tracking.MISMATCH:
            severity = Severity.ERROR
            message = (
                f"SharedResourceWarning: {tracking.shared_resource_warning(issue, ctx.app)}; "
                f"the live object is claimed by {issue.other_app}, and both apps fight over it."
            )
        else:
            severity = Severity.WARNING
            message = (
                f"{what} carries a tracking-id naming this app but describing another object "
                f"({issue.found}): copied by a tool, so Argo CD gives it no sync status and never "
                "prunes it."
            )
        evidence = {**issue.evidence(), "fromConfigMap": ctx.settings.from_configmap}
        yield Finding(
            code=issue.code,
            severity=severity,
            message=message,
            key=issue.key,
            evidence=evidence,
            hint=(
                "remove the object from one of the two apps (or set FailOnSharedResource=true)"
                if issue.code == tracking.MISMATCH
                else f"set the {'label' if issue.method == 'label' else 'annotation'} to "
                f"{issue.expected!r}, or let a sync write it"
            ),
        )
