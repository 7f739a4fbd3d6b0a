"""The adopt fix where a Location is not a line of a rendered manifest: a Helm values key (a line
of a values file to change, or a key to add to one), or a field no file can be named for (Helm
inline values and parameters, Jsonnet, config management plugins, hydrated manifests), with
why. remedies.py asks here for the FIX step and the `--write-patch` edits of such locations;
the edits themselves are valuesedit.py's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kubectl_gitdrift import model
from kubectl_gitdrift.diagnose import policies, valuesedit

if TYPE_CHECKING:
    from kubectl_gitdrift.diagnose.remedies import Location, SourceReader

HOWS = ("values", "values-add", "template", "helm-inline", "helm-parameter", "none")
EDITS = ("values", "values-add", "template")
"""The hows whose file --write-patch edits."""
"""Location.how values this module words and patches."""

Edits = dict[tuple[str, str], list[valuesedit.ValuesEdit]]
"""(root, file) → the edits of that values file."""


def step(app: model.Application, field: str, where: Location, change: model.Change) -> str:
    """The FIX step for one field."""
    live = _yaml(change.live)
    if where.how == "values":
        return (
            f"{_in_repo(where)}{where.file}:{where.line}: change {where.key} from "
            f"{_yaml(where.old)} to {_yaml(where.new)} (it renders {field}"
            + (f"; {where.note})" if where.note else ")")
        )
    if where.how == "template":
        return (
            f"{where.file}:{where.line}: change {field} from {_yaml(where.old)} to "
            f"{_yaml(where.new)} (the chart's template writes it literally)"
        )
    if where.how == "values-add":
        return (
            f"{_in_repo(where)}{where.file}: add {where.key}: {_yaml(where.new)} ({field} "
            f"renders {_yaml(where.old)} from {where.note}, which this values file overrides)"
        )
    if where.how == "helm-parameter":
        flag = where.text or f"--helm-set {where.key}"
        return (
            f"{field}: no file in git sets it; {where.note}: "
            f"argocd app set {policies.app_arg(app)} {flag}={_yaml(where.new)}"
        )
    if where.how == "helm-inline":
        return (
            f"{field}: no file in git sets it; {where.note}: set {where.key} to "
            f"{_yaml(where.new)} there (kubectl edit application {app.name} -n {app.namespace})"
        )
    return f"set {field} to {live} (git has {_yaml(change.desired)}): {where.note}"


def patch_steps(
    drift: model.Drift, locate: Callable[[model.Drift, model.Change], Any]
) -> list[str]:
    """What to know about the patch: which repository its paths are relative to."""
    repos = sorted(
        {
            where.repo
            for where in (locate(drift, c) for c in drift.changes)
            if where is not None and where.how in EDITS and where.repo
        }
    )
    if len(repos) == 1:
        return [
            (
                "the patch is for that values repository: its paths are relative to the "
                "repository's root; apply and commit it in a clone of it"
            )
        ]
    return [
        f"the patch holds files of the values repository {repo} too (paths relative to its "
        "root): apply those in a clone of it"
        for repo in repos
    ]


def collect(edits: Edits, where: Location, change: model.Change) -> str:
    """Add the edit `where` asks for to `edits`; or why there is none."""
    if where.how not in EDITS:
        return where.note or "no file can be named"
    key = where.key_path or (tuple(where.key.split(".")) if where.key else ())
    if isinstance(where.new, str) and "\n" in where.new:
        return f"{where.file}: {where.key} would be a multi-line value; edit it by hand"
    edit = valuesedit.ValuesEdit(where.file, where.root, key, where.line, where.old, where.new)
    bucket = edits.setdefault((where.root, where.file), [])
    same = next((e for e in bucket if e.key == key and e.line == edit.line), None)
    if same is not None:
        if same.new != edit.new:
            return f"{where.file}: {where.key} renders other fields too, which want {same.new!r}"
        return ""
    bucket.append(edit)
    return ""


def diffs(edits: Edits, read: SourceReader, skipped: list[str]) -> Iterable[str]:
    """The diff of each values file, in (repository, file) order; what failed goes to
    `skipped`."""
    for root, file in sorted(edits):
        text = read(file, root) if root else read(file)
        if text is None:
            skipped.append(f"{file}: not readable")
            continue
        new, failed = valuesedit.apply(text, edits[(root, file)])
        for edit, why in failed:
            skipped.append(f"{file}: {'.'.join(edit.key) or f'line {edit.line}'}: {why}")
        yield policies.unified_diff(file, text, new)


def _in_repo(where: Location) -> str:
    return f"in the values repository {where.repo}: " if where.repo else ""


def _yaml(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


__all__ = ["HOWS", "Edits", "collect", "diffs", "patch_steps", "step"]
