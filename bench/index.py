"""The live index of a warm `--all` (issue 18): `engine.LiveIndex.of` over the fleet's snapshot,
the per-snapshot work that runs on one core before the compare fans out.

Usage: ``python bench/index.py [--before REV]... [--rounds N] [--runs N]`` (default: the work
tree against d745c65, the tree before the index was reworked; ~1 minute).

Each tree runs in its own interpreter (the package from a `git archive` of REV, or the work
tree), rounds interleaved so the machine's load hits the trees alike. A round loads the fleet
snapshot (bench/generate.py's ``fleet-500x20``, 500 apps, ~11,500 live objects) once, then times
``LiveIndex.of(state.objects, settings)`` ``--runs`` times with the garbage collector off, as
the CLI runs it, and reports the median; the result is the median of the rounds' medians. Each
round also touches what the compare reads from the index for every app (its roots and claims),
timed apart: work the index moves into the worker processes shows up there.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCENARIO = "fleet-500x20"
BEFORE = "d745c65"  # the last commit before the live index was reworked for issue 18

CHILD = r"""
import gc, json, statistics, sys, time
from pathlib import Path
from kubectl_gitdrift import application, engine
from kubectl_gitdrift.run import workflow
from kubectl_gitdrift.live import snapshot
from kubectl_gitdrift.diagnose import tracking

state = snapshot.load(Path(sys.argv[1]))
settings = workflow.settings_of(state)
apps = [application.parse_application(a) for a in state.applications]
instances = [tracking.instance_name(app, settings) for app in apps]
runs = int(sys.argv[2])
gc.disable()
build, lookup = [], []
for _ in range(runs):
    start = time.perf_counter()
    index = engine.LiveIndex.of(state.objects, settings)
    build.append(time.perf_counter() - start)
    start = time.perf_counter()
    for instance in instances:
        list(index.roots.get(instance, ()))
        list(index.claims.get(instance, ()))
    lookup.append(time.perf_counter() - start)
print(json.dumps({"build": statistics.median(build), "lookup": statistics.median(lookup),
                  "objects": len(state.objects), "apps": len(apps)}))
"""


def tree(rev: str, into: Path) -> Path:
    """The package as it was at `rev`, extracted under `into`."""
    target = into / rev
    target.mkdir()
    archive = subprocess.run(
        ["git", "archive", rev, "kubectl_gitdrift"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", action="append", default=None, help=f"default {BEFORE}")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    snapshot_path = HERE / "out" / "fixtures" / SCENARIO / "snapshot.json"
    if not snapshot_path.is_file():
        print(f"{snapshot_path}: missing; run `python bench/generate.py` first", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        trees = {"now": ROOT}
        for rev in args.before or [BEFORE]:
            trees[rev] = tree(rev, Path(scratch))
        results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, path in trees.items():
                out = subprocess.run(
                    [sys.executable, "-c", CHILD, str(snapshot_path), str(args.runs)],
                    env={"PYTHONPATH": str(path), "PATH": "/usr/bin:/bin"},
                    cwd=scratch,
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                results[name].append(json.loads(out))
    for name, rounds in results.items():
        build = statistics.median(r["build"] for r in rounds) * 1000
        lookup = statistics.median(r["lookup"] for r in rounds) * 1000
        print(
            f"{name:>10}: LiveIndex.of {build:6.1f} ms   roots+claims of every app {lookup:5.1f} ms"
            f"   ({rounds[0]['objects']} objects, {rounds[0]['apps']} apps)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
