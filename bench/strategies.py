"""Engine time per diff strategy (issue 14): legacy vs structured-merge on the 2,000-object app.

Usage: ``python bench/strategies.py [--out DIR] [--repeat N]``. Uses bench/generate.py's
``one-app-2000`` fixture (generated under OUT/fixtures on first use, as ``bench/run.py`` does) and
its Python rendering of the overlay (checked identical to kustomize by ``generate.py --verify``),
so no kustomize runs. The same 2,000 pairs go through ``engine.run`` twice, in this process:

- **legacy**: the snapshot as generated (Argo CD's client-side apply: last-applied-configuration,
  argocd-controller's managedFields entry an ``Update``);
- **structured-merge**: the same objects as a server-side apply sync leaves them (that entry an
  ``Apply``, no last-applied annotation) and the Application with
  ``syncOptions: [ServerSideApply=true]``.

Each is timed ``--repeat`` times (median; wall and CPU); the verdicts must agree (the seeded
drifts, nothing else). Prints a table and writes OUT/strategies.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import generate  # noqa: E402

from kubectl_gitdrift import application, engine, model, plugins  # noqa: E402
from kubectl_gitdrift.compare import (  # noqa: E402
    defaults,
    openapi,
    schema,
    smd,
)
from kubectl_gitdrift.live import clusterstate, snapshot  # noqa: E402
from kubectl_gitdrift.run import workflow  # noqa: E402

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
TRACKING = "argocd.argoproj.io/tracking-id"


STRIPPED = {("f:apiVersion",), ("f:kind",), ("f:metadata", "f:name"), ("f:metadata", "f:namespace")}
"""What the API server leaves out of every managedFields set."""


def with_claim_types(body: dict[str, Any]) -> dict[str, Any]:
    """volumeClaimTemplates with apiVersion/kind, as an SSA user writes them: the list is
    atomic, so without them Argo CD's structured-merge diff reports the server's own."""
    claims = (body.get("spec") or {}).get("volumeClaimTemplates")
    if body.get("kind") == "StatefulSet" and isinstance(claims, list):
        body["spec"]["volumeClaimTemplates"] = [
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim", **c} for c in claims
        ]
    return body


def server_side(
    body: model.Body, config: model.Body | None, types: schema.Schema
) -> dict[str, Any]:
    """The object as a server-side apply of `config` by argocd-controller leaves it: that
    manager's entry an Apply owning exactly the fields it sent (what a real server records,
    tests/compare/test_compare_structured.py), no last-applied annotation."""
    out = json.loads(json.dumps(body))
    metadata = out.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    annotations.pop(LAST_APPLIED, None)
    if config is None:
        return out
    config = json.loads(json.dumps(config))
    config_md = config.setdefault("metadata", {})
    config_md["namespace"] = metadata.get("namespace")
    if TRACKING in annotations:
        config_md.setdefault("annotations", {})[TRACKING] = annotations[TRACKING]
    group, _, version = str(config.get("apiVersion")).rpartition("/")
    node = types.closest(group, version, str(config.get("kind")))
    fields = smd.field_set(config, smd.of(node)) - STRIPPED
    for entry in metadata.get("managedFields") or ():
        if entry.get("manager") == "argocd-controller" and entry.get("operation") == "Update":
            entry["operation"] = "Apply"
            entry["fieldsV1"] = smd.to_fields_v1(fields)
    return out


@dataclasses.dataclass(frozen=True)
class OneApp:
    """The one-app-2000 fixture as this script and bench/engine.py run it: the snapshot, its
    Application, and the overlay as generate.py renders it (no kustomize)."""

    state: clusterstate.ClusterState
    app: model.Application
    settings: model.Settings
    desired: list[model.Manifest]
    types: schema.Schema
    revision: str

    def inputs(self, app: model.Application, desired: Any, live: Any) -> engine.Inputs:
        return engine.Inputs(
            app=app,
            settings=self.settings,
            desired=desired,
            live=live,
            revision=self.revision,
            source="bench",
            index=engine.LiveIndex.of(live, self.settings),
        )

    def as_server_side(
        self,
    ) -> tuple[model.Application, list[model.Manifest], tuple[model.Manifest, ...]]:
        """The Application with ServerSideApply=true, and its objects as a server-side apply
        sync leaves them (git's with claim types, live's `server_side`)."""
        app = dataclasses.replace(
            self.app,
            sync_policy=dataclasses.replace(
                self.app.sync_policy, sync_options=("ServerSideApply=true",)
            ),
        )
        desired = [
            model.Manifest(m.key, with_claim_types(json.loads(json.dumps(m.body))), m.origin)
            for m in self.desired
        ]
        by_key = {m.key: m.body for m in desired}
        live = tuple(
            model.Manifest(m.key, server_side(m.body, by_key.get(m.key), self.types), m.origin)
            for m in self.state.objects
        )
        return app, desired, live


def one_app(out: Path) -> OneApp:
    """The one-app-2000 fixture, generated under OUT/fixtures on first use."""
    scenario = generate.SCENARIOS["one-app-2000"]
    fixture, _meta = generate.ensure(scenario, out / "fixtures")
    state = snapshot.load(fixture / "snapshot.json")
    body = state.applications[0]
    app = application.parse_application(body)
    rendered = generate.render_overlay(app.name, scenario.units)
    return OneApp(
        state=state,
        app=app,
        settings=workflow.settings_of(state),
        desired=[model.Manifest(model.ObjectKey.of(b), b, "apps/overlay") for b in rendered],
        types=schema.Schema(openapi.load_builtin_definitions()),
        revision=str((body.get("status") or {}).get("sync", {}).get("revision") or ""),
    )


def timed(fn: Any, repeat: int) -> tuple[float, float, Any]:
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    one = one_app(args.out)
    pm = plugins.make_plugin_manager(entry_points=False)
    options = engine.Options(schema=one.types, defaults=defaults.apply_defaults)
    runs = {
        "legacy": (one.app, one.desired, one.state.objects),
        "structured-merge": one.as_server_side(),
    }
    results: dict[str, dict[str, Any]] = {}
    for name, (which, objects, live) in runs.items():
        inputs = one.inputs(which, objects, live)
        wall, cpu, report = timed(lambda i=inputs: engine.run(i, pm, options), args.repeat)
        verdicts = sorted(
            (d.key.display(), d.status.value)
            for d in report.resources
            if d.status is not model.ResourceStatus.SYNCED
        )
        results[name] = {
            "wall": wall,
            "cpu": cpu,
            "pairs": len(report.resources),
            "not_synced": len(verdicts),
            "strategy": report.strategy.value,
            "verdicts": verdicts,
        }
    legacy = results["legacy"]
    ssa = results["structured-merge"]
    ratio = ssa["cpu"] / legacy["cpu"]
    agree = legacy["verdicts"] == ssa["verdicts"]
    print(f"{'STRATEGY':<18} {'pairs':>6} {'not Synced':>11} {'wall s':>8} {'CPU s':>8}")
    for name, r in results.items():
        print(
            f"{name:<18} {r['pairs']:>6} {r['not_synced']:>11} {r['wall']:>8.3f} {r['cpu']:>8.3f}"
        )
    print(f"structured-merge / legacy (CPU): {ratio:.2f}x (target <= 2x); verdicts agree: {agree}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "strategies.json").write_text(
        json.dumps({"results": results, "ratio_cpu": ratio, "verdicts_agree": agree}, indent=1)
    )
    return 0 if agree and ratio <= 2 else 1


if __name__ == "__main__":
    sys.exit(main())
