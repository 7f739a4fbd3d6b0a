"""Release packaging: the krew archive built by tools/make_dist.py works through the real kubectl
plugin mechanism, and the wheel pip/pipx install declares the console scripts.

The archive test builds linux-amd64 for the running Python only, with wheels cached in the pytest
cache (keyed by the project's requirements, see make_dist.fetch_wheels), and installs the archive
the way krew does: unpack, copy the manifest's `files`, link `bin` into a bin directory on PATH.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import io
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

import pytest
import yaml

from kubectl_gitdrift import __version__
from tests.conftest import ROOT, TESTDATA

PY = f"{sys.version_info.major}.{sys.version_info.minor}"


def _make_dist() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_dist", ROOT / "tools" / "make_dist.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_dist", module)
    spec.loader.exec_module(module)
    return module


def _index_reachable(tmp: Path) -> bool:
    """Can pip fetch a tiny wheel quickly? (The build needs the index unless the cache has a
    matching lock.)"""
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "--no-cache-dir", "-d", str(tmp), "--timeout", "5", "--retries", "0", "six"],
            capture_output=True, timeout=30, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return False
    return result.returncode == 0


@pytest.fixture(scope="module")
def built(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, object]]:
    """(archive, manifest) for linux-amd64 and the running Python, built into a tmp dir."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the archive test builds linux-amd64 and runs it: needs a linux x86_64 host")
    if sys.implementation.name != "cpython" or PY not in _make_dist().PYTHONS:
        pytest.skip(f"make_dist bundles CPython {_make_dist().PYTHONS}, not {PY}")
    tmp = tmp_path_factory.mktemp("dist")
    pytest_cache = getattr(request.config, "cache", None)  # None with -p no:cacheprovider
    if pytest_cache is not None:
        cache = Path(str(pytest_cache.mkdir("gitdrift-dist-wheels")))
    else:
        cache = Path(tempfile.gettempdir()) / "kubectl-gitdrift-dist-wheels"
    lock = cache / f"linux-amd64-cp{PY.replace('.', '')}" / "lock.json"
    if not lock.exists() and not _index_reachable(tmp / "probe"):
        pytest.skip("pip cannot reach the package index and no wheels are cached")
    manifest = tmp / "krew-manifest.yaml"
    shutil.copy(ROOT / "krew-manifest.yaml", manifest)
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "make_dist.py"), "--platform", "linux-amd64",
         "--python", PY, "--out", str(tmp / "dist"), "--manifest", str(manifest),
         "--wheel-cache", str(cache), "--prefer-cached"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    archives = sorted((tmp / "dist").glob("*.tar.gz"))
    assert [a.name for a in archives] == [f"kubectl-gitdrift-v{__version__}-linux-amd64.tar.gz"]
    return archives[0], yaml.safe_load(manifest.read_text())


@pytest.fixture(scope="module")
def krew_install(
    built: tuple[Path, dict[str, object]], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """Install the archive like krew does; return an environment whose PATH holds only its bin
    dir, the interpreter's dir, and the system's (kubectl, git)."""
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
    assert archive.stat().st_size < 40_000_000
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
    assert "kubectl-gitdrift = kubectl_gitdrift.cli:run" in text
    assert "argocd-gitdrift = kubectl_gitdrift.cli:run_argocd" in text


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


def _bdist_wheel_available() -> bool:
    try:
        version = importlib.metadata.version("setuptools")
    except importlib.metadata.PackageNotFoundError:
        return False
    major, minor = (int(p) for p in version.split(".")[:2])
    return (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None


@pytest.mark.slow
def test_wheel_declares_the_console_scripts(tmp_path: Path) -> None:
    """What `pip install .` and `pipx install .` put on PATH, built without the network."""
    if not _bdist_wheel_available():
        pytest.skip("an offline wheel build needs setuptools>=70.1 (or wheel) in this env")
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
    assert "kubectl-gitdrift = kubectl_gitdrift.cli:run" in text
    assert "argocd-gitdrift = kubectl_gitdrift.cli:run_argocd" in text
    assert "kubectl_gitdrift/completion.py" in names
    assert "kubectl_gitdrift/py.typed" in names


# --------------------------------------------------------------------------- shell completion


def test_completion_engine_follows_the_parser() -> None:
    from kubectl_gitdrift import completion

    values, directive = completion.complete(["--snap"])
    assert [v.split("\t")[0] for v in values] == ["--snapshot"]
    assert directive == completion.Directive.NO_FILE_COMP
    assert completion.complete(["-o", ""])[0] == list(completion.OUTPUT_FORMATS)
    assert completion.complete(["--output=j"])[0] == ["--output=json"]
    assert completion.complete(["--repo-root", ""]) == ([], completion.Directive.FILTER_DIRS)
    assert completion.complete(["--snapshot", ""]) == ([], completion.Directive.DEFAULT)
    assert completion.complete(["completion", ""])[0] == ["bash", "zsh"]
    snap = str(TESTDATA / "incident/snapshot.yaml")
    assert "guestbook" in completion.complete(["--snapshot", snap, "gu"])[0]
    first = [v.split("\t")[0] for v in completion.complete([""])[0]]
    assert {"version", "completion"} <= set(first)


def test_completion_main_and_scripts() -> None:
    from kubectl_gitdrift import completion

    out, err = io.StringIO(), io.StringIO()
    assert completion.main(["__complete", "--show-s"], out, err) == 0
    assert out.getvalue().splitlines()[-1] == ":4"
    assert completion.main(["fish"], io.StringIO(), err) == 2
    assert "bash or zsh" in err.getvalue()
    assert "compdef _gitdrift kubectl-gitdrift argocd-gitdrift" in completion.script("zsh", "x")
    with pytest.raises(ValueError, match="unsupported shell"):
        completion.script("fish", "x")


def test_bash_script_completes(tmp_path: Path) -> None:
    """Source the bash script with a kubectl-gitdrift on PATH and complete a line."""
    from kubectl_gitdrift import completion

    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    fake = tmp_path / "kubectl-gitdrift"
    fake.write_text(
        f"#!/bin/sh\nexec {sys.executable} -c 'import sys; from kubectl_gitdrift import "
        'completion; sys.exit(completion.main(sys.argv[2:], sys.stdout, sys.stderr))\' "$@"\n'
    )
    fake.chmod(0o755)
    script = tmp_path / "gitdrift.bash"
    script.write_text(completion.script("bash", "kubectl gitdrift"))
    probe = (
        f"source {script}\n"
        'COMP_LINE="kubectl-gitdrift --output=y"; COMP_POINT=${#COMP_LINE}\n'
        "COMP_WORDS=(kubectl-gitdrift --output = y); COMP_CWORD=3\n"
        '_gitdrift_direct; printf "%s\\n" "${COMPREPLY[@]}"\n'
        'COMP_LINE="kubectl-gitdrift --show-s"; COMP_POINT=${#COMP_LINE}\n'
        "COMP_WORDS=(kubectl-gitdrift --show-s); COMP_CWORD=1\n"
        '_gitdrift_direct; printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        [bash, "--norc", "-c", probe], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["yaml", "--show-suppressed"]
