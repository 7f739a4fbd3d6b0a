"""Which diff strategy Argo CD uses for an app, and the strategies behind one interface.

Argo CD (controller/state.go, gitops-engine pkg/diff) picks, per app:

- **server-side-diff** when argocd-cmd-params-cm sets `controller.diff.server.side: "true"` (the
  controller's `--server-side-diff-enabled`)
  or the Application's `argocd.argoproj.io/compare-options` annotation holds
  `ServerSideDiff=true`; `ServerSideDiff=false` there turns it off for that app.
  `IncludeMutationWebhook=true` keeps the fields mutating webhooks added.
- else **structured-merge** when `spec.syncPolicy.syncOptions` holds `ServerSideApply=true`;
  gitops-engine also uses it for one resource whose git manifest carries
  `argocd.argoproj.io/sync-options: ServerSideApply=true`.
- else **legacy**: the client-side three-way diff against last-applied-configuration.

Options are matched as Argo CD's `HasAnnotationOption` / `SyncOptions.HasOption` do: the value
split on commas, each item trimmed, compared exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_gitdrift import model

Strategy = model.DiffStrategy

COMPARE_OPTIONS = "argocd.argoproj.io/compare-options"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
MANAGER = "argocd-controller"  # the field manager Argo CD applies and dry-runs as


@dataclass(frozen=True, slots=True)
class Choice:
    """The strategy for an app (or one of its resources) and the option that chose it."""

    strategy: model.DiffStrategy
    reason: str
    include_mutation_webhook: bool = False  # Server-Side Diff keeps webhook-added fields

    def describe(self) -> str:
        """`structured-merge (syncOptions ServerSideApply=true)`."""
        return f"{self.strategy.value} ({self.reason})" if self.reason else self.strategy.value

    @property
    def server_side(self) -> bool:
        """Argo CD syncs these resources with server-side apply (or diffs as if it did)."""
        return self.strategy is not model.DiffStrategy.LEGACY


def sync_options(body: Mapping[str, Any] | None) -> str:
    """An object's own `argocd.argoproj.io/sync-options` annotation ("" when it has none)."""
    value = _sync_options_value(body)
    return value if isinstance(value, str) else ""


def resource_option(body: Mapping[str, Any] | None, option: str) -> bool:
    """`option` is one of the object's own sync-options (Argo CD's HasAnnotationOption)."""
    return has_option(_sync_options_value(body), option)


def respects_ignores(policy: model.SyncPolicy, desired: Mapping[str, Any] | None) -> bool:
    """A sync applies this object keeping its ignored fields' live values: the app's or the
    object's own sync-options say RespectIgnoreDifferences=true."""
    option = "RespectIgnoreDifferences=true"
    return policy.has_option(option) or resource_option(desired, option)


def _sync_options_value(body: Mapping[str, Any] | None) -> Any:
    metadata = (body or {}).get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return annotations.get(SYNC_OPTIONS) if isinstance(annotations, Mapping) else None


def has_option(value: Any, option: str) -> bool:
    """`option` is one of the comma-separated items of an annotation value or option list."""
    if isinstance(value, str):
        items: Any = value.split(",")
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return False
    return any(str(item).strip() == option for item in items)


def choose(app: model.Application, settings: model.Settings) -> Choice:
    """The strategy Argo CD's controller uses for `app`, with the reason."""
    compare = app.annotations.get(COMPARE_OPTIONS, "")
    include_webhook = has_option(compare, "IncludeMutationWebhook=true")
    if has_option(compare, "ServerSideDiff=false"):
        pass
    elif has_option(compare, "ServerSideDiff=true"):
        return Choice(
            model.DiffStrategy.SERVER_SIDE_DIFF,
            "compare-options ServerSideDiff=true",
            include_webhook,
        )
    elif settings.server_side_diff:
        return Choice(
            model.DiffStrategy.SERVER_SIDE_DIFF,
            "argocd-cmd-params-cm controller.diff.server.side=true",
            include_webhook,
        )
    if has_option(app.sync_policy.sync_options, "ServerSideApply=true"):
        return Choice(model.DiffStrategy.STRUCTURED_MERGE, "syncOptions ServerSideApply=true")
    reason = (
        "compare-options ServerSideDiff=false"
        if has_option(compare, "ServerSideDiff=false")
        else ""
    )
    return Choice(model.DiffStrategy.LEGACY, reason)


def for_resource(choice: Choice, desired: Mapping[str, Any] | None) -> Choice:
    """The strategy for one resource: gitops-engine switches a legacy app's resource to
    structured-merge when its git manifest says `sync-options: ServerSideApply=true`."""
    if choice.strategy is not model.DiffStrategy.LEGACY or desired is None:
        return choice
    if resource_option(desired, "ServerSideApply=true"):
        return Choice(
            model.DiffStrategy.STRUCTURED_MERGE, "sync-options annotation ServerSideApply=true"
        )
    return choice


__all__ = [
    "COMPARE_OPTIONS",
    "MANAGER",
    "SYNC_OPTIONS",
    "Choice",
    "Strategy",
    "choose",
    "for_resource",
    "has_option",
    "resource_option",
    "respects_ignores",
    "sync_options",
]
