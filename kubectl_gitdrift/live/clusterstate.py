"""The live state a run compares against: the objects and Argo CD's own, with their capture.

Read from a cluster (from_live) or a snapshot (snapshot.load), Secret values already fingerprinted.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubectl_gitdrift import application, model
from kubectl_gitdrift.diagnose import rbac, tracking
from kubectl_gitdrift.live.fingerprints import is_secret, redact_secret

__all__ = ["Capture", "ClusterState", "from_documents", "from_live"]


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
    # the argocd-repo-server Deployment's repo-server image (the Argo CD version, which helm
    # renders), read only when a helm render needed it: None when not read; "" and why not
    repo_server_image: str | None = None
    repo_server_unreadable: str = ""

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
    # live: the API server's SubjectAccessReview answers for the controller (or why there are
    # none, and the RBAC objects among `objects` answer); None: offline, RBAC objects answer
    reviews: rbac.Reviews | None = None
    # live, one app at a time: reads the context objects the diagnosis of what differs can use
    # (engine.Needs -> their Manifests and notes; live/context.py), after the compare; None:
    # `objects` hold them all (a snapshot, --all)
    follow_up: Callable[[Any], tuple[list[model.Manifest], list[str]]] | None = field(
        default=None, compare=False
    )

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
        """Namespaced or not, from the recorded discovery, else from a live
        CustomResourceDefinition's spec.scope (a plain `kubectl get -o yaml` List records no
        discovery: its CRDs say it, as the API server's discovery derives it from them, and
        Argo CD's cluster cache knows it), else from the built-in table."""
        if self.capture is not None:
            for row in self.capture.api_resources:
                gv = str(row.get("apiVersion") or "")
                if row.get("kind") == kind and gv.rpartition("/")[0] == group:
                    return bool(row.get("namespaced"))
        crd_scope = self._crd_scopes.get((group, kind))
        if crd_scope is not None:
            return crd_scope
        return tracking.default_scope(group, kind)

    @functools.cached_property
    def _crd_scopes(self) -> dict[tuple[str, str], bool]:
        """(group, kind) → namespaced, from the live CustomResourceDefinitions' spec.scope."""
        out: dict[tuple[str, str], bool] = {}
        for manifest in self.objects:
            if manifest.key.group_kind != _CRD:
                continue
            spec = manifest.body.get("spec")
            if not isinstance(spec, Mapping):
                continue
            names = spec.get("names")
            kind = names.get("kind") if isinstance(names, Mapping) else None
            scope = spec.get("scope")
            if isinstance(kind, str) and scope in ("Namespaced", "Cluster"):
                out[(str(spec.get("group") or ""), kind)] = scope == "Namespaced"
        return out

    def redact_desired(self, manifests: Sequence[model.Manifest]) -> list[model.Manifest]:
        """Fingerprint the values of desired Secrets with this state's key (no-op without)."""
        key = self.capture.fingerprint_key if self.capture else None
        if key is None:
            return list(manifests)
        return [
            model.Manifest(m.key, redact_secret(m.body, key), m.origin) if is_secret(m.key) else m
            for m in manifests
        ]


def from_documents(
    docs: Iterable[Mapping[str, Any]],
    source: str,
    *,
    unreadable: Sequence[tuple[model.ObjectKey, str]] = (),
    capture: Capture | None = None,
    notes: Sequence[str] = (),
    reviews: rbac.Reviews | None = None,
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
        tuple(objects[k] for k in sorted(objects, key=model.KEY_ORDER)),
        tuple(apps[k] for k in sorted(apps, key=model.KEY_ORDER)),
        cm,
        source,
        tuple(sorted(set(unreadable))),
        capture,
        tuple(notes),
        reviews,
    )


_CRD = "apiextensions.k8s.io/CustomResourceDefinition"


def from_live(
    docs: Iterable[Mapping[str, Any]],
    source: str,
    *,
    capture: Capture,
    unreadable: Sequence[tuple[model.ObjectKey, str]] = (),
    notes: Sequence[str] = (),
    reviews: rbac.Reviews | None = None,
    follow_up: Callable[[Any], tuple[list[model.Manifest], list[str]]] | None = None,
) -> ClusterState:
    """The state of a live run: Secret values fingerprinted with `capture.fingerprint_key`
    right away, so nothing downstream (comparison, snapshot file) ever holds them."""
    key = capture.fingerprint_key
    if key is None:
        raise ValueError("a live capture needs a fingerprint key")
    redacted = [redact_secret(d, key) if is_secret(model.ObjectKey.of(d)) else d for d in docs]
    state = from_documents(
        redacted, source, unreadable=unreadable, capture=capture, notes=notes, reviews=reviews
    )
    return dataclasses.replace(state, follow_up=follow_up) if follow_up is not None else state
