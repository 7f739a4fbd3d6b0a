"""Built-in rule builtin/sync-windows: an AppProject sync window blocks automated sync now."""

from __future__ import annotations

from collections.abc import Iterator

from kubectl_gitdrift.builtin.rules._common import gitdrift_context, out_of_sync
from kubectl_gitdrift.diagnose import attribution, syncwindows
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, Severity

ID = "builtin/sync-windows"
SEVERITY = Severity.WARNING
CODES = ("sync-window-closed",)
DOC = "An AppProject sync window keeps automated sync (and self-heal) from running now."


def check(ctx: RuleContext) -> Iterator[Finding]:
    extra = gitdrift_context(ctx)
    if extra is None or extra.project is None or not out_of_sync(ctx):
        return
    if not ctx.app.sync_policy.automated:
        return
    now = attribution.parse_time(extra.now)
    if now is None:
        return
    try:
        verdict = syncwindows.can_sync(ctx.app, extra.project, now)
    except syncwindows.CronError as exc:
        yield Finding(
            code="sync-window-closed",
            severity=Severity.WARNING,
            message=f"AppProject {ctx.app.project}: a sync window cannot be read ({exc}).",
            evidence={"project": ctx.app.project, "error": str(exc)},
        )
        return
    if verdict.automated:
        return
    manual = (
        "a manual sync is still allowed (manualSync: true)"
        if verdict.manual
        else "manual sync is blocked too"
    )
    yield Finding(
        code="sync-window-closed",
        severity=Severity.WARNING,
        message=(
            f"AppProject {ctx.app.project}'s sync windows block automated sync and self-heal at "
            f"{extra.now}: {verdict.reason}; {manual}."
        ),
        evidence={
            "project": ctx.app.project,
            "referenceTime": extra.now,
            "reason": verdict.reason,
            "manualSyncAllowed": verdict.manual,
            "blocking": [w.evidence() for w in verdict.blocking],
            "active": [w.evidence() for w in verdict.active],
        },
        hint=(
            f"argocd app sync {ctx.app.name}"
            if verdict.manual
            else f"wait for the window, or edit AppProject {ctx.app.project} syncWindows"
        ),
    )
