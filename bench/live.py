"""Live mode and start-up against the loopback API server (issue 18), as ratios within one run.

Usage: ``python bench/live.py [--rounds N] [--before REV] [--json-libs DIR] [--dev-venv]
[--out FILE]`` (about 3 minutes with 11 rounds).

One Application, ``perf``: a directory of 400 manifests in a git repository (300 ConfigMaps, 100
Deployments; built with testdata/make_repo.py, pinned dates), and the same objects as a real API
server stores them after Argo CD's client-side apply (bench/generate.py's ``Cluster.live``:
server defaults, status, managedFields, last-applied and tracking-id annotations), one
Deployment scaled by hand (``generate.drift(..., "scale")``). tests/apiserver serves them over
HTTPS on loopback with the recorded discovery. Every run is a fresh process, and the commands
are interleaved round by round (in a shuffled order), so the machine's load hits them alike;
the medians are compared as ratios:

- ``gitdrift perf`` (text, renders cached by a warm-up run; entry points on, as a user runs it);
- the raw LIST floor: a Python process that LISTs the same kinds in the same namespace through
  the same server with httpx and json-decodes them, and ``kubectl get configmaps,deployments -n
  perf -o json --show-managed-fields`` (issue 18's floor; discovery cached by a warm-up run);
- ``kubectl gitdrift version``, and ``python -c pass`` (the interpreter's own start);
- the requests the server saw for one gitdrift run and one ``kubectl get`` each, with a fresh
  discovery cache (``$KUBECACHEDIR``) and then warm: discovery (``/version``, ``/api``,
  ``/apis``, group-versions) and the rest by path;
- with ``--before REV``, the same gitdrift commands on the package as it was at REV (extracted
  with ``git archive``, run with PYTHONPATH), and a check that both trees print byte-identical
  reports (text and JSON); every tree is byte-compiled first, as an install is;
- with ``--json-libs DIR`` (a ``pip install --target DIR orjson msgspec``), json.loads against
  orjson and msgspec on the two LIST responses' bodies, in process.

click, rich and wcwidth are hidden from every Python child (DEV_ONLY): the dist has none of them,
and with them `import httpx` also imports httpx's command line; ``--dev-venv`` keeps them.
Numbers go to stdout and to ``--out`` (default bench/out/live.json). Results: BENCHMARKS.md,
issue 18's section.
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))
import generate  # noqa: E402

from tests.support.apiserver import serve  # noqa: E402

APP = "perf"
NS = "perf"
CONFIGMAPS = 300
DEPLOYMENTS = 100
SCALED = "web-0050"
LIST_PATHS = (f"/api/v1/namespaces/{NS}/configmaps", f"/apis/apps/v1/namespaces/{NS}/deployments")

ENTRY = (
    "import sys; from kubectl_gitdrift.cli.main import run; sys.argv[0] = 'kubectl-gitdrift'; run()"
)
MODULES = """
import io, sys
from kubectl_gitdrift.cli import main as cli
code = cli.main(sys.argv[2:], stdout=io.StringIO(), stderr=io.StringIO())
open(sys.argv[1], "w").write("\\n".join(sys.modules))
"""
IMPORT_ALL = """
import importlib, sys
for name in open(sys.argv[1]).read().split():
    if name not in sys.modules and name != "__main__":
        try:
            importlib.import_module(name)
        except Exception:
            pass
"""
RAW_LIST = """
import json, ssl, sys
import httpx
url, ca, token, *paths = sys.argv[1:]
ctx = ssl.create_default_context(cafile=ca)
with httpx.Client(verify=ctx, headers={"Authorization": "Bearer " + token}) as client:
    for path in paths:
        body = json.loads(client.get(url + path, params={"limit": "500"}).content)
        assert len(body["items"]) > 0
"""


# --------------------------------------------------------------------------- the fixture


def desired_objects() -> list[dict[str, Any]]:
    """What git holds: 300 ConfigMaps and 100 Deployments (bench/generate.py's shapes)."""
    unit = generate.base_unit(0)
    cm = next(o for o in unit if o["kind"] == "ConfigMap")
    deploy = next(o for o in unit if o["kind"] == "Deployment")
    out = []
    for i in range(CONFIGMAPS):
        obj = copy.deepcopy(cm)
        obj["metadata"] = {**obj["metadata"], "name": f"config-{i:04d}", "namespace": NS}
        out.append(obj)
    for i in range(DEPLOYMENTS):
        obj = copy.deepcopy(deploy)
        obj["metadata"] = {**obj["metadata"], "name": f"web-{i:04d}", "namespace": NS}
        out.append(obj)
    return out


def build(work: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The git repository (returned) and the live objects the API server will hold."""
    src = work / "src"
    tree = src / "01-perf" / "apps" / APP
    tree.mkdir(parents=True)
    desired = desired_objects()
    for obj in desired:
        name = f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"
        (tree / name).write_text(generate.dump_yaml(obj), encoding="utf-8")
    (src / "commits.yaml").write_text(
        yaml.safe_dump(
            [
                {
                    "dir": "01-perf",
                    "message": "bench: live perf",
                    "author": "Bench Generator <bench@example.com>",
                    "date": generate.COMMIT_DATE,
                }
            ]
        ),
        encoding="utf-8",
    )
    repo = work / "repo"
    sha = generate._build_repo(src, repo)[-1]
    cluster = generate.Cluster(random.Random("live/perf"))
    live_objs: list[dict[str, Any]] = [cluster.root_ca(NS)]
    resources = []
    for n, obj in enumerate(desired):
        live = cluster.live(obj, APP, f"2026-11-30T04:{1 + n // 60 % 58:02d}:{n % 60:02d}Z")
        status = "Synced"
        if live["metadata"]["name"] == SCALED:
            generate.drift(live, "scale")
            status = "OutOfSync"
        live_objs.append(live)
        entry = {
            "kind": live["kind"],
            "name": live["metadata"]["name"],
            "namespace": NS,
            "status": status,
            "version": "v1",
        }
        if live["kind"] == "Deployment":
            entry["group"] = "apps"
            entry["health"] = {"status": "Healthy"}
        resources.append(entry)
    app = generate.application(APP, sha, cluster.next_rv(), cluster.uid(), resources, 0)
    app["spec"]["source"]["path"] = f"apps/{APP}"  # the same dict in spec and status
    app["spec"]["destination"]["namespace"] = NS
    app["status"]["sourceType"] = "Directory"
    return repo, [generate.argocd_cm(), app, *live_objs]


DEV_ONLY = ("click", "rich", "wcwidth")
"""Installed in the dev venv (by import-linter; wcwidth by pyte), not in the dist (dist.lock):
with click and rich present, `import httpx` also imports httpx's command line (click, rich,
pygments), ~0.09 s CPU; with wcwidth, `import tabulate` imports it too (~0.02 s). Neither
gitdrift nor a user's install pays them."""


def hide_dev_only(where: Path) -> Path:
    """A directory that, first on PYTHONPATH, makes DEV_ONLY fail to import (as in the dist)."""
    where.mkdir(parents=True, exist_ok=True)
    for name in DEV_ONLY:
        (where / f"{name}.py").write_text(
            f"raise ImportError('{name} is not in the dist (bench/live.py)')\n", encoding="utf-8"
        )
    return where


# --------------------------------------------------------------------------- timing


def _cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


CWD = Path(tempfile.gettempdir())
"""Where the children run: not the checkout, whose kubectl_gitdrift `python -c` would import
first (the current directory leads sys.path), whatever PYTHONPATH says."""


def timed(argv: Sequence[str], env: dict[str, str], expect: Sequence[int] = (0,)) -> dict[str, Any]:
    c0, w0 = _cpu_children(), time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, timeout=300, check=False, cwd=CWD)
    wall, cpu = time.perf_counter() - w0, _cpu_children() - c0
    if proc.returncode not in expect:
        raise RuntimeError(
            f"{' '.join(argv[:4])}... exited {proc.returncode}: {proc.stderr.decode()[-2000:]}"
        )
    return {"wall": wall, "cpu": cpu, "stdout": proc.stdout}


def extract(rev: str, dest: Path) -> Path:
    """The package as it was at `rev` (git archive; the work tree is not touched)."""
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "kubectl_gitdrift"],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def compile_tree(py: str, package: Path) -> None:
    """Byte-compile the package as an install does: with PYTHONDONTWRITEBYTECODE set (as in
    this project's shells) a module edited since its .pyc was written would otherwise be
    compiled again by every run, and an extracted tree's every module would."""
    subprocess.run([py, "-m", "compileall", "-q", str(package)], check=True, cwd=CWD)


# --------------------------------------------------------------------------- requests


def count_requests(
    server: Any,
    argv: Sequence[str],
    env: dict[str, str],
    expect: Sequence[int],
    cache_dir: Path,
) -> dict[str, dict[str, Any]]:
    """The requests the server saw for one run with a fresh cache directory (`cold`), then
    for one more with the same (`warm`): discovery paths in order, and the rest by path. The
    directory is $KUBECACHEDIR, which gitdrift and kubectl both read (kubectl's --cache-dir
    default; a --before tree has no --cache-dir)."""
    out: dict[str, dict[str, Any]] = {}
    env = dict(env, KUBECACHEDIR=str(cache_dir))
    for phase in ("cold", "warm"):
        server.clear_requests()
        timed(argv, env, expect)
        discovery = server.discovery_requests()
        others: dict[str, int] = {}
        for r in server.requests:
            if not (r.method == "GET" and r.path in discovery):
                key = f"{r.method} {r.path}"
                others[key] = others.get(key, 0) + 1
        out[phase] = {
            "discovery": discovery,
            "other": dict(sorted(others.items())),
            "total": len(server.requests),
        }
    return out


# --------------------------------------------------------------------------- JSON parsers


def json_parsers(bodies: list[bytes], libs: Path, repeat: int) -> dict[str, Any]:
    """json.loads against orjson and msgspec on the LIST bodies, median of `repeat`."""
    sys.path.insert(0, str(libs))
    parsers: dict[str, Callable[[bytes], Any]] = {"json.loads": json.loads}
    try:
        import orjson

        parsers["orjson.loads"] = orjson.loads
    except ImportError:
        pass
    try:
        import msgspec

        parsers["msgspec.json.decode"] = msgspec.json.decode
    except ImportError:
        pass
    expected = [json.loads(b) for b in bodies]
    out: dict[str, Any] = {"bytes": sum(len(b) for b in bodies)}
    for name, fn in parsers.items():
        assert [fn(b) for b in bodies] == expected, name
        times = []
        for _ in range(repeat):
            t = time.process_time()
            for b in bodies:
                fn(b)
            times.append(time.process_time() - t)
        out[name] = statistics.median(times)
    return out


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--before", metavar="REV", help="also time the package as it was at REV")
    ap.add_argument("--json-libs", type=Path, metavar="DIR", help="where orjson/msgspec are")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "live.json")
    ap.add_argument(
        "--dev-venv",
        action="store_true",
        help="keep click and rich importable (by default they are hidden, as in the dist)",
    )
    args = ap.parse_args(argv)

    py = sys.executable
    kubectl = shutil.which("kubectl")
    results: dict[str, Any] = {"rounds": args.rounds, "load": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="gitdrift-bench-live-") as tmp:
        work = Path(tmp)
        repo, objects = build(work)
        results["objects"] = len(objects)
        trees = {"now": ROOT}
        if args.before:
            trees["before"] = extract(args.before, work / "before")
        for tree_dir in trees.values():
            compile_tree(py, tree_dir / "kubectl_gitdrift")
        with serve(objects) as server:
            kubeconfig = str(server.kubeconfig_path)
            ca = work / "ca.pem"
            ca.write_bytes(
                base64.b64decode(
                    server.kubeconfig()["clusters"][0]["cluster"]["certificate-authority-data"]
                )
            )
            base_env = {k: v for k, v in os.environ.items() if not k.startswith("KUBECTL_GITDRIFT")}
            path = [] if args.dev_venv else [str(hide_dev_only(work / "not-in-dist"))]
            results["hidden"] = [] if args.dev_venv else list(DEV_ONLY)
            if path:
                base_env["PYTHONPATH"] = path[0]
            base_env["KUBECACHEDIR"] = str(work / "kube-cache")
            live_args = [APP, "--kubeconfig", kubeconfig, "--repo-root", str(repo)]
            commands: dict[str, tuple[list[str], dict[str, str], tuple[int, ...]]] = {
                "python -c pass": ([py, "-c", "pass"], base_env, (0,)),
                "raw LIST (python + httpx, json)": (
                    [
                        py,
                        "-c",
                        RAW_LIST,
                        server.url,
                        str(ca),
                        server.token(server.context),
                        *LIST_PATHS,
                    ],
                    base_env,
                    (0,),
                ),
                "kubectl-gitdrift version (script)": (
                    [str(Path(py).parent / "kubectl-gitdrift"), "version"],
                    base_env,
                    (0,),
                ),
            }
            # what the live run's imports alone cost: every module it imported, in its order
            modules = work / "modules.txt"
            timed(
                [py, "-c", MODULES, str(modules), *live_args],
                dict(
                    base_env,
                    PYTHONPATH=os.pathsep.join([*path, str(ROOT)]),
                    KUBECTL_GITDRIFT_CACHE_DIR=str(work / "cache-now"),
                ),
            )
            results["live_run_modules"] = len(modules.read_text().split())
            assert not set(DEV_ONLY) & set(modules.read_text().split()) or args.dev_venv
            commands["python: import httpx"] = ([py, "-c", "import httpx"], base_env, (0,))
            commands["python: import kr8s"] = ([py, "-c", "import kr8s"], base_env, (0,))
            commands["python: import what the live run imports"] = (
                [py, "-c", IMPORT_ALL, str(modules)],
                dict(base_env, PYTHONPATH=os.pathsep.join([*path, str(ROOT)])),
                (0,),
            )
            if kubectl:
                commands["kubectl get cm,deploy -o json"] = (
                    [
                        kubectl,
                        "get",
                        "configmaps,deployments",
                        "-n",
                        NS,
                        "-o",
                        "json",
                        "--show-managed-fields",
                        "--kubeconfig",
                        kubeconfig,
                    ],
                    base_env,
                    (0,),
                )
            for tree, tree_dir in trees.items():
                env = dict(
                    base_env,
                    PYTHONPATH=os.pathsep.join([*path, str(tree_dir)]),
                    KUBECTL_GITDRIFT_CACHE_DIR=str(work / f"cache-{tree}"),
                )
                commands[f"{tree}: gitdrift version"] = ([py, "-c", ENTRY, "version"], env, (0,))
                commands[f"{tree}: gitdrift {APP} (live)"] = (
                    [py, "-c", ENTRY, *live_args],
                    env,
                    (1,),
                )
            # warm-ups: render caches, kubectl's discovery cache; and the byte-identical check
            reports: dict[str, dict[str, bytes]] = {}
            for tree, tree_dir in trees.items():
                where = timed(
                    [py, "-c", "import kubectl_gitdrift; print(kubectl_gitdrift.__file__)"],
                    commands[f"{tree}: gitdrift version"][1],
                )
                assert str(tree_dir) in where["stdout"].decode(), where["stdout"]
                for fmt in ("text", "json"):
                    argv_, env, expect = commands[f"{tree}: gitdrift {APP} (live)"]
                    reports.setdefault(tree, {})[fmt] = timed([*argv_, "-o", fmt], env, expect)[
                        "stdout"
                    ]
            if "before" in reports:
                results["identical_reports"] = reports["before"] == reports["now"]
            for name, (argv_, env, expect) in commands.items():
                if name.startswith("kubectl get"):
                    timed(argv_, env, expect)
            # what each sends, cold (a fresh --cache-dir) and warm (the same again)
            counted = {
                f"{tree}: gitdrift {APP}": commands[f"{tree}: gitdrift {APP} (live)"]
                for tree in trees
            }
            if kubectl:
                counted["kubectl get cm,deploy -o json"] = commands["kubectl get cm,deploy -o json"]
            results["requests"] = {
                name: count_requests(server, argv_, env, expect, work / f"kube-cache-{i}")
                for i, (name, (argv_, env, expect)) in enumerate(counted.items())
            }
            samples: dict[str, list[dict[str, float]]] = {name: [] for name in commands}
            rng = random.Random(18)
            for r in range(args.rounds):
                order = list(commands)
                rng.shuffle(order)
                for name in order:
                    argv_, env, expect = commands[name]
                    run = timed(argv_, env, expect)
                    samples[name].append({"wall": run["wall"], "cpu": run["cpu"]})
                print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
            results["median"] = {
                name: {
                    "wall": statistics.median(s["wall"] for s in runs),
                    "cpu": statistics.median(s["cpu"] for s in runs),
                }
                for name, runs in samples.items()
            }
            if args.json_libs:
                import httpx

                ctx_headers = server.headers()
                with httpx.Client(verify=server.ssl_context(), headers=ctx_headers) as client:
                    bodies = [
                        client.get(server.url + p, params={"limit": "500"}).content
                        for p in LIST_PATHS
                    ]
                results["json_parsers"] = json_parsers(bodies, args.json_libs, repeat=31)
    results["load_after"] = os.getloadavg()
    print(report(results))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


def _ratio(label: str, a: dict[str, float], b: dict[str, float], extra: str = "") -> str:
    return f"{label:<44} {a['wall'] / b['wall']:7.2f}x {a['cpu'] / b['cpu']:7.2f}x{extra}"


def report(results: dict[str, Any]) -> str:
    med = results["median"]
    load = f"load {results['load'][0]:.1f} -> {results['load_after'][0]:.1f}"
    hidden = ", ".join(results.get("hidden") or []) or "nothing"
    lines = [
        f"{results['objects']} objects; {results['rounds']} rounds; {load}; hidden: {hidden}",
        f"{'COMMAND':<44} {'WALL s':>8} {'CPU s':>8}",
    ]
    lines += [f"{name:<44} {m['wall']:8.3f} {m['cpu']:8.3f}" for name, m in med.items()]
    floor = med["raw LIST (python + httpx, json)"]
    kget = med.get("kubectl get cm,deploy -o json")
    lines += ["", f"{'RATIO (medians)':<44} {'WALL':>8} {'CPU':>8}"]
    for tree in ("before", "now"):
        live = med.get(f"{tree}: gitdrift {APP} (live)")
        if live is not None:
            lines.append(_ratio(f"{tree}: gitdrift / raw LIST (python)", live, floor))
            if kget:
                lines.append(_ratio(f"{tree}: gitdrift / kubectl get", live, kget))
    now = med[f"now: gitdrift {APP} (live)"]
    if "before: gitdrift version" in med:
        lines.append(
            _ratio(
                "version: now / before",
                med["now: gitdrift version"],
                med["before: gitdrift version"],
            )
        )
        lines.append(_ratio("live run: now / before", now, med[f"before: gitdrift {APP} (live)"]))
    imports = med.get("python: import what the live run imports")
    if imports:
        modules = f"  ({results.get('live_run_modules', '?')} modules)"
        lines.append(_ratio("imports alone / live run (now)", imports, now, modules))
    if "identical_reports" in results:
        same = results["identical_reports"]
        lines.append(f"reports byte-identical before/now (text, json): {same}")
    counted = results.get("requests") or {}
    if counted:
        lines += ["", f"{'REQUESTS (counted by the server)':<44} {'DISCOVERY':>9} {'ALL':>5}"]
        for name, phases in counted.items():
            for phase, seen in phases.items():
                label = f"{name}, {phase} cache"
                lines.append(f"{label:<44} {len(seen['discovery']):9d} {seen['total']:5d}")
                if seen["discovery"]:
                    lines.append(f"    discovery: {' '.join(seen['discovery'])}")
                lines.append(
                    "    other: " + ", ".join(f"{k} x{v}" for k, v in seen["other"].items())
                )
    parsers = results.get("json_parsers")
    if parsers:
        mb = parsers["bytes"] / 1e6
        lines += ["", f"JSON parsers on the two LIST bodies ({mb:.2f} MB), CPU s, median of 31"]
        base = parsers["json.loads"]
        for name, value in parsers.items():
            if name != "bytes":
                lines.append(f"  {name:<24} {value:.4f}  ({value / base:.2f}x json.loads)")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
