"""The command line: parses flags, gathers inputs at the edges, runs the engine, writes the
report. The only module that writes to stdout/stderr and picks the exit code."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TextIO

from kubectl_gitdrift import (
    __version__,
    application,
    defaults,
    engine,
    hookspecs,
    model,
    openapi,
    plugins,
    remedies,
    report,
    schema,
    snapshot,
)
from kubectl_gitdrift.errors import AppError, ExitCode, GitDriftError, PluginError, UsageError
from kubectl_gitdrift.sources import locate as source_locate
from kubectl_gitdrift.sources import render as source_render

SUBCOMMANDS = ("snapshot", "plugins", "rules", "version")


class _Parser(argparse.ArgumentParser):
    """argparse writing help and errors to the streams main() was given, not sys.*."""

    out: TextIO | None = None
    err: TextIO | None = None

    def _print_message(self, message: str, file: IO[str] | None = None) -> None:
        if not message:
            return
        stream = self.err if file is sys.stderr else self.out
        (stream or file or sys.stdout).write(message)


def _streams(parser: _Parser, out: TextIO, err: TextIO) -> _Parser:
    parser.out, parser.err = out, err
    return parser


def build_parser(prog: str = "kubectl gitdrift") -> _Parser:
    parser = _Parser(
        prog=prog,
        description=(
            "Explain why an Argo CD Application is OutOfSync: what differs between git and the "
            "cluster, who changed it, why Argo CD does not fix it, and how to fix it."
        ),
        epilog=(
            "exit codes: 0 no drift, 1 drift found, 2 usage error, 3 input error (snapshot, "
            "source, app), 4 plugin error, 5 internal error, 6 cluster error, 7 incomplete "
            "(some resources could not be read).\n"
            f"subcommands: {prog} snapshot|plugins|rules|version (each has --help)"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("app", help="the Application's name, or NAMESPACE/NAME")
    src = parser.add_argument_group("git side")
    src.add_argument(
        "--repo-root", metavar="DIR", type=Path, help="a local clone of the Application's repoURL"
    )
    rev = src.add_mutually_exclusive_group()
    rev.add_argument(
        "--revision",
        metavar="REV",
        help="render this revision (default: the one Argo CD last compared)",
    )
    rev.add_argument(
        "--local", action="store_true", help="render the working tree of --repo-root as it is"
    )
    live = parser.add_argument_group("cluster side")
    live.add_argument(
        "--snapshot",
        metavar="PATH",
        type=Path,
        help="offline: a kubectl get -o yaml List, multi-doc YAML/JSON, .gz, or a "
        "directory of them",
    )
    live.add_argument(
        "--app-namespace",
        metavar="NS",
        default=None,
        help="the namespace of the Application (default: argocd)",
    )
    live.add_argument("--context", metavar="NAME", help="kubeconfig context (live mode)")
    live.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig file (live mode)")
    out = parser.add_argument_group("output")
    out.add_argument(
        "-o",
        "--output",
        default="text",
        metavar="FORMAT",
        help="text (default), json, yaml, or a plugin's format",
    )
    out.add_argument("--query", metavar="JMESPATH", help="print this JMESPath over the JSON report")
    out.add_argument(
        "--show-suppressed",
        action="store_true",
        help="list what ignore rules hid, and which rule hid each",
    )
    plug = parser.add_argument_group("plugins")
    plug.add_argument(
        "--plugin",
        metavar="PATH|MODULE",
        action="append",
        default=[],
        help="load a team plugin from a file or module (repeatable)",
    )
    plug.add_argument(
        "--disable-plugin",
        metavar="NAME",
        action="append",
        default=[],
        help="do not load this plugin (repeatable)",
    )
    plug.add_argument(
        "--disable-rule",
        metavar="ID",
        action="append",
        default=[],
        help="skip this diagnosis rule (repeatable; see 'rules')",
    )
    plug.add_argument(
        "--no-entry-points",
        action="store_true",
        help=f"skip installed plugins (or set {plugins.AUTOLOAD_ENV}=1)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def build_subparser(command: str, prog: str) -> _Parser:
    parser = _Parser(prog=f"{prog} {command}")
    if command in ("plugins", "rules"):
        parser.add_argument("--plugin", metavar="PATH|MODULE", action="append", default=[])
        parser.add_argument("--disable-plugin", metavar="NAME", action="append", default=[])
        parser.add_argument("--no-entry-points", action="store_true")
        parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    return parser


# --------------------------------------------------------------------------- entry points


def run() -> None:
    sys.exit(main())


def run_argocd() -> None:
    """`argocd gitdrift <app>`: the argocd CLI runs argocd-gitdrift from PATH."""
    sys.exit(main(prog="argocd gitdrift"))


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    prog: str = "kubectl gitdrift",
) -> int:
    """Run once; the only place that maps exceptions to exit codes."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    try:
        return int(_dispatch(args_list, out, err, prog))
    except PluginError as exc:
        _error(err, exc, debug)
        return int(exc.exit_code)
    except GitDriftError as exc:
        _error(err, exc, debug)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        err.write("interrupted\n")
        return int(ExitCode.INTERRUPTED)
    except SystemExit as exc:  # argparse: --help exits 0, bad flags exit 2
        return int(exc.code or 0) if isinstance(exc.code, int) else int(ExitCode.USAGE_ERROR)
    except Exception as exc:
        if debug:
            raise
        err.write(
            f"internal error: {type(exc).__name__}: {exc}\n"
            "  hint: this is a bug in kubectl-gitdrift; rerun with --debug and report it\n"
        )
        return int(ExitCode.INTERNAL_ERROR)


def _error(err: TextIO, exc: GitDriftError, debug: bool) -> None:
    if debug:
        import traceback

        traceback.print_exception(exc, file=err)
    err.write(f"error: {exc.message}\n")
    if exc.hint:
        err.write(f"  hint: {exc.hint}\n")


def _dispatch(argv: list[str], out: TextIO, err: TextIO, prog: str) -> ExitCode:
    if argv and argv[0] in SUBCOMMANDS:
        command, rest = argv[0], argv[1:]
        sub = _streams(build_subparser(command, prog), out, err).parse_args(rest)
        if command == "version":
            out.write(f"{prog} {__version__}\n")
            return ExitCode.OK
        if command == "snapshot":
            raise UsageError(
                f"{prog} snapshot needs live mode, which is not built yet",
                hint="export with: kubectl get -A -o yaml --show-managed-fields",
            )
        pm = plugins.make_plugin_manager(
            paths=sub.plugin, entry_points=not sub.no_entry_points, blocked=sub.disable_plugin
        )
        if command == "plugins":
            return _plugins(pm, sub.output, out)
        return _rules(pm, sub.output, out)
    args = _streams(build_parser(prog), out, err).parse_args(argv)
    return _compare(args, out, err)


def _plugins(pm: plugins.PluginManager, fmt: str, out: TextIO) -> ExitCode:
    infos = plugins.describe(pm)
    if fmt == "json":
        import json

        rows = [
            {"name": i.name, "source": i.source, "version": i.version, "hooks": list(i.hooks)}
            for i in infos
        ]
        out.write(json.dumps(rows, indent=2, sort_keys=True) + "\n")
        return ExitCode.OK
    from tabulate import tabulate

    table = [[i.name, i.version, i.source, ", ".join(i.hooks)] for i in infos]
    out.write(tabulate(table, headers=["NAME", "VERSION", "SOURCE", "HOOKS"]) + "\n")
    return ExitCode.OK


def _rules(pm: plugins.PluginManager, fmt: str, out: TextIO) -> ExitCode:
    rules = hookspecs.collect_rules(pm)
    if fmt == "json":
        import json

        rows = [
            {
                "id": r.id,
                "plugin": r.plugin,
                "severity": r.severity.name.lower(),
                "codes": list(r.codes),
                "doc": r.doc,
            }
            for r in rules
        ]
        out.write(json.dumps(rows, indent=2, sort_keys=True) + "\n")
        return ExitCode.OK
    from tabulate import tabulate

    table = [[r.id, ", ".join(r.codes), r.plugin, r.doc] for r in rules]
    out.write(tabulate(table, headers=["RULE", "CODES", "PLUGIN", "DOC"]) + "\n")
    return ExitCode.OK


# --------------------------------------------------------------------------- the main job


def _compare(args: argparse.Namespace, out: TextIO, err: TextIO) -> ExitCode:
    pm = plugins.make_plugin_manager(
        paths=args.plugin, entry_points=not args.no_entry_points, blocked=args.disable_plugin
    )
    renderers = hookspecs.collect_renderers(pm)
    if args.output not in renderers:
        raise UsageError(
            f"-o {args.output}: unknown output format",
            hint="choose one of " + ", ".join(sorted(renderers)),
        )
    rules = hookspecs.collect_rules(pm)
    unknown_rules = sorted(set(args.disable_rule) - {r.id for r in rules})
    if unknown_rules:
        raise UsageError(
            f"--disable-rule {unknown_rules[0]}: no such rule",
            hint="list them with: kubectl gitdrift rules",
        )
    if args.snapshot is None:
        raise UsageError(
            "live mode is not available yet: pass --snapshot PATH",
            hint="export one with: kubectl get -A -o yaml --show-managed-fields "
            "applications.argoproj.io,deployments,services,configmaps > snapshot.yaml",
        )
    if args.repo_root is None:
        raise UsageError("--repo-root DIR is required: a local clone of the Application's repoURL")

    state = snapshot.load(args.snapshot)
    namespace, _, name = args.app.rpartition("/")
    namespace = namespace or args.app_namespace
    body = state.find_application(name, namespace or "argocd")
    if body is None and namespace is None:
        body = state.find_application(name, None)
    if body is None:
        known = ", ".join(state.application_names()) or "none"
        raise AppError(
            f"Application {namespace or 'argocd'}/{name} not found in {state.source}",
            hint=f"Applications there: {known}",
        )
    app = application.parse_application(body)
    settings = application.parse_settings(state.argocd_cm)

    with tempfile.TemporaryDirectory(prefix="gitdrift-") as workdir:
        rendered = source_render.render(
            app, args.repo_root, revision=args.revision, local=args.local, workdir=Path(workdir)
        )

        def locate(drift: model.Drift, change: model.Change) -> remedies.Location | None:
            manifest = model.Manifest(drift.key, drift.desired or {}, drift.origin)
            found = source_locate.locate(
                rendered.tree, rendered.source_path, manifest, change.path, change.desired
            )
            if found is None:
                return None
            return remedies.Location(found.file, found.line, found.how)

        source = f"{app.sources[0].repo_url} {rendered.source_path} @ {rendered.revision}"
        inputs = engine.Inputs(
            app=app,
            settings=settings,
            desired=rendered.manifests,
            live=state.objects,
            revision=rendered.revision,
            source=source,
        )
        options = engine.Options(
            schema=schema.Schema(openapi.load_builtin_definitions()),
            defaults=defaults.apply_defaults,
            locate=locate,
            disabled_rules=args.disable_rule,
            rules=rules,
        )
        app_report = engine.run(inputs, pm, options)

    result = model.Report(applications=(app_report,), mode="offline")
    if args.query:
        text = report.query(report.to_dict(result), args.query)
    elif args.output == "text":
        text = report.render_text(result, show_suppressed=args.show_suppressed)
    else:
        renderer = renderers[args.output]
        try:
            text = renderer.fn(result)
        except GitDriftError:
            raise
        except Exception as exc:
            raise PluginError(
                f"output format {args.output!r} of plugin {renderer.plugin!r} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
    out.write(text)
    if result.applications and any(
        a.sync_status is model.SyncStatus.UNKNOWN for a in result.applications
    ):
        return ExitCode.INCOMPLETE
    return ExitCode.DRIFT if result.drifted else ExitCode.OK


if __name__ == "__main__":  # pragma: no cover
    run()
