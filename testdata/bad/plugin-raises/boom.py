"""A team plugin whose rule divides by zero: the run fails with exit 4, naming the rule."""

from kubectl_gitdrift import hookimpl


def explode(ctx):  # type: ignore[no-untyped-def]
    return [1 / 0]


@hookimpl
def gitdrift_register_rules(register):  # type: ignore[no-untyped-def]
    register("boom/explode", explode, doc="Always fails.")
