"""Benchmarks: time every phase of a run and the baselines it should be compared with.

Usage: ``python bench/run.py [--quick] [--only NAME,...] [--profile] [--out DIR]`` (``make bench``).

Each measurement runs in its own child process (``run.py --child TASK ...``), so scenarios do not
share caches or heap, and ``ru_maxrss`` is that scenario's peak. Times are wall-clock *and* CPU
(the process's own plus its children's: kustomize, git), because the machine is shared: wall
times move with the load, CPU times much less, and ratios are only meaningful within one run.
Fixtures come from bench/generate.py and are cached in the output directory.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import generate  # noqa: E402

CLI = Path(sys.executable).parent / "kubectl-gitdrift"
CACHE = HERE / "out" / "cache"
"""The CLI runs' render cache (KUBECTL_GITDRIFT_CACHE_DIR), emptied before each cold run."""


# --------------------------------------------------------------------------- timing helpers


def _child_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class Clock:
    """Accumulates (wall, cpu) per phase; cpu includes waited-for child processes."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        w, c, k = time.perf_counter(), time.process_time(), _child_cpu()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - w, time.process_time() - c + _child_cpu() - k)

    def add(self, name: str, wall: float, cpu: float) -> None:
        self.wall[name] = self.wall.get(name, 0.0) + wall
        self.cpu[name] = self.cpu.get(name, 0.0) + cpu
        self.calls[name] = self.calls.get(name, 0) + 1

    def wrap(self, module: Any, attr: str, name: str) -> Callable[[], None]:
        """Time every call of module.attr under `name` (engine steps); returns an undo."""
        original = getattr(module, attr, None)
        if original is None:
            return lambda: None

        def timed(*args: Any, **kwargs: Any) -> Any:
            w, c = time.perf_counter(), time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                self.add(name, time.perf_counter() - w, time.process_time() - c)

        setattr(module, attr, timed)
        return lambda: setattr(module, attr, original)

    def dump(self) -> dict[str, Any]:
        return {"wall": self.wall, "cpu": self.cpu, "calls": self.calls}


def _maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --------------------------------------------------------------------------- child: one app


def _manifests_python(meta: dict[str, Any], app: str) -> list[Any]:
    """The app's render without kustomize: generate.render_overlay, checked identical to
    `kubectl kustomize` by `generate.py --verify`. Used where kustomize's own cost would swamp
    what is being measured (memory scaling of gitdrift's core)."""
    from kubectl_gitdrift import model

    bodies = generate.render_overlay(app, meta["scenario"]["units"])
    return [model.Manifest(model.ObjectKey.of(b), b, f"apps/{app}/base") for b in bodies]


def child_app(args: argparse.Namespace) -> dict[str, Any]:
    """load → render → engine (normalize+diff, attribute, diagnose, remedies) → report, for one
    app, plus the baselines on exactly the same data."""
    if args.trace:
        import tracemalloc

        tracemalloc.start()
    from kubectl_gitdrift import (
        application,
        attribution,
        defaults,
        diagnosis,
        diff,
        engine,
        model,
        openapi,
        plugins,
        remedies,
        report,
        schema,
        snapshot,
        tracking,
    )
    from kubectl_gitdrift.sources import render as source_render

    data = Path(args.data)
    meta = json.loads((data / "meta.json").read_text(encoding="utf-8"))
    app_name = args.app or meta["apps"][0]
    clock = Clock()
    heap: dict[str, float] = {}

    def mark(name: str) -> None:
        if args.trace:
            import tracemalloc

            current, peak = tracemalloc.get_traced_memory()
            heap[name] = current / 2**20
            heap["peak"] = peak / 2**20

    with clock.phase("load"):
        state = snapshot.load(data / "snapshot.yaml")
    mark("after load")
    pm = plugins.make_plugin_manager(paths=[], entry_points=False, blocked=[])
    from kubectl_gitdrift import hookspecs

    rules = hookspecs.collect_rules(pm)
    with clock.phase("parse app"):
        body = state.find_application(app_name, "argocd")
        app = application.parse_application(body)
        settings = application.parse_settings(state.argocd_cm)
        opts = engine.Options(
            schema=schema.Schema(openapi.load_builtin_definitions()),
            defaults=defaults.apply_defaults,
            rules=rules,
        )
    workdir = Path(tempfile.mkdtemp(prefix="gitdrift-bench-"))
    try:
        if args.render == "kustomize":
            with clock.phase("render"):
                rendered = source_render.render(app, data / "repo", workdir=workdir)
            desired, revision = list(rendered.manifests), rendered.revision
        else:
            with clock.phase("render (python stand-in)"):
                desired, revision = _manifests_python(meta, app_name), meta["revision"]
        mark("after render")
        inputs = engine.Inputs(
            app=app,
            settings=settings,
            desired=desired,
            live=state.objects,
            revision=revision,
            source=f"{app.sources[0].repo_url} {app.sources[0].path} @ {revision}",
        )
        undo = [
            clock.wrap(tracking, "prepare_desired", "engine: prepare desired"),
            clock.wrap(diff, "compare", "engine: normalize+diff"),
            clock.wrap(attribution, "attribute", "engine: attribute"),
            clock.wrap(diagnosis, "diagnose", "engine: diagnose"),
            clock.wrap(remedies, "recommend", "engine: remedies"),
        ]
        profiler = None
        if args.profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        try:
            with clock.phase("engine"):
                app_report = engine.run(inputs, pm, opts)
        finally:
            if profiler is not None:
                profiler.disable()
            for u in undo:
                u()
        mark("after engine")
        result = model.Report(applications=(app_report,), mode="offline")
        with clock.phase("report: to_dict"):
            report.to_dict(result)
        with clock.phase("report: text"):
            text = report.render_text(result)
        with clock.phase("report: json"):
            report.render_json(result)
        mark("after report")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    expected = {
        (d["group"], d["kind"], d["namespace"], d["name"])
        for d in meta["drifted"]
        if d["app"] == app_name
    }
    found = {
        (d.key.group, d.key.kind, d.key.namespace, d.key.name)
        for d in app_report.resources
        if d.status is model.ResourceStatus.OUT_OF_SYNC
    }
    out: dict[str, Any] = {
        "app": app_name,
        "objects": len(desired),
        "snapshot_objects": len(state.objects) + len(state.applications),
        "snapshot_mib": (data / "snapshot.yaml").stat().st_size / 2**20,
        "resources": len(app_report.resources),
        "out_of_sync": len(found),
        "expected_out_of_sync": len(expected),
        "false_positives": len(found - expected),
        "missed": len(expected - found),
        "changes": sum(len(d.changes) for d in app_report.resources),
        "attributed": sum(1 for d in app_report.resources for c in d.changes if c.owner),
        "findings": len(app_report.findings),
        "text_lines": text.count("\n"),
        "maxrss_mib": _maxrss_mib(),
        "heap_mib": heap,
    }
    if profiler is not None:
        import io
        import pstats

        for order in ("tottime", "cumulative"):
            buf = io.StringIO()
            pstats.Stats(profiler, stream=buf).sort_stats(order).print_stats(30)
            Path(args.profile + f".{order}.txt").write_text(buf.getvalue(), encoding="utf-8")
        profiler.dump_stats(args.profile + ".prof")
    if args.baselines:
        out["baselines"] = _baselines(data, meta, app_name, state, desired, clock, app_report)
    out["clock"] = clock.dump()
    return out


def _baselines(
    data: Path,
    meta: dict[str, Any],
    app_name: str,
    state: Any,
    desired: list[Any],
    clock: Clock,
    app_report: Any,
) -> dict[str, Any]:
    import yaml

    live_by_key = {m.key: m.body for m in state.objects}
    compared = [d for d in app_report.resources if d.live is not None and d.desired is not None]
    pairs_live = [live_by_key[d.key] for d in compared if d.key in live_by_key]
    desired_bodies = [m.body for m in desired]
    info: dict[str, Any] = {"pairs": len(pairs_live)}

    pair_json = json.dumps({"desired": desired_bodies, "live": pairs_live})
    info["pairs_json_mib"] = len(pair_json) / 2**20
    with clock.phase("baseline: json.loads (compared pairs)"):
        json.loads(pair_json)
    all_json = json.dumps([m.body for m in state.objects] + [dict(b) for b in state.applications])
    with clock.phase("baseline: json.loads (whole snapshot)"):
        json.loads(all_json)
    raw = (data / "snapshot.yaml").read_bytes()
    with clock.phase("baseline: yaml CSafeLoader (snapshot)"):
        yaml.load(raw, Loader=yaml.CSafeLoader)

    from kubectl_gitdrift.sources import kustomize

    with tempfile.TemporaryDirectory(prefix="gitdrift-bench-wt-") as tmp:
        subprocess.run(["git", "clone", "-q", str(data / "repo"), f"{tmp}/wt"], check=True)
        overlay = f"{tmp}/wt/apps/{app_name}/overlays/prod"
        with clock.phase("baseline: kubectl kustomize alone"):
            subprocess.run(
                [*kustomize._binary(), overlay], check=True, capture_output=True, timeout=1800
            )

    try:
        from deepdiff import DeepDiff
    except ImportError:
        info["deepdiff"] = "not installed (pip install -e '.[bench]')"
        return info
    by_key = {m.key: m.body for m in desired}
    pairs = [(by_key[d.key], live_by_key[d.key]) for d in compared if d.key in by_key]
    differing = 0
    with clock.phase("baseline: deepdiff (naive, same pairs)"):
        for want, have in pairs:
            if DeepDiff(want, have):
                differing += 1
    info["deepdiff_differing"] = differing  # naive: every pair differs (defaults, metadata)
    return info


# --------------------------------------------------------------------------- child: a fleet


def child_fleet(args: argparse.Namespace) -> dict[str, Any]:
    """Every Application of the snapshot, one after another in one process (what --all does
    until it exists): load once, then render + engine + report per app."""
    from kubectl_gitdrift import (
        application,
        defaults,
        engine,
        hookspecs,
        model,
        openapi,
        plugins,
        report,
        schema,
        snapshot,
    )
    from kubectl_gitdrift.sources import render as source_render
    from kubectl_gitdrift.sources.cache import RenderCache

    data = Path(args.data)
    meta = json.loads((data / "meta.json").read_text(encoding="utf-8"))
    clock = Clock()
    with clock.phase("load"):
        state = snapshot.load(_json_snapshot(data))
    pm = plugins.make_plugin_manager(paths=[], entry_points=False, blocked=[])
    opts = engine.Options(
        schema=schema.Schema(openapi.load_builtin_definitions()),
        defaults=defaults.apply_defaults,
        rules=hookspecs.collect_rules(pm),
    )
    settings = application.parse_settings(state.argocd_cm)
    apps = meta["apps"][: args.limit] if args.limit else meta["apps"]
    passes = []
    workdir = Path(tempfile.mkdtemp(prefix="gitdrift-bench-fleet-"))
    # what --all does: one export per commit, renders cached on disk (cold in pass 1), live
    # objects indexed once
    exports = source_render.Exports(workdir / "trees")
    cache = RenderCache(workdir / "cache")
    with clock.phase("live index"):
        index = engine.LiveIndex.of(state.objects, settings)
    try:
        for n in range(args.passes):
            if n and args.second:
                apps = apps[: args.second]
            start = time.perf_counter()
            reports = []
            out_of_sync = 0
            for name in apps:
                app = application.parse_application(state.find_application(name, "argocd"))
                with clock.phase(f"pass {n + 1}: render"):
                    rendered = source_render.render(
                        app, data / "repo", workdir=workdir, exports=exports, cache=cache
                    )
                with clock.phase(f"pass {n + 1}: engine"):
                    inputs = engine.Inputs(
                        app=app,
                        settings=settings,
                        desired=rendered.manifests,
                        live=state.objects,
                        revision=rendered.revision,
                        source=name,
                        index=index,
                    )
                    reports.append(engine.run(inputs, pm, opts))
                out_of_sync += sum(
                    1 for d in reports[-1].resources if d.status is model.ResourceStatus.OUT_OF_SYNC
                )
            with clock.phase(f"pass {n + 1}: report"):
                report.render_json(model.Report(applications=tuple(reports), mode="offline"))
            passes.append(
                {"wall": time.perf_counter() - start, "apps": len(apps), "out_of_sync": out_of_sync}
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    first = meta["apps"][: args.limit] if args.limit else meta["apps"]
    expected = sum(1 for d in meta["drifted"] if d["app"] in set(first))
    return {
        "apps": len(first),
        "objects": len(first) * meta["scenario"]["units"] * generate.UNIT_OBJECTS,
        "snapshot_objects": len(state.objects) + len(state.applications),
        "expected_out_of_sync": expected,
        "passes": passes,
        "maxrss_mib": _maxrss_mib(),
        "clock": clock.dump(),
    }


# --------------------------------------------------------------------------- parent


def _run_child(task: str, *extra: str, timeout: float = 3600) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", task, *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1], "stderr": proc.stderr}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _json_snapshot(data: Path) -> Path:
    """The fixture's snapshot as JSON documents (what `kubectl gitdrift snapshot -o x.json`
    writes; it loads ~30x faster than the YAML), converted once."""
    from kubectl_gitdrift import yamlio

    src, dest = data / "snapshot.yaml", data / "snapshot.json"
    if not dest.exists() or dest.stat().st_mtime < src.stat().st_mtime:
        docs = yamlio.load_documents(src.read_bytes(), str(src))
        tmp = dest.with_suffix(".tmp")
        tmp.write_text("\n".join(json.dumps(d) for d in docs) + "\n", encoding="utf-8")
        tmp.replace(dest)
    return dest


def _cli(data: Path, app: str, *flags: str, snapshot: str = "json") -> dict[str, Any]:
    """End to end: the installed kubectl-gitdrift in a subprocess (wall, CPU incl. kustomize).
    Renders are cached in `CACHE` (emptied by the caller for a cold run)."""
    snap = _json_snapshot(data) if snapshot == "json" else data / "snapshot.yaml"
    cmd = [str(CLI), app, "--snapshot", str(snap), "--repo-root"]
    cmd += [str(data / "repo"), "--no-entry-points", *flags]
    env = dict(os.environ, KUBECTL_GITDRIFT_CACHE_DIR=str(CACHE))
    env.setdefault("KUBECTL_GITDRIFT_KUSTOMIZE_TIMEOUT", "1800")
    before = _child_cpu()
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, timeout=3600, check=False, env=env)
    wall = time.perf_counter() - start
    return {
        "cmd": " ".join(["kubectl-gitdrift", app, *flags, f"({snap.name})"]),
        "wall": wall,
        "cpu": _child_cpu() - before,
        "rc": proc.returncode,
        "stderr": proc.stderr.decode(errors="replace").strip()[-300:],
    }


def _has_all() -> bool:
    proc = subprocess.run([str(CLI), "--help"], capture_output=True, text=True, check=False)
    return "--all" in proc.stdout


def _fmt(v: float | None, unit: str = "s") -> str:
    if v is None:
        return "-"
    if unit == "s":
        return f"{v:.3f}" if v < 10 else f"{v:.1f}"
    return f"{v:.0f}"


def _ratio(a: float | None, b: float | None) -> str:
    if not a or not b:
        return "-"
    return f"{a / b:.1f}x"


def _sum(clock: dict[str, Any], which: str, names: list[str]) -> float | None:
    vals = [clock[which].get(n) for n in names]
    return sum(v for v in vals if v is not None) if any(v is not None for v in vals) else None


CORE = ["engine: normalize+diff", "engine: attribute"]


def table_app(result: dict[str, Any], title: str) -> str:
    from tabulate import tabulate

    clock = result["clock"]
    rows = []
    for name in clock["wall"]:
        rows.append(
            [name, clock["calls"][name], _fmt(clock["wall"][name]), _fmt(clock["cpu"][name])]
        )
    engine_parts = [n for n in clock["cpu"] if n.startswith("engine: ")]
    other_w = clock["wall"].get("engine", 0) - sum(clock["wall"][n] for n in engine_parts)
    other_c = clock["cpu"].get("engine", 0) - sum(clock["cpu"][n] for n in engine_parts)
    rows.append(["engine: other (tracking, pairing, notes)", "", _fmt(other_w), _fmt(other_c)])
    text = f"\n## {title}\n"
    text += (
        f"{result['objects']} desired objects, {result['snapshot_objects']} in the snapshot "
        f"({result['snapshot_mib']:.1f} MiB YAML); OutOfSync {result['out_of_sync']} "
        f"(expected {result['expected_out_of_sync']}, false positives "
        f"{result['false_positives']}, missed {result['missed']}); {result['changes']} changes, "
        f"{result['attributed']} attributed; peak RSS {result['maxrss_mib']:.0f} MiB\n"
    )
    text += tabulate(rows, headers=["PHASE", "CALLS", "WALL s", "CPU s"], disable_numparse=True)
    return text + "\n"


def ratios(result: dict[str, Any]) -> list[list[str]]:
    c = result["clock"]["cpu"]
    core = _sum(result["clock"], "cpu", CORE)
    rows = [
        [
            "normalize+diff+attribute vs json.loads (same pairs)",
            _fmt(core),
            _fmt(c.get("baseline: json.loads (compared pairs)")),
            _ratio(core, c.get("baseline: json.loads (compared pairs)")),
            "<= 5x",
        ],
        [
            "normalize+diff+attribute vs deepdiff (naive, same pairs)",
            _fmt(core),
            _fmt(c.get("baseline: deepdiff (naive, same pairs)")),
            _ratio(core, c.get("baseline: deepdiff (naive, same pairs)")),
            "< 1x",
        ],
        [
            "snapshot.load vs yaml CSafeLoader",
            _fmt(c.get("load")),
            _fmt(c.get("baseline: yaml CSafeLoader (snapshot)")),
            _ratio(c.get("load"), c.get("baseline: yaml CSafeLoader (snapshot)")),
            "",
        ],
        [
            "snapshot.load vs json.loads (whole snapshot)",
            _fmt(c.get("load")),
            _fmt(c.get("baseline: json.loads (whole snapshot)")),
            _ratio(c.get("load"), c.get("baseline: json.loads (whole snapshot)")),
            "",
        ],
        [
            "render vs kubectl kustomize alone",
            _fmt(c.get("render")),
            _fmt(c.get("baseline: kubectl kustomize alone")),
            _ratio(c.get("render"), c.get("baseline: kubectl kustomize alone")),
            "",
        ],
    ]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--app", help=argparse.SUPPRESS)
    parser.add_argument("--render", default="kustomize", help=argparse.SUPPRESS)
    parser.add_argument("--baselines", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=int, default=0, help="fleet: only the first N apps")
    parser.add_argument("--passes", type=int, default=2, help="fleet: passes over the apps")
    parser.add_argument(
        "--second", type=int, default=50, help="fleet: apps in the passes after the first (0: all)"
    )
    parser.add_argument(
        "--trace", action="store_true", help="also a tracemalloc run per scaling size (slower)"
    )
    parser.add_argument("--out", type=Path, default=HERE / "out", help="fixtures and results")
    parser.add_argument(
        "--only",
        default="one-app,scaling,fleet,cli",
        help="comma-separated: one-app, scaling, fleet, cli (default: all)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller: 2,000-object app only, 50-app fleet"
    )
    parser.add_argument(
        "--profile",
        nargs="?",
        const="",
        default=None,
        help="cProfile the 2,000-object engine run (files under --out)",
    )
    args = parser.parse_args(argv)
    if args.child:
        task = {"app": child_app, "fleet": child_fleet}[args.child]
        print(json.dumps(task(args)))
        return 0

    started = time.perf_counter()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(","))
    results: dict[str, Any] = {"machine": machine()}
    print(f"machine: {results['machine']}", flush=True)

    def fixture(name: str) -> Path:
        t = time.perf_counter()
        path, _ = generate.ensure(generate.SCENARIOS[name], out / "fixtures")
        took = time.perf_counter() - t
        if took > 1:
            print(f"  generated {name} in {took:.0f}s", flush=True)
        return path

    if "one-app" in only:
        print("(a) one app of 2,000 objects: phases and baselines ...", flush=True)
        data = fixture("one-app-2000")
        extra = ["--data", str(data), "--baselines"]
        if args.profile is not None:
            extra += ["--profile", str(out / "profile-2000")]
        results["one-app-2000"] = r = _run_child("app", *extra)
        if "error" in r:
            print(f"  failed: {r['error']}")
        else:
            print(table_app(r, "(a) one app, 2,000 objects (kustomize render)"))
            from tabulate import tabulate

            print(
                tabulate(
                    ratios(r),
                    headers=["RATIO (CPU)", "gitdrift s", "baseline s", "ratio", "target"],
                    disable_numparse=True,
                )
            )
        if "cli" in only:
            print("\nend to end (CLI subprocess), 2,000 objects ...", flush=True)
            shutil.rmtree(CACHE, ignore_errors=True)
            results["cli-2000"] = [
                _cli(data, "shop", "-o", "json", snapshot="yaml"),  # cold cache
                _cli(data, "shop", "-o", "json"),  # render cached, JSON snapshot
            ]
            for c in results["cli-2000"]:
                print(f"  {c['cmd']}: wall {c['wall']:.1f}s, CPU {c['cpu']:.1f}s, rc {c['rc']}")
                if c["rc"] > 1:
                    print(f"    {c['stderr']}")

    if "scaling" in only and not args.quick:
        print("\n(c) scaling: 2,500 / 5,000 / 10,000 objects in one app (python render) ...")
        results["scaling"] = {}
        for name in ("one-app-2500", "one-app-5000", "one-app-10000"):
            data = fixture(name)
            r = _run_child("app", "--data", str(data), "--render", "python")
            t: dict[str, Any] = {}
            if args.trace:
                t = _run_child("app", "--data", str(data), "--render", "python", "--trace")
            results["scaling"][name] = {"time": r, "trace": t}
            if "error" in r or "error" in t:
                print(f"  {name} failed: {r.get('error') or t.get('error')}")
                continue
            print(table_app(r, f"{name} (python stand-in render; no kustomize)"))
            if t:
                print(f"  tracemalloc (separate run), MiB: {json.dumps(t['heap_mib'])}")
        print(scaling_table(results["scaling"]))

    if "fleet" in only:
        data = fixture("fleet-500x20")
        limit = 50 if args.quick else args.limit
        has_all = _has_all()
        results["fleet"] = {"has_all": has_all}
        if has_all:
            print("\n(b) --all over the fleet, twice (CLI) ...", flush=True)
            shutil.rmtree(CACHE, ignore_errors=True)
            runs = [
                _cli(data, "--all", "-o", "json"),  # cold render cache
                _cli(data, "--all", "-o", "json"),  # second run: renders from the cache
            ]
            results["fleet"]["cli"] = runs
            for c in runs:
                print(f"  {c['cmd']}: wall {c['wall']:.1f}s, CPU {c['cpu']:.1f}s, rc {c['rc']}")
        print(
            f"\n(b) fleet, {limit or 500} apps x 20 objects, sequential in-process "
            f"(pass 1: all; then {args.passes - 1} more over {args.second or 'all'}) ...",
            flush=True,
        )
        extra = ["--data", str(data), "--passes", str(args.passes), "--second", str(args.second)]
        if limit:
            extra += ["--limit", str(limit)]
        r = _run_child("fleet", *extra)
        results["fleet"]["sequential"] = r
        if "error" in r:
            print(f"  failed: {r['error']}")
        else:
            print(fleet_table(r))

    results["total_wall"] = time.perf_counter() - started
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"\nresults: {out / 'results.json'}; total {results['total_wall']:.0f}s")
    return 0


def scaling_table(scaling: dict[str, Any]) -> str:
    from tabulate import tabulate

    rows = []
    for r in scaling.values():
        t, m = r.get("time", {}), r.get("trace") or {"heap_mib": {}}
        if "error" in t or "error" in m:
            continue
        c = t["clock"]["cpu"]
        rows.append(
            [
                t["objects"],
                f"{t['snapshot_mib']:.0f}",
                _fmt(c.get("load")),
                _fmt(c.get("engine")),
                _fmt(_sum(t["clock"], "cpu", CORE)),
                _fmt(_sum(t["clock"], "cpu", ["report: to_dict", "report: text", "report: json"])),
                f"{t['maxrss_mib']:.0f}",
                _fmt(m["heap_mib"].get("peak"), "MiB"),
                _fmt(m["heap_mib"].get("after report"), "MiB"),
            ]
        )
    return "\n" + tabulate(
        rows,
        headers=[
            "OBJECTS",
            "SNAPSHOT MiB",
            "LOAD CPU s",
            "ENGINE CPU s",
            "DIFF+ATTR CPU s",
            "REPORT CPU s",
            "MAX RSS MiB",
            "HEAP PEAK MiB",
            "HEAP END MiB",
        ],
        disable_numparse=True,
    )


def fleet_table(r: dict[str, Any]) -> str:
    from tabulate import tabulate

    clock = r["clock"]
    rows = [
        [n, clock["calls"][n], _fmt(clock["wall"][n]), _fmt(clock["cpu"][n])] for n in clock["wall"]
    ]
    text = (
        f"{r['apps']} apps, {r['objects']} desired objects, {r['snapshot_objects']} in the "
        f"snapshot; peak RSS {r['maxrss_mib']:.0f} MiB\n"
    )
    for i, p in enumerate(r["passes"], 1):
        text += (
            f"pass {i}: {p['wall']:.1f}s wall for {p['apps']} apps "
            f"({p['wall'] / p['apps'] * 1000:.0f} ms/app), OutOfSync {p['out_of_sync']}"
            + (f" (expected {r['expected_out_of_sync']})" if i == 1 else "")
            + "\n"
        )
    return text + tabulate(
        rows, headers=["PHASE", "CALLS", "WALL s", "CPU s"], disable_numparse=True
    )


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
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": sys.version.split()[0],
        "kubectl": " / ".join(kube.splitlines()),
        "loadavg": os.getloadavg(),
    }


if __name__ == "__main__":
    sys.exit(main())
