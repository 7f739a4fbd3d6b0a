"""What one run was asked to do: the flags, parsed once by the CLI, as named groups of values.

The CLI builds a `Request` (cli/requests.py) and hands it down; workflow.py, gather.py and the
`serve` loop read it and never the command line's namespace. Values are kept as given: a flag
whose value can be wrong (`--shard 3/2`) is checked where it is used, with the message it
always had. The environment's knobs travel along as the run's `Settings` (settings.py), and
what neither flags nor the environment set, but tests and benchmarks shorten, as its `Tuning`.
kopf's configuration module is the model: a frozen object per concern.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from kubectl_gitdrift.diagnose import rbac
from kubectl_gitdrift.settings import Settings

if TYPE_CHECKING:  # sources.fetch (subprocess, the render modules) only when a run renders
    from kubectl_gitdrift.sources.fetch import RepoRoot

WARM_SAMPLE = 8
"""prepare(defer_reads=True) looks up this many apps' renders itself; all of them cached, it
leaves the rest to the comparing processes (any not cached is made there, one at a time per
process); one not cached, it looks up all and makes the missing ones in parallel first."""


@dataclass(frozen=True, slots=True)
class Selection:
    """Which Applications: names as given (NAME or NAMESPACE/NAME), or every one (--all)."""

    names: tuple[str, ...] = ()
    all: bool = False
    all_namespaces: bool = False  # -A, with --all
    namespace: str | None = None  # -n/--app-namespace (None: argocd, or the name's own)
    shard: str | None = None  # --shard K/N as given (run/shard.py parses it)


@dataclass(frozen=True, slots=True)
class GitSide:
    """Where the desired state comes from, and what rendering it may do."""

    repo_roots: tuple[RepoRoot, ...] = ()
    revision: str | None = None  # None: the one Argo CD last compared
    local: bool = False  # the working tree of --repo-root as it is
    offline: bool = False  # never fetch over the network
    cache: bool = True  # False: --no-cache (render again, write nothing to the cache)
    allow_plugins: bool = False
    cmp_files: tuple[Path, ...] = ()

    @property
    def plain_root(self) -> Path | None:
        """The clone of a plain `--repo-root DIR` (for every source), if one was given."""
        return next((r.path for r in self.repo_roots if r.url is None), None)


@dataclass(frozen=True, slots=True)
class ClusterSide:
    """Where the live state comes from: a snapshot file (offline), or a cluster."""

    snapshot: Path | None = None
    kubeconfig: str | None = None
    context: str | None = None
    cache_dir: str | None = None  # --cache-dir: kubectl's (discovery); None: its default
    request_timeout: float = 30.0  # seconds per API request
    server_dry_run: bool = False


@dataclass(frozen=True, slots=True)
class Output:
    """What is written, and how it looks."""

    format: str = "text"  # -o: text, json, yaml, diff, markdown, openmetrics, or a plugin's
    query: str | None = None  # --query JMESPATH over the JSON report
    pushgateway: str | None = None
    show_suppressed: bool = False
    write_patch: Path | None = None
    color: str = "auto"  # parser.WHEN
    progress: str = "auto"  # parser.WHEN
    drift_fails: bool = True  # --exit-code: drift exits 1 (false: 0, as argocd app diff)

    @property
    def writes_json(self) -> bool:
        """The output is the built-in JSON report (-o json, no --query): with --all, each
        app's part is written by the process that compared it."""
        return self.format == "json" and not self.query

    @property
    def text_report(self) -> bool:
        """The output is the built-in text report (the table module will be needed)."""
        return self.format == "text" and not self.query


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """What the diagnosis reads beyond the two states, and which rules it skips."""

    audit_log: str | None = None  # FILE, or - for stdin
    controller_sa: str = rbac.CONTROLLER  # --controller-sa as given (NS:NAME or a user)
    disabled_rules: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PluginChoice:
    """Which plugins a run loads (plugins.make_plugin_manager)."""

    paths: tuple[str, ...] = ()  # --plugin PATH|MODULE, in order
    blocked: tuple[str, ...] = ()  # --disable-plugin NAME
    entry_points: bool = True  # False: --no-entry-points, or autoload disabled by the environment


@dataclass(frozen=True, slots=True)
class Change:
    """`preview`: the two revisions compared, and which apps."""

    base: str | None = None  # --base REV; None: the merge base of head with the default branch
    head: str | None = None  # --head REV; None: the work tree of --repo-root as it is
    all_apps: bool = False  # --all-apps: every app found, touched by the change or not
    live: bool = False  # compare head with the cluster too (a context, or --snapshot)


def _no_overrides() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Tuning:
    """What neither flags nor the environment set: fixed by design, shortened by tests and
    benchmarks (a retry that waits 10 ms, a page of 2 objects, a warm sample of 1 app)."""

    cluster: Mapping[str, Any] = field(default_factory=_no_overrides)
    """Overrides of live.transport.Config's fields (backoff, max_backoff, retries,
    max_retry_after, page_size, concurrency)."""
    warm_sample: int = WARM_SAMPLE


@dataclass(frozen=True, slots=True)
class Request:
    """One run: a comparison (`kubectl gitdrift APP`, `--all`, a `serve` cycle) or an export
    (`snapshot -o FILE`)."""

    selection: Selection = field(default_factory=Selection)
    git: GitSide = field(default_factory=GitSide)
    cluster: ClusterSide = field(default_factory=ClusterSide)
    output: Output = field(default_factory=Output)
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    plugins: PluginChoice = field(default_factory=PluginChoice)
    change: Change | None = None
    """`preview`: the run renders two revisions and compares them (run/preview.py)."""
    export: Path | None = None
    """`snapshot -o FILE`: the run exports what offline mode needs instead of comparing (it
    renders only with --repo-root, and keeps the OpenAPI definitions of every kind)."""
    settings: Settings = field(default_factory=Settings)
    tuning: Tuning = field(default_factory=Tuning)

    def context_flags(self) -> tuple[str, ...]:
        """The flags that say where this run's state came from (--snapshot, --repo-root,
        --kubeconfig, --context), as the gitdrift commands a report suggests must repeat them
        to see the same app (which they name as NAMESPACE/NAME when -n mattered)."""
        out: list[str] = []
        if self.cluster.snapshot is not None:
            out += ["--snapshot", str(self.cluster.snapshot)]
        for root in self.git.repo_roots:
            out += ["--repo-root", f"{root.url}={root.path}" if root.url else str(root.path)]
        if self.cluster.snapshot is None:
            if self.cluster.kubeconfig:
                out += ["--kubeconfig", self.cluster.kubeconfig]
            if self.cluster.context:
                out += ["--context", self.cluster.context]
        return tuple(out)
