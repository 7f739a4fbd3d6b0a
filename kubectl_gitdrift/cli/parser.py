"""The command line's grammar: every flag and subcommand of `kubectl gitdrift`, declared once.

Used by cli.py to parse and by completion.py to complete; parsing writes help and errors to the
streams it is given.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from kubectl_gitdrift import __version__

if TYPE_CHECKING:
    from kubectl_gitdrift.sources import fetch

# rbac (the model) and settings are imported by build_parser, sources.fetch by repo_root
# when --repo-root is parsed: `version` and `completion bash` start without them.

SUBCOMMANDS = ("snapshot", "preview", "plugins", "rules", "version")


WHEN = ("auto", "always", "never")
"""The values of --progress and --color."""

BARE = {"--progress": "always", "--color": "always", "--exit-code": "true"}
"""Flags whose value is optional (`--color=never` or `--color never`); given bare, they mean
this value (so `--progress APP` still names the app)."""

VALUES = {"--progress": WHEN, "--color": WHEN, "--exit-code": ("true", "false")}
"""The values an optional-value flag takes: only these are read as its value when spaced."""


class Parser(argparse.ArgumentParser):
    """argparse writing help and errors to the streams main() was given, not sys.*."""

    out: TextIO | None = None
    err: TextIO | None = None

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if args is not None:
            args = attach_values(args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        """A usage error as kubectl prints one: the line that matters, a "did you mean" when a
        flag is misspelt, and where the usage is; not the whole usage first."""
        line = f"error: {message}"
        unknown = message.partition("unrecognized arguments: ")[2].split()
        flags = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
        for arg in unknown:
            close = difflib.get_close_matches(arg.split("=", 1)[0], flags, n=1, cutoff=0.6)
            if close:
                line += f" (did you mean {close[0]}?)"
                break
        self._print_message(f"{line}\nSee '{self.prog} --help' for usage.\n", sys.stderr)
        self.exit(2)

    def _print_message(self, message: str, file: Any = None) -> None:
        if not message:
            return
        stream = self.err if file is sys.stderr else self.out
        (stream or file or sys.stdout).write(message)


def attach_values(args: Sequence[str]) -> list[str]:
    """`--color never` and `--color=never` alike; bare `--color` means its BARE value (so
    `--progress APP` still names the app)."""
    out: list[str] = []
    items = list(args)
    i = 0
    while i < len(items):
        arg = items[i]
        if arg == "--":
            out.extend(items[i:])
            break
        if arg in BARE:
            nxt = items[i + 1] if i + 1 < len(items) else None
            if nxt in VALUES[arg]:
                out.append(f"{arg}={nxt}")
                i += 2
                continue
            arg = f"{arg}={BARE[arg]}"
        out.append(arg)
        i += 1
    return out


def duration(text: str) -> float:
    """A --request-timeout value as kubectl takes it: seconds (`30`), or a duration with a unit
    (`30s`, `1m`, `1m30s`, `500ms`, `1h`); 0 means no limit."""
    raw = text.strip()
    try:
        seconds = float(raw)
    except ValueError:
        parts = re.fullmatch(r"((?:\d+(?:\.\d+)?(?:ms|s|m|h))+)", raw)
        if parts is None:
            raise argparse.ArgumentTypeError(
                f"{text!r}: expected seconds or a duration such as 30s, 1m or 1m30s"
            ) from None
        unit = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
        seconds = sum(float(n) * unit[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", raw))
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a timeout cannot be negative")
    return seconds


def with_streams(parser: Parser, out: TextIO, err: TextIO) -> Parser:
    parser.out, parser.err = out, err
    return parser


def build_parser(prog: str = "kubectl gitdrift") -> Parser:
    from kubectl_gitdrift import settings
    from kubectl_gitdrift.diagnose import rbac

    parser = Parser(
        prog=prog,
        description=(
            "Explain why an Argo CD Application is OutOfSync: what differs between git and the "
            "cluster, who changed it, why Argo CD does not fix it, and how to fix it."
        ),
        epilog=(
            "exit codes: 0 no drift, 1 drift found, 2 usage error, 3 input error (snapshot, "
            "source, app), 4 plugin error, 5 internal error, 6 cluster error, 7 incomplete "
            "(some resources could not be read).\n"
            f"subcommands: {prog} snapshot|preview|serve|plugins|rules|version|completion (each "
            "has --help)"
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
    parser.add_argument(
        "--shard",
        metavar="K/N",
        help="with --all: only the apps of shard K of N (0 <= K < N), a stable split by "
        "namespace/name for N workers, e.g. --shard $(JOB_COMPLETION_INDEX)/4",
    )
    src = parser.add_argument_group("git side")
    src.add_argument(
        "--repo-root",
        metavar="DIR|URL=DIR",
        action="append",
        type=repo_root,
        help="a local clone to render from instead of fetching repoURL: DIR for every source, "
        "URL=DIR for the sources of that repository (repeatable)",
    )
    src.add_argument(
        "--offline",
        action="store_true",
        help="never fetch sources over the network: use --repo-root clones and what earlier "
        "runs fetched into the cache; a source that needs a fetch is an error (the commands of "
        "plugins run with --allow-plugins or --cmp are not gitdrift's: they may still use it)",
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
    src.add_argument(
        "--no-cache",
        action="store_true",
        help="render again instead of reading renders cached on disk "
        "($KUBECTL_GITDRIFT_CACHE_DIR, else $XDG_CACHE_HOME/kubectl-gitdrift)",
    )
    src.add_argument(
        "--allow-plugins",
        action="store_true",
        help="render config management plugin sources by running the plugins' own init/generate "
        "commands (from argocd-cmp-cm) on this machine",
    )
    src.add_argument(
        "--cmp",
        metavar="FILE",
        action="append",
        type=Path,
        default=[],
        help="a ConfigManagementPlugin definition (a sidecar's plugin.yaml) to render plugin "
        "sources with; its commands run on this machine (repeatable)",
    )
    src.add_argument(
        "--helm-version",
        choices=("3", "4"),
        help="render helm sources and kustomize helmCharts with this helm major (default: the "
        "one the cluster's Argo CD bundles, from argocd-cm's version label or the "
        "argocd-repo-server image: 3 before v3.5, 4 from it; else `helm`; "
        "$KUBECTL_GITDRIFT_HELM_VERSION)",
    )
    live = parser.add_argument_group("cluster side")
    offline_or_dry_run = live.add_mutually_exclusive_group()
    offline_or_dry_run.add_argument(
        "--snapshot",
        metavar="PATH",
        type=Path,
        help="offline: a kubectl get -o yaml List, multi-doc YAML/JSON, .gz, or a "
        "directory of them",
    )
    offline_or_dry_run.add_argument(
        "--server-dry-run",
        action="store_true",
        help="live only, opt-in: for apps Argo CD compares with Server-Side Diff, ask the API "
        "server what applying git would store, as Argo CD does (a server-side apply PATCH "
        "with dryRun=All, fieldManager=argocd-controller, force=true). Needs 'patch' "
        "permission on the app's kinds; persists nothing (dryRun=All). Default: read-only",
    )
    live.add_argument(
        "-n",
        "--app-namespace",
        metavar="NS",
        default=None,
        help="the namespace of the Application (default: argocd)",
    )
    cluster_flags(live)
    out = parser.add_argument_group("output")
    out.add_argument(
        "-o",
        "--output",
        default="text",
        metavar="FORMAT",
        help="text (default), json, yaml, diff (argocd app diff's layout), markdown "
        "(a post-mortem write-up), openmetrics (Prometheus metrics), or a plugin's format",
    )
    out.add_argument("--query", metavar="JMESPATH", help="print this JMESPath over the JSON report")
    out.add_argument(
        "--pushgateway",
        metavar="URL",
        help="with -o openmetrics: also push the metrics to this Prometheus Pushgateway "
        "(job=kubectl-gitdrift, shard=K with --shard)",
    )
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
        help="write a git-apply-able patch that adopts the live values into git; drifted "
        "fields it cannot adopt (Secret values, generated or templated values, ...) are listed "
        "with the reason on stderr and in NOTES, and the exit code is the usual one",
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
        help="skip this diagnosis rule: its id or a code it reports (repeatable; see 'rules')",
    )
    plug.add_argument(
        "--no-entry-points",
        action="store_true",
        help=f"skip installed plugins (or set {settings.AUTOLOAD_ENV}=1)",
    )
    progress_flag(out)
    out.add_argument(
        "--color",
        metavar="WHEN",
        choices=WHEN,
        default="auto",
        help="colour statuses, findings and diff lines: auto (default: when stdout is a "
        "terminal, unless NO_COLOR is set or TERM=dumb), always (bare --color), never; never "
        "in json, yaml, markdown or --query output",
    )
    out.add_argument(
        "--exit-code",
        metavar="BOOL",
        choices=VALUES["--exit-code"],
        default="true",
        help="exit 1 when drift is found (default true, as argocd app diff); false: exit 0 "
        "on drift, errors keep their codes",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def build_serve_parser(prog: str) -> Parser:
    """`serve`'s own flags; every other flag is the main command's (--all, --snapshot, ...)."""
    parser = Parser(
        prog=f"{prog} serve",
        description=(
            "Compare on a timer and serve drift as Prometheus metrics (OpenMetrics) on "
            "/metrics, liveness on /healthz. Takes the main command's flags too, e.g. "
            f"{prog} serve --all --interval 300 --listen 0.0.0.0:9765"
        ),
    )
    parser.add_argument(
        "--interval",
        metavar="SECONDS",
        type=float,
        default=300.0,
        help="seconds between runs (default 300); one run at a time",
    )
    parser.add_argument(
        "--listen",
        metavar="HOST:PORT",
        default="0.0.0.0:9765",
        help="where to serve /metrics and /healthz (default 0.0.0.0:9765)",
    )
    parser.add_argument("--cycles", type=int, default=0, help=argparse.SUPPRESS)
    return parser


def progress_flag(group: Any) -> None:
    group.add_argument(
        "--progress",
        metavar="WHEN",
        choices=WHEN,
        default="auto",
        help="progress on stderr: auto (default: one live line when stderr is a terminal), "
        "always (bare --progress; plain lines when not a terminal), never",
    )


def repo_root(text: str) -> fetch.RepoRoot:
    """A --repo-root value: DIR, or URL=DIR."""
    from kubectl_gitdrift.sources import fetch

    try:
        return fetch.parse_repo_root(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cluster_flags(group: Any) -> None:
    group.add_argument("--context", metavar="NAME", help="kubeconfig context (live mode)")
    group.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig file (live mode)")
    group.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="kubectl's cache directory: the API server's discovery is kept in DIR/discovery, "
        "shared with kubectl, for 6 hours (default $KUBECACHEDIR or ~/.kube/cache; live mode)",
    )
    group.add_argument(
        "--request-timeout",
        metavar="DURATION",
        type=duration,
        default=30.0,
        help="give up on one API request after this long: seconds or a duration such as 30s, "
        "1m (retried a few times; default 30s; 0: no limit)",
    )


def build_subparser(command: str, prog: str) -> Parser:
    parser = Parser(prog=f"{prog} {command}")
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
            help="where to write it (.yaml, .json, optionally .gz); - or yaml: YAML on standard "
            "output, json: JSON on standard output",
        )
        parser.add_argument(
            "--repo-root",
            metavar="DIR|URL=DIR",
            action="append",
            type=repo_root,
            help="a clone to render, so the objects git has but Argo CD does not track yet "
            "are captured too (repeatable, as in the main command)",
        )
        rev = parser.add_mutually_exclusive_group()
        rev.add_argument("--revision", metavar="REV")
        rev.add_argument("--local", action="store_true")
        parser.add_argument("-n", "--app-namespace", metavar="NS", default=None)
        cluster_flags(parser)
        progress_flag(parser)
    if command == "preview":
        preview_flags(parser)
    if command in ("plugins", "rules"):
        parser.add_argument("--plugin", metavar="PATH|MODULE", action="append", default=[])
        parser.add_argument("--disable-plugin", metavar="NAME", action="append", default=[])
        parser.add_argument("--no-entry-points", action="store_true")
        parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    if command == "plugins":
        parser.add_argument("--all", action="store_true", help="also list the built-in plugins")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    return parser


PREVIEW_FORMATS = ("text", "json", "markdown")
MAX_CHARS = 65536
"""--max-chars' default: GitHub's limit on one comment (present/preview.py's GITHUB_LIMIT)."""


def preview_flags(parser: Parser) -> None:
    """`preview`'s grammar: two revisions of one clone, and what to compare them against."""
    parser.description = (
        "Preview a change before it merges: every Application the repository defines at two "
        "revisions (literal manifests, app-of-apps children, ApplicationSets), the ones the "
        "change touches, the objects each adds, removes and changes, and with --live or "
        "--snapshot what syncing head would do to the cluster. Exit 0: nothing changes; 1: "
        "something does; above 1: an error."
    )
    parser.epilog = "docs/preview.md: the outputs, how apps are found, a GitHub Actions workflow"
    git = parser.add_argument_group("the change")
    git.add_argument(
        "--base",
        metavar="REV",
        help="the revision before the change (default: the merge base of head with the "
        "default branch)",
    )
    git.add_argument(
        "--head",
        metavar="REV",
        help="the revision after it (default: the work tree of --repo-root as it is, "
        "uncommitted changes included)",
    )
    git.add_argument(
        "--repo-root",
        metavar="DIR",
        type=Path,
        default=Path(),
        help="the clone the Applications and their sources are read from (default: the "
        "current directory)",
    )
    git.add_argument(
        "--all-apps",
        action="store_true",
        help="every Application found, touched by the change or not",
    )
    git.add_argument(
        "--offline",
        action="store_true",
        help="never fetch over the network (other repositories of multi-source apps, charts, "
        "remote bases: what earlier runs cached); a generator that needs a service is an error",
    )
    git.add_argument(
        "--allow-plugins",
        action="store_true",
        help="run config management plugins' commands (argocd-cmp-cm) and the ApplicationSet "
        "generators that need them, on this machine",
    )
    git.add_argument(
        "--no-cache",
        action="store_true",
        help="render both revisions again instead of reading renders cached on disk",
    )
    live = parser.add_argument_group("against the cluster (optional)")
    where = live.add_mutually_exclusive_group()
    where.add_argument(
        "--snapshot",
        metavar="FILE",
        type=Path,
        help="also compare head with this snapshot (kubectl gitdrift snapshot): what syncing "
        "head would change, overwrite and leave as it is",
    )
    where.add_argument(
        "--live",
        action="store_true",
        help="the same against the cluster of the current kube context (or --context, "
        "--kubeconfig); read-only",
    )
    cluster_flags(live)
    out = parser.add_argument_group("output")
    out.add_argument(
        "-o",
        "--output",
        choices=PREVIEW_FORMATS,
        default="text",
        help="text (default), json (docs/report-schema.md), markdown (a pull request comment)",
    )
    out.add_argument(
        "--split",
        action="store_true",
        help="with -o markdown: numbered parts, each under --max-chars, each one comment "
        "(each starts with a '<!-- kubectl-gitdrift preview: part K of N -->' line)",
    )
    out.add_argument(
        "--max-chars",
        metavar="N",
        type=int,
        default=None,
        help=f"with -o markdown: characters per comment (default {MAX_CHARS}, GitHub's limit); "
        "over it, whole app sections are left out (named in a note) or, with --split, go to "
        "the next part",
    )
    out.add_argument(
        "--color",
        metavar="WHEN",
        choices=WHEN,
        default="auto",
        help="colour the text output: auto (default: a terminal, unless NO_COLOR), always "
        "(bare --color), never",
    )
    progress_flag(out)
    plug = parser.add_argument_group("plugins")
    plug.add_argument("--plugin", metavar="PATH|MODULE", action="append", default=[])
    plug.add_argument("--disable-plugin", metavar="NAME", action="append", default=[])
    plug.add_argument("--no-entry-points", action="store_true", help="skip installed plugins")


# --------------------------------------------------------------------------- entry points
