"""The run is handed one Request (run/request.py), never the command line's namespace: the CLI
builds it once (cli/requests.py), and workflow.py, gather.py and serve.py read named fields.
Proven twice: by reading those modules (no argparse, no `args.X`), and by running the CLI with
every function of theirs checking what it is given."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kubectl_gitdrift import settings
from kubectl_gitdrift.cli import parser, requests, serve
from kubectl_gitdrift.diagnose import rbac
from kubectl_gitdrift.errors import ExitCode
from kubectl_gitdrift.run import gather, workflow
from kubectl_gitdrift.run.request import (
    ClusterSide,
    Diagnosis,
    GitSide,
    Output,
    PluginChoice,
    Request,
    Selection,
    Tuning,
)
from kubectl_gitdrift.sources.fetch import RepoRoot
from tests.conftest import FAST_RETRIES, ROOT, TESTDATA, Runner
from tests.live.test_live import incident_objects
from tests.support.apiserver import (
    ServerFactory,
    kube_apiserver,  # noqa: F401 - the fixture
)

INCIDENT = TESTDATA / "incident"
PACKAGE = ROOT / "kubectl_gitdrift"
HANDED_THE_REQUEST = (workflow, gather, serve)
"""The modules below the CLI that once read the argparse namespace."""
NO_ENV = settings.Settings.from_environ({})


# --------------------------------------------------------------------------- statically


@pytest.mark.parametrize(
    "path",
    ["run/workflow.py", "run/gather.py", "cli/serve.py", "run/request.py"],
)
def test_the_run_never_names_argparse_or_reads_args(path: str) -> None:
    tree = ast.parse((PACKAGE / path).read_text(encoding="utf-8"))
    imported = [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    ] + [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert [m for m in imported if m.split(".")[0] == "argparse"] == []
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    attributes = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert "argparse" not in names
    assert "Namespace" not in names | attributes
    reads = [
        f"line {n.lineno}: args.{n.attr}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "args"
    ]
    assert reads == []


def test_no_option_globals_are_left_for_tests_to_patch() -> None:
    """What tests shortened by patching module globals is the run's Tuning; the workers knob
    is the run's Settings."""
    assert not hasattr(gather, "CLUSTER_OPTIONS")
    assert not hasattr(workflow, "WARM_SAMPLE")
    assert not hasattr(workflow, "max_workers")
    assert not hasattr(workflow, "WORKERS_ENV")
    from kubectl_gitdrift import plugins

    assert not hasattr(plugins, "autoload_disabled")
    assert not hasattr(plugins, "AUTOLOAD_ENV")


# --------------------------------------------------------------------------- dynamically


@dataclasses.dataclass
class Calls:
    """The functions of HANDED_THE_REQUEST called during a run, by qualified name."""

    names: list[str] = dataclasses.field(default_factory=list)


def _checked(module: ModuleType, fn: Callable[..., Any], calls: Calls) -> Callable[..., Any]:
    name = f"{module.__name__.rsplit('.', 1)[1]}.{fn.__name__}"

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = [*args, *kwargs.values()]
        assert not any(isinstance(a, argparse.Namespace) for a in given), (
            f"{name} was handed the command line's namespace"
        )
        calls.names.append(name)
        return fn(*args, **kwargs)

    return wrapper


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """Every function defined in workflow.py, gather.py and serve.py, wrapped to fail a run
    that hands one an argparse.Namespace (the module's own calls go through the wrapper too:
    they look the name up in the module)."""
    seen = Calls()
    for module in HANDED_THE_REQUEST:
        for attr, value in vars(module).items():
            if inspect.isfunction(value) and value.__module__ == module.__name__:
                monkeypatch.setattr(module, attr, _checked(module, value, seen))
    return seen


@pytest.fixture
def repo(build_repo: Callable[[Path], Path]) -> Path:
    return Path(build_repo(INCIDENT / "repo-src"))


def _offline(repo: Path, *extra: str) -> list[str]:
    snapshot = str(INCIDENT / "snapshot.yaml")
    return ["--snapshot", snapshot, "--repo-root", str(repo), "--no-entry-points", *extra]


def test_an_offline_run_hands_the_run_no_namespace(
    run_cli: Runner, repo: Path, calls: Calls
) -> None:
    one = run_cli(["guestbook", *_offline(repo, "-o", "json")])
    assert one.exit_code == ExitCode.DRIFT, one.stderr
    every = run_cli(["--all", *_offline(repo)])
    assert every.exit_code == ExitCode.DRIFT, every.stderr
    assert {"workflow.select_offline", "workflow.prepare", "workflow.run_all"} <= set(calls.names)


def test_a_serve_cycle_hands_the_run_no_namespace(
    run_cli: Runner, repo: Path, calls: Calls
) -> None:
    result = run_cli(
        ["serve", "--all", *_offline(repo), "--listen", "127.0.0.1:0", "--cycles", "1"]
    )
    assert result.exit_code == ExitCode.OK, result.stderr
    assert "listening on http://127.0.0.1:" in result.stderr
    assert {"serve.parse_listen", "serve.serve", "workflow.run_all"} <= set(calls.names)


@pytest.mark.cluster
def test_a_live_run_and_an_export_hand_the_run_no_namespace(
    kube_apiserver: ServerFactory,  # noqa: F811
    run_cli: Runner,
    repo: Path,
    calls: Calls,
    tmp_path: Path,
) -> None:
    run_cli = run_cli.tuned(**FAST_RETRIES)
    server = kube_apiserver(incident_objects())
    cluster = ["--kubeconfig", str(server.kubeconfig_path), "--context", server.context]
    live = run_cli(["guestbook", *cluster, "--repo-root", str(repo), "--no-entry-points"])
    assert live.exit_code == ExitCode.DRIFT, live.stderr
    export = tmp_path / "export.yaml"
    snap = run_cli(["snapshot", "guestbook", "-o", str(export), *cluster])
    assert snap.exit_code == ExitCode.OK, snap.stderr
    assert {"gather.gather_live", "workflow.prepare"} <= set(calls.names)


# --------------------------------------------------------------------------- request_from


def _main(*argv: str) -> argparse.Namespace:
    return parser.build_parser().parse_args(list(argv))


def test_an_app_with_the_defaults() -> None:
    request = requests.request_from(_main("guestbook"), settings=NO_ENV)
    assert request == Request(selection=Selection(names=("guestbook",)), settings=NO_ENV)
    assert request.diagnosis.controller_sa == rbac.CONTROLLER
    assert request.git.cache
    assert request.plugins.entry_points
    assert request.export is None


def test_the_selection_and_the_git_side(tmp_path: Path) -> None:
    args = _main(
        "--all", "-A", "--shard", "1/4", "-n", "team",
        "--repo-root", str(tmp_path), "--repo-root", f"https://git.example/a.git={tmp_path}",
        "--revision", "main", "--no-cache", "--offline", "--allow-plugins",
        "--cmp", "a.yaml", "--cmp", "b.yaml",
    )  # fmt: skip
    request = requests.request_from(args, settings=NO_ENV)
    assert request.selection == Selection(
        names=(), all=True, all_namespaces=True, namespace="team", shard="1/4"
    )
    assert request.git == GitSide(
        repo_roots=(RepoRoot(tmp_path), RepoRoot(tmp_path, "https://git.example/a.git")),
        revision="main",
        local=False,
        offline=True,
        cache=False,
        allow_plugins=True,
        cmp_files=(Path("a.yaml"), Path("b.yaml")),
    )
    assert request.git.plain_root == tmp_path


def test_the_cluster_side_output_diagnosis_and_plugins() -> None:
    args = _main(
        "team/app", "--snapshot", "s.yaml", "-o", "json", "--query", "applications",
        "--write-patch", "p.diff", "--pushgateway", "http://pg:9091", "--show-suppressed",
        "--color=never", "--progress=always", "--audit-log", "-", "--controller-sa", "ops:ctl",
        "--disable-rule", "builtin/x", "--plugin", "p.py", "--plugin", "team.rules",
        "--disable-plugin", "noisy", "--no-entry-points", "--context", "kind",
        "--kubeconfig", "kc.yaml", "--request-timeout", "5",
    )  # fmt: skip
    tuning = Tuning(warm_sample=2)
    request = requests.request_from(args, settings=NO_ENV, tuning=tuning)
    assert request.selection.names == ("team/app",)
    assert request.cluster == ClusterSide(
        snapshot=Path("s.yaml"), kubeconfig="kc.yaml", context="kind", request_timeout=5.0
    )
    assert request.output == Output(
        format="json",
        query="applications",
        pushgateway="http://pg:9091",
        show_suppressed=True,
        write_patch=Path("p.diff"),
        color="never",
        progress="always",
    )
    assert not request.output.writes_json  # --query: not the built-in report
    assert request.diagnosis == Diagnosis(
        audit_log="-", controller_sa="ops:ctl", disabled_rules=("builtin/x",)
    )
    assert request.plugins == PluginChoice(
        paths=("p.py", "team.rules"), blocked=("noisy",), entry_points=False
    )
    assert request.tuning is tuning


def test_live_flags_and_the_environment() -> None:
    request = requests.request_from(
        _main("guestbook", "--server-dry-run", "--local", "--repo-root", "."),
        settings=settings.Settings.from_environ({settings.AUTOLOAD_ENV: "1"}),
    )
    assert request.cluster.server_dry_run
    assert request.cluster.snapshot is None
    assert request.git.local
    assert request.plugins.entry_points is False  # autoload off in the environment
    assert request.settings.autoload_disabled()


def test_the_environment_is_read_once_when_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(settings.WORKERS_ENV, "3")
    request = requests.request_from(_main("guestbook"))
    monkeypatch.setenv(settings.WORKERS_ENV, "5")
    assert request.settings.workers() == 3


def test_an_export_request() -> None:
    sub = parser.build_subparser("snapshot", "kubectl gitdrift").parse_args(
        ["guestbook", "team/b", "-o", "out.yaml.gz", "--repo-root", ".", "--local",
         "--context", "kind", "--progress=never"]
    )  # fmt: skip
    request = requests.export_request_from(sub, settings=NO_ENV)
    assert request.export == Path("out.yaml.gz")
    assert request.selection == Selection(names=("guestbook", "team/b"))
    assert request.git == GitSide(repo_roots=(RepoRoot(Path()),), local=True)
    assert request.cluster == ClusterSide(context="kind")
    assert request.output == Output(progress="never")


def test_every_flag_of_the_main_command_lands_in_the_request() -> None:
    """A flag added to the parser and forgotten here would never reach the run."""
    read: set[str] = set()

    class Recording(argparse.Namespace):
        def __getattribute__(self, name: str) -> Any:
            if not name.startswith("_"):
                read.add(name)
            return super().__getattribute__(name)

    args = parser.build_parser().parse_args(["guestbook"], namespace=Recording())
    read.clear()  # argparse itself looks at each while parsing
    requests.request_from(args, settings=NO_ENV)
    assert set(vars(args)) - read == {"debug"}  # main() looks at --debug itself


def test_a_request_is_frozen() -> None:
    request = Request()
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.export = Path("x")  # type: ignore[misc]
    for part in (request, request.selection, request.git, request.output, request.tuning):
        assert not hasattr(part, "__dict__")  # slots
