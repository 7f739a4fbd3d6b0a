"""The CLI contract: exit codes, one-line errors that name the file or object, nothing on stdout
when the run fails."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from kubectl_gitdrift.errors import ExitCode
from tests.conftest import TESTDATA

INCIDENT = TESTDATA / "incident"


@pytest.fixture
def repo(build_repo) -> Path:  # type: ignore[no-untyped-def]
    return build_repo(INCIDENT / "repo-src")


def _base(repo: Path, snapshot: Path = INCIDENT / "snapshot.yaml") -> list[str]:
    return ["guestbook", "--snapshot", str(snapshot), "--repo-root", str(repo), "--no-entry-points"]


def _one_line_error(result, needle: str) -> None:  # type: ignore[no-untyped-def]
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines, "expected an error on stderr"
    assert lines[0].startswith("error: "), result.stderr
    assert needle in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert all(line.startswith("  hint: ") for line in lines[1:]), result.stderr


def test_drift_exits_1_and_names_the_field(run_cli, repo) -> None:  # type: ignore[no-untyped-def]
    result = run_cli([*_base(repo), "-o", "json"])
    assert result.exit_code == ExitCode.DRIFT
    report = json.loads(result.stdout)
    (app,) = report["applications"]
    assert app["sync"]["status"] == "OutOfSync"
    deployment = next(r for r in app["resources"] if r["kind"] == "Deployment")
    (change,) = deployment["changes"]
    assert change["path"] == "spec.replicas"
    assert change["pointer"] == "/spec/replicas"
    assert (change["desired"], change["live"]) == (3, 6)
    assert change["owner"] == {
        "manager": "kubectl",
        "operation": "Update",
        "subresource": "scale",
        "time": None,
    }
    codes = {f["code"] for f in app["findings"]}
    assert {"manual-drift", "selfheal-disabled", "prune-irrelevant"} <= codes
    kinds = [r["kind"] for r in app["remedies"]]
    assert {"adopt", "revert"} <= set(kinds)


def test_no_drift_exits_0(run_cli, repo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    snap = yaml.safe_load((INCIDENT / "snapshot.yaml").read_text())
    for item in snap["items"]:
        if item["kind"] == "Deployment":
            item["spec"]["replicas"] = 3
    path = tmp_path / "synced.yaml"
    path.write_text(yaml.safe_dump(snap))
    result = run_cli(_base(repo, path))
    assert result.exit_code == ExitCode.OK, result.stdout + result.stderr
    assert "Application argocd/guestbook: Synced" in result.stdout


def test_query_applies_jmespath(run_cli, repo) -> None:  # type: ignore[no-untyped-def]
    result = run_cli([*_base(repo), "--query", "applications[0].sync.status"])
    assert result.stdout == "OutOfSync\n"
    assert result.exit_code == ExitCode.DRIFT


def test_bad_query_is_a_usage_error(run_cli, repo) -> None:  # type: ignore[no-untyped-def]
    result = run_cli([*_base(repo), "--query", "applications[?"])
    assert result.exit_code == ExitCode.USAGE_ERROR
    _one_line_error(result, "--query")


def test_unknown_output_format(run_cli, repo) -> None:  # type: ignore[no-untyped-def]
    result = run_cli([*_base(repo), "-o", "xml"])
    assert result.exit_code == ExitCode.USAGE_ERROR
    _one_line_error(result, "-o xml")


def test_missing_snapshot(run_cli, repo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(_base(repo, tmp_path / "nope.yaml"))
    assert result.exit_code == ExitCode.ERROR
    _one_line_error(result, "nope.yaml: no such file")


def test_malformed_snapshot_names_file_and_document(run_cli, repo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "broken.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n- just\n- a list\n")
    result = run_cli(_base(repo, path))
    assert result.exit_code == ExitCode.ERROR
    _one_line_error(result, "broken.yaml: document 2")


def test_snapshot_object_without_kind(run_cli, repo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "nokind.yaml"
    path.write_text("apiVersion: v1\nmetadata: {name: a}\n")
    result = run_cli(_base(repo, path))
    assert result.exit_code == ExitCode.ERROR
    _one_line_error(result, "nokind.yaml: object 1 has no kind")


def test_truncated_gzip_snapshot(run_cli, repo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import gzip

    data = gzip.compress((INCIDENT / "snapshot.yaml").read_bytes())
    path = tmp_path / "snap.yaml.gz"
    path.write_bytes(data[: len(data) // 2])
    result = run_cli(_base(repo, path))
    assert result.exit_code == ExitCode.ERROR
    _one_line_error(result, "snap.yaml.gz: not a valid gzip file")


def test_snapshot_directory(run_cli, repo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    snap = yaml.safe_load((INCIDENT / "snapshot.yaml").read_text())
    for i, item in enumerate(snap["items"]):
        (tmp_path / f"{i:02d}.json").write_text(json.dumps(item))
    result = run_cli([*_base(repo, tmp_path), "--query", "applications[0].sync.status"])
    assert result.stdout == "OutOfSync\n"


def test_unknown_app_lists_the_known_ones(run_cli, repo) -> None:  # type: ignore[no-untyped-def]
    args = _base(repo)
    args[0] = "questbook"
    result = run_cli(args)
    assert result.exit_code == ExitCode.ERROR
    _one_line_error(result, "Application argocd/questbook not found")
    assert "argocd/guestbook" in result.stderr


def test_missing_repo_root(run_cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(_base(tmp_path / "no-such-clone"))
    assert result.exit_code == ExitCode.ERROR
    _one_line_error(result, "no-such-clone")


def test_repo_root_that_is_not_a_git_repo(run_cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(_base(tmp_path))
    assert result.exit_code == ExitCode.ERROR
    _one_line_error(result, str(tmp_path))


def test_revision_missing_from_the_clone(run_cli, repo) -> None:  # type: ignore[no-untyped-def]
    result = run_cli([*_base(repo), "--revision", "0123456789abcdef0123456789abcdef01234567"])
    assert result.exit_code == ExitCode.ERROR
    _one_line_error(result, "0123456789abcdef")
    assert "fetch" in result.stderr


def test_failing_kustomize_quotes_its_stderr(run_cli, repo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    clone = tmp_path / "clone"
    shutil.copytree(repo, clone)
    kustomization = clone / "overlays/prod/guestbook/kustomization.yaml"
    kustomization.write_text("resources:\n- missing.yaml\n")
    result = run_cli([*_base(clone), "--local"])
    assert result.exit_code == ExitCode.ERROR
    _one_line_error(result, "overlays/prod/guestbook")
    assert "missing.yaml" in result.stderr


def test_local_renders_the_working_tree(run_cli, repo, tmp_path) -> None:  # type: ignore[no-untyped-def]
    clone = tmp_path / "clone"
    shutil.copytree(repo, clone)
    kustomization = clone / "overlays/prod/guestbook/kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("count: 3", "count: 6"))
    committed = run_cli([*_base(clone), "--query", "applications[0].sync.status"])
    local = run_cli([*_base(clone), "--local", "--query", "applications[0].sync.status"])
    assert committed.stdout == "OutOfSync\n"
    assert local.stdout == "Synced\n"
    assert local.exit_code == ExitCode.OK


def test_revision_and_local_are_exclusive(run_cli, repo) -> None:  # type: ignore[no-untyped-def]
    result = run_cli([*_base(repo), "--local", "--revision", "HEAD"])
    assert result.exit_code == ExitCode.USAGE_ERROR
    assert "not allowed with" in result.stderr


def test_live_without_kubeconfig(run_cli, repo, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "")
    result = run_cli(["guestbook", "--repo-root", str(repo), "--no-entry-points"])
    assert result.exit_code == ExitCode.CLUSTER_ERROR
    _one_line_error(result, "kubeconfig")
    assert "--snapshot" in result.stderr


def test_app_or_all_is_required(run_cli, repo) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(["--snapshot", str(INCIDENT / "snapshot.yaml"), "--repo-root", str(repo)])
    assert result.exit_code == ExitCode.USAGE_ERROR
    _one_line_error(result, "--all")
    both = run_cli([*_base(repo), "--all"])
    assert both.exit_code == ExitCode.USAGE_ERROR
    _one_line_error(both, "not both")


def test_internal_errors_are_reported_as_bugs(run_cli, repo, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from kubectl_gitdrift import engine

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(engine, "run", boom)
    result = run_cli(_base(repo))
    assert result.exit_code == ExitCode.INTERNAL_ERROR
    assert result.stderr.startswith("internal error: RuntimeError: kaboom\n")
    assert "Traceback" not in result.stderr
    with pytest.raises(RuntimeError):
        run_cli([*_base(repo), "--debug"])


def test_version(run_cli) -> None:  # type: ignore[no-untyped-def]
    from kubectl_gitdrift import __version__

    assert run_cli(["version"]).stdout == f"kubectl gitdrift {__version__}\n"
    assert run_cli(["version"], prog="argocd gitdrift").stdout.startswith("argocd gitdrift ")


def test_help_names_the_front_end(run_cli) -> None:  # type: ignore[no-untyped-def]
    assert run_cli(["--help"]).stdout.startswith("usage: kubectl gitdrift ")
    assert run_cli(["--help"], prog="argocd gitdrift").stdout.startswith("usage: argocd gitdrift ")


def test_offline_run_leaves_the_cyclic_gc_as_it_found_it(run_cli, repo) -> None:  # type: ignore[no-untyped-def]
    """An offline run turns the cyclic GC off while it works (plain data, no cycles), and gives
    it back as it was, also when the run fails."""
    import gc

    assert gc.isenabled()
    assert run_cli([*_base(repo), "-o", "json"]).exit_code == ExitCode.DRIFT
    assert gc.isenabled()
    assert run_cli([*_base(repo, INCIDENT / "missing.yaml")]).exit_code != 0
    assert gc.isenabled()
    gc.disable()
    try:
        run_cli([*_base(repo), "-o", "json"])
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_in_process_runs_keep_nothing_after_they_return(run_cli, repo) -> None:  # type: ignore[no-untyped-def]
    """Only the console scripts (run, run_argocd) hold a run's objects until os._exit; main
    called in-process (tests, serve) frees them as usual."""
    from kubectl_gitdrift.cli import main as cli

    assert run_cli([*_base(repo), "-o", "json"]).exit_code == ExitCode.DRIFT
    assert cli._kept is None
