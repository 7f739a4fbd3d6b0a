"""Shared fixtures: run the CLI in-process, build scenario git repos, check golden files."""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import os
import re
import sys
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any

import pytest

from kubectl_gitdrift import plugins
from kubectl_gitdrift.cli import main as cli
from kubectl_gitdrift.run.request import Tuning
from tests.support import read_guard

ROOT = Path(__file__).resolve().parent.parent
TESTDATA = ROOT / "testdata"
TOOLS_BIN = ROOT / ".tools" / "bin"
if (TOOLS_BIN / "helm").is_file():
    # tools/install_helm.sh's helm: the package looks only at $KUBECTL_GITDRIFT_HELM and PATH,
    # never beside itself; for the session (and the CLI children it starts) it is on PATH first
    os.environ["PATH"] = os.pathsep.join([str(TOOLS_BIN), os.environ.get("PATH", "")])
os.environ.pop("COLUMNS", None)  # text output fits $COLUMNS: goldens are the pipe's layout
read_guard.install()  # from here on every file this process opens is checked


@pytest.fixture(autouse=True)
def _reads_stay_in_the_repository(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every test reads only the repository, tmp dirs and the Python installation, never
    ../shared: a plain clone runs the whole suite (tests/support/read_guard.py)."""
    read_guard.allow(tmp_path_factory.getbasetemp())
    with read_guard.watch() as outside:
        yield
    if outside:
        pytest.fail(read_guard.describe(outside))


def pytest_runtest_logstart(nodeid: str) -> None:
    read_guard.label(nodeid)


def pytest_runtest_logfinish() -> None:
    read_guard.label(None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport() -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A skip because a file is missing is a failure: fixtures live in the repository."""
    report = yield
    read_guard.skip_for_missing_file(report)
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Reads outside the repository by no test of tests/ (collection, plugins/) fail the run."""
    read_guard.fail_session(session)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite testdata golden files from the current output (review the git diff!)",
    )


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Runner:
    """Runs `kubectl gitdrift ARGS` in-process, capturing both streams, with this `tuning`."""

    tuning: Tuning = field(default_factory=Tuning)

    def __call__(self, args: Sequence[str], *, prog: str = "kubectl gitdrift") -> Result:
        out, err = io.StringIO(), io.StringIO()
        code = cli.main(list(args), stdout=out, stderr=err, prog=prog, tuning=self.tuning)
        return Result(code, out.getvalue(), err.getvalue())

    def tuned(self, *, warm_sample: int | None = None, **cluster: Any) -> Runner:
        """This runner, its runs tuned further: overrides of live.transport.Config's fields
        (`backoff=0.01`, `page_size=2`), or a smaller warm sample (workflow.prepare)."""
        tuning = dataclasses.replace(
            self.tuning,
            cluster=MappingProxyType({**self.tuning.cluster, **cluster}),
            warm_sample=self.tuning.warm_sample if warm_sample is None else warm_sample,
        )
        return Runner(tuning)


@pytest.fixture
def run_cli() -> Runner:
    """Run `kubectl gitdrift ARGS` in-process, capturing both streams."""
    return Runner()


FAST_RETRIES = {"backoff": 0.01, "max_backoff": 0.05}
"""transport.Config overrides for live tests: a retried request waits milliseconds, not seconds."""

#: How a report says the controller's permissions were checked (engine.py's _access): live
#: by the API server's SubjectAccessReviews, offline by RBAC objects, or not at all.
ACCESS_NOTES = ("controller permissions: ", "no ClusterRoles and bindings were read")


def without_run_context(doc: dict[str, Any]) -> dict[str, Any]:
    """A JSON report without what says where its run's state came from: the notes on how the
    controller's permissions were checked, and the context flags (--snapshot, --repo-root,
    --kubeconfig, --context) that its suggested gitdrift commands repeat. That is all a live
    run and an offline run of the same state differ in."""
    apps = [
        {
            **app,
            "notes": [n for n in app.get("notes") or () if not n.startswith(ACCESS_NOTES)],
            "remedies": [
                {**r, "commands": [_CONTEXT_FLAGS.sub("", c) for c in r.get("commands") or ()]}
                for r in app.get("remedies") or ()
            ],
        }
        for app in doc.get("applications") or ()
    ]
    return {**doc, "applications": apps} if "applications" in doc else dict(doc)


_CONTEXT_FLAGS = re.compile(r" --(?:snapshot|repo-root|kubeconfig|context) [^\s\"]+")


def text_without_run_context(text: str) -> str:
    """Text or JSON output with the context flags taken out of its suggested gitdrift
    commands: what two runs of one state through different paths (a clone and a bare one,
    live and a snapshot) differ in."""
    return "".join(
        _CONTEXT_FLAGS.sub("", line) if "kubectl gitdrift " in line else line
        for line in text.splitlines(keepends=True)
    )


def context_shown(text: str, **paths: object) -> str:
    """Output for a golden file: each path given (repo_root=..., kubeconfig=...) shown as
    `${REPO_ROOT}`, `${KUBECONFIG}`, ..., as the suggested commands repeat them."""
    for name, path in sorted(paths.items(), key=lambda kv: -len(str(kv[1]))):
        text = text.replace(str(path), "${" + name.upper() + "}")
    return text


@pytest.fixture(autouse=True)
def _cluster_stays_read_only(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test, live or not: no loopback API server (tests/apiserver) saw a write while it
    ran, whether the server came from the `kube_apiserver` fixture, `serve()`, or a shared
    module fixture. Only get/list/watch and SubjectAccessReview create are allowed (DESIGN.md
    §6). A test that writes on purpose says so with `@pytest.mark.cluster_writes`. Server-side
    apply dry-runs (`dryRun=All`, persisting nothing: what --server-dry-run sends) are allowed
    only in tests marked `@pytest.mark.server_dry_run`: without the flag, none is sent."""
    before = writes_so_far()
    dry_runs = dry_runs_so_far()
    yield
    check_read_only(before, allowed=request.node.get_closest_marker("cluster_writes") is not None)
    check_no_dry_runs(
        dry_runs, allowed=request.node.get_closest_marker("server_dry_run") is not None
    )


def writes_so_far() -> int:
    """How many writes the loopback API servers of this process have refused so far."""
    servers = sys.modules.get("tests.support.apiserver.server")
    return len(getattr(servers, "WRITE_ATTEMPTS", ()))


def dry_runs_so_far() -> int:
    """How many server-side apply dry-runs the loopback API servers of this process have seen."""
    servers = sys.modules.get("tests.support.apiserver.server")
    return len(getattr(servers, "DRY_RUN_ATTEMPTS", ()))


def check_no_dry_runs(before: int, *, allowed: bool) -> None:
    """Fail the running test if a loopback API server saw a `dryRun=All` apply since
    `dry_runs_so_far()` was `before` (unless the test runs --server-dry-run on purpose)."""
    servers = sys.modules.get("tests.support.apiserver.server")
    seen = [
        f"{record.method} {record.path}?dryRun={record.query.get('dryRun')}"
        for record in list(getattr(servers, "DRY_RUN_ATTEMPTS", ()))[before:]
    ]
    if seen and not allowed:
        pytest.fail(
            "the code under test sent server-side apply dry-runs without --server-dry-run: "
            + ", ".join(seen)
        )


def check_read_only(before: int, *, allowed: bool) -> None:
    """Fail the running test if a loopback API server saw a write since `writes_so_far()` was
    `before`."""
    servers = sys.modules.get("tests.support.apiserver.server")
    writes = [
        f"{record.method} {record.path} ({record.user or 'anonymous'})"
        for record in list(getattr(servers, "WRITE_ATTEMPTS", ()))[before:]
    ]
    if writes and not allowed:
        pytest.fail("the code under test tried to write to the cluster: " + ", ".join(writes))


@pytest.fixture
def pm() -> plugins.PluginManager:
    """A fresh plugin manager with the built-ins only."""
    return plugins.make_plugin_manager(entry_points=False)


def load_script(name: str, path: Path) -> ModuleType:
    """A script of the repository (not part of the package, e.g. bench/generate.py) as module
    `name`."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


def load_make_repo() -> ModuleType:
    """testdata/make_repo.py as a module."""
    return load_script("make_repo", TESTDATA / "make_repo.py")


_REPOS: dict[Path, Path] = {}


@pytest.fixture(scope="session")
def build_repo(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], Path]:
    """Turn a repo-src folder (make_repo layout) into a real git repo, once per session."""
    make_repo = load_make_repo()

    def build(src: Path) -> Path:
        src = src.resolve()
        if src not in _REPOS:
            dest = tmp_path_factory.mktemp("repo")
            dest.rmdir()
            make_repo.build_repo(src, dest)
            _REPOS[src] = dest
        return _REPOS[src]

    return build


class Golden:
    def __init__(self, update: bool) -> None:
        self.update = update

    def check(self, path: Path, actual: str) -> None:
        if self.update:
            path.write_text(actual)
            return
        assert path.exists(), f"{path} missing: run pytest --update-golden and review it"
        expected = path.read_text()
        assert actual == expected, f"{path.name} differs (pytest --update-golden rewrites it)"


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Golden:
    return Golden(bool(request.config.getoption("--update-golden")))


@pytest.fixture(autouse=True)
def _kube_cache_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kubectl's cache (API discovery) is a fresh directory per test, never ~/.kube/cache:
    every live run starts cold unless its test warms the cache itself."""
    monkeypatch.setenv("KUBECACHEDIR", str(tmp_path_factory.mktemp("kube-cache")))


@pytest.fixture(autouse=True, scope="session")
def _render_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Renders are cached in a throwaway directory, never in the user's ~/.cache; chart pulls
    read an empty helm and docker config, never the user's credentials."""
    mp = pytest.MonkeyPatch()
    mp.setenv("KUBECTL_GITDRIFT_CACHE_DIR", str(tmp_path_factory.mktemp("render-cache")))
    mp.setenv("HELM_CONFIG_HOME", str(tmp_path_factory.mktemp("helm-config")))
    mp.setenv("DOCKER_CONFIG", str(tmp_path_factory.mktemp("docker-config")))
    for name in ("HELM_REGISTRY_CONFIG", "HELM_REPOSITORY_CONFIG"):
        mp.delenv(name, raising=False)
    yield
    mp.undo()
