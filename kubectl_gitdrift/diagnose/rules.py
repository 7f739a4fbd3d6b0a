"""Runs the registered diagnosis rules over one application's drifts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from kubectl_gitdrift import hookspecs, model
from kubectl_gitdrift.diagnose import attribution, audit, rbac, tracking
from kubectl_gitdrift.diagnose.causes import Cause, CauseKey, cause_of
from kubectl_gitdrift.errors import GitDriftError, PluginError


@dataclass(frozen=True)
class Context:
    """What every rule sees (hookspecs.RuleContext), plus the evidence the engine gathered.

    The fields after `managed_fields_known` are gitdrift's own; rules written against the
    RuleContext protocol read them with `getattr(ctx, name, default)`.
    """

    app: model.Application
    settings: model.Settings
    drifts: Sequence[model.Drift]
    live: Sequence[model.Manifest]
    managed_fields_known: bool
    clues: Mapping[attribution.ClueKey, attribution.Clue] = field(default_factory=dict)
    audit_log: audit.AuditLog | None = None
    access: Sequence[rbac.Answer] = ()  # empty: the controller's permissions were not checked
    access_source: str = ""  # "offline RBAC over N objects" | "SubjectAccessReview"
    controller: str = rbac.CONTROLLER
    tracking: Sequence[tracking.TrackingIssue] = ()
    project: model.Body | None = None  # the app's AppProject, when read
    now: str = ""  # the moment the state describes (status.reconciledAt offline)
    events: Sequence[model.Body] = ()
    plurals: Mapping[tuple[str, str], str] = field(default_factory=dict)
    notes: Sequence[str] = ()  # the report's notes so far ("not checked: ..." and others)
    kinds: Mapping[tuple[str, str], Sequence[model.Manifest]] | None = None  # live by group/kind
    strategy: model.DiffStrategy = model.DiffStrategy.LEGACY  # how Argo CD diffs this app
    causes: Mapping[CauseKey, Cause] = field(default_factory=dict)  # primary.py
    varying: Sequence[model.VaryingRender] = ()  # templates that render differently each time

    def cause(self, key: model.ObjectKey, path: model.FieldPath | None) -> Cause | None:
        """The specific primary cause of a field or resource, when one was found."""
        return cause_of(self.causes, key, path)

    def clue(self, key: model.ObjectKey, path: model.FieldPath) -> attribution.Clue | None:
        return self.clues.get((key, path))

    def of_kind(self, group: str, kind: str) -> Sequence[model.Manifest]:
        """The live objects of one group/kind (indexed once per run when the engine can)."""
        if self.kinds is not None:
            return self.kinds.get((group, kind), ())
        return [m for m in self.live if (m.key.group, m.key.kind) == (group, kind)]


def diagnose(
    ctx: Context, rules: Sequence[hookspecs.Rule], disabled: Sequence[str] = ()
) -> list[model.Finding]:
    """Every finding of every enabled rule, stamped with its rule and plugin, sorted."""
    findings: list[model.Finding] = []
    for rule in rules:
        if rule.id in disabled:
            continue
        try:
            produced = list(rule.fn(ctx))
        except GitDriftError:
            raise
        except Exception as exc:
            raise PluginError(
                f"rule {rule.id!r} of plugin {rule.plugin!r} failed: {type(exc).__name__}: {exc}",
                hint=f"run with --debug for the traceback, or --disable-rule {rule.id}",
            ) from exc
        for finding in produced:
            findings.append(replace(finding, rule=rule.id, plugin=rule.plugin))
    return sorted(findings, key=model.Finding.sort_key)
