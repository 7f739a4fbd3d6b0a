"""Example team plugin distribution: warn about container images git pins to `:latest`."""

from __future__ import annotations

from collections.abc import Iterator

from kubectl_gitdrift import Finding, Severity, hookimpl
from kubectl_gitdrift.hookspecs import RegisterRule, RuleContext


@hookimpl
def gitdrift_register_rules(register: RegisterRule) -> None:
    register(
        "example/latest-tag",
        latest_tag,
        severity=Severity.WARNING,
        codes=("image-latest",),
        doc="A container image in git uses the :latest tag (or no tag), so syncs are not "
        "reproducible.",
    )


def latest_tag(ctx: RuleContext) -> Iterator[Finding]:
    for drift in ctx.drifts:
        spec = (drift.desired or {}).get("spec") or {}
        pod = ((spec.get("template") or {}).get("spec")) or spec
        for container in pod.get("containers") or ():
            image = str(container.get("image") or "")
            if image.endswith(":latest") or ":" not in image.rsplit("/", 1)[-1]:
                yield Finding(
                    code="image-latest",
                    severity=Severity.WARNING,
                    message=f"{drift.key.short()} runs {image}, which is not pinned.",
                    key=drift.key,
                    hint="pin a version tag or a digest",
                )
