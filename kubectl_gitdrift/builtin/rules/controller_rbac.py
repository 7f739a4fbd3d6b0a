"""Built-in rule builtin/controller-rbac: the Argo CD controller may not do what a sync needs."""

from __future__ import annotations

from collections.abc import Iterator

from kubectl_gitdrift import model
from kubectl_gitdrift.builtin.rules._common import gitdrift_context
from kubectl_gitdrift.diagnose import rbac
from kubectl_gitdrift.hookspecs import RuleContext
from kubectl_gitdrift.model import Finding, ResourceStatus, Severity

ID = "builtin/controller-rbac"
SEVERITY = Severity.ERROR
CODES = ("controller-forbidden",)
DOC = "The Argo CD controller's service account may not get/list/watch/write a kind."


def check(ctx: RuleContext) -> Iterator[Finding]:
    extra = gitdrift_context(ctx)
    if extra is None or not extra.access:
        return
    denied: dict[tuple[str, str, str], list[rbac.Answer]] = {}
    for answer in extra.access:
        q = answer.question
        if not answer.allowed:
            denied.setdefault((q.group, q.resource, q.namespace), []).append(answer)
    needed = _needed(ctx)
    first_key: dict[tuple[str, str, str], model.ObjectKey] = {}
    for drift in ctx.drifts:
        res = rbac.plural(drift.key.group, drift.key.kind, extra.plurals)
        first_key.setdefault((drift.key.group, res, drift.key.namespace), drift.key)
    for (group, resource, namespace), answers in sorted(denied.items()):
        verbs = [a.question.verb for a in answers]
        blocking = sorted(set(verbs) & needed.get((group, resource, namespace), set()))
        res = resource + (f".{group}" if group else "")
        where = f"in namespace {namespace}" if namespace else "cluster-wide"
        effect = (
            f"the pending sync needs {', '.join(blocking)}, so it fails with Forbidden"
            if blocking
            else "a later sync that needs them will fail with Forbidden"
        )
        yield Finding(
            code="controller-forbidden",
            severity=Severity.ERROR if blocking else Severity.WARNING,
            message=(f"{extra.controller} cannot {', '.join(verbs)} {res} {where}: {effect}."),
            key=first_key.get((group, resource, namespace)),
            evidence={
                "serviceAccount": extra.controller,
                "group": group,
                "resource": resource,
                "namespace": namespace,
                "deniedVerbs": verbs,
                "neededNow": blocking,
                "denied": [
                    {
                        "verb": a.question.verb,
                        "group": a.question.group,
                        "resource": a.question.resource,
                        "namespace": a.question.namespace,
                    }
                    for a in answers
                ],
                "checkedBy": extra.access_source,
                "allowed": [
                    {"verb": a.question.verb, "reason": a.reason}
                    for a in extra.access
                    if a.allowed
                    and (a.question.group, a.question.resource, a.question.namespace)
                    == (group, resource, namespace)
                ],
            },
            hint=f"kubectl auth can-i {verbs[0]} {res}"
            + (f" -n {namespace}" if namespace else "")
            + f" --as {extra.controller}",
        )


def _needed(ctx: RuleContext) -> dict[tuple[str, str, str], set[str]]:
    """(group, kind, namespace) -> the verbs the pending sync needs."""
    extra = gitdrift_context(ctx)
    plurals = extra.plurals if extra is not None else {}
    out: dict[tuple[str, str, str], set[str]] = {}
    prune = ctx.app.sync_policy.prune or not ctx.app.sync_policy.automated
    for drift in ctx.drifts:
        key = drift.key
        verbs = out.setdefault(
            (key.group, rbac.plural(key.group, key.kind, plurals), key.namespace), set()
        )
        verbs.update(("get", "list", "watch"))
        if drift.status is ResourceStatus.OUT_OF_SYNC:
            verbs.add("patch")
        elif drift.status is ResourceStatus.MISSING:
            verbs.add("create")
        elif drift.status is ResourceStatus.EXTRANEOUS and prune:
            verbs.add("delete")
    return out
