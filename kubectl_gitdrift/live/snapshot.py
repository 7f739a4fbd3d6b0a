"""Offline cluster state: reads and writes the Snapshot file, and reads what kubectl writes.

The tool's own format is `apiVersion: gitdrift/v1`, `kind: Snapshot` (docs/snapshot-format.md);
what kubectl writes is a `kubectl get -o yaml` List, multi-document YAML or JSON, a `.gz` of
either, or a directory of such files.

A Snapshot holds no Secret value in clear: the values are keyed fingerprints (fingerprints.py),
and the key is written beside them, so the desired Secrets rendered from git can be
fingerprinted with it before comparing.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import gzip
import io
import json
import os
import tempfile
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from kubectl_gitdrift import model, yamlio
from kubectl_gitdrift.errors import SnapshotError
from kubectl_gitdrift.live.clusterstate import Capture, ClusterState, from_documents
from kubectl_gitdrift.live.fingerprints import FINGERPRINT_ALGORITHM

_SUFFIXES = (".yaml", ".yml", ".json", ".yaml.gz", ".yml.gz", ".json.gz")
MAX_FILE_BYTES = 256 * 1024 * 1024

API_VERSION = "gitdrift/v1"
KIND = "Snapshot"
REPO_SERVER_FIELD = "argocdRepoServer"
"""The argocd-repo-server Deployment's image, or why it could not be read: written only when
the export read it (a helm render needed the Argo CD version); a v1 field old readers ignore."""


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
    repo_server = doc.get(REPO_SERVER_FIELD)
    if repo_server is not None and (
        not isinstance(repo_server, Mapping)
        or not all(isinstance(repo_server.get(k) or "", str) for k in ("image", "unreadable"))
    ):
        raise SnapshotError(
            f"--snapshot {file}: {REPO_SERVER_FIELD} must be a mapping of image and unreadable "
            "(strings)"
        )
    for name in ("applications", "appProjects", "objects"):
        for index, item in enumerate(doc.get(name) or (), 1):
            if not isinstance(item, Mapping) or not item.get("kind") or not item.get("apiVersion"):
                raise SnapshotError(
                    f"--snapshot {file}: {name}[{index}] is not an object with kind and apiVersion"
                )
            _check_metadata(item, file, f"{name}[{index}]")


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
        **_repo_server(doc.get(REPO_SERVER_FIELD)),
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


def _repo_server(field: Any) -> dict[str, Any]:
    """Capture's repo-server fields from the snapshot's `argocdRepoServer` (none if absent)."""
    if not isinstance(field, Mapping):
        return {}
    return {
        "repo_server_image": str(field.get("image") or ""),
        "repo_server_unreadable": str(field.get("unreadable") or ""),
    }


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
        _check_metadata(doc, file, f"object {index}")
    return docs


def _check_metadata(doc: Mapping[str, Any], file: Path, where: str) -> None:
    """An object's metadata, when it has one, is a mapping (the API server never serves
    another): anything else is a damaged file, said as such, not a crash further on."""
    metadata = doc.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise SnapshotError(
            f"--snapshot {file}: {where} ({doc.get('kind')}): metadata must be a mapping, "
            f"not {yamlio.type_name(metadata)}"
        )


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
    repo_server = (
        {}
        if capture.repo_server_image is None
        else {
            REPO_SERVER_FIELD: {
                "image": capture.repo_server_image,
                **({"unreadable": capture.repo_server_unreadable}
                   if capture.repo_server_unreadable else {}),
            }
        }
    )  # fmt: skip
    return {
        **repo_server,
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


def dumps(document: Mapping[str, Any], *, as_json: bool = False) -> str:
    """The snapshot's text: YAML, or JSON (one space indent), keys sorted."""
    if as_json:
        return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    dumper: Any = getattr(yaml, "CSafeDumper", None) or yaml.SafeDumper
    return yaml.dump(
        document, Dumper=dumper, sort_keys=True, default_flow_style=False, allow_unicode=True
    )


def write(path: Path, document: Mapping[str, Any]) -> None:
    """Write atomically: a temporary file beside `path`, then rename. JSON for `.json[.gz]`,
    YAML otherwise; gzip for `.gz`. On failure nothing is left behind and `path` is untouched."""
    name = path.name.lower()
    data = dumps(document, as_json=name.removesuffix(".gz").endswith(".json")).encode()
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
