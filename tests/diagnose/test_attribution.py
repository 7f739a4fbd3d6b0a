"""FieldsV1 ownership (f:, k:, v:, i:, .), several entries per manager, Argo CD's managers, the
/scale entry without time, Events that date it, and snapshots without managedFields."""

from __future__ import annotations

import json
from pathlib import Path

from kubectl_gitdrift import model
from kubectl_gitdrift.diagnose import attribution
from tests.conftest import TESTDATA
from tests.support.diagnose_helper import diagnose

REFERENCE = Path(__file__).resolve().parents[2] / "testdata" / "apiserver"
CONTAINER = model.ListKey((("name", "guestbook"),))
IMAGE = ("spec", "template", "spec", "containers", CONTAINER, "image")
PORT = model.ListKey((("containerPort", 80),))


def _ref(name: str) -> dict:  # type: ignore[type-arg]
    return json.loads((REFERENCE / name).read_text())  # type: ignore[no-any-return]


def test_set_image_and_edit_owners_from_the_recording() -> None:
    live = _ref("incident-05-deployment-after-kubectl-set-image.json")
    claims = attribution.claims(live, IMAGE)
    assert next((c.owner.manager, c.how) for c in claims) == ("kubectl-set", "exact")
    pull = (*IMAGE[:-1], "imagePullPolicy")
    assert attribution.claims(live, pull)[0].owner.manager == "kubectl-edit"
    scale = attribution.claims(live, ("spec", "replicas"))[0].owner
    assert (scale.manager, scale.subresource, scale.time) == ("kubectl", "scale", None)
    # the strategic-merge key (containerPort) finds the SSA key {containerPort, protocol}
    port = (*IMAGE[:-1], "ports", PORT, "containerPort")
    assert attribution.claims(live, port)[0].owner.manager == "argocd-controller"
    # a manager with two entries (status and main resource) is two claims, told apart
    revision = ("metadata", "annotations", "deployment.kubernetes.io/revision")
    owner = attribution.claims(live, revision)[0].owner
    assert (owner.manager, owner.subresource) == ("kube-controller-manager", "status")


def test_encodings() -> None:
    trie = {
        "f:metadata": {
            "f:finalizers": {".": {}, 'v:"kubernetes.io/pvc-protection"': {}},
            "f:labels": {".": {}, "f:app": {}},
        },
        "f:spec": {
            "f:selector": {},
            "f:args": {"i:1": {}},
            "f:ports": {'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}}},
        },
    }
    live = {
        "metadata": {
            "finalizers": ["kubernetes.io/pvc-protection"],
            "labels": {"app": "x", "b": 1},
        },
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "args": ["a", "b"],
            "ports": [{"port": 80, "protocol": "TCP"}],
        },
    }
    own = lambda path: attribution.ownership(trie, path, live)  # noqa: E731
    assert own(("metadata", "finalizers", 0)) == "exact"
    assert own(("metadata", "labels", "app")) == "exact"
    assert own(("metadata", "labels", "b")) is None  # "." owns the map, not every key
    assert own(("metadata", "labels")) == "exact"
    assert own(("spec", "selector", "matchLabels", "a")) == "atomic"
    assert own(("spec", "args", 1)) == "exact"
    assert own(("spec", "args", 0)) is None
    assert own(("spec", "ports", model.ListKey((("port", 80),)), "port")) == "exact"
    assert own(("spec", "ports", 0)) == "exact"  # an index finds the keyed item via live
    assert own(("spec",)) == "part"


def test_argocd_managers_lose_to_the_writer_and_are_recognised() -> None:
    for name in ("argocd-controller", "argocd-application-controller", "argocd"):
        assert model.Owner(name, "Update").is_argocd
        assert attribution.writer_kind(model.Owner(name, "Update")) == "argocd"
    assert attribution.writer_kind(model.Owner("kubectl", "Update", "scale")) == "human"
    assert attribution.writer_kind(model.Owner("kube-controller-manager", "Update", "scale")) == (
        "controller"
    )
    assert attribution.writer_kind(
        model.Owner("kubectl", "Update"), "system:serviceaccount:x:y"
    ) == ("controller")
    assert attribution.writer_kind(None) == "unknown"


def test_event_dates_a_scale_without_time() -> None:
    import yaml

    items = yaml.safe_load((TESTDATA / "incident" / "snapshot.yaml").read_text())["items"]
    events = [i for i in items if i["kind"] == "Event"]
    key = model.ObjectKey("apps", "Deployment", "prod", "guestbook")
    change = model.Change(model.Op.CHANGE, ("spec", "replicas"), 3, 6)
    clue = attribution.date_from_events(events, key, change)
    assert clue is not None
    assert (clue.time, clue.component) == ("2026-11-30T04:01:43Z", "deployment-controller")
    assert (
        attribution.date_from_events(
            events, key, model.Change(model.Op.CHANGE, ("spec", "replicas"), 3, 9)
        )
        is None
    )


def test_without_managed_fields_says_so(build_repo) -> None:  # type: ignore[no-untyped-def]
    scenario = TESTDATA / "scenarios" / "diag-no-managed-fields"
    report = diagnose(scenario / "live.yaml", build_repo(TESTDATA / "incident" / "repo-src"))
    (finding,) = [f for f in report.findings if f.code == "manual-drift"]
    assert finding.evidence["owner"] is None
    assert finding.evidence["managedFields"] == "absent from the snapshot"
    assert "cannot name" in finding.message
    assert any("no managedFields" in n for n in report.notes)


def test_commit_that_last_touched_the_file(build_repo) -> None:  # type: ignore[no-untyped-def]
    report = diagnose(
        TESTDATA / "incident" / "snapshot.yaml", build_repo(TESTDATA / "incident" / "repo-src")
    )
    (finding,) = [f for f in report.findings if f.code == "manual-drift"]
    assert finding.evidence["gitLastChange"] == {
        "sha": "9e83146dfad2a9f5bed0a3541370fd573772c6b3",
        "author": "Sam Platform <sam@example.com>",
        "date": "2026-11-30T03:52:10+00:00",
        "subject": "prod: run guestbook with 3 replicas",
        "file": "overlays/prod/guestbook/kustomization.yaml",
        "beforeLastSync": True,
    }
    assert finding.evidence["direction"] == "cluster"
