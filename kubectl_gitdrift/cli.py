"""The command line: parses flags, gathers inputs at the edges, runs the engine, writes the
report. The only module that writes to stdout/stderr and picks the exit code."""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import datetime
import json
import secrets
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from kubectl_gitdrift import (
    __version__,
    application,
    attribution,
    audit,
    completion,
    rbac,
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
    tracking,
)
from kubectl_gitdrift.errors import (
    AppError,
    ClusterError,
    ExitCode,
    GitDriftError,
    PluginError,
    UsageError,
)
from kubectl_gitdrift.sources import auditlog as source_auditlog
from kubectl_gitdrift.sources import git as source_git
from kubectl_gitdrift.sources import locate as source_locate
from kubectl_gitdrift.sources import render as source_render

SUBCOMMANDS = ("snapshot", "plugins", "rules", "version")


class _Parser(argparse.ArgumentParser):
    """argparse writing help and errors to the streams main() was given, not sys.*."""

    out: TextIO | None = None
    err: TextIO | None = None

    def _print_message(self, message: str, file: Any = None) -> None:
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
            f"subcommands: {prog} snapshot|plugins|rules|version|completion (each has --help)"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("app", nargs="?", help="the Application's name, or NAMESPACE/NAME")
    parser.add_argument(
        "--all", action="store_true", help="every Application: one summary row each"
    )
    parser.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        help="with --all: Applications in every namespace (default: --app-namespace)",
    )
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
    _cluster_flags(live)
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
    diag = parser.add_argument_group("diagnosis and remediation")
    diag.add_argument(
        "--audit-log",
        metavar="FILE",
        help="kube audit log (JSON lines, plain or gzip, - for stdin): name who made each change",
    )
    diag.add_argument(
        "--controller-sa",
        metavar="NS:NAME",
        default=rbac.CONTROLLER,
        help="the Argo CD controller's service account, for the RBAC check "
        "(default: argocd:argocd-application-controller)",
    )
    diag.add_argument(
        "--write-patch",
        metavar="FILE",
        type=Path,
        help="write a git-apply-able patch that adopts the live values into git",
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
    out.add_argument(
        "--progress",
        action="store_true",
        help="report progress on stderr (default: only when stderr is a terminal)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def _cluster_flags(group: Any) -> None:
    group.add_argument("--context", metavar="NAME", help="kubeconfig context (live mode)")
    group.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig file (live mode)")
    group.add_argument(
        "--request-timeout",
        metavar="SECONDS",
        type=float,
        default=30.0,
        help="give up on one API request after this long (retried a few times; default 30)",
    )


def build_subparser(command: str, prog: str) -> _Parser:
    parser = _Parser(prog=f"{prog} {command}")
    if command == "snapshot":
        parser.description = (
            "Export what offline mode needs (a gitdrift/v1 Snapshot): the Applications, "
            "AppProjects, argocd-cm, the live objects they need (with managedFields), RBAC "
            "objects, OpenAPI merge keys. Secret values are stored as keyed fingerprints only."
        )
        parser.add_argument("apps", nargs="*", metavar="APP", help="NAME or NAMESPACE/NAME")
        parser.add_argument("--all", action="store_true", help="every Application")
        parser.add_argument("-A", "--all-namespaces", action="store_true")
        parser.add_argument(
            "-o",
            "--output",
            metavar="FILE",
            type=Path,
            required=True,
            help="where to write it (.yaml, .json, optionally .gz)",
        )
        parser.add_argument(
            "--repo-root",
            metavar="DIR",
            type=Path,
            help="a clone to render, so the objects git has but Argo CD does not track yet "
            "are captured too",
        )
        rev = parser.add_mutually_exclusive_group()
        rev.add_argument("--revision", metavar="REV")
        rev.add_argument("--local", action="store_true")
        parser.add_argument("--app-namespace", metavar="NS", default=None)
        _cluster_flags(parser)
        parser.add_argument("--progress", action="store_true")
    if command in ("plugins", "rules"):
        parser.add_argument("--plugin", metavar="PATH|MODULE", action="append", default=[])
        parser.add_argument("--disable-plugin", metavar="NAME", action="append", default=[])
        parser.add_argument("--no-entry-points", action="store_true")
        parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    if command == "plugins":
        parser.add_argument("--all", action="store_true", help="also list the built-in plugins")
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
    if argv and argv[0] == "completion":  # `completion bash|zsh`; `completion __complete ARGS`
        return ExitCode(completion.main(argv[1:], out, err, prog))
    if argv and argv[0] in SUBCOMMANDS:
        command, rest = argv[0], argv[1:]
        sub = _streams(build_subparser(command, prog), out, err).parse_args(rest)
        if command == "version":
            out.write(f"{prog} {__version__}\n")
            return ExitCode.OK
        if command == "snapshot":
            sub.command_snapshot = True
            return _snapshot(sub, out, err)
        pm = plugins.make_plugin_manager(
            paths=sub.plugin, entry_points=not sub.no_entry_points, blocked=sub.disable_plugin
        )
        if command == "plugins":
            return _plugins(pm, sub.output, out, include_builtins=sub.all)
        return _rules(pm, sub.output, out)
    args = _streams(build_parser(prog), out, err).parse_args(argv)
    return _compare(args, out, err)


def _plugins(
    pm: plugins.PluginManager, fmt: str, out: TextIO, *, include_builtins: bool = False
) -> ExitCode:
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

#: Overrides for cluster.Config (tests shorten backoffs and page sizes here).
CLUSTER_OPTIONS: dict[str, Any] = {}


@dataclass
class _Target:
    """One Application to compare: parsed, rendered, or why not."""

    body: model.Body
    name: str  # namespace/name
    app: model.Application | None = None
    rendered: source_render.Rendered | None = None
    error: GitDriftError | None = None
    skipped: str = ""


class _Progress:
    def __init__(self, err: TextIO, enabled: bool) -> None:
        self.err, self.enabled = err, enabled

    def __call__(self, message: str) -> None:
        if self.enabled:
            self.err.write(f"gitdrift: {message}\n")
            self.err.flush()


def _progress(args: argparse.Namespace, err: TextIO) -> _Progress:
    tty = bool(getattr(err, "isatty", lambda: False)())
    return _Progress(err, bool(args.progress) or tty)


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
    _check_selection(args, [args.app] if args.app else [])
    if args.repo_root is None:
        raise UsageError("--repo-root DIR is required: a local clone of the Application's repoURL")
    progress = _progress(args, err)
    try:
        controller = rbac.service_account_user(args.controller_sa)
    except ValueError as exc:
        raise UsageError(f"--controller-sa {exc}") from None
    audit_log = source_auditlog.read(args.audit_log) if args.audit_log else None

    with tempfile.TemporaryDirectory(prefix="gitdrift-") as workdir:
        if args.snapshot is not None:
            state = snapshot.load(args.snapshot)
            bodies = _select_offline(state, args, [args.app] if args.app else [])
            settings = application.parse_settings(state.argocd_cm)
            targets = _prepare(bodies, settings, args, Path(workdir), progress)
            mode = "offline"
        else:
            state, targets = _gather_live(
                args, [args.app] if args.app else [], Path(workdir), progress, err
            )
            settings = application.parse_settings(state.argocd_cm)
            mode = "live"
        _warn_unreadable(state, err)
        if not args.all:
            (target,) = targets
            if target.error is not None:
                raise target.error
        options = dataclasses.replace(_options(state, args, rules), controller=controller)
        reports = []
        for index, target in enumerate(targets, 1):
            if target.app is None or target.rendered is None:
                continue
            progress(f"comparing {index}/{len(targets)} {target.name}")
            reports.append(_run_one(target, state, settings, pm, options, args, audit_log))

    result = model.Report(applications=tuple(reports), mode=mode)
    if args.write_patch is not None:
        _write_atomically(args.write_patch, "".join(remedies.patch(r.remedies) for r in reports))
    if args.all:
        text = _render_all(result, targets, args, renderers)
    elif args.query:
        text = report.query(report.to_dict(result), args.query)
    elif args.output == "text":
        text = report.render_text(result, show_suppressed=args.show_suppressed)
    else:
        text = _render_plugin(result, args.output, renderers)
    out.write(text)
    if any(t.error is not None for t in targets):
        return ExitCode.ERROR
    if any(a.sync_status is model.SyncStatus.UNKNOWN for a in result.applications):
        return ExitCode.INCOMPLETE
    return ExitCode.DRIFT if result.drifted else ExitCode.OK


def _check_selection(args: argparse.Namespace, names: Sequence[str]) -> None:
    if args.all and names:
        raise UsageError(f"give Application names or --all, not both (got {names[0]!r} and --all)")
    if not args.all and not names:
        raise UsageError(
            "an Application name is required (or --all)",
            hint="list them with: kubectl get applications.argoproj.io -A",
        )
    if args.all_namespaces and not args.all:
        raise UsageError("-A/--all-namespaces only goes with --all")


def _split_name(text: str, args: argparse.Namespace) -> tuple[str | None, str]:
    namespace, _, name = text.rpartition("/")
    return (namespace or args.app_namespace or None), name


def _select_offline(
    state: snapshot.ClusterState, args: argparse.Namespace, names: Sequence[str]
) -> list[model.Body]:
    if args.all:
        namespace = None if args.all_namespaces else args.app_namespace
        return [
            b
            for b in state.applications
            if namespace is None or (b.get("metadata") or {}).get("namespace") == namespace
        ]
    bodies = []
    for text in names:
        namespace, name = _split_name(text, args)
        body = state.find_application(name, namespace or "argocd")
        if body is None and namespace is None:
            body = state.find_application(name, None)
        if body is None:
            known = ", ".join(state.application_names()) or "none"
            raise AppError(
                f"Application {namespace or 'argocd'}/{name} not found in {state.source}",
                hint=f"Applications there: {known}",
            )
        bodies.append(body)
    return bodies


def _prepare(
    bodies: Sequence[model.Body],
    settings: model.Settings,
    args: argparse.Namespace,
    workdir: Path,
    progress: _Progress,
) -> list[_Target]:
    """Parse and render every Application (concurrently, bounded); skip the ones whose
    repoURL is not the clone at --repo-root (with --all)."""
    targets = []
    for body in bodies:
        md = body.get("metadata") or {}
        targets.append(_Target(body, f"{md.get('namespace') or 'argocd'}/{md.get('name') or '?'}"))
    repo_root: Path | None = getattr(args, "repo_root", None)
    remotes = _clone_urls(repo_root) if repo_root is not None and args.all else set()

    def one(index: int, target: _Target) -> None:
        try:
            target.app = application.parse_application(target.body)
            if repo_root is None:
                return
            if remotes and not any(
                source_render._normalize_url(s.repo_url) in remotes
                for s in target.app.sources
                if not s.chart
            ):
                urls = ", ".join(sorted({s.repo_url for s in target.app.sources}))
                target.skipped = f"repoURL {urls} is not the clone at --repo-root"
                return
            progress(f"rendering {index}/{len(targets)} {target.name}")
            target.rendered = source_render.render(
                target.app,
                repo_root,
                revision=args.revision,
                local=args.local,
                workdir=workdir / f"{index:05d}",
            )
        except GitDriftError as exc:
            target.error = exc

    if len(targets) <= 1:
        for index, target in enumerate(targets, 1):
            one(index, target)
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=min(8, len(targets))) as pool:
            list(pool.map(one, range(1, len(targets) + 1), targets))
    return targets


def _clone_urls(repo_root: Path) -> set[str]:
    """The normalized remote URLs of the clone (empty when it has none: match everything)."""
    try:
        proc = source_git.run_git(repo_root, "remote", "-v", check=False)
    except GitDriftError:
        return set()
    urls = set()
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        fields = line.split()
        if len(fields) >= 2:
            urls.add(source_render._normalize_url(fields[1]))
    return urls


def _options(
    state: snapshot.ClusterState, args: argparse.Namespace, rules: Sequence[hookspecs.Rule]
) -> engine.Options:
    capture = state.capture
    builtin = (
        openapi.load_builtin_definitions(capture.kube_version)
        if capture is not None and capture.kube_version
        else openapi.load_builtin_definitions()
    )
    definitions: Any = builtin
    if capture is not None and capture.definitions:
        definitions = {**capture.definitions, **builtin}  # built-in types win; CRDs come from here
    plurals = None
    if capture is not None and capture.api_resources:
        plurals = {
            (str(r.get("apiVersion") or "").rpartition("/")[0], str(r.get("kind"))): str(
                r.get("name")
            )
            for r in capture.api_resources
        }
    return engine.Options(
        schema=schema.Schema(definitions),
        defaults=defaults.apply_defaults,
        scope=state.scope,
        plurals=plurals,
        disabled_rules=args.disable_rule,
        rules=rules,
    )


def _run_one(
    target: _Target,
    state: snapshot.ClusterState,
    settings: model.Settings,
    pm: plugins.PluginManager,
    options: engine.Options,
    args: argparse.Namespace,
    audit_log: audit.AuditLog | None = None,
) -> model.AppReport:
    app, rendered = target.app, target.rendered
    assert app is not None
    assert rendered is not None

    def locate(drift: model.Drift, change: model.Change) -> remedies.Location | None:
        manifest = model.Manifest(drift.key, drift.desired or {}, drift.origin)
        found = source_locate.locate(
            rendered.tree, rendered.source_path, manifest, change.path, change.desired
        )
        if found is None:
            return None
        return remedies.Location(found.file, found.line, found.how)

    inputs = engine.Inputs(
        app=app,
        settings=settings,
        desired=state.redact_desired(rendered.manifests),
        live=state.objects,
        revision=rendered.revision,
        source=f"{app.sources[0].repo_url} {rendered.source_path} @ {rendered.revision}",
        notes=_notes_for(app, rendered, state),
        unreadable=state.unreadable,
        audit_log=audit_log,
    )
    tree = rendered.tree.resolve()
    at = "HEAD" if rendered.revision == source_render.WORKING_TREE else rendered.revision

    def read_source(rel: str) -> str | None:
        path = (tree / rel).resolve()
        if not path.is_relative_to(tree) or not path.is_file():
            return None
        return path.read_text(encoding="utf-8")

    def history(rel: str) -> attribution.CommitRef | None:
        try:
            found = source_git.last_commit_touching(args.repo_root, at, rel)
        except GitDriftError:
            return None
        if found is None:
            return None
        return attribution.CommitRef(found.sha, found.author, found.date, found.subject)

    return engine.run(
        inputs,
        pm,
        dataclasses.replace(options, locate=locate, read_source=read_source, history=history),
    )


def _write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` through a temp file and a rename: never half-written."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"--write-patch {path}: cannot write: {exc.strerror}") from None


def _notes_for(
    app: model.Application, rendered: source_render.Rendered, state: snapshot.ClusterState
) -> list[str]:
    """The state's notes, and what could not be read in this app's namespaces (or cluster-wide)
    that is not one of its desired objects (those are reported as Unknown)."""
    namespaces = {app.dest_namespace, *(m.key.namespace for m in rendered.manifests)}
    desired = {(m.key.group, m.key.kind) for m in rendered.manifests}
    notes = list(state.notes)
    for key, reason in state.unreadable:
        if (key.group, key.kind) in desired:
            continue
        if not key.namespace or key.namespace in namespaces:
            notes.append(f"not checked: {reason}")
    return notes


def _warn_unreadable(state: snapshot.ClusterState, err: TextIO) -> None:
    err.writelines(f"warning: {reason}\n" for _key, reason in state.unreadable)


def _render_plugin(result: model.Report, fmt: str, renderers: Mapping[str, Any]) -> str:
    renderer = renderers[fmt]
    try:
        return str(renderer.fn(result))
    except GitDriftError:
        raise
    except Exception as exc:
        raise PluginError(
            f"output format {fmt!r} of plugin {renderer.plugin!r} failed: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def _render_all(
    result: model.Report,
    targets: Sequence[_Target],
    args: argparse.Namespace,
    renderers: Mapping[str, Any],
) -> str:
    """--all: one summary row per Application (text), or the full reports plus the skipped and
    failed ones (json/yaml/--query)."""
    by_name = {f"{a.namespace}/{a.name}": a for a in result.applications}
    if args.query or args.output in ("json", "yaml"):
        doc = report.to_dict(result)
        doc["skipped"] = [
            {"application": t.name, "reason": t.skipped} for t in targets if t.skipped
        ]
        doc["errors"] = [
            {"application": t.name, "error": t.error.message, "hint": t.error.hint}
            for t in targets
            if t.error is not None
        ]
        if args.query:
            return report.query(doc, args.query)
        if args.output == "json":
            return json.dumps(doc, indent=2, sort_keys=True) + "\n"
        return str(yaml.safe_dump(doc, sort_keys=True, default_flow_style=False))
    if args.output != "text":
        return _render_plugin(result, args.output, renderers)
    from tabulate import tabulate

    rows: list[list[Any]] = []
    for target in sorted(targets, key=lambda t: t.name):
        app = by_name.get(target.name)
        if target.error is not None:
            rows.append([target.name, "Error", "-", _cut(target.error.message)])
        elif target.skipped:
            rows.append([target.name, "Skipped", "-", _cut(target.skipped)])
        elif app is not None:
            drifted = sum(
                1
                for d in app.resources
                if d.counts
                and d.status
                in (
                    model.ResourceStatus.OUT_OF_SYNC,
                    model.ResourceStatus.MISSING,
                    model.ResourceStatus.EXTRANEOUS,
                    model.ResourceStatus.UNKNOWN,
                )
            )
            top = app.findings[0] if app.findings else None
            rows.append(
                [
                    target.name,
                    app.sync_status.value,
                    drifted,
                    _cut(f"{top.code}: {top.message}") if top else "-",
                ]
            )
    table = tabulate(rows, headers=["APPLICATION", "SYNC", "DRIFTED", "TOP FINDING"])
    summary = (
        f"{len(result.applications)} compared, "
        f"{sum(1 for a in result.applications if a.sync_status is not model.SyncStatus.SYNCED)}"
        f" not in sync, {sum(1 for t in targets if t.skipped)} skipped, "
        f"{sum(1 for t in targets if t.error is not None)} failed"
    )
    return f"{table}\n\n{summary}\n"


def _cut(text: str, width: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


# --------------------------------------------------------------------------- live


def _gather_live(
    args: argparse.Namespace,
    names: Sequence[str],
    workdir: Path,
    progress: _Progress,
    err: TextIO,
) -> tuple[snapshot.ClusterState, list[_Target]]:
    """Read Argo CD's objects, render, then LIST what the apps need, once, concurrently."""
    from kubectl_gitdrift import cluster  # imports kr8s: only live runs pay for it

    config = cluster.Config(
        kubeconfig=args.kubeconfig,
        context=args.context,
        timeout=args.request_timeout,
        **CLUSTER_OPTIONS,
    )
    with cluster.Cluster(config) as kc:
        progress(f"connected to {kc.where}")
        bodies, argocd_docs, unreadable, notes = _live_argocd(kc, args, names)
        settings = application.parse_settings(
            next((d for d in argocd_docs if application.is_argocd_cm(d)), None)
        )
        targets = _prepare(bodies, settings, args, workdir, progress)
        if not args.all and targets and targets[0].error is not None:
            raise targets[0].error
        wants, namespaces = _wants(targets, kc.discovery)
        label = (
            settings.instance_label_key
            if settings.tracking_method is not model.TrackingMethod.ANNOTATION
            else ""
        )
        queries, not_served = cluster.plan(kc.discovery, wants, namespaces, tracking_label=label)
        notes.extend(not_served)
        progress(f"listing {len(queries)} kind/namespace pairs")
        results = kc.fetch(queries)
        docs: dict[model.ObjectKey, model.Body] = {}
        for body in [*bodies, *argocd_docs]:
            docs[model.ObjectKey.of(body)] = body
        for res in results:
            if res.error:
                if res.query.label_selector:  # the tracked-label sweep is best effort
                    notes.append(f"not checked: {res.error}")
                    continue
                unreadable.append(
                    (
                        model.ObjectKey(res.query.kind.group, res.query.kind.kind,
                                        res.query.namespace, ""),
                        res.error,
                    )
                )  # fmt: skip
                continue
            if res.not_found:
                notes.append(f"{res.query.describe()}: not found (404), counted as empty")
            for item in res.items:
                docs.setdefault(model.ObjectKey.of(item), item)
        involved = {
            (k.group, k.version, k.kind)
            for k in (kc.discovery.find(g, kd, v) for g, v, kd, _ns in wants)
            if k is not None
        }
        definitions, openapi_notes = _live_definitions(
            kc, involved, export=getattr(args, "command_snapshot", False)
        )
        err.writelines(f"note: {n}\n" for n in openapi_notes)  # about the tool, not the app
        capture = snapshot.Capture(
            context=kc.context,
            server=kc.server,
            server_version=kc.version,
            captured_at=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            api_resources=tuple(k.to_dict() for k in kc.discovery.kinds() if _used(k, wants)),
            definitions=definitions,
            fingerprint_key=secrets.token_bytes(32),
        )
        state = snapshot.from_live(
            docs.values(),
            f"cluster {kc.where}",
            capture=capture,
            unreadable=unreadable,
            notes=sorted(set(notes)),
        )
    return state, targets


def _used(kind: Any, wants: Iterable[tuple[str, str, str, str]]) -> bool:
    return any((kind.group, kind.kind) == (g, k) for g, _v, k, _ns in wants)


def _live_argocd(
    kc: Any, args: argparse.Namespace, names: Sequence[str]
) -> tuple[list[model.Body], list[model.Body], list[tuple[model.ObjectKey, str]], list[str]]:
    """The Applications asked for, argocd-cm and the AppProjects (by LIST)."""
    from kubectl_gitdrift import cluster

    app_kind = kc.discovery.find("argoproj.io", "Application")
    if app_kind is None:
        raise ClusterError(
            f"{kc.where} serves no applications.argoproj.io",
            hint="is Argo CD installed in this cluster? check: kubectl api-resources "
            "--api-group argoproj.io",
        )
    controller_ns = args.app_namespace or "argocd"
    queries: list[Any] = []
    if args.all:
        queries.append(cluster.Query(app_kind, "" if args.all_namespaces else controller_ns))
    else:
        for text in names:
            namespace, name = _split_name(text, args)
            queries.append(
                cluster.Query(
                    app_kind, namespace or "argocd", field_selector=f"metadata.name={name}"
                )
            )
    cm_kind = kc.discovery.find("", "ConfigMap")
    project_kind = kc.discovery.find("argoproj.io", "AppProject")
    extra = []
    if cm_kind is not None:
        extra.append(
            cluster.Query(cm_kind, controller_ns, field_selector="metadata.name=argocd-cm")
        )
    if project_kind is not None:
        extra.append(cluster.Query(project_kind, controller_ns))
    results = kc.fetch([*queries, *extra])
    bodies: list[model.Body] = []
    for res in results[: len(queries)]:
        if res.error:
            raise ClusterError(
                f"{kc.where}: {res.error}",
                hint="gitdrift needs get/list on applications.argoproj.io: "
                "kubectl auth can-i list applications.argoproj.io -n "
                + (res.query.namespace or "<namespace>"),
            )
        bodies.extend(res.items)
    if not args.all:
        for text, res in zip(names, results[: len(queries)], strict=True):
            if not res.items:
                namespace, name = _split_name(text, args)
                (others,) = kc.fetch([cluster.Query(app_kind, namespace or "argocd")])
                known = ", ".join(
                    sorted(
                        f"{(b.get('metadata') or {}).get('namespace')}/"
                        f"{(b.get('metadata') or {}).get('name')}"
                        for b in others.items
                    )
                )
                raise AppError(
                    f"Application {namespace or 'argocd'}/{name} not found in {kc.where}",
                    hint=f"Applications there: {known or 'none'}",
                )
    bodies.sort(key=model.ObjectKey.of)
    argocd_docs: list[model.Body] = []
    unreadable: list[tuple[model.ObjectKey, str]] = []
    notes: list[str] = []
    for res in results[len(queries) :]:
        if res.error:
            unreadable.append(
                (model.ObjectKey(res.query.kind.group, res.query.kind.kind, controller_ns, ""),
                 res.error)
            )  # fmt: skip
            if res.query.kind.kind == "ConfigMap":
                notes.append("argocd-cm could not be read: Argo CD's default settings are assumed")
            continue
        argocd_docs.extend(res.items)
    return bodies, argocd_docs, unreadable, notes


def _wants(
    targets: Sequence[_Target], discovery: Any
) -> tuple[list[tuple[str, str, str, str]], list[str]]:
    """(group, version, kind, namespace) the apps need listed: what git renders and what Argo
    CD says each app tracks (status.resources); and the namespaces involved."""
    wants: set[tuple[str, str, str, str]] = set()
    namespaces: set[str] = set()
    for target in targets:
        app = target.app
        if app is None or target.skipped:
            continue
        for m in target.rendered.manifests if target.rendered else ():
            version = str(m.body.get("apiVersion") or "").rpartition("/")[2]
            namespaced = discovery.namespaced(m.key.group, m.key.kind)
            if namespaced is None:
                namespaced = tracking.default_scope(m.key.group, m.key.kind)
            namespace = (m.key.namespace or app.dest_namespace) if namespaced else ""
            wants.add((m.key.group, version, m.key.kind, namespace))
        status = target.body.get("status") or {}
        for res in status.get("resources") or ():
            if isinstance(res, Mapping) and res.get("kind"):
                wants.add(
                    (
                        str(res.get("group") or ""),
                        str(res.get("version") or ""),
                        str(res["kind"]),
                        str(res.get("namespace") or ""),
                    )
                )
        namespaces.add(app.dest_namespace)
    namespaces.update(ns for _g, _v, _k, ns in wants)
    namespaces.discard("")
    return sorted(wants), sorted(namespaces)


def _live_definitions(
    kc: Any, involved: set[tuple[str, str, str]], *, export: bool
) -> tuple[dict[str, Any], list[str]]:
    """OpenAPI definitions from the cluster, reduced to the kinds involved: for a comparison
    only the kinds the built-in schemas lack (CRDs); for an export every kind involved."""
    builtin = snapshot.group_version_kinds(openapi.load_builtin_definitions(_kube(kc)))
    kinds = involved if export else {gvk for gvk in involved if gvk not in builtin}
    if not kinds:
        return {}, []
    docs, notes = kc.openapi({f"{g}/{v}" if g else v for g, v, _k in kinds})
    definitions: dict[str, Any] = {}
    for gv in sorted(docs):
        try:
            definitions.update(openapi.definitions_from_openapi_v3(docs[gv]))
        except GitDriftError as exc:
            notes.append(f"OpenAPI v3 document for {gv} not usable: {exc.message}")
    return snapshot.reduce_definitions(definitions, kinds), notes


def _kube(kc: Any) -> str:
    return str(kc.version.get("gitVersion") or "1.33")


# --------------------------------------------------------------------------- snapshot


def _snapshot(sub: argparse.Namespace, out: TextIO, err: TextIO) -> ExitCode:
    _check_selection(sub, sub.apps)
    progress = _progress(sub, err)
    with tempfile.TemporaryDirectory(prefix="gitdrift-") as workdir:
        state, targets = _gather_live(sub, sub.apps, Path(workdir), progress, err)
    for target in targets:
        if target.error is not None:
            err.write(f"warning: {target.name}: {target.error.message}\n")
    _warn_unreadable(state, err)
    snapshot.write(sub.output, snapshot.to_document(state))
    err.write(
        f"wrote {sub.output}: {len(state.applications)} Application(s), "
        f"{len(state.objects)} object(s) from {state.source.removeprefix('cluster ')}\n"
    )
    return ExitCode.INCOMPLETE if state.unreadable else ExitCode.OK


if __name__ == "__main__":  # pragma: no cover
    run()
