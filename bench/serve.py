"""Benchmark of `kubectl gitdrift serve` (issue 17): memory over many cycles, and a warm cycle.

Usage: ``python bench/serve.py [--apps 500] [--cycles 20] [--out DIR]``.

Generates (or reuses) a fleet with bench/generate.py (500 apps of 20 objects by default: the
`fleet-500x20` scenario of bench/run.py), then runs the exporter's own cycle (`serve.Exporter`
driving the same comparison `serve` runs: every app, `-o openmetrics`) in this process: one cold
cycle that fills the render cache, then `--cycles` warm ones. After each cycle it reads the
process's resident memory (VmRSS) and the cycle's wall and CPU time, and prints a table plus the
verdict: memory is steady when the last cycles' RSS grows by less than 2% over the first warm
cycle's (an exporter that leaks grows every cycle). Results go to OUT/serve.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import generate  # noqa: E402  (bench/generate.py, beside this file)

from kubectl_gitdrift.cli import main as cli  # noqa: E402
from kubectl_gitdrift.cli import parser, requests, serve  # noqa: E402


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", type=int, default=500)
    ap.add_argument("--units", type=int, default=2)
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    opts = ap.parse_args(argv)

    scenario = generate.Scenario(f"serve-{opts.apps}x{opts.units * 10}", opts.apps, opts.units)
    data, meta = generate.ensure(scenario, opts.out / "fixtures")
    cache = opts.out / "cache" / scenario.name
    os.environ["KUBECTL_GITDRIFT_CACHE_DIR"] = str(cache)
    args = parser.build_parser().parse_args(
        ["--all", "--snapshot", str(data / "snapshot.json"), "--repo-root", str(data / "repo"),
         "-o", "openmetrics", "--progress=never"]
    )  # fmt: skip
    drifted = {d["app"] for d in meta["drifted"]}

    request = requests.request_from(args)
    exporter = serve.Exporter(cli.serve_runner(request, sys.stderr), sys.stderr)
    rows: list[dict[str, Any]] = []
    for cycle in range(opts.cycles + 1):
        wall, cpu = time.perf_counter(), time.process_time()
        ok = exporter.cycle()
        rows.append(
            {
                "cycle": cycle,
                "ok": ok,
                "wall_s": round(time.perf_counter() - wall, 3),
                "cpu_s": round(time.process_time() - cpu, 3),
                "rss_mib": round(rss_mib(), 1),
            }
        )
        print(f"cycle {cycle:2d}: {rows[-1]}", file=sys.stderr, flush=True)
    page = exporter.page()
    found = {
        line.split('application="', 1)[1].split('"', 1)[0]
        for line in page.splitlines()
        if line.startswith("gitdrift_application_out_of_sync{") and line.endswith(" 1.0")
    }
    warm = rows[1:]
    first, last = warm[0]["rss_mib"], statistics.mean(r["rss_mib"] for r in warm[-5:])
    growth = (last - first) / first
    summary = {
        "apps": opts.apps,
        "objects": meta["tracked_objects"],
        "cycles": opts.cycles,
        "cold_cycle_s": rows[0]["wall_s"],
        "warm_cycle_s_median": statistics.median(r["wall_s"] for r in warm),
        "warm_cpu_s_median": statistics.median(r["cpu_s"] for r in warm),
        "rss_first_warm_mib": first,
        "rss_last5_mean_mib": round(last, 1),
        "rss_max_mib": max(r["rss_mib"] for r in warm),
        "rss_growth": round(growth, 4),
        "steady": growth < 0.02,
        "drift_found_as_seeded": found == drifted,
        "all_ok": all(r["ok"] for r in rows),
    }
    (opts.out).mkdir(parents=True, exist_ok=True)
    (opts.out / "serve.json").write_text(json.dumps({"summary": summary, "cycles": rows}, indent=2))
    print("cycle  wall s  cpu s  RSS MiB")
    for r in rows:
        print(f"{r['cycle']:5d}  {r['wall_s']:6.2f}  {r['cpu_s']:5.2f}  {r['rss_mib']:7.1f}")
    print(json.dumps(summary, indent=2))
    return 0 if summary["steady"] and summary["all_ok"] and summary["drift_found_as_seeded"] else 1


if __name__ == "__main__":
    sys.exit(main())
