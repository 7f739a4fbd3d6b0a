"""Engine time against json.loads (issue 18's target 1), in one process, for iterating on the core.

Usage: ``python bench/engine.py [--out DIR] [--repeat N] [--profile] [--strategy legacy|both]``.

What it measures is what ``bench/run.py`` calls "normalize+diff+attribute": the CPU of every
``legacy.compare`` call and every ``attribution.attribute`` call that ``engine.run`` makes for the
2,000-object app (fixture ``one-app-2000``, generated under OUT/fixtures on first use, as
``bench/strategies.py`` does; its Python rendering of the overlay stands in for kustomize, checked
identical by ``generate.py --verify``). One ``engine.run`` records those calls with their
arguments; the bench then replays them ``--repeat`` times, and, interleaved round by round,
``json.loads`` of the same desired/live pairs as JSON (the rendered bodies and the live bodies
with the same key, as ``bench/run.py``'s baseline builds them). It prints the medians (CPU
seconds) and their ratio (target: <= 3x), and the minimums (on a busy machine the least
disturbed round), and a digest of the replayed drifts (``repr`` of every
Drift, sha256), equal before and after an optimisation that changes no report. It also prints
the CPU spent in the same calls during the recorded run itself: one sample, with the cold
per-process caches that ``bench/run.py``'s single CLI run has. As in ``bench/run.py``, the
engine runs with the cyclic GC off (``cli.main`` turns it off for an offline run) and json.loads
with it on, what is loaded frozen out of its reach; json.loads with the GC off is printed too
(the collector's passes are roughly half of json.loads's time, and move with the heap).

``--profile`` also writes OUT/engine.replay.prof and OUT/engine.first-run.prof and prints the
top of each (by own time): a cProfile of one replay, and of the recorded run's compare and
attribute calls (cold caches). ``--strategy both`` adds the structured-merge replay of
``bench/strategies.py``'s server-side-applied objects (``structured.compare``), with its
ratio to legacy (target <= 2x).
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import gc
import hashlib
import io
import json
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import strategies  # noqa: E402

from kubectl_gitdrift import engine, model, plugins  # noqa: E402
from kubectl_gitdrift.compare import defaults  # noqa: E402
from kubectl_gitdrift.diagnose import attribution  # noqa: E402


@dataclasses.dataclass
class Recorded:
    """The engine's calls of one run: (function, args) in call order, and the attribute calls."""

    compares: list[tuple[Callable[..., model.Drift], tuple[Any, ...]]]
    attributes: list[tuple[model.Drift, Any]]
    first: float  # CPU s inside those calls during the recorded run (cold caches, as run.py)

    def replay(self) -> list[model.Drift]:
        drifts = [fn(*args) for fn, args in self.compares]
        return [
            attribution.attribute(d, pm) for d, (_, pm) in zip(drifts, self.attributes, strict=True)
        ]


def record(
    inputs: engine.Inputs,
    pm: Any,
    opts: engine.Options,
    names: list[str],
    profiler: cProfile.Profile | None = None,
) -> Recorded:
    """Run the engine once, recording the compare functions `names` (module.attr) it calls;
    `profiler` profiles those calls (and only those)."""
    compares: list[tuple[Callable[..., model.Drift], tuple[Any, ...]]] = []
    attributes: list[tuple[model.Drift, Any]] = []
    saved: list[tuple[Any, str, Any]] = []
    depth = [0]  # a strategy calls pairs.unpaired for some pairs: record the outer call
    spent = [0.0]

    def wrap(owner: Any, attr: str) -> None:
        fn = getattr(owner, attr)

        def recorded(*args: Any) -> Any:
            if depth[0]:
                return fn(*args)
            compares.append((fn, args))
            depth[0] += 1
            start = time.process_time()
            if profiler is not None:
                profiler.enable()
            try:
                return fn(*args)
            finally:
                if profiler is not None:
                    profiler.disable()
                spent[0] += time.process_time() - start
                depth[0] -= 1

        saved.append((owner, attr, fn))
        setattr(owner, attr, recorded)

    for name in names:
        module, _, attr = name.rpartition(".")
        wrap(sys.modules[module], attr)
    original_attribute = attribution.attribute

    def attribute(drift: model.Drift, pm: Any) -> model.Drift:
        attributes.append((drift, pm))
        start = time.process_time()
        if profiler is not None:
            profiler.enable()
        try:
            return original_attribute(drift, pm)
        finally:
            if profiler is not None:
                profiler.disable()
            spent[0] += time.process_time() - start

    saved.append((attribution, "attribute", original_attribute))
    attribution.attribute = attribute
    try:
        engine.run(inputs, pm, opts)
    finally:
        for owner, attr, fn in saved:
            setattr(owner, attr, fn)
    if len(compares) != len(attributes):
        raise SystemExit(f"recorded {len(compares)} compares, {len(attributes)} attributes")
    return Recorded(compares, attributes, spent[0])


NO_GC = "json.loads, GC off"


def cpu(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    result = fn()
    return time.process_time() - start, result


def digest(drifts: list[model.Drift]) -> str:
    return hashlib.sha256("\n".join(repr(d) for d in drifts).encode()).hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--strategy", choices=("legacy", "both"), default="legacy")
    args = parser.parse_args(argv)
    gc.disable()  # as cli.main does for an offline run
    one = strategies.one_app(args.out)
    state, desired = one.state, one.desired
    pm = plugins.make_plugin_manager(entry_points=False)
    opts = engine.Options(schema=one.types, defaults=defaults.apply_defaults)
    first = cProfile.Profile() if args.profile else None
    legacy = record(
        one.inputs(one.app, desired, state.objects),
        pm,
        opts,
        ["kubectl_gitdrift.compare.legacy.compare", "kubectl_gitdrift.compare.pairs.unpaired"],
        first,
    )
    runs = {"legacy": legacy}
    if args.strategy == "both":
        runs["structured-merge"] = record(
            one.inputs(*one.as_server_side()),
            pm,
            opts,
            [
                "kubectl_gitdrift.compare.structured.compare",
                "kubectl_gitdrift.compare.legacy.compare",
                "kubectl_gitdrift.compare.pairs.unpaired",
            ],
        )

    live_by_key = {m.key: m.body for m in state.objects}
    pairs = [(m.body, live_by_key[m.key]) for m in desired if m.key in live_by_key]
    pair_json = json.dumps({"desired": [d for d, _ in pairs], "live": [v for _, v in pairs]})

    gc.collect()
    gc.freeze()  # what is loaded stays, as the CLI freezes its snapshot and reports
    times: dict[str, list[float]] = {name: [] for name in [*runs, "json.loads", NO_GC]}
    digests: dict[str, str] = {}
    for _ in range(args.repeat):  # interleaved, so a slower minute weighs on both sides
        gc.enable()  # bench/run.py times json.loads after cli.main, the GC back on
        times["json.loads"].append(cpu(lambda: json.loads(pair_json))[0])
        gc.disable()
        gc.collect()
        times[NO_GC].append(cpu(lambda: json.loads(pair_json))[0])
        gc.collect()
        for name, rec in runs.items():
            took, drifts = cpu(rec.replay)
            times[name].append(took)
            digests[name] = digest(drifts)
            del drifts
            gc.collect()
    med = {name: statistics.median(v) for name, v in times.items()}
    low = {name: min(v) for name, v in times.items()}
    base = med["json.loads"]
    print(
        f"{len(pairs)} desired/live pairs ({len(pair_json) / 2**20:.1f} MiB as JSON); "
        f"CPU s, median of {args.repeat}, interleaved"
    )
    for name, rec in runs.items():
        calls = len(rec.compares)
        print(
            f"  {name:<17} {med[name]:.3f} s  {med[name] / base:.2f}x json.loads  "
            f"(min {low[name]:.3f} s, {low[name] / low['json.loads']:.2f}x; {calls} compare + "
            f"attribute calls; drifts digest {digests[name]})"
        )
    print(
        f"  {'json.loads':<17} {base:.3f} s  (min {low['json.loads']:.3f} s; the cyclic GC on, "
        "as bench/run.py times it)"
    )
    print(
        f"  {NO_GC:<17} {med[NO_GC]:.3f} s  (min {low[NO_GC]:.3f} s; legacy "
        f"{med['legacy'] / med[NO_GC]:.2f}x)"
    )
    for name, rec in runs.items():
        print(
            f"  {name}, first run (cold caches, one sample): {rec.first:.3f} s  "
            f"{rec.first / base:.2f}x json.loads"
        )
    if "structured-merge" in med:
        print(f"  structured-merge / legacy: {med['structured-merge'] / med['legacy']:.2f}x")
    if first is not None:
        profiler = cProfile.Profile()
        profiler.runcall(legacy.replay)
        args.out.mkdir(parents=True, exist_ok=True)
        for what, prof in (("replay", profiler), ("first-run", first)):
            prof.dump_stats(str(args.out / f"engine.{what}.prof"))
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(25)
            print(f"--- cProfile, {what}, by own time")
            print(buf.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
