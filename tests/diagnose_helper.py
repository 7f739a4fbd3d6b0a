"""Run one application through the engine the way the CLI does, with the diagnosis callbacks
(locate, read_source, history) and an optional audit log, without going through cli.py."""

from __future__ import annotations

import tempfile
from pathlib import Path

from kubectl_gitdrift import (
    application,
    attribution,
    audit,
    defaults,
    engine,
    hookspecs,
    model,
    openapi,
    plugins,
    remedies,
    schema,
    snapshot,
)
from kubectl_gitdrift.sources import git as source_git
from kubectl_gitdrift.sources import locate as source_locate
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
    settings = application.parse_settings(state.argocd_cm)
    with tempfile.TemporaryDirectory(prefix="gitdrift-test-") as workdir:
        rendered = source_render.render(app, repo, local=local, workdir=Path(workdir))
        tree = rendered.tree.resolve()
        at = "HEAD" if rendered.revision == source_render.WORKING_TREE else rendered.revision

        def locate(drift: model.Drift, change: model.Change) -> remedies.Location | None:
            manifest = model.Manifest(drift.key, drift.desired or {}, drift.origin)
            found = source_locate.locate(
                rendered.tree, rendered.source_path, manifest, change.path, change.desired
            )
            return None if found is None else remedies.Location(found.file, found.line, found.how)

        def read_source(rel: str) -> str | None:
            path = (tree / rel).resolve()
            if not path.is_relative_to(tree) or not path.is_file():
                return None
            return path.read_text(encoding="utf-8")

        def history(rel: str) -> attribution.CommitRef | None:
            found = source_git.last_commit_touching(repo, at, rel)
            if found is None:
                return None
            return attribution.CommitRef(found.sha, found.author, found.date, found.subject)

        inputs = engine.Inputs(
            app=app,
            settings=settings,
            desired=rendered.manifests,
            live=state.objects,
            revision=rendered.revision,
            source=f"{app.sources[0].repo_url} {rendered.source_path} @ {rendered.revision}",
            audit_log=audit_log,
        )
        options = engine.Options(
            schema=schema.Schema(openapi.load_builtin_definitions()),
            defaults=defaults.apply_defaults,
            locate=locate,
            read_source=read_source,
            history=history,
            rules=hookspecs.collect_rules(pm),
            **({"controller": controller} if controller else {}),
        )
        return engine.run(inputs, pm, options)
