"""`-o markdown`: the report as a post-mortem write-up for a PR comment or an incident doc.

Sections: Symptoms (what Argo CD and gitdrift see), Evidence (each drifted field with who wrote it,
how and when: managedFields, audit log, Events, the last git commit), Root cause (the findings,
most severe first), Remediation (adopt or revert, with the patch), Verification, Prevention,
Notes. Deterministic (no timestamps of its own); Secret values never appear (the diff step masks
them, and nothing here reads a live object).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.present import report
from kubectl_gitdrift.present import writtenby as writers

_ICON = {model.Severity.ERROR: "🔴", model.Severity.WARNING: "🟠", model.Severity.INFO: "🔵"}


def render(report: model.Report) -> str:
    return "\n".join(_app(app) for app in report.applications)


def _app(app: model.AppReport) -> str:
    out: list[str] = [f"# Drift post-mortem: `{app.namespace}/{app.name}`", ""]
    out += _symptoms(app)
    out += _evidence(app)
    out += _root_cause(app)
    sections = (
        ("Remediation", model.FIX_KINDS, True),
        ("Verification", (model.RemedyKind.VERIFY,), False),
        ("Prevention", (model.RemedyKind.PREVENT,), False),
    )
    for title, kinds, pick_one in sections:
        remedies = [r for r in app.remedies if r.kind in kinds]
        if remedies:
            out += [f"## {title}", ""]
            if pick_one and len(remedies) > 1:
                out += ["Pick one:", ""]
            for remedy in remedies:
                out += _remedy(remedy)
    if app.notes:
        out += ["## Notes", ""]
        out += [f"- {inline(n)}" for n in app.notes]
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _symptoms(app: model.AppReport) -> list[str]:
    out = ["## Symptoms", ""]
    argo = f" (Argo CD says **{app.argocd_sync_status}**)" if app.argocd_sync_status else ""
    out.append(f"- gitdrift: **{app.sync_status.value}**{argo}")
    out.append(f"- Source: `{app.source}`")
    spec = app.application
    if spec is not None:
        policy = spec.sync_policy
        if policy.automated:
            flags = f"prune: {str(policy.prune).lower()}, selfHeal: {str(policy.self_heal).lower()}"
            out.append(f"- Sync policy: automated ({flags})")
        else:
            out.append("- Sync policy: manual (automated sync off)")
        last = spec.last_sync
        if last is not None:
            by = "automated" if last.automated else (last.initiated_by or "manual")
            out.append(f"- Last sync: `{last.revision[:12]}` at {last.deployed_at} ({by})")
    out += ["", "| Resource | Status | Changes |", "|---|---|---|"]
    for drift in app.resources:
        status = drift.status.value or "-"
        out.append(f"| `{drift.key.display()}` | {status} | {len(drift.changes) or ''} |")
    out.append("")
    return out


def _evidence(app: model.AppReport) -> list[str]:
    changed = [(d, c) for d in app.resources for c in d.changes]
    if not changed:
        return []
    out = [
        "## Evidence",
        "",
        "| Resource | Field | Git | Live | Written by |",
        "|---|---|---|---|---|",
    ]
    writes = writers.audited_writes(app)
    for drift, change in changed:
        who = writers.written_by(change, writes.get((drift.key, change.path)))
        git, live = report.cells(change)
        out.append(
            f"| `{drift.key.short()}` | `{model.display_path(change.path)}` | "
            f"{_cell(git, change.desired)} | {_cell(live, change.live)} | "
            f"{inline(who) if who else '_(unknown)_'} |"
        )
    out.append("")
    for finding in app.findings:
        ev = finding.evidence
        lines = []
        write = ev.get("audit")
        if isinstance(write, Mapping):
            lines.append(
                f"audit log: **{write.get('user')}** — `{write.get('verb')}` "
                f"`{write.get('requestURI')}` from `{write.get('userAgent')}` at "
                f"{write.get('time')} (auditID `{write.get('auditID')}`)"
            )
        event = ev.get("event")
        if isinstance(event, Mapping):
            lines.append(
                f"event: {event.get('component')} “{event.get('message')}” at {event.get('time')}"
            )
        commit = ev.get("gitLastChange")
        if isinstance(commit, Mapping):
            lines.append(
                f"git: `{str(commit.get('sha'))[:12]}` “{commit.get('subject')}” by "
                f"{commit.get('author')} on {commit.get('date')} last touched "
                f"`{commit.get('file')}`"
            )
        if lines and finding.key is not None:
            where = f"`{finding.key.short()}`"
            if finding.path:
                where += f" `{model.display_path(finding.path)}`"
            out.append(f"- {where}:")
            out += [f"  - {line}" for line in lines]
    if out[-1] != "":
        out.append("")
    return out


def _root_cause(app: model.AppReport) -> list[str]:
    if not app.findings:
        return []
    out = ["## Root cause", ""]
    shown = report.value_diffs(app)
    for finding in app.findings:
        out.append(f"- {_ICON[finding.severity]} **`{finding.code}`** {inline(finding.message)}")
        diff = shown.pop((finding.key, finding.path), None)
        if diff:
            ticks = fence(diff)
            out += [f"  {ticks}diff", *(f"  {line}".rstrip() for line in diff), f"  {ticks}"]
        if finding.hint:
            out.append(f"  - _next:_ {inline(finding.hint)}")
    out.append("")
    return out


def _remedy(remedy: model.Remedy) -> list[str]:
    out = [f"### {remedy.title}", ""]
    out += [f"- {inline(step)}" for step in remedy.steps]
    if remedy.steps:
        out.append("")
    if remedy.commands:
        out += ["```sh", *remedy.commands, "```", ""]
    if remedy.snippet:
        lang = "diff" if remedy.snippet.startswith("diff --git ") else "yaml"
        out += [f"```{lang}", remedy.snippet.rstrip("\n"), "```", ""]
    return out


def fence(lines: Iterable[str]) -> str:
    """A code fence longer than any run of backticks in `lines` (a value may hold a fence)."""
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    return "`" * max(3, longest + 1)


def inline(text: str) -> str:
    """Text for one line of markdown: `|` escaped (tables), line breaks as spaces (a value's
    `# comment` line must not become a heading)."""
    return " ".join(text.splitlines()).replace("|", "\\|")


def _cell(text: str, value: Any) -> str:
    if value is None:
        return "_(unset)_"
    return "`" + " ".join(text.splitlines()).replace("|", "\\|").replace("`", "'") + "`"
