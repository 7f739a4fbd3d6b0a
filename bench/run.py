"""Benchmarks (issue #8): time every phase of real runs and the baselines they are judged against.

Usage: ``python bench/run.py [--quick] [--only one-app,fleet,scaling,live] [--warm] [--profile]
[--kustomize-sample N] [--timeout-factor F] [--out DIR]`` (``make bench``, ``make bench
BENCH_ARGS="--quick"``). Prints progress with the elapsed time, a phase table per scenario and,
last, one summary table (target | measured | baseline | ratio | met?) whose verdicts are computed
from this run's numbers; everything goes to OUT/results.json.

Every expensive thing runs once, so the default run fits issue #8's 10 minutes:

- Each gitdrift run is the real CLI (``cli.main``) in a fresh child process (``run.py --child
  cli``) with timers wrapped around module functions *by name* (TIMERS); a function that was
  renamed or removed only drops its row (listed as "timers not installed"). The parent times the
  whole child with ``wait4`` (wall; CPU including kustomize and git) and the interpreter's exit;
  the child reports its own peak RSS (VmHWM).
- (a) one app of 2,000 objects: the CLI with an empty render cache (kustomize runs once and fills
  ``$KUBECTL_GITDRIFT_CACHE_DIR``, one directory per scenario under OUT/cache), ``kubectl
  kustomize`` alone on the same overlay once, then the CLI again from the cache; that warm child
  also measures the in-process baselines on exactly the objects it compared (``json.loads``,
  PyYAML's C loader, a naive deepdiff). Last, the installed ``kubectl-gitdrift`` script, warm.
- (b) 500 apps of 20 objects: ``--all`` cold then warm on the same cache, with at least as many
  render workers as cores, and ``kubectl kustomize`` alone over an evenly spread sample of the same
  overlays (all of them with ``--kustomize-sample 0``), as many at a time as there are cores. The
  timed warm run compares in one process (KUBECTL_GITDRIFT_WORKERS=1: the phase timers live in
  the CLI's own process); bench/fleet.py (issue 18) then times warm runs as users run them
  (compared in worker processes), one process, and the tree when issue 18 was filed,
  interleaved, medians of FLEET_ROUNDS.
- (c) 2,500 / 5,000 / 10,000 objects in one app, for memory and scaling: kustomize (super-linear,
  many minutes at this size) is replaced by a stand-in returning the YAML kustomize prints for the
  overlay (``generate.render_overlay``, checked identical by ``generate.py --verify``).
- live: the test that asserts one LIST per kind and namespace and no per-object GET, then
  bench/live.py (issue 18): a live run over 400 objects against the raw LIST of the same objects
  through the same loopback API server (``kubectl get``; a Python httpx LIST), and ``kubectl
  gitdrift version``, interleaved, medians of LIVE_ROUNDS.

Every subprocess has a timeout (TIMEOUTS, scaled by ``--timeout-factor``); one that blows it is
killed with its process group, recorded, and the run goes on. Wall times move with the machine's
load, CPU times much less; ratios are only meaningful within one run. Fixtures come from
bench/generate.py (in a child process) and are cached under OUT/fixtures by a fingerprint of the
generator; generating all five takes about a minute, once, and is reported.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import generate  # noqa: E402

CLI = Path(sys.executable).parent / "kubectl-gitdrift"
BUDGET = 600.0
"""Seconds `make bench` may take (issue #8)."""

TIMEOUTS: dict[str, float] = {
    "cli-cold": 300,  # one 2,000-object app, kustomize cold (~60 s on a quiet 2-core machine)
    "kustomize": 300,  # `kubectl kustomize` alone, same overlay
    "cli-warm": 120,  # the same from the render cache (also runs the in-process baselines)
    "all-cold": 420,  # --all over 500 apps, empty cache
    "all-warm": 180,  # --all again
    "kustomize-fleet": 240,  # kustomize alone over every overlay of the fleet, all of them
    "kustomize-app": 60,  # ... one 20-object overlay
    "scaling": 240,  # one size of the scaling runs
    "rss": 60,  # json.loads of a snapshot, for its peak RSS
    "live": 180,  # the LIST-not-GET test
    "live-ratio": 420,  # bench/live.py: 400 objects vs a raw LIST, version (~1.5 min quiet)
    "fleet-ratio": 900,  # bench/fleet.py: warm --all now / one process / before, with warm-ups
    "git": 120,  # cloning a fixture repo for the kustomize baselines
    "fixture": 600,  # generating one fixture (~25 s for the largest)
}
SECTIONS = ("one-app", "fleet", "scaling", "live")
STAND_IN_FILE = "kustomize-output.yaml"
"""What kustomize prints for a one-app fixture's overlay (generate.render_overlay, verified
identical by `generate.py --verify`): the scaling runs' stand-in for running kustomize."""
SCALING = ("one-app-2500", "one-app-5000", "one-app-10000")
LIVE_TEST = "tests/live/test_live.py::test_lists_once_per_kind_and_namespace"
LIVE_ROUNDS = 5
LIVE_APP = "now: gitdrift perf (live)"
FLEET_ROUNDS = 3

# (label, module, attribute): the phases timed inside the CLI child, in display order; labels
# are indented under the phase that calls them; "a|b" times whichever of the names exist.
# Functions called from render worker threads get wall time summed over threads (marked Σ) and
# no CPU.
TIMERS: tuple[tuple[str, str, str], ...] = (
    ("load snapshot", "kubectl_gitdrift.live.snapshot", "load"),
    ("render: every app (workflow.prepare)", "kubectl_gitdrift.run.workflow", "prepare"),
    ("  render one app", "kubectl_gitdrift.sources.render", "render"),
    ("    git export of the revision", "kubectl_gitdrift.sources.render", "Exports.export"),
    ("    render cache read", "kubectl_gitdrift.sources.cache", "RenderCache.get"),
    ("    render cache write", "kubectl_gitdrift.sources.cache", "RenderCache.put"),
    (
        "    kustomization closure walk",
        "kubectl_gitdrift.sources.kustomize",
        "Closure.walk|_Closure.walk",
    ),
    ("    tree copy for the build", "kubectl_gitdrift.sources.kustomize", "_copy_tree"),
    ("    kustomize build (process)", "kubectl_gitdrift.sources.kustomize", "_run_build"),
    ("    parse build output", "kubectl_gitdrift.yamlio", "load_objects"),
    ("engine options (schemas)", "kubectl_gitdrift.run.workflow", "options"),
    ("live index", "kubectl_gitdrift.engine", "LiveIndex.of"),
    ("compare: every app (workflow.run_one)", "kubectl_gitdrift.run.workflow", "run_one"),
    ("  engine.run", "kubectl_gitdrift.engine", "run"),
    ("    prepare desired", "kubectl_gitdrift.diagnose.tracking", "prepare_desired"),
    ("    normalize+diff (legacy.compare)", "kubectl_gitdrift.compare.legacy", "compare"),
    ("    attribute", "kubectl_gitdrift.diagnose.attribution", "attribute"),
    ("    attribution clues", "kubectl_gitdrift.diagnose.attribution", "gather"),
    ("    diagnose", "kubectl_gitdrift.diagnose.rules", "diagnose"),
    ("    remedies", "kubectl_gitdrift.diagnose.remedies", "recommend"),
    ("    locate source (clues, remedies)", "kubectl_gitdrift.sources.locate", "locate"),
    (
        "    last commit of a file (git)",
        "kubectl_gitdrift.sources.git",
        "commit_touching|last_commit_touching",
    ),
    ("report: to_dict", "kubectl_gitdrift.present.report", "to_dict"),
    ("report: text", "kubectl_gitdrift.present.report", "render_text"),
    ("report: json", "kubectl_gitdrift.present.report", "render_json"),
    ("report: --all output", "kubectl_gitdrift.cli.main", "_render_all"),
)
LOAD = "load snapshot"
RENDER = "render: every app (workflow.prepare)"
BUILD = "    kustomize build (process)"
STAND_IN = "    stand-in for kustomize (reads its YAML)"
CORE = ("    normalize+diff (legacy.compare)", "    attribute")
"""Target 1's "normalize+diff+attribute"."""
ENGINE = "  engine.run"
REPORT = ("report: to_dict", "report: text", "report: json", "report: --all output")
TEARDOWN = "exit: interpreter teardown (wall, from the parent)"


# --------------------------------------------------------------------------- timing


def _cpu() -> float:
    """CPU seconds of this process and of its reaped children (kustomize, git)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + ru.ru_utime + ru.ru_stime


class Clock:
    """Per label: calls, wall and CPU seconds (CPU is None once a call ran off the main thread,
    where process CPU time says nothing about that call)."""

    def __init__(self) -> None:
        self.stats: dict[str, dict[str, Any]] = {}
        self.kept: dict[str, Any] = {}
        self.originals: dict[str, Callable[..., Any]] = {}
        self.missing: list[str] = []
        self._lock = threading.Lock()

    def add(self, name: str, wall: float, cpu: float | None) -> None:
        with self._lock:
            s = self.stats.setdefault(name, {"calls": 0, "wall": 0.0, "cpu": 0.0})
            s["calls"] += 1
            s["wall"] += wall
            s["cpu"] = None if cpu is None or s["cpu"] is None else s["cpu"] + cpu

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        w, c = time.perf_counter(), _cpu()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - w, _cpu() - c)

    def wrap(self, module_name: str, attr: str, name: str, *, keep: bool = False) -> bool:
        """Time every call of module.attr (attr may be Class.method) under `name`; keep the
        last return value if asked. False, and noted, when the function is not there."""
        try:
            owner: Any = importlib.import_module(module_name)
            *path, last = attr.split(".")
            for part in path:
                owner = getattr(owner, part)
            original = getattr(owner, last)
        except (ImportError, AttributeError):
            self.missing.append(f"{module_name}.{attr}")
            return False
        raw = vars(owner).get(last) if isinstance(owner, type) else None
        main = threading.main_thread()
        self.originals[name] = original

        def timed(*args: Any, **kwargs: Any) -> Any:
            on_main = threading.current_thread() is main
            w, c = time.perf_counter(), _cpu() if on_main else 0.0
            try:
                value = original(*args, **kwargs)
                if keep:
                    self.kept[name] = value
                return value
            finally:
                self.add(name, time.perf_counter() - w, _cpu() - c if on_main else None)

        bound = isinstance(raw, (classmethod, staticmethod))
        setattr(owner, last, staticmethod(timed) if bound else timed)
        return True


@dataclass
class Proc:
    """One finished (or killed) subprocess, timed by wait4."""

    cmd: str
    rc: int | None  # None: killed at the timeout, or never started
    wall: float
    cpu: float  # its own and its reaped children's
    maxrss_mib: float
    stdout: bytes
    stderr: str
    timed_out: bool = False
    error: str = ""
    ended_at: float = 0.0  # time.time() when it was reaped

    def ok(self) -> bool:
        return self.rc is not None and not self.timed_out

    def brief(self) -> str:
        if self.error:
            return f"failed: {self.error}"
        if self.timed_out:
            return f"TIMED OUT after {self.wall:.0f}s (killed)"
        return (
            f"wall {self.wall:.2f}s, CPU {self.cpu:.2f}s, "
            f"peak RSS {self.maxrss_mib:.0f} MiB, rc {self.rc}"
        )

    def dump(self) -> dict[str, Any]:
        return {
            "cmd": self.cmd,
            "rc": self.rc,
            "wall": self.wall,
            "cpu": self.cpu,
            "maxrss_mib": self.maxrss_mib,
            "timed_out": self.timed_out,
            "error": self.error,
            "stderr": self.stderr,
            "ended_at": self.ended_at,
        }


def spawn(
    cmd: Sequence[str],
    *,
    timeout: float,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    label: str = "",
) -> Proc:
    """Run `cmd` in its own session; kill the whole group at `timeout`."""
    shown = label or " ".join(cmd)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(
                list(cmd),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as exc:
            return Proc(shown, None, 0.0, 0.0, 0.0, b"", "", error=str(exc))
        reaped: list[tuple[float, float, int, resource.struct_rusage]] = []

        def reap() -> None:
            _, status, usage = os.wait4(proc.pid, 0)
            reaped.append((time.perf_counter(), time.time(), status, usage))

        waiter = threading.Thread(target=reap, daemon=True)
        waiter.start()
        waiter.join(timeout)
        timed_out = waiter.is_alive()
        if timed_out:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            waiter.join()
        ended, ended_at, status, usage = reaped[0]
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        return Proc(
            shown,
            None if timed_out else proc.returncode,
            ended - start,
            usage.ru_utime + usage.ru_stime,
            usage.ru_maxrss / 1024,
            out.read(),
            err.read().decode(errors="replace")[-2000:],
            timed_out=timed_out,
            ended_at=ended_at,
        )


# --------------------------------------------------------------------------- child: the CLI


def check_report(text: str | bytes, meta: dict[str, Any]) -> dict[str, Any]:
    """The JSON report against the fixture's seeded drift (meta.json)."""
    try:
        doc = json.loads(text)
        apps = list(doc.get("applications") or [])
        resources = [(a, r) for a in apps for r in a.get("resources") or []]
        found = {
            (r.get("group") or "", r["kind"], r.get("namespace") or "", r["name"])
            for _a, r in resources
            if r.get("status") == "OutOfSync"
        }
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        return {"error": f"no usable JSON report: {type(exc).__name__}: {exc}"}
    names = {a.get("name") for a in apps}
    expected = {
        (d["group"], d["kind"], d["namespace"], d["name"])
        for d in meta["drifted"]
        if d["app"] in names
    }
    changes = [c for _a, r in resources for c in r.get("changes") or []]
    return {
        "apps": len(apps),
        "app_errors": len(doc.get("errors") or []),
        "resources": len(resources),
        "out_of_sync": len(found),
        "expected_out_of_sync": len(expected),
        "false_positives": len(found - expected),
        "missed": len(expected - found),
        "changes": len(changes),
        "attributed": sum(1 for c in changes if c.get("owner")),
    }


def child_cli(args: argparse.Namespace) -> int:
    """`cli.main(argv)` with the TIMERS installed; results (and baselines) to --result."""
    clock = Clock()
    with clock.phase("import"):
        from kubectl_gitdrift.cli import main as cli
    data = Path(args.data)
    meta = json.loads((data / "meta.json").read_text(encoding="utf-8"))
    stand_in_ok = True
    if args.stand_in:
        text_path = Path(args.stand_in)
        try:
            kustomize = importlib.import_module("kubectl_gitdrift.sources.kustomize")
            kustomize._run_build  # noqa: B018 - fail here, not by running the real kustomize
        except (ImportError, AttributeError):
            stand_in_ok = False
        else:

            def stand_in(*_args: Any, **_kwargs: Any) -> bytes:
                return text_path.read_bytes()

            setattr(kustomize, "_run_build", stand_in)  # noqa: B010
    for label, module, attrs in TIMERS:
        if label == BUILD and args.stand_in:
            label = STAND_IN
        names = attrs.split("|")
        found = [clock.wrap(module, a, label, keep=label in (LOAD, RENDER)) for a in names]
        if any(found):  # an alternative name that is gone is not missing
            clock.missing = [m for m in clock.missing if m not in {f"{module}.{a}" for a in names}]
    argv = json.loads(args.argv)
    out, err = io.StringIO(), io.StringIO()
    result: dict[str, Any] = {"argv": argv}
    if not stand_in_ok:
        result["error"] = "kustomize._run_build is gone: no stand-in, not running 10k kustomize"
        Path(args.result).write_text(json.dumps(result), encoding="utf-8")
        return 3
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    with clock.phase("total (cli.main)"):
        rc = cli.main(argv, stdout=out, stderr=err)
    if profiler is not None:
        profiler.disable()
        _write_profile(profiler, args.profile)
    result.update(rc=rc, stderr=err.getvalue()[-2000:], peak_rss_mib=_peak_rss_mib())
    with contextlib.suppress(Exception):
        settings = importlib.import_module("kubectl_gitdrift.settings")
        result["workers"] = settings.Settings.from_environ().workers()
    result["check"] = check_report(out.getvalue(), meta)
    del out
    if args.baselines:
        try:
            result["baselines"] = baselines(clock, data, yaml_too=args.yaml)
        except (ValueError, TypeError, KeyError, AttributeError, OSError, ImportError) as exc:
            # a baseline that breaks must not lose the run's own numbers
            result["baselines"] = {"error": f"{type(exc).__name__}: {exc}"}
    result["clock"] = clock.stats
    result["missing"] = clock.missing
    result["done_at"] = time.time()  # the parent's reap time minus this: interpreter teardown
    Path(args.result).write_text(json.dumps(result), encoding="utf-8")
    return 0


def _write_profile(profiler: Any, prefix: str) -> None:
    import pstats

    for order in ("tottime", "cumulative"):
        buf = io.StringIO()
        pstats.Stats(profiler, stream=buf).sort_stats(order).print_stats(40)
        Path(f"{prefix}.{order}.txt").write_text(buf.getvalue(), encoding="utf-8")
    profiler.dump_stats(f"{prefix}.prof")


def _timed(clock: Clock, name: str, fn: Callable[[], Any], repeat: int = 1) -> None:
    """The median of `repeat` runs of fn, recorded once under `name`."""
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    clock.add(name, statistics.median(walls), statistics.median(cpus))


def baselines(clock: Clock, data: Path, *, yaml_too: bool) -> dict[str, Any]:
    """What target 1 compares with, on the objects this run compared: the desired bodies the
    render produced and the live bodies with the same key."""
    state = clock.kept.get(LOAD)
    targets = clock.kept.get(RENDER)
    if state is None or not targets:
        return {"error": "snapshot.load / workflow.prepare not captured (renamed?)"}
    live_by_key = {m.key: m.body for m in state.objects}
    pairs = [
        (m.body, live_by_key[m.key])
        for t in targets
        if getattr(t, "rendered", None) is not None
        for m in t.rendered.manifests
        if m.key in live_by_key
    ]
    info: dict[str, Any] = {"pairs": len(pairs)}
    pair_json = json.dumps({"desired": [d for d, _ in pairs], "live": [v for _, v in pairs]})
    info["pairs_json_mib"] = len(pair_json) / 2**20
    _timed(
        clock,
        "baseline: json.loads, compared pairs (median of 3)",
        lambda: json.loads(pair_json),
        3,
    )
    lines = (data / "snapshot.json").read_bytes().splitlines()
    _timed(
        clock,
        "baseline: json.loads, snapshot.json (median of 3)",
        lambda: [json.loads(line) for line in lines],
        3,
    )
    if yaml_too:
        import yaml

        from kubectl_gitdrift.live import snapshot

        load = clock.originals.get(LOAD, snapshot.load)  # untimed: not a second "load snapshot"
        _timed(
            clock,
            "load snapshot.yaml (snapshot.load)",
            lambda: load(data / "snapshot.yaml"),
        )
        raw = (data / "snapshot.yaml").read_bytes()
        _timed(
            clock,
            "baseline: yaml CSafeLoader, snapshot.yaml",
            lambda: yaml.load(raw, Loader=yaml.CSafeLoader),
        )
    try:
        from deepdiff import DeepDiff
    except ImportError:
        info["deepdiff"] = "not installed (pip install -e '.[bench]')"
        return info
    differing = 0

    def naive() -> None:
        nonlocal differing
        differing = sum(1 for want, have in pairs if DeepDiff(want, have))

    _timed(clock, "baseline: deepdiff per pair (naive)", naive)
    info["deepdiff_differing"] = differing  # naive: nearly every pair differs (server fields)
    return info


def child_json_load(args: argparse.Namespace) -> int:
    """Only json.loads of the snapshot: the memory baseline (prints its peak RSS, MiB)."""
    docs = [json.loads(line) for line in Path(args.data, "snapshot.json").read_bytes().splitlines()]
    print(json.dumps({"objects": len(docs), "peak_rss_mib": _peak_rss_mib()}))
    return 0


def child_fixture(args: argparse.Namespace) -> int:
    path, meta = generate.ensure(generate.SCENARIOS[args.data], args.out / "fixtures")
    if meta["scenario"]["apps"] == 1 and not (path / STAND_IN_FILE).is_file():
        bodies = generate.render_overlay(meta["apps"][0], meta["scenario"]["units"])
        (path / STAND_IN_FILE).write_text(generate.dump_yaml_all(bodies), encoding="utf-8")
    return 0


def _peak_rss_mib() -> float | None:
    """This process's own peak RSS (VmHWM). Not ru_maxrss: a child's ru_maxrss starts at its
    parent's peak (the pre-exec address space is counted), which hides small processes."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return None


# --------------------------------------------------------------------------- parent


class SectionError(Exception):
    """A section cannot go on (its fixture failed); the others still run."""


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out: Path = args.out
        self.started = time.perf_counter()
        given = {**vars(args), "out": str(args.out)}
        self.results: dict[str, Any] = {"machine": machine(), "fixtures": {}, "args": given}

    def log(self, message: str) -> None:
        print(f"[{time.perf_counter() - self.started:6.1f}s] {message}", flush=True)

    def timeout(self, step: str) -> float:
        return float(TIMEOUTS[step] * self.args.timeout_factor)

    def fixture(self, name: str, *, stand_in: bool = False) -> tuple[Path, dict[str, Any]]:
        """The scenario's fixture, generated (in a child) unless an identical one is cached;
        `stand_in`: also the YAML kustomize prints for its one app (see STAND_IN_FILE)."""
        scenario = generate.SCENARIOS[name]
        stamp = self.out / "fixtures" / name / ".fingerprint"
        cached = stamp.is_file() and stamp.read_text(encoding="utf-8") == generate.fingerprint(
            scenario
        )
        cached = cached and not (stand_in and not (stamp.parent / STAND_IN_FILE).is_file())
        path = self.out / "fixtures" / name
        if cached:
            self.results["fixtures"].setdefault(name, {"seconds": 0.0, "generated": False})
        else:  # in a child, so this process stays small (a child's peak RSS starts at ours)
            self.log(f"  generating fixture {name} ({scenario.doc}) ...")
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "fixture"]
            proc = spawn(
                [*cmd, "--data", name, "--out", str(self.out)], timeout=self.timeout("fixture")
            )
            self.results["fixtures"][name] = {"seconds": proc.wall, "generated": True}
            if not proc.ok() or proc.rc != 0:
                raise SectionError(
                    f"generating fixture {name}: {proc.brief()} {proc.stderr[-300:]}"
                )
            self.log(f"  generated fixture {name} in {proc.wall:.1f}s")
        return path, json.loads((path / "meta.json").read_text(encoding="utf-8"))

    def cache(self, name: str) -> Path:
        """The render cache (KUBECTL_GITDRIFT_CACHE_DIR) of one scenario's runs."""
        return self.out / "cache" / name

    def cold(self, name: str) -> bool:
        """Run the cold steps: always, unless --warm finds renders cached by an earlier run."""
        if not self.args.warm:
            shutil.rmtree(self.cache(name), ignore_errors=True)
            return True
        if cache_entries(self.cache(name)):
            return False
        self.log(f"{name}: --warm, but no renders cached: running the cold steps")
        return True

    def env(
        self, name: str, *, workers: int | None = None, kustomize_timeout: float = 0
    ) -> dict[str, str]:
        env = dict(os.environ, KUBECTL_GITDRIFT_CACHE_DIR=str(self.cache(name)))
        env.pop("KUBECTL_GITDRIFT_WORKERS", None)
        if workers:
            env["KUBECTL_GITDRIFT_WORKERS"] = str(workers)
        if kustomize_timeout:
            env["KUBECTL_GITDRIFT_KUSTOMIZE_TIMEOUT"] = str(int(kustomize_timeout))
        return env

    def cli(
        self,
        name: str,
        data: Path,
        argv: list[str],
        *,
        step: str,
        baselines: bool = False,
        stand_in: Path | None = None,
        workers: int | None = None,
        profile: str = "",
    ) -> dict[str, Any]:
        """The CLI in an instrumented child; its timers merged with wait4's numbers."""
        result_file = self.out / f".child-{name}.json"
        result_file.unlink(missing_ok=True)
        full = [*argv, "--snapshot", str(data / "snapshot.json"), "--repo-root", str(data / "repo")]
        full += ["--no-entry-points"]
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "cli"]
        cmd += ["--data", str(data), "--result", str(result_file), "--argv", json.dumps(full)]
        if baselines:
            cmd += ["--baselines"] + (["--yaml"] if not self.args.quick else [])
        if stand_in is not None:
            cmd += ["--stand-in", str(stand_in)]
        if profile:
            cmd += ["--profile", profile]
        timeout = self.timeout(step)
        self.log(f"{name}: kubectl-gitdrift {' '.join(argv)} ...")
        proc = spawn(
            cmd,
            timeout=timeout,
            env=self.env(data.name, workers=workers, kustomize_timeout=timeout),
            label=f"kubectl-gitdrift {' '.join(argv)}",
        )
        run: dict[str, Any] = {"process": proc.dump()}
        if result_file.is_file():
            run.update(json.loads(result_file.read_text(encoding="utf-8")))
            result_file.unlink()
            if "done_at" in run and not proc.timed_out:
                teardown = proc.ended_at - run["done_at"]
                run.setdefault("clock", {})[TEARDOWN] = {"calls": 1, "wall": teardown, "cpu": None}
        elif not proc.error:
            tail = (proc.stderr.strip().splitlines() or ["no result written"])[-1]
            proc.error = "timed out" if proc.timed_out else tail
            run["process"] = proc.dump()
        if proc.error or proc.timed_out:
            shown = proc.brief()
        else:
            rss = run.get("peak_rss_mib")
            shown = (
                f"wall {proc.wall:.2f}s, CPU {proc.cpu:.2f}s (incl. children), peak RSS "
                + (f"{rss:.0f} MiB" if rss else "?")
                + f", exit {run.get('rc', '?')}"
            )
        self.log(f"  {shown}" + _check_brief(run))
        if run.get("rc", 0) > 1 or proc.error:
            self.log(f"  stderr: {(run.get('stderr') or proc.stderr).strip()[-300:]}")
        return run

    def clone(self, data: Path, meta: dict[str, Any]) -> Path | None:
        """A checkout of the fixture's repo at its revision (for kustomize alone), cached."""
        wt = self.out / "worktrees" / data.name
        head = subprocess.run(
            ["git", "-C", str(wt), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
        )
        if wt.is_dir() and head.stdout.strip() == meta["revision"]:
            return wt
        shutil.rmtree(wt, ignore_errors=True)
        wt.parent.mkdir(parents=True, exist_ok=True)
        proc = spawn(
            ["git", "clone", "-q", str(data / "repo"), str(wt)], timeout=self.timeout("git")
        )
        if not proc.ok() or proc.rc != 0:
            self.log(f"  git clone for the kustomize baseline failed: {proc.brief()} {proc.stderr}")
            return None
        return wt

    def kustomize(
        self, wt: Path, apps: Sequence[str], *, step: str, parallel: int
    ) -> dict[str, Any]:
        """`<kustomize> apps/<app>/overlays/prod` for each app, `parallel` at a time."""
        binary = kustomize_binary()
        deadline = time.perf_counter() + self.timeout("kustomize-fleet")
        per_app = self.timeout(step)

        def one(app: str) -> Proc | None:
            left = deadline - time.perf_counter()
            if len(apps) > 1 and left <= 0:
                return None
            cmd = [*binary, str(wt / "apps" / app / "overlays" / "prod")]
            return spawn(cmd, timeout=per_app if len(apps) == 1 else min(per_app, left))

        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=max(parallel, 1)) as pool:
            procs = list(pool.map(one, apps))
        wall = time.perf_counter() - start
        done = [p for p in procs if p is not None and p.ok() and p.rc == 0]
        failed = [p for p in procs if p is not None and not (p.ok() and p.rc == 0)]
        return {
            "cmd": " ".join(binary) + " apps/<app>/overlays/prod",
            "apps": len(apps),
            "done": len(done),
            "failed": len(failed),
            "skipped": sum(1 for p in procs if p is None),
            "parallel": parallel,
            "wall": wall,
            "cpu": sum(p.cpu for p in procs if p is not None),
            "max_app_wall": max((p.wall for p in procs if p is not None), default=0.0),
            "errors": [p.brief() + " " + p.stderr[-200:] for p in failed][:3],
        }

    # ------------------------------------------------------------------ sections

    def one_app(self) -> None:
        data, meta = self.fixture("one-app-2000")
        app = meta["apps"][0]
        res: dict[str, Any] = self.results.setdefault("one-app-2000", {})
        argv = [app, "-o", "json"]
        if self.cold(data.name):
            res["cold"] = self.cli("one-app cold", data, argv, step="cli-cold")
            wt = self.clone(data, meta)
            if wt is not None:
                self.log("one-app: kubectl kustomize alone, same overlay ...")
                res["kustomize"] = k = self.kustomize(wt, [app], step="kustomize", parallel=1)
                self.log(f"  wall {k['wall']:.1f}s, CPU {k['cpu']:.1f}s, ok {k['done']}/1")
        res["warm"] = self.cli("one-app warm", data, argv, step="cli-warm", baselines=True)
        self.log("one-app: the kubectl-gitdrift script, render cached ...")
        full = [str(CLI), *argv, "--snapshot", str(data / "snapshot.json"), "--repo-root"]
        full += [str(data / "repo"), "--no-entry-points"]
        proc = spawn(
            full,
            timeout=self.timeout("cli-warm"),
            env=self.env(data.name),
            label="kubectl-gitdrift " + " ".join(argv),
        )
        res["script"] = {"process": proc.dump(), "check": check_report(proc.stdout, meta)}
        self.log(f"  {proc.brief()}" + _check_brief(res["script"]))
        if self.args.profile is not None:
            prefix = str(self.out / (self.args.profile or "profile-2000"))
            self.cli("one-app profile", data, argv, step="cli-warm", profile=prefix)
            self.log(f"  cProfile of the warm run: {prefix}.{{tottime,cumulative}}.txt, .prof")

    def fleet(self) -> None:
        data, meta = self.fixture("fleet-500x20")
        res: dict[str, Any] = self.results.setdefault("fleet-500x20", {})
        cores = cpu_count()
        default = default_workers()
        workers = cores if default is None or default < cores else None  # None: the CLI default
        res["cores"], res["default_workers"] = cores, default
        argv = ["--all", "-o", "json"]
        cold = self.cold(data.name)
        if cold:
            res["cold"] = self.cli("fleet cold", data, argv, step="all-cold", workers=workers)
            res["cache_entries_after_cold"] = cache_entries(self.cache(data.name))
        # one process: the phase timers are in the CLI's own process (bench/fleet.py times
        # the worker processes users get)
        res["warm"] = self.cli("fleet warm, one process", data, argv, step="all-warm", workers=1)
        res["cache_entries_after_warm"] = cache_entries(self.cache(data.name))
        if cold:
            wt = self.clone(data, meta)
            if wt is not None:
                every = meta["apps"]
                n = self.args.kustomize_sample or len(every)
                apps = every[:: max(len(every) // n, 1)][:n]  # evenly spread; all are alike
                self.log(
                    f"fleet: kubectl kustomize alone over {len(apps)} of {len(every)} overlays, "
                    f"{cores} at a time ..."
                )
                res["kustomize"] = k = self.kustomize(
                    wt, apps, step="kustomize-app", parallel=cores
                )
                k["of"] = len(every)
                self.log(
                    f"  wall {k['wall']:.1f}s, CPU {k['cpu']:.1f}s, ok {k['done']}/{k['apps']}"
                    + (f", skipped {k['skipped']} (budget)" if k["skipped"] else "")
                )
        self.fleet_ratio()

    def fleet_ratio(self) -> None:
        """bench/fleet.py: warm --all as users run it, in one process, and at the tree when
        issue 18 was filed, interleaved in one run (issue 18's --all targets)."""
        self.log(f"fleet: bench/fleet.py --rounds {FLEET_ROUNDS} (now, one process, before) ...")
        out = self.out / "fleet.json"
        out.unlink(missing_ok=True)
        cmd = [sys.executable, str(HERE / "fleet.py"), "--rounds", str(FLEET_ROUNDS)]
        proc = spawn([*cmd, "--out", str(out)], timeout=self.timeout("fleet-ratio"), cwd=ROOT)
        ratio: dict[str, Any] = {"process": proc.dump()}
        if proc.ok() and out.is_file():
            ratio.update(json.loads(out.read_text(encoding="utf-8")))
        self.results["fleet-ratio"] = ratio
        self.log(f"  {proc.brief()}")

    def scaling(self) -> None:
        res: dict[str, Any] = self.results.setdefault("scaling", {})
        me = [sys.executable, str(Path(__file__).resolve()), "--child"]
        for name in SCALING:
            data, meta = self.fixture(name, stand_in=True)
            run = self.cli(
                f"scaling {name}",
                data,
                [meta["apps"][0], "-o", "json", "--no-cache"],
                step="scaling",
                stand_in=data / STAND_IN_FILE,
            )
            proc = spawn([*me, "json-load", "--data", str(data)], timeout=self.timeout("rss"))
            loaded: dict[str, Any] = {"process": proc.dump()}
            with contextlib.suppress(ValueError):
                loaded.update(json.loads(proc.stdout))
            run["json_loads"] = loaded
            run["objects"] = meta["tracked_objects"]
            run["snapshot_objects"] = meta["snapshot_objects"]
            run["snapshot_json_mib"] = (data / "snapshot.json").stat().st_size / 2**20
            res[name] = run
            self.log(
                f"  baseline, json.loads of snapshot.json alone: wall {proc.wall:.2f}s, "
                f"peak RSS {_rss(loaded.get('peak_rss_mib'))} MiB"
            )

    def live(self) -> None:
        self.log(f"live: {LIVE_TEST} ...")
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", LIVE_TEST]
        proc = spawn(cmd, timeout=self.timeout("live"), cwd=ROOT)
        last = (proc.stdout.decode(errors="replace").strip().splitlines() or [""])[-1]
        self.results["live"] = {"process": proc.dump(), "summary": last, "test": LIVE_TEST}
        self.log(f"  {proc.brief()}: {last}")
        self.log(f"live: bench/live.py --rounds {LIVE_ROUNDS} (400 objects, raw LIST, version) ...")
        out = self.out / "live.json"
        out.unlink(missing_ok=True)
        cmd = [
            sys.executable,
            str(HERE / "live.py"),
            "--rounds",
            str(LIVE_ROUNDS),
            "--out",
            str(out),
        ]
        proc = spawn(cmd, timeout=self.timeout("live-ratio"), cwd=ROOT)
        ratio: dict[str, Any] = {"process": proc.dump()}
        if proc.ok() and proc.rc == 0 and out.is_file():
            ratio.update(json.loads(out.read_text(encoding="utf-8")))
        self.results["live-ratio"] = ratio
        self.log(f"  {proc.brief()}")


def _check_brief(run: dict[str, Any]) -> str:
    c = run.get("check") or {}
    if not c or "error" in c:
        return ""
    return (
        f"; {c['apps']} app(s), OutOfSync {c['out_of_sync']}/{c['expected_out_of_sync']} expected"
        f" ({c['false_positives']} false, {c['missed']} missed)"
    )


def kustomize_binary() -> list[str]:
    """The binary gitdrift renders with (same lookup), else kubectl kustomize."""
    with contextlib.suppress(Exception):
        module = importlib.import_module("kubectl_gitdrift.sources.tools")
        found: list[str] = module.kustomize_command()
        return found
    return ["kubectl", "kustomize"]


def default_workers() -> int | None:
    with contextlib.suppress(Exception):
        settings = importlib.import_module("kubectl_gitdrift.settings")
        return int(settings.MAX_WORKERS)
    return None


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def cache_entries(cache: Path) -> int:
    return sum(1 for _ in (cache / "renders").glob("*/*.json")) if cache.is_dir() else 0


def machine() -> dict[str, Any]:
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    kube = subprocess.run(
        ["kubectl", "version", "--client"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "cores": cpu_count(),
        "cpu": cpu,
        "python": sys.version.split()[0],
        "kubectl": " / ".join(kube.splitlines()),
        "loadavg": os.getloadavg(),
    }


# --------------------------------------------------------------------------- tables


def _s(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.3f}" if v < 10 else f"{v:.1f}"


def _stat(run: dict[str, Any] | None, label: str, which: str) -> float | None:
    value = ((run or {}).get("clock") or {}).get(label, {}).get(which)
    return float(value) if value is not None else None


def _sum(run: dict[str, Any] | None, labels: Sequence[str], which: str) -> float | None:
    vals = [_stat(run, n, which) for n in labels]
    return sum(v for v in vals if v is not None) if any(v is not None for v in vals) else None


def _proc(run: dict[str, Any] | None, which: str) -> float | None:
    p = (run or {}).get("process") or {}
    if p.get("error") or p.get("timed_out") or p.get(which) is None:
        return None
    return float(p[which])


def phase_table(runs: dict[str, dict[str, Any] | None]) -> str:
    """PHASE | calls, wall, CPU per run (columns), rows in TIMERS order, indented by caller."""
    from tabulate import tabulate

    present = {k: v for k, v in runs.items() if v}
    labels = ["import", *[t[0] for t in TIMERS], STAND_IN, "total (cli.main)", TEARDOWN]
    extra = sorted({n for r in present.values() for n in r.get("clock") or {}} - set(labels))
    rows = []
    for label in [*labels, *extra]:
        stats = [((r.get("clock") or {}).get(label)) for r in present.values()]
        if not any(stats):
            continue
        depth = (len(label) - len(label.lstrip())) // 2
        row = ["· " * depth + label.strip()]  # tabulate strips leading blanks
        for s in stats:
            if not s:
                row += ["", "", ""]
                continue
            threaded = s["cpu"] is None and label != TEARDOWN
            row += [str(s["calls"]), ("Σ " if threaded else "") + _s(s["wall"]), _s(s["cpu"])]
        rows.append(row)
    row = ["child process (wait4; incl. kustomize, baselines)"]
    for r in present.values():
        row += ["", _s(_proc(r, "wall")), _s(_proc(r, "cpu"))]
    rows.append(row)
    row = ["peak RSS MiB (VmHWM, after cli.main)"]
    for r in present.values():
        rss = r.get("peak_rss_mib")
        row += ["", f"{rss:.0f}" if rss is not None else "-", ""]
    rows.append(row)
    headers = ["PHASE"]
    for name in present:
        headers += [f"{name}: calls", "wall s", "CPU s"]
    missing = sorted({m for r in present.values() for m in r.get("missing") or []})
    note = f"\ntimers not installed (renamed or removed?): {', '.join(missing)}" if missing else ""
    return tabulate(rows, headers=headers, disable_numparse=True) + note


def report_one_app(res: dict[str, Any]) -> str:
    from tabulate import tabulate

    warm = res.get("warm") or {}
    c = warm.get("check") or {}
    lines = ["\n## (a) one app, 2,000 objects (fixture one-app-2000)"]
    if c and "error" not in c:
        lines.append(
            f"{c['resources']} resources compared; OutOfSync {c['out_of_sync']} (seeded "
            f"{c['expected_out_of_sync']}; {c['false_positives']} false positives, {c['missed']} "
            f"missed); {c['changes']} changes, {c['attributed']} attributed to a manager"
        )
    lines.append(phase_table({"cold": res.get("cold"), "warm": warm}))
    rows = []
    k = res.get("kustomize")
    if k:
        rows.append([f"kustomize alone ({k['cmd']}), process", _s(k["wall"]), _s(k["cpu"])])
    script = res.get("script")
    if script:
        rows.append(
            [
                "kubectl-gitdrift script, render cached, process",
                _s(_proc(script, "wall")),
                _s(_proc(script, "cpu")),
            ]
        )
    for label, s in (warm.get("clock") or {}).items():
        if label.startswith(("baseline:", "load snapshot.yaml")):
            rows.append([label, _s(s["wall"]), _s(s["cpu"])])
    info = warm.get("baselines") or {}
    if rows:
        lines.append("")
        lines.append(
            tabulate(rows, headers=["RUN / BASELINE", "wall s", "CPU s"], disable_numparse=True)
        )
    if info:
        lines.append(
            f"baselines on {info.get('pairs', '?')} desired/live pairs "
            f"({info.get('pairs_json_mib', 0):.1f} MiB as JSON)"
            + (
                f"; naive deepdiff finds {info['deepdiff_differing']} pairs differing"
                if "deepdiff_differing" in info
                else ""
            )
            + (f"; {info['error']}" if "error" in info else "")
        )
    return "\n".join(lines)


def report_fleet(res: dict[str, Any]) -> str:
    from tabulate import tabulate

    lines = ["\n## (b) --all over 500 apps of 20 objects (fixture fleet-500x20)"]
    warm, cold = res.get("warm") or {}, res.get("cold") or {}
    workers = cold.get("workers") or warm.get("workers")
    lines.append(
        f"{res.get('cores')} cores; cold: render workers {workers} (settings.MAX_WORKERS "
        f"{res.get('default_workers')}, KUBECTL_GITDRIFT_WORKERS set to the core count only if "
        f"larger); warm: one process (KUBECTL_GITDRIFT_WORKERS=1, so that the phase timers see "
        f"every app; bench/fleet.py times the worker processes); render cache entries after "
        f"cold {res.get('cache_entries_after_cold', '-')}, "
        f"after warm {res.get('cache_entries_after_warm', '-')}"
    )
    for name, run in (("cold", cold), ("warm", warm)):
        c = run.get("check") or {}
        if c and "error" not in c:
            lines.append(
                f"{name}: {c['apps']} apps, {c['app_errors']} errors, OutOfSync {c['out_of_sync']} "
                f"(seeded {c['expected_out_of_sync']}; {c['false_positives']} false positives, "
                f"{c['missed']} missed)"
            )
    lines.append(phase_table({"cold": cold or None, "warm": warm or None}))
    rows = []
    for name, run in (("cold", cold), ("warm", warm)):
        calls = _stat(run, "compare: every app (workflow.run_one)", "calls")
        per = _stat(run, "compare: every app (workflow.run_one)", "wall")
        if calls and per is not None:
            rows.append([f"{name}: compare per app (run_one wall / calls)", _s(per / calls)])
        util = _utilisation(run)
        if util is not None:
            rows.append([f"{name}: render phase CPU / wall (cores busy)", f"{util:.2f}"])
    k = res.get("kustomize")
    if k:
        rows.append(
            [
                (
                    f"kustomize alone, {k['done']}/{k['apps']} overlays, "
                    f"{k['parallel']} at a time: wall s"
                ),
                _s(k["wall"]),
            ]
        )
        rows.append(["kustomize alone: CPU s (sum)", _s(k["cpu"])])
        if k["wall"]:
            rows.append(["kustomize alone: CPU / wall (cores busy)", f"{k['cpu'] / k['wall']:.2f}"])
        if k["done"]:
            rows.append(["kustomize alone: CPU s per overlay", _s(k["cpu"] / k["done"])])
    if rows:
        lines.append("")
        lines.append(tabulate(rows, headers=["DERIVED", "value"], disable_numparse=True))
    return "\n".join(lines)


def report_scaling(res: dict[str, Any]) -> str:
    from tabulate import tabulate

    rows = []
    for run in res.values():
        c = run.get("check") or {}
        rows.append(
            [
                str(run.get("objects")),
                f"{run.get('snapshot_json_mib', 0):.0f}",
                _s(_stat(run, LOAD, "cpu")),
                _s(_stat(run, RENDER, "cpu")),
                _s(_stat(run, ENGINE, "cpu")),
                _s(_sum(run, CORE, "cpu")),
                _s(_sum(run, REPORT, "cpu")),
                _s(_proc(run, "wall")),
                _rss(run.get("peak_rss_mib")),
                _rss((run.get("json_loads") or {}).get("peak_rss_mib")),
                "-" if "error" in c or not c else f"{c['false_positives']}/{c['missed']}",
            ]
        )
    head = (
        "\n## (c) scaling: one app of 2,500 / 5,000 / 10,000 objects, JSON snapshot, kustomize "
        "replaced by a stand-in returning its YAML (CPU s unless noted)\n"
    )
    phases = phase_table({f"{r.get('objects')}": r for r in res.values()})
    return (
        head
        + phases
        + "\n\n"
        + tabulate(
            rows,
            headers=[
                "OBJECTS",
                "SNAPSHOT MiB",
                "LOAD",
                "RENDER",
                "ENGINE",
                "DIFF+ATTR",
                "REPORT",
                "PROCESS WALL s",
                "PEAK RSS MiB",
                "json.loads ALONE RSS MiB",
                "FALSE+/MISSED",
            ],
            disable_numparse=True,
        )
    )


def _rss(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _utilisation(run: dict[str, Any] | None) -> float | None:
    wall, cpu = _stat(run, RENDER, "wall"), _stat(run, RENDER, "cpu")
    return cpu / wall if wall and cpu is not None else None


# --------------------------------------------------------------------------- the verdicts


@dataclass
class Verdict:
    target: str
    measured: str
    baseline: str
    ratio: str
    met: bool | None  # None: not measured in this run

    def row(self) -> list[str]:
        verdict = "not measured" if self.met is None else ("met" if self.met else "MISSED")
        return [self.target, self.measured, self.baseline, self.ratio, verdict]


def _x(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a is not None and b else "-"


def _sec(v: float | None, what: str = "") -> str:
    return "-" if v is None else f"{_s(v)} s" + (f" {what}" if what else "")


def verdicts(results: dict[str, Any], total: float) -> list[Verdict]:
    """One row per issue #8 target, each verdict computed from this run's numbers."""
    out: list[Verdict] = []
    one = results.get("one-app-2000") or {}
    warm, cold = one.get("warm"), one.get("cold")
    core = _sum(warm, CORE, "cpu")
    jl = _stat(warm, "baseline: json.loads, compared pairs (median of 3)", "cpu")
    dd = _stat(warm, "baseline: deepdiff per pair (naive)", "cpu")
    pairs = ((warm or {}).get("baselines") or {}).get("pairs", "?")
    out.append(
        Verdict(
            f"1. normalize+diff+attribute <= 3x json.loads ({pairs} pairs, CPU; issue 18)",
            _sec(core),
            _sec(jl, "json.loads"),
            _x(core, jl),
            None if core is None or not jl else core / jl <= 3,
        )
    )
    out.append(
        Verdict(
            "1. ... and faster than naive deepdiff (same pairs, CPU)",
            _sec(core),
            _sec(dd, "deepdiff"),
            _x(core, dd),
            None if core is None or not dd else core < dd,
        )
    )
    k = one.get("kustomize")
    kw = k["wall"] if k and k["done"] else None
    cw = _proc(cold, "wall") if cold and cold.get("rc", 9) <= 1 else None
    out.append(
        Verdict(
            "2. 2,000-object app end to end < 3 s, cold cache (wall)",
            _sec(cw),
            _sec(kw, "kustomize alone"),
            _x(cw, kw),
            None if cw is None else cw < 3,
        )
    )
    render = _stat(cold, RENDER, "wall")
    share = render / cw if render is not None and cw else None
    out.append(
        Verdict(
            "2. ... render dominating (>= 50 % of the cold wall)",
            f"{share:.0%}, render {_s(render)} s" if share is not None else "-",
            _sec(kw, "kustomize alone"),
            _x(render, kw),
            None if share is None else share >= 0.5,
        )
    )
    script = one.get("script")
    sw = _proc(script, "wall") if script and (script["process"].get("rc") or 0) <= 1 else None
    out.append(
        Verdict(
            "2. 2,000-object app end to end < 3 s, render cached (wall)",
            _sec(sw),
            _sec(cw, "cold"),
            _x(sw, cw),
            None if sw is None else sw < 3,
        )
    )
    fleet = results.get("fleet-500x20") or {}
    fcold, fwarm = fleet.get("cold"), fleet.get("warm")
    cores = fleet.get("cores") or cpu_count()
    workers = (fcold or fwarm or {}).get("workers")
    util = _utilisation(fcold)
    fk = fleet.get("kustomize")
    rw = _stat(fcold, RENDER, "wall")
    total_apps = fk.get("of", fk["apps"]) if fk else 0
    fkw = fk["wall"] * total_apps / fk["done"] if fk and fk["done"] else None
    sample = f", {fk['done']} of {total_apps} scaled" if fk and fk["done"] < total_apps else ""
    # "all cores": as busy as kustomize alone, `cores` at a time, in the same run (a loaded
    # machine lends neither all its cores); without that baseline, 75 % of the cores
    busy = fk["cpu"] / fk["wall"] if fk and fk["done"] and fk["wall"] else None
    floor = 0.9 * busy if busy else 0.75 * cores
    out.append(
        Verdict(
            f"3. --all 500 apps: renders on all {cores} cores (workers >= cores; "
            "cores busy >= 90 % of kustomize alone's)",
            f"{workers} workers, {util:.2f} busy, render {_s(rw)} s" if util else "-",
            _sec(fkw, f"kustomize alone x{cores}{sample}") + (f", {busy:.2f} busy" if busy else ""),
            _x(rw, fkw),
            None if util is None or workers is None else workers >= cores and util >= floor,
        )
    )
    fcw = _proc(fcold, "wall") if fcold and fcold.get("rc", 9) <= 1 else None
    fww = _proc(fwarm, "wall") if fwarm and fwarm.get("rc", 9) <= 1 else None
    out.append(
        Verdict(
            "3. --all 500 apps: second run < 10 s (wall)",
            _sec(fww),
            _sec(fcw, "first run"),
            _x(fww, fcw),
            None if fww is None else fww < 10,
        )
    )
    builds = _stat(fwarm, BUILD, "calls")
    entries = fleet.get("cache_entries_after_warm")
    timed = bool(fwarm and fwarm.get("clock")) and (
        "kubectl_gitdrift.sources.kustomize._run_build" not in (fwarm or {}).get("missing", [])
    )
    out.append(
        Verdict(
            "3. ... second run renders from the cache (kustomize runs)",
            f"{int(builds or 0)} builds" if timed else "-",
            f"{entries} cache entries" if entries is not None else "-",
            "-",
            not builds if timed else None,
        )
    )
    scaling = results.get("scaling") or {}
    rss = {run.get("objects"): run.get("peak_rss_mib") for run in scaling.values()}
    top = rss.get(10000)
    base_rss = (scaling.get("one-app-10000", {}).get("json_loads") or {}).get("peak_rss_mib")
    out.append(
        Verdict(
            "4. memory < 1 GiB at 10,000 objects (peak RSS)",
            f"{top:.0f} MiB" if top else "-",
            f"{base_rss:.0f} MiB json.loads alone" if base_rss else "-",
            _x(top, base_rss),
            None if not top else top < 1024,
        )
    )
    a, b, c = rss.get(2500), rss.get(5000), rss.get(10000)
    slopes = None
    if a and b and c:
        slopes = (b - a) / 2.5, (c - b) / 5.0
    out.append(
        Verdict(
            "4. ... growing linearly (MiB per 1k objects, 2.5-5k vs 5-10k, +-25 %)",
            f"{slopes[0]:.0f} then {slopes[1]:.0f}" if slopes else "-",
            f"{a:.0f} / {b:.0f} / {c:.0f} MiB" if slopes and a and b and c else "-",
            _x(slopes[1], slopes[0]) if slopes else "-",
            None if not slopes else slopes[0] > 0 and abs(slopes[1] / slopes[0] - 1) <= 0.25,
        )
    )
    live = results.get("live")
    lp = (live or {}).get("process") or {}
    out.append(
        Verdict(
            "5. live mode: LIST per kind/namespace, no GET per object",
            (live or {}).get("summary") or "-",
            "tests/live/test_live.py",
            "-",
            None if not live or lp.get("timed_out") or lp.get("error") else lp.get("rc") == 0,
        )
    )
    out.extend(_fleet_verdicts(results.get("fleet-ratio") or {}))
    out.extend(_live_verdicts(results.get("live-ratio") or {}))
    checks = _all_checks(results)
    out.append(
        Verdict(
            "reports right: seeded drift found, no false positives",
            f"{sum(checks)}/{len(checks)} runs",
            "meta.json",
            "-",
            None if not checks else all(checks),
        )
    )
    fixtures = sum(f["seconds"] for f in results["fixtures"].values())
    out.append(
        Verdict(
            "make bench < 10 minutes",
            _sec(total),
            _sec(fixtures, "of it fixtures") if fixtures else "fixtures cached",
            "-",
            total < BUDGET,
        )
    )
    return out


def _fleet_verdicts(res: dict[str, Any]) -> list[Verdict]:
    """Issue 18: a warm --all over 500 apps keeps the cores busy (CPU / wall of the whole
    process) and takes at most half the wall time of the tree when the issue was filed."""
    cmds = res.get("commands") or {}
    now = cmds.get("now")
    start = res.get("issue_start")
    before = cmds.get(f"before ({start})")
    one = cmds.get("now, one process")
    same = res.get("reports_byte_identical")
    return [
        Verdict(
            "8. --all 500 apps warm: cores busy (CPU / wall of the process >= 1.7)",
            f"{now['cores_busy']:.2f} busy, {_s(now['wall'])} s" if now else "-",
            f"{one['cores_busy']:.2f} busy in one process" if one else "-",
            "-",
            None if not now else now["cores_busy"] >= 1.7,
        ),
        Verdict(
            "8. --all 500 apps warm: <= half the wall of the issue's start (same run, median)",
            _sec(now["wall"]) if now else "-",
            _sec(before["wall"], f"at {start}") if before else "-",
            _x(now["wall"], before["wall"]) if now and before else "-",
            None if not now or not before else now["wall"] <= 0.5 * before["wall"],
        ),
        Verdict(
            "8. ... reports byte-identical (worker processes, one process, before the change)",
            str(same) if same is not None else "-",
            ", ".join(res.get("reports_compared") or []) or "-",
            "-",
            same,
        ),
    ]


def _live_verdicts(res: dict[str, Any]) -> list[Verdict]:
    """Issue 18: a live run over 400 objects against the raw LIST (kubectl get, the floor any
    live tool pays; else a Python httpx LIST), and `kubectl gitdrift version` (medians)."""
    med = res.get("median") or {}
    live = med.get(LIVE_APP)
    kget = med.get("kubectl get cm,deploy -o json")
    raw = med.get("raw LIST (python + httpx, json)")
    floor, name = (kget, "kubectl get") if kget else (raw, "httpx LIST")
    version = med.get("kubectl-gitdrift version (script)")
    return [
        Verdict(
            "6. live, 400 objects <= 2x the raw LIST of them (wall, median)",
            _sec(live["wall"]) if live else "-",
            f"{floor['wall']:.3f} s {name}" if floor else "-",
            _x(live["wall"], floor["wall"]) if live and floor else "-",
            None if not live or not floor else live["wall"] <= 2 * floor["wall"],
        ),
        Verdict(
            "7. kubectl gitdrift version < 0.12 s (wall, median)",
            _sec(version["wall"]) if version else "-",
            f"{med['python -c pass']['wall']:.3f} s python -c pass"
            if "python -c pass" in med
            else "-",
            _x(version["wall"], med["python -c pass"]["wall"])
            if version and "python -c pass" in med
            else "-",
            None if not version else version["wall"] < 0.12,
        ),
    ]


def _all_checks(results: dict[str, Any]) -> list[bool]:
    out = []
    runs = [*(results.get("one-app-2000") or {}).values(), *(results.get("scaling") or {}).values()]
    runs += [(results.get("fleet-500x20") or {}).get(n) for n in ("cold", "warm")]
    for run in runs:
        if not isinstance(run, dict) or "check" not in run:
            continue
        c = run["check"]
        out.append(
            "error" not in c
            and not c["false_positives"]
            and not c["missed"]
            and not c["app_errors"]
        )
    return out


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--argv", help=argparse.SUPPRESS)
    parser.add_argument("--baselines", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--yaml", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--stand-in", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=HERE / "out", help="fixtures, cache, results")
    parser.add_argument(
        "--only",
        help=f"comma-separated: {', '.join(SECTIONS)} (default: all; with --quick, not scaling)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="no scaling runs, no YAML loads, fleet kustomize baseline on 50 overlays",
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="keep the render cache of an earlier run: skip the cold runs and kustomize alone",
    )
    parser.add_argument(
        "--profile",
        nargs="?",
        const="",
        default=None,
        metavar="NAME",
        help="also cProfile a warm 2,000-object run (files under --out, default profile-2000)",
    )
    parser.add_argument(
        "--kustomize-sample",
        type=int,
        default=None,
        metavar="N",
        help="fleet: run kustomize alone on N evenly spread overlays and scale to all of them "
        "(default 100, with --quick 50; 0: every overlay)",
    )
    parser.add_argument(
        "--timeout-factor",
        type=float,
        default=1.0,
        metavar="F",
        help="multiply every subprocess timeout (slow or busy machines)",
    )
    args = parser.parse_args(argv)
    if args.kustomize_sample is None:
        args.kustomize_sample = 50 if args.quick else 100
    if args.child == "cli":
        return child_cli(args)
    if args.child == "json-load":
        return child_json_load(args)
    if args.child == "fixture":
        return child_fixture(args)

    only = [s.strip() for s in (args.only or "").split(",") if s.strip()]
    if "cli" in only:  # the CLI runs used to be a section of their own
        only = [s for s in only if s != "cli"] or ["one-app", "fleet"]
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        parser.error(f"--only {','.join(unknown)}: choose from {', '.join(SECTIONS)}")
    sections = only or [s for s in SECTIONS if not (args.quick and s == "scaling")]
    args.out.mkdir(parents=True, exist_ok=True)
    bench = Bench(args)
    m = bench.results["machine"]
    bench.log(f"machine: {m['cores']} cores, {m['cpu']}, Python {m['python']}, load {m['loadavg']}")
    bench.log(
        f"sections: {', '.join(sections)}" + (" (--warm: cached renders)" if args.warm else "")
    )
    for section in SECTIONS:
        if section not in sections:
            continue
        try:
            getattr(bench, section.replace("-", "_"))()
        except Exception as exc:  # noqa: BLE001 - record it, and run the other sections
            bench.log(f"{section}: FAILED: {type(exc).__name__}: {exc}")
            bench.results.setdefault("failures", {})[section] = f"{type(exc).__name__}: {exc}"
    total = time.perf_counter() - bench.started
    results = bench.results
    results["total_wall"] = total
    text = []
    if "one-app-2000" in results:
        text.append(report_one_app(results["one-app-2000"]))
    if "fleet-500x20" in results:
        text.append(report_fleet(results["fleet-500x20"]))
    if "scaling" in results:
        text.append(report_scaling(results["scaling"]))
    from tabulate import tabulate

    rows = [v.row() for v in verdicts(results, total)]
    results["summary"] = [
        dict(zip(("target", "measured", "baseline", "ratio", "verdict"), r, strict=True))
        for r in rows
    ]
    text.append(f"\n## Summary (issue #8 targets; {m['cores']} cores; total {total:.0f} s)")
    text.append(
        tabulate(
            rows, headers=["TARGET", "MEASURED", "BASELINE", "RATIO", "MET?"], disable_numparse=True
        )
    )
    fixtures = results["fixtures"]
    made = {n: f["seconds"] for n, f in fixtures.items() if f["generated"]}
    text.append(
        "fixtures: "
        + (", ".join(f"{n} generated in {s:.0f}s" for n, s in made.items()) or "all cached")
        + "; results: "
        + str(args.out / "results.json")
    )
    print("\n".join(text), flush=True)
    (args.out / "results.json").write_text(
        json.dumps(results, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
