"""fanout: items computed in forked worker processes, in order, with errors and deaths reported;
and `--all` compared in worker processes gives byte for byte the report of one process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kubectl_gitdrift import model
from kubectl_gitdrift.errors import GitDriftError, SourceError
from kubectl_gitdrift.run import fanout
from tests.conftest import ROOT, load_script


def _pid_of(item: int) -> tuple[int, int]:
    time.sleep(0.005)  # long enough for every child to start and take items too
    return item * item, os.getpid()


def test_results_come_back_in_order_from_every_process() -> None:
    items = list(range(100))
    results = list(fanout.imap(_pid_of, items, 3))
    assert [square for square, _ in results] == [i * i for i in items]
    assert results[0][1] == os.getpid()  # the first here: what it loads, the children inherit
    pids = {pid for _, pid in results}
    assert os.getpid() in pids  # this process works beside its children
    assert len(pids) == 3  # and both children took items from the shared task pipe


def test_more_items_than_task_records_go_in_runs() -> None:
    """Past fanout._MAX_TASKS items a task is a run of items; every one still comes back."""
    items = list(range(3 * fanout._MAX_TASKS + 5))
    assert list(fanout.imap(lambda n: -n, items, 2)) == [-n for n in items]


def test_large_results_cross_the_pipe_whole() -> None:
    """Answers bigger than a pipe's buffer arrive intact, interleaved between workers."""
    results = list(fanout.imap(lambda n: "x" * n, [300_000, 5, 1_000_000, 70_000] * 5, 2))
    assert [len(r) for r in results] == [300_000, 5, 1_000_000, 70_000] * 5


def test_work_beside_the_children_runs_once_here_while_they_compute(tmp_path: Path) -> None:
    """`beside` runs in this process after the children start; while it runs they take items,
    and an error it raises stops them."""
    seen = tmp_path / "pids"

    def fn(item: int) -> int:
        with seen.open("a") as out:
            out.write(f"{os.getpid()} {item}\n")
        return item * 2

    done: list[tuple[int, int]] = []

    def beside() -> None:
        deadline = time.monotonic() + 10
        while not seen.exists() or len(seen.read_text().split("\n")) < 20:
            assert time.monotonic() < deadline, "the children took nothing while beside ran"
            time.sleep(0.01)
        done.append((os.getpid(), len(seen.read_text().split())))

    assert list(fanout.imap(fn, list(range(40)), 2, str, beside)) == [n * 2 for n in range(40)]
    assert len(done) == 1
    assert done[0][0] == os.getpid()

    def fails() -> None:
        raise SourceError("the snapshot is not what it seemed")

    seen.unlink()
    with pytest.raises(SourceError, match="not what it seemed"):
        list(fanout.imap(fn, list(range(40)), 2, str, fails))
    pids = sorted({int(line.split()[0]) for line in seen.read_text().splitlines()} - {os.getpid()})
    assert _reaped(pids)


def _reaped(pids: list[int]) -> bool:
    """No process with these ids is left, not even a zombie."""
    return not any(Path(f"/proc/{pid}").exists() for pid in pids)


def test_an_error_in_a_worker_is_raised_here_and_every_worker_is_reaped(tmp_path: Path) -> None:
    seen = tmp_path / "pids"

    def fn(item: int) -> int:
        with seen.open("a") as out:
            out.write(f"{os.getpid()}\n")
        time.sleep(0.002)
        if item == 37:
            raise SourceError("kustomize build failed for app-37", hint="look at app-37")
        return item

    with pytest.raises(SourceError, match="app-37") as caught:
        list(fanout.imap(fn, list(range(60)), 3))
    assert caught.value.hint == "look at app-37"
    pids = sorted({int(line) for line in seen.read_text().split()} - {os.getpid()})
    assert pids
    assert _reaped(pids)  # a worker still busy (or not yet started) when the error came is too


def test_a_worker_that_dies_is_named_with_its_item(tmp_path: Path) -> None:
    parent = os.getpid()
    started = tmp_path / "started"

    def fn(item: str) -> str:
        time.sleep(0.002)
        if os.getpid() != parent:  # a child dies at its first item
            started.write_text(item)
            os.kill(os.getpid(), signal.SIGKILL)
        return item

    items = [f"argocd/shop-{i:04d}" for i in range(40)]
    with pytest.raises(GitDriftError) as caught:
        list(fanout.imap(fn, items, 2, describe=lambda item: item))
    assert caught.value.message == (
        f"a worker process was killed by SIGKILL while comparing {started.read_text()}"
    )
    assert "KUBECTL_GITDRIFT_WORKERS=1" in (caught.value.hint or "")


def test_an_answer_that_cannot_be_pickled_is_an_error() -> None:
    def fn(_item: int) -> Any:
        time.sleep(0.002)
        return threading.Lock()  # kept as it is here, not picklable from a child

    with pytest.raises(GitDriftError, match="could not send its answer"):
        list(fanout.imap(fn, list(range(50)), 2))


def test_children_still_exiting_are_reaped_before_the_next_pool_and_by_reap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    forked: list[list[int]] = []
    init = fanout._Pool.__init__

    def recorded(self: Any, *args: Any) -> None:
        init(self, *args)
        forked.append(list(self.pids))

    monkeypatch.setattr(fanout._Pool, "__init__", recorded)
    assert list(fanout.imap(abs, list(range(40)), 2)) == list(range(40))
    assert set(fanout._exiting) <= set(forked[0])  # answered all: perhaps not gone yet
    assert list(fanout.imap(abs, list(range(40)), 2)) == list(range(40))
    assert _reaped(forked[0])  # the next pool waited for them first
    fanout.reap()
    assert fanout._exiting == []
    assert _reaped(forked[1])


def test_stopping_early_kills_and_reaps_the_workers(tmp_path: Path) -> None:
    seen = tmp_path / "pids"

    def fn(_item: int) -> int:
        time.sleep(0.002)
        with seen.open("a") as out:
            out.write(f"{os.getpid()}\n")
        return os.getpid()

    results = fanout.imap(fn, list(range(1000)), 2)
    while next(results) == os.getpid():
        pass  # until an answer from the child: it is busy with the next ones
    results.close()
    pids = sorted({int(line) for line in seen.read_text().split()} - {os.getpid()})
    assert pids
    assert _reaped(pids)


def test_processes_only_where_forking_is_safe_and_pays(monkeypatch: pytest.MonkeyPatch) -> None:
    cores = len(os.sched_getaffinity(0))
    with monkeypatch.context() as alone:  # as in the CLI: other tests' servers run threads here
        alone.setattr(threading, "active_count", lambda: 1)
        assert fanout.processes(10, 8) == 1  # too few items for a second process
        assert fanout.processes(10_000, 1) == 1  # KUBECTL_GITDRIFT_WORKERS=1
        assert fanout.processes(10_000, 8) == min(cores, 8)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)  # e.g. a render pool not yet shut down
    thread.start()
    try:
        assert fanout.processes(10_000, 8) == 1  # a fork would copy one thread of two
    finally:
        stop.set()
        thread.join()


def test_a_daemon_thread_writing_to_stderr_does_not_stop_the_workers(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The progress ticker (a daemon thread) redraws on stderr while workers fork and run; a
    worker writes through stdio objects of its own, so a lock the ticker held cannot hang it."""
    stop = threading.Event()

    def ticker() -> None:
        while not stop.is_set():
            sys.stderr.write("tick\r")

    parent = os.getpid()

    def fn(item: int) -> int:
        time.sleep(0.001)  # the child gets items too
        if os.getpid() != parent:
            sys.stderr.write(f"worker {item}\n")
            print("never on the parent's stdout")
        return item

    thread = threading.Thread(target=ticker, daemon=True)
    thread.start()
    try:
        assert list(fanout.imap(fn, list(range(200)), 2)) == list(range(200))
    finally:
        stop.set()
        thread.join()
    captured = capfd.readouterr()
    assert "never on the parent's stdout" not in captured.out
    assert "worker " in captured.err


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({}, None),  # no cgroup files: the affinity alone
        ({"cpu.max": "max 100000\n"}, None),  # v2, no limit
        ({"cpu.max": "150000 100000\n"}, 2),  # v2, 1.5 CPUs: two processes
        ({"cpu.max": "50000 100000\n"}, 1),
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),  # v1
        ({"cpu/cpu.cfs_quota_us": "100000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 1),
        ({"cpu.max": "garbage\n"}, None),
    ],
)
def test_a_cpu_quota_bounds_the_processes(
    tmp_path: Path, files: dict[str, str], expected: int | None
) -> None:
    """A container's CPU limit (its cgroup's quota) counts, not the node's cores."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    cores = len(os.sched_getaffinity(0))
    assert fanout.usable_cores(tmp_path) == (cores if expected is None else min(cores, expected))


def test_without_bodies_keeps_what_outputs_read() -> None:
    key = model.ObjectKey("", "ConfigMap", "prod", "web")
    body = {"metadata": {"name": "web"}}
    synced = model.Drift(key, model.ResourceStatus.SYNCED, desired=body, live=body)
    assert synced.without_bodies() == model.Drift(key, model.ResourceStatus.SYNCED)
    change = model.Change(model.Op.CHANGE, ("data", "a"), "1", "2")
    changed = model.Drift(key, model.ResourceStatus.OUT_OF_SYNC, (change,), live=body)
    assert changed.without_bodies() is changed
    missing = model.Drift(key, model.ResourceStatus.MISSING, desired=body)
    assert missing.without_bodies() is missing  # -o diff prints it from its body


# --------------------------------------------------------------------------- --all, end to end

_RUN = textwrap.dedent(
    """
    import sys
    from kubectl_gitdrift.cli import main as cli
    from kubectl_gitdrift.run import fanout

    calls = []
    imap = fanout.imap
    def counted(fn, items, workers, *rest):
        calls.append(workers)
        return imap(fn, items, workers, *rest)
    fanout.imap = counted
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        code = cli.main(sys.argv[2:], stdout=out)
    sys.stderr.write(f"forked workers: {calls}\\n")
    sys.exit(code)
    """
)


@pytest.fixture(scope="module")
def fleet40(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """40 generated Applications (bench/generate.py), a fifth of them drifted: enough for two
    workers (fanout.MIN_ITEMS_PER_PROCESS each)."""
    gen = load_script("bench_generate", ROOT / "bench" / "generate.py")
    out = tmp_path_factory.mktemp("fleet40")
    meta = gen.generate(gen.Scenario("fleet-40", 40, 1, drift=0.2), out)
    return out, meta


def run_all_cli(
    report: Path, snapshot: Path, repo: Path, cache: Path, workers: str | None, *argv: str
) -> subprocess.CompletedProcess[str]:
    """`kubectl gitdrift --all` over `snapshot` in a process of its own (_RUN): the report in
    `report`, each pool's worker count on stderr; KUBECTL_GITDRIFT_WORKERS=`workers`, if any."""
    env = {k: v for k, v in os.environ.items() if k != "KUBECTL_GITDRIFT_WORKERS"}
    env["KUBECTL_GITDRIFT_CACHE_DIR"] = str(cache)
    if workers is not None:
        env["KUBECTL_GITDRIFT_WORKERS"] = workers
    args = ["--all", "--snapshot", str(snapshot), "--repo-root", str(repo)]
    return subprocess.run(
        [sys.executable, "-c", _RUN, str(report), *args, "--no-entry-points", *argv],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )


def _run(
    tmp_path: Path, fleet: Path, cache: Path, workers: str | None, *argv: str
) -> tuple[str, str]:
    report = tmp_path / "report"
    proc = run_all_cli(report, fleet / "snapshot.json", fleet / "repo", cache, workers, *argv)
    assert proc.returncode == 1, proc.stderr  # the fleet has drift
    return report.read_text(encoding="utf-8"), proc.stderr


@pytest.mark.slow
def test_all_in_worker_processes_is_byte_identical(
    tmp_path: Path, fleet40: tuple[Path, dict[str, Any]]
) -> None:
    fleet, _meta = fleet40
    alone = tmp_path / "cache-one-process"
    json_alone, err = _run(tmp_path, fleet, alone, "1", "-o", "json")
    assert "forked workers: []" in err
    assert len(json.loads(json_alone)["applications"]) == 40
    # the same renders, no git history yet: the workers look it up and hand it back
    shared = tmp_path / "cache-workers"
    shutil.copytree(alone, shared, ignore=shutil.ignore_patterns("history"))
    json_workers, err = _run(tmp_path, fleet, shared, None, "-o", "json")
    assert "forked workers: [2]" in err, err
    assert json_workers == json_alone
    # put together from the texts each process wrote of its apps: as json writes it at once
    assert json_workers == json.dumps(json.loads(json_workers), indent=2, sort_keys=True) + "\n"
    histories = sorted(p.name for p in (alone / "history").iterdir())
    assert histories
    assert sorted(p.name for p in (shared / "history").iterdir()) == histories
    for name in histories:
        assert json.loads((shared / "history" / name).read_text()) == json.loads(
            (alone / "history" / name).read_text()
        )
    for output in (
        ["-o", "text"],
        ["-o", "diff"],
        ["-o", "yaml"],
        ["--query", "applications[].name"],
    ):
        one, _ = _run(tmp_path, fleet, shared, "1", *output)
        many, err = _run(tmp_path, fleet, shared, None, *output)
        assert "forked workers: [2]" in err, err
        assert many == one, output
