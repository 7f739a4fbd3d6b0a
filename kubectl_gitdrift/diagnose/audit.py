"""Kube audit events -> the write behind a drifted field (semantics §6.5). Pure: the events come
in as parsed mappings (sources/auditlog.py reads them).

A write matches a drifted field when the event is the final stage of a successful, non-dry-run
create/update/patch of the same object (group, resource plural, namespace, name) through the same
subresource as the managedFields entry that owns the field, made by that manager (`fieldManager`
in the request URI or, when absent, the User-Agent prefix before the first `/`, as the API server
derives it). Among matches, one whose `requestObject` sets the field to its live value wins, then
one that touches the field at all, then the one closest in time to the entry (or the latest).
No request body ever leaves this module: Secret payloads must not reach a report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kubectl_gitdrift import model

WRITE_VERBS = frozenset({"create", "update", "patch"})


@dataclass(frozen=True, slots=True)
class AuditLog:
    """Audit events worth keeping (writes and deletes), and what reading them skipped."""

    events: tuple[Mapping[str, Any], ...]
    source: str
    lines: int = 0  # lines read
    garbage: int = 0  # lines that were not JSON audit events
    skipped: int = 0  # valid events dropped on read (reads, other stages)
    truncated: bool = False  # stopped at the size or event limit

    def notes(self) -> list[str]:
        name = self.source.replace("\\", "/").rsplit("/", 1)[-1]  # no machine-specific paths
        out = []
        if self.garbage:
            out.append(
                f"audit log {name}: {self.garbage} of {self.lines} line(s) were not "
                "audit events and were skipped"
            )
        if self.truncated:
            out.append(f"audit log {name}: stopped early at the read limit; later events unseen")
        return out


@dataclass(frozen=True, slots=True)
class Write:
    """One audited request that wrote (or deleted) the object."""

    principal: str
    impersonated: str
    groups: tuple[str, ...]
    verb: str
    user_agent: str
    manager: str  # fieldManager, or the User-Agent prefix the server would use
    subresource: str
    time: str  # stageTimestamp
    audit_id: str
    request_uri: str
    source_ips: tuple[str, ...]
    touches: bool  # the request body sets the drifted field
    sets_live_value: bool  # ... to the value the cluster has now

    def evidence(self) -> dict[str, Any]:
        return {
            "user": self.principal,
            "impersonatedUser": self.impersonated or None,
            "groups": list(self.groups),
            "verb": self.verb,
            "userAgent": self.user_agent,
            "fieldManager": self.manager,
            "subresource": self.subresource or None,
            "time": self.time,
            "auditID": self.audit_id,
            "requestURI": self.request_uri,
            "sourceIPs": list(self.source_ips),
            "touchesField": self.touches,
        }

    @property
    def who(self) -> str:
        return f"{self.principal} (as {self.impersonated})" if self.impersonated else self.principal


# --------------------------------------------------------------------------- event predicates


def is_relevant(event: Mapping[str, Any]) -> bool:
    """Kept on read: final-stage, successful, non-dry-run writes and deletes."""
    if event.get("stage", "ResponseComplete") != "ResponseComplete":
        return False
    if event.get("verb") not in (*WRITE_VERBS, "delete"):
        return False
    code = (event.get("responseStatus") or {}).get("code")
    if not isinstance(code, int) or not 200 <= code < 300:
        return False
    return not dry_run(event)


def dry_run(event: Mapping[str, Any]) -> bool:
    query = parse_qs(urlsplit(str(event.get("requestURI") or "")).query)
    return bool(query.get("dryRun"))


def manager_of(event: Mapping[str, Any]) -> str:
    """The field manager the server recorded: `fieldManager=` or the User-Agent prefix."""
    query = parse_qs(urlsplit(str(event.get("requestURI") or "")).query)
    managers = query.get("fieldManager")
    if managers and managers[0]:
        return managers[0]
    return str(event.get("userAgent") or "").split("/", 1)[0]


def _targets(
    event: Mapping[str, Any], key: model.ObjectKey, resource: str, verb_ok: frozenset[str]
) -> bool:
    if event.get("verb") not in verb_ok:
        return False
    ref = event.get("objectRef") or {}
    name = ref.get("name")
    if not name and event.get("verb") == "create":
        name = ((event.get("requestObject") or {}).get("metadata") or {}).get("name")
    return (
        str(ref.get("apiGroup") or "") == key.group
        and ref.get("resource") == resource
        and str(ref.get("namespace") or "") == key.namespace
        and name == key.name
    )


# --------------------------------------------------------------------------- matching


def find_write(
    log: AuditLog,
    key: model.ObjectKey,
    resource: str,
    path: model.FieldPath,
    *,
    owner: model.Owner | None,
    live_value: Any,
    live: model.Body | None = None,
    not_before: str | None = None,
) -> Write | None:
    """The audited write behind `path` of `key` (see the module doc), or None."""
    ranked = []
    for order, event in enumerate(log.events):
        if not is_relevant(event) or not _targets(event, key, resource, WRITE_VERBS):
            continue
        subresource = str((event.get("objectRef") or {}).get("subresource") or "")
        manager = manager_of(event)
        if owner is not None:
            if subresource != owner.subresource or manager != owner.manager:
                continue
        elif manager in model.ARGOCD_MANAGERS or subresource not in ("", "scale"):
            continue
        found, value = touched(event, subresource, path, live)
        if owner is None and not found:
            continue  # without managedFields only a body that sets the field is evidence
        sets_live = found and live_value is not None and value == live_value
        when = parse_time(str(event.get("stageTimestamp") or ""))
        ranked.append((sets_live, found, _closeness(when, owner, not_before), order, event))
    if not ranked:
        return None
    ranked.sort(key=lambda t: (t[0], t[1], t[2], t[3]))
    sets_live, found, _, _, event = ranked[-1]
    return _write(event, touches=found, sets_live=sets_live)


def find_delete(log: AuditLog, key: model.ObjectKey, resource: str) -> Write | None:
    """The last audited delete of the object (who removed what git still has)."""
    found = [
        e
        for e in log.events
        if is_relevant(e) and _targets(e, key, resource, frozenset({"delete"}))
    ]
    if not found:
        return None
    event = max(found, key=lambda e: str(e.get("stageTimestamp") or ""))
    return _write(event, touches=True, sets_live=False)


def _closeness(when: datetime | None, owner: model.Owner | None, not_before: str | None) -> float:
    """Higher is better: near the entry's time when it has one; else the latest write, with
    writes before Argo CD's last apply ranked below every later one."""
    if when is None:
        return float("-inf")
    entry = parse_time(owner.time) if owner is not None and owner.time else None
    if entry is not None:
        # managedFields times have second precision: a write within that second is exact
        delta = (when - entry).total_seconds()
        return -abs(delta - 0.5) if -1 <= delta <= 2 else -1e9 - abs(delta)
    floor = parse_time(not_before) if not_before else None
    stamp = when.timestamp()
    if floor is not None and when < floor - timedelta(seconds=1):
        return stamp - 1e12
    return stamp


def touched(
    event: Mapping[str, Any], subresource: str, path: model.FieldPath, live: model.Body | None
) -> tuple[bool, Any]:
    """(does the request body set `path`, to what)."""
    body = event.get("requestObject")
    if body is None:
        return False, None
    if subresource == "scale":
        if path != ("spec", "replicas"):
            return False, None
        return model.lookup(body, ("spec", "replicas"))
    if isinstance(body, list):  # JSON patch
        wanted = model.pointer(path, live or {})
        for op in body:
            if isinstance(op, Mapping) and op.get("path") == wanted and op.get("op") != "remove":
                return True, op.get("value")
            if isinstance(op, Mapping) and str(op.get("path") or "").startswith(wanted + "/"):
                return True, None
        return False, None
    return model.lookup(body, path)


def _write(event: Mapping[str, Any], *, touches: bool, sets_live: bool) -> Write:
    user = event.get("user") or {}
    impersonated = event.get("impersonatedUser") or {}
    ref = event.get("objectRef") or {}
    return Write(
        principal=str(user.get("username") or ""),
        impersonated=str(impersonated.get("username") or ""),
        groups=tuple(str(g) for g in user.get("groups") or ()),
        verb=str(event.get("verb") or ""),
        user_agent=str(event.get("userAgent") or ""),
        manager=manager_of(event),
        subresource=str(ref.get("subresource") or ""),
        time=str(event.get("stageTimestamp") or ""),
        audit_id=str(event.get("auditID") or ""),
        request_uri=str(event.get("requestURI") or ""),
        source_ips=tuple(str(ip) for ip in event.get("sourceIPs") or ()),
        touches=touches,
        sets_live_value=sets_live,
    )


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    text = value.strip().replace("Z", "+00:00")
    if "." in text:  # trim nanoseconds to microseconds
        head, _, rest = text.partition(".")
        count = len(rest) - len(rest.lstrip("0123456789"))
        digits, tz = rest[:count], rest[count:]
        text = f"{head}.{digits[:6].ljust(6, '0')}{tz}"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def writes_by(log: AuditLog, key: model.ObjectKey, resource: str) -> Sequence[Write]:
    """Every audited write of the object, oldest first (for "who keeps writing it")."""
    out = [
        _write(e, touches=False, sets_live=False)
        for e in log.events
        if is_relevant(e) and _targets(e, key, resource, WRITE_VERBS)
    ]
    return sorted(out, key=lambda w: w.time)
