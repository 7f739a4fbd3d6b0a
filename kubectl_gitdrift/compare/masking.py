"""Secret values masked as Argo CD masks them: a reader sees that a value changed, not to what."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import normalize


def is_secret(key: model.ObjectKey) -> bool:
    return key.group == "" and key.kind == "Secret"


MASK_SEED = 8
MASK = "+" * MASK_SEED
_SECRET_FIELDS = ("data", "stringData")


class Masker:
    """Argo CD's masking (gitops-engine HideSecretData): per key, each distinct value gets its own
    run of `+` (8, 12, 16 ...), so a reader sees *that* a value changed, never what it is.

    Values are numbered in the order they are first seen; `mask_drift` shows it git's side first,
    then live, then last-applied, as Argo CD does, so git's value is always `++++++++`."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str], str] = {}
        self._count: dict[str, int] = {}
        self._applied: dict[str, str] = {}  # last-applied text -> its masked text
        self._texts: dict[tuple[str, str], str] = {}  # (key, str value) -> its token
        self._parsed: dict[str, dict[str, Any]] = {}  # last-applied text -> parsed, normalized

    def token(self, key: str, value: Any) -> str:
        if type(value) is str:  # the usual value: its JSON spelling found once per Masker
            memo = self._texts.get((key, value))
            if memo is None:
                memo = self._texts[key, value] = self._token(key, value)
            return memo
        return self._token(key, value)

    def _token(self, key: str, value: Any) -> str:
        ident = (key, json.dumps(value, sort_keys=True, default=str))
        if ident not in self._tokens:
            n = self._count.get(key, 0)
            self._count[key] = n + 1
            self._tokens[ident] = "+" * (MASK_SEED + 4 * n)
        return self._tokens[ident]

    def see(self, body: Any) -> None:
        """Number the values of `body` without masking anything (to fix the token order)."""
        if type(body) is dict or isinstance(body, Mapping):
            for field in _SECRET_FIELDS:
                values = body.get(field)
                if type(values) is dict or isinstance(values, Mapping):
                    token = self.token
                    for k, v in values.items():
                        token(k if type(k) is str else str(k), v)

    def body(self, body: Any) -> Any:
        """A copy of a Secret with every value masked, last-applied included."""
        if not (type(body) is dict or isinstance(body, Mapping)):
            return body
        out = dict(body)
        token = self.token
        for field in _SECRET_FIELDS:
            values = out.get(field)
            if type(values) is dict or isinstance(values, Mapping):
                out[field] = {
                    k: token(k if type(k) is str else str(k), v) for k, v in values.items()
                }
            elif field in out and values is not None:
                out[field] = MASK  # malformed: not a map, hide it whole
        metadata = out.get("metadata")
        if type(metadata) is dict or isinstance(metadata, Mapping):
            annotations = metadata.get("annotations")
            if type(annotations) is dict or isinstance(annotations, Mapping):
                annotations = dict(annotations)
                if normalize.LAST_APPLIED in annotations:
                    annotations[normalize.LAST_APPLIED] = self.last_applied(
                        annotations[normalize.LAST_APPLIED]
                    )
                out["metadata"] = {**metadata, "annotations": annotations}
        return out

    def last_applied(self, raw: Any) -> str:
        """The last-applied annotation rebuilt from a masked copy of itself (its stringData, which
        kubectl stores in plain text, folded into masked data), or `++++++++` if unparsable."""
        if not isinstance(raw, str):
            return MASK
        if raw not in self._applied:  # the same text sits in live, predicted and normalized live
            parsed = self._parsed.pop(raw, None)
            if parsed is None:
                try:
                    parsed = json.loads(raw)
                except ValueError:
                    parsed = None
                if isinstance(parsed, dict):
                    normalize.normalize_secret(parsed)
            if isinstance(parsed, dict):
                masked = json.dumps(self.body(parsed), sort_keys=True, separators=(",", ":"))
            else:
                masked = MASK
            self._applied[raw] = masked
        return self._applied[raw]

    def seen_applied(self, raw: str, parsed: dict[str, Any]) -> None:
        """`raw` (a last-applied text) parsed and normalized by the caller: `last_applied` need
        not parse it again. `parsed` must not change from here on."""
        self._parsed[raw] = parsed


def mask_drift(drift: model.Drift) -> model.Drift:
    """Replace every Secret value in a drift with tokens, consistently across both sides."""
    masker = Masker()
    masker.see(drift.desired if drift.desired is not None else drift.predicted)
    masker.see(drift.normalized_live if drift.normalized_live is not None else drift.live)
    if drift.live is not None:
        orig = normalize.last_applied(drift.live)
        if orig is not None:
            normalize.normalize_secret(orig)
            masker.see(orig)
            annotations = (drift.live.get("metadata") or {}).get("annotations") or {}
            masker.seen_applied(annotations[normalize.LAST_APPLIED], orig)
    return model.Drift(
        drift.key,
        drift.status,
        changes=tuple(_mask_change(c, masker) for c in drift.changes),
        suppressed=tuple(
            model.Suppressed(_mask_change(s.change, masker), s.rule, s.plugin)
            for s in drift.suppressed
        ),
        origin=drift.origin,
        desired=masker.body(drift.desired),
        live=masker.body(drift.live),
        predicted=masker.body(drift.predicted),
        normalized_live=masker.body(drift.normalized_live),
        reason=drift.reason,
        counts=drift.counts,
    )


def _mask_change(change: model.Change, masker: Masker) -> model.Change:
    """Mask a change's values by where they sit in the Secret: a value at (or a map holding)
    `data`, `stringData` or the last-applied annotation is masked; anything else is kept."""
    path = change.path
    sensitive = (
        not path
        or path[0] in _SECRET_FIELDS
        or path[:3] == ("metadata", "annotations", normalize.LAST_APPLIED)
        or path in (("metadata",), ("metadata", "annotations"))
    )
    if not sensitive:
        return change
    return replace(
        change,
        desired=_mask_at(path, change.desired, masker),
        live=_mask_at(path, change.live, masker),
        secret=True,
    )


def _mask_at(path: model.FieldPath, value: Any, masker: Masker) -> Any:
    """Mask `value` as if it sat at `path` in a Secret."""
    if value is None:
        return None
    skeleton: Any = value
    for elem in reversed(path):
        if not isinstance(elem, str):
            return MASK  # a list item inside a Secret: nothing we know how to show safely
        skeleton = {elem: skeleton}
    masked = masker.body(skeleton) if isinstance(skeleton, Mapping) else MASK
    found, out = model.lookup(masked, path)
    if path and path[0] in _SECRET_FIELDS and len(path) == 1 and not isinstance(value, Mapping):
        return MASK
    return out if found else MASK
