"""The server-filled detector (diagnose/server_filled.py) and its rule: claimed only when every
differing leaf is a known server fill with the value the server fills, on a field Argo CD or
nobody owns."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import yaml

from kubectl_gitdrift import model
from kubectl_gitdrift.builtin.rules import server_filled as rule
from kubectl_gitdrift.diagnose import primary, rules, server_filled
from kubectl_gitdrift.model import Op, RemedyKind

STS = model.ObjectKey("apps", "StatefulSet", "shop", "db")
WIDGET = model.ObjectKey("example.com", "Widget", "shop", "w1")
ARGOCD = model.Owner("argocd-controller", "Apply", time="2026-11-24T09:10:00Z")
CLAIMS = ("spec", "volumeClaimTemplates")


def _app(**kw: Any) -> model.Application:
    base: dict[str, Any] = {
        "name": "shop",
        "namespace": "argocd",
        "project": "default",
        "sources": (),
        "dest_server": "https://kubernetes.default.svc",
        "dest_name": "",
        "dest_namespace": "shop",
        "sync_policy": model.SyncPolicy(automated=True, sync_options=("ServerSideApply=true",)),
        "ignore_rules": (),
        "sync_status": "OutOfSync",
        "revisions": (),
        "history": (),
        "operation": None,
    }
    base.update(kw)
    return model.Application(**base)


def _claim(**extra: Any) -> dict[str, Any]:
    """A claim template as git's predicted object has it after Argo CD's defaulting."""
    return {
        "metadata": {"name": "data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "10Gi"}},
            "volumeMode": "Filesystem",
        },
        "status": {"phase": "Pending"},
        **extra,
    }


def _served(claim: dict[str, Any]) -> dict[str, Any]:
    """The claim template as the API server stores it: apiVersion and kind set."""
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", **claim}


def _sts_drift(desired: list[Any], live: list[Any], owner: model.Owner | None = ARGOCD) -> Any:
    body = {"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"volumeClaimTemplates": live}}
    change = model.Change(Op.CHANGE, CLAIMS, desired, live, owner)
    return model.Drift(
        STS, model.ResourceStatus.OUT_OF_SYNC, (change,), origin="app/sts.yaml", live=body
    )


def _ctx(
    *drifts: model.Drift,
    live: tuple[model.Manifest, ...] = (),
    app: model.Application | None = None,
    strategy: model.DiffStrategy = model.DiffStrategy.STRUCTURED_MERGE,
    known: bool = True,
) -> rules.Context:
    ctx = rules.Context(
        app=app or _app(),
        settings=model.Settings(),
        drifts=drifts,
        live=live,
        managed_fields_known=known,
        strategy=strategy,
    )
    return replace(ctx, causes=primary.classify(ctx))


def test_claim_templates_on_a_1_34_server_are_server_filled_without_a_git_fix() -> None:
    desired = [_claim(metadata={"name": "data", "creationTimestamp": None})]
    ctx = _ctx(_sts_drift(desired, [_served(_claim())]))
    cause = ctx.cause(STS, CLAIMS)
    assert cause is not None
    assert cause.code == "server-filled"
    assert (cause.adoptable, cause.revertable) == (False, False)
    assert [f["at"] for f in cause.evidence["fields"]] == [
        "[0].apiVersion",
        "[0].kind",
        "[0].metadata.creationTimestamp",
    ]
    # creationTimestamp: null comes from Argo CD's own encoding: no value in git clears it
    assert [f.kind for f in cause.fixes] == [RemedyKind.PREVENT, RemedyKind.PREVENT]
    assert cause.fixes[0].title == "Compare with Server-Side Diff"
    assert '"jsonPointers":["/spec/volumeClaimTemplates"]' in cause.fixes[1].commands[0]


def test_claim_templates_before_1_34_offer_apiversion_and_kind_in_git() -> None:
    stamp = {"name": "data", "creationTimestamp": None}
    ctx = _ctx(_sts_drift([_claim(metadata=stamp)], [_served(_claim(metadata=stamp))]))
    cause = ctx.cause(STS, CLAIMS)
    assert cause is not None
    adopt = cause.fixes[0]
    assert adopt.kind is RemedyKind.ADOPT
    assert adopt.file == "app/sts.yaml"
    assert yaml.safe_load(adopt.snippet or "") == {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "volumeClaimTemplates": [
                {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}}
            ]
        },
    }
    assert "status" not in (adopt.snippet or "")
    # what git lacks is ignored field by field (a pointer each), not the whole list
    ignore = cause.fixes[-1]
    assert '"jsonPointers":["/spec/volumeClaimTemplates/0/apiVersion",' in ignore.commands[0]


@pytest.mark.parametrize(
    ("live", "owner"),
    [
        # a real change beside the server's fields: a human's, not the server's
        ([_served(_claim(spec={"accessModes": ["ReadWriteOnce"], "volumeMode": "Block"}))], ARGOCD),
        # not the value the server fills
        ([{**_served(_claim()), "apiVersion": "v2"}], ARGOCD),
        # another claim template: the server never adds items
        ([_served(_claim()), _served(_claim())], ARGOCD),
        # the list is someone else's write
        ([_served(_claim())], model.Owner("kubectl-edit", "Update", time="2026-11-25T10:00:00Z")),
    ],
    ids=["changed-spec", "other-value", "added-item", "human-owner"],
)
def test_not_server_filled(live: list[Any], owner: model.Owner) -> None:
    ctx = _ctx(_sts_drift([_claim()], live, owner))
    # a real change to the claim templates is immutable-field's (the server refuses it)
    assert [c.code for c in ctx.causes.values() if c.code != "immutable-field"] == []


def test_a_deployment_list_is_never_taken_for_claim_templates() -> None:
    key = model.ObjectKey("apps", "Deployment", "shop", "web")
    change = model.Change(Op.CHANGE, CLAIMS, [_claim()], [_served(_claim())], ARGOCD)
    drift = model.Drift(key, model.ResourceStatus.OUT_OF_SYNC, (change,), live={})
    assert _ctx(drift).causes == {}


# --------------------------------------------------------------------------- CRD defaults

CRD = model.Manifest(
    model.ObjectKey("apiextensions.k8s.io", "CustomResourceDefinition", "", "widgets.example.com"),
    {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "mode": {"type": "string", "default": "auto"},
                                        "ports": {
                                            "type": "array",
                                            "items": {
                                                "type": "object",
                                                "properties": {
                                                    "port": {"type": "integer"},
                                                    "protocol": {
                                                        "type": "string",
                                                        "default": "TCP",
                                                    },
                                                },
                                            },
                                        },
                                    },
                                }
                            },
                        }
                    },
                }
            ],
        },
    },
)


def _widget(change: model.Change) -> model.Drift:
    live = {"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"mode": "auto"}}
    return model.Drift(
        WIDGET, model.ResourceStatus.OUT_OF_SYNC, (change,), origin="app/w.yaml", live=live
    )


def test_a_crd_schema_default_git_does_not_set_is_server_filled() -> None:
    change = model.Change(Op.REMOVE, ("spec", "mode"), None, "auto", None)
    ctx = _ctx(_widget(change), live=(CRD,), strategy=model.DiffStrategy.LEGACY)
    cause = ctx.cause(WIDGET, ("spec", "mode"))
    assert cause is not None
    assert cause.evidence["fields"][0]["filledBy"].startswith("the CRD's")
    assert yaml.safe_load(cause.fixes[0].snippet or "")["spec"] == {"mode": "auto"}


def test_one_set_of_fixes_for_all_the_filled_fields_of_a_resource() -> None:
    mode = model.Change(Op.REMOVE, ("spec", "mode"), None, "auto", None)
    ports = model.Change(
        Op.CHANGE, ("spec", "ports"), [{"port": 80}], [{"port": 80, "protocol": "TCP"}], ARGOCD
    )
    drift = replace(_widget(mode), changes=(mode, ports))
    ctx = _ctx(drift, live=(CRD,))
    first, second = ctx.cause(WIDGET, ("spec", "mode")), ctx.cause(WIDGET, ("spec", "ports"))
    assert first is not None
    assert second is not None
    assert first.fixes == second.fixes
    assert yaml.safe_load(first.fixes[0].snippet or "")["spec"] == {
        "mode": "auto",
        "ports": [{"protocol": "TCP"}],
    }
    assert '"jsonPointers":["/spec/mode","/spec/ports/0/protocol"]' in first.fixes[-1].commands[0]


def test_a_default_inside_an_atomic_list_is_server_filled() -> None:
    path = ("spec", "ports")
    change = model.Change(
        Op.CHANGE, path, [{"port": 80}], [{"port": 80, "protocol": "TCP"}], ARGOCD
    )
    cause = _ctx(_widget(change), live=(CRD,)).cause(WIDGET, path)
    assert cause is not None
    assert [f["at"] for f in cause.evidence["fields"]] == ["[0].protocol"]


@pytest.mark.parametrize(
    ("live", "owner", "known", "crds"),
    [
        ("manual", None, True, (CRD,)),  # not the default
        ("auto", model.Owner("kubectl-edit", "Update"), True, (CRD,)),  # a human wrote it
        ("auto", None, False, (CRD,)),  # no managedFields: who wrote it is unknown
        ("auto", None, True, ()),  # no CRD read: no schema to show the default
    ],
    ids=["not-default", "human", "no-managed-fields", "no-crd"],
)
def test_crd_default_needs_its_evidence(
    live: str, owner: model.Owner | None, known: bool, crds: tuple[model.Manifest, ...]
) -> None:
    change = model.Change(Op.REMOVE, ("spec", "mode"), None, live, owner)
    assert _ctx(_widget(change), live=crds, known=known).causes == {}


# --------------------------------------------------------------------------- the rule


@pytest.mark.parametrize("self_heal", [False, True])
def test_the_finding_says_what_sync_and_selfheal_do(self_heal: bool) -> None:
    policy = model.SyncPolicy(automated=True, self_heal=self_heal)
    desired = [_claim(metadata={"name": "data", "creationTimestamp": None})]
    ctx = _ctx(_sts_drift(desired, [_served(_claim())]), app=_app(sync_policy=policy))
    (finding,) = rule.check(ctx)
    assert finding.code == "server-filled"
    assert finding.key == STS
    assert finding.path == CLAIMS
    assert "Nobody changed them" in finding.message
    assert "stays OutOfSync after every sync" in finding.message
    heal = "selfHeal keeps re-syncing it" if self_heal else "turning selfHeal on would not clear it"
    assert heal in finding.message


def test_no_server_side_diff_fix_when_the_app_already_uses_it() -> None:
    desired = [_claim(metadata={"name": "data", "creationTimestamp": None})]
    ctx = _ctx(
        _sts_drift(desired, [_served(_claim())]), strategy=model.DiffStrategy.SERVER_SIDE_DIFF
    )
    cause = ctx.cause(STS, CLAIMS)
    assert cause is not None
    assert [f.title for f in cause.fixes] == [
        "Or ignore the fields the server fills in statefulset.apps/db"
    ]


def test_server_side_diff_keeps_the_other_compare_options() -> None:
    app = _app(annotations={"argocd.argoproj.io/compare-options": "IgnoreExtraneous"})
    change = model.Change(Op.CHANGE, CLAIMS, [], [])
    fix = server_filled.fixes(
        app, model.DiffStrategy.STRUCTURED_MERGE, _sts_drift([], []), [(change, [])]
    )
    ssd = next(f for f in fix if f.title == "Compare with Server-Side Diff")
    assert "IgnoreExtraneous,ServerSideDiff=true" in ssd.commands[0]
