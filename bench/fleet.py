"""A warm `--all` over 500 Applications: now, now in one process, and an earlier tree (issue 18).

Usage: ``python bench/fleet.py [--rounds N] [--before REV] [--out FILE]`` (about 3 minutes with
5 rounds once the renders are cached; the first run renders every app once per tree).

The fixture is bench/generate.py's ``fleet-500x20`` (500 kustomize apps of 20 objects, ~3 % of
the objects drifted; the JSON snapshot and the git repository), the same as ``make bench``'s
fleet. Each tree keeps its own render cache under OUT/cache/fleet-bench-<tree>, filled by one
untimed warm-up run, so every timed run is warm: the snapshot load, the cached renders, the
engine for 500 apps and the JSON report.

Commands, each a fresh process, interleaved round by round in a shuffled order so the machine's
load hits them alike (medians are compared):

- ``now``: `kubectl-gitdrift --all -o json` of the work tree, as a user runs it (the engine in
  forked worker processes, fanout.py);
- ``now, one process``: the same with KUBECTL_GITDRIFT_WORKERS=1;
- ``before`` (``--before REV``, repeatable): the package as it was at REV (git archive,
  PYTHONPATH); by default the tree when issue 18 was filed (the time target's baseline) and the
  last commit before its engine, --all and live changes (the reports' baseline).

Each is measured from outside: wall time, CPU time (user + system of the process and every
process it waited for: the workers, git), CPU / wall (how many cores it kept busy), and the
peak RSS of the largest process. ``now`` and ``now, one process`` must print byte-identical
reports, and so must every tree named by ``--identical-to`` (default: the reports' baseline;
the older tree predates intended report changes of other issues); the check is part of the
result and of the exit code. Numbers go to stdout and to ``--out`` (default
bench/out/fleet.json). Results: BENCHMARKS.md, issue 18's section.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import generate  # noqa: E402
from live import compile_tree, extract  # noqa: E402

SCENARIO = "fleet-500x20"
ISSUE_START = "0605628"  # the tree when issue 18 was filed: the --all time target's baseline
REPORTS_BASE = "568b5b1"  # the last commit before the engine, --all and live work: same reports


def measure(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    """One run: wall, CPU (the process and all it waited for), peak RSS, its stdout. It runs
    outside the repository: there, `python -c` would import the work tree's package first."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.PIPE, cwd=tempfile.gettempdir()
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.stderr:
            proc.stderr.close()
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"{' '.join(argv[:3])}... exited {proc.returncode}: {err[-2000:]}")
        out.seek(0)
        report = out.read()
    cpu = usage.ru_utime + usage.ru_stime
    return {
        "wall": wall,
        "cpu": cpu,
        "cores_busy": cpu / wall,
        "peak_rss_mib": usage.ru_maxrss / 1024,
        "report": report,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--before", action="append", help=f"an earlier tree (default {ISSUE_START} {REPORTS_BASE})"
    )
    ap.add_argument(
        "--identical-to",
        action="append",
        help=f"a --before tree whose reports must be byte-identical (default {REPORTS_BASE})",
    )
    ap.add_argument("--out", type=Path, default=HERE / "out" / "fleet.json")
    args = ap.parse_args(argv)
    befores = args.before if args.before is not None else [ISSUE_START, REPORTS_BASE]
    identical_to = args.identical_to if args.identical_to is not None else [REPORTS_BASE]

    out_dir = HERE / "out"
    data, meta = generate.ensure(generate.SCENARIOS[SCENARIO], out_dir / "fixtures")
    cli = Path(sys.executable).with_name("kubectl-gitdrift")
    common = [
        "--all",
        "-o",
        "json",
        "--snapshot",
        str(data / "snapshot.json"),
        "--repo-root",
        str(data / "repo"),
        "--no-entry-points",
    ]
    base = {k: v for k, v in os.environ.items() if k != "KUBECTL_GITDRIFT_WORKERS"}
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        "now": (
            [str(cli), *common],
            dict(base, KUBECTL_GITDRIFT_CACHE_DIR=str(out_dir / "cache" / "fleet-bench-now")),
        ),
    }
    commands["now, one process"] = (
        commands["now"][0],
        dict(commands["now"][1], KUBECTL_GITDRIFT_WORKERS="1"),
    )
    compile_tree(sys.executable, ROOT / "kubectl_gitdrift")  # as the trees below, as installed
    with tempfile.TemporaryDirectory(prefix="gitdrift-fleet-") as work:
        for rev in befores:
            tree = extract(rev, Path(work) / rev)
            compile_tree(sys.executable, tree / "kubectl_gitdrift")
            cache = out_dir / "cache" / f"fleet-bench-{rev}"
            env = dict(base, PYTHONPATH=str(tree), KUBECTL_GITDRIFT_CACHE_DIR=str(cache))
            run = [sys.executable, "-c", "from kubectl_gitdrift import cli; cli.run()"]
            commands[f"before ({rev})"] = ([*run, *common], env)
        for name, (cmd, env) in commands.items():
            if name == "now, one process":
                continue  # shares the cache of "now"
            print(f"warm-up (fills the render cache): {name} ...", file=sys.stderr, flush=True)
            measure(cmd, env)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in commands}
        loads: list[float] = []
        for r in range(args.rounds):
            order = list(commands)
            random.Random(r).shuffle(order)
            loads.append(os.getloadavg()[0])
            for name in order:
                runs[name].append(measure(*commands[name]))
                last = runs[name][-1]
                print(
                    f"round {r + 1}: {name}: wall {last['wall']:.2f}s cpu {last['cpu']:.2f}s",
                    file=sys.stderr,
                    flush=True,
                )
    reports = {name: {run["report"] for run in got} for name, got in runs.items()}
    same = ["now", "now, one process", *(f"before ({rev})" for rev in identical_to)]
    identical = len(set().union(*(reports[name] for name in same if name in reports))) == 1
    results: dict[str, Any] = {
        "scenario": SCENARIO,
        "apps": len(meta["apps"]),
        "rounds": args.rounds,
        "cores": len(os.sched_getaffinity(0)),
        "load_average_at_rounds": loads,
        "reports_byte_identical": identical,
        "reports_compared": same,
        "issue_start": ISSUE_START,
        "commands": {},
    }
    for name, got in runs.items():
        results["commands"][name] = {
            key: statistics.median(run[key] for run in got)
            for key in ("wall", "cpu", "cores_busy", "peak_rss_mib")
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(render(results))
    return 0 if identical else 1


def render(results: dict[str, Any]) -> str:
    low, high = min(results["load_average_at_rounds"]), max(results["load_average_at_rounds"])
    lines = [
        f"--all -o json over {results['apps']} apps, warm, {results['cores']} cores, "
        + f"medians of {results['rounds']} (load average {low:.1f}-{high:.1f})",
        f"{'COMMAND':<24} {'WALL s':>8} {'CPU s':>8} {'CPU/WALL':>9} {'PEAK RSS MiB':>13}",
    ]
    cmds = results["commands"]
    for name, med in cmds.items():
        lines.append(
            f"{name:<24} {med['wall']:>8.2f} {med['cpu']:>8.2f} {med['cores_busy']:>9.2f}"
            f" {med['peak_rss_mib']:>13.0f}"
        )
    for name in cmds:
        if name.startswith("before"):
            lines.append(f"now / {name}, wall: {cmds['now']['wall'] / cmds[name]['wall']:.2f}x")
    lines.append(
        f"now / one process, wall: {cmds['now']['wall'] / cmds['now, one process']['wall']:.2f}x"
    )
    compared = ", ".join(results["reports_compared"])
    lines.append(f"reports byte-identical ({compared}): {results['reports_byte_identical']}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
