"""Built-in rule builtin/ignored-but-overwritten: an ignored field any sync writes back to git's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.builtin.rules._common import brief, owner_evidence
from kubectl_gitdrift.compare import changes, strategies
from kubectl_gitdrift.diagnose import attribution
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, ResourceStatus, Severity

ID = "builtin/ignored-but-overwritten"
SEVERITY = Severity.WARNING
CODES = ("ignored-but-overwritten",)
DOC = "An ignored field whose live value any sync of the object writes back to git's."


def check(ctx: RuleContext) -> Iterator[Finding]:
    for drift in ctx.drifts:
        if drift.live is None or drift.desired is None or not drift.suppressed:
            continue
        if strategies.respects_ignores(ctx.app.sync_policy, drift.desired):
            continue
        for hidden in drift.suppressed:
            change = hidden.change
            if change.path[:1] == ("status",) or hidden.plugin == "builtin":
                continue
            if change.op is model.Op.REMOVE or change.desired is None:
                continue  # git does not set it: a sync leaves it alone
            field = model.display_path(change.path)
            owner = attribution.owner_of(change, drift.live)
            evidence: dict[str, Any] = {
                "path": field,
                "desired": change.desired,
                "live": change.live,
                "ignoredBy": hidden.rule,
                "plugin": hidden.plugin,
                "syncOptions": list(ctx.app.sync_policy.sync_options),
            }
            if owner is not None:
                evidence["owner"] = owner_evidence(owner)
            values = (
                "the Secret value"
                if change.secret
                else "the live value with git's "
                f"({changes.line_summary(change.live, change.desired)})"
                if changes.multiline(change.desired, change.live)
                else f"the live {brief(change.live)} with git's {brief(change.desired)}"
            )
            only_if = (
                " (ApplyOutOfSyncOnly=true: only when the object is OutOfSync for another reason)"
                if ctx.app.sync_policy.has_option("ApplyOutOfSyncOnly=true")
                and drift.status is ResourceStatus.SYNCED
                else ""
            )
            yield Finding(
                code="ignored-but-overwritten",
                severity=Severity.WARNING,
                message=(
                    f"{field} is ignored ({hidden.rule}) but still set in git: without "
                    f"RespectIgnoreDifferences=true any sync that applies {drift.key.short()} "
                    f"overwrites {values}{only_if}"
                    + (f", undoing {owner.manager}'s write." if owner else ".")
                ),
                key=drift.key,
                path=change.path,
                evidence=evidence,
                hint=(
                    "add RespectIgnoreDifferences=true to spec.syncPolicy.syncOptions, or drop "
                    "the field from git"
                ),
            )
