"""Built-in rule builtin/self-heal: self-heal is on and waiting out its backoff."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from kubectl_gitdrift.builtin.rules._common import cluster_moved, gitdrift_context, revertable_drift
from kubectl_gitdrift.diagnose import attribution, syncwindows
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, Severity

ID = "builtin/self-heal"
SEVERITY = Severity.INFO
CODES = ("selfheal-backoff",)
DOC = "selfHeal is on and pending: when its backoff (2s×3ⁿ, at most 300s) lets it run."

SELF_HEAL_BASE = 2  # seconds; Argo CD --self-heal-backoff-timeout-seconds
SELF_HEAL_FACTOR = 3
SELF_HEAL_CAP = 300


def self_heal_delay(attempts: int) -> int:
    """Seconds Argo CD waits before self-heal attempt `attempts + 1`: 0, 2, 6, 18, 54, 162, 300…"""
    if attempts <= 0:
        return 0
    return int(min(SELF_HEAL_BASE * SELF_HEAL_FACTOR ** (attempts - 1), SELF_HEAL_CAP))


def check(ctx: RuleContext) -> Iterator[Finding]:
    app = ctx.app
    policy = app.sync_policy
    op = app.operation
    if not (policy.automated and policy.self_heal) or not cluster_moved(ctx):
        return
    if not revertable_drift(ctx) or op is None or op.phase not in ("Succeeded", "Running"):
        return  # nothing, or only drift a sync cannot clear (its own cause says so)
    extra = gitdrift_context(ctx)
    if extra is not None and extra.project is not None:
        moment = attribution.parse_time(extra.now)
        try:
            if moment and not syncwindows.can_sync(ctx.app, extra.project, moment).automated:
                return  # sync-window-closed explains why self-heal waits
        except syncwindows.CronError:
            pass
    attempts = op.auto_heal_attempts
    delay = self_heal_delay(attempts)
    finished = attribution.parse_time(op.finished_at)
    next_at = finished + timedelta(seconds=delay) if finished is not None else None
    now = attribution.parse_time(extra.now) if extra is not None else None
    waiting = None if next_at is None or now is None else now < next_at
    evidence: dict[str, Any] = {
        "autoHealAttemptsCount": attempts,
        "delaySeconds": delay,
        "lastOperationFinishedAt": op.finished_at or None,
        "nextAttemptAt": next_at.isoformat().replace("+00:00", "Z") if next_at else None,
        "referenceTime": extra.now if extra is not None and extra.now else None,
        "waiting": waiting,
    }
    if op.phase == "Running":
        message = "selfHeal is on and a sync is running now; the drift should be reverted by it."
    elif attempts == 0:
        message = (
            "selfHeal is on and has not run since the last sync (no backoff yet): the next "
            "reconcile re-syncs the drifted resources."
        )
    elif waiting:
        message = (
            f"selfHeal is on and pending: after {attempts} self-heal attempt(s) Argo CD waits "
            f"{delay}s (2s×3ⁿ, at most 300s) from the last sync's end ({op.finished_at}), so "
            f"the next attempt comes at {evidence['nextAttemptAt']}."
        )
    else:
        message = (
            f"selfHeal is on and its backoff ({delay}s after attempt {attempts}) has passed, "
            "yet the drift is still there: the next reconcile re-syncs it"
            + (
                "; after this many attempts something keeps undoing the heal (see field-fight)"
                if attempts >= 3
                else ""
            )
            + "."
        )
    yield Finding(
        code="selfheal-backoff",
        severity=Severity.INFO,
        message=message,
        evidence=evidence,
        hint=f"argocd app get {ctx.app.name} --refresh",
    )
