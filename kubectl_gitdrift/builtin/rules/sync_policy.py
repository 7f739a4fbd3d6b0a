"""Built-in rule builtin/sync-policy: whether and when the sync policy lets Argo CD undo drift.

Codes: automated-sync-disabled, selfheal-disabled, prune-irrelevant.
"""

from __future__ import annotations

from collections.abc import Iterator

from kubectl_gitdrift.builtin.rules._common import changed_drifts, cluster_moved, revertable_drift
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, Severity

ID = "builtin/sync-policy"
SEVERITY = Severity.WARNING
CODES = ("selfheal-disabled", "automated-sync-disabled", "prune-irrelevant")
DOC = "Explains, from the sync policy, whether and when Argo CD will undo the drift."


def check(ctx: RuleContext) -> Iterator[Finding]:
    drifted = changed_drifts(ctx)
    if not revertable_drift(ctx):
        return  # no drift, or only drift a sync cannot clear: its own cause says what will
    policy = ctx.app.sync_policy
    last = ctx.app.last_sync
    revision = last.revision if last else (ctx.app.revisions[0] if ctx.app.revisions else "")
    evidence = {
        "automated": policy.automated,
        "selfHeal": policy.self_heal,
        "prune": policy.prune,
        "lastSyncedRevision": revision,
    }
    if not policy.automated:
        yield Finding(
            code="automated-sync-disabled",
            severity=Severity.WARNING,
            message=(
                "Automated sync is off: Argo CD only reports the drift; nothing changes the "
                "cluster until someone syncs the app."
            ),
            evidence=evidence,
            hint=f"argocd app sync {ctx.app.name}",
        )
    elif not policy.self_heal and cluster_moved(ctx):
        yield Finding(
            code="selfheal-disabled",
            severity=Severity.WARNING,
            message=(
                "selfHeal is off: automated sync fires only when git gets a new revision, and the "
                f"last sync already went to {revision[:12] or 'the current revision'}, so Argo CD "
                "will not revert this drift. It stays OutOfSync until a manual sync or the next "
                "commit to the app's path."
            ),
            evidence=evidence,
            hint="enable spec.syncPolicy.automated.selfHeal, or alert on OutOfSync",
        )
    if policy.automated and policy.prune and drifted and cluster_moved(ctx):
        yield Finding(
            code="prune-irrelevant",
            severity=Severity.INFO,
            message=(
                "prune: true does not help here: pruning deletes objects git no longer has; "
                "it never restores changed fields of objects that still exist."
            ),
            evidence=evidence,
        )
