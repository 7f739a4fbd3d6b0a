"""Built-in rule builtin/nondeterministic-render: the source renders the field differently on every
render (Helm's randAlphaNum, genCA, uuidv4, now, htpasswd, ...).

Argo CD turns OutOfSync again whenever its repo-server renders anew; a sync only writes another
value, and selfHeal would rotate it at every refresh (diagnose/nondeterminism.py finds them).
"""

from __future__ import annotations

from collections.abc import Iterator

from kubectl_gitdrift import model
from kubectl_gitdrift.builtin.rules._common import gitdrift_context
from kubectl_gitdrift.diagnose import nondeterminism
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, Severity

ID = "builtin/nondeterministic-render"
SEVERITY = Severity.WARNING
CODES = (nondeterminism.CODE,)
DOC = (
    "The source renders a field differently on every render (Helm randAlphaNum, genCA, uuidv4, "
    "now, ...): Argo CD turns OutOfSync at each new render, and a sync or selfHeal only "
    "rotates the value."
)


def check(ctx: RuleContext) -> Iterator[Finding]:
    own = gitdrift_context(ctx)
    if own is None:
        return
    for cause in own.causes.values():
        if cause.code != nondeterminism.CODE or cause.path is None:
            continue
        evidence = cause.evidence
        field = model.display_path(cause.path)
        call = evidence.get("call")
        if isinstance(call, dict):
            how = f"{call['file']} line {call['line']} calls {call['function']}" + (
                f" (in {call['namedTemplate']})" if call.get("namedTemplate") else ""
            )
        else:
            derived = evidence.get("derivedFrom") or []
            how = f"{evidence.get('template')} derives it from " + (
                ", ".join(f"{c['file']} line {c['line']} ({c['function']})" for c in derived)
                or "another template's output"
            )
        proof = (
            "two renders gave it different values"
            if evidence.get("renderedTwice") == "differed"
            else "it changes with the time of the render"
        )
        guard = evidence.get("chartValue") or evidence.get("existingSecret")
        lookup = (
            " The chart's lookup, meant to keep the value already in the cluster, finds nothing "
            "there: Argo CD's repo-server renders without cluster access."
            if evidence.get("lookup")
            else ""
        )
        cached = (
            " Argo CD still says Synced: it compares with the render it cached, until it renders "
            "again."
            if ctx.app.sync_status == "Synced"
            else ""
        )
        yield Finding(
            code=nondeterminism.CODE,
            severity=Severity.WARNING,
            message=(
                f"{field} is rendered anew each time: {how}, and {proof}. Argo CD turns "
                "OutOfSync again whenever its repo-server renders the source (a hard refresh, "
                "its render cache expiring, a new commit). A sync writes yet another value "
                "(a new secret each time) and does not clear it; selfHeal would rotate it at "
                f"every refresh.{lookup}{cached}"
            ),
            key=cause.key,
            path=cause.path,
            evidence=dict(evidence),
            hint=(
                f"set {guard} in the app's Helm values, or ignore {field} (see PREVENT); "
                "not selfHeal"
                if guard
                else f"give it a fixed value in the chart, or ignore {field} (see PREVENT); "
                "not selfHeal"
            ),
        )
