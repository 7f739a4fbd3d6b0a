"""The command line: parses flags, gathers inputs at the edges, runs the engine, writes the
report. The only module that writes to stdout/stderr and picks the exit code."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from kubectl_gitdrift import __version__
from kubectl_gitdrift.cli import parser
from kubectl_gitdrift.errors import ExitCode, GitDriftError, PluginError, UsageError

if TYPE_CHECKING:
    from kubectl_gitdrift import hookspecs, model, plugins
    from kubectl_gitdrift.cli import progress, serve
    from kubectl_gitdrift.live import clusterstate
    from kubectl_gitdrift.present import color
    from kubectl_gitdrift.run import workflow
    from kubectl_gitdrift.run.request import Output, PluginChoice, Request, Tuning

# Start-up: each command imports what it runs, in the function that runs it, so `version`,
# `completion` and `--help` never load the engine, the sources, pluggy or YAML (issue 18; the
# module budget is tests/cli/test_startup.py).


def run() -> None:
    _keep_until_exit()
    _exit(main())


def run_argocd() -> None:
    """`argocd gitdrift <app>`: the argocd CLI runs argocd-gitdrift from PATH."""
    _keep_until_exit()
    _exit(main(prog="argocd gitdrift"))


_kept: list[object] | None = None
"""What a run loaded (the snapshot, the renders, the reports), held to the end when the process
leaves through `_exit`: freed object by object on the way out they took a tenth of a second of
a warm `--all`, after the report was written. None when `main` is called in-process (tests,
serve): there, everything is freed as usual."""


def _keep_until_exit() -> None:
    global _kept
    _kept = []


def _keep(*objects: object) -> None:
    if _kept is not None:
        _kept.extend(objects)


def _exit(code: int) -> NoReturn:
    """Flush, then leave without the interpreter's teardown: freeing a big run's objects one by
    one took seconds after the report was out, and nothing else is left to do (files are
    written atomically before main returns; temporary directories are gone already)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # `| head`: the reader left; like a CLI killed by SIGPIPE
        code = code or 141
    except OSError:
        code = code or int(ExitCode.ERROR)
    fanout = sys.modules.get("kubectl_gitdrift.run.fanout")
    if fanout is not None:
        fanout.reap()  # forked workers still exiting: none is left behind
    if sys.gettrace() or sys.getprofile() or "coverage" in sys.modules:
        sys.exit(code)  # a profiler or coverage writes its results at teardown: let it
    os._exit(code)


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    prog: str = "kubectl gitdrift",
    tuning: Tuning | None = None,
) -> int:
    """Run once; the only place that maps exceptions to exit codes. `tuning`: what tests and
    benchmarks shorten in the run (run.request.Tuning; None: as designed)."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    try:
        return int(_dispatch(args_list, out, err, prog, tuning))
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


def _dispatch(
    argv: list[str], out: TextIO, err: TextIO, prog: str, tuning: Tuning | None
) -> ExitCode:
    if argv and argv[0] == "completion":  # `completion bash|zsh|fish`; `completion __complete ARGS`
        from kubectl_gitdrift.cli import completion

        return ExitCode(completion.main(argv[1:], out, err, prog))
    if argv and argv[0] == "serve":
        return _serve(argv[1:], out, err, prog, tuning)
    if argv and argv[0] in parser.SUBCOMMANDS:
        command, rest = argv[0], argv[1:]
        sub = parser.with_streams(parser.build_subparser(command, prog), out, err).parse_args(rest)
        if command == "version":
            out.write(f"{prog} {__version__}\n")
            return ExitCode.OK
        from kubectl_gitdrift.cli import requests

        if command == "snapshot":
            return _snapshot(requests.export_request_from(sub, tuning=tuning), out, err)
        if command == "preview":  # the command lives in cli/preview.py
            from kubectl_gitdrift.cli import preview

            return preview.run(sub, out, err, tuning=tuning)
        from kubectl_gitdrift.settings import Settings

        pm = _plugin_manager(requests.plugin_choice(sub, Settings.from_environ()))
        if command == "plugins":
            return _plugins(pm, sub.output, out, include_builtins=sub.all)
        return _rules(pm, sub.output, out)
    args = parser.with_streams(parser.build_parser(prog), out, err).parse_args(argv)
    from kubectl_gitdrift.cli import requests

    ignored = [f for f, v in (("--context", args.context), ("--kubeconfig", args.kubeconfig)) if v]
    if args.snapshot and ignored:
        err.write(
            f"warning: {' and '.join(ignored)} ignored: --snapshot compares offline and reads "
            "no cluster\n"
        )
    return _compare(requests.request_from(args, tuning=tuning), out, err)


def _plugin_manager(choice: PluginChoice) -> plugins.PluginManager:
    from kubectl_gitdrift import plugins

    return plugins.make_plugin_manager(
        paths=choice.paths, entry_points=choice.entry_points, blocked=choice.blocked
    )


def _plugins(
    pm: plugins.PluginManager, fmt: str, out: TextIO, *, include_builtins: bool = False
) -> ExitCode:
    from kubectl_gitdrift import plugins

    infos = plugins.describe(pm, include_builtins=include_builtins)
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
    from kubectl_gitdrift import hookcalls

    rules = hookcalls.collect_rules(pm)
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


_BUILTIN_RENDERERS = "builtin/renderers"
"""plugins.BUILTIN_NAMES of the built-in renderers (tests/cli/test_startup.py checks they agree)."""


def _progress(when: str, err: TextIO) -> progress.Silent:
    """--progress: a live line when stderr is a terminal, plain lines when forced elsewhere."""
    from kubectl_gitdrift.cli import progress, terminal

    return progress.choose(when, err, terminal=terminal.is_terminal(err))


def _compare(request: Request, out: TextIO, err: TextIO) -> ExitCode:
    from kubectl_gitdrift.cli import terminal
    from kubectl_gitdrift.present import report

    output = request.output
    started = time.monotonic()
    result, targets, renderers, app_texts = _evaluate(request, err)
    _keep(result, targets, app_texts)
    if output.write_patch is not None:
        from kubectl_gitdrift.diagnose import remedies

        patches = "".join(remedies.patch(r.remedies) for r in result.applications)
        _write_atomically(output.write_patch, patches)
        _warn_left_out(output.write_patch, result, patches, err)
    if output.format == "openmetrics":
        from kubectl_gitdrift.cli import pushgateway
        from kubectl_gitdrift.present import metrics

        info = metrics.RunInfo(
            duration_seconds=time.monotonic() - started,
            last_success=time.time(),
            failed=[t.name for t in targets if t.error is not None],
        )
        text = metrics.render(result.applications, info)
        if output.pushgateway:
            registry = metrics.registry(result.applications, info)
            pushgateway.push(output.pushgateway, registry, shard=request.selection.shard or "")
    elif request.selection.all:
        text = _render_all(
            result,
            targets,
            output,
            renderers,
            terminal.palette(output.color, out),
            app_texts,
            width=terminal.text_width(out),
        )
    elif output.query:
        text = report.query(report.to_dict(result), output.query)
    elif output.format == "text" and _builtin(renderers, "text"):
        text = report.render_text(
            result,
            show_suppressed=output.show_suppressed,
            palette=terminal.palette(output.color, out),
            width=terminal.text_width(out),
        )
    elif output.format == "diff" and _builtin(renderers, "diff"):
        from kubectl_gitdrift.present import difftext

        text = difftext.render_diff(result, palette=terminal.palette(output.color, out))
    else:
        text = _render_plugin(result, output.format, renderers)
    out.write(text)
    if any(t.error is not None for t in targets):
        return ExitCode.ERROR
    if any(_incomplete(a) for a in result.applications):
        return ExitCode.INCOMPLETE
    return ExitCode.DRIFT if result.drifted and output.drift_fails else ExitCode.OK


def _evaluate(
    request: Request, err: TextIO
) -> tuple[model.Report, list[workflow.Target], Mapping[str, Any], list[str] | None]:
    """One comparison run: the report, the targets (with their errors), the output formats,
    and with `--all -o json` each app's part of the JSON report (report.app_json), written
    by the process that compared it.

    With --all, a big JSON snapshot read fast is proven read right while the compare runs
    (yamlio.load_documents' checks, done beside the forked workers): when it cannot be, the
    run starts again, reading the snapshot the checking way, which raises what is wrong with
    it or reads it as it is (yamlio.Unproven)."""
    from kubectl_gitdrift import yamlio

    if request.selection.all and request.cluster.snapshot is not None:
        try:
            return _evaluate_checking(request, err, [])
        except yamlio.Unproven:
            pass
    return _evaluate_checking(request, err, None)


def _rule_ids(names: Sequence[str], rules: Sequence[hookspecs.Rule]) -> tuple[str, ...]:
    """--disable-rule values as rule ids: an id (`builtin/manual-drift`), an id without its
    plugin's prefix (`manual-drift`), or a code a rule reports (the code the report prints
    disables the whole rule that reports it)."""
    import difflib

    by_name: dict[str, str] = {}
    for rule in rules:
        by_name.setdefault(rule.id, rule.id)
    for rule in rules:
        by_name.setdefault(rule.id.rsplit("/", 1)[-1], rule.id)
        for code in rule.codes:
            by_name.setdefault(code, rule.id)
    out: list[str] = []
    for name in names:
        found = by_name.get(name)
        if found is None:
            close = difflib.get_close_matches(name, list(by_name), n=1)
            raise UsageError(
                f"--disable-rule {name}: no such rule or code"
                + (f" (did you mean {close[0]}?)" if close else ""),
                hint="list rules and their codes with: kubectl gitdrift rules",
            )
        if found not in out:
            out.append(found)
    return tuple(out)


def _evaluate_checking(
    request: Request, err: TextIO, checks: list[Callable[[], None]] | None
) -> tuple[model.Report, list[workflow.Target], Mapping[str, Any], list[str] | None]:
    import dataclasses
    import tempfile

    from kubectl_gitdrift import engine, hookcalls, model
    from kubectl_gitdrift.diagnose import rbac
    from kubectl_gitdrift.live import auditlog as source_auditlog
    from kubectl_gitdrift.live import snapshot
    from kubectl_gitdrift.present import report
    from kubectl_gitdrift.run import workflow

    fmt = request.output.format
    snapshot_path, all_apps = request.cluster.snapshot, request.selection.all
    pm = _plugin_manager(request.plugins)
    renderers = hookcalls.collect_renderers(pm)
    if fmt not in renderers and fmt != "openmetrics":
        raise UsageError(
            f"-o {fmt}: unknown output format",
            hint="choose one of " + ", ".join(sorted(renderers)),
        )
    rules = hookcalls.collect_rules(pm)
    disabled = _rule_ids(request.diagnosis.disabled_rules, rules)
    request = dataclasses.replace(
        request, diagnosis=dataclasses.replace(request.diagnosis, disabled_rules=disabled)
    )
    _check_selection(request)
    workflow.check_source_flags(request.git)  # without --repo-root, repoURL is fetched
    progress = _progress(request.output.progress, err)
    try:
        controller = rbac.service_account_user(request.diagnosis.controller_sa)
    except ValueError as exc:
        raise UsageError(f"--controller-sa {exc}") from None
    audit_path = request.diagnosis.audit_log
    audit_log = source_auditlog.read(audit_path) if audit_path else None

    with (
        tempfile.TemporaryDirectory(prefix="gitdrift-") as workdir,
        _cyclic_gc_off(snapshot_path is not None),
        progress,  # the live line is gone before the report or an error is written
        _proven(checks) as prove,
    ):
        err = progress.stream  # warnings land above the live line
        if snapshot_path is not None:
            progress(f"reading {snapshot_path}")
            state = snapshot.load(snapshot_path, checks=checks)
            gc.freeze()  # the parsed snapshot lives all run: keep the cyclic GC off it
            bodies = workflow.select_offline(state, request.selection)
            settings = workflow.settings_of(state)
            targets = workflow.prepare(
                bodies,
                settings,
                request,
                Path(workdir),
                progress,
                configmaps=workflow.render_configmaps(state),
                kube_version=state.capture.kube_version if state.capture is not None else "",
                api_versions=workflow.cluster_api_versions(
                    state.capture.api_resources if state.capture is not None else ()
                ),
                defer_reads=all_apps,  # each comparing process reads its apps' renders
                repo_server=workflow.repo_server_of(state),
            )
            mode = "offline"
        else:
            from kubectl_gitdrift.run import gather

            state, targets = gather.gather_live(request, Path(workdir), progress, err)
            settings = workflow.settings_of(state)
            mode = "live"
        _warn_unreadable(state, err)
        if not all_apps:
            (target,) = targets
            if target.error is not None:
                raise target.error
        _keep(state)
        options = dataclasses.replace(
            workflow.options(state, request, rules), controller=controller
        )
        live_index = None
        if len(targets) > 1:
            progress(f"indexing {len(state.objects)} live objects")
            live_index = engine.LiveIndex.of(state.objects, settings)
            _keep(live_index)
        write = (
            report.app_json
            if all_apps and request.output.writes_json and _builtin(renderers, "json")
            else None
        )
        compared = workflow.run_all(
            targets,
            state,
            settings,
            pm,
            options,
            request,
            audit_log,
            live_index,
            progress,
            bodies=_reads_bodies(request.output, renderers),
            write=write,
            beside=prove,  # while the children compare: is the snapshot read right?
        )

    result = model.Report(applications=tuple(c.report for c in compared), mode=mode)
    # every app's text, when written (dumps_report_json checks that none is missing)
    app_texts = None if write is None else [c.text for c in compared if c.text is not None]
    return result, targets, renderers, app_texts


@contextlib.contextmanager
def _proven(checks: list[Callable[[], None]] | None) -> Iterator[Callable[[], None]]:
    """Runs what is left of a snapshot's deferred `checks` (yamlio.load_documents) when the
    block ends, by a return or by an error: a snapshot that is not what it seemed raises
    yamlio.Unproven over whatever went wrong reading it the fast way."""

    def prove() -> None:
        while checks:
            checks.pop(0)()

    try:
        yield prove
    except Exception:
        prove()
        raise
    prove()


def _reads_bodies(output: Output, renderers: Mapping[str, Any]) -> bool:
    """Whether the output may read the objects of resources without changes: a plugin's
    output format may; the built-in ones (and --query, OpenMetrics) never do."""
    if output.query or output.format == "openmetrics":
        return False
    return not _builtin(renderers, output.format)


def _builtin(renderers: Mapping[str, Any], fmt: str) -> bool:
    """Whether `-o fmt` is gitdrift's own format: a plugin may replace any built-in one (text,
    json, yaml, diff, markdown), and its renderer is then the one that writes the report."""
    return bool(renderers[fmt].plugin == _BUILTIN_RENDERERS)


@contextlib.contextmanager
def _cyclic_gc_off(active: bool) -> Iterator[None]:
    """Offline, a run makes millions of containers of plain JSON data and no reference cycles
    worth finding: the cyclic GC's passes were a third of a warm `--all` (same peak memory
    without them). Live mode keeps it (the HTTP client's asyncio objects do form cycles)."""
    enabled = gc.isenabled()
    if active:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _incomplete(app: model.AppReport) -> bool:
    """Something the app needs could not be read: a resource (Unknown), or context objects
    (events, RBAC, the tracking-label sweep) noted as "not checked: ..."."""
    from kubectl_gitdrift import model

    return app.sync_status is model.SyncStatus.UNKNOWN or any(
        note.startswith("not checked: ") for note in app.notes
    )


def _check_selection(request: Request) -> None:
    selection, names = request.selection, request.selection.names
    if selection.all and names:
        raise UsageError(f"give Application names or --all, not both (got {names[0]!r} and --all)")
    if not selection.all and not names:
        raise UsageError(
            "an Application name is required (or --all)",
            hint="list them with: kubectl get applications.argoproj.io -A",
        )
    if selection.all_namespaces and not selection.all:
        raise UsageError("-A/--all-namespaces only goes with --all")
    if selection.shard and not selection.all:
        raise UsageError("--shard only goes with --all")
    if request.output.pushgateway and request.output.format != "openmetrics":
        raise UsageError("--pushgateway only goes with -o openmetrics")


def _write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` through a temp file and a rename: never half-written."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"--write-patch {path}: cannot write: {exc.strerror}") from None


def _warn_left_out(path: Path, result: model.Report, patch: str, err: TextIO) -> None:
    """--write-patch is never silently partial: each drifted field its patch leaves out, with
    the reason (the reports' NOTES say it too). The patch is still written and the exit code
    is the usual one: what the patch holds is right, it is only not all of the fix."""
    from kubectl_gitdrift.diagnose import remedies

    for app in result.applications:
        left = remedies.left_out(app.remedies)
        if not left:
            continue
        err.write(
            f"warning: --write-patch {path} leaves out {len(left)} drifted field(s) of "
            f"{app.namespace}/{app.name}; after git apply it stays OutOfSync until they are "
            "fixed another way:\n"
        )
        err.writelines(f"  - {entry}\n" for entry in left)
    if not patch and result.drifted:
        err.write(f"warning: --write-patch {path}: the patch is empty: nothing to adopt into git\n")


def _warn_unreadable(state: clusterstate.ClusterState, err: TextIO) -> None:
    err.writelines(f"warning: {reason}\n" for _key, reason in state.unreadable)


def _render_plugin(result: model.Report, fmt: str, renderers: Mapping[str, Any]) -> str:
    """`-o fmt` by the plugin's renderer: collect_renderers hands it checked (a str, or a
    PluginError naming the plugin)."""
    return str(renderers[fmt].fn(result))


def _render_all(
    result: model.Report,
    targets: Sequence[workflow.Target],
    output: Output,
    renderers: Mapping[str, Any],
    palette: color.Palette | None = None,
    app_texts: Sequence[str] | None = None,
    *,
    width: int | None = None,
) -> str:
    """--all: one summary row per Application (text), or the full reports plus the skipped and
    failed ones (json/yaml/--query); `app_texts`: each app's JSON, written already. The text
    table's TOP FINDING is cut so that a row fits the terminal's `width` (None: not a
    terminal; cut at 90, the same in every pipe)."""
    from kubectl_gitdrift import model
    from kubectl_gitdrift.present import color, difftext, report

    palette = color.OFF if palette is None else palette
    by_name = {f"{a.namespace}/{a.name}": a for a in result.applications}
    if not output.query and not _builtin(renderers, output.format):
        return _render_plugin(result, output.format, renderers)
    if output.query or output.format in ("json", "yaml"):
        extra = {
            "skipped": [{"application": t.name, "reason": t.skipped} for t in targets if t.skipped],
            "errors": [
                {"application": t.name, "error": t.error.message, "hint": t.error.hint}
                for t in targets
                if t.error is not None
            ],
        }
        if app_texts is not None:  # --all -o json: each app written where it was compared
            return report.dumps_report_json(result, app_texts, extra)
        doc = {**report.to_dict(result), **extra}
        if output.query:
            return report.query(doc, output.query)
        if output.format == "json":
            return report.dumps_json(doc)
        import yaml

        return str(yaml.safe_dump(doc, sort_keys=True, default_flow_style=False))
    if output.format == "diff":
        return difftext.render_diff(result, palette=palette)
    if output.format != "text":
        return _render_plugin(result, output.format, renderers)
    from tabulate import tabulate

    rows: list[list[Any]] = []
    for target in sorted(targets, key=lambda t: t.name):
        app = by_name.get(target.name)
        if target.error is not None:
            rows.append([target.name, palette.status("Error"), "-", target.error.message])
        elif target.skipped:
            rows.append([target.name, palette.status("Skipped"), "-", target.skipped])
        elif app is not None:
            drifted = sum(1 for d in app.resources if d.not_in_sync)
            top = app.findings[0] if app.findings else None
            rows.append(
                [
                    target.name,
                    palette.status(app.sync_status.value),
                    drifted,
                    f"{top.code}: {top.message}" if top else "-",
                ]
            )
    headers = ["APPLICATION", "SYNC", "DRIFTED", "TOP FINDING"]
    room = 90 if width is None else max(20, width - _columns_before_last(rows, headers))
    rows = [[*row[:-1], _cut(str(row[-1]), room)] for row in rows]
    table = palette.header(tabulate(rows, headers=headers))
    summary = (
        f"{len(result.applications)} compared, "
        f"{sum(1 for a in result.applications if a.sync_status is not model.SyncStatus.SYNCED)}"
        f" not in sync, {sum(1 for t in targets if t.skipped)} skipped, "
        f"{sum(1 for t in targets if t.error is not None)} failed"
    )
    return f"{table}\n\n{summary}\n"


def _columns_before_last(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> int:
    """The columns tabulate's plain layout gives every column but the last (two spaces apart);
    colour codes take none."""
    from kubectl_gitdrift.present import color

    total = 0
    for i in range(len(headers) - 1):
        cells = [headers[i], *(color.strip(str(r[i])) for r in rows)]
        total += max(len(c) for c in cells) + 2
    return total


def _cut(text: str, width: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


# --------------------------------------------------------------------------- serve


def _serve(argv: list[str], out: TextIO, err: TextIO, prog: str, tuning: Tuning | None) -> ExitCode:
    """`serve`: compare on a timer and serve the last good result as OpenMetrics."""
    import dataclasses

    from kubectl_gitdrift.cli import requests, serve

    own, rest = parser.with_streams(parser.build_serve_parser(prog), out, err).parse_known_args(
        argv
    )
    args = parser.with_streams(parser.build_parser(f"{prog} serve"), out, err).parse_args(rest)
    request = requests.request_from(args, tuning=tuning)
    output = request.output
    if output.format not in ("text", "openmetrics") or output.query or output.write_patch:
        raise UsageError("serve always serves OpenMetrics: drop -o, --query and --write-patch")
    request = dataclasses.replace(request, output=dataclasses.replace(output, format="openmetrics"))
    _check_selection(request)
    if own.interval <= 0:
        raise UsageError(f"--interval {own.interval:g}: expected a number of seconds above 0")
    listen = serve.parse_listen(own.listen)

    def ready(address: tuple[str, int]) -> None:
        err.write(f"gitdrift serve: listening on http://{address[0]}:{address[1]}/metrics\n")
        err.flush()

    exporter = serve.Exporter(serve_runner(request, err), err)
    try:
        serve.serve(exporter, listen, own.interval, cycles=own.cycles, ready=ready)
    except OSError as exc:
        raise UsageError(f"--listen {own.listen}: cannot listen: {exc.strerror}") from None
    return ExitCode.OK


def serve_runner(request: Request, err: TextIO) -> serve.RunOnce:
    """One `serve` cycle: compare every app, keep the reports, and leave nothing behind.

    A one-shot run freezes what it loads out of the cyclic GC and never collects (it exits);
    a cycle that did the same would keep each run's cyclic garbage forever, so every cycle ends
    by unfreezing and collecting."""
    from kubectl_gitdrift.cli import serve

    def run_once() -> serve.Outcome:
        try:
            result, targets, _, _ = _evaluate(request, err)
        except GitDriftError as exc:
            return serve.Outcome((), (), ok=False, error=exc.message)
        except Exception as exc:  # noqa: BLE001 (one bad cycle must not end the exporter)
            return serve.Outcome((), (), ok=False, error=f"internal error: {exc!r}")
        finally:
            gc.unfreeze()
            gc.collect()
        failed = [t.name for t in targets if t.error is not None]
        return serve.Outcome(result.applications, failed, ok=True)

    return run_once


# --------------------------------------------------------------------------- live


STDOUT_FORMATS = {"-": "yaml", "yaml": "yaml", "json": "json"}
"""`snapshot -o` values that mean standard output, as kubectl users type them, and the format."""


def _snapshot(request: Request, out: TextIO, err: TextIO) -> ExitCode:
    import tempfile

    from kubectl_gitdrift.live import snapshot
    from kubectl_gitdrift.run import gather

    assert request.export is not None
    _check_selection(request)
    with (
        tempfile.TemporaryDirectory(prefix="gitdrift-") as workdir,
        _progress(request.output.progress, err) as shown,
    ):
        state, targets = gather.gather_live(request, Path(workdir), shown, shown.stream)
    for target in targets:
        if target.error is not None:
            err.write(f"warning: {target.name}: {target.error.message}\n")
    _warn_unreadable(state, err)
    to_stdout = STDOUT_FORMATS.get(str(request.export))
    if to_stdout is not None:
        out.write(snapshot.dumps(snapshot.to_document(state), as_json=to_stdout == "json"))
        out.flush()
        where = "standard output"
    else:
        snapshot.write(request.export, snapshot.to_document(state))
        where = str(request.export)
    err.write(
        f"wrote {where}: {len(state.applications)} Application(s), "
        f"{len(state.objects)} object(s) from {state.source.removeprefix('cluster ')}\n"
    )
    return ExitCode.INCOMPLETE if state.unreadable else ExitCode.OK


if __name__ == "__main__":  # pragma: no cover
    run()
