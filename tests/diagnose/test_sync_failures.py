"""Sync failures: the API server's words read back from Argo CD's sync result (the real v1.36 422
and 404), the immutable-field and crd-missing detectors, and the rules that report them."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from kubectl_gitdrift import application, model
from kubectl_gitdrift.builtin.rules import (
    crd_missing,
    git_ahead,
    immutable_field,
    last_sync_failed,
    missing_extraneous,
)
from kubectl_gitdrift.diagnose import immutable, primary, rules, syncfailures, unserved
from kubectl_gitdrift.live import discovery, listing
from tests.conftest import TESTDATA

V136 = TESTDATA / "apiserver" / "v1.36"
STATUS_422 = json.loads(
    (V136 / "errors-01-patch-deployment-selector-immutable-422.json").read_text()
)
# gitops-engine's cleanKubectlOutput leaves kubectl's "error when patching <file>: " in front
RESULT_422 = 'error when patching "/dev/shm/3362407915": ' + STATUS_422["message"]
CLIENT_GO_404 = json.loads(
    (V136 / "errors-02-client-go-status-for-404-text.txt")
    .read_text()
    .split("server response object: %s[", 1)[1]
    .split("]\nError from server", 1)[0]
)
DISCOVER_404 = (
    "failed to discover server resources for group version cert-manager.io/v1: "
    + CLIENT_GO_404["message"]
)
DEPLOY = model.ObjectKey("apps", "Deployment", "im-orders", "orders")
CERT = model.ObjectKey("cert-manager.io", "Certificate", "cm-certs", "gateway-tls")
ARGOCD = model.Owner("argocd-controller", "Update", time="2026-12-02T01:10:02Z")
HUMAN = model.Owner("kubectl-edit", "Update", time="2026-12-02T01:12:00Z")


def _app(
    op: model.OperationState | None = None, automated: bool = True, **kw: Any
) -> model.Application:
    base: dict[str, Any] = {
        "name": "im-orders",
        "namespace": "argocd",
        "project": "default",
        "sources": (model.AppSource("https://example.com/repo.git", "orders"),),
        "dest_server": "https://kubernetes.default.svc",
        "dest_name": "",
        "dest_namespace": "im-orders",
        "sync_policy": model.SyncPolicy(automated=automated, self_heal=automated),
        "ignore_rules": (),
        "sync_status": "OutOfSync",
        "revisions": ("b" * 40,),
        "history": (model.HistoryEntry(0, "a" * 40, "2026-12-02T01:10:03Z", automated=True),),
        "operation": op,
    }
    base.update(kw)
    return model.Application(**base)


def _failed(*results: model.ResourceResult, message: str = "") -> model.OperationState:
    return model.OperationState(
        "Failed", message=message, revision="b" * 40, resources=results, retry_count=5
    )


def _ctx(app: model.Application, *drifts: model.Drift, **kw: Any) -> rules.Context:
    ctx = rules.Context(app, model.Settings(), list(drifts), kw.pop("live", []), True, **kw)
    return replace(ctx, causes=primary.classify(ctx))


def _drift(
    key: model.ObjectKey,
    live: dict[str, Any],
    desired: dict[str, Any],
    *changes: tuple[model.FieldPath, Any, Any],
    owner: model.Owner | None = ARGOCD,
) -> model.Drift:
    return model.Drift(
        key,
        model.ResourceStatus.OUT_OF_SYNC,
        changes=tuple(model.Change(model.Op.CHANGE, p, d, lv, owner) for p, d, lv in changes),
        desired=desired,
        live=live,
    )


# --------------------------------------------------------------------------- the words


def test_the_real_422_names_spec_selector_immutable() -> None:
    (error,) = syncfailures.field_errors(RESULT_422)
    assert error.field == "spec.selector"
    assert error.path == ("spec", "selector")
    assert error.immutable
    assert error.detail.endswith("field is immutable")
    assert syncfailures.server_words(RESULT_422) == STATUS_422["message"]


@pytest.mark.parametrize(
    ("message", "fields"),
    [
        (
            (
                'StatefulSet.apps "db" is invalid: spec: Forbidden: updates to statefulset spec '
                "for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', "
                "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
            ),
            ["spec"],
        ),
        (
            (
                'Service "web" is invalid: [spec.clusterIPs[0]: Invalid value: '
                '[]string{"10.0.0.9"}: may not change once set, spec.clusterIP: Invalid value: '
                '"10.0.0.9": field is immutable]'
            ),
            ["spec.clusterIPs[0]", "spec.clusterIP"],
        ),
        (
            (
                'ConfigMap "settings" is invalid: data: Forbidden: field is immutable when '
                "`immutable` is set"
            ),
            ["data"],
        ),
        (
            (
                'RoleBinding.rbac.authorization.k8s.io "ops" is invalid: roleRef: Invalid value: '
                'rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", '
                'Name:"view"}: cannot change roleRef'
            ),
            ["roleRef"],
        ),
        ('Deployment.apps "x" is invalid: spec.replicas: Invalid value: -1: must be >= 0', []),
        ("admission webhook denied the request", []),
    ],
)
def test_immutable_errors(message: str, fields: list[str]) -> None:
    assert [e.field for e in syncfailures.immutable_errors(message)] == fields


def test_field_path_reads_indexes_and_keys() -> None:
    assert syncfailures.field_path("spec.clusterIPs[0]") == ("spec", "clusterIPs", 0)
    assert syncfailures.field_path("data[tls.crt]") == ("data", "tls.crt")


def test_unserved_words_from_the_real_404() -> None:
    assert CLIENT_GO_404["details"]["causes"][0]["message"] == "404 page not found"
    assert syncfailures.says_unserved(DISCOVER_404, CERT)
    kubectl = (
        'resource mapping not found for name: "gateway-tls" namespace: "cm-certs" from '
        '"/dev/shm/1": no matches for kind "Certificate" in version "cert-manager.io/v1"\n'
        "ensure CRDs are installed first"
    )
    assert syncfailures.says_unserved(kubectl, CERT)
    other = model.ObjectKey("monitoring.coreos.com", "ServiceMonitor", "cm-certs", "x")
    assert not syncfailures.says_unserved(DISCOVER_404, other)
    assert not syncfailures.says_unserved(RESULT_422, CERT)


def test_application_reads_the_per_resource_results() -> None:
    body = {
        "metadata": {"name": "im-orders", "namespace": "argocd"},
        "spec": {"source": {"repoURL": "https://example.com/r.git", "path": "orders"}},
        "status": {
            "operationState": {
                "phase": "Failed",
                "message": "one or more objects failed to apply, reason: " + RESULT_422,
                "retryCount": 5,
                "operation": {"retry": {"limit": 5}, "sync": {"revision": "b" * 40}},
                "syncResult": {
                    "revision": "b" * 40,
                    "resources": [
                        {
                            "group": "apps",
                            "version": "v1",
                            "kind": "Deployment",
                            "namespace": "im-orders",
                            "name": "orders",
                            "status": "SyncFailed",
                            "message": RESULT_422,
                            "hookPhase": "Failed",
                            "syncPhase": "Sync",
                        },
                        "not a result",
                    ],
                },
            }
        },
    }
    op = application.parse_application(body).operation
    assert op is not None
    assert (op.retry_count, op.retry_limit) == (5, 5)
    result = op.result_for(DEPLOY)
    assert result is not None
    assert result.failed
    assert result.message == RESULT_422
    assert op.result_for(CERT) is None


# --------------------------------------------------------------------------- immutable-field

SELECTOR_LIVE = {"spec": {"selector": {"matchLabels": {"app": "orders"}}}}
SELECTOR_GIT = {"spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "orders"}}}}


def _selector_drift(owner: model.Owner | None = ARGOCD) -> model.Drift:
    return _drift(
        DEPLOY,
        {**SELECTOR_LIVE, "metadata": {"labels": {"app": "orders"}}},
        {**SELECTOR_GIT, "metadata": {"labels": {"app.kubernetes.io/name": "orders"}}},
        (("spec", "selector", "matchLabels", "app"), None, "orders"),
        (("metadata", "labels", "app"), None, "orders"),
        owner=owner,
    )


def test_immutable_field_from_the_failed_sync() -> None:
    result = model.ResourceResult(
        "apps", "Deployment", "im-orders", "orders", "SyncFailed", RESULT_422
    )
    ctx = _ctx(
        _app(_failed(result, message="one or more objects failed to apply")), _selector_drift()
    )
    selector = ctx.cause(DEPLOY, ("spec", "selector", "matchLabels", "app"))
    labels = ctx.cause(DEPLOY, ("metadata", "labels", "app"))
    assert selector is not None
    assert labels is not None
    assert selector.evidence["field"] == "spec.selector"
    assert selector.evidence["reported"]
    assert labels.evidence["heldBy"] == ["spec.selector"]
    assert (selector.adoptable, selector.revertable) == (True, False)
    titles = [f.title for f in selector.fixes]
    assert titles[0].endswith("(sync with --force --replace)")
    assert "--force --replace" in selector.fixes[0].commands[0]
    assert "Force=true,Replace=true" in str(selector.fixes[0].snippet)
    (finding,) = immutable_field.check(ctx)
    assert finding.path == ("spec", "selector")
    assert finding.evidence["heldBack"] == ["metadata.labels.app"]
    assert "422" in finding.message
    assert "selfHeal" in finding.message
    (failed,) = last_sync_failed.check(ctx)
    assert failed.evidence["resources"][0]["cause"] == "immutable-field"
    assert "immutable-field: git changes spec.selector" in failed.message
    assert "tried 6 times" in failed.message


def test_immutable_field_from_the_diff_before_any_sync() -> None:
    ctx = _ctx(_app(None, automated=False), _selector_drift(owner=None))
    (finding,) = immutable_field.check(ctx)
    assert "The last sync failed" not in finding.message
    assert "automated sync is off" in finding.message
    assert list(last_sync_failed.check(ctx)) == []


def test_another_writers_change_is_not_held_back() -> None:
    drift = _drift(
        DEPLOY,
        SELECTOR_LIVE,
        SELECTOR_GIT,
        (("spec", "selector", "matchLabels", "app"), None, "orders"),
    )
    scaled = model.Change(model.Op.CHANGE, ("spec", "replicas"), 2, 5, HUMAN)
    ctx = _ctx(_app(), replace(drift, changes=(*drift.changes, scaled)))
    assert ctx.cause(DEPLOY, ("spec", "replicas")) is None  # manual-drift tells that one
    assert ctx.cause(DEPLOY, ("spec", "selector", "matchLabels", "app")) is not None


STS = model.ObjectKey("apps", "StatefulSet", "db", "pg")
CLAIM = {"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}
FILLED = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    **CLAIM,
    "status": {"phase": "Pending"},
}


@pytest.mark.parametrize(
    ("key", "path", "live", "desired", "root"),
    [
        (DEPLOY, ("spec", "selector", "matchLabels", "app"), {}, {}, ("spec", "selector")),
        (DEPLOY, ("spec", "template", "metadata", "labels", "app"), {}, {}, None),
        (
            model.ObjectKey("apps", "DaemonSet", "ns", "x"),
            ("spec", "selector"),
            {},
            {},
            ("spec", "selector"),
        ),
        (STS, ("spec", "serviceName"), {}, {}, ("spec", "serviceName")),
        (STS, ("spec", "template", "spec"), {}, {}, None),
        (STS, ("spec", "replicas"), {}, {}, None),
        (
            STS,
            ("spec", "volumeClaimTemplates"),
            {"spec": {"volumeClaimTemplates": [FILLED]}},
            {"spec": {"volumeClaimTemplates": [CLAIM]}},
            None,  # only what the server fills in: server-filled's, not a change git makes
        ),
        (
            STS,
            ("spec", "volumeClaimTemplates"),
            {"spec": {"volumeClaimTemplates": [FILLED]}},
            {"spec": {"volumeClaimTemplates": [{**CLAIM, "spec": {"storageClassName": "ssd"}}]}},
            ("spec", "volumeClaimTemplates"),
        ),
        (
            model.ObjectKey("batch", "Job", "ns", "migrate"),
            ("spec", "template", "spec", "containers"),
            {},
            {},
            ("spec", "template"),
        ),
        (
            model.ObjectKey("batch", "Job", "ns", "migrate"),
            ("spec", "template", "spec", "nodeSelector"),
            {"spec": {"suspend": True}, "status": {}},
            {},
            None,  # a suspended Job that never started may move
        ),
        (
            model.ObjectKey("batch", "Job", "ns", "migrate"),
            ("spec", "completions"),
            {},
            {"spec": {"completionMode": "Indexed", "completions": 4, "parallelism": 4}},
            None,
        ),
        (
            model.ObjectKey("", "Service", "ns", "web"),
            ("spec", "clusterIP"),
            {"spec": {"clusterIP": "10.0.0.9"}},
            {"spec": {"clusterIP": "10.0.0.10"}},
            ("spec", "clusterIP"),
        ),
        (
            model.ObjectKey("", "Service", "ns", "web"),
            ("spec", "clusterIP"),
            {"spec": {"clusterIP": "10.0.0.9"}},
            {"spec": {"clusterIP": ""}},
            None,  # empty in git: the server keeps the allocated address
        ),
        (
            model.ObjectKey("", "Service", "ns", "web"),
            ("spec", "clusterIP"),
            {"spec": {"clusterIP": "10.0.0.9"}},
            {"spec": {"type": "ExternalName", "clusterIP": "10.0.0.10"}},
            None,
        ),
        (
            model.ObjectKey("", "PersistentVolumeClaim", "ns", "data"),
            ("spec", "resources", "requests", "storage"),
            {"status": {"phase": "Bound"}},
            {},
            None,
        ),
        (
            model.ObjectKey("", "PersistentVolumeClaim", "ns", "data"),
            ("spec", "resources", "requests", "storage"),
            {"status": {"phase": "Pending"}},
            {},
            ("spec",),
        ),
        (
            model.ObjectKey("", "PersistentVolumeClaim", "ns", "data"),
            ("spec", "storageClassName"),
            {"status": {"phase": "Bound"}},
            {},
            ("spec",),
        ),
        (
            model.ObjectKey("", "ConfigMap", "ns", "settings"),
            ("data", "mode"),
            {"immutable": True},
            {},
            ("data",),
        ),
        (model.ObjectKey("", "ConfigMap", "ns", "settings"), ("data", "mode"), {}, {}, None),
        (
            model.ObjectKey("", "Secret", "ns", "creds"),
            ("type",),
            {"type": "Opaque"},
            {"type": "kubernetes.io/tls"},
            ("type",),
        ),
        (
            model.ObjectKey("rbac.authorization.k8s.io", "RoleBinding", "ns", "ops"),
            ("roleRef", "name"),
            {},
            {},
            ("roleRef",),
        ),
    ],
)
def test_the_immutable_table(
    key: model.ObjectKey,
    path: model.FieldPath,
    live: dict[str, Any],
    desired: dict[str, Any],
    root: model.FieldPath | None,
) -> None:
    values = [model.lookup(desired, path)[1], model.lookup(live, path)[1]]
    causes = list(immutable.detect(_ctx(_app(), _drift(key, live, desired, (path, *values)))))
    assert [c.evidence.get("field") for c in causes] == (
        [model.display_path(root)] if root is not None else []
    )


def test_a_custom_kind_counts_when_its_422_names_the_field() -> None:
    key = model.ObjectKey("example.com", "Widget", "ns", "w1")
    message = (
        'Widget.example.com "w1" is invalid: spec.size: Invalid value: "string": Value is immutable'
    )
    result = model.ResourceResult("example.com", "Widget", "ns", "w1", "SyncFailed", message)
    drift = _drift(key, {}, {}, (("spec", "size"), 3, 2), (("spec", "color"), "red", "blue"))
    ctx = _ctx(_app(_failed(result)), drift)
    size, color = ctx.cause(key, ("spec", "size")), ctx.cause(key, ("spec", "color"))
    assert size is not None
    assert size.evidence["field"] == "spec.size"
    assert color is not None
    assert color.evidence["heldBy"] == ["spec.size"]
    assert list(immutable.detect(_ctx(_app(), drift))) == []  # nothing says so without the 422


# --------------------------------------------------------------------------- crd-missing


def _missing(key: model.ObjectKey = CERT, origin: str = "gateway/certificate.yaml") -> model.Drift:
    desired = {"apiVersion": "cert-manager.io/v1", "kind": key.kind, "metadata": {"name": key.name}}
    return model.Drift(key, model.ResourceStatus.MISSING, desired=desired, origin=origin)


def _discover_failed() -> model.OperationState:
    result = model.ResourceResult(
        "cert-manager.io", "Certificate", "cm-certs", "gateway-tls", "SyncFailed", DISCOVER_404
    )
    return _failed(result, message="one or more synchronization tasks are not valid")


def test_crd_missing_from_the_failed_sync() -> None:
    ctx = _ctx(_app(_discover_failed()), _missing())
    cause = ctx.cause(CERT, None)
    assert cause is not None
    assert cause.code == "crd-missing"
    assert cause.evidence["crd"] == "certificates.cert-manager.io"
    assert cause.evidence["syncResult"]["message"] == DISCOVER_404
    assert (cause.adoptable, cause.revertable) == (False, False)
    (finding,) = crd_missing.check(ctx)
    assert "nothing else of the app was synced" in finding.message
    assert "Install the CRD first" in finding.message
    assert list(missing_extraneous.check(ctx)) == []  # not "a sync creates it"
    (failed,) = last_sync_failed.check(ctx)
    assert "crd-missing: the cluster does not serve cert-manager.io/v1 Certificate" in (
        failed.message
    )


def test_crd_missing_from_discovery_alone() -> None:
    said = unserved.note("cert-manager.io", "Certificate")
    ctx = _ctx(_app(None), _missing(), notes=(said,))
    cause = ctx.cause(CERT, None)
    assert cause is not None
    assert cause.evidence["discovery"] == said
    (finding,) = crd_missing.check(ctx)
    assert "The next automated sync fails on it" in finding.message


def test_the_note_is_the_one_a_live_run_writes() -> None:
    served = discovery.Discovery([])
    _, notes = listing.plan(served, [("cert-manager.io", "v1", "Certificate", "cm-certs")], [])
    assert notes == [unserved.note("cert-manager.io", "Certificate")]


def test_no_claim_when_served_builtin_or_unsaid() -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "certificates.cert-manager.io"},
        "spec": {"group": "cert-manager.io", "names": {"kind": "Certificate"}},
    }
    live = [model.Manifest(model.ObjectKey.of(crd), crd)]
    assert ctx_causes(_ctx(_app(_discover_failed()), _missing(), live=live)) == []
    assert ctx_causes(_ctx(_app(None), _missing())) == []
    builtin = model.ObjectKey("policy", "PodSecurityPolicy", "", "restricted")
    said = unserved.note("policy", "PodSecurityPolicy")
    assert ctx_causes(_ctx(_app(None), _missing(builtin), notes=(said,))) == []


def ctx_causes(ctx: rules.Context) -> list[str]:
    return [c.code for c in ctx.causes.values()]


def test_crd_in_git_and_skip_crds_are_named() -> None:
    crd_key = model.ObjectKey("apiextensions.k8s.io", "CustomResourceDefinition", "", "certs.x.io")
    crd = model.Drift(
        crd_key,
        model.ResourceStatus.MISSING,
        desired={"spec": {"group": "cert-manager.io", "names": {"kind": "Certificate"}}},
        origin="crds/certificates.yaml",
    )
    helm = model.AppSource(
        "https://charts.example.com", chart="gw", kind="helm", options={"skipCrds": True}
    )
    ctx = _ctx(_app(_discover_failed(), sources=(helm,)), _missing(), crd)
    cause = ctx.cause(CERT, None)
    assert cause is not None
    assert (cause.evidence["crd"], cause.evidence["crdInGit"]) == (
        "certs.x.io",
        "crds/certificates.yaml",
    )
    said = unserved.note("cert-manager.io", "Certificate")
    assert ctx_causes(_ctx(_app(None), _missing(), crd, notes=(said,))) == []  # a sync makes it
    steps = " ".join(cause.fixes[0].steps)
    assert "this app renders certs.x.io" in steps
    assert "skipCrds: true" in steps


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("Certificate", "certificates"),
        ("Ingress", "ingresses"),
        ("Policy", "policies"),
        ("Gateway", "gateways"),
    ],
)
def test_crd_name_guess(kind: str, name: str) -> None:
    assert unserved.crd_name("x.io", kind) == f"{name}.x.io"


def test_git_ahead_says_nothing_when_every_difference_has_its_cause() -> None:
    result = model.ResourceResult(
        "apps", "Deployment", "im-orders", "orders", "SyncFailed", RESULT_422
    )
    ctx = _ctx(_app(_failed(result)), _selector_drift())
    assert list(git_ahead.check(ctx)) == []


def test_the_v136_readme_names_every_recording() -> None:
    """(discovery/ has a README of its own.)"""
    readme = (V136 / "README.md").read_text(encoding="utf-8")
    files = sorted(p.name for p in V136.iterdir() if p.is_file() and p.name != "README.md")
    assert files
    assert [name for name in files if f"`{name}`" not in readme] == []


def test_a_failed_attempt_waiting_for_its_retry_counts() -> None:
    result = model.ResourceResult(
        "apps", "Deployment", "im-orders", "orders", "SyncFailed", RESULT_422
    )
    retrying = model.OperationState(
        "Running",
        message="one or more objects failed to apply, reason: "
        + RESULT_422
        + ". Retrying attempt #2 at 1:11AM.",
        revision="b" * 40,
        resources=(result,),
        retry_count=2,
        retry_limit=5,
    )
    ctx = _ctx(_app(retrying), _selector_drift())
    (finding,) = immutable_field.check(ctx)
    assert finding.evidence["reported"]
    assert "Argo CD is retrying the sync (retry 2 of 5)" in finding.message
    assert list(last_sync_failed.check(ctx)) == []  # not over yet
