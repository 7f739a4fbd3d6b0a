"""Every directory under testdata/scenarios/ runs through the real CLI, offline, against its
golden files. Adding a test is adding a directory; `pytest --update-golden` rewrites goldens.

A scenario may start servers on loopback (`serve: {helm: charts-src/, oci: charts-src/,
git: repo-src/}` in scenario.yaml). Each server kind in SERVERS gives placeholders
(`${HELM_REPO_URL}`, `${GIT_REPO_URL}`, …) that are substituted into the snapshot and the repo
files before the run, and put back in place of their values in the output, so goldens do not
depend on ports. `${REPO_HEAD}` is the built repo's HEAD commit (it changes when a substituted
URL is committed). `repo_root: false` runs without --repo-root (for sources that need no git,
or a repository the `git` server serves: gitdrift fetches it). A scenario with an `expected.md`
also checks `-o markdown` against it. The report's suggested gitdrift commands repeat the run's
--snapshot and --repo-root: goldens show the snapshot's path in the checkout and the clone as
`${REPO_ROOT}` (or `repo_root_shown:`, e.g. make demo's `.venv/demo-repo`).
`partial_clone: URL` makes --repo-root a clone that lacks its blobs (`_partial_clone`)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from kubectl_gitdrift.sources import git, helm
from tests.conftest import ROOT, TESTDATA, load_make_repo
from tests.support import registry
from tests.support.gitdaemon import GitDaemon

SCENARIOS = sorted(p for p in (TESTDATA / "scenarios").iterdir() if p.is_dir())


@dataclass
class Served:
    """What a started server gives a scenario: placeholders, environment, how to stop it."""

    placeholders: dict[str, str]
    env: dict[str, str] = field(default_factory=dict)
    stop: Callable[[], None] = lambda: None


def _serve_helm(src: Path, work: Path) -> Served:
    """An HTTP Helm repository serving the charts below `src` (python http.server)."""
    repo = registry.serve_helm_repo(src, work)
    return Served({"${HELM_REPO_URL}": repo.url}, stop=repo.stop)


def _serve_oci(src: Path, work: Path) -> Served:
    """docker-registry over HTTPS with a throwaway CA (trusted via SSL_CERT_FILE), holding the
    charts below `src` under `charts/`."""
    reg = registry.serve_oci(src, work, tls=True)
    assert reg.ca is not None
    return Served(
        {"${OCI_REGISTRY}": reg.host}, env={"SSL_CERT_FILE": str(reg.ca.ca_file)}, stop=reg.stop
    )


def _serve_git(src: Path, work: Path) -> Served:
    """A real `git daemon` serving the repository built from `src` (make_repo layout) as the
    Application's repoURL, `${GIT_REPO_URL}`; run with `repo_root: false` to have it fetched."""
    built = work / "built"
    load_make_repo().build_repo(src, built)
    daemon = GitDaemon(work / "served").start()
    return Served({"${GIT_REPO_URL}": daemon.serve(built, "repo.git")}, stop=daemon.stop)


SERVERS: dict[str, Callable[[Path, Path], Served]] = {
    "helm": _serve_helm,
    "oci": _serve_oci,
    "git": _serve_git,
}
"""Server kinds a scenario can `serve:`; a kind is (source dir, work dir) -> Served. Add a kind
here (one function, one entry) to serve something else. `git` starts last, on a copy of its
source with the other servers' placeholders filled in."""


@pytest.fixture(scope="session")
def scenario_servers(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[Path, dict[str, str]], Served]]:
    """Start each (kind, directory) once per session; stop them all at the end."""
    started: dict[tuple[str, Path, tuple[tuple[str, str], ...]], Served] = {}

    def start(scenario: Path, serve: dict[str, str]) -> Served:
        merged = Served({})
        # git last: the repository it serves may name the other servers (${HELM_REPO_URL}, …)
        for kind, src in sorted(serve.items(), key=lambda kv: (kv[0] == "git", kv[0])):
            names = tuple(sorted(merged.placeholders.items())) if kind == "git" else ()
            key = (kind, (scenario / src).resolve(), names)
            if key not in started:
                work = tmp_path_factory.mktemp(f"serve-{kind}")
                source = key[1]
                if names:
                    source = _substituted(source, work / "src", merged.placeholders)
                started[key] = SERVERS[kind](source, work)
            merged.placeholders.update(started[key].placeholders)
            merged.env.update(started[key].env)
        return merged

    yield start
    for served in started.values():
        served.stop()


def _substituted(src: Path, dest: Path, placeholders: dict[str, str]) -> Path:
    """A copy of the file or tree `src` with the placeholders replaced in its text files."""
    if src.is_dir():
        shutil.copytree(src, dest, symlinks=True)
        files = sorted(p for p in dest.rglob("*") if p.is_file() and not p.is_symlink())
    else:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        files = [dest]
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        replaced = text
        for name, value in placeholders.items():
            replaced = replaced.replace(name, value)
        if replaced != text:
            file.write_text(replaced, encoding="utf-8")
    return dest


def _partial_clone(built: Path, work: Path, origin: str) -> Path:
    """`partial_clone: URL` in scenario.yaml: --repo-root is `git clone --filter=blob:none
    --no-checkout` of the built repository (from its file:// URL, filters allowed), whose origin
    is then `URL` with every git transport refused (`protocol.allow never`): the clone holds
    commits and trees but no file, and cannot fetch one, as on a machine offline."""
    clone = work / "clone"
    upload = "git -c uploadpack.allowFilter=true upload-pack"
    for args in (
        ["clone", "-q", "--filter=blob:none", "--no-checkout", f"--upload-pack={upload}",
         built.resolve().as_uri(), str(clone)],
        ["-C", str(clone), "remote", "set-url", "origin", origin],
        ["-C", str(clone), "config", "protocol.allow", "never"],
    ):  # fmt: skip
        subprocess.run(["git", *args], check=True, capture_output=True)
    return clone


def _normalized(output: str, placeholders: dict[str, str]) -> str:
    """The output with every placeholder's value (longest first) put back as its name."""
    for name, value in sorted(placeholders.items(), key=lambda kv: -len(kv[1])):
        output = output.replace(value, name)
    return output


def _args(
    scenario: Path,
    spec: dict,  # type: ignore[type-arg]
    repo: Path,
    snapshot: Path | None = None,
) -> list[str]:
    return [
        spec["app"],
        "--snapshot",
        str(snapshot or (scenario / spec.get("snapshot", "live.yaml")).resolve()),
        *(["--repo-root", str(repo)] if spec.get("repo_root", True) else []),
        "--no-entry-points",
        *(_expand(str(arg), scenario) for arg in spec.get("args", [])),
    ]


def _missing_tools(spec: dict) -> list[str]:  # type: ignore[type-arg]
    """`requires: [helm, kustomize, …]` in scenario.yaml: tools the scenario cannot run without."""
    found = {
        "helm": lambda: helm.helm_binary() is not None,
        "kustomize": lambda: bool(shutil.which("kustomize") or shutil.which("kubectl")),
    }
    return [
        str(tool)
        for tool in spec.get("requires") or []
        if not found.get(str(tool), lambda t=str(tool): shutil.which(t) is not None)()
    ]


def _expand(arg: str, scenario: Path) -> str:
    """`{root}` is the checkout, `{scenario}` the scenario's directory (e.g. for --plugin)."""
    return arg.replace("{root}", str(ROOT)).replace("{scenario}", str(scenario.resolve()))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_scenario(  # type: ignore[no-untyped-def]
    scenario: Path, run_cli, build_repo, golden, scenario_servers, tmp_path, monkeypatch
) -> None:
    spec = yaml.safe_load((scenario / "scenario.yaml").read_text())
    missing = _missing_tools(spec)
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (see scenario.yaml requires)")
    placeholders: dict[str, str] = {}
    snapshot = None
    repo_src = scenario / spec.get("repo", "repo")
    if spec.get("serve"):
        served = scenario_servers(scenario, spec["serve"])
        placeholders = served.placeholders
        for name, value in served.env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("HELM_CONFIG_HOME", str(tmp_path / "helm-config"))  # not the user's
        monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
        repo_src = _substituted(repo_src, tmp_path / "repo-src", placeholders)
    repo = build_repo(repo_src)
    if spec.get("partial_clone"):
        repo = _partial_clone(repo, tmp_path, str(spec["partial_clone"]))
    if spec.get("serve"):
        head = git.resolve_revision(repo, "HEAD")
        placeholders = {**placeholders, "${REPO_HEAD}": head}
        live = scenario / spec.get("snapshot", "live.yaml")
        snapshot = _substituted(live, tmp_path / live.name, placeholders)
        # short forms of the commit, as the text report shows them
        placeholders.update({f"${{REPO_HEAD:{n}}}": head[:n] for n in (12, 8, 7)})
    args = _args(scenario, spec, repo, snapshot)
    # the suggested gitdrift commands repeat --snapshot and --repo-root: shown as a user in the
    # checkout would type them (`repo_root_shown:` names the clone, e.g. make demo's)
    original = (scenario / spec.get("snapshot", "live.yaml")).resolve()
    shown = {
        **placeholders,
        str(original.relative_to(ROOT)): args[args.index("--snapshot") + 1],
        spec.get("repo_root_shown", "${REPO_ROOT}"): str(repo),
    }
    for fmt, name in (("json", "expected.json"), ("text", "expected.txt")):
        result = run_cli([*args, "-o", fmt])
        assert result.stderr == "", result.stderr
        assert result.exit_code == spec["exit_code"], result.stdout
        golden.check(scenario / name, _normalized(result.stdout, shown))
    if (scenario / "expected.md").exists():  # opt-in: -o markdown's golden
        result = run_cli([*args, "-o", "markdown"])
        assert (result.stderr, result.exit_code) == ("", spec["exit_code"]), result.stderr
        golden.check(scenario / "expected.md", _normalized(result.stdout, shown))
    report = json.loads((scenario / "expected.json").read_text())
    for app in report["applications"][:1]:  # none when every app of an `--all` run failed
        assert app["sync"]["status"] == spec.get("sync", app["sync"]["status"])
