"""Benchmark of repoURL fetching (issue 13): cold vs warm runs against a loopback `git daemon`.

Usage: ``python bench/fetch.py [--apps 500] [--out DIR]``.

Generates (or reuses) a fleet with bench/generate.py (500 apps of 20 objects by default, the
`serve-500x20` fixture), serves its repository with a real `git daemon` on 127.0.0.1
(tests/support/gitdaemon.py), points the snapshot's repoURL at it, and runs the `kubectl-gitdrift`
script without --repo-root, each run a fresh process with its own empty or kept cache:

1. one app, cold cache (fetch, render, compare);
2. the same app again, warm (the synced commit is in the mirror: no request expected);
3. `--all`, cold cache (one fetch for the 500 apps, 500 renders);
4. `--all`, warm;
5. `--all` with the renders and trees kept but the mirror deleted: what fetching costs alone.

First, live mode (L1, L2): `kubectl-gitdrift guestbook` against the loopback API server
(tests/apiserver) holding the incident's objects, repoURL on the git daemon, cold then warm
(`--live-only` runs just these).

For each: the daemon's upload-pack requests (every ls-remote or fetch is one), the wall time,
and the exit code. Results go to OUT/fetch.json and a table on stdout.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import generate  # noqa: E402  (bench/generate.py, beside this file)

from kubectl_gitdrift import application  # noqa: E402
from kubectl_gitdrift.sources import fetch  # noqa: E402
from tests.support.gitdaemon import GitDaemon  # noqa: E402

NAME = "fleet-gitops.git"
INCIDENT_URL = "https://github.com/example/guestbook-gitops.git"


def json_docs(path: Path) -> list[dict[str, Any]]:
    """The objects of a snapshot.json (one JSON document a line, or one List)."""
    text = path.read_text()
    try:
        doc = json.loads(text)
        return list(doc.get("items") or [doc])
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def live(rows: list[dict[str, Any]]) -> None:
    """`kubectl-gitdrift guestbook` in live mode (the loopback API server, tests/apiserver,
    holding the incident's objects) with repoURL on the loopback git daemon, no --repo-root:
    a cold run, then a warm one."""
    from tests.support.apiserver import serve  # the loopback API server the live tests use

    spec = importlib.util.spec_from_file_location("make_repo", ROOT / "testdata/make_repo.py")
    assert spec is not None
    assert spec.loader is not None
    make_repo = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_repo", make_repo)  # its dataclasses look their module up
    spec.loader.exec_module(make_repo)
    incident = ROOT / "testdata" / "incident"
    script = Path(sys.executable).parent / "kubectl-gitdrift"
    with tempfile.TemporaryDirectory(prefix="gitdrift-bench-live-") as tmp_text:
        tmp = Path(tmp_text)
        make_repo.build_repo(incident / "repo-src", tmp / "repo")
        with GitDaemon(tmp / "served") as daemon:
            url = daemon.serve(tmp / "repo", "guestbook-gitops.git")
            text = (incident / "snapshot.yaml").read_text()
            objects = yaml.safe_load(text.replace(INCIDENT_URL, url))["items"]
            with serve(objects) as server:
                env = {**os.environ, "KUBECTL_GITDRIFT_CACHE_DIR": str(tmp / "cache")}
                for label in ("L1. live, one app, cold cache", "L2. live, one app, warm"):
                    before = daemon.requests()
                    start = time.perf_counter()
                    proc = subprocess.run(
                        [str(script), "guestbook", "--kubeconfig", str(server.kubeconfig_path),
                         "--context", server.context, "--no-entry-points", "-o", "json"],
                        env=env, capture_output=True, check=False,
                    )  # fmt: skip
                    wall = time.perf_counter() - start
                    rows.append(
                        {"run": label, "requests": daemon.requests() - before,
                         "wall_s": round(wall, 3), "exit": proc.returncode}
                    )  # fmt: skip
                    print(
                        f"{label:55} {rows[-1]['requests']:>8} {wall:>9.2f} s  "
                        f"exit {proc.returncode}"
                    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--apps", type=int, default=500)
    ap.add_argument("--units", type=int, default=2)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--fetch-only", action="store_true", help="only the in-process fetch runs")
    ap.add_argument("--live-only", action="store_true", help="only the live-mode runs")
    opts = ap.parse_args(argv)
    rows: list[dict[str, Any]] = []
    print(f"{'RUN':55} {'REQUESTS':>8} {'WALL':>11}")
    live(rows)
    if opts.live_only:
        return 0

    scenario = generate.Scenario(f"serve-{opts.apps}x{opts.units * 10}", opts.apps, opts.units)
    data, meta = generate.ensure(scenario, opts.out / "fixtures")
    script = Path(sys.executable).parent / "kubectl-gitdrift"
    with tempfile.TemporaryDirectory(prefix="gitdrift-bench-fetch-") as tmp_text:
        tmp = Path(tmp_text)
        with GitDaemon(tmp / "served") as daemon:
            url = daemon.serve(data / "repo", NAME)
            snap = tmp / "snapshot.json"
            snap.write_text((data / "snapshot.json").read_text().replace(generate.REPO_URL, url))
            app = str(meta["apps"][0])
            cache = tmp / "cache"

            def run(label: str, *args: str) -> None:
                env = {**os.environ, "KUBECTL_GITDRIFT_CACHE_DIR": str(cache)}
                before = daemon.requests()
                start = time.perf_counter()
                proc = subprocess.run(
                    [str(script), *args, "--snapshot", str(snap), "-o", "json"],
                    env=env,
                    capture_output=True,
                    check=False,
                )
                wall = time.perf_counter() - start
                if proc.returncode not in (0, 1):
                    sys.stderr.write(proc.stderr.decode())
                rows.append(
                    {
                        "run": label,
                        "requests": daemon.requests() - before,
                        "wall_s": round(wall, 3),
                        "exit": proc.returncode,
                    }
                )
                print(
                    f"{label:55} {rows[-1]['requests']:>8} {wall:>9.2f} s  exit {proc.returncode}"
                )

            target = application.parse_application(
                next(
                    b
                    for b in json_docs(snap)
                    if b.get("kind") == "Application" and b.get("metadata", {}).get("name") == app
                )
            )
            sha = target.revisions[0] if target.revisions else "HEAD"
            for label in ("0a. fetch alone (in-process), cold", "0b. fetch alone, warm"):
                before = daemon.requests()
                start = time.perf_counter()
                repos = fetch.Repos(tmp / "fetch-only" / "git")  # a new run each time
                repos.checkout(target, target.sources[0], sha, False)
                wall = time.perf_counter() - start
                rows.append(
                    {"run": label, "requests": daemon.requests() - before, "wall_s": round(wall, 3),
                     "exit": 0}
                )  # fmt: skip
                print(f"{label:55} {rows[-1]['requests']:>8} {wall:>9.2f} s")
            if opts.fetch_only:
                return 0
            run("1. one app, cold cache", app)
            run("2. one app, warm", app)
            shutil.rmtree(cache)
            run(f"3. --all ({len(meta['apps'])} apps), cold cache", "--all")
            run("4. --all, warm", "--all")
            shutil.rmtree(cache / "git")
            run("5. --all, renders kept, mirror deleted (fetch alone)", "--all")
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "fetch.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if all(r["exit"] in (0, 1) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
