"""--all reads cached renders where each app is compared (workflow.prepare(defer_reads=True),
finish_render): the same reports as reading them up front, an entry that went in between is
rendered again, and a render that then fails is that app's error while the others go on."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from kubectl_gitdrift import settings
from kubectl_gitdrift.errors import ExitCode
from kubectl_gitdrift.run import workflow
from kubectl_gitdrift.sources import cache as source_cache
from tests.conftest import Result, Runner
from tests.run.test_all import fleet_snapshot, repo  # noqa: F401


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "render-cache"
    monkeypatch.setenv(settings.CACHE_DIR_ENV, str(path))
    return path


@pytest.fixture
def kustomize_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Call it, and kustomize (`kubectl kustomize` too) fails from then on."""
    broken = tmp_path / "broken-bin"
    broken.mkdir()
    for name in ("kubectl", "kustomize"):
        tool = broken / name
        tool.write_text("#!/bin/sh\necho 'kustomize: out of memory' >&2\nexit 1\n")
        tool.chmod(0o755)
    return lambda: monkeypatch.setenv("PATH", f"{broken}{os.pathsep}{os.environ['PATH']}")


def _only_failed(result: Result, failed: str, *, compared: str) -> None:
    """`failed` is the run's one error, kustomize's own words in it; `compared` goes on."""
    assert result.exit_code == ExitCode.ERROR
    doc = json.loads(result.stdout)
    assert [e["application"] for e in doc["errors"]] == [f"argocd/{failed}"]
    assert "out of memory" in doc["errors"][0]["error"]
    assert [a["name"] for a in doc["applications"]] == [compared]  # the others go on


def _all(run_cli: Callable[..., Result], snapshot: Path, clone: Path, *extra: str) -> Result:
    return run_cli(
        ["--all", "-o", "json", "--snapshot", str(snapshot), "--repo-root", str(clone),
         "--no-entry-points", *extra]
    )  # fmt: skip


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many manifests each deferred read gave, in the order read."""
    reads: list[int] = []
    original = source_cache.Probe.read

    def read(self: source_cache.Probe) -> list[source_cache.Manifest] | None:
        got = original(self)
        reads.append(-1 if got is None else len(got))
        return got

    monkeypatch.setattr(source_cache.Probe, "read", read)
    return reads


def test_warm_all_reads_each_render_where_it_is_compared(
    run_cli: Callable[..., Result],
    repo: Path,  # noqa: F811
    fleet_snapshot: Path,  # noqa: F811
    cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    uncached = _all(run_cli, fleet_snapshot, repo, "--no-cache")
    cold = _all(run_cli, fleet_snapshot, repo)
    assert list(cache_dir.glob("renders/*/*.json"))
    reads = _count_reads(monkeypatch)
    warm = _all(run_cli, fleet_snapshot, repo)
    assert warm.exit_code == cold.exit_code == uncached.exit_code == ExitCode.DRIFT
    assert warm.stdout == cold.stdout == uncached.stdout
    assert len(reads) == 2  # both compared apps, read from the cache
    assert min(reads) > 0
    assert len(json.loads(warm.stdout)["applications"]) == 2


def test_a_render_gone_before_its_read_is_made_again(
    run_cli: Callable[..., Result],
    repo: Path,  # noqa: F811
    fleet_snapshot: Path,  # noqa: F811
    cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cold = _all(run_cli, fleet_snapshot, repo)
    original = source_cache.Probe.read

    def pruned(self: source_cache.Probe) -> list[source_cache.Manifest] | None:
        shutil.rmtree(cache_dir / "renders")  # another run's pruning, between look and read
        got = original(self)
        assert got is None
        return got

    monkeypatch.setattr(source_cache.Probe, "read", pruned)
    again = _all(run_cli, fleet_snapshot, repo)
    assert again.stdout == cold.stdout
    assert again.exit_code == ExitCode.DRIFT


def test_a_render_that_fails_when_made_again_is_that_apps_error(
    run_cli: Callable[..., Result],
    repo: Path,  # noqa: F811
    fleet_snapshot: Path,  # noqa: F811
    cache_dir: Path,
    kustomize_fails: Callable[[], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _all(run_cli, fleet_snapshot, repo)
    original = source_cache.Probe.read
    first = True

    def pruned(self: source_cache.Probe) -> list[source_cache.Manifest] | None:
        nonlocal first
        if first:  # the first app's entry goes, and kustomize now fails
            first = False
            for key in self.hits:
                self._path(key).unlink()
            kustomize_fails()
        return original(self)

    monkeypatch.setattr(source_cache.Probe, "read", pruned)
    _only_failed(_all(run_cli, fleet_snapshot, repo), "guestbook", compared="guestbook-b")


def test_defer_reads_is_only_for_all(
    run_cli: Callable[..., Result],
    repo: Path,  # noqa: F811
    fleet_snapshot: Path,  # noqa: F811
    cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _all(run_cli, fleet_snapshot, repo)
    reads = _count_reads(monkeypatch)
    one = run_cli(
        ["guestbook", "--snapshot", str(fleet_snapshot), "--repo-root", str(repo), "-o", "json"]
    )
    assert one.exit_code == ExitCode.DRIFT
    assert reads == []  # one app: read where it is rendered, as before


def one_app_sample(run_cli: Runner) -> Runner:
    """prepare looks up the first app's render only: when cached, the rest are left to the
    comparing processes without a look (Tuning.warm_sample, run.request.WARM_SAMPLE)."""
    return run_cli.tuned(warm_sample=1)


def test_past_a_warm_sample_renders_are_looked_up_where_compared(
    run_cli: Runner,
    repo: Path,  # noqa: F811
    fleet_snapshot: Path,  # noqa: F811
    cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_cli = one_app_sample(run_cli)
    cold = _all(run_cli, fleet_snapshot, repo)  # the sample missed: every app looked up first
    finished: list[str] = []
    original = workflow.finish_render

    def counted(target: workflow.Target) -> None:
        if target.deferred is not None:
            finished.append(target.name)
        original(target)

    monkeypatch.setattr(workflow, "finish_render", counted)
    looked: list[str] = []
    probe_get = source_cache.Probe.get

    def looked_up(self: source_cache.Probe, key: str) -> list[source_cache.Manifest] | None:
        looked.append(key)
        return probe_get(self, key)

    monkeypatch.setattr(source_cache.Probe, "get", looked_up)
    warm = _all(run_cli, fleet_snapshot, repo)
    assert (warm.exit_code, warm.stdout) == (cold.exit_code, cold.stdout)
    assert finished == ["argocd/guestbook", "argocd/guestbook-b"]
    assert len(looked) == 1  # the sample's; guestbook-b's render was not looked up first

    def pruned(target: workflow.Target) -> None:
        if target.name == "argocd/guestbook-b" and target.deferred is not None:
            for entry in cache_dir.glob("renders/*/*.json"):  # past the sample, its entry went
                entry.unlink()
        original(target)

    monkeypatch.setattr(workflow, "finish_render", pruned)
    assert _all(run_cli, fleet_snapshot, repo).stdout == cold.stdout
    assert len(list(cache_dir.glob("renders/*/*.json"))) == 1  # made where compared, and kept


def test_past_a_warm_sample_a_render_that_fails_is_that_apps_error(
    run_cli: Runner,
    repo: Path,  # noqa: F811
    fleet_snapshot: Path,  # noqa: F811
    cache_dir: Path,
    kustomize_fails: Callable[[], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_cli = one_app_sample(run_cli)
    _all(run_cli, fleet_snapshot, repo)
    original = workflow.finish_render

    def pruned(target: workflow.Target) -> None:
        if target.name == "argocd/guestbook-b" and target.deferred is not None:
            # past the sample: its entry went, and kustomize fails
            for entry in cache_dir.glob("renders/*/*.json"):
                entry.unlink()
            kustomize_fails()
        original(target)

    monkeypatch.setattr(workflow, "finish_render", pruned)
    _only_failed(_all(run_cli, fleet_snapshot, repo), "guestbook-b", compared="guestbook")
