"""Built-in rule builtin/crd-missing: git has an object of a kind the cluster does not serve (no
CustomResourceDefinition), so it is Missing and every sync fails on it.

One finding per object (diagnose/unserved.py decides them), with what said the kind is missing:
the failed sync's line for it, the sync's message, the run's discovery.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kubectl_gitdrift.builtin.rules._common import gitdrift_context
from kubectl_gitdrift.diagnose import syncfailures, unserved
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, Severity

ID = "builtin/crd-missing"
SEVERITY = Severity.ERROR
CODES = (unserved.CODE,)
DOC = "Git has a kind the cluster does not serve (its CRD is not installed): every sync fails."

NOT_VALID = "one or more synchronization tasks are not valid"


def check(ctx: RuleContext) -> Iterator[Finding]:
    own = gitdrift_context(ctx)
    if own is None:
        return
    for cause in sorted(
        (c for c in own.causes.values() if c.code == unserved.CODE), key=lambda c: c.key
    ):
        key, evidence = cause.key, dict(cause.evidence)
        what = f"{evidence.get('apiVersion') or key.group} {key.kind}"
        crd = evidence.get("crd")
        message = (
            f"{key.short()} is in git, but this cluster does not serve {what}: no "
            f"CustomResourceDefinition {crd} is installed"
        )
        if evidence.get("crdInGit"):
            message += f" yet (this app renders it, {evidence['crdInGit']})"
        message += "."
        result: Any = evidence.get("syncResult")
        last: Any = evidence.get("lastSync")
        if isinstance(result, dict) or isinstance(last, dict):
            said = result["message"] if isinstance(result, dict) else last["message"]
            message += f" The last sync failed on it: {syncfailures.quote(str(said))}."
            if isinstance(last, dict) and str(last.get("message", "")).startswith(NOT_VALID):
                message += (
                    " Argo CD checks every kind before it applies anything, so nothing else of "
                    "the app was synced either."
                )
            message += " " + syncfailures.after_failure(ctx.app)
        else:
            message += (
                " Argo CD checks every kind against discovery before it applies anything, so a "
                "sync fails on it before it applies the rest. "
                + syncfailures.before_failure(ctx.app)
            )
        message += " Install the CRD first."
        yield Finding(
            code=unserved.CODE,
            severity=Severity.ERROR,
            message=message,
            key=key,
            evidence=evidence,
            hint=f"install {crd} before this app syncs (kubectl get crd {crd})",
        )
