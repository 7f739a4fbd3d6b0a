"""Which diff strategy an app gets (compare.choose, as Argo CD's controller decides), and what
the strategy changes downstream: remedies, --write-patch, Unknown verdicts."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubectl_gitdrift import application, model
from kubectl_gitdrift.compare import strategies as compare
from kubectl_gitdrift.diagnose import remedies
from tests.conftest import TESTDATA
from tests.support.apiserver import kube_apiserver  # noqa: F401 - the fixture

LEGACY = model.DiffStrategy.LEGACY
SMD = model.DiffStrategy.STRUCTURED_MERGE
SSD = model.DiffStrategy.SERVER_SIDE_DIFF


def _app(
    sync_options: tuple[str, ...] = (), compare_options: str | None = None
) -> model.Application:
    body: dict[str, Any] = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "a", "namespace": "argocd"},
        "spec": {
            "source": {"repoURL": "https://example.com/r.git", "path": "."},
            "syncPolicy": {"syncOptions": list(sync_options)},
        },
    }
    if compare_options is not None:
        body["metadata"]["annotations"] = {compare.COMPARE_OPTIONS: compare_options}
    return application.parse_application(body)


def _settings(server_side: str | None = None) -> model.Settings:
    data = {} if server_side is None else {"controller.diff.server.side": server_side}
    cm = {"kind": "ConfigMap", "metadata": {"name": "argocd-cm", "namespace": "argocd"}}
    params = {"kind": "ConfigMap", "metadata": {"name": "argocd-cmd-params-cm"}, "data": data}
    return application.parse_settings({**cm, "data": {}}, params)


def test_server_side_diff_flag_is_read_where_argo_cd_reads_it() -> None:
    """The controller's --server-side-diff-enabled comes from argocd-cmd-params-cm; the same key
    in argocd-cm changes nothing in Argo CD, so it changes nothing here."""
    key = {"controller.diff.server.side": "true"}
    cm = {"kind": "ConfigMap", "metadata": {"name": "argocd-cm"}, "data": key}
    assert application.parse_settings(cm).server_side_diff is False
    params = {"kind": "ConfigMap", "metadata": {"name": "argocd-cmd-params-cm"}, "data": key}
    assert application.parse_settings(None, params).server_side_diff is True
    assert application.parse_settings(cm, params).server_side_diff is True


@pytest.mark.parametrize(
    ("sync_options", "compare_options", "server_side", "strategy", "reason"),
    [
        ((), None, None, LEGACY, ""),
        (("ServerSideApply=true",), None, None, SMD, "syncOptions ServerSideApply=true"),
        ((" ServerSideApply=true ",), None, None, SMD, "syncOptions ServerSideApply=true"),
        (("ServerSideApply=false",), None, None, LEGACY, ""),
        ((), "ServerSideDiff=true", None, SSD, "compare-options ServerSideDiff=true"),
        (
            ("ServerSideApply=true",),
            "IgnoreExtraneous, ServerSideDiff=true",
            None,
            SSD,
            "compare-options ServerSideDiff=true",
        ),
        ((), None, "true", SSD, "argocd-cmd-params-cm controller.diff.server.side=true"),
        (
            ("ServerSideApply=true",),
            "ServerSideDiff=false",
            "true",
            SMD,
            "syncOptions ServerSideApply=true",
        ),
        ((), "ServerSideDiff=false", "true", LEGACY, "compare-options ServerSideDiff=false"),
        ((), "ServerSideDiff=truee", None, LEGACY, ""),
    ],
)
def test_choose_as_argo_cd_does(
    sync_options: tuple[str, ...],
    compare_options: str | None,
    server_side: str | None,
    strategy: model.DiffStrategy,
    reason: str,
) -> None:
    choice = compare.choose(_app(sync_options, compare_options), _settings(server_side))
    assert (choice.strategy, choice.reason) == (strategy, reason)


def test_include_mutation_webhook() -> None:
    app = _app(compare_options="ServerSideDiff=true,IncludeMutationWebhook=true")
    assert compare.choose(app, _settings()).include_mutation_webhook
    assert not compare.choose(
        _app(compare_options="ServerSideDiff=true"), _settings()
    ).include_mutation_webhook


def test_a_resource_s_own_sync_option_switches_a_legacy_app() -> None:
    legacy = compare.choose(_app(), _settings())
    body = {"metadata": {"annotations": {compare.SYNC_OPTIONS: "Prune=false,ServerSideApply=true"}}}
    assert compare.for_resource(legacy, body).strategy is SMD
    assert compare.for_resource(legacy, {"metadata": {}}) is legacy
    ssd = compare.choose(_app(compare_options="ServerSideDiff=true"), _settings())
    assert compare.for_resource(ssd, body) is ssd


def test_revert_fits_the_strategy() -> None:
    key = model.ObjectKey("apps", "Deployment", "ns", "web")
    change = model.Change(model.Op.CHANGE, ("spec", "replicas"), 2, 5)
    drift = model.Drift(key, model.ResourceStatus.OUT_OF_SYNC, changes=(change,))
    app = _app(("ServerSideApply=true",))
    legacy = remedies.recommend(app, [drift], [])
    ssa = remedies.recommend(app, [drift], [], strategy=SMD)
    revert = next(r for r in legacy if r.kind is model.RemedyKind.REVERT)
    assert "kubectl scale deployment.apps/web -n ns --replicas=2" in revert.commands
    revert = next(r for r in ssa if r.kind is model.RemedyKind.REVERT)
    assert revert.commands[0].startswith("argocd app sync a --server-side ")
    assert any("--field-manager=argocd-controller" in c for c in revert.commands)
    assert not any(c.startswith("kubectl scale") for c in revert.commands)


def _scenario(name: str, build_repo: Callable[[Path], Path]) -> list[str]:
    scenario = TESTDATA / "scenarios" / name
    repo = build_repo(scenario / "repo-src")
    return ["--snapshot", str(scenario / "snapshot.yaml"), "--repo-root", str(repo)]


def test_write_patch_adopts_live_values_of_an_ssa_app(run_cli, build_repo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    args = _scenario("ssa-manual-scale", build_repo)
    patch = tmp_path / "adopt.patch"
    result = run_cli(["ref-edge-proxy", *args, "--no-entry-points", "--write-patch", str(patch)])
    assert result.exit_code == 1, result.stderr
    text = patch.read_text()
    assert "-  replicas: 2\n+  replicas: 5\n" in text


def test_strategy_reaches_the_report(run_cli, build_repo) -> None:  # type: ignore[no-untyped-def]
    args = _scenario("ssa-server-side-diff-offline", build_repo)
    result = run_cli(["ref-payments-api", *args, "--no-entry-points", "-o", "json"])
    app = json.loads(result.stdout)["applications"][0]
    assert any("Server-Side Diff emulated" in n for n in app["notes"])


def test_choice_is_a_value() -> None:
    choice = compare.Choice(SMD, "syncOptions ServerSideApply=true")
    assert choice.describe() == "structured-merge (syncOptions ServerSideApply=true)"
    assert dataclasses.replace(choice, reason="").describe() == "structured-merge"
    assert choice.server_side


def test_a_resource_synced_server_side_by_its_own_annotation_is_reverted_server_side() -> None:
    key = model.ObjectKey("", "ConfigMap", "ns", "c")
    desired = {"metadata": {"annotations": {compare.SYNC_OPTIONS: "ServerSideApply=true"}}}
    change = model.Change(model.Op.CHANGE, ("data", "k"), "a", "b")
    drift = model.Drift(key, model.ResourceStatus.OUT_OF_SYNC, changes=(change,), desired=desired)
    revert = next(
        r for r in remedies.recommend(_app(), [drift], []) if r.kind is model.RemedyKind.REVERT
    )
    assert revert.commands[0].startswith("argocd app sync a --server-side ")


# --------------------------------------------------------------------------- argocd-cmd-params-cm


PARAMS_CM = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "argocd-cmd-params-cm", "namespace": "argocd"},
    "data": {"controller.diff.server.side": "true"},
}


def _incident_with(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    import yaml

    items: list[dict[str, Any]] = yaml.safe_load(
        (TESTDATA / "incident" / "snapshot.yaml").read_text()
    )["items"]
    return [*items, *extra]


def test_params_configmap_turns_server_side_diff_on_offline(
    run_cli: Callable[..., Any], build_repo: Callable[[Path], Path], tmp_path: Path
) -> None:
    import yaml

    repo = build_repo(TESTDATA / "incident" / "repo-src")
    for extra, name in (((), "legacy"), ((PARAMS_CM,), "server-side-diff")):
        snap = tmp_path / f"{name}.yaml"
        snap.write_text(
            yaml.safe_dump({"kind": "List", "apiVersion": "v1", "items": _incident_with(*extra)})
        )
        result = run_cli(
            ["guestbook", "--snapshot", str(snap), "--repo-root", str(repo), "-o", "json"]
        )
        assert result.exit_code == 1, result.stderr
        strategy = json.loads(result.stdout)["applications"][0]["strategy"]
        assert strategy["name"] == name
    assert strategy["reason"] == "argocd-cmd-params-cm controller.diff.server.side=true"


@pytest.mark.cluster
def test_params_configmap_is_read_live_and_exported(
    kube_apiserver: Any,  # noqa: F811
    run_cli: Callable[..., Any],
    build_repo: Callable[[Path], Path],
    tmp_path: Path,
) -> None:
    server = kube_apiserver(_incident_with(PARAMS_CM))
    repo = build_repo(TESTDATA / "incident" / "repo-src")
    live = ["guestbook", "--kubeconfig", str(server.kubeconfig_path), "--repo-root", str(repo)]
    result = run_cli([*live, "-o", "json"])
    assert result.exit_code == 1, result.stderr
    assert json.loads(result.stdout)["applications"][0]["strategy"]["name"] == "server-side-diff"
    export = tmp_path / "export.json"
    assert run_cli(["snapshot", "guestbook", "-o", str(export), "--kubeconfig",
                    str(server.kubeconfig_path)]).exit_code == 0  # fmt: skip
    replay = run_cli(
        ["guestbook", "--snapshot", str(export), "--repo-root", str(repo), "-o", "json"]
    )
    assert json.loads(replay.stdout)["applications"][0]["strategy"]["name"] == "server-side-diff"
