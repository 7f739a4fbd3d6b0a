"""The gitdrift/v1 Snapshot format: validated on read, written atomically, Secrets fingerprinted;
plain kubectl output keeps working."""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift import model
from kubectl_gitdrift.errors import SnapshotError
from kubectl_gitdrift.live import clusterstate, fingerprints, snapshot
from tests.conftest import TESTDATA

INCIDENT = TESTDATA / "incident"
KEY = b"k" * 32


def minimal() -> dict[str, Any]:
    state = snapshot.load(INCIDENT / "snapshot.yaml")
    capture = clusterstate.Capture(
        context="admin",
        server="https://127.0.0.1:6443",
        server_version={"gitVersion": "v1.33.5"},
        captured_at="2026-11-30T05:00:00Z",
        api_resources=(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": "deployments",
                "namespaced": True,
                "verbs": ["list"],
            },
            {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "name": "widgets",
                "namespaced": False,
                "verbs": ["list"],
            },
        ),
        fingerprint_key=KEY,
    )
    live = clusterstate.from_live(
        [*state.applications, *(m.body for m in state.objects)],
        "test",
        capture=capture,
        unreadable=[(model.ObjectKey("apps", "StatefulSet", "prod", ""), "cannot list: 403")],
    )
    return snapshot.to_document(live)


def write_doc(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("name", ["s.yaml", "s.yml.gz", "s.json", "s.json.gz"])
def test_round_trip(tmp_path: Path, name: str) -> None:
    doc = minimal()
    path = tmp_path / name
    snapshot.write(path, doc)
    if name.endswith(".gz"):
        assert path.read_bytes()[:2] == b"\x1f\x8b"
    state = snapshot.load(path)
    assert snapshot.to_document(state) == doc
    assert state.capture is not None
    assert state.capture.fingerprint_key == KEY
    assert state.capture.kube_version == "v1.33.5"
    assert state.unreadable == (
        (model.ObjectKey("apps", "StatefulSet", "prod", ""), "cannot list: 403"),
    )
    assert [a["metadata"]["name"] for a in state.applications] == ["guestbook"]
    assert state.argocd_cm is not None
    assert state.scope("example.com", "Widget") is False  # recorded discovery wins
    assert state.scope("", "Namespace") is False  # built-in table otherwise
    assert state.scope("apps", "Deployment") is True


@pytest.mark.parametrize(
    ("image", "unreadable", "field"),
    [
        (None, "", None),  # not read: not written (the snapshots before it are unchanged)
        ("quay.io/argoproj/argocd:v3.1.5", "", {"image": "quay.io/argoproj/argocd:v3.1.5"}),
        ("", "404 Not Found: no x", {"image": "", "unreadable": "404 Not Found: no x"}),
    ],
)
def test_the_repo_server_image_round_trips(
    tmp_path: Path, image: str | None, unreadable: str, field: dict[str, str] | None
) -> None:
    state = snapshot.load(INCIDENT / "snapshot.yaml")
    capture = clusterstate.Capture(
        fingerprint_key=KEY, repo_server_image=image, repo_server_unreadable=unreadable
    )
    live = clusterstate.from_live([*state.applications], "test", capture=capture)
    doc = snapshot.to_document(live)
    assert doc.get("argocdRepoServer") == field
    path = tmp_path / "s.json"
    snapshot.write(path, doc)
    loaded = snapshot.load(path).capture
    assert loaded is not None
    assert (loaded.repo_server_image, loaded.repo_server_unreadable) == (image, unreadable)


def test_writing_is_deterministic_and_sorted(tmp_path: Path) -> None:
    doc = minimal()
    snapshot.write(tmp_path / "a.yaml.gz", doc)
    snapshot.write(tmp_path / "b.yaml.gz", doc)
    assert (tmp_path / "a.yaml.gz").read_bytes() == (tmp_path / "b.yaml.gz").read_bytes()


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"apiVersion": "gitdrift/v2"}, "unsupported Snapshot version 'gitdrift/v2'"),
        ({"apiVersion": "example.com/v1"}, "unsupported Snapshot version 'example.com/v1'"),
        ({"kind": "Report"}, "expected kind Snapshot, got Report"),
        ({"objects": {"a": 1}}, "objects must be a list"),
        (
            {"objects": [{"kind": "ConfigMap"}]},
            "objects[1] is not an object with kind and apiVersion",
        ),
        ({"secrets": {"algorithm": "hmac-sha256", "key": "!!"}}, "secrets.key is not base64"),
        ({"secrets": {"algorithm": "md5", "key": "a2V5"}}, "unknown Secret fingerprint algorithm"),
        ({"unreadable": [{"reason": "x"}]}, "unreadable[1] has no kind"),
        (
            {"argocdRepoServer": "quay.io/argoproj/argocd:v3.1.5"},
            "argocdRepoServer must be a mapping of image and unreadable (strings)",
        ),
        (
            {"argocdRepoServer": {"image": ["v3.1.5"]}},
            "argocdRepoServer must be a mapping of image and unreadable (strings)",
        ),
        (
            {"objects": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": ["a"]}]},
            "objects[1] (ConfigMap): metadata must be a mapping, not a list",
        ),
    ],
)
def test_invalid_snapshots_name_the_file(
    tmp_path: Path, change: dict[str, Any], needle: str
) -> None:
    path = write_doc(tmp_path / "bad.yaml", {**minimal(), **change})
    with pytest.raises(SnapshotError) as caught:
        snapshot.load(path)
    assert str(path) in caught.value.message
    assert needle in caught.value.message


def test_a_snapshot_is_read_on_its_own(tmp_path: Path) -> None:
    write_doc(tmp_path / "a.yaml", minimal())
    (tmp_path / "b.yaml").write_text((INCIDENT / "snapshot.yaml").read_text())
    with pytest.raises(SnapshotError, match="must be read on its own"):
        snapshot.load(tmp_path)


def test_plain_lists_multidoc_and_directories_still_load(tmp_path: Path) -> None:
    items = yaml.safe_load((INCIDENT / "snapshot.yaml").read_text())["items"]
    (tmp_path / "multi.yaml").write_text(yaml.safe_dump_all(items))
    plain = snapshot.load(INCIDENT / "snapshot.yaml")
    multi = snapshot.load(tmp_path / "multi.yaml")
    assert multi.objects == plain.objects
    assert plain.capture is None
    assert plain.scope("apps", "Deployment") is True


def test_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text("previous\n")

    def boom(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(SnapshotError, match="No space left on device"):
        snapshot.write(path, minimal())
    assert path.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap.yaml"]


def test_write_into_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match=r"-o .*nowhere/snap.yaml: cannot write"):
        snapshot.write(tmp_path / "nowhere" / "snap.yaml", minimal())


def test_secret_fingerprints() -> None:
    applied = {"apiVersion": "v1", "kind": "Secret", "stringData": {"pw": "hunter2"}}
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "s",
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied),
                "other": "kept",
            },
        },
        "data": {
            "pw": base64.b64encode(b"hunter2").decode(),
            "same": base64.b64encode(b"hunter2").decode(),
            "empty": "",
        },
    }
    out = fingerprints.redact_secret(secret, KEY)
    text = json.dumps(out)
    assert "hunter2" not in text
    assert base64.b64encode(b"hunter2").decode() not in text
    assert out["data"]["pw"] == out["data"]["same"]
    decoded = base64.b64decode(out["data"]["pw"]).decode()
    assert decoded.startswith(fingerprints.FINGERPRINT_PREFIX)
    assert decoded == fingerprints.fingerprint(KEY, b"hunter2")
    assert fingerprints.redact_secret(secret, b"x" * 32)["data"]["pw"] != out["data"]["pw"]
    applied_out = json.loads(
        out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    )
    assert applied_out["stringData"]["pw"] == decoded
    assert out["metadata"]["annotations"]["other"] == "kept"
    assert secret["data"]["pw"] == base64.b64encode(b"hunter2").decode()  # input untouched
    garbled = {
        **secret,
        "metadata": {
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{not json"}
        },
    }
    assert "annotations" in fingerprints.redact_secret(garbled, KEY)["metadata"]
    assert fingerprints.redact_secret(garbled, KEY)["metadata"]["annotations"] == {}


def test_reduce_definitions_keeps_what_the_kinds_reference() -> None:
    doc = json.loads((TESTDATA / "apiserver" / "openapi-02-v3-apis-apps-v1.json").read_text())
    from kubectl_gitdrift.compare import openapi

    definitions = openapi.definitions_from_openapi_v3(doc)
    reduced = snapshot.reduce_definitions(definitions, {("apps", "v1", "Deployment")})
    assert "io.k8s.api.apps.v1.Deployment" in reduced
    assert "io.k8s.api.core.v1.Container" in reduced
    assert "io.k8s.api.apps.v1.StatefulSet" not in reduced
    assert "description" not in json.dumps(reduced)
    containers = reduced["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert len(json.dumps(reduced)) < len(json.dumps(definitions)) / 3


# --------------------------------------------------------------------------- big JSON, fast


def _many(n: int) -> list[dict[str, Any]]:
    """n ConfigMaps as kubectl would write them (colons in values, 7 namespaces)."""
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"cm-{i:05d}", "namespace": f"ns-{i % 7}", "labels": {"a": "b"}},
            "data": {"url": f"https://h:{i}/x", "n": str(i), "ratio": "0.5"},
        }
        for i in range(n)
    ]
    return objs


@pytest.mark.parametrize("stream", [True, False])
def test_a_big_json_snapshot_reads_the_same_through_msgspec(
    stream: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubectl_gitdrift.yamlio import fastjson

    objs = _many(6000)
    path = tmp_path / "s.json"
    if stream:
        path.write_text("\n".join(json.dumps(o) for o in objs) + "\n")
    else:
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}, indent=1))
    assert path.stat().st_size > fastjson.FAST_JSON_CHARS
    assert fastjson.fast_json(path.read_text()) is not None  # the fast way answers
    fast = snapshot.load(path)
    monkeypatch.setattr(fastjson, "FAST_JSON_CHARS", 1 << 62)
    assert snapshot.load(path) == fast
    assert [m.body for m in fast.objects] == sorted(
        objs, key=lambda o: (o["metadata"]["namespace"], o["metadata"]["name"])
    )


def test_a_gitdrift_snapshot_written_as_json_reads_back_fast(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubectl_gitdrift.yamlio import fastjson

    doc = minimal()
    doc["objects"] = [*doc["objects"], *_many(6000)]
    path = tmp_path / "s.json"
    snapshot.write(path, doc)
    assert fastjson.fast_json(path.read_text()) is not None
    state = snapshot.load(path)
    assert len(state.objects) == len(doc["objects"]) + 1  # + argocd-cm
    monkeypatch.setattr(fastjson, "FAST_JSON_CHARS", 1 << 62)
    assert snapshot.load(path) == state


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        (
            '{"kind": "A", "apiVersion": "v1", "kind": "B"}',
            "s.json: document 6001: duplicate key 'kind'",
        ),
        (
            '{"kind": "A", "apiVersion": "v1", "x": ' + "[" * 201 + "]" * 201 + "}",
            "s.json: document 6001: nested deeper than 200 levels",
        ),
        ('{"kind": "A", "apiVersion": "v1"', "s.json: line 2: could not parse YAML"),
    ],
)
def test_a_big_json_snapshot_fails_as_it_did(
    tail: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubectl_gitdrift.yamlio import fastjson

    path = tmp_path / "s.json"
    path.write_text("\n".join(json.dumps(o) for o in _many(6000)) + "\n\n" + tail + "\n")
    with pytest.raises(SnapshotError, match=re.escape(message)) as fast:
        snapshot.load(path)
    monkeypatch.setattr(fastjson, "FAST_JSON_CHARS", 1 << 62)
    with pytest.raises(SnapshotError) as slow:
        snapshot.load(path)
    assert str(fast.value) == str(slow.value)


def _crd(group: str, kind: str, scope: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.lower()}s.{group}"},
        "spec": {"group": group, "names": {"kind": kind}, "scope": scope},
    }


def test_a_plain_lists_crds_decide_the_scope_of_their_kinds() -> None:
    state = clusterstate.from_documents(
        [
            _crd("cert-manager.io", "ClusterIssuer", "Cluster"),
            _crd("cert-manager.io", "Issuer", "Namespaced"),
            _crd("example.com", "Odd", "Sideways"),  # no valid scope: not decided
        ],
        "live.yaml",
    )
    assert state.capture is None
    assert state.scope("cert-manager.io", "ClusterIssuer") is False
    assert state.scope("cert-manager.io", "Issuer") is True
    assert state.scope("example.com", "Odd") is True  # the built-in table: namespaced
    assert state.scope("rbac.authorization.k8s.io", "ClusterRole") is False


def test_recorded_discovery_wins_over_a_crd() -> None:
    capture = clusterstate.Capture(
        api_resources=(
            {"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "namespaced": True},
        )
    )
    state = clusterstate.from_documents(
        [_crd("cert-manager.io", "ClusterIssuer", "Cluster")], "live.yaml", capture=capture
    )
    assert state.scope("cert-manager.io", "ClusterIssuer") is True
