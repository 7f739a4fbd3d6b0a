"""What the ApplicationSet generators read, from real git and cluster state: `GitRepo` (the
files of a commit of a local clone or a fetched mirror) and `clusters` (Argo CD's clusters from
its cluster Secrets).

`GitRepo` lists a commit's files with one `git ls-tree -r` (blobs only: submodules are not
files, as in the repo-server's checkout without submodules) and reads each file with
`git cat-file` by its blob id, both through `sources.git.run_git`; both are kept per commit.
Which local repository and commit a generator's repoURL and revision mean is the caller's
choice, given as `resolve(repo_url, revision) -> (git directory, commit sha)`.

`clusters` reads what the cluster generator sees of each Secret labelled
`argocd.argoproj.io/secret-type: cluster`: its labels and annotations (but
last-applied-configuration, which holds the Secret's data), and `name`, `server`, `project` from
`data` (base64) or `stringData` (which the API server would write over `data`), never `config`.
Argo CD's in-cluster default, which no Secret declares, is not among them: the cluster generator
adds it itself.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kubectl_gitdrift.appsets.inputs import AppSetError, Cluster
from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.model import Body
from kubectl_gitdrift.sources import commits, git

SECRET_TYPE_LABEL = "argocd.argoproj.io/secret-type"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
FINGERPRINT_PREFIX = "gitdrift-fingerprint:"
_FIELDS = ("name", "server", "project")
_SYMLINK = "120000"
_MAX_LINKS = 8

Resolve = Callable[[str, str], tuple[Path, str]]


class GitRepo:
    """`appsets.inputs.Repo` over git: `resolve(repo_url, revision)` names the repository and
    the commit; the listing and the files read are kept per commit."""

    def __init__(self, resolve: Resolve) -> None:
        self._resolve = resolve
        self._lock = threading.Lock()
        self._commits: dict[tuple[str, str], tuple[Path, str]] = {}
        self._trees: dict[tuple[Path, str], dict[str, tuple[str, str]]] = {}
        self._paths: dict[tuple[Path, str], list[str]] = {}  # each tree's, sorted
        self._blobs: dict[tuple[Path, str], bytes] = {}

    def paths(self, repo_url: str, revision: str) -> Sequence[str]:
        top, sha, _ = self._tree(repo_url, revision)
        with self._lock:
            return self._paths[(top, sha)]

    def read(self, repo_url: str, revision: str, path: str) -> bytes:
        top, sha, tree = self._tree(repo_url, revision)
        seen = 0
        entry = tree.get(path)
        while entry is not None and entry[0] == _SYMLINK and seen < _MAX_LINKS:
            link = self._blob(top, entry[1]).decode("utf-8", "surrogateescape")
            target = posixpath.normpath(posixpath.join(posixpath.dirname(path), link))
            if link.startswith("/") or target == ".." or target.startswith("../"):
                raise SourceError(
                    f"{repo_url} at {sha[:12]}: {path} is a symlink to {link!r}, outside the "
                    "repository"
                )
            path, entry, seen = target, tree.get(target), seen + 1
        if entry is None or entry[0] == _SYMLINK:
            raise SourceError(f"{repo_url} at {sha[:12]}: no file {path}")
        return self._blob(top, entry[1])

    def _tree(self, repo_url: str, revision: str) -> tuple[Path, str, dict[str, tuple[str, str]]]:
        with self._lock:
            at = self._commits.get((repo_url, revision))
        if at is None:
            at = self._resolve(repo_url, revision)
            with self._lock:
                self._commits[(repo_url, revision)] = at
        top, sha = at
        with self._lock:
            tree = self._trees.get(at)
        if tree is None:
            tree = commits.tree(top, sha)
            with self._lock:
                self._trees[at] = tree
                self._paths[at] = sorted(tree)
        return top, sha, tree

    def _blob(self, top: Path, obj: str) -> bytes:
        with self._lock:
            data = self._blobs.get((top, obj))
        if data is None:
            data = git.run_git(top, "cat-file", "blob", obj).stdout
            with self._lock:
                self._blobs[(top, obj)] = data
        return data


def clusters(secrets: Iterable[Body], *, namespace: str | None = None) -> list[Cluster]:
    """The clusters Argo CD knows from `secrets` (those of `namespace` when given: the
    controller's), sorted by name."""
    found: list[tuple[str, str, Cluster]] = []
    for secret in secrets:
        metadata = secret.get("metadata") if isinstance(secret, Mapping) else None
        if not isinstance(metadata, Mapping) or secret.get("kind", "Secret") != "Secret":
            continue
        labels = metadata.get("labels") or {}
        if not isinstance(labels, Mapping) or labels.get(SECRET_TYPE_LABEL) != "cluster":
            continue
        if namespace is not None and metadata.get("namespace", "") != namespace:
            continue
        where = f"Secret {metadata.get('namespace', '')}/{metadata.get('name', '')}"
        values = _secret_values(secret, where)
        annotations = metadata.get("annotations") or {}
        if not isinstance(annotations, Mapping):
            raise AppSetError(f"{where}: metadata.annotations: a mapping expected")
        cluster = Cluster(
            name=values.get("name", ""),
            server=values.get("server", ""),
            labels={str(k): str(v) for k, v in labels.items()},
            annotations={str(k): str(v) for k, v in annotations.items() if k != LAST_APPLIED},
            project=values.get("project", ""),
        )
        found.append((cluster.name, where, cluster))
    found.sort(key=lambda item: (item[0], item[1]))
    return [cluster for _, _, cluster in found]


def _secret_values(secret: Mapping[str, Any], where: str) -> dict[str, str]:
    """`name`, `server` and `project` of a cluster Secret, `stringData` over `data`."""
    out: dict[str, str] = {}
    data = secret.get("data") or {}
    string_data = secret.get("stringData") or {}
    if not isinstance(data, Mapping) or not isinstance(string_data, Mapping):
        raise AppSetError(f"{where}: data and stringData must be mappings")
    for field in _FIELDS:
        if field in string_data and string_data[field] is not None:
            value = string_data[field]
            if not isinstance(value, str):
                raise AppSetError(f"{where}: stringData.{field}: a string expected")
            origin = f"stringData.{field}"
        elif data.get(field) is not None:
            raw = data[field]
            origin = f"data.{field}"
            try:
                value = base64.b64decode(str(raw), validate=True).decode("utf-8")
            except (binascii.Error, ValueError):
                raise AppSetError(f"{where}: {origin}: not base64-encoded UTF-8 text") from None
        else:
            continue
        if value.startswith(FINGERPRINT_PREFIX):
            raise AppSetError(
                f"{where}: {origin} is a gitdrift fingerprint, not the cluster's {field}",
                hint="the snapshot keeps Secret values as fingerprints: read the cluster "
                "Secrets live, or from a state that keeps their name and server",
            )
        out[field] = value
    return out
