"""Server-side apply dry-runs, answered by replaying what a real kube-apiserver answered.

A request is an apply dry-run when it is a ``PATCH`` with ``Content-Type:
application/apply-patch+yaml`` and ``dryRun=All`` (what ``kubectl apply --server-side
--dry-run=server`` and Argo CD's Server-Side Diff send). The server persists nothing for it, so
the read-only guard lets it through (and counts it apart: ``DRY_RUN_ATTEMPTS`` in server.py).

The loopback server cannot merge like the real one; it replays the recordings in
``testdata/apiserver/ssa/`` (kube-apiserver v1.36.2; see the README there). A dry-run is answered
with a recording's ``dryrun-response.json`` when

- its body is that recording's ``desired.yaml`` object (as data: key order and JSON-vs-YAML do
  not matter),
- its query is what the recording was made with (``dryRun=All``, ``fieldManager``, ``force``),
- and the stored object is the recording's ``live-before.json`` (same uid and resourceVersion):
  the answer depends on the live object's managedFields.

Anything else gets a clear ``400`` naming the first difference, and is listed in
``KubeAPIServer.unmatched_dry_runs``: a test never gets an invented merge.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .status import APIError, bad_request, error

Obj = dict[str, Any]
APPLY_PATCH = "application/apply-patch+yaml"
#: The recordings (testdata/apiserver/ssa/README.md).
SSA_DIR = Path(__file__).resolve().parents[3] / "testdata" / "apiserver" / "ssa"
#: The query every recording was made with (`kubectl apply --server-side --dry-run=server
#: --force-conflicts --field-manager=argocd-controller`), as the server receives it.
RECORDED_QUERY = {"dryRun": "All", "fieldManager": "argocd-controller", "force": "true"}


def is_dry_run_apply(method: str, query: Mapping[str, str], content_type: str) -> bool:
    """A server-side apply with ``dryRun=All``: nothing is persisted."""
    media = content_type.split(";")[0].strip().lower()
    return method == "PATCH" and media == APPLY_PATCH and query.get("dryRun") == "All"


@dataclass(frozen=True)
class Recording:
    """One directory of testdata/apiserver/ssa/."""

    name: str
    desired: Obj
    live_before: Obj
    response: Obj

    @property
    def key(self) -> tuple[str, str, str, str]:
        """(apiVersion, kind, namespace, name) of the object it is about."""
        meta = self.desired.get("metadata") or {}
        return (
            str(self.desired.get("apiVersion")),
            str(self.desired.get("kind")),
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
        )


def load_recordings(directory: Path = SSA_DIR) -> list[Recording]:
    """Every recording under `directory`, sorted by name; a missing file fails loudly."""
    recordings = []
    for sub in sorted(p for p in directory.iterdir() if p.is_dir()):
        recordings.append(
            Recording(
                name=sub.name,
                desired=yaml.safe_load((sub / "desired.yaml").read_text(encoding="utf-8")),
                live_before=json.loads((sub / "live-before.json").read_text(encoding="utf-8")),
                response=json.loads((sub / "dryrun-response.json").read_text(encoding="utf-8")),
            )
        )
    if not recordings:
        raise FileNotFoundError(f"no server-side apply recordings in {directory}")
    return recordings


def parse_body(body: bytes) -> Obj:
    """An apply patch body: YAML or JSON (a 400 like the server's when it is not an object)."""
    try:
        obj = yaml.safe_load(body.decode("utf-8")) if body else None
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise bad_request(f"error decoding YAML: {exc}") from exc
    if not isinstance(obj, dict):
        raise bad_request("error decoding YAML: the apply patch is not an object")
    return obj


def check_options(query: Mapping[str, str]) -> None:
    """The server's own PatchOptions validation for apply (metav1 ValidatePatchOptions)."""
    if not query.get("fieldManager"):
        raise error(
            422,
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
            "is required for apply patch",
            details={
                "group": "meta.k8s.io",
                "kind": "PatchOptions",
                "causes": [
                    {
                        "reason": "FieldValueRequired",
                        "message": "Required value: is required for apply patch",
                        "field": "fieldManager",
                    }
                ],
            },
        )


def replay(
    recordings: list[Recording], query: Mapping[str, str], sent: Obj, live: Obj | None
) -> Obj:
    """The recorded answer for this request, or a 400 APIError saying why none fits."""
    meta = sent.get("metadata") or {}
    what = f"{sent.get('kind')} {meta.get('namespace', '')}/{meta.get('name', '')}".strip()
    reasons = []
    for rec in recordings:
        why = _mismatch(rec, query, sent, live)
        if why is None:
            return copy.deepcopy(rec.response)
        if why != "another object":
            reasons.append(f"{rec.name}: {why}")
    raise APIError(
        400,
        bad_request(
            f"tests/apiserver replays recorded server-side apply dry-runs only "
            f"(testdata/apiserver/ssa); none matches this one for {what}: "
            + ("; ".join(reasons) or "no recording is about this object")
        ).body,
    )


def _mismatch(rec: Recording, query: Mapping[str, str], sent: Obj, live: Obj | None) -> str | None:
    if rec.key[1:] != (
        str(sent.get("kind")),
        str((sent.get("metadata") or {}).get("namespace") or ""),
        str((sent.get("metadata") or {}).get("name") or ""),
    ):
        return "another object"
    for name, value in RECORDED_QUERY.items():
        if query.get(name) != value:
            return f"recorded with {name}={value}, asked with {name}={query.get(name)}"
    path = _first_difference(rec.desired, sent)
    if path is not None:
        return f"the applied object differs from desired.yaml at {path}"
    if live is None:
        return "the object does not exist (the recordings only update existing objects)"
    live_meta = live.get("metadata") or {}
    rec_meta = rec.live_before.get("metadata") or {}
    for field in ("uid", "resourceVersion"):
        if live_meta.get(field) != rec_meta.get(field):
            return (
                f"the stored object is not live-before.json ({field} "
                f"{live_meta.get(field)!r}, recorded {rec_meta.get(field)!r})"
            )
    return None


def _first_difference(want: Any, got: Any, path: str = "") -> str | None:
    """The first path (JSON-pointer-like) where two values differ, or None."""
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            if key not in want or key not in got:
                return f"{path}/{key}"
            found = _first_difference(want[key], got[key], f"{path}/{key}")
            if found is not None:
                return found
        return None
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return path or "/"
        for index, (a, b) in enumerate(zip(want, got, strict=True)):
            found = _first_difference(a, b, f"{path}/{index}")
            if found is not None:
                return found
        return None
    return None if want == got and type(want) is type(got) else (path or "/")
