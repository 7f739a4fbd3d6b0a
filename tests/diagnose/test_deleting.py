"""stuck-deleting (diagnose/deleting.py): an object of the app held by finalizers nobody
removes, on the v1.36 recordings (testdata/apiserver/v1.36/finalizer-*): the 200 answer to a
foreground DELETE, then the object after the garbage collector removed foregroundDeletion."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from kubectl_gitdrift import model
from kubectl_gitdrift.builtin.rules import git_ahead, manual_drift, stuck_deleting, sync_policy
from kubectl_gitdrift.diagnose import deleting, primary, remedies
from kubectl_gitdrift.diagnose import rules as diagnosis
from tests.conftest import TESTDATA

V136 = TESTDATA / "apiserver" / "v1.36"
KEY = model.ObjectKey("", "ConfigMap", "cm-certs", "finalizer-demo")
Obj = dict[str, Any]


def recorded(name: str) -> Obj:
    body: Obj = json.loads((V136 / name).read_text())
    return body


def context(
    live: Obj,
    *,
    status: model.ResourceStatus = model.ResourceStatus.SYNCED,
    changes: tuple[model.Change, ...] = (),
    now: str = "2026-12-02T01:13:42Z",
) -> diagnosis.Context:
    drift = model.Drift(KEY, status, changes=changes, live=live)
    app = model.Application(
        name="finalizer-demo",
        namespace="argocd",
        project="default",
        sources=(),
        dest_server="https://kubernetes.default.svc",
        dest_name="",
        dest_namespace="cm-certs",
        sync_policy=model.SyncPolicy(automated=True),
        ignore_rules=(),
        sync_status="OutOfSync",
        revisions=("2" * 40,),
        history=(model.HistoryEntry(0, "1" * 40, "2026-12-02T01:13:36Z"),),
        operation=None,
    )
    return diagnosis.Context(
        app=app,
        settings=model.Settings(),
        drifts=(drift,),
        live=(model.Manifest(KEY, live),),
        managed_fields_known=True,
        now=now,
    )


def test_the_recorded_object_after_gc_is_held_by_its_custom_finalizer() -> None:
    (cause,) = deleting.detect(context(recorded("finalizer-03-get-after-gc-200.json")))
    assert (cause.code, cause.key, cause.path) == ("stuck-deleting", KEY, None)
    assert (cause.adoptable, cause.revertable) == (False, False)
    (held,) = cause.evidence["finalizers"]
    assert held["name"] == "example.com/hold"
    assert "the controller that owns example.com" in held["removedBy"]
    assert held["setBy"] == {"manager": "kubectl-create", "time": "2026-12-02T01:13:36Z"}
    assert cause.evidence["deletionTimestamp"] == "2026-12-02T01:13:37Z"
    assert cause.evidence["deletingForSeconds"] == 5
    fix, verify = cause.fixes
    assert verify.kind is model.RemedyKind.VERIFY
    assert fix.kind is model.RemedyKind.REVERT
    assert fix.commands == (
        (
            "kubectl patch configmap/finalizer-demo -n cm-certs --type=json "
            """-p '[{"op":"remove","path":"/metadata/finalizers"}]'"""
        ),
    )
    assert any("WARNING" in step for step in fix.steps)


def test_right_after_the_delete_the_garbage_collector_s_finalizer_is_named_too() -> None:
    (cause,) = deleting.detect(context(recorded("finalizer-02-delete-foreground-200.json")))
    names = [f["name"] for f in cause.evidence["finalizers"]]
    assert names == ["example.com/hold", "foregroundDeletion"]
    assert "garbage collector" in cause.evidence["finalizers"][1]["removedBy"]
    # the fix names what holds it for good, not the garbage collector's own finalizer
    assert [s for s in cause.fixes[0].steps if s.startswith("foregroundDeletion")] == []


def test_an_object_not_being_deleted_is_not_claimed() -> None:
    assert list(deleting.detect(context(recorded("finalizer-01-configmap-created-201.json")))) == []
    gone = recorded("finalizer-03-get-after-gc-200.json")
    gone["metadata"]["finalizers"] = []  # what finalizer-05 answered: deleted right after
    assert list(deleting.detect(context(gone))) == []


@pytest.mark.parametrize(
    ("finalizer", "remover"),
    [
        ("kubernetes.io/pvc-protection", "PVC protection controller"),
        ("foregroundDeletion", "garbage collector"),
        ("orphan", "garbage collector"),
        ("resources-finalizer.argocd.argoproj.io", "Argo CD's app deletion"),
        ("resources-finalizer.argocd.argoproj.io/background", "Argo CD's app deletion"),
        ("kubernetes", "namespace controller"),
        ("cert-manager.io/cleanup", "the controller that owns cert-manager.io"),
    ],
)
def test_what_removes_each_finalizer(finalizer: str, remover: str) -> None:
    assert remover in deleting.remover(finalizer)


def test_a_namespace_s_spec_finalizer_counts() -> None:
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "cm-certs", "deletionTimestamp": "2026-12-02T01:13:37Z"},
        "spec": {"finalizers": ["kubernetes"]},
    }
    assert deleting.finalizers(namespace) == ["kubernetes"]


def test_changed_fields_are_its_own_and_no_generic_story_or_fix_is_told() -> None:
    change = model.Change(model.Op.ADD, ("data", "rotation"), "weekly", None)
    ctx = context(
        recorded("finalizer-03-get-after-gc-200.json"),
        status=model.ResourceStatus.OUT_OF_SYNC,
        changes=(change,),
    )
    ctx = replace(ctx, causes=primary.classify(ctx))
    assert ctx.cause(KEY, ("data", "rotation")).code == "stuck-deleting"  # type: ignore[union-attr]
    (finding,) = stuck_deleting.check(ctx)
    assert finding.path is None
    assert "cannot update or re-create it while it is being deleted" in finding.message
    assert "example.com/hold" in finding.message
    assert list(manual_drift.check(ctx)) == []
    assert list(git_ahead.check(ctx)) == []  # git moved, but a sync would not help
    assert list(sync_policy.check(ctx)) == []
    out = remedies.recommend(ctx.app, ctx.drifts, [finding], causes=ctx.causes)
    assert [
        r.title for r in out if r.kind in (model.RemedyKind.ADOPT, model.RemedyKind.REVERT)
    ] == ["Let the deletion of configmap/finalizer-demo finish"]
