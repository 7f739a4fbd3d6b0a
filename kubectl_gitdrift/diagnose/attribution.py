"""Who wrote each drifted field, and when.

Three witnesses, weakest last: the live object's managedFields (which manager owns the field, by
what operation and subresource, and usually when), the kube audit log (the principal, verb and
user agent of the write, with its exact time), and core/v1 Events of the object (the deployment
controller's "Scaled up replica set ... from 3 to 6" dates a /scale write that managedFields
records without a time). A snapshot without managedFields is said so, never guessed around.

FieldsV1 (semantics §6.2) is walked together with the live object, so that every element of a
change path finds its trie key: `f:<field>`, `k:<json>` for associative-list items (matched on the
live item, so a strategic-merge key such as `containerPort` finds `k:{"containerPort":80,
"protocol":"TCP"}`), `v:<json>` for set items, `i:<n>` for granular lists, and `.` for ownership
of a node itself. fields.py keeps its simpler first version for ignore rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import pluggy

from kubectl_gitdrift import hookcalls, model
from kubectl_gitdrift.compare import fields
from kubectl_gitdrift.diagnose import audit, rbac

ARGOCD_MANAGERS = model.ARGOCD_MANAGERS

# How an entry owns a path, strongest first.
EXACT = "exact"  # the path itself is a leaf, or a node the entry owns (".")
ATOMIC = "atomic"  # an ancestor the entry owns as a whole (an atomic map or list)
PART = "part"  # the entry owns fields below the path (e.g. some keys of a map)
_RANK = {EXACT: 0, ATOMIC: 1, PART: 2}


# --------------------------------------------------------------------------- FieldsV1


def ownership(trie: Mapping[str, Any], path: model.FieldPath, live: Any) -> str | None:
    """How a FieldsV1 trie owns `path` of `live`: EXACT, ATOMIC, PART, or None."""
    node: Mapping[str, Any] = trie
    value: Any = live
    for depth, elem in enumerate(path):
        if depth and not node:
            return ATOMIC  # an empty leaf above the path owns the whole value
        child, value = _child(node, elem, value)
        if child is None:
            return None
        node = child
    if not node or "." in node:
        return EXACT
    return PART


def _child(node: Mapping[str, Any], elem: model.PathElem, value: Any) -> tuple[Any, Any]:
    """(the trie node for `elem`, the live value at `elem`), or (None, None)."""
    if isinstance(elem, str):
        sub = node.get(f"f:{elem}")
        next_value = value.get(elem) if isinstance(value, Mapping) else None
        return _as_node(sub), next_value
    items = value if isinstance(value, list) else []
    if isinstance(elem, int):
        index: int | None = elem
        item = items[elem] if 0 <= elem < len(items) else None
    else:
        index = next((i for i, it in enumerate(items) if elem.matches(it)), None)
        item = items[index] if index is not None else None
    if index is not None and f"i:{index}" in node:
        return _as_node(node[f"i:{index}"]), item
    for key, sub in node.items():
        if key.startswith("k:"):
            keyed = _json(key[2:])
            if not isinstance(keyed, Mapping):
                continue
            if isinstance(item, Mapping):
                if all(item.get(k) == v for k, v in keyed.items()):
                    return _as_node(sub), item
            elif isinstance(elem, model.ListKey) and all(keyed.get(k) == v for k, v in elem.fields):
                return _as_node(sub), item
        elif (
            key.startswith("v:")
            and item is not None
            and not isinstance(item, Mapping | list)
            and _json(key[2:]) == item
        ):
            return _as_node(sub), item
    return None, None


def _as_node(sub: Any) -> Mapping[str, Any] | None:
    if sub is None:
        return None
    return sub if isinstance(sub, Mapping) else {}


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Claim:
    """One managedFields entry's claim on a path."""

    owner: model.Owner
    how: str  # EXACT | ATOMIC | PART


def claims(live: model.Body, path: model.FieldPath) -> list[Claim]:
    """Every managedFields entry that owns `path` (or part of it), strongest claim first; among
    equals, writers other than Argo CD first (they took the field last), then server order.
    Entries are told apart by manager + operation + subresource (+ apiVersion for Update), so a
    manager with a `scale` and a `status` entry shows up once per entry."""
    found = []
    for order, entry in enumerate(fields.entries(live)):
        how = ownership(entry.trie, path, live)
        if how is not None:
            found.append((_RANK[how], entry.owner.is_argocd, order, Claim(entry.owner, how)))
    found.sort(key=lambda t: (t[0], t[1], t[2]))
    return [c for *_, c in found]


def owner_of(change: model.Change, live: Mapping[str, Any]) -> model.Owner | None:
    """The managedFields entry that owns the changed field (see `claims` for the order)."""
    found = claims(live, change.path)
    return found[0].owner if found else None


def attribute(drift: model.Drift, pm: pluggy.PluginManager) -> model.Drift:
    """Fill `owner` on every change of a modified object (plugins first, then managedFields)."""
    if drift.live is None or not drift.changes:
        return drift
    live = drift.live
    changes = []
    for change in drift.changes:
        _, owner = hookcalls.first_result(pm, "gitdrift_attribute", change=change, live=live)
        changes.append(replace(change, owner=owner) if owner is not None else change)
    return replace(drift, changes=tuple(changes))


def argocd_entry(live: Mapping[str, Any]) -> model.Owner | None:
    """Argo CD's own write to the main resource (its last apply), if the object has one."""
    for entry in fields.entries(live):
        if entry.owner.is_argocd and not entry.owner.subresource:
            return entry.owner
    return None


# --------------------------------------------------------------------------- writers

HUMAN_MANAGERS = frozenset(
    {
        "kubectl", "kubectl-client-side-apply", "kubectl-edit", "kubectl-patch", "kubectl-set",
        "kubectl-label", "kubectl-annotate", "kubectl-rollout", "kubectl-create",
        "kubectl-replace", "kubectl-scale", "kubectl-last-applied", "k9s", "helm", "Mozilla",
        "OpenLens", "lens", "kubernetes-dashboard", "Go-http-client", "python-requests",
        "OpenAPI-Generator",
    }
)  # fmt: skip
_CONTROLLER_HINTS = re.compile(
    r"(controller|operator|manager|webhook|injector|autoscaler|scheduler|kubelet|"
    r"istio|linkerd|vpa|keda|kyverno|gatekeeper|cert-manager|reloader|flux)",
    re.IGNORECASE,
)


def writer_kind(owner: model.Owner | None, principal: str = "") -> str:
    """ "argocd", "human", "controller" or "unknown": who is behind a manager (and, when the audit
    log named one, a principal). Service accounts and system users are controllers."""
    if principal:
        if principal.startswith(("system:serviceaccount:", "system:")):
            if owner is not None and owner.is_argocd:
                return "argocd"
            return "controller"
        if owner is None or not owner.is_argocd:
            return "human"
    if owner is None:
        return "unknown"
    if owner.is_argocd:
        return "argocd"
    if owner.manager in HUMAN_MANAGERS or owner.manager.startswith("kubectl"):
        return "human"
    if owner.manager == "kube-controller-manager" or _CONTROLLER_HINTS.search(owner.manager):
        return "controller"
    return "unknown"


@dataclass(frozen=True, slots=True)
class EventClue:
    """A core/v1 Event that dates or explains a change."""

    reason: str
    message: str
    time: str
    component: str
    count: int

    def evidence(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "message": self.message,
            "time": self.time,
            "component": self.component,
            "count": self.count,
        }


@dataclass(frozen=True, slots=True)
class CommitRef:
    """The last git commit that touched a source file (from `git log -1 -- FILE`)."""

    sha: str
    author: str
    date: str
    subject: str
    file: str = ""

    def evidence(self) -> dict[str, Any]:
        return {
            "sha": self.sha,
            "author": self.author,
            "date": self.date,
            "subject": self.subject,
            "file": self.file,
        }


FileHistory = Callable[[str], "CommitRef | None"]
"""Repo-relative file -> the last commit touching it at the rendered revision (an I/O callback
the CLI provides, like remedies.Locator, so the engine stays pure)."""


@dataclass(frozen=True, slots=True)
class Clue:
    """Everything known about who wrote one drifted field, and when."""

    owner: model.Owner | None
    claims: tuple[Claim, ...] = ()
    write: audit.Write | None = None
    event: EventClue | None = None
    commit: CommitRef | None = None
    file: str | None = None  # the source file git sets the field in

    @property
    def kind(self) -> str:
        return writer_kind(self.owner, self.write.principal if self.write else "")

    @property
    def time(self) -> str | None:
        """The best time for the write: managedFields, else the audit log, else an Event."""
        if self.owner is not None and self.owner.time:
            return self.owner.time
        if self.write is not None:
            return self.write.time
        if self.event is not None:
            return self.event.time
        return None


ClueKey = tuple[model.ObjectKey, model.FieldPath]


def gather(
    drifts: Sequence[model.Drift],
    *,
    events: Sequence[model.Body] = (),
    audit_log: audit.AuditLog | None = None,
    files: Callable[[model.Drift, model.Change], str | None] | None = None,
    history: FileHistory | None = None,
    plurals: Mapping[tuple[str, str], str] | None = None,
) -> dict[ClueKey, Clue]:
    """A Clue for every change of every modified object (and one per missing or extraneous
    object, keyed by the empty path, carrying the audit write that created or deleted it)."""
    out: dict[ClueKey, Clue] = {}
    commits: dict[str, CommitRef | None] = {}

    def commit_for(file: str | None) -> CommitRef | None:
        if not file or history is None:
            return None
        if file not in commits:
            found = history(file)
            commits[file] = replace(found, file=file) if found is not None else None
        return commits[file]

    for drift in drifts:
        resource = rbac.plural(drift.key.group, drift.key.kind, plurals)
        if drift.status is model.ResourceStatus.MISSING and audit_log is not None:
            deleted = audit.find_delete(audit_log, drift.key, resource)
            out[(drift.key, ())] = Clue(None, write=deleted)
            continue
        if drift.live is None or not drift.changes:
            continue
        live = drift.live
        argocd = argocd_entry(live)
        for change in drift.changes:
            found = tuple(claims(live, change.path))
            owner = change.owner
            write = None
            if audit_log is not None:
                write = audit.find_write(
                    audit_log,
                    drift.key,
                    resource,
                    change.path,
                    owner=owner,
                    live_value=None if change.secret else change.live,
                    live=live,
                    not_before=argocd.time if argocd else None,
                )
            event = date_from_events(events, drift.key, change)
            file = files(drift, change) if files is not None else None
            file = file or drift.origin
            out[(drift.key, change.path)] = Clue(owner, found, write, event, commit_for(file), file)
    return out


# --------------------------------------------------------------------------- Events

_SCALED = re.compile(
    r"^Scaled (?P<dir>up|down) replica set (?P<rs>\S+) from (?P<from>\d+) to (?P<to>\d+)"
)


def events_of(events: Iterable[model.Body], key: model.ObjectKey) -> list[model.Body]:
    """core/v1 (or events.k8s.io) Events whose involved object is `key`, oldest first."""
    out = []
    for event in events:
        involved = event.get("involvedObject") or event.get("regarding") or {}
        group = str(involved.get("apiVersion") or "").rpartition("/")[0]
        if (
            involved.get("kind") == key.kind
            and str(involved.get("name") or "") == key.name
            and str(involved.get("namespace") or "") == key.namespace
            and group == key.group
        ):
            out.append(event)
    return sorted(out, key=_event_time)


def _event_time(event: model.Body) -> str:
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or (event.get("series") or {}).get("lastObservedTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


def date_from_events(
    events: Sequence[model.Body], key: model.ObjectKey, change: model.Change
) -> EventClue | None:
    """The Event that dates a replicas change of a Deployment: the deployment controller's last
    "Scaled ... from <git> to <live>" (or at least "to <live>") for this Deployment."""
    if not events or change.path != ("spec", "replicas") or key.kind != "Deployment":
        return None
    best: tuple[int, model.Body] | None = None
    for event in events_of(events, key):
        if event.get("reason") != "ScalingReplicaSet":
            continue
        match = _SCALED.match(str(event.get("message") or ""))
        if match is None or int(match["to"]) != change.live:
            continue
        score = 2 if int(match["from"]) == change.desired else 1
        if best is None or score >= best[0]:
            best = (score, event)
    if best is None:
        return None
    event = best[1]
    source = event.get("source") or {}
    return EventClue(
        reason=str(event.get("reason") or ""),
        message=str(event.get("message") or ""),
        time=_event_time(event),
        component=str(event.get("reportingComponent") or source.get("component") or ""),
        count=int(event.get("count") or 1),
    )


def parse_time(value: str | None) -> datetime | None:
    """RFC 3339 (second to nanosecond precision, `Z` or an offset) -> aware datetime."""
    return audit.parse_time(value)
