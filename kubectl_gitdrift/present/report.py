"""Turns a Report into its documented JSON form, text tables, YAML, and --query results."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import changes as lines_of
from kubectl_gitdrift.errors import UsageError
from kubectl_gitdrift.present import color
from kubectl_gitdrift.present import writtenby as writers

SCHEMA_VERSION = "gitdrift/v1"


# --------------------------------------------------------------------------- JSON form


def to_dict(report: model.Report) -> dict[str, Any]:
    """The stable JSON contract (docs/report-schema.md). No timestamps of our own."""
    return _document(report, [_app(a) for a in report.applications])


def _document(report: model.Report, apps: list[Any]) -> dict[str, Any]:
    statuses = [a.sync_status for a in report.applications]
    return {
        "apiVersion": SCHEMA_VERSION,
        "kind": "Report",
        "mode": report.mode,
        "applications": apps,
        "summary": {
            "applications": len(statuses),
            "outOfSync": statuses.count(model.SyncStatus.OUT_OF_SYNC),
            "unknown": statuses.count(model.SyncStatus.UNKNOWN),
        },
    }


def app_json(app: model.AppReport) -> str:
    """One entry of `to_dict(report)["applications"]` as `dumps_json` writes it inside the
    whole report, for `dumps_report_json`: a list item of the top-level mapping, so every line
    after the first is indented four more spaces (JSON strings hold no raw newline: each one
    starts a line of the layout). With --all, each process writes the apps it compared."""
    return _item_json(_app(app))


def dumps_report_json(
    report: model.Report, apps: Sequence[str], extra: Mapping[str, Any] | None = None
) -> str:
    """`dumps_json(to_dict(report) | extra)`, byte for byte, with the applications given as
    `app_json` wrote them (in the report's order) rather than encoded again here."""
    if len(apps) != len(report.applications):
        raise ValueError(f"{len(apps)} application texts for {len(report.applications)} apps")
    return _with_apps({**_document(report, []), **(extra or {})}, apps)


def _item_json(item: Any) -> str:
    """`item` as `dumps_json` writes it as an entry of a list under the top-level mapping."""
    return dumps_json(item)[:-1].replace("\n", "\n    ")


def _with_apps(doc: Mapping[str, Any], apps: Sequence[str]) -> str:
    """`dumps_json(doc)`, its empty "applications" list holding the `_item_json` texts."""
    text = dumps_json(doc)
    if not apps:
        return text
    head, empty, tail = text.partition(_NO_APPS)
    if not empty:
        raise ValueError("the report has no top-level applications list")
    items = ",\n    ".join(apps)
    return head + '\n  "applications": [\n    ' + items + "\n  ],\n" + tail


_NO_APPS = '\n  "applications": [],\n'


def _app(app: model.AppReport) -> dict[str, Any]:
    spec = app.application
    return {
        "name": app.name,
        "namespace": app.namespace,
        "syncPolicy": None if spec is None else _policy(spec.sync_policy),
        "lastSync": None if spec is None or spec.last_sync is None else _history(spec.last_sync),
        "sync": {
            "status": app.sync_status.value,
            "argocdStatus": app.argocd_sync_status or None,
            "revision": app.revision,
            "source": app.source,
        },
        "strategy": {"name": app.strategy.value, "reason": app.strategy_reason or None},
        "resources": [_resource(d) for d in app.resources],
        "findings": [finding_dict(f) for f in app.findings],
        "remedies": [_remedy(r) for r in app.remedies],
        "notes": list(app.notes),
    }


def _policy(policy: model.SyncPolicy) -> dict[str, Any]:
    return {
        "automated": policy.automated,
        "prune": policy.prune,
        "selfHeal": policy.self_heal,
        "syncOptions": list(policy.sync_options),
    }


def _history(entry: model.HistoryEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "revision": entry.revision,
        "deployedAt": entry.deployed_at,
        "automated": entry.automated,
        "initiatedBy": entry.initiated_by or None,
    }


def key_dict(key: model.ObjectKey) -> dict[str, str]:
    """An object's key as the report writes it (a finding's resource; preview's too)."""
    return {"group": key.group, "kind": key.kind, "namespace": key.namespace, "name": key.name}


def owner_dict(owner: model.Owner | None) -> dict[str, Any] | None:
    """Who wrote a field, as a change's owner (and preview's overwrites) has it."""
    if owner is None:
        return None
    return {
        "manager": owner.manager,
        "operation": owner.operation,
        "subresource": owner.subresource or None,
        "time": owner.time,
    }


_STATUS = {status: status.value or None for status in model.ResourceStatus}


def _resource(drift: model.Drift) -> dict[str, Any]:
    """One resource (10,000 of them in a 500-app `--all`: written out flat, most without a
    change)."""
    key = drift.key
    changes: list[dict[str, Any]] = []
    suppressed: list[dict[str, Any]] = []
    if drift.changes or drift.suppressed:
        side = drift.live if drift.live is not None else drift.desired
        changes = [_change(c, side) for c in drift.changes]
        suppressed = [
            {**_change(s.change, side), "rule": s.rule, "plugin": s.plugin}
            for s in drift.suppressed
        ]
    return {
        "group": key.group,
        "kind": key.kind,
        "namespace": key.namespace,
        "name": key.name,
        "status": _STATUS[drift.status],
        "origin": drift.origin,
        "reason": drift.reason or None,
        "changes": changes,
        "suppressed": suppressed,
    }


def _change(change: model.Change, side: Any) -> dict[str, Any]:
    return {
        "op": change.op.value,
        "path": model.display_path(change.path),
        "pointer": model.pointer(change.path, side),
        "desired": change.desired,
        "live": change.live,
        "secret": change.secret,
        "owner": owner_dict(change.owner),
    }


def finding_dict(finding: model.Finding) -> dict[str, Any]:
    """A finding as the report's findings[] has it (report-schema.md); preview's notFixed too."""
    return {
        "code": finding.code,
        "severity": finding.severity.name.lower(),
        "message": finding.message,
        "resource": key_dict(finding.key) if finding.key else None,
        "path": model.display_path(finding.path) if finding.path else None,
        "evidence": dict(finding.evidence),
        "hint": finding.hint,
        "rule": finding.rule,
        "plugin": finding.plugin,
    }


def _remedy(remedy: model.Remedy) -> dict[str, Any]:
    return {
        "kind": remedy.kind.value,
        "title": remedy.title,
        "steps": list(remedy.steps),
        "commands": list(remedy.commands),
        "file": remedy.file,
        "line": remedy.line,
        "snippet": remedy.snippet,
    }


def render_json(report: model.Report) -> str:
    return dumps_json(to_dict(report))


def dumps_json(doc: Any) -> str:
    """`json.dumps(doc, indent=2, sort_keys=True) + "\n"`, byte for byte, in a fifth of the time
    for a big document (json indents in Python: 0.22 s for the 7 MB of a 500-app `--all`).

    json's C encoder writes the document compact (the same key order, strings, numbers and
    errors as its Python encoder: they share `encode_basestring_ascii`, `float.__repr__` and
    `sorted(items)`), and msgspec's formatter, which copies strings and numbers as written,
    indents it as json does. Anything else goes the old way, which decides: an error (not
    JSON-serializable, a circular reference, a recursion past the limit), NaN or Infinity
    (which msgspec refuses), nesting of FORMAT_MAX_DEPTH levels or more (json's Python
    encoder recurses once per level and must not be the one to run out), and a small
    document while msgspec is not imported (importing it would cost more than it saves).
    tests/present/test_report_json.py compares the two on every scenario's report and on generated
    documents."""
    text = _formatted(doc)
    if text is None:
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"
    return text


def _formatted(doc: Any) -> str | None:
    """`dumps_json`'s fast way, or None when the old way must decide."""
    try:
        compact = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        if len(compact) < _MSGSPEC_CHARS and "msgspec" not in sys.modules:
            return None
        import msgspec  # a big report is worth it

        text: str = msgspec.json.format(compact, indent=2)
    except (TypeError, ValueError, RecursionError):  # the old way raises what it raises
        return None
    return None if _TOO_DEEP in text else text + "\n"


FORMAT_MAX_DEPTH = 400
"""Documents nested this deep are indented by json itself (see `dumps_json`)."""
_TOO_DEEP = "\n" + " " * (2 * FORMAT_MAX_DEPTH)
_MSGSPEC_CHARS = 1 << 16


def render_yaml(report: model.Report) -> str:
    return yaml.safe_dump(to_dict(report), sort_keys=True, default_flow_style=False)


def query(data: Mapping[str, Any], expression: str) -> str:
    """--query: JMESPath over the JSON form; a bad expression is a usage error naming the flag."""
    import jmespath  # only --query needs it (start-up, issue 18)
    import jmespath.exceptions

    try:
        compiled = jmespath.compile(expression)
    except jmespath.exceptions.JMESPathError as exc:
        raise UsageError(f"--query {expression!r}: {str(exc).splitlines()[0]}") from None
    result = compiled.search(data)
    if isinstance(result, str):
        return result + "\n"
    return dumps_json(result)


# --------------------------------------------------------------------------- text


_MARK = {model.Severity.ERROR: "✗", model.Severity.WARNING: "!", model.Severity.INFO: "i"}


TEXT_WIDTH = 100
"""Where prose wraps when the CLI knows no terminal width (a pipe, a file): stable output."""


def render_text(
    report: model.Report,
    *,
    show_suppressed: bool = False,
    palette: color.Palette = color.OFF,
    width: int | None = None,
) -> str:
    """The human report: what differs, who wrote it, why it persists, how to fix it. With an
    enabled `palette` (the CLI's choice, for a terminal) statuses, severities, section titles
    and table headers are coloured; the text is otherwise the same. With a terminal's `width`
    prose wraps there and tables are cut to fit it; None (a pipe, a file) is the stable
    layout: prose at TEXT_WIDTH, tables whole."""
    return "\n".join(_text_app(a, show_suppressed, palette, width) for a in report.applications)


def _text_app(
    app: model.AppReport, show_suppressed: bool, palette: color.Palette, fit: int | None
) -> str:
    from tabulate import tabulate  # only text needs it (it reads importlib.metadata; issue 18)

    paint = palette
    width = fit or TEXT_WIDTH
    lines = [
        f"Application {app.namespace}/{app.name}: {paint.status(app.sync_status.value)}"
        + (
            f" (Argo CD says {paint.status(app.argocd_sync_status)})"
            if app.argocd_sync_status
            else ""
        ),
        f"Source: {app.source}",
        f"Diff: {app.strategy.value}"
        + (f" ({app.strategy_reason})" if app.strategy_reason else ""),
    ]
    spec = app.application
    if spec is not None:
        lines.append(f"Sync policy: {_policy_text(spec.sync_policy)}")
        last = spec.last_sync
        if last is not None:
            by = "automated" if last.automated else (last.initiated_by or "manual")
            lines.append(f"Last sync: {last.revision[:12]} at {last.deployed_at} ({by})")
    lines.append("")
    rows = [
        [d.key.display(), paint.status(d.status.value or "-"), len(d.changes) or ""]
        for d in app.resources
    ]
    lines.append(
        paint.header(tabulate(rows, headers=["RESOURCE", "STATUS", "CHANGES"], tablefmt="simple"))
    )
    changed = [(d, c) for d in app.resources for c in d.changes]
    if changed:
        lines += ["", paint.title("DRIFT")]
        writes = writers.audited_writes(app)
        table = [
            [
                d.key.short(),
                model.display_path(c.path),
                *cells(c),
                writers.written_by(c, writes.get((d.key, c.path))) or "(unknown)",
            ]
            for d, c in changed
        ]
        headers = ["RESOURCE", "FIELD", "GIT", "LIVE", "WRITTEN BY"]
        table = _fitted(table, headers, fit, shrink=(2, 3, 4, 0))
        lines.append(
            paint.header(
                tabulate(
                    table,
                    headers=headers,
                    tablefmt="simple",
                    disable_numparse=True,
                )
            )
        )
    suppressed = [(d, s) for d in app.resources for s in d.suppressed]
    if suppressed and show_suppressed:
        lines += ["", paint.title("SUPPRESSED (not counted as drift)")]
        table = [
            [
                d.key.short(),
                model.display_path(s.change.path),
                *cells(s.change),
                s.rule,
                s.plugin,
            ]
            for d, s in suppressed
        ]
        headers = ["RESOURCE", "FIELD", "GIT", "LIVE", "RULE", "PLUGIN"]
        table = _fitted(table, headers, fit, shrink=(4, 2, 3, 0))
        lines.append(
            paint.header(
                tabulate(
                    table,
                    headers=headers,
                    tablefmt="simple",
                    disable_numparse=True,
                )
            )
        )
    elif suppressed:
        lines += [
            "",
            f"{len(suppressed)} difference(s) hidden by ignore rules (--show-suppressed).",
        ]
    unknown = [d for d in app.resources if d.status is model.ResourceStatus.UNKNOWN]
    for drift in unknown:
        lines.append(f"{paint.status('Unknown')}: {drift.key.short()}: {drift.reason}")
    if app.findings:
        lines += ["", paint.title("WHY")]
        shown = value_diffs(app)
        for f in app.findings:
            mark = _MARK[f.severity]
            wrapped = _wrap(f"{mark} [{f.code}] {f.message}", "    ", width=width)
            wrapped[0] = paint.severity(mark) + wrapped[0][len(mark) :]
            lines += wrapped
            lines += [f"    {line}".rstrip() for line in shown.pop((f.key, f.path), ())]
    fixes = [r for r in app.remedies if r.kind in model.FIX_KINDS]
    sections = [
        ("FIX (pick one)", fixes),
        ("PREVENT", [r for r in app.remedies if r.kind is model.RemedyKind.PREVENT]),
        ("VERIFY", [r for r in app.remedies if r.kind is model.RemedyKind.VERIFY]),
    ]
    for title, remedies in sections:
        if not remedies:
            continue
        lines += ["", paint.title(title)]
        for n, remedy in enumerate(remedies, 1):
            if len(remedies) > 1:
                lines.append(f"{n}. {remedy.title}")
            for step in remedy.steps:
                lines += _wrap(f"- {step}", "    ", indent="  ", width=width)
            for command in remedy.commands:
                lines.append(f"  $ {command}")
    if app.notes:
        lines += ["", paint.title("NOTES")]
        for note in app.notes:
            lines += _wrap(f"- {note}", "    ", width=width)
    return "\n".join(lines) + "\n"


def _policy_text(policy: model.SyncPolicy) -> str:
    if not policy.automated:
        return "manual (automated sync off)"
    flags = [f"prune: {str(policy.prune).lower()}", f"selfHeal: {str(policy.self_heal).lower()}"]
    return f"automated ({', '.join(flags)})"


def _wrap(text: str, subsequent: str, indent: str = "", width: int = TEXT_WIDTH) -> list[str]:
    return textwrap.wrap(
        text,
        width=max(40, width),
        initial_indent=indent,
        subsequent_indent=indent + subsequent,
        break_on_hyphens=False,
        break_long_words=False,
    )


def _fitted(
    rows: list[list[Any]], headers: list[str], width: int | None, shrink: tuple[int, ...]
) -> list[list[Any]]:
    """The rows with the `shrink` columns cut (widest first, with …) until the table, laid out
    as tabulate's simple format does (two spaces between columns, headers padded by two), fits
    `width`; None: as they are."""
    if width is None or not rows:
        return rows
    cells = [[str(c) for c in row] for row in rows]

    def widths() -> list[int]:
        # tabulate pads a header by 2 (MIN_PADDING) when its cells are narrower
        return [max(len(headers[i]) + 2, *(len(r[i]) for r in cells)) for i in range(len(headers))]

    floor = 8
    while sum(widths()) + 2 * (len(headers) - 1) > width:
        current = widths()
        candidates = [i for i in shrink if current[i] > max(floor, len(headers[i]) + 2)]
        if not candidates:
            break
        widest = max(candidates, key=lambda i: current[i])
        over = sum(current) + 2 * (len(headers) - 1) - width
        target = max(floor, len(headers[widest]) + 2, current[widest] - over)
        for r in cells:
            if len(r[widest]) > target:
                r[widest] = r[widest][: target - 1] + "…"
    return [list(r) for r in cells]


def cells(change: model.Change) -> tuple[str, str]:
    """The GIT and LIVE cells of a changed field: the values, cut to fit; for multi-line text,
    git's line count and the live side's line summary (`-1 +1 lines: <first changed line>`)."""
    desired, live = change.desired, change.live
    if change.secret or not lines_of.multiline(desired, live):
        return _cell(desired), _cell(live)
    git = lines_of.line_count(desired) if isinstance(desired, str) else _cell(desired)
    if not isinstance(live, str):
        return git, _cell(live)
    if not isinstance(desired, str):
        return git, lines_of.line_count(live)
    return git, lines_of.line_summary(desired, live)


def value_diffs(
    app: model.AppReport,
) -> dict[tuple[model.ObjectKey | None, model.FieldPath | None], list[str]]:
    """(resource, field) -> the differing lines of each multi-line text value that drifted (a
    unified diff of git's value against the live one), for WHY to show below the first finding
    about the field. Never a Secret's."""
    out: dict[tuple[model.ObjectKey | None, model.FieldPath | None], list[str]] = {}
    for drift in app.resources:
        if (drift.key.group, drift.key.kind) == ("", "Secret"):
            continue
        for change in drift.changes:
            if not change.secret and lines_of.multiline(change.desired, change.live):
                out[(drift.key, change.path)] = lines_of.line_diff(change.desired, change.live)
    return out


def _cell(value: Any) -> str:
    if value is None:
        return "(unset)"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."
