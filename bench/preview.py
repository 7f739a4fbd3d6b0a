"""`kubectl gitdrift preview` over 500 apps made by an ApplicationSet: cold, warm, and rendering
both revisions alone (issue 24).

Usage: ``python bench/preview.py [--rounds N] [--out FILE]`` (a few minutes: every cold round
renders the fleet).

The fixture is bench/generate.py's ``fleet-500x20`` repository (500 kustomize apps of 20
objects: apps/<app>/base and apps/<app>/overlays/prod), cloned into OUT/preview/repo with two
more commits: ``base`` adds argocd/fleet.yaml, an ApplicationSet (goTemplate, a git
directories generator over apps/*/overlays/prod) that makes the 500 Applications; ``head``, the
change under review, bumps the image of 10 apps' overlays. So every app is found by expanding
an ApplicationSet at both revisions, as a third of real app units are.

Measured, each a fresh process, the rounds interleaved so the machine's load hits them alike
(medians are compared):

- ``render both revisions alone``: ``kubectl kustomize`` of the 500 overlays in base's tree and
  in head's tree (git archive'd), on every core: what any preview must at least do to show all
  apps at both revisions, without finding them, comparing or writing anything;
- ``preview --all-apps, cold``: a new render cache; every app found, rendered and compared;
- ``preview --all-apps, warm``: the same command again (its cache);
- ``preview, cold`` / ``preview, warm``: the default, only the apps the change touches.

Targets (BENCHMARKS.md, issue 24): warm at most 5 s; cold --all-apps at most 1.2x rendering
both revisions alone. argocd-diff-preview's published figures are the anchor: about 330 s cold
for 500 apps, with a throwaway cluster and Argo CD.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import generate  # noqa: E402
from fleet import measure  # noqa: E402

SCENARIO = "fleet-500x20"
CHANGED = 10  # apps whose overlay the head commit changes
APPSET = """\
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: fleet
  namespace: argocd
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
    - git:
        repoURL: {url}
        revision: main
        directories:
          - path: apps/*/overlays/prod
  template:
    metadata:
      name: '{{{{ index .path.segments 1 }}}}'
    spec:
      project: default
      source:
        repoURL: {url}
        targetRevision: main
        path: '{{{{ .path.path }}}}'
      destination:
        server: https://kubernetes.default.svc
        namespace: '{{{{ index .path.segments 1 }}}}'
      syncPolicy:
        automated:
          prune: true
"""


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
        "GIT_AUTHOR_DATE": "2026-12-01T10:00:00Z",
        "GIT_COMMITTER_DATE": "2026-12-01T10:00:00Z",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    )
    return done.stdout.strip()


def fixture(out: Path) -> tuple[Path, str, str]:
    """OUT/preview/repo: the fleet's repository with the ApplicationSet (base) and the change
    (head) committed; (repo, base sha, head sha). Made once; kept while the fleet is the same."""
    data, _ = generate.ensure(generate.SCENARIOS[SCENARIO], out / "fixtures")
    repo = out / "preview" / "repo"
    stamp = out / "preview" / ".fingerprint"
    fingerprint = (data / ".fingerprint").read_text() + APPSET + str(CHANGED)
    if not (stamp.is_file() and stamp.read_text() == fingerprint):
        shutil.rmtree(out / "preview", ignore_errors=True)
        subprocess.run(["git", "clone", "-q", str(data / "repo"), str(repo)], check=True)
        url = generate.REPO_URL
        _git(repo, "remote", "set-url", "origin", url)
        (repo / "argocd").mkdir()
        (repo / "argocd" / "fleet.yaml").write_text(APPSET.format(url=url))
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "argocd: the fleet as an ApplicationSet")
        apps = sorted(p.name for p in (repo / "apps").iterdir())
        for app in apps[:: len(apps) // CHANGED][:CHANGED]:
            overlay = repo / "apps" / app / "overlays" / "prod" / "kustomization.yaml"
            overlay.write_text(overlay.read_text().replace("newTag: 1.5.0", "newTag: 1.6.0"))
        _git(repo, "commit", "-q", "-am", f"fleet: 1.6.0 for {CHANGED} apps")
        stamp.write_text(fingerprint)
    return repo, _git(repo, "rev-parse", "HEAD~1"), _git(repo, "rev-parse", "HEAD")


def render_alone(repo: Path, revisions: list[str]) -> float:
    """Wall time of `kubectl kustomize` of every overlay at each revision, on every core."""
    with tempfile.TemporaryDirectory() as tmp:
        trees = []
        for rev in revisions:
            tree = Path(tmp) / rev
            tree.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(repo), "archive", rev], check=True, capture_output=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
            trees.append(tree)
        jobs = [p for t in trees for p in sorted((t / "apps").glob("*/overlays/prod"))]
        kustomize = shutil.which("kustomize")
        argv = [kustomize, "build"] if kustomize else ["kubectl", "kustomize"]
        start = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            list(
                pool.map(
                    lambda p: subprocess.run([*argv, str(p)], check=True, capture_output=True),
                    jobs,
                )
            )
        return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "out" / "preview.json")
    args = ap.parse_args(argv)
    out_dir = HERE / "out"
    repo, base, head = fixture(out_dir)
    cli = Path(sys.executable).with_name("kubectl-gitdrift")
    common = [str(cli), "preview", "--repo-root", str(repo), "--base", base, "--head", head]
    common += ["-o", "json", "--no-entry-points"]
    env = {k: v for k, v in os.environ.items() if k != "KUBECTL_GITDRIFT_WORKERS"}
    results: dict[str, list[dict[str, Any]]] = {}
    for n in range(args.rounds):
        results.setdefault("render both revisions alone", []).append(
            {"wall": render_alone(repo, [base, head])}
        )
        for label, extra in (("preview --all-apps", ["--all-apps"]), ("preview", [])):
            cache = out_dir / "cache" / f"preview-{n}-{'all' if extra else 'touched'}"
            shutil.rmtree(cache, ignore_errors=True)
            run_env = dict(env, KUBECTL_GITDRIFT_CACHE_DIR=str(cache))
            for phase in ("cold", "warm"):
                got = measure([*common, *extra], run_env)
                doc = json.loads(got.pop("report"))
                got["apps"] = len(doc["apps"])
                results.setdefault(f"{label}, {phase}", []).append(got)
            shutil.rmtree(cache, ignore_errors=True)
        print(f"round {n + 1}/{args.rounds} done", file=sys.stderr)
    summary = {
        label: {
            "wall_median": statistics.median(r["wall"] for r in runs),
            "walls": [round(r["wall"], 2) for r in runs],
            **({"apps": runs[0]["apps"]} if "apps" in runs[0] else {}),
            **(
                {"peak_rss_mib": max(r["peak_rss_mib"] for r in runs)}
                if "peak_rss_mib" in runs[0]
                else {}
            ),
        }
        for label, runs in results.items()
    }
    alone = summary["render both revisions alone"]["wall_median"]
    summary["ratios"] = {
        "cold --all-apps / render both alone": summary["preview --all-apps, cold"]["wall_median"]
        / alone,
        "cold touched / render both alone": summary["preview, cold"]["wall_median"] / alone,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1) + "\n")
    for label, row in summary.items():
        print(f"{label:40} {json.dumps(row)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
