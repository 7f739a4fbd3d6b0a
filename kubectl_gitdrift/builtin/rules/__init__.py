"""The builtin/rules plugin: registers the built-in diagnosis rules, one module each.

Why an application is OutOfSync and why it stays that way. Every finding has a stable code and
the evidence it rests on (rule -> module -> codes):

- builtin/manual-drift (manual_drift): manual-drift (a person changed a field git sets, after
  Argo CD's apply)
- builtin/field-fight (field_fight): field-fight (a controller, HPA via /scale or a webhook,
  keeps writing it)
- builtin/git-ahead (git_ahead): git-ahead (git has a revision Argo CD has not synced: a
  pending sync)
- builtin/sync-policy (sync_policy): selfheal-disabled, automated-sync-disabled, prune-irrelevant
- builtin/self-heal (self_heal): selfheal-backoff (self-heal is on and waiting out its backoff)
- builtin/last-sync-failed (last_sync_failed): last-sync-failed (automated sync does not retry
  that revision; Argo CD's message per resource)
- builtin/immutable-field (immutable_field): immutable-field (git changes a field the server
  refuses to change: every sync fails)
- builtin/crd-missing (crd_missing): crd-missing (git has a kind the cluster does not serve:
  every sync fails)
- builtin/sync-windows (sync_windows): sync-window-closed (an AppProject window blocks
  automated sync now)
- builtin/ignored-but-overwritten (ignored_but_overwritten): ignored-but-overwritten (any sync
  writes git's value back)
- builtin/tracking (tracking): tracking-id-missing, -invalid, -mismatch (another app), -copied
- builtin/controller-rbac (controller_rbac): controller-forbidden (the controller may not do
  what a sync needs)
- builtin/missing-extraneous (missing_extraneous): missing-resource, extraneous-resource
- builtin/ssa-field-released (ssa_field_released): ssa-field-released (git dropped a field
  other managers also own: a server-side apply keeps it)
- builtin/nondeterministic-render (nondeterministic_render): nondeterministic-render (the
  source renders the field differently each time: randAlphaNum, genCA, now, ...)
- builtin/ignore-rule-unmatched (ignore_rule_unmatched): ignore-rule-unmatched (an ignore
  rule matches no resource of the app while a difference at its path remains)
- builtin/server-filled (server_filled): server-filled (only fields the API server fills in
  differ; no sync or selfHeal clears it)
- builtin/admission-mutation (admission_mutation): admission-mutation (a mutating webhook
  changes a field git sets, inside Argo CD's own apply)
- builtin/stuck-deleting (stuck_deleting): stuck-deleting (a live object is held by finalizers
  nobody removes)

Each rule module holds ID, SEVERITY, CODES, DOC and `check(ctx)`; what several rules share is
in `_common`, and no rule module imports another. A new rule is a new module added to RULES.
"""

from __future__ import annotations

from kubectl_gitdrift.builtin.rules import (
    admission_mutation,
    controller_rbac,
    crd_missing,
    field_fight,
    git_ahead,
    ignore_rule_unmatched,
    ignored_but_overwritten,
    immutable_field,
    last_sync_failed,
    manual_drift,
    missing_extraneous,
    nondeterministic_render,
    self_heal,
    server_filled,
    ssa_field_released,
    stuck_deleting,
    sync_policy,
    sync_windows,
    tracking,
)
from kubectl_gitdrift.hookspecs import RegisterRule, hookimpl

RULES = (
    ssa_field_released,
    manual_drift,
    field_fight,
    sync_policy,
    self_heal,
    git_ahead,
    last_sync_failed,
    immutable_field,
    crd_missing,
    sync_windows,
    ignored_but_overwritten,
    tracking,
    controller_rbac,
    missing_extraneous,
    nondeterministic_render,
    ignore_rule_unmatched,
    server_filled,
    admission_mutation,
    stuck_deleting,
)
"""The rule modules in registration order (the order hooks and listings have always seen)."""


@hookimpl
def gitdrift_register_rules(register: RegisterRule) -> None:
    for rule in RULES:
        register(rule.ID, rule.check, severity=rule.SEVERITY, codes=rule.CODES, doc=rule.DOC)
