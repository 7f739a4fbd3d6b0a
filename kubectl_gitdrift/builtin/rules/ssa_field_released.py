"""Built-in rule builtin/ssa-field-released: git dropped a field other managers also own, so a
server-side apply keeps it."""

from __future__ import annotations

from collections.abc import Iterator

from kubectl_gitdrift import model
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, Severity

ID = "builtin/ssa-field-released"
SEVERITY = Severity.INFO
CODES = ("ssa-field-released",)
DOC = (
    "Server-side apply: git dropped a field another manager also owns, so the next "
    "sync keeps it (only argocd-controller's ownership goes): why removing it from git "
    "changed nothing."
)


def check(ctx: RuleContext) -> Iterator[Finding]:
    for drift in ctx.drifts:
        for path, managers in drift.released:
            who = ", ".join(managers)
            yield Finding(
                code="ssa-field-released",
                severity=Severity.INFO,
                message=(
                    f"git no longer sets {model.display_path(path)} of {drift.key.short()}, but "
                    f"{who} also manage{'s' if len(managers) == 1 else ''} it: Argo CD's next "
                    "server-side apply keeps it and only gives up argocd-controller's ownership"
                ),
                key=drift.key,
                path=path,
                evidence={"managers": list(managers)},
                hint=(
                    f"to remove it, have {who} stop managing it (or delete it once they do); "
                    "Argo CD will not"
                ),
            )
