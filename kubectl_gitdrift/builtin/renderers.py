"""Built-in output formats: text, json, yaml, markdown, diff."""

from __future__ import annotations

from kubectl_gitdrift.hookspecs import RegisterRenderer, hookimpl
from kubectl_gitdrift.present import difftext, markdown, report


@hookimpl
def gitdrift_register_renderers(register: RegisterRenderer) -> None:
    register("text", report.render_text, doc="Tables and a short narrative (the default).")
    register("json", report.render_json, doc="The documented JSON report (docs/report-schema.md).")
    register("yaml", report.render_yaml, doc="The JSON report as YAML.")
    register("markdown", markdown.render, doc="A post-mortem write-up (for PRs and incidents).")
    register(
        "diff",
        difftext.render_diff,
        doc="A unified diff per differing resource, laid out like `argocd app diff`.",
    )
