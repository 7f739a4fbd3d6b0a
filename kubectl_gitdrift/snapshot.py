"""Reads offline cluster state: a `kubectl get -o yaml` List, multi-document YAML or JSON, a
`.gz` of either, or a directory of such files."""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubectl_gitdrift import application, model, yamlio
from kubectl_gitdrift.errors import SnapshotError

_SUFFIXES = (".yaml", ".yml", ".json", ".yaml.gz", ".yml.gz", ".json.gz")
MAX_FILE_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class ClusterState:
    """Live objects and Argo CD's own objects, as read from a snapshot or a cluster."""

    objects: tuple[model.Manifest, ...]
    applications: tuple[model.Body, ...]
    argocd_cm: model.Body | None
    source: str  # the snapshot path, or "cluster <context>"
    unreadable: tuple[tuple[model.ObjectKey, str], ...] = ()

    def find_application(self, name: str, namespace: str | None) -> model.Body | None:
        for body in self.applications:
            md = body.get("metadata") or {}
            if md.get("name") == name and (namespace is None or md.get("namespace") == namespace):
                return body
        return None

    def application_names(self) -> list[str]:
        names = []
        for body in self.applications:
            md = body.get("metadata") or {}
            names.append(f"{md.get('namespace') or '?'}/{md.get('name') or '?'}")
        return sorted(names)


def load(path: Path) -> ClusterState:
    """Read a snapshot file or directory; SnapshotError names the file (and document)."""
    if not path.exists():
        raise SnapshotError(f"--snapshot {path}: no such file or directory")
    files = _files(path)
    if not files:
        raise SnapshotError(f"--snapshot {path}: no .yaml, .yml or .json files in the directory")
    docs: list[dict[str, Any]] = []
    for file in files:
        docs.extend(_read(file))
    return from_documents(docs, str(path))


def from_documents(docs: Iterable[dict[str, Any]], source: str) -> ClusterState:
    objects: list[model.Manifest] = []
    apps: list[model.Body] = []
    cm = None
    for doc in docs:
        if application.is_application(doc):
            apps.append(doc)
            continue
        if application.is_argocd_cm(doc):
            cm = doc
        objects.append(model.Manifest(model.ObjectKey.of(doc), doc))
    objects.sort(key=lambda m: m.key)
    return ClusterState(tuple(objects), tuple(apps), cm, source)


def _files(path: Path) -> Sequence[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and p.name.lower().endswith(_SUFFIXES))


def _read(file: Path) -> list[dict[str, Any]]:
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise SnapshotError(f"--snapshot {file}: cannot read: {exc.strerror}") from None
    if file.name.endswith(".gz") or raw[:2] == b"\x1f\x8b":
        try:
            raw = _gunzip(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise SnapshotError(f"--snapshot {file}: not a valid gzip file ({exc})") from None
    docs = yamlio.load_documents(raw, str(file), error=SnapshotError)
    for index, doc in enumerate(docs, 1):
        if not doc.get("kind") or not doc.get("apiVersion"):
            raise SnapshotError(
                f"--snapshot {file}: object {index} has no "
                + ("kind" if not doc.get("kind") else "apiVersion")
            )
    return docs


def _gunzip(raw: bytes) -> bytes:
    out = bytearray()
    with gzip.GzipFile(fileobj=io.BytesIO(raw)) as handle:
        while chunk := handle.read(1 << 20):
            out += chunk
            if len(out) > MAX_FILE_BYTES:
                raise OSError(f"expands to more than {MAX_FILE_BYTES >> 20} MiB")
    return bytes(out)
