"""--all renders in parallel and lists concurrently; the report must not depend on it: a fleet of
ten Applications gives the same bytes with KUBECTL_GITDRIFT_WORKERS=1 (one render and one LIST
at a time) as with the default workers, offline and live, and again on a second parallel run."""

from __future__ import annotations

import concurrent.futures
import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift import settings
from kubectl_gitdrift.errors import ExitCode
from kubectl_gitdrift.live import cluster, transport
from tests.conftest import TESTDATA, Result, Runner, without_run_context
from tests.support.apiserver import (
    ServerFactory,
    controller_rbac,
    kube_apiserver,  # noqa: F401 - the fixture
)

INCIDENT = TESTDATA / "incident"
FLEET = 10
Obj = dict[str, Any]


def _move(body: Obj, app: str, namespace: str) -> Obj:
    """`body` (the incident's, in prod, tracked by guestbook) as `app`'s, in `namespace`."""
    text = json.dumps(body)
    for kind in ("apps/Deployment", "/Service"):
        old, new = f"guestbook:{kind}:prod/guestbook", f"{app}:{kind}:{namespace}/guestbook"
        text = text.replace(old, new)
    text = text.replace('\\"namespace\\":\\"prod\\"', f'\\"namespace\\":\\"{namespace}\\"')
    moved: Obj = json.loads(text)
    moved["metadata"]["namespace"] = namespace
    for key in ("uid", "resourceVersion"):
        moved["metadata"].pop(key, None)
    return moved


def fleet() -> list[Obj]:
    """Ten Applications of the incident's repository, each in its own namespace: some in sync,
    some scaled by hand, some with objects missing, one whose source path does not exist."""
    objects: list[Obj] = yaml.safe_load((INCIDENT / "snapshot.yaml").read_text())["items"]
    app = next(o for o in objects if o["kind"] == "Application")
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    service = next(o for o in objects if o["kind"] == "Service")
    out = list(objects)
    for i in range(1, FLEET):
        name, namespace = f"guestbook-{i:02d}", f"prod-{i:02d}"
        twin = copy.deepcopy(app)
        twin["metadata"]["name"] = name
        twin["metadata"].pop("uid", None)
        twin["spec"]["destination"]["namespace"] = namespace
        twin["spec"]["source"]["kustomize"] = {"namespace": namespace}
        twin["status"]["resources"] = []
        if i == 7:
            twin["spec"]["source"]["path"] = "overlays/nowhere"
        out.append(twin)
        if i % 3 == 0:
            continue  # nothing deployed yet: Missing
        moved = _move(deployment, name, namespace)
        moved["spec"]["replicas"] = 2 + i % 4  # 3 (in sync) for i = 1, 5, 9
        out.append(moved)
        if i % 2:
            out.append(_move(service, name, namespace))
    return out


@pytest.fixture
def repo(build_repo) -> Path:  # type: ignore[no-untyped-def]
    return Path(build_repo(INCIDENT / "repo-src"))


@pytest.fixture
def fleet_snapshot(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": fleet()}))
    return path


class Pools:
    """Records the worker count of every thread pool workflow.prepare opens."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sizes: list[int] = []
        real = concurrent.futures.ThreadPoolExecutor
        outer = self

        class Recording(real):  # type: ignore[misc, valid-type]
            def __init__(self, max_workers: int | None = None, **kwargs: Any) -> None:
                outer.sizes.append(max_workers or 0)
                super().__init__(max_workers=max_workers, **kwargs)

        monkeypatch.setattr(concurrent.futures, "ThreadPoolExecutor", Recording)


def _runs(
    run_cli: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    workers: str,
) -> list[Result]:
    monkeypatch.setenv(settings.WORKERS_ENV, workers)
    return [run_cli([*args, *fmt, "--no-entry-points"]) for fmt in (["-o", "json"], [])]


def test_parallel_and_sequential_offline_give_the_same_bytes(
    run_cli: Callable[..., Result],
    repo: Path,
    fleet_snapshot: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("KUBECTL_GITDRIFT_CACHE_DIR", str(tmp_path / "cache"))  # starts empty
    pools = Pools(monkeypatch)
    args = ["--all", "--snapshot", str(fleet_snapshot), "--repo-root", str(repo), "--no-cache"]
    sequential = _runs(run_cli, monkeypatch, args, "1")
    assert pools.sizes == []  # one at a time: no pool at all
    parallel = _runs(run_cli, monkeypatch, args, "8")
    again = _runs(run_cli, monkeypatch, args, "3")
    assert pools.sizes == [8, 8, 3, 3]
    cached = _runs(run_cli, monkeypatch, args[:-1], "8")  # fills the render cache: 8 threads
    from_cache = _runs(run_cli, monkeypatch, args[:-1], "8")  # all read from it, in turn
    assert pools.sizes == [8, 8, 3, 3, 8]
    for one, many, more, first, second in zip(
        sequential, parallel, again, cached, from_cache, strict=True
    ):
        assert one.exit_code == many.exit_code == more.exit_code == ExitCode.ERROR  # i == 7
        assert one.stdout == many.stdout == more.stdout == first.stdout == second.stdout
        assert one.stderr == many.stderr == more.stderr == first.stderr == second.stderr
    doc = json.loads(sequential[0].stdout)
    assert len(doc["applications"]) == FLEET - 1
    assert [e["application"] for e in doc["errors"]] == ["argocd/guestbook-07"]
    statuses = {a["name"]: a["sync"]["status"] for a in doc["applications"]}
    assert set(statuses.values()) == {"OutOfSync", "Synced"}


def test_workers_must_be_a_positive_number(
    run_cli: Callable[..., Result],
    repo: Path,
    fleet_snapshot: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = ["--all", "--snapshot", str(fleet_snapshot), "--repo-root", str(repo)]
    for bad in ("0", "-2", "many"):
        (result, _) = _runs(run_cli, monkeypatch, args, bad)
        assert result.exit_code == ExitCode.USAGE_ERROR
        assert result.stderr == (
            f"error: KUBECTL_GITDRIFT_WORKERS={bad!r}: expected a whole number, 1 or more\n"
        )
        assert result.stdout == ""


@pytest.mark.cluster
def test_parallel_and_sequential_live_give_the_same_bytes(
    kube_apiserver: ServerFactory,  # noqa: F811
    run_cli: Runner,
    repo: Path,
    fleet_snapshot: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_cli = run_cli.tuned(backoff=0.01)
    seen: list[int] = []
    real_init = cluster.Cluster.__init__

    def recording_init(self: cluster.Cluster, config: transport.Config, **kwargs: Any) -> None:
        seen.append(config.concurrency)
        real_init(self, config, **kwargs)

    monkeypatch.setattr(cluster.Cluster, "__init__", recording_init)
    server = kube_apiserver([*fleet(), *controller_rbac()])
    server.inject(path_regex=r"/services$", delay=0.02, times=None)  # let LISTs overlap
    args = ["--all", "--kubeconfig", str(server.kubeconfig_path), "--repo-root", str(repo)]
    sequential = _runs(run_cli, monkeypatch, args, "1")
    parallel = _runs(run_cli, monkeypatch, args, "8")
    assert seen == [1, 1, 8, 8]
    for one, many in zip(sequential, parallel, strict=True):
        assert one.exit_code == many.exit_code == ExitCode.ERROR
        assert one.stdout == many.stdout
        assert one.stderr == many.stderr
    offline = run_cli(
        ["--all", "--snapshot", str(fleet_snapshot), "--repo-root", str(repo), "-o", "json"]
    )
    a, b = json.loads(parallel[0].stdout), json.loads(offline.stdout)
    assert (a.pop("mode"), b.pop("mode")) == ("live", "offline")
    assert without_run_context(a) == without_run_context(b)
