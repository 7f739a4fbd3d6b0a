"""`-o diff`: the report as `argocd app diff` prints it, one unified diff per differing resource.

For each Modified, Missing or Extraneous resource, sorted by group/kind/namespace/name: a blank
line, `===== <group>/<kind> <namespace>/<name> ======`, then a unified diff of the normalized live
object against the predicted one (live after applying git), both as YAML with sorted keys. Argo
CD runs plain `diff`; a unified diff carries the same lines with context and is what reviewers
expect. Secret values arrive masked (`++++++++` tokens) from the comparison; a Secret that still
holds a value is masked here before anything is printed.

Pure: data in, text out. With an enabled palette (the CLI's choice, for a terminal) the `=====`
and `---`/`+++` headers are bold, hunks cyan, removed lines red and added lines green; the
characters are the same.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import masking
from kubectl_gitdrift.present import color

__all__ = ["render_diff"]


def render_diff(report: model.Report, *, palette: color.Palette = color.OFF) -> str:
    """Every differing resource of every application, Argo CD's `app diff` layout."""
    several = len(report.applications) > 1
    out: list[str] = []
    for app in report.applications:
        drifts = sorted(
            (d for d in app.resources if d.status in model.SHOWN_IN_DIFF), key=lambda d: d.key
        )
        if several and drifts:
            out.append(palette.title(f"# Application {app.namespace}/{app.name}") + "\n")
        for drift in drifts:
            out.append(_resource(drift, palette))
    return "".join(out)


def header(key: model.ObjectKey) -> str:
    """`===== apps/Deployment prod/web ======` (`/Service …` for the core group, `… /name` for
    cluster-scoped objects), exactly as Argo CD writes it."""
    return f"===== {key.group}/{key.kind} {key.namespace}/{key.name} ======"


def _resource(drift: model.Drift, palette: color.Palette = color.OFF) -> str:
    live, predicted = _sides(drift)
    if drift.key.group == "" and drift.key.kind == "Secret":
        live, predicted = _ensure_masked(live, predicted)
    lines = difflib.unified_diff(
        _yaml(live), _yaml(predicted), fromfile="live", tofile="desired", lineterm="\n"
    )
    if palette.enabled:
        lines = _painted(lines, palette)
    body = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return f"\n{palette.title(header(drift.key))}\n{body}"


def _painted(lines: Iterator[str], palette: color.Palette) -> Iterator[str]:
    """unified_diff's lines, coloured by what they are: its first two lines are the file
    headers, then hunk headers and the context, removed and added lines of each hunk."""
    for number, line in enumerate(lines):
        text, newline = (line[:-1], "\n") if line.endswith("\n") else (line, "")
        if number < 2:
            text = palette.title(text)
        elif text.startswith("@@"):
            text = palette.hunk(text)
        elif text.startswith("-"):
            text = palette.removed(text)
        elif text.startswith("+"):
            text = palette.added(text)
        yield text + newline


def _sides(drift: model.Drift) -> tuple[Any, Any]:
    """(live, predicted) as compared: normalized live, and live after applying git."""
    if drift.status is model.ResourceStatus.MISSING:
        return None, drift.predicted if drift.predicted is not None else drift.desired
    if drift.status is model.ResourceStatus.EXTRANEOUS:
        return drift.normalized_live if drift.normalized_live is not None else drift.live, None
    return drift.normalized_live, drift.predicted


def _yaml(body: Any) -> list[str]:
    if body is None:
        return []
    text = yaml.safe_dump(
        _plain(body), sort_keys=True, default_flow_style=False, allow_unicode=True, width=1 << 16
    )
    return text.splitlines(keepends=True)


def _plain(value: Any) -> Any:
    """Mappings and sequences of any kind as dicts and lists (what safe_dump accepts)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _is_token(value: Any) -> bool:
    return isinstance(value, str) and len(value) >= masking.MASK_SEED and set(value) == {"+"}


def _ensure_masked(live: Any, predicted: Any) -> tuple[Any, Any]:
    """Defence in depth: a Secret side with any value that is not a mask token is masked."""
    bodies = [b for b in (predicted, live) if isinstance(b, Mapping)]
    clear = any(
        not _is_token(v)
        for b in bodies
        for field in ("data", "stringData")
        if isinstance(b.get(field), Mapping)
        for v in b[field].values()
    )
    if not clear:
        return live, predicted
    masker = masking.Masker()
    masker.see(predicted)
    masker.see(live)
    return masker.body(live), masker.body(predicted)
