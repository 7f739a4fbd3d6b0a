"""Offline cluster state: reads and writes the tool's own Snapshot format (`apiVersion:
gitdrift/v1`, `kind: Snapshot`, docs/snapshot-format.md), and keeps reading what kubectl writes:
a `kubectl get -o yaml` List, multi-document YAML or JSON, a `.gz` of either, or a directory of
such files.

Secrets never leave the cluster side in clear: live Secret values are replaced by keyed
fingerprints (HMAC-SHA256 under a random per-snapshot key) as soon as they are read, and the
desired Secrets rendered from git are fingerprinted with the same key before comparing, so equal
values still compare equal and the diff still says *that* a key changed.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
import gzip
import hashlib
import hmac
import io
import json
import operator
import os
import tempfile
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kubectl_gitdrift import application, model, yamlio
from kubectl_gitdrift.diagnose import tracking
from kubectl_gitdrift.errors import SnapshotError

_SUFFIXES = (".yaml", ".yml", ".json", ".yaml.gz", ".yml.gz", ".json.gz")
MAX_FILE_BYTES = 256 * 1024 * 1024

API_VERSION = "gitdrift/v1"
KIND = "Snapshot"
FINGERPRINT_ALGORITHM = "hmac-sha256"
FINGERPRINT_PREFIX = "gitdrift-fingerprint:hmac-sha256:"
"""Plain form of a fingerprinted Secret value; `data` holds it base64-encoded."""
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@dataclass(frozen=True)
class Capture:
    """What a live run or a gitdrift Snapshot knows besides the objects."""

    context: str = ""
    server: str = ""
    server_version: Mapping[str, Any] = field(default_factory=dict)  # GET /version
    captured_at: str = ""
    api_resources: tuple[Mapping[str, Any], ...] = ()  # {apiVersion, kind, name, namespaced, verbs}
    definitions: Mapping[str, Any] = field(default_factory=dict)  # reduced OpenAPI ($defs form)
    fingerprint_key: bytes | None = None  # the key Secret values were fingerprinted with

    @property
    def kube_version(self) -> str:
        return str(self.server_version.get("gitVersion") or "")


@dataclass(frozen=True)
class ClusterState:
    """Live objects and Argo CD's own objects, as read from a snapshot or a cluster."""

    objects: tuple[model.Manifest, ...]
    applications: tuple[model.Body, ...]
    argocd_cm: model.Body | None
    source: str  # the snapshot path, or "cluster <context>"
    unreadable: tuple[tuple[model.ObjectKey, str], ...] = ()
    capture: Capture | None = None  # None for plain kubectl output
    notes: tuple[str, ...] = ()

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

    def scope(self, group: str, kind: str) -> bool | None:
        """Namespaced or not, from the recorded discovery; the built-in table otherwise."""
        if self.capture is not None:
            for row in self.capture.api_resources:
                gv = str(row.get("apiVersion") or "")
                if row.get("kind") == kind and gv.rpartition("/")[0] == group:
                    return bool(row.get("namespaced"))
        return tracking.default_scope(group, kind)

    def redact_desired(self, manifests: Sequence[model.Manifest]) -> list[model.Manifest]:
        """Fingerprint the values of desired Secrets with this state's key (no-op without)."""
        key = self.capture.fingerprint_key if self.capture else None
        if key is None:
            return list(manifests)
        return [
            model.Manifest(m.key, redact_secret(m.body, key), m.origin) if _is_secret(m.key) else m
            for m in manifests
        ]


# --------------------------------------------------------------------------- reading


def load(path: Path, *, checks: list[Callable[[], None]] | None = None) -> ClusterState:
    """Read a snapshot file or directory; SnapshotError names the file (and document).
    `checks`: big JSON files are proven read right later (yamlio.load_documents)."""
    if not path.exists():
        raise SnapshotError(f"--snapshot {path}: no such file or directory")
    files = _files(path)
    if not files:
        raise SnapshotError(f"--snapshot {path}: no .yaml, .yml or .json files in the directory")
    docs: list[dict[str, Any]] = []
    gitdrift: list[tuple[Path, dict[str, Any]]] = []
    for file in files:
        for doc in _read(file, checks):
            if _is_gitdrift(doc):
                _validate(doc, file)
                gitdrift.append((file, doc))
            else:
                docs.append(doc)
    if gitdrift:
        file, doc = gitdrift[0]
        if len(gitdrift) > 1 or docs:
            raise SnapshotError(
                f"--snapshot {path}: a gitdrift Snapshot ({file}) must be read on its own",
                hint="pass the Snapshot file alone, not mixed with other snapshots or objects",
            )
        return _from_snapshot(doc, file)
    return from_documents(docs, str(path))


def from_documents(
    docs: Iterable[Mapping[str, Any]],
    source: str,
    *,
    unreadable: Sequence[tuple[model.ObjectKey, str]] = (),
    capture: Capture | None = None,
    notes: Sequence[str] = (),
) -> ClusterState:
    objects: dict[model.ObjectKey, model.Manifest] = {}
    apps: dict[model.ObjectKey, model.Body] = {}
    cm = None
    for doc in docs:
        key = model.ObjectKey.of(doc)
        if application.is_application(doc):
            apps[key] = doc
            continue
        if application.is_argocd_cm(doc) and (
            cm is None or (doc.get("metadata") or {}).get("namespace") == "argocd"
        ):
            cm = doc
        objects[key] = model.Manifest(key, doc)
    return ClusterState(
        tuple(objects[k] for k in sorted(objects, key=_KEY_ORDER)),
        tuple(apps[k] for k in sorted(apps, key=_KEY_ORDER)),
        cm,
        source,
        tuple(sorted(set(unreadable))),
        capture,
        tuple(notes),
    )


_KEY_ORDER = operator.attrgetter("group", "kind", "namespace", "name")
"""ObjectKey's own order (its fields in turn) as a tuple per key: sorting 10,000 keys with
the dataclass `__lt__` took a tenth of a second."""


def from_live(
    docs: Iterable[Mapping[str, Any]],
    source: str,
    *,
    capture: Capture,
    unreadable: Sequence[tuple[model.ObjectKey, str]] = (),
    notes: Sequence[str] = (),
) -> ClusterState:
    """The state of a live run: Secret values fingerprinted with `capture.fingerprint_key`
    right away, so nothing downstream (comparison, snapshot file) ever holds them."""
    key = capture.fingerprint_key
    if key is None:
        raise ValueError("a live capture needs a fingerprint key")
    redacted = [redact_secret(d, key) if _is_secret(model.ObjectKey.of(d)) else d for d in docs]
    return from_documents(redacted, source, unreadable=unreadable, capture=capture, notes=notes)


def _is_gitdrift(doc: Mapping[str, Any]) -> bool:
    return doc.get("kind") == KIND or str(doc.get("apiVersion") or "").startswith("gitdrift/")


def _validate(doc: Mapping[str, Any], file: Path) -> None:
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if kind != KIND:
        raise SnapshotError(f"--snapshot {file}: expected kind {KIND}, got {kind}")
    if api_version != API_VERSION:
        raise SnapshotError(
            f"--snapshot {file}: unsupported Snapshot version {api_version!r} "
            f"(this gitdrift reads {API_VERSION})",
            hint="export it again with this version: kubectl gitdrift snapshot",
        )
    for name in ("applications", "appProjects", "objects", "apiResources", "unreadable"):
        if not isinstance(doc.get(name) or [], list):
            raise SnapshotError(f"--snapshot {file}: {name} must be a list")
    for name in ("serverVersion", "secrets", "openapi"):
        if not isinstance(doc.get(name) or {}, Mapping):
            raise SnapshotError(f"--snapshot {file}: {name} must be a mapping")
    if doc.get("argocdCM") is not None and not isinstance(doc["argocdCM"], Mapping):
        raise SnapshotError(f"--snapshot {file}: argocdCM must be a mapping")
    for name in ("applications", "appProjects", "objects"):
        for index, item in enumerate(doc.get(name) or (), 1):
            if not isinstance(item, Mapping) or not item.get("kind") or not item.get("apiVersion"):
                raise SnapshotError(
                    f"--snapshot {file}: {name}[{index}] is not an object with kind and apiVersion"
                )


def _from_snapshot(doc: Mapping[str, Any], file: Path) -> ClusterState:
    secrets = doc.get("secrets") or {}
    key: bytes | None = None
    if secrets.get("key"):
        if secrets.get("algorithm", FINGERPRINT_ALGORITHM) != FINGERPRINT_ALGORITHM:
            raise SnapshotError(
                f"--snapshot {file}: unknown Secret fingerprint algorithm {secrets['algorithm']!r}"
            )
        try:
            key = base64.b64decode(str(secrets["key"]), validate=True)
        except (binascii.Error, ValueError):
            raise SnapshotError(f"--snapshot {file}: secrets.key is not base64") from None
    openapi = doc.get("openapi") or {}
    definitions = openapi.get("definitions") or {}
    if not isinstance(definitions, Mapping):
        raise SnapshotError(f"--snapshot {file}: openapi.definitions must be a mapping")
    capture = Capture(
        context=str(doc.get("context") or ""),
        server=str(doc.get("server") or ""),
        server_version=dict(doc.get("serverVersion") or {}),
        captured_at=str(doc.get("capturedAt") or ""),
        api_resources=tuple(dict(r) for r in doc.get("apiResources") or () if isinstance(r, dict)),
        definitions=definitions,
        fingerprint_key=key,
    )
    unreadable = []
    for index, entry in enumerate(doc.get("unreadable") or (), 1):
        if not isinstance(entry, Mapping) or not entry.get("kind"):
            raise SnapshotError(f"--snapshot {file}: unreadable[{index}] has no kind")
        unreadable.append(
            (
                model.ObjectKey(
                    str(entry.get("group") or ""),
                    str(entry["kind"]),
                    str(entry.get("namespace") or ""),
                    str(entry.get("name") or ""),
                ),
                str(entry.get("reason") or "could not be read"),
            )
        )
    docs: list[Mapping[str, Any]] = [
        *(doc.get("applications") or ()),
        *(doc.get("appProjects") or ()),
    ]
    if doc.get("argocdCM"):
        docs.append(doc["argocdCM"])
    docs.extend(doc.get("objects") or ())
    return from_documents(
        docs,
        str(file),
        unreadable=unreadable,
        capture=capture,
        notes=[str(n) for n in doc.get("notes") or ()],
    )


def _files(path: Path) -> Sequence[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and p.name.lower().endswith(_SUFFIXES))


def _read(file: Path, checks: list[Callable[[], None]] | None = None) -> list[dict[str, Any]]:
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise SnapshotError(f"--snapshot {file}: cannot read: {exc.strerror}") from None
    if file.name.endswith(".gz") or raw[:2] == b"\x1f\x8b":
        try:
            raw = _gunzip(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise SnapshotError(f"--snapshot {file}: not a valid gzip file ({exc})") from None
    docs = yamlio.load_documents(raw, str(file), error=SnapshotError, checks=checks)
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


# --------------------------------------------------------------------------- writing


def to_document(state: ClusterState) -> dict[str, Any]:
    """The gitdrift/v1 Snapshot document of a live state (docs/snapshot-format.md)."""
    capture = state.capture or Capture()
    projects, objects = [], []
    for manifest in state.objects:
        if manifest.body is state.argocd_cm:
            continue
        if manifest.key.group == "argoproj.io" and manifest.key.kind == "AppProject":
            projects.append(dict(manifest.body))
        else:
            objects.append(dict(manifest.body))
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "capturedAt": capture.captured_at,
        "context": capture.context,
        "server": capture.server,
        "serverVersion": dict(capture.server_version),
        "secrets": {
            "algorithm": FINGERPRINT_ALGORITHM,
            "key": base64.b64encode(capture.fingerprint_key).decode()
            if capture.fingerprint_key
            else "",
        },
        "applications": [dict(a) for a in state.applications],
        "appProjects": projects,
        "argocdCM": None if state.argocd_cm is None else dict(state.argocd_cm),
        "apiResources": sorted(
            (dict(r) for r in capture.api_resources),
            key=lambda r: (str(r.get("apiVersion")), str(r.get("kind"))),
        ),
        "unreadable": [
            {
                "group": key.group,
                "kind": key.kind,
                "namespace": key.namespace,
                "name": key.name,
                "reason": reason,
            }
            for key, reason in state.unreadable
        ],
        "notes": list(state.notes),
        "openapi": {"definitions": dict(capture.definitions)},
        "objects": objects,
    }


def write(path: Path, document: Mapping[str, Any]) -> None:
    """Write atomically: a temporary file beside `path`, then rename. JSON for `.json[.gz]`,
    YAML otherwise; gzip for `.gz`. On failure nothing is left behind and `path` is untouched."""
    name = path.name.lower()
    stem = name.removesuffix(".gz")
    if stem.endswith(".json"):
        text = json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    else:
        dumper: Any = getattr(yaml, "CSafeDumper", None) or yaml.SafeDumper
        text = yaml.dump(
            document, Dumper=dumper, sort_keys=True, default_flow_style=False, allow_unicode=True
        )
    data = text.encode()
    if name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    directory = path.parent if str(path.parent) else Path()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise SnapshotError(f"-o {path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        Path(tmp).replace(path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        if isinstance(exc, OSError):
            raise SnapshotError(f"-o {path}: cannot write: {exc.strerror or exc}") from None
        raise


# --------------------------------------------------------------------------- Secrets


def _is_secret(key: model.ObjectKey) -> bool:
    return key.group == "" and key.kind == "Secret"


def fingerprint(key: bytes, value: bytes) -> str:
    """The plain (stringData) form of a fingerprinted value."""
    return FINGERPRINT_PREFIX + hmac.new(key, value, hashlib.sha256).hexdigest()


def _data_fingerprint(key: bytes, encoded: Any) -> Any:
    """A `data` value (base64) → base64 of the fingerprint of the decoded bytes."""
    if not isinstance(encoded, str):
        return encoded
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raw = encoded.encode()
    return base64.b64encode(fingerprint(key, raw).encode()).decode()


def _string_fingerprint(key: bytes, value: Any) -> Any:
    return fingerprint(key, value.encode()) if isinstance(value, str) else value


def redact_secret(body: Mapping[str, Any], key: bytes) -> dict[str, Any]:
    """A copy of a Secret whose `data`/`stringData` values are keyed fingerprints, and whose
    last-applied-configuration annotation (which keeps `stringData` in plain text) is
    fingerprinted the same way (or dropped when it cannot be parsed)."""
    out = copy.deepcopy(dict(body))
    if isinstance(out.get("data"), Mapping):
        out["data"] = {k: _data_fingerprint(key, v) for k, v in out["data"].items()}
    if isinstance(out.get("stringData"), Mapping):
        out["stringData"] = {k: _string_fingerprint(key, v) for k, v in out["stringData"].items()}
    annotations = (out.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        try:
            applied = json.loads(annotations[LAST_APPLIED])
        except (TypeError, ValueError):
            applied = None
        if isinstance(applied, dict):
            annotations[LAST_APPLIED] = (
                json.dumps(redact_secret(applied, key), separators=(",", ":")) + "\n"
            )
        else:
            del annotations[LAST_APPLIED]
    return out


# --------------------------------------------------------------------------- OpenAPI


def reduce_definitions(
    definitions: Mapping[str, Any], kinds: Iterable[tuple[str, str, str]]
) -> dict[str, Any]:
    """The definitions of these (group, version, kind)s and everything they reference,
    without descriptions: the merge-key and type data a comparison needs."""
    wanted = set(kinds)
    todo = [
        name
        for name, body in definitions.items()
        if isinstance(body, Mapping)
        and any(
            (str(g.get("group") or ""), str(g.get("version") or ""), str(g.get("kind") or ""))
            in wanted
            for g in body.get("x-kubernetes-group-version-kind") or ()
            if isinstance(g, Mapping)
        )
    ]
    out: dict[str, Any] = {}
    while todo:
        name = todo.pop()
        if name in out or name not in definitions:
            continue
        out[name] = _strip(definitions[name], todo)
    return {k: out[k] for k in sorted(out)}


def _strip(node: Any, refs: list[str]) -> Any:
    if isinstance(node, list):
        return [_strip(n, refs) for n in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "description":
            continue
        if key == "$ref" and isinstance(value, str):
            refs.append(value.rsplit("/", 1)[-1])
            out[key] = value
        elif key in ("default", "example", "enum"):
            out[key] = value
        elif key in ("properties", "patternProperties") and isinstance(value, Mapping):
            out[key] = {str(k): _strip(v, refs) for k, v in value.items()}
        else:
            out[key] = _strip(value, refs)
    return out


def group_version_kinds(definitions: Mapping[str, Any]) -> set[tuple[str, str, str]]:
    """Every (group, version, kind) some definition declares."""
    found: set[tuple[str, str, str]] = set()
    for body in definitions.values():
        if not isinstance(body, Mapping):
            continue
        for gvk in body.get("x-kubernetes-group-version-kind") or ():
            if isinstance(gvk, Mapping):
                found.add(
                    (
                        str(gvk.get("group") or ""),
                        str(gvk.get("version") or ""),
                        str(gvk.get("kind") or ""),
                    )
                )
    return found
