"""Argo CD resource tracking: the tracking-id it writes, and which live objects it claims."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kubectl_gitdrift import model

TRACKING_ID = model.TRACKING_ID
INSTALLATION_ID = model.INSTALLATION_ID


def is_tracking_field(path: model.FieldPath, settings: model.Settings) -> bool:
    """A field Argo CD's resource tracking writes into every object it applies, under the
    tracking method `settings` name (model.Settings.tracking_keys). A sync sets it, not git, so
    no rule blames a person for it and no adopt step edits git for it."""
    if len(path) != 3 or path[0] != "metadata":
        return False
    annotations, labels = settings.tracking_keys()
    if path[1] == "annotations":
        return path[2] in annotations
    return path[1] == "labels" and path[2] in labels


# Kinds that are cluster-scoped, for when neither discovery nor a live object can tell.
CLUSTER_SCOPED = frozenset(
    {
        ("", "Namespace"), ("", "Node"), ("", "PersistentVolume"), ("", "ComponentStatus"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
        ("storage.k8s.io", "StorageClass"), ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"), ("storage.k8s.io", "VolumeAttachment"),
        ("scheduling.k8s.io", "PriorityClass"), ("node.k8s.io", "RuntimeClass"),
        ("networking.k8s.io", "IngressClass"), ("networking.k8s.io", "IPAddress"),
        ("networking.k8s.io", "ServiceCIDR"),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        ("policy", "PodSecurityPolicy"),
    }
)  # fmt: skip

# namespaced(group, kind) -> True / False / None (unknown)
ScopeFn = Callable[[str, str], "bool | None"]


def default_scope(group: str, kind: str) -> bool | None:
    return (group, kind) not in CLUSTER_SCOPED


def instance_name(app: model.Application, settings: model.Settings) -> str:
    """The app's name in tracking values: `<ns>_<name>` for apps outside Argo CD's namespace."""
    if app.namespace and app.namespace != settings.controller_namespace:
        return f"{app.namespace}_{app.name}"
    return app.name


def tracking_id(instance: str, key: model.ObjectKey, dest_namespace: str) -> str:
    return f"{instance}:{key.group}/{key.kind}:{key.namespace or dest_namespace}/{key.name}"


@dataclass(frozen=True, slots=True)
class TrackingId:
    app: str
    group: str
    kind: str
    namespace: str
    name: str


# parse's grammar in one match: `app:group/kind:namespace/name`, the app, kind and name not
# empty, no ":" before the namespace, exactly one "/" on each side of the second ":"
_ID = re.compile(r"([^:]+):[^:/]*/[^:/]+:[^/]*/[^/]+")


def parse(value: str) -> TrackingId | None:
    """`app:group/kind:namespace/name`, or None when malformed (Argo CD: untracked)."""
    parts = value.split(":", 2)
    if len(parts) != 3:
        return None
    app, group_kind, ns_name = parts
    gk = group_kind.split("/")
    nn = ns_name.split("/")
    if not app or len(gk) != 2 or len(nn) != 2 or not gk[1] or not nn[1]:
        return None
    return TrackingId(app, gk[0], gk[1], nn[0], nn[1])


def _annotations(body: Mapping[str, Any]) -> Mapping[str, Any]:
    return (body.get("metadata") or {}).get("annotations") or {}


def _labels(body: Mapping[str, Any]) -> Mapping[str, Any]:
    return (body.get("metadata") or {}).get("labels") or {}


def _is_crd(key: model.ObjectKey) -> bool:
    return key.group == "apiextensions.k8s.io" and key.kind == "CustomResourceDefinition"


# --------------------------------------------------------------------------- desired side


def prepare_desired(
    manifests: Sequence[model.Manifest],
    app: model.Application,
    settings: model.Settings,
    scope: ScopeFn = default_scope,
) -> tuple[list[model.Manifest], list[model.ObjectKey], set[model.ObjectKey]]:
    """What Argo CD does to rendered objects before comparing: default the namespace of
    namespaced objects, clear it on cluster-scoped ones, write the tracking metadata, and keep
    the last of duplicates. Returns the objects, the keys that were duplicated, and the keys
    whose namespace git left unset (defaulted here)."""
    instance = instance_name(app, settings)
    by_key: dict[model.ObjectKey, model.Manifest] = {}
    duplicates: list[model.ObjectKey] = []
    defaulted: set[model.ObjectKey] = set()
    for index, manifest in enumerate(manifests):
        body = dict(manifest.body)  # only metadata is written: the rest stays shared
        if "metadata" not in body:
            body["metadata"] = {}
        elif isinstance(body["metadata"], Mapping):
            body["metadata"] = dict(body["metadata"])
        metadata = body["metadata"]
        key = manifest.key
        namespaced = scope(key.group, key.kind)
        if namespaced is False and metadata.get("namespace"):
            metadata.pop("namespace")
        elif namespaced is not False and not metadata.get("namespace") and app.dest_namespace:
            metadata["namespace"] = app.dest_namespace
            defaulted.add(model.ObjectKey.of(body))
        key = model.ObjectKey.of(body)
        if not _is_crd(key):
            _write_tracking(body, key, instance, app, settings)
        slot = key
        if not key.name and metadata.get("generateName"):
            # NormalizeTargetObjects: `<generateName><index>`, so such objects never collide
            slot = replace(key, name=f"{metadata['generateName']}{index}")
        if slot in by_key:
            duplicates.append(key)
        by_key[slot] = model.Manifest(key, body, manifest.origin)
    return list(by_key.values()), sorted(set(duplicates)), defaulted


def relocate(
    manifest: model.Manifest, namespace: str, app: model.Application, settings: model.Settings
) -> model.Manifest:
    """The desired object as if git had put it in `namespace` (tracking rewritten to match)."""
    body = copy.deepcopy(dict(manifest.body))
    body.setdefault("metadata", {})["namespace"] = namespace
    key = model.ObjectKey.of(body)
    _write_tracking(body, key, instance_name(app, settings), app, settings)
    return model.Manifest(key, body, manifest.origin)


def _write_tracking(
    body: dict[str, Any],
    key: model.ObjectKey,
    instance: str,
    app: model.Application,
    settings: model.Settings,
) -> None:
    metadata = body["metadata"]
    method = settings.tracking_method
    if method in (model.TrackingMethod.ANNOTATION, model.TrackingMethod.ANNOTATION_AND_LABEL):
        annotations = dict(metadata.get("annotations") or {})
        annotations[TRACKING_ID] = tracking_id(instance, key, app.dest_namespace)
        if settings.installation_id:
            annotations[INSTALLATION_ID] = settings.installation_id
        else:
            annotations.pop(INSTALLATION_ID, None)
        metadata["annotations"] = annotations
    if method in (model.TrackingMethod.LABEL, model.TrackingMethod.ANNOTATION_AND_LABEL):
        labels = dict(metadata.get("labels") or {})
        value = instance if method is model.TrackingMethod.LABEL else _truncate_label(instance)
        labels[settings.instance_label_key] = value
        metadata["labels"] = labels


def _truncate_label(value: str) -> str:
    if len(value) <= 63:
        return value
    return value[:63].rstrip("-_.")


def is_hook(body: Mapping[str, Any]) -> bool:
    """Argo CD and Helm hooks (and Skip) are not compared and get no sync status."""
    annotations = _annotations(body)
    if not isinstance(annotations, Mapping):
        return False
    # gitops-engine's hook.IsHook: the annotation being there is what counts, even empty
    if "argocd.argoproj.io/hook" in annotations:
        return True
    return "helm.sh/hook" in annotations and annotations["helm.sh/hook"] != "crd-install"


# --------------------------------------------------------------------------- live side


def app_of(body: Mapping[str, Any], settings: model.Settings) -> str | None:
    """The app instance that tracks this live object, per the tracking method, or None."""
    if (
        settings.installation_id
        and _annotations(body).get(INSTALLATION_ID) != settings.installation_id
    ):
        return None
    if settings.tracking_method is model.TrackingMethod.LABEL:
        value = _labels(body).get(settings.instance_label_key)
        return str(value) if value else None
    raw = _annotations(body).get(TRACKING_ID)
    return app_named(raw) if isinstance(raw, str) else None


def app_named(value: str) -> str | None:
    """`parse(value).app` without building the TrackingId: the app a tracking-id names, or None
    when it is malformed."""
    found = _ID.fullmatch(value)
    return found[1] if found else None


Claim = tuple[model.Manifest, str]  # an unowned live object and its tracking-id, as written


def roots(
    live: Iterable[model.Manifest], settings: model.Settings
) -> dict[str | None, list[model.Manifest]]:
    """Every unowned live object by the app instance that tracks it (`app_of`; None: no app):
    `tracked_roots` for every app at once."""
    out: dict[str | None, list[model.Manifest]] = {}
    for manifest in live:
        if (manifest.body.get("metadata") or {}).get("ownerReferences"):
            continue
        out.setdefault(app_of(manifest.body, settings), []).append(manifest)
    return out


class Claims(Mapping[str, Sequence[Claim]]):
    """`claims(live)`, indexed for every app of a run with little work up front (issue 18: it
    runs on one core before --all forks). One pass groups the objects by the text before the
    first ":" of their tracking-id, which is the app that tracking-id names if it parses; owners
    and tracking-ids are checked when an app's claims are asked for, in the process that
    compares that app.
    Anything but looking up an app (iterating, counting) reads them all, as `claims` does."""

    __slots__ = ("_all", "_candidates", "_checked", "_live")

    def __init__(self, live: Sequence[model.Manifest]) -> None:
        candidates: dict[str, list[model.Manifest]] = {}
        for manifest in live:
            metadata = manifest.body.get("metadata") or {}
            raw = (metadata.get("annotations") or {}).get(TRACKING_ID)
            if isinstance(raw, str):
                app = raw.partition(":")[0]
                found = candidates.get(app)
                if found is None:
                    candidates[app] = [manifest]
                else:
                    found.append(manifest)
        self._live = live
        self._candidates = candidates
        self._checked: dict[str, list[Claim]] = {}
        self._all: dict[str, list[Claim]] | None = None

    def __getitem__(self, app: str) -> Sequence[Claim]:
        found = self._checked.get(app)
        if found is None:
            found = []
            for manifest in self._candidates.get(app, ()):
                metadata = manifest.body.get("metadata") or {}
                if metadata.get("ownerReferences"):
                    continue
                raw = metadata["annotations"][TRACKING_ID]
                if _ID.fullmatch(raw):  # the app is the text before ":", as grouped
                    found.append((manifest, str(raw)))
            self._checked[app] = found
        if not found:
            raise KeyError(app)
        return found

    def everything(self) -> dict[str, list[Claim]]:
        if self._all is None:
            self._all = claims(self._live)
        return self._all

    def __iter__(self) -> Iterator[str]:
        return iter(self.everything())

    def __len__(self) -> int:
        return len(self.everything())


class ClaimedRoots(Mapping[str | None, Sequence[model.Manifest]]):
    """`roots(live, settings)` when the tracking-id alone says which app tracks an object (the
    annotation methods, no installation id): an app's roots are the objects of its claims.
    Anything but looking up an app reads them all, as `roots` does."""

    __slots__ = ("_all", "_claims", "_live", "_settings")

    def __init__(
        self, live: Sequence[model.Manifest], claimed: Claims, settings: model.Settings
    ) -> None:
        self._live = live
        self._claims = claimed
        self._settings = settings
        self._all: dict[str | None, list[model.Manifest]] | None = None

    def __getitem__(self, app: str | None) -> Sequence[model.Manifest]:
        if app is None:
            return self.everything()[None]
        return [manifest for manifest, _ in self._claims[app]]

    def everything(self) -> dict[str | None, list[model.Manifest]]:
        if self._all is None:
            self._all = roots(self._live, self._settings)
        return self._all

    def __iter__(self) -> Iterator[str | None]:
        return iter(self.everything())

    def __len__(self) -> int:
        return len(self.everything())


def roots_and_claims(
    live: Sequence[model.Manifest], settings: model.Settings
) -> tuple[Mapping[str | None, Sequence[model.Manifest]], Claims]:
    """`roots(live, settings)` and `claims(live)` for a run's live index."""
    claimed = Claims(live)
    if settings.tracking_method is model.TrackingMethod.LABEL or settings.installation_id:
        return roots(live, settings), claimed
    return ClaimedRoots(live, claimed, settings), claimed


def self_referenced(
    body: Mapping[str, Any], key: model.ObjectKey, settings: model.Settings
) -> bool:
    """Does the tracking-id describe this very object (not one copied from elsewhere)?"""
    if settings.tracking_method is model.TrackingMethod.LABEL:
        return True
    raw = _annotations(body).get(TRACKING_ID)
    parsed = parse(raw) if isinstance(raw, str) else None
    if parsed is None:
        return True
    return (
        parsed.group == key.group
        and parsed.kind == key.kind
        and parsed.name == key.name
        and (key.namespace == "" or parsed.namespace == key.namespace)
    )


def tracked_roots(
    live: Iterable[model.Manifest], instance: str, settings: model.Settings
) -> list[model.Manifest]:
    """Live objects this app claims: tracking resolves to it and it has no owner."""
    out = []
    for manifest in live:
        if (manifest.body.get("metadata") or {}).get("ownerReferences"):
            continue
        if app_of(manifest.body, settings) == instance:
            out.append(manifest)
    return out


# --------------------------------------------------------------------------- tracking audit

MISSING = "tracking-id-missing"
INVALID = "tracking-id-invalid"
MISMATCH = "tracking-id-mismatch"
COPIED = "tracking-id-copied"


@dataclass(frozen=True, slots=True)
class TrackingIssue:
    """Something wrong with how Argo CD would recognise one live object (semantics §2)."""

    code: str  # MISSING | INVALID | MISMATCH | COPIED
    key: model.ObjectKey
    method: str  # the tracking method in effect
    found: str | None  # the annotation or label value on the live object
    expected: str  # what Argo CD writes for this object
    other_app: str = ""  # MISMATCH: the app the live object names

    def evidence(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "method": self.method,
            "found": self.found,
            "expected": self.expected,
        }
        if self.other_app:
            out["otherApplication"] = self.other_app
        return out


def claims(live: Iterable[model.Manifest]) -> dict[str, list[tuple[model.Manifest, str]]]:
    """Every unowned live object whose tracking-id annotation parses, with the raw value, by the
    app instance it names: what `audit` scans for copies, indexed once for all apps of a run."""
    out: dict[str, list[tuple[model.Manifest, str]]] = {}
    for manifest in live:
        metadata = manifest.body.get("metadata") or {}
        if metadata.get("ownerReferences"):
            continue
        raw = (metadata.get("annotations") or {}).get(TRACKING_ID)
        parsed = parse(raw) if isinstance(raw, str) else None
        if parsed is not None:
            out.setdefault(parsed.app, []).append((manifest, str(raw)))
    return out


def audit(
    drifts: Iterable[model.Drift],
    live: Iterable[model.Manifest],
    app: model.Application,
    settings: model.Settings,
    claimed: Mapping[str, Sequence[tuple[model.Manifest, str]]] | None = None,
) -> list[TrackingIssue]:
    """Check the tracking of every live object git renders (present, well-formed, describing
    this object, naming this app), and of every unowned live object that names this app but
    describes another object (copied). Owned objects (a ReplicaSet carrying its Deployment's
    tracking-id) are Argo CD's business neither way and are skipped."""
    instance = instance_name(app, settings)
    method = settings.tracking_method
    out: list[TrackingIssue] = []
    paired: set[model.ObjectKey] = set()
    for drift in drifts:
        if drift.live is None or drift.desired is None:
            continue
        paired.add(drift.key)
        key = drift.key
        if _is_crd(key):
            continue
        expected_id = tracking_id(instance, key, app.dest_namespace)
        if method is model.TrackingMethod.LABEL:
            value = _labels(drift.live).get(settings.instance_label_key)
            if not value:
                out.append(TrackingIssue(MISSING, key, method.value, None, instance))
            elif str(value) != instance:
                out.append(
                    TrackingIssue(
                        MISMATCH, key, method.value, str(value), instance, other_app=str(value)
                    )
                )
            continue
        raw = _annotations(drift.live).get(TRACKING_ID)
        if raw is None or raw == "":
            out.append(TrackingIssue(MISSING, key, method.value, None, expected_id))
            continue
        parsed = parse(str(raw))
        if parsed is None:
            out.append(TrackingIssue(INVALID, key, method.value, str(raw), expected_id))
        elif parsed.app != instance:
            out.append(
                TrackingIssue(
                    MISMATCH, key, method.value, str(raw), expected_id, other_app=parsed.app
                )
            )
        elif not self_referenced(drift.live, key, settings):
            out.append(TrackingIssue(COPIED, key, method.value, str(raw), expected_id))
    if method is not model.TrackingMethod.LABEL:
        if claimed is None:
            claimed = claims(live)
        for manifest, raw in claimed.get(instance, ()):
            if manifest.key in paired:
                continue
            if not self_referenced(manifest.body, manifest.key, settings):
                expected_id = tracking_id(instance, manifest.key, app.dest_namespace)
                out.append(TrackingIssue(COPIED, manifest.key, method.value, raw, expected_id))
    return sorted(out, key=lambda i: (i.key, i.code))


def shared_resource_warning(issue: TrackingIssue, app: model.Application) -> str:
    """Argo CD's SharedResourceWarning text for a MISMATCH (other app's `_` shown as `/`)."""
    this = app.qualified_name if app.namespace else app.name
    other = issue.other_app.replace("_", "/", 1)
    return f"{issue.key.kind}/{issue.key.name} is part of applications {this} and {other}"
