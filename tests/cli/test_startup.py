"""Start-up budget (issue 18): each command imports what it runs. Counted, never timed: a fresh
interpreter runs `cli.main(ARGS)` and lists `sys.modules`; heavy modules a command does not need
must be absent. Timings are in bench/live.py and BENCHMARKS.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kubectl_gitdrift import plugins
from kubectl_gitdrift.cli import main as cli
from tests.conftest import ROOT, TESTDATA
from tests.support.apiserver import (
    ServerFactory,
    kube_apiserver,  # noqa: F401 - the fixture
    live_args,
)

INCIDENT = TESTDATA / "incident"

CHILD = """
import io, sys
from kubectl_gitdrift.cli import main as cli
out, err = io.StringIO(), io.StringIO()
code = cli.main(sys.argv[1:], stdout=out, stderr=err)
sys.stdout.write(f"{code}\\n" + "\\n".join(sorted(sys.modules)) + "\\n")
sys.stdout.write("--- stderr\\n" + err.getvalue())
"""

THIRD_PARTY = (
    "kr8s",
    "httpx",
    "pluggy",
    "yaml",
    "tabulate",
    "jmespath",
    "dictdiffer",
    "prometheus_client",
    "jq",
    "jsonschema",
    "kubernetes_validate",
    "tqdm",
    "wcwidth",
)
"""Third-party packages none of the small commands needs."""

ENGINE = (
    "kubectl_gitdrift.engine",
    "kubectl_gitdrift.run.workflow",
    "kubectl_gitdrift.model",
    "kubectl_gitdrift.sources",
    "kubectl_gitdrift.compare",
    "kubectl_gitdrift.present.report",
)


def imported(*args: str) -> tuple[int, set[str]]:
    """Exit code and every module imported by `kubectl gitdrift ARGS` in a fresh interpreter."""
    result = subprocess.run(
        [sys.executable, "-c", CHILD, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    head, _, stderr = result.stdout.partition("--- stderr\n")
    code, *modules = head.split()
    assert "error" not in stderr, stderr
    return int(code), set(modules)


def _present(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m in names or m.startswith(tuple(n + "." for n in names)))


def _ours(modules: set[str]) -> set[str]:
    return {m for m in modules if m == "kubectl_gitdrift" or m.startswith("kubectl_gitdrift.")}


@pytest.mark.parametrize("args", [["version"], ["completion", "bash"], ["version", "--help"]])
def test_small_commands_import_neither_the_engine_nor_third_party_packages(
    args: list[str],
) -> None:
    code, modules = imported(*args)
    assert code == 0
    assert _present(modules, THIRD_PARTY) == []
    assert _ours(modules) <= {
        "kubectl_gitdrift",
        "kubectl_gitdrift.cli",
        "kubectl_gitdrift.cli.main",
        "kubectl_gitdrift.errors",
        "kubectl_gitdrift.cli.parser",
        "kubectl_gitdrift.cli.completion",
    }
    assert "subprocess" not in modules or args[0] == "completion"
    assert "importlib.metadata" not in modules
    # a loose count: today `version` loads ~90 modules (Python 3.11), the whole CLI ~370
    assert len(modules) < 150, sorted(modules)


def test_help_builds_the_main_parser_without_the_engine() -> None:
    code, modules = imported("--help")
    assert code == 0
    assert _present(modules, ENGINE[:2] + ENGINE[3:]) == []
    assert _present(modules, tuple(p for p in THIRD_PARTY if p != "pluggy")) == []


OFFLINE_ABSENT = (
    "kr8s",
    "httpx",
    "prometheus_client",
    "jq",  # no jq rule in argocd-cm or the Application
    "jsonschema",
    "kubernetes_validate",
    "tqdm",  # not a terminal
    "http.server",
    "kubectl_gitdrift.live.cluster",
    "kubectl_gitdrift.cli.serve",
    "kubectl_gitdrift.present.metrics",
    "kubectl_gitdrift.cli.pushgateway",
    "kubectl_gitdrift.cli.completion",
    "tarfile",  # only a chart pull or a vendored chart archive is unpacked
)


@pytest.mark.parametrize(
    ("fmt", "also_absent"),
    [
        ("text", ("jmespath",)),  # tabulate reads its version with importlib.metadata
        ("json", ("jmespath", "tabulate", "wcwidth", "importlib.metadata")),
    ],
)
def test_offline_run_imports_no_cluster_client_exporter_or_terminal_code(
    build_repo,  # type: ignore[no-untyped-def]
    fmt: str,
    also_absent: tuple[str, ...],
) -> None:
    repo = Path(build_repo(INCIDENT / "repo-src"))
    code, modules = imported(
        "guestbook",
        "--snapshot",
        str(INCIDENT / "snapshot.yaml"),
        "--repo-root",
        str(repo),
        "--no-entry-points",
        "-o",
        fmt,
    )
    assert code == 1  # the incident's drift
    assert _present(modules, OFFLINE_ABSENT + also_absent) == []


def test_builtin_renderers_name_matches_the_plugin_manager() -> None:
    assert plugins.BUILTIN_NAMES["kubectl_gitdrift.builtin.renderers"] == cli._BUILTIN_RENDERERS


LIVE_ABSENT = (
    "jq",  # no jq rule in argocd-cm or the Application
    "jsonschema",
    "kubernetes_validate",
    "tqdm",  # not a terminal
    "prometheus_client",
    "http.server",
    "jmespath",
    "kubectl_gitdrift.cli.serve",
    "kubectl_gitdrift.present.metrics",
    "kubectl_gitdrift.cli.pushgateway",
    "kubectl_gitdrift.cli.completion",
    "kubectl_gitdrift.compare.serverside",  # the app compares with the legacy diff
    "tarfile",  # only a chart pull or a vendored chart archive is unpacked
)


def _live_incident(
    build_repo,  # type: ignore[no-untyped-def]
    start: ServerFactory,
    fmt: str,
) -> tuple[int, set[str]]:
    """`imported` for a live `-o FMT` run of the incident against a loopback API server."""
    import yaml

    items = yaml.safe_load((INCIDENT / "snapshot.yaml").read_text())["items"]
    server = start(items)
    repo = Path(build_repo(INCIDENT / "repo-src"))
    return imported(*live_args("guestbook", server, repo, "-o", fmt))


@pytest.mark.cluster
@pytest.mark.parametrize(
    ("fmt", "also_absent"),
    [("text", ()), ("json", ("tabulate", "wcwidth", "importlib.metadata"))],
)
def test_live_run_imports_the_cluster_client_and_nothing_it_does_not_use(
    build_repo,  # type: ignore[no-untyped-def]
    kube_apiserver: ServerFactory,  # noqa: F811
    fmt: str,
    also_absent: tuple[str, ...],
) -> None:
    """A live run (issue 18): kr8s, and none of what the offline run leaves out but the
    cluster client; `-o text` imports the table module while the LISTs are out."""
    code, modules = _live_incident(build_repo, kube_apiserver, fmt)
    assert code == 1  # the incident's drift
    assert {"kr8s", "httpx", "kubectl_gitdrift.live.cluster"} <= modules
    assert _present(modules, LIVE_ABSENT + also_absent) == []
    assert ("tabulate" in modules) == (fmt == "text")


def _cluster_client_modules() -> set[str]:
    """What `import kr8s` alone loads in a fresh interpreter (the cluster client's own cost)."""
    result = subprocess.run(
        [sys.executable, "-c", "import sys, kr8s; print('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    return set(result.stdout.split())


@pytest.mark.cluster
def test_live_run_imports_a_bounded_set_beyond_the_cluster_client(
    build_repo,  # type: ignore[no-untyped-def]
    kube_apiserver: ServerFactory,  # noqa: F811
) -> None:
    """Issue 25's budget, counted: beyond what kr8s itself loads, a live `-o json` run of the
    incident (a drift whose Events and HPAs are read after the compare) imports at most 140 of
    gitdrift's modules and 230 modules in all (131 and 185 when this was written). A module
    that starts being imported at the top of a shared one shows here first."""
    code, modules = _live_incident(build_repo, kube_apiserver, "json")
    assert code == 1
    assert "kubectl_gitdrift.live.context" in modules  # the drift's context was read after
    beyond = modules - _cluster_client_modules()
    assert len(_ours(beyond)) <= 140, sorted(_ours(beyond))
    assert len(beyond) <= 230, sorted(beyond - _ours(beyond))
