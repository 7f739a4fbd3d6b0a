"""diagnose/sync_effects.py: what syncing head would do, read from real AppReports: each
scenario's repository built as a git repo, rendered and run through engine.run against its
snapshot (real API server recordings), the way the CLI does it."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift import application, engine, hookcalls, model, plugins
from kubectl_gitdrift.diagnose import primary, sync_effects
from kubectl_gitdrift.live import snapshot as snapshots
from kubectl_gitdrift.run import workflow
from tests.conftest import TESTDATA
from tests.support.diagnose_helper import diagnose

SCENARIOS = TESTDATA / "scenarios"
Doc = dict[str, Any]
BuildRepo = Callable[[Path], Path]

GUESTBOOK = model.ObjectKey("apps", "Deployment", "prod", "guestbook")
LEGACY = model.ObjectKey("", "ConfigMap", "prod", "guestbook-legacy")
SERVICE = model.ObjectKey("", "Service", "prod", "guestbook")


def _report(
    build_repo: BuildRepo,
    tmp_path: Path,
    scenario: str,
    edit: Callable[[list[Doc]], None] | None = None,
) -> model.AppReport:
    """The scenario's report, its snapshot first changed by `edit` (a copy in tmp_path)."""
    where = SCENARIOS / scenario
    spec = yaml.safe_load((where / "scenario.yaml").read_text())
    snapshot = where / spec["snapshot"]
    if edit is not None:
        doc = yaml.safe_load(snapshot.read_text())
        edit(doc["items"])
        snapshot = tmp_path / "snapshot.yaml"
        snapshot.write_text(yaml.safe_dump(doc))
    return diagnose(snapshot, build_repo((where / spec["repo"]).resolve()), spec["app"])


def _sync_policy(**changes: Any) -> Callable[[list[Doc]], None]:
    def edit(items: list[Doc]) -> None:
        (app,) = [i for i in items if i["kind"] == "Application"]
        policy = app["spec"].setdefault("syncPolicy", {})
        for name, value in changes.items():
            if value is None:
                policy.pop(name, None)
            else:
                policy[name] = value

    return edit


def _shown(effects: tuple[model.SyncEffect, ...]) -> list[tuple[Any, ...]]:
    return [
        (
            e.key.short(),
            e.action,
            model.display_path(e.path) if e.path is not None else None,
            e.live,
            e.head,
            e.overwrites.manager if e.overwrites is not None else None,
        )
        for e in effects
    ]


def test_the_incident_sets_replicas_back_overwriting_kubectl_scale(
    build_repo: BuildRepo, tmp_path: Path
) -> None:
    report = _report(build_repo, tmp_path, "incident-replicas-scaled")
    effects, kept = sync_effects.effects(report)
    assert _shown(effects) == [
        ("deployment.apps/guestbook", "set", "spec.replicas", 6, 3, "kubectl")
    ]
    (effect,) = effects
    assert effect.overwrites == model.Owner("kubectl", "Update", "scale", None, "apps/v1")
    assert not effect.secret
    assert kept == ()


def test_a_missing_object_is_created_and_prune_off_keeps_an_extraneous_one(
    build_repo: BuildRepo, tmp_path: Path
) -> None:
    report = _report(build_repo, tmp_path, "diag-missing-extraneous")
    effects, kept = sync_effects.effects(report)
    assert _shown(effects) == [
        ("service/guestbook", "create", None, None, None, None),
        ("deployment.apps/guestbook", "set", "spec.replicas", 6, 3, "kubectl"),
    ]
    (stays,) = kept
    assert (stays.code, stays.key, stays.path) == ("extraneous-resource", LEGACY, None)
    assert stays.message == (
        "configmap/guestbook-legacy is tracked by this app but not in head's render; syncing "
        "head leaves it in the cluster: automated sync does not prune "
        "(syncPolicy.automated.prune is false)."
    )
    assert stays.rule == "builtin/missing-extraneous"
    assert stays.hint == (
        "argocd app sync guestbook --prune, or set syncPolicy.automated.prune: true"
    )


def test_the_prune_hint_names_an_app_outside_argocd_by_namespace(
    build_repo: BuildRepo, tmp_path: Path
) -> None:
    """An Application in another namespace (apps-in-any-namespace) is `ns/name` to the argocd
    CLI, as every other command the report suggests names it."""
    report = _report(build_repo, tmp_path, "diag-missing-extraneous")
    assert report.application is not None
    team = dataclasses.replace(report.application, namespace="team-a")
    _, kept = sync_effects.effects(dataclasses.replace(report, application=team))
    (stays,) = kept
    assert stays.hint == (
        "argocd app sync team-a/guestbook --prune, or set syncPolicy.automated.prune: true"
    )


def test_automated_prune_deletes_an_extraneous_object(
    build_repo: BuildRepo, tmp_path: Path
) -> None:
    edit = _sync_policy(automated={"prune": True})
    effects, kept = sync_effects.effects(
        _report(build_repo, tmp_path, "diag-missing-extraneous", edit)
    )
    assert ("configmap/guestbook-legacy", "delete", None, None, None, None) in _shown(effects)
    assert [f.key for f in kept] == []


def test_an_object_left_out_of_the_sync_status_is_still_pruned(
    build_repo: BuildRepo, tmp_path: Path
) -> None:
    """IgnoreExtraneous only keeps the object out of the app's sync status: the sync prunes it
    (Argo CD's compare-options docs pair it with Prune=false for that reason)."""

    def edit(items: list[Doc]) -> None:
        _sync_policy(automated={"prune": True})(items)
        (legacy,) = [i for i in items if i["metadata"].get("name") == "guestbook-legacy"]
        legacy["metadata"]["annotations"]["argocd.argoproj.io/compare-options"] = "IgnoreExtraneous"

    report = _report(build_repo, tmp_path, "diag-missing-extraneous", edit)
    (drift,) = [d for d in report.resources if d.key == LEGACY]
    assert not drift.counts
    effects, _ = sync_effects.effects(report)
    assert ("configmap/guestbook-legacy", "delete", None, None, None, None) in _shown(effects)


def test_a_manual_sync_prunes_only_with_the_flag(build_repo: BuildRepo, tmp_path: Path) -> None:
    edit = _sync_policy(automated=None)
    effects, kept = sync_effects.effects(
        _report(build_repo, tmp_path, "diag-missing-extraneous", edit)
    )
    assert "delete" not in [e.action for e in effects]
    (stays,) = kept
    assert stays.message.endswith(
        "automated sync is off, and a manual sync deletes it only with --prune."
    )
    assert stays.evidence == {"prune": False, "automated": False, "syncOptions": ""}


@pytest.mark.parametrize(
    ("option", "says"),
    [
        ("Prune=false", "annotated argocd.argoproj.io/sync-options: Prune=false"),
        ("Validate=false,Prune=confirm", "the sync prunes it only once someone confirms"),
    ],
)
def test_the_object_s_own_prune_option_keeps_it_from_automated_prune(
    build_repo: BuildRepo, tmp_path: Path, option: str, says: str
) -> None:
    def edit(items: list[Doc]) -> None:
        _sync_policy(automated={"prune": True})(items)
        (legacy,) = [i for i in items if i["metadata"].get("name") == "guestbook-legacy"]
        legacy["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] = option

    effects, kept = sync_effects.effects(
        _report(build_repo, tmp_path, "diag-missing-extraneous", edit)
    )
    assert "delete" not in [e.action for e in effects]
    (stays,) = kept
    assert says in stays.message
    assert stays.evidence["syncOptions"] == option


def test_automated_prune_refuses_to_delete_every_resource_of_the_app() -> None:
    """Head renders nothing the app tracks: Argo CD's auto-sync stops ("auto-sync will wipe out
    all resources") unless allowEmpty; a manual sync with --prune would delete them."""
    state = snapshots.load(SCENARIOS / "diag-missing-extraneous" / "live.yaml")
    body = state.find_application("guestbook", "argocd")
    assert body is not None
    app = application.parse_application(body)
    pm = plugins.make_plugin_manager(entry_points=False)
    for allow_empty, deleted in ((False, False), (True, True)):
        policy = model.SyncPolicy(automated=True, prune=True, allow_empty=allow_empty)
        inputs = engine.Inputs(
            app=dataclasses.replace(app, sync_policy=policy),
            settings=workflow.settings_of(state),
            desired=[],
            live=state.objects,
            revision="0" * 40,
            source="nothing",
        )
        report = engine.run(inputs, pm, engine.Options(rules=hookcalls.collect_rules(pm)))
        assert {d.status for d in report.resources} == {model.ResourceStatus.EXTRANEOUS}
        effects, kept = sync_effects.effects(report)
        assert bool(effects) is deleted
        if deleted:
            assert {e.action for e in effects} == {"delete"}
            assert {e.key for e in effects} == {d.key for d in report.resources}
        else:
            assert {f.key for f in kept} == {d.key for d in report.resources}
            assert all("refuses to delete them all" in f.message for f in kept)


@pytest.mark.parametrize(
    ("scenario", "code", "key", "claimed"),
    [
        (
            "diag-admission-mutation",
            "admission-mutation",
            model.ObjectKey("apps", "Deployment", "wm-pay", "demo-web"),
            1,
        ),
        # the server refuses the whole patch: git's other changes wait with the selector
        (
            "diag-immutable-selector",
            "immutable-field",
            model.ObjectKey("apps", "Deployment", "im-orders", "orders"),
            6,
        ),
        (
            "diag-server-filled-crd-default",
            "server-filled",
            model.ObjectKey("gateway.networking.k8s.io", "HTTPRoute", "shop", "web"),
            2,
        ),
        (
            "diag-stuck-deleting",
            "stuck-deleting",
            model.ObjectKey("", "ConfigMap", "cm-certs", "finalizer-demo"),
            1,
        ),
        (
            "diag-crd-missing",
            "crd-missing",
            model.ObjectKey("cert-manager.io", "Certificate", "cm-certs", "gateway-tls"),
            1,
        ),
        (
            "diag-nondeterministic-helm-secret",
            "nondeterministic-render",
            model.ObjectKey("", "Secret", "shop", "shop-db-auth"),
            1,
        ),
        # a controller keeps writing the field the rule misses
        (
            "diag-ignore-rule-unmatched",
            "ignore-rule-unmatched",
            GUESTBOOK,
            1,
        ),
    ],
)
def test_what_a_lasting_cause_claims_is_not_an_effect_but_its_finding(
    build_repo: BuildRepo,
    tmp_path: Path,
    scenario: str,
    code: str,
    key: model.ObjectKey,
    claimed: int,
) -> None:
    report = _report(build_repo, tmp_path, scenario)
    (drift,) = [d for d in report.resources if d.key == key]
    assert len(drift.changes) == claimed or drift.status is model.ResourceStatus.MISSING
    effects, kept = sync_effects.effects(report)
    assert [e for e in effects if e.key == key] == []
    own = [f for f in report.findings if f.code == code and f.key == key]
    assert own
    assert [f for f in kept if f.key == key] == own


def test_what_the_controller_may_not_do_is_left_with_its_denial(
    build_repo: BuildRepo, tmp_path: Path
) -> None:
    report = _report(build_repo, tmp_path, "diag-controller-forbidden")
    (denial,) = [f for f in report.findings if f.code == "controller-forbidden"]
    assert "patch" in denial.evidence["deniedVerbs"]
    effects, kept = sync_effects.effects(report)
    assert effects == ()
    assert kept == (denial,)


def test_a_denial_of_other_verbs_leaves_the_effect(build_repo: BuildRepo, tmp_path: Path) -> None:
    def edit(items: list[Doc]) -> None:
        for role in (i for i in items if i["kind"] in ("Role", "ClusterRole")):
            for rule in role.get("rules") or ():
                if "deployments" in rule.get("resources", ()) and "get" in rule.get("verbs", ()):
                    rule["verbs"] = sorted({*rule["verbs"], "patch"})

    report = _report(build_repo, tmp_path, "diag-controller-forbidden", edit)
    (denial,) = [f for f in report.findings if f.code == "controller-forbidden"]
    assert "patch" not in denial.evidence["deniedVerbs"]
    effects, kept = sync_effects.effects(report)
    assert _shown(effects) == [
        ("deployment.apps/guestbook", "set", "spec.replicas", 6, 3, "kubectl")
    ]
    assert kept == ()


def test_a_revertable_unmatched_rule_is_an_effect(build_repo: BuildRepo, tmp_path: Path) -> None:
    """The same unmatched rule, the field written by a person (kubectl): a sync writes git's
    value back and it stays, so it is an effect that overwrites that write."""

    def edit(items: list[Doc]) -> None:
        (deployment,) = [i for i in items if i["kind"] == "Deployment"]
        for entry in deployment["metadata"]["managedFields"]:
            if "f:replicas" in entry.get("fieldsV1", {}).get("f:spec", {}):
                entry["manager"], entry["subresource"] = "kubectl", "scale"
                entry.pop("time", None)

    report = _report(build_repo, tmp_path, "diag-ignore-rule-unmatched", edit)
    (finding,) = [f for f in report.findings if f.code == "ignore-rule-unmatched"]
    assert finding.evidence["writer"] != "controller"
    effects, kept = sync_effects.effects(report)
    assert _shown(effects) == [
        ("deployment.apps/guestbook", "set", "spec.replicas", 5, 3, "kubectl")
    ]
    assert kept == ()


def test_ignored_fields_git_sets_are_written_back(build_repo: BuildRepo, tmp_path: Path) -> None:
    effects, kept = sync_effects.effects(_report(build_repo, tmp_path, "ignore-differences"))
    assert _shown(effects) == [
        (
            "mutatingwebhookconfiguration.admissionregistration.k8s.io/storefront-defaulter",
            "set",
            "webhooks[name=defaulter.storefront.example.com].clientConfig.caBundle",
            "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJkekNDQVIyZ0F3SUJBZ0lRZXhhbXBsZQotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg==",
            "Cg==",
            "cert-manager-cainjector",
        ),
        ("deployment.apps/api", "set", "spec.replicas", 6, 2, "kube-controller-manager"),
        (
            "deployment.apps/api",
            "set",
            "spec.template.spec.containers[name=app].image",
            "registry.example.com/storefront/api:1.8.1",
            "registry.example.com/storefront/api:1.8.0",
            "image-updater",
        ),
        ("deployment.apps/batch", "set", "spec.replicas", 3, 1, "batch-scaler"),
        ("deployment.apps/web", "set", "spec.replicas", 4, 2, "kubectl"),
    ]  # fmt: skip
    assert kept == ()


@pytest.mark.parametrize(
    ("options", "applied"),
    [
        # Argo CD copies the live values of ignored fields into what it applies
        (["RespectIgnoreDifferences=true"], {"deployment.apps/web"}),
        # only OutOfSync objects are applied: the Synced ones keep their ignored fields
        (["ApplyOutOfSyncOnly=true"], {"deployment.apps/web"}),
    ],
)
def test_ignored_fields_stay_when_the_sync_options_say_so(
    build_repo: BuildRepo, tmp_path: Path, options: list[str], applied: set[str]
) -> None:
    report = _report(build_repo, tmp_path, "ignore-differences", _sync_policy(syncOptions=options))
    assert any(d.suppressed for d in report.resources)
    effects, _ = sync_effects.effects(report)
    assert {e.key.short() for e in effects} == applied


def test_secret_values_stay_masked(build_repo: BuildRepo, tmp_path: Path) -> None:
    report = _report(build_repo, tmp_path, "secret-values-masked")
    effects, _ = sync_effects.effects(report)
    assert _shown(effects) == [
        ("secret/billing-db", "set", "data.password", "++++++++++++", "++++++++", None),
        ("secret/billing-db", "remove", "data.sslmode", "++++++++", None, None),
    ]
    assert all(e.secret for e in effects)
    snapshot = (SCENARIOS / "secret-values-masked" / "snapshot.yaml").read_text()
    values = [
        v
        for item in yaml.safe_load(snapshot)["items"]
        if item["kind"] == "Secret"
        for v in (item.get("data") or {}).values()
    ]
    assert values
    assert not any(v in repr(effects) for v in values)


def test_fields_git_drops_that_server_side_apply_keeps_are_left(
    build_repo: BuildRepo, tmp_path: Path
) -> None:
    report = _report(build_repo, tmp_path, "ssa-git-drops-co-owned-field")
    effects, kept = sync_effects.effects(report)
    assert effects == ()
    assert [(f.code, model.display_path(f.path or ())) for f in kept] == [
        ("ssa-field-released", 'metadata.annotations["prometheus.io/scrape"]'),
        ("ssa-field-released", "spec.ports[port=9102,protocol=TCP]"),
    ]


def test_every_detector_s_cause_is_classified() -> None:
    """A new detector must say whether a sync fixes what it claims: its code is lasting, or it
    is the one cause a sync may fix (ignore-rule-unmatched)."""
    codes = {sys.modules[d.__module__].CODE for d in primary.DETECTORS}
    assert sync_effects.LASTING | {"ignore-rule-unmatched"} == codes
