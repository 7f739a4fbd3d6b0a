"""Release packaging: dist.lock pins every wheel the archives bundle; the krew archive
tools/make_dist.py builds from it is the one krew-manifest.yaml names (same sha256) and works
through the real kubectl plugin mechanism; the wheel pip/pipx install declares the console scripts.

The archive test builds linux-amd64 (every CPython the lock has wheels for) from dist.lock, with
the locked wheels cached in the pytest cache (checked by sha256 on every use), and installs the
archive the way krew does: unpack, copy the manifest's `files`, link `bin` into a bin directory
on PATH.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from kubectl_gitdrift import __version__
from tests.conftest import ROOT, TESTDATA, load_script
from tests.support.completion import bash_complete, fake_cli_env, fish_complete

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
LOCK = ROOT / "dist.lock"
ARCHIVE = f"kubectl-gitdrift-v{__version__}-linux-amd64.tar.gz"


def _make_dist() -> ModuleType:
    return load_script("make_dist", ROOT / "tools" / "make_dist.py")


def _lock() -> dict[str, Any]:
    lock: dict[str, Any] = json.loads(LOCK.read_text(encoding="utf-8"))
    return lock


def _index_reachable(tmp: Path) -> bool:
    """Can pip fetch a tiny wheel quickly? (The build needs the index unless the wheel cache
    holds every locked wheel.)"""
    try:
        result = _make_dist().pip(
            "download", "--no-deps", "--only-binary=:all:", "--no-cache-dir", "-d", str(tmp),
            "--timeout", "5", "--retries", "0", "six", timeout=30,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return False
    return bool(result.returncode == 0)


# --------------------------------------------------------------------------- the lock


def test_lock_agrees_with_pyproject() -> None:
    """A dependency change in pyproject.toml without `make lock` fails here (and `make dist`
    refuses the stale lock)."""
    make_dist = _make_dist()
    problems = make_dist.lock_problems(_lock(), make_dist.declared())
    assert problems == [], f"dist.lock is stale: {problems}: run `make lock` and commit dist.lock"


def test_lock_pins_every_platform_python_and_tool() -> None:
    make_dist = _make_dist()
    lock = _lock()
    pairs = {make_dist.set_name(p, py) for p in make_dist.PLATFORMS.values()
             for py in make_dist.PYTHONS}  # fmt: skip
    assert set(lock["sets"]) | set(lock["unavailable"]) == pairs
    assert not set(lock["sets"]) & set(lock["unavailable"])
    assert "linux-amd64-cp311" in lock["sets"]  # what CI and the archive test run
    assert {e["name"] for e in lock["tools"]} == {"pip", "setuptools"}
    for entries in [lock["tools"], *lock["sets"].values()]:
        for entry in entries:
            assert entry["file"].endswith(".whl"), entry
            assert len(entry["sha256"]) == 64, entry
            assert int(entry["sha256"], 16) >= 0
            assert entry["file"].lower().startswith(entry["name"].replace("-", "_") + "-"), entry
        assert len({e["name"] for e in entries}) == len(entries)  # one wheel per distribution
    assert isinstance(lock["source_date_epoch"], int)


def test_a_dependency_change_without_make_lock_is_refused(tmp_path: Path) -> None:
    make_dist = _make_dist()
    wanted = make_dist.declared()
    moved = {**wanted, "requires": sorted([*wanted["requires"], "rich>=13"])}
    problems = make_dist.lock_problems(_lock(), moved)
    assert problems == ["pyproject's dependencies changed (added ['rich>=13'], dropped [])"]
    dropped = {**wanted, "requires": wanted["requires"][1:]}
    gutted = {**_lock(), "sets": {"linux-amd64-cp311": [
        e for e in _lock()["sets"]["linux-amd64-cp311"] if e["name"] != "pyyaml"
    ]}}  # fmt: skip
    assert make_dist.lock_problems(gutted, wanted) == [
        "linux-amd64-cp311 has no wheel for ['pyyaml']"
    ]
    assert "dropped" in make_dist.lock_problems(_lock(), dropped)[0]
    stale = {**_lock(), "requires": [*wanted["requires"], "rich>=13"]}
    (tmp_path / "dist.lock").write_text(json.dumps(stale))
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "make_dist.py"), "--offline",
         "--lock", str(tmp_path / "dist.lock"), "--out", str(tmp_path / "dist"),
         "--manifest", str(tmp_path / "m.yaml")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert "is stale: pyproject's dependencies changed" in result.stderr
    assert result.stderr.rstrip().endswith("run `make lock`")
    assert not (tmp_path / "dist").exists() or not any((tmp_path / "dist").iterdir())


def test_lock_round_trips_one_wheel_a_line(tmp_path: Path) -> None:
    make_dist = _make_dist()
    make_dist.write_lock(tmp_path / "lock", _lock())
    assert json.loads((tmp_path / "lock").read_text()) == _lock()
    assert (tmp_path / "lock").read_text() == LOCK.read_text(encoding="utf-8")


# --------------------------------------------------------------------------- the archive


@pytest.fixture(scope="module")
def built(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, object]]:
    """(archive, manifest) for linux-amd64, built from dist.lock into a tmp dir."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the archive test builds linux-amd64 and runs it: needs a linux x86_64 host")
    tmp = tmp_path_factory.mktemp("dist")
    pytest_cache = getattr(request.config, "cache", None)  # None with -p no:cacheprovider
    if pytest_cache is not None:
        cache = Path(str(pytest_cache.mkdir("gitdrift-dist-wheels")))
    else:
        cache = Path(tempfile.gettempdir()) / "kubectl-gitdrift-dist-wheels"
    lock = _lock()
    wanted = {e["file"] for e in lock["tools"]}
    wanted |= {
        e["file"] for k, v in lock["sets"].items() if k.startswith("linux-amd64-") for e in v
    }
    if not all((cache / name).is_file() for name in wanted) and not _index_reachable(tmp / "probe"):
        pytest.skip("pip cannot reach the package index and the wheel cache lacks locked wheels")
    manifest = tmp / "krew-manifest.yaml"
    shutil.copy(ROOT / "krew-manifest.yaml", manifest)
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "make_dist.py"), "--platform", "linux-amd64",
         "--out", str(tmp / "dist"), "--manifest", str(manifest), "--wheel-cache", str(cache)],
        capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    archives = sorted((tmp / "dist").glob("*.tar.gz"))
    assert [a.name for a in archives] == [ARCHIVE]
    return archives[0], yaml.safe_load(manifest.read_text())


@pytest.mark.slow
def test_archive_from_the_lock_is_the_one_the_manifest_names(
    built: tuple[Path, dict[str, object]],
) -> None:
    """Same lock + same sources = the archive krew-manifest.yaml names: rebuilt here, on another
    day and machine than the one that filled the manifest in."""
    archive, _ = built
    committed = yaml.safe_load((ROOT / "krew-manifest.yaml").read_text())
    (entry,) = [p for p in committed["spec"]["platforms"] if p["uri"].endswith("/" + ARCHIVE)]
    assert hashlib.sha256(archive.read_bytes()).hexdigest() == entry["sha256"], (
        "the linux-amd64 archive built from dist.lock differs from krew-manifest.yaml's: what it "
        "packages (kubectl_gitdrift/, README.md, LICENSE, pyproject.toml, tools/) changed since "
        "`make dist` filled the manifest in: run `make dist` and commit krew-manifest.yaml"
    )


@pytest.fixture(scope="module")
def krew_install(
    built: tuple[Path, dict[str, object]], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """Install the archive like krew does; return an environment whose PATH holds only its bin
    dir, the interpreter's dir, and the system's (kubectl, git)."""
    if (
        sys.implementation.name != "cpython"
        or f"linux-amd64-cp{PY.replace('.', '')}" not in (_lock()["sets"])
    ):
        pytest.skip(f"the archive bundles the CPythons dist.lock has wheels for, not {PY}")
    archive, manifest = built
    spec = manifest["spec"]
    assert isinstance(spec, dict)
    (entry,) = spec["platforms"]
    root = tmp_path_factory.mktemp("krew")
    unpacked, store, bindir = root / "download", root / "store" / "gitdrift", root / "bin"
    for directory in (unpacked, store, bindir):
        directory.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="data")
    for item in entry["files"]:
        shutil.copy2(unpacked / item["from"], store / item["to"] / Path(item["from"]).name)
    link = bindir / entry["bin"]
    link.symlink_to(store / entry["bin"])  # krew links `bin` into ~/.krew/bin on Linux and macOS
    assert os.access(link, os.X_OK)
    for helper in ("argocd-gitdrift", "kubectl_complete-gitdrift"):  # as docs/install.md says
        shutil.copy2(store / helper, bindir / helper)
    # a python3 outside any venv: the archive must bring its own dependencies
    python_dir = root / "python"
    python_dir.mkdir()
    (python_dir / "python3").symlink_to(os.path.realpath(sys.executable))
    kubectl = shutil.which("kubectl")
    git = shutil.which("git")
    assert kubectl is not None
    assert git is not None
    path = [str(bindir), str(python_dir), str(Path(kubectl).parent), str(Path(git).parent)]
    return {
        "PATH": os.pathsep.join(dict.fromkeys(path)),
        "HOME": str(root / "home"),
        "KUBECTL_GITDRIFT_CACHE": str(root / "cache"),
        "PYTHONNOUSERSITE": "1",
        "KUBECONFIG": str(root / "no-kubeconfig"),
    }


def _run(
    args: list[str], env: dict[str, str], cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.slow
def test_archive_matches_manifest(built: tuple[Path, dict[str, object]]) -> None:
    archive, manifest = built
    spec = manifest["spec"]
    assert isinstance(spec, dict)
    assert spec["version"] == f"v{__version__}"
    (entry,) = spec["platforms"]
    assert entry["selector"] == {"matchLabels": {"os": "linux", "arch": "amd64"}}
    assert entry["sha256"] == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert entry["uri"] == (
        "https://github.com/kubectl-gitdrift/kubectl-gitdrift/releases/download/"
        f"v{__version__}/{archive.name}"
    )
    assert entry["bin"] == "kubectl-gitdrift"
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert sorted(members) == sorted(
        ["LICENSE", "README.md", "argocd-gitdrift", "kubectl-gitdrift", "kubectl_complete-gitdrift"]
    )
    assert {f["from"] for f in entry["files"]} == set(members)
    for member in members.values():
        assert (member.uid, member.gid, member.uname, member.gname) == (0, 0, "", "")
    assert members["kubectl-gitdrift"].mode == 0o755
    assert archive.stat().st_size < 60_000_000  # every supported CPython's wheels
    # the wheel pip built (what `pip install .` / pipx install) declares both console scripts
    with tarfile.open(archive) as tar:
        executable = tar.extractfile("kubectl-gitdrift")
        assert executable is not None
        payload = executable.read()
    assert payload.startswith(b"#!/usr/bin/env python3\n")
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        (entry_points,) = [n for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt")
                           and "/kubectl_gitdrift-" in n]  # fmt: skip
        text = zf.read(entry_points).decode()
    assert "kubectl-gitdrift = kubectl_gitdrift.cli.main:run" in text
    assert "argocd-gitdrift = kubectl_gitdrift.cli.main:run_argocd" in text


@pytest.mark.slow
def test_kubectl_runs_the_plugin(krew_install: dict[str, str]) -> None:
    listed = _run(["kubectl", "plugin", "list"], krew_install)
    assert "kubectl-gitdrift" in listed.stdout, listed.stdout + listed.stderr
    version = _run(["kubectl", "gitdrift", "version"], krew_install)
    assert version.returncode == 0, version.stderr
    assert version.stdout == f"kubectl gitdrift {__version__}\n"


@pytest.mark.slow
def test_argocd_plugin_executable(krew_install: dict[str, str]) -> None:
    version = _run(["argocd-gitdrift", "version"], krew_install)
    assert version.returncode == 0, version.stderr
    assert version.stdout == f"argocd gitdrift {__version__}\n"


@pytest.mark.slow
def test_kubectl_completes_through_the_helper(krew_install: dict[str, str]) -> None:
    result = _run(["kubectl", "__complete", "gitdrift", "--snap"], krew_install)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].split("\t")[0] == "--snapshot"
    assert result.stdout.splitlines()[-1] == ":4"


@pytest.mark.slow
def test_offline_incident_through_the_bundle(krew_install: dict[str, str], tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    made = subprocess.run(
        [sys.executable, str(TESTDATA / "make_repo.py"), str(TESTDATA / "incident/repo-src"),
         str(repo)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    result = _run(
        ["kubectl", "gitdrift", "guestbook", "--snapshot",
         str(TESTDATA / "incident/snapshot.yaml"), "--repo-root", str(repo)],
        krew_install, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "spec.replicas" in result.stdout


# --------------------------------------------------------------------------- pip / pipx


def test_tarball_and_zip_are_reproducible() -> None:
    make_dist = _make_dist()
    members = [("b", b"two", 0o644), ("a", b"one", 0o755)]
    first = make_dist.make_tarball(members, 1_700_000_000)
    assert first == make_dist.make_tarball(list(reversed(members)), 1_700_000_000)
    zipped = make_dist._zip_bytes({"x/y.py": (b"print()", 0o644)}, 1_700_000_000)
    assert zipped == make_dist._zip_bytes({"x/y.py": (b"print()", 0o644)}, 1_700_000_000)


def test_prune_drops_what_names_the_build_machine(tmp_path: Path) -> None:
    """Scripts carry the building interpreter's path in their shebang: they go, and so do their
    RECORD rows, so the archive does not depend on which Python ran the build."""
    site = tmp_path / "site"
    info = site / "x-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "bin").mkdir()
    (site / "bin" / "x").write_text("#!/some/venv/bin/python\n")
    (site / "x.py").write_text("")
    (info / "direct_url.json").write_text('{"url": "file:///build/x.whl"}')
    (info / "RECORD").write_text(
        "../../bin/x,sha256=abc,24\nx.py,sha256=def,0\nx-1.0.dist-info/direct_url.json,,\n"
        "x-1.0.dist-info/RECORD,,\n"
    )
    _make_dist().prune(site)
    assert not (site / "bin").exists()
    assert not (info / "direct_url.json").exists()
    assert (info / "RECORD").read_text() == "x.py,sha256=def,0\nx-1.0.dist-info/RECORD,,\n"


def _bdist_wheel_available() -> bool:
    try:
        version = importlib.metadata.version("setuptools")
    except importlib.metadata.PackageNotFoundError:
        return False
    major, minor = (int(p) for p in version.split(".")[:2])
    return (major, minor) >= (77, 0)  # PEP 639 license metadata


@pytest.mark.slow
def test_wheel_declares_the_console_scripts(tmp_path: Path) -> None:
    """What `pip install .` and `pipx install .` put on PATH, built without the network."""
    if not _bdist_wheel_available():
        pytest.skip("an offline wheel build needs setuptools>=77 in this env")
    src = tmp_path / "src"
    shutil.copytree(
        ROOT, src, ignore=shutil.ignore_patterns(".*", "build", "dist", "*.egg-info", "__pycache__")
    )
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", str(tmp_path / "out"), str(src)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (wheel,) = (tmp_path / "out").glob("kubectl_gitdrift-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        entry_points = zf.read(f"kubectl_gitdrift-{__version__}.dist-info/entry_points.txt")
        names = zf.namelist()
    text = entry_points.decode()
    assert "[console_scripts]" in text
    assert "kubectl-gitdrift = kubectl_gitdrift.cli.main:run" in text
    assert "argocd-gitdrift = kubectl_gitdrift.cli.main:run_argocd" in text
    assert "kubectl_gitdrift/cli/completion.py" in names
    assert "kubectl_gitdrift/py.typed" in names


# --------------------------------------------------------------------------- shell completion


def test_completion_engine_follows_the_parser() -> None:
    from kubectl_gitdrift.cli import completion

    values, directive = completion.complete(["--snap"])
    assert [v.split("\t")[0] for v in values] == ["--snapshot"]
    assert directive == completion.Directive.NO_FILE_COMP
    assert completion.complete(["-o", ""])[0] == list(completion.OUTPUT_FORMATS)
    assert completion.complete(["--output=j"])[0] == ["--output=json"]
    assert completion.complete(["--repo-root", ""]) == ([], completion.Directive.FILTER_DIRS)
    assert completion.complete(["--snapshot", ""]) == ([], completion.Directive.DEFAULT)
    assert completion.complete(["completion", ""])[0] == ["bash", "zsh", "fish"]
    assert completion.OUTPUT_FORMATS == ("text", "json", "yaml", "diff", "markdown", "openmetrics")
    assert completion.complete(["snapshot", "-o", ""]) == ([], completion.Directive.DEFAULT)
    snap = str(TESTDATA / "incident/snapshot.yaml")
    assert "guestbook" in completion.complete(["--snapshot", snap, "gu"])[0]
    first = [v.split("\t")[0] for v in completion.complete([""])[0]]
    assert {"version", "completion"} <= set(first)


def test_completion_main_and_scripts() -> None:
    from kubectl_gitdrift.cli import completion

    out, err = io.StringIO(), io.StringIO()
    assert completion.main(["__complete", "--show-s"], out, err) == 0
    assert out.getvalue().splitlines()[-1] == ":4"
    assert completion.main(["tcsh"], io.StringIO(), err) == 2
    assert "bash, zsh or fish" in err.getvalue()
    assert "compdef _gitdrift kubectl-gitdrift argocd-gitdrift" in completion.script("zsh", "x")
    assert "complete -c kubectl-gitdrift" in completion.script("fish", "x")
    with pytest.raises(ValueError, match="unsupported shell"):
        completion.script("tcsh", "x")


def test_fish_script_completes(tmp_path: Path) -> None:
    """Source the fish script with a kubectl-gitdrift on PATH and complete lines, as fish
    itself does for `kubectl-gitdrift -o <TAB>` (fish: tools/test_prereqs.sh installs it)."""
    from kubectl_gitdrift.cli import completion

    fish = shutil.which("fish")
    assert fish is not None, "the tests need fish (tools/test_prereqs.sh installs it)"
    env = fake_cli_env(tmp_path, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    result = fish_complete(fish, tmp_path, env, "kubectl-gitdrift -o ", "kubectl-gitdrift --show-s")
    assert result.returncode == 0, result.stderr
    formats, _, flags = result.stdout.partition("SEP\n")

    def values(text: str) -> set[str]:  # fish sorts them and prints `value<TAB>description`
        return {line.split("\t")[0] for line in text.splitlines() if line}

    assert values(formats) == set(completion.OUTPUT_FORMATS)
    assert values(flags) == {"--show-suppressed"}


def test_bash_script_completes(tmp_path: Path) -> None:
    """Source the bash script with a kubectl-gitdrift on PATH and complete a line."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    result = bash_complete(
        bash,
        tmp_path,
        fake_cli_env(tmp_path),
        ("kubectl-gitdrift --output=y", "kubectl-gitdrift --output = y"),
        ("kubectl-gitdrift --show-s", "kubectl-gitdrift --show-s"),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["yaml", "--show-suppressed"]
