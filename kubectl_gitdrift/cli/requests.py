"""Turns the parsed command line into the run's Request (run/request.py), once.

The only place outside parser.py that knows the flags' attribute names: below here the run
reads named fields. Nothing is checked here (main.py checks flag combinations, the run checks
values where it uses them), so every error keeps its message and its moment.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from kubectl_gitdrift.run.request import (
    Change,
    ClusterSide,
    Diagnosis,
    GitSide,
    Output,
    PluginChoice,
    Request,
    Selection,
    Tuning,
)
from kubectl_gitdrift.settings import Settings


def request_from(
    args: argparse.Namespace,
    *,
    settings: Settings | None = None,
    tuning: Tuning | None = None,
) -> Request:
    """The main command's flags (`kubectl gitdrift APP|--all ...`, and `serve`'s run)."""
    settings = Settings.from_environ() if settings is None else settings
    if getattr(args, "helm_version", None):
        settings = settings.with_helm_version(args.helm_version)
    return Request(
        selection=_selection(args, (args.app,) if args.app else (), shard=args.shard),
        git=GitSide(
            repo_roots=tuple(args.repo_root or ()),
            revision=args.revision,
            local=args.local,
            offline=args.offline,
            cache=not args.no_cache,
            allow_plugins=args.allow_plugins,
            cmp_files=tuple(args.cmp),
        ),
        cluster=_cluster(args, snapshot=args.snapshot, server_dry_run=args.server_dry_run),
        output=Output(
            format=args.output,
            query=args.query,
            pushgateway=args.pushgateway,
            show_suppressed=args.show_suppressed,
            write_patch=args.write_patch,
            color=args.color,
            progress=args.progress,
            drift_fails=args.exit_code != "false",
        ),
        diagnosis=Diagnosis(
            audit_log=args.audit_log,
            controller_sa=args.controller_sa,
            disabled_rules=tuple(args.disable_rule),
        ),
        plugins=plugin_choice(args, settings),
        settings=settings,
        tuning=Tuning() if tuning is None else tuning,
    )


def export_request_from(
    sub: argparse.Namespace,
    *,
    settings: Settings | None = None,
    tuning: Tuning | None = None,
) -> Request:
    """`snapshot APP... -o FILE`'s flags: a live run that exports instead of comparing (it
    has no --offline, --no-cache, --shard or output flags: their defaults)."""
    return Request(
        selection=_selection(sub, tuple(sub.apps)),
        git=GitSide(repo_roots=tuple(sub.repo_root or ()), revision=sub.revision, local=sub.local),
        cluster=_cluster(sub),
        output=Output(progress=sub.progress),
        export=sub.output,
        settings=Settings.from_environ() if settings is None else settings,
        tuning=Tuning() if tuning is None else tuning,
    )


@dataclass(frozen=True, slots=True)
class PreviewCall:
    """`preview`'s flags: the run's Request, and how the CLI cuts its markdown (which the run
    never sees: it returns a model.Preview, the CLI presents it)."""

    request: Request
    split: bool = False  # --split
    max_chars: int | None = None  # --max-chars as given (None: GitHub's limit)


def preview_request_from(
    sub: argparse.Namespace,
    *,
    settings: Settings | None = None,
    tuning: Tuning | None = None,
) -> PreviewCall:
    """`preview [--base REV] [--head REV] [--repo-root DIR] ...`: two revisions of one clone
    (Request.change), and optionally a cluster or a snapshot to compare head with."""
    from kubectl_gitdrift.sources.fetch import RepoRoot  # a preview renders: it is loaded anyway

    settings = Settings.from_environ() if settings is None else settings
    request = Request(
        git=GitSide(
            repo_roots=(RepoRoot(sub.repo_root.expanduser()),),
            offline=sub.offline,
            cache=not sub.no_cache,
            allow_plugins=sub.allow_plugins,
        ),
        cluster=_cluster(sub, snapshot=sub.snapshot),
        output=Output(format=sub.output, color=sub.color, progress=sub.progress),
        plugins=plugin_choice(sub, settings),
        change=Change(
            base=sub.base,
            head=sub.head,
            all_apps=sub.all_apps,
            live=sub.live or sub.snapshot is not None,
        ),
        settings=settings,
        tuning=Tuning() if tuning is None else tuning,
    )
    return PreviewCall(request, split=sub.split, max_chars=sub.max_chars)


def plugin_choice(args: argparse.Namespace, settings: Settings) -> PluginChoice:
    """--plugin, --disable-plugin and --no-entry-points (or autoload off in the environment)."""
    return PluginChoice(
        paths=tuple(args.plugin),
        blocked=tuple(args.disable_plugin),
        entry_points=not args.no_entry_points and not settings.autoload_disabled(),
    )


def _selection(
    args: argparse.Namespace, names: tuple[str, ...], *, shard: str | None = None
) -> Selection:
    return Selection(
        names=names,
        all=args.all,
        all_namespaces=args.all_namespaces,
        namespace=args.app_namespace,
        shard=shard,
    )


NO_LIMIT = 24 * 3600.0
"""--request-timeout 0 (kubectl's "no limit"): a day, so every wait stays finite."""


def _cluster(
    args: argparse.Namespace, *, snapshot: Path | None = None, server_dry_run: bool = False
) -> ClusterSide:
    return ClusterSide(
        snapshot=snapshot,
        kubeconfig=args.kubeconfig,
        context=args.context,
        cache_dir=args.cache_dir,
        request_timeout=args.request_timeout or NO_LIMIT,
        server_dry_run=server_dry_run,
    )
