"""Audit log reading (bounded, garbage counted) and the §6.5 recipe that names the writer."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest

from kubectl_gitdrift import model
from kubectl_gitdrift.diagnose import audit
from kubectl_gitdrift.errors import UsageError
from kubectl_gitdrift.live import auditlog
from tests.conftest import TESTDATA

AUDIT = TESTDATA / "incident" / "audit.jsonl"
KEY = model.ObjectKey("apps", "Deployment", "prod", "guestbook")
SCALE = model.Owner("kubectl", "Update", "scale", None, "apps/v1")


def test_reads_the_incident_log_counting_garbage() -> None:
    log = auditlog.read(AUDIT)
    assert (log.lines, log.garbage) == (9, 1)
    # kept: the two creates, jane's patch; dropped: reads, the dry run
    assert [e["verb"] for e in log.events] == ["create", "create", "patch"]
    assert log.skipped == 5
    assert log.notes() == [
        "audit log audit.jsonl: 1 of 9 line(s) were not audit events and were skipped"
    ]


def test_gzip_stdin_and_limits(tmp_path: Path) -> None:
    raw = AUDIT.read_bytes()
    gz = tmp_path / "audit.log.1"  # gzip by magic bytes, whatever the name
    gz.write_bytes(gzip.compress(raw))
    assert len(auditlog.read(gz).events) == 3
    assert len(auditlog.read("-", stdin=io.BytesIO(raw)).events) == 3
    long_line = b'{"kind":"Event","x":"' + b"a" * 20000 + b'"}\n'
    log = auditlog.parse_stream(io.BytesIO(long_line + raw), "t", max_line=10000)
    assert (log.garbage, len(log.events)) == (2, 3)
    log = auditlog.parse_stream(io.BytesIO(raw), "t", max_events=1)
    assert log.truncated
    with pytest.raises(UsageError, match="--audit-log"):
        auditlog.read(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.gz"
    bad.write_bytes(b"\x1f\x8bnot gzip at all")
    with pytest.raises(UsageError, match="not a readable gzip"):
        auditlog.read(bad)


def test_names_jane_for_the_scale_not_the_dry_run() -> None:
    write = audit.find_write(
        auditlog.read(AUDIT),
        KEY,
        "deployments",
        ("spec", "replicas"),
        owner=SCALE,
        live_value=6,
        not_before="2026-11-30T04:01:34Z",
    )
    assert write is not None
    assert (write.principal, write.verb, write.subresource, write.time) == (
        "jane.sre@example.com",
        "patch",
        "scale",
        "2026-11-30T04:01:43.285195Z",
    )
    assert write.user_agent.startswith("kubectl/v1.33.1")
    assert write.touches
    assert write.sets_live_value


def test_manager_and_subresource_must_match() -> None:
    log = auditlog.read(AUDIT)
    edit = model.Owner("kubectl-edit", "Update", "", "2026-11-30T04:02:06Z")
    assert (
        audit.find_write(log, KEY, "deployments", ("spec", "replicas"), owner=edit, live_value=6)
        is None
    )
    # without managedFields, only a body that sets the field counts, and never Argo CD's
    found = audit.find_write(
        log, KEY, "deployments", ("spec", "replicas"), owner=None, live_value=6
    )
    assert found is not None
    assert found.principal == "jane.sre@example.com"


def _event(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "stage": "ResponseComplete",
        "verb": "patch",
        "user": {"username": "bob"},
        "userAgent": "kubectl/v1.34.0 (linux/amd64)",
        "objectRef": {
            "resource": "deployments",
            "namespace": "prod",
            "name": "guestbook",
            "apiGroup": "apps",
        },
        "responseStatus": {"code": 200},
        "stageTimestamp": "2026-11-30T05:00:00.5Z",
        "requestURI": (
            "/apis/apps/v1/namespaces/prod/deployments/guestbook?fieldManager=kubectl-edit"
        ),
        "requestObject": {
            "spec": {
                "template": {
                    "spec": {"containers": [{"name": "guestbook", "imagePullPolicy": "Always"}]}
                }
            }
        },
    }
    base.update(kw)
    return base


def test_strategic_patch_body_touches_merge_keyed_field_and_time_decides() -> None:
    path = (
        "spec",
        "template",
        "spec",
        "containers",
        model.ListKey((("name", "guestbook"),)),
        "imagePullPolicy",
    )
    owner = model.Owner("kubectl-edit", "Update", "", "2026-11-30T05:00:00Z")
    early = _event(stageTimestamp="2026-11-30T04:00:00Z", user={"username": "early"})
    failed = _event(responseStatus={"code": 409}, user={"username": "failed"})
    impersonated = _event(impersonatedUser={"username": "ci-bot"})
    log = audit.AuditLog(
        tuple(e for e in (early, failed, impersonated) if audit.is_relevant(e)), "t"
    )
    write = audit.find_write(log, KEY, "deployments", path, owner=owner, live_value="Always")
    assert write is not None
    assert write.who == "bob (as ci-bot)"
    assert write.sets_live_value
    json_patch = _event(
        requestObject=[{"op": "replace", "path": "/spec/replicas", "value": 4}],
        requestURI="/apis/apps/v1/namespaces/prod/deployments/guestbook",
    )
    assert audit.touched(json_patch, "", ("spec", "replicas"), {"spec": {"replicas": 4}}) == (
        True,
        4,
    )


def test_find_delete() -> None:
    gone = _event(verb="delete", requestObject=None, user={"username": "jane"})
    log = audit.AuditLog((gone,), "t")
    svc = model.ObjectKey("apps", "Deployment", "prod", "guestbook")
    write = audit.find_delete(log, svc, "deployments")
    assert write is not None
    assert write.principal == "jane"
    assert json.dumps(write.evidence())  # serialisable, no request body in it
    assert "requestObject" not in write.evidence()
