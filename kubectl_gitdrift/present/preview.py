"""`kubectl gitdrift preview`'s three outputs of a model.Preview: text for a terminal, the
stable JSON document (`kind: Preview`, docs/report-schema.md), and markdown for a pull
request's comment, cut or split to stay under GitHub's 65,536 characters.

What a reviewer reads first comes first: one header line (base..head, how many apps the change
touches), then per app what its render does between base and head (objects added `+`, removed
`-`, changed `~` with each field as `spec.replicas: 3 -> 5`) and, with a live source, what
syncing head would do there and what it would leave as it is. Secret values arrive masked
(`++++++++` tokens); any that does not is masked here before it is written.

Pure: data in, text out. Deterministic: apps in the preview's order (by name), objects by key,
JSON with sorted keys, no timestamps of its own.
"""

from __future__ import annotations

import difflib
import json
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import changes as lines_of
from kubectl_gitdrift.compare import masking
from kubectl_gitdrift.present import color, markdown, report
from kubectl_gitdrift.present import writtenby as writers

__all__ = [
    "GITHUB_LIMIT",
    "MARKER",
    "MIN_CHARS",
    "effect_text",
    "render_json",
    "render_markdown",
    "render_text",
    "to_dict",
]

GITHUB_LIMIT = 65536
"""The most characters GitHub takes in one issue or pull request comment."""
MIN_CHARS = 1024
"""The smallest --max-chars: a part holds its header, one table row and a cut section."""
MARKER = "<!-- kubectl-gitdrift preview"
"""How each markdown part starts (an HTML comment, not shown): a workflow finds the comments
it posted before by it, to update them."""
SHORT = 12
"""Characters of a commit sha shown (as the main report shows revisions)."""
TOUCHED_SHOWN = 20
"""Changed files named per app in markdown (the text and JSON name them all)."""

_SIGN = {
    model.PreviewAction.ADDED: "+",
    model.PreviewAction.REMOVED: "-",
    model.PreviewAction.CHANGED: "~",
}
_MARK = {model.Severity.ERROR: "✗", model.Severity.WARNING: "!", model.Severity.INFO: "i"}


# --------------------------------------------------------------------------- values


def _is_token(value: Any) -> bool:
    return isinstance(value, str) and len(value) >= masking.MASK_SEED and set(value) == {"+"}


class _Guard:
    """Defence in depth: a Secret's value that is not a mask token is masked here, one token
    per distinct value of a field (as Argo CD masks), before anything writes it."""

    def __init__(self) -> None:
        self._masker = masking.Masker()

    def value(self, field: str, value: Any, secret: bool) -> Any:
        if not secret or value is None or _is_token(value):
            return value
        if isinstance(value, dict):
            return {k: self.value(f"{field}.{k}", v, secret) for k, v in value.items()}
        return self._masker.token(field, value)


def compact(value: Any) -> str:
    """One value on one line: strings bare (quoted when empty or padded), the rest as compact
    JSON; `(unset)` for a field one side lacks."""
    if value is None:
        return "(unset)"
    if isinstance(value, str):
        return (
            value if value and value == value.strip() and "\n" not in value else json.dumps(value)
        )
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _cut(text: str, room: int) -> str:
    return text if len(text) <= room else text[: max(1, room - 1)] + "…"


def _pair(old: Any, new: Any) -> tuple[str, str]:
    """The two sides of a changed field as the text shows them: multi-line text by its line
    count and what changed in it (as the main report's cells), the rest compact."""
    if lines_of.multiline(old, new):
        left = lines_of.line_count(old) if isinstance(old, str) else compact(old)
        right = lines_of.line_summary(old, new) if isinstance(new, str) else compact(new)
        return left, right
    return compact(old), compact(new)


def _edit_line(indent: str, edit: model.Edit, width: int, guard: _Guard) -> str:
    """`spec.replicas: 3 -> 5`, the values cut (never the path) so that it fits `width`."""
    path = model.display_path(edit.path)
    base = guard.value(path, edit.base, edit.secret)
    head = guard.value(path, edit.head, edit.secret)
    left, right = _pair(base, head)
    prefix = f"{indent}{path}: "
    left, right = _fit_pair(left, right, width - len(prefix) - len(" -> "))
    return f"{prefix}{left} -> {right}"


def _fit_pair(left: str, right: str, room: int) -> tuple[str, str]:
    """Two values cut to `room` characters together, keeping where they differ: a long common
    start is replaced by `…` first (`…1.25 -> …1.26`), then each is cut at its end."""
    if len(left) + len(right) <= room:
        return left, right
    same = next(
        (i for i, (a, b) in enumerate(zip(left, right, strict=False)) if a != b),
        min(len(left), len(right)),
    )
    if same > 4 and len(left) > same - 3 and len(right) > same - 3:
        # from the last separator before they differ: `…guestbook:1.4 -> …guestbook:1.5`
        cut = (left.rfind("/", 0, same) + 1) or (max(left.rfind(c, 0, same) for c in ":@= ") + 1)
        cut = cut or same - 3
        left, right = "…" + left[cut:], "…" + right[cut:]
    if len(left) + len(right) <= room:
        return left, right
    half = max(8, room // 2)
    if len(left) < half:
        return left, _cut(right, max(8, room - len(left)))
    if len(right) < half:
        return _cut(left, max(8, room - len(right))), right
    return _cut(left, half), _cut(right, max(8, room - half))


def counts(app: model.AppPreview) -> tuple[int, int, int]:
    """Objects (added, removed, changed) of an app's render, base to head."""
    actions = [o.action for o in app.objects]
    return (
        actions.count(model.PreviewAction.ADDED),
        actions.count(model.PreviewAction.REMOVED),
        actions.count(model.PreviewAction.CHANGED),
    )


def _counts_text(app: model.AppPreview) -> str:
    added, removed, changed = counts(app)
    return f"+{added} -{removed} ~{changed}"


def _objects(app: model.AppPreview) -> list[model.ObjectChange]:
    return sorted(app.objects, key=lambda o: (o.key, o.action.value))


def effect_text(effect: model.SyncEffect, code: Callable[[str], str] = str) -> str:
    """What one SyncEffect does, in a sentence's words: `set spec.replicas of apps/Deployment
    prod/web back to 3 (live: 5), overwriting the change by kubectl (Update, /scale, <time>)`.
    `code` marks names and values (markdown's backticks; plain text leaves them)."""
    where = code(effect.key.display())
    path = model.display_path(effect.path or ())
    field = path or "(object)"
    guard = _Guard()
    live = compact(guard.value(field, effect.live, effect.secret))
    head = compact(guard.value(field, effect.head, effect.secret))
    if effect.action == "create":
        text = f"create {where}"
    elif effect.action == "delete":
        text = f"delete {where} (pruned)"
    elif effect.action == "remove" and path:
        text = f"remove {code(path)} from {where} (live: {code(live)})"
    elif effect.action == "set" and path:
        back = " back" if effect.overwrites is not None else ""
        text = f"set {code(path)} of {where}{back} to {code(head)} (live: {code(live)})"
    else:
        text = f"{effect.action} {code(path)} of {where}" if path else f"{effect.action} {where}"
    if effect.overwrites is not None:
        written = model.Change(
            model.Op.CHANGE, effect.path or (), effect.head, effect.live, effect.overwrites
        )
        text += f", overwriting the change by {writers.written_by(written)}"
    return text


def _finding_text(finding: model.Finding) -> str:
    return f"[{finding.code}] {finding.message}"


def _live_summary(preview: model.Preview, app: model.AppPreview) -> str:
    """The summary table's live column: what syncing head does, in counts."""
    if not preview.live or app.action is model.PreviewAction.FAILED:
        return "—"
    if not app.sync and not app.not_fixed:
        return "nothing to sync"
    parts = [f"{len(app.sync)} to sync"] if app.sync else []
    overwrites = sum(1 for e in app.sync if e.overwrites is not None)
    if overwrites == 1:
        parts.append("1 overwrites a manual change")
    elif overwrites:
        parts.append(f"{overwrites} overwrite manual changes")
    if app.not_fixed:
        parts.append(f"{len(app.not_fixed)} not fixed")
    return ", ".join(parts)


def _touched(preview: model.Preview) -> str:
    total = len(preview.apps) + preview.untouched
    return f"{len(preview.apps)} of {total} app{'s' if total != 1 else ''} touched"


def _tally(preview: model.Preview) -> str:
    """`1 added, 2 changed`: how many touched apps do what (the actions there are)."""
    order = list(model.PreviewAction)
    found = [a.action for a in preview.apps]
    return ", ".join(f"{found.count(a)} {a.value}" for a in order if a in found)


def _quiet(app: model.AppPreview) -> bool:
    """Touched, renders the same, and nothing else to say: one line (text), a row (markdown)."""
    return app.action is model.PreviewAction.UNCHANGED and not (
        app.objects or app.spec or app.sync or app.not_fixed or app.notes or app.error
    )


# --------------------------------------------------------------------------- text


def render_text(
    preview: model.Preview, *, palette: color.Palette = color.OFF, width: int | None = None
) -> str:
    """The human form. `width`: the terminal's (prose wraps there, values are cut to fit it);
    None, a pipe or a file: report.TEXT_WIDTH, the same whatever terminal started it."""
    fit = max(40, width or report.TEXT_WIDTH)
    head = (
        f"Preview {preview.base[:SHORT]}..{preview.head[:SHORT]} "
        f"({preview.base_ref}..{preview.head_ref}): {_touched(preview)}"
    )
    if preview.apps:
        head += f" ({_tally(preview)})"
    if preview.live:
        head += f", live: {preview.live}"
    # one line into a pipe (grep-able); a terminal narrower than it gets it wrapped
    out = [palette.title(line) for line in (_wrap(head, "", "  ", fit) if width else [head])]
    if not preview.apps:
        out += ["", "No Application is touched by this change."]
    for app in preview.apps:
        out += ["", *_text_app(preview, app, palette, fit)]
    return "\n".join(out) + "\n"


def _wrap(text: str, indent: str, subsequent: str, width: int) -> list[str]:
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=indent,
        subsequent_indent=subsequent,
        break_on_hyphens=False,
        break_long_words=False,
    ) or [indent.rstrip()]


def _text_app(
    preview: model.Preview, app: model.AppPreview, paint: color.Palette, width: int
) -> list[str]:
    action = app.action.value
    if app.action is model.PreviewAction.FAILED:
        action = paint.removed(action)
    title = f"{app.name}: {action}"
    if app.objects:
        title += f" ({_counts_text(app)})"
    if _quiet(app):
        return [paint.title(app.name) + f": {action} (renders the same)"]
    lines = [paint.title(app.name) + title[len(app.name) :]]
    lines += _wrap(f"origin: {app.origin}", "  ", "      ", width)
    if app.source:
        lines += _wrap(f"source: {app.source}", "  ", "      ", width)
    if app.touched_by:
        lines += _wrap("touched by: " + ", ".join(app.touched_by), "  ", "      ", width)
    if app.error:
        lines += _wrap(f"error: {app.error}", "  ", "      ", width)
    guard = _Guard()
    if app.spec:
        lines.append("  ~ the Application's spec")
        lines += [_edit_line("      ", e, width, guard) for e in app.spec]
    for obj in _objects(app):
        sign = _SIGN.get(obj.action, "?")
        line = f"  {sign} {obj.key.display()}"
        if obj.origin and len(line) + len(obj.origin) + 3 <= width:
            line += f"  ({obj.origin})"
        paint_line = {"+": paint.added, "-": paint.removed, "~": paint.hunk}.get(sign, str)
        lines.append(paint_line(line))
        lines += [_edit_line("      ", e, width, guard) for e in obj.edits]
    if app.sync:
        lines.append("  " + paint.title("Syncing head would:"))
        for effect in _effects(app):
            lines += _wrap(f"- {effect_text(effect)}", "    ", "      ", width)
    if app.not_fixed:
        lines.append("  " + paint.title("It would not fix:"))
        for finding in sorted(app.not_fixed, key=model.Finding.sort_key):
            mark = _MARK.get(finding.severity, "-")
            wrapped = _wrap(f"{mark} {_finding_text(finding)}", "    ", "      ", width)
            wrapped[0] = wrapped[0].replace(mark, paint.severity(mark), 1)
            lines += wrapped
    if app.notes:
        lines.append("  " + paint.title("Notes:"))
        for note in app.notes:
            lines += _wrap(f"- {note}", "    ", "      ", width)
    return lines


def _effects(app: model.AppPreview) -> list[model.SyncEffect]:
    return sorted(app.sync, key=lambda e: (e.key, model.display_path(e.path or ()), e.action))


# --------------------------------------------------------------------------- JSON


def to_dict(preview: model.Preview) -> dict[str, Any]:
    """The stable document of `preview -o json` (docs/report-schema.md, "kind: Preview")."""
    apps = preview.apps
    return {
        "apiVersion": report.SCHEMA_VERSION,
        "kind": "Preview",
        "base": {"sha": preview.base, "ref": preview.base_ref},
        "head": {"sha": preview.head, "ref": preview.head_ref},
        "live": preview.live or None,
        "changed": preview.changed,
        "summary": {
            "touched": len(apps),
            "untouched": preview.untouched,
            **{a.value: sum(1 for x in apps if x.action is a) for a in model.PreviewAction},
            "syncEffects": sum(len(a.sync) for a in apps),
            "overwrites": sum(1 for a in apps for e in a.sync if e.overwrites is not None),
            "notFixed": sum(len(a.not_fixed) for a in apps),
        },
        "apps": [_app_dict(a) for a in apps],
    }


def _app_dict(app: model.AppPreview) -> dict[str, Any]:
    namespace, _, name = app.name.rpartition("/")
    guard = _Guard()
    added, removed, changed = counts(app)
    return {
        "name": name,
        "namespace": namespace,
        "action": app.action.value,
        "origin": app.origin,
        "source": app.source or None,
        "touchedBy": list(app.touched_by),
        "counts": {"added": added, "removed": removed, "changed": changed},
        "objects": [
            {
                **report.key_dict(o.key),
                "action": o.action.value,
                "origin": o.origin,
                "edits": [_edit_dict(e, guard) for e in o.edits],
            }
            for o in _objects(app)
        ],
        "spec": [_edit_dict(e, guard) for e in app.spec],
        "sync": [_effect_dict(e, guard) for e in _effects(app)],
        "notFixed": [
            report.finding_dict(f) for f in sorted(app.not_fixed, key=model.Finding.sort_key)
        ],
        "error": app.error or None,
        "notes": list(app.notes),
    }


def _edit_dict(edit: model.Edit, guard: _Guard) -> dict[str, Any]:
    path = model.display_path(edit.path)
    return {
        "op": edit.op.value,
        "path": path,
        "base": guard.value(path, edit.base, edit.secret),
        "head": guard.value(path, edit.head, edit.secret),
        "secret": edit.secret,
    }


def _effect_dict(effect: model.SyncEffect, guard: _Guard) -> dict[str, Any]:
    path = model.display_path(effect.path) if effect.path is not None else None
    return {
        "resource": report.key_dict(effect.key),
        "action": effect.action,
        "path": path,
        "live": guard.value(path or "", effect.live, effect.secret),
        "head": guard.value(path or "", effect.head, effect.secret),
        "secret": effect.secret,
        "overwrites": report.owner_dict(effect.overwrites),
    }


def render_json(preview: model.Preview) -> str:
    return report.dumps_json(to_dict(preview))


# --------------------------------------------------------------------------- markdown


def render_markdown(
    preview: model.Preview, *, max_chars: int = GITHUB_LIMIT, split: bool = False
) -> list[str]:
    """The PR comment: a summary table first (app, action, objects +/-/~, live effects), then
    one collapsible section per app with a ```diff block. Each text returned is under
    `max_chars` characters: one without `split` (whole app sections cut from the end, and a
    note naming the apps left out), several with it (numbered parts, each with the table's
    rows of its own apps). A section larger than a comment by itself is cut inside, with a
    note."""
    max_chars = max(MIN_CHARS, max_chars)
    apps = list(preview.apps)
    rows = [_row(preview, a) for a in apps]
    sections = [None if _quiet(a) else _section(a) for a in apps]
    if split:
        return _parts(preview, apps, rows, sections, max_chars)
    return [_single(preview, apps, rows, sections, max_chars)]


_TABLE_HEAD = ["| App | Action | Objects +/-/~ | Live effects |", "|---|---|---|---|"]


def _row(preview: model.Preview, app: model.AppPreview) -> str:
    action = (
        f"**{app.action.value}**" if app.action is model.PreviewAction.FAILED else app.action.value
    )
    objects = _counts_text(app) if app.objects else "—"
    live = markdown.inline(_live_summary(preview, app))
    return f"| `{_code(app.name)}` | {action} | {objects} | {live} |"


def _head(preview: model.Preview, rows: Sequence[str], part: tuple[int, int] | None = None) -> str:
    """A comment's start: the marker, the title, the totals, the summary table of `rows`."""
    numbered = f": part {part[0]} of {part[1]}" if part else ""
    lines = [
        f"{MARKER}{numbered} -->",
        f"### gitdrift preview `{preview.base[:SHORT]}`..`{preview.head[:SHORT]}`"
        + (f" (part {part[0]} of {part[1]})" if part else ""),
        "",
    ]
    totals = f"{_touched(preview)}"
    if preview.apps:
        totals += f": {_tally(preview)}"
    totals += f". Base `{_code(preview.base_ref)}`, head `{_code(preview.head_ref)}`"
    totals += f"; live: {markdown.inline(preview.live)}." if preview.live else "; no live state."
    lines.append(totals)
    lines.append("")
    if not preview.apps:
        lines += ["No Application is touched by this change.", ""]
    elif rows:
        lines += [*_TABLE_HEAD, *rows, ""]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class _Section:
    name: str
    lines: tuple[str, ...]
    fence: str

    @property
    def size(self) -> int:
        return sum(len(line) + 1 for line in self.lines)

    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


def _section(app: model.AppPreview) -> _Section:
    diff = _diff_lines(app)
    fence = markdown.fence(diff)
    added, removed, changed = counts(app)
    summary = f"<code>{_html(app.name)}</code>: {app.action.value}"
    if app.objects:
        summary += f" (+{added} -{removed} ~{changed})"
    lines = [f"<details><summary>{summary}</summary>", ""]
    facts = [f"Origin `{_code(app.origin)}`"]
    if app.source:
        facts.append(f"source `{_code(app.source)}`")
    if app.touched_by:
        files = [f"`{_code(f)}`" for f in app.touched_by[:TOUCHED_SHOWN]]
        more = len(app.touched_by) - TOUCHED_SHOWN
        facts.append("touched by " + ", ".join(files) + (f" and {more} more" if more > 0 else ""))
    lines += [markdown.inline("; ".join(facts)) + ".", ""]
    if app.error:
        lines += [f"> **error:** {markdown.inline(app.error)}", ""]
    if diff:
        lines += [f"{fence}diff", *diff, fence, ""]
    if app.sync:
        lines += ["**Syncing head would:**", ""]
        lines += [f"- {markdown.inline(effect_text(e, _backticks))}" for e in _effects(app)]
        lines.append("")
    if app.not_fixed:
        lines += ["**It would not fix:**", ""]
        for finding in sorted(app.not_fixed, key=model.Finding.sort_key):
            lines.append(f"- `{finding.code}` {markdown.inline(finding.message)}")
        lines.append("")
    if app.notes:
        lines += ["**Notes:**", "", *(f"- {markdown.inline(n)}" for n in app.notes), ""]
    lines += ["</details>", ""]
    return _Section(app.name, tuple(lines), fence)


def _diff_lines(app: model.AppPreview) -> list[str]:
    """The ```diff block: `@@ key @@` over a changed object's fields (`-` base, `+` head),
    `+ key (added)`, `- key (removed)`; multi-line values line by line."""
    guard = _Guard()
    out: list[str] = []
    if app.spec:
        out.append("@@ the Application's spec @@")
        for edit in app.spec:
            out += _edit_diff(edit, guard)
    for obj in _objects(app):
        where = f" (in {obj.origin})" if obj.origin else ""
        if obj.action is model.PreviewAction.CHANGED:
            out.append(f"@@ {obj.key.display()}{where} @@")
            for edit in obj.edits:
                out += _edit_diff(edit, guard)
        else:
            sign = _SIGN.get(obj.action, " ")
            inside = f", in {obj.origin}" if obj.origin else ""
            out.append(f"{sign} {obj.key.display()} ({obj.action.value}{inside})")
    return out


def _edit_diff(edit: model.Edit, guard: _Guard) -> list[str]:
    path = model.display_path(edit.path)
    base = guard.value(path, edit.base, edit.secret)
    head = guard.value(path, edit.head, edit.secret)
    if lines_of.multiline(base, head):
        old = base.splitlines() if isinstance(base, str) else []
        new = head.splitlines() if isinstance(head, str) else []
        body = list(difflib.unified_diff(old, new, n=1, lineterm=""))[2:]  # no file headers
        out = [f" {path}: |"]
        for line in body:
            if line.startswith("@@"):  # a hunk: after the first, a gap between two
                if len(out) > 1:
                    out.append("    …")
            elif line:
                out.append(line[0] + "   " + line[1:])
        return out
    out = []
    if edit.op is not model.Op.ADD:
        out.append(f"-{path}: {compact(base)}")
    if edit.op is not model.Op.REMOVE:
        out.append(f"+{path}: {compact(head)}")
    return out


def _code(text: str) -> str:
    """Text for inside a code span: no backtick ends it early."""
    return " ".join(text.splitlines()).replace("`", "'")


def _backticks(text: str) -> str:
    return f"`{_code(text)}`"


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cut_section(section: _Section, budget: int, max_chars: int) -> _Section | None:
    """The section, cut inside to `budget` characters: whole lines kept from its start, the
    diff fence closed, a note of what is left out, `</details>`. None: not even its first line
    fits."""
    if section.size <= budget:
        return section

    def closing(inside: bool, left: int) -> list[str]:
        note = (
            f"_… {left} more line{'s' if left > 1 else ''} of `{_code(section.name)}` left out: "
            f"the section is over the {max_chars:,}-character limit of a comment; run "
            "`kubectl gitdrift preview` for all of it._"
        )
        return [*([section.fence] if inside else []), "", note, "", "</details>", ""]

    kept: list[str] = []
    size, inside = 0, False
    lines = section.lines[:-2]  # without its own "</details>" and the blank line after it
    for number, line in enumerate(lines):
        opens = line.startswith(section.fence) and line.strip("`") in ("", "diff")
        after = inside != opens
        end = closing(after, len(lines) - number - 1)
        if size + len(line) + 1 + sum(len(c) + 1 for c in end) > budget:
            break
        kept.append(line)
        size += len(line) + 1
        inside = after
    if not kept:
        return None
    return _Section(section.name, (*kept, *closing(inside, len(lines) - len(kept))), section.fence)


def _note_room(max_chars: int) -> int:
    """What the note naming the apps left out may take of a comment."""
    return max(300, max_chars // 16)


def _left_out_note(names: Sequence[str], max_chars: int) -> str:
    """`_Left out ...: 3 apps, `a`, `b` and 1 more. ..._`, naming as many as fit in
    `_note_room(max_chars)` characters."""
    count = len(names)
    head = (
        f"_Left out to stay under the {max_chars:,}-character limit of a comment: "
        f"{count} app{'s' if count > 1 else ''}"
    )
    tail = ". `--split` posts every app, as numbered parts._\n"
    room = _note_room(max_chars) - len(head) - len(tail)
    shown: list[str] = []
    for i, name in enumerate(names):
        rest = count - i - 1
        listed = ", ".join([*shown, f"`{_code(name)}`"]) + (f" and {rest} more" if rest else "")
        if len(listed) + 2 > room:
            break
        shown.append(f"`{_code(name)}`")
    rest = count - len(shown)
    if shown:
        head += ", " + ", ".join(shown) + (f" and {rest} more" if rest else "")
    return head + tail


def _single(
    preview: model.Preview,
    apps: Sequence[model.AppPreview],
    rows: Sequence[str],
    sections: Sequence[_Section | None],
    max_chars: int,
) -> str:
    """One comment: the table, then whole sections from the first while they fit, then a note
    naming the apps left out. A table too long by itself loses rows from the end too."""
    room = _note_room(max_chars)
    fixed = len(_head(preview, ()))
    keep_rows = 0
    size = fixed + (sum(len(line) + 1 for line in _TABLE_HEAD) + 1 if rows else 0)
    for row in rows:
        if size + len(row) + 1 + room > max_chars:
            break
        size += len(row) + 1
        keep_rows += 1
    head = _head(preview, rows[:keep_rows])
    budget = max_chars - len(head) - room
    body: list[str] = []
    left_out = [a.name for a in apps[keep_rows:]]
    size = len(head)
    shown = [(a, s) for a, s in zip(apps[:keep_rows], sections, strict=False) if s is not None]
    for n, (_, section) in enumerate(shown):
        cut = _cut_section(section, budget, max_chars)
        last = n == len(shown) - 1 and not left_out
        if cut is None or size + cut.size + (0 if last else room) > max_chars:
            left_out = [a.name for a, _ in shown[n:]] + left_out
            break
        body.append(cut.text())
        size += cut.size
    note = _left_out_note(left_out, max_chars) if left_out else ""
    return head + "".join(body) + note


def _parts(
    preview: model.Preview,
    apps: Sequence[model.AppPreview],
    rows: Sequence[str],
    sections: Sequence[_Section | None],
    max_chars: int,
) -> list[str]:
    """Numbered comments, each under `max_chars`: its header and table rows, then its apps'
    sections, in order; an app that needs a comment of its own is cut inside."""
    if not apps:
        return [_head(preview, (), (1, 1))]
    widest = int("9" * len(str(len(apps))))  # no part number is wider
    groups: list[list[int]] = []
    cut: list[_Section | None] = []
    size = 0
    for i, section in enumerate(sections):
        alone = len(_head(preview, [rows[i]], (widest, widest)))
        piece = None if section is None else _cut_section(section, max_chars - alone, max_chars)
        cut.append(piece)
        body = 0 if piece is None else piece.size
        if groups and size + len(rows[i]) + 1 + body <= max_chars:
            groups[-1].append(i)
            size += len(rows[i]) + 1 + body
        else:
            groups.append([i])
            size = alone + body
    out = []
    for number, group in enumerate(groups, 1):
        head = _head(preview, [rows[i] for i in group], (number, len(groups)))
        out.append(head + "".join(s.text() for i in group if (s := cut[i]) is not None))
    return out
