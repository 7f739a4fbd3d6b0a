"""Run one application through the engine the way the CLI does, with the diagnosis callbacks
(locate, read_source, history) and an optional audit log, without going through cli.py."""

from __future__ import annotations

import tempfile
from pathlib import Path

from kubectl_gitdrift import application, engine, hookcalls, model, plugins
from kubectl_gitdrift.compare import defaults, openapi, schema
from kubectl_gitdrift.diagnose import audit
from kubectl_gitdrift.live import snapshot
from kubectl_gitdrift.run import workflow
from kubectl_gitdrift.sources import render as source_render


def diagnose(
    snapshot_path: Path,
    repo: Path,
    app_name: str = "guestbook",
    *,
    audit_log: audit.AuditLog | None = None,
    local: bool = False,
    controller: str | None = None,
) -> model.AppReport:
    pm = plugins.make_plugin_manager(entry_points=False)
    state = snapshot.load(snapshot_path)
    body = state.find_application(app_name, "argocd")
    assert body is not None
    app = application.parse_application(body)
    settings = workflow.settings_of(state)
    with tempfile.TemporaryDirectory(prefix="gitdrift-test-") as workdir:
        rendered = source_render.render(app, repo, local=local, workdir=Path(workdir))
        inputs = engine.Inputs(
            app=app,
            settings=settings,
            desired=rendered.manifests,
            live=state.objects,
            revision=rendered.revision,
            source=f"{app.sources[0].repo_url} {rendered.source_path} @ {rendered.revision}",
            audit_log=audit_log,
            varying=rendered.varying,
        )
        options = engine.Options(
            schema=schema.Schema(openapi.load_builtin_definitions()),
            defaults=defaults.apply_defaults,
            rules=hookcalls.collect_rules(pm),
            **({"controller": controller} if controller else {}),
        )
        return engine.run(
            inputs, pm, workflow.with_source_callbacks(options, rendered, repo, app=app)
        )
