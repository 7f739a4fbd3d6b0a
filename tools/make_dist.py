"""Build the release archives for krew and the argocd CLI, and fill in krew-manifest.yaml.

Usage: ``python tools/make_dist.py [--platform linux-amd64]... [--python 3.12]... [--out dist]``
(``make dist`` runs it with the defaults: every platform, every supported CPython), and
``python tools/make_dist.py --make-lock`` (``make lock``), which writes dist.lock.

dist.lock is the one place dependencies move: the exact version and sha256 of every wheel the
archives bundle, per platform and CPython, resolved by pip from pyproject.toml's dependencies
(``pip install --dry-run --report``, wheels from the package index only), and of the build tools:
the pip that installs them (run straight from its wheel) and the setuptools that builds the project
wheel. A build installs only those files (``--require-hashes``) and refuses a lock that
pyproject's dependencies or build requirements have moved away from. Same lock + same sources =
same archives, on any day and machine.

Each archive ``dist/kubectl-gitdrift-v<version>-<os>-<arch>.tar.gz`` holds:

- ``kubectl-gitdrift``: one self-contained executable, ``#!/usr/bin/env python3`` + a zip whose
  ``__main__.py`` is tools/bundle_bootstrap.py. The zip carries kubectl-gitdrift and all its
  dependencies installed once per supported CPython minor (3.10 ... 3.14), from the locked wheels
  for that platform (``--platform/--python-version/--only-binary=:all:``): PyYAML, jq, rpds-py,
  cffi and others are C extensions, so an install is per platform *and* per Python. Each
  distribution is stored once per distinct build (a pure wheel once for all Pythons). On first
  run the bootstrap extracts the running Python's set to ``~/.cache/kubectl-gitdrift/``.
- ``argocd-gitdrift`` and ``kubectl_complete-gitdrift``: tiny wrappers that run the executable
  beside them (through symlinks too) as the argocd CLI plugin and as kubectl's completion helper.
- ``LICENSE`` and ``README.md``.

kubernetes-validate ships ~108 MB of schemas; only the ``_definitions.json`` of the newest
``--keep-schemas`` Kubernetes minors are kept (kubectl_gitdrift/compare/openapi.py reads nothing
else), and the build checks that the default version openapi.py asks for still resolves the
same way.

A (platform, Python) pair without wheels for every dependency is recorded as such in the lock and
dropped with a message; a platform with no Python left is dropped from the archives and the
manifest.

Reproducible: archives are byte-identical for the same lock and sources: sorted entries, fixed
owners, modes and timestamps (the lock's ``source_date_epoch``, not the build's or a commit's
time, so only a change of what is packaged changes an archive), no gzip name or time, and no paths
of the build machine inside. pip runs without the machine's configuration files, find-links,
extra indexes or constraints (``PIP_INDEX_URL``, a PyPI mirror, still applies).
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import contextlib
import csv
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
BOOTSTRAP = Path(__file__).resolve().parent / "bundle_bootstrap.py"
RELEASES = "https://github.com/kubectl-gitdrift/kubectl-gitdrift/releases/download"
PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")
SHEBANG = b"#!/usr/bin/env python3\n"
ENTRIES = {
    "kubectl": "kubectl_gitdrift.cli.main:run",
    "argocd": "kubectl_gitdrift.cli.main:run_argocd",
    "complete": "kubectl_gitdrift.cli.completion:kubectl_complete",
}
SCHEMA_DIR = "kubernetes_validate/kubernetes-json-schema"
# C-accelerated packages that also ship a pure wheel: the pure one is ~100x smaller
PURE_PREFERRED = {"python-box"}
_SCHEMA_RE = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-local$")
_ZIP_EPOCH = 315532800  # 1980-01-01, the earliest time a zip entry can carry
LOCK_ABOUT = (
    "made by `make lock` (tools/make_dist.py --make-lock) from pyproject.toml: every wheel `make "
    "dist` bundles, per platform and CPython, and the build tools (pip runs from its wheel, "
    "setuptools builds the project wheel); `make dist` installs only these files, checked by "
    "sha256 (pip --require-hashes). Do not edit: run `make lock` to move a dependency."
)

# The wrappers run the executable that sits beside their real path, telling it which entry point
# to take; the bootstrap reads KUBECTL_GITDRIFT_ENTRY (see tools/bundle_bootstrap.py).
_WRAPPER = '''#!/usr/bin/env python3
"""{doc}

Runs the kubectl-gitdrift executable beside this file's real path, or beside this link, or on PATH.
"""
import os
import shutil
import sys

here = os.path.abspath(__file__)
candidates = [
    os.path.join(os.path.dirname(os.path.realpath(here)), "kubectl-gitdrift"),
    os.path.join(os.path.dirname(here), "kubectl-gitdrift"),
    shutil.which("kubectl-gitdrift") or "",
]
for bundle in candidates:
    if os.path.isfile(bundle) and os.access(bundle, os.X_OK):
        os.environ["KUBECTL_GITDRIFT_ENTRY"] = "{entry}"
        os.execv(bundle, [bundle] + sys.argv[1:])
sys.stderr.write("error: {name}: cannot find the kubectl-gitdrift executable\\n")
sys.stderr.write("  hint: keep {name} in the same directory as kubectl-gitdrift\\n")
sys.exit(3)
'''
WRAPPERS = {
    "argocd-gitdrift": _WRAPPER.format(
        doc="`argocd gitdrift`: the argocd CLI runs argocd-<name> executables from PATH.",
        entry="argocd",
        name="argocd-gitdrift",
    ),
    "kubectl_complete-gitdrift": _WRAPPER.format(
        doc="Shell completion for `kubectl gitdrift` (kubectl >= 1.26 runs it from PATH).",
        entry="complete",
        name="kubectl_complete-gitdrift",
    ),
}

CAVEATS = """\
Needs python3 on PATH: CPython {pythons}. If `python3` is another version,
kubectl-gitdrift re-runs itself with python3.X from PATH or $KUBECTL_GITDRIFT_PYTHON.
Also needs git, and kubectl (for `kubectl kustomize`) or kustomize.
The first run unpacks its libraries into ~/.cache/kubectl-gitdrift.

The archive also holds the argocd CLI plugin (argocd >= v3.0: `argocd gitdrift <app>`)
and kubectl's completion helper (kubectl >= 1.26). Copy them next to the plugin's link
(copies keep working after `kubectl krew upgrade`):
  cp "${{KREW_ROOT:-$HOME/.krew}}/store/gitdrift/v{version}/argocd-gitdrift" \\
     "${{KREW_ROOT:-$HOME/.krew}}/store/gitdrift/v{version}/kubectl_complete-gitdrift" \\
     "${{KREW_ROOT:-$HOME/.krew}}/bin/"
"""


@dataclass(frozen=True)
class Platform:
    """A krew os/arch pair and the pip platform tags whose wheels run there."""

    os: str
    arch: str
    pip_platforms: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.os}-{self.arch}"


def _manylinux(arch: str) -> tuple[str, ...]:
    # glibc >= 2.28 (RHEL 8, Debian 10, Ubuntu 20.04); pip does not widen manylinux_2_X itself.
    return (
        *(f"manylinux_2_{minor}_{arch}" for minor in range(28, 16, -1)),
        f"manylinux2014_{arch}",
    )


PLATFORMS = {
    p.name: p
    for p in (
        Platform("linux", "amd64", _manylinux("x86_64")),
        Platform("linux", "arm64", _manylinux("aarch64")),
        # pip widens a macosx tag to every older macOS and to universal2 wheels
        Platform("darwin", "amd64", ("macosx_11_0_x86_64",)),
        Platform("darwin", "arm64", ("macosx_11_0_arm64",)),
    )
}


class BuildError(Exception):
    """The build cannot go on."""


class Unavailable(Exception):
    """No wheels for one (platform, Python) pair."""


@dataclass
class Archive:
    platform: Platform
    path: Path
    sha256: str
    pythons: tuple[str, ...]
    bundle_bytes: int
    installed_bytes: dict[str, int] = field(default_factory=dict)


def log(message: str) -> None:
    sys.stderr.write(f"make_dist: {message}\n")
    sys.stderr.flush()


# --------------------------------------------------------------------------- project


def pyproject() -> dict[str, Any]:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def project_version() -> str:
    return str(pyproject()["project"]["version"])


def declared() -> dict[str, list[str]]:
    """What the lock must have been made for: pyproject's runtime dependencies and build
    requirements, sorted."""
    project = pyproject()
    return {
        "requires": sorted(project["project"].get("dependencies", [])),
        "build_requires": sorted(project["build-system"]["requires"]),
    }


def _pip_env() -> dict[str, str]:
    """pip's environment for locking and building: no configuration files and none of the
    machine's extra indexes, find-links or constraints (PIP_INDEX_URL, a mirror of PyPI, and
    the proxy/certificate settings stay). The lock's hashes decide what is installed."""
    env = {k: v for k, v in os.environ.items() if k not in _PIP_LOCAL}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


_PIP_LOCAL = {
    "PIP_CONFIG_FILE",
    "PIP_FIND_LINKS",
    "PIP_EXTRA_INDEX_URL",
    "PIP_CONSTRAINT",
    "PIP_REQUIREMENT",
    "PIP_NO_INDEX",
    "PIP_PRE",
    "PIP_TARGET",
    "PIP_PREFIX",
    "PIP_USER",
    "PIP_REQUIRE_HASHES",
    "PIP_ONLY_BINARY",
    "PIP_NO_BINARY",
    "PIP_REQUIRE_VIRTUALENV",
    "PYTHONPATH",
}


def pip(
    *args: str, runner: Sequence[str] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """Run pip: the running interpreter's (`python -m pip`), or `runner` (the locked pip)."""
    command = [*(runner or (sys.executable, "-m", "pip")), *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, check=False, env=_pip_env()
    )


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _target_args(platform: Platform, python: str) -> list[str]:
    tag = "cp" + python.replace(".", "")
    args = ["--only-binary=:all:", "--implementation", "cp", "--python-version", python]
    for abi in (tag, "abi3", "none"):
        args += ["--abi", abi]
    for plat in platform.pip_platforms:
        args += ["--platform", plat]
    return args


def set_name(platform: Platform, python: str) -> str:
    return f"{platform.name}-cp{python.replace('.', '')}"


def _missing(output: str) -> str:
    found = re.findall(r"No matching distribution found for (\S+)", output)
    return found[-1] if found else output.strip().splitlines()[-1] if output.strip() else "?"


@dataclass(frozen=True, order=True, slots=True)
class Entry:
    """One locked wheel."""

    name: str
    version: str
    file: str
    sha256: str

    def as_json(self) -> dict[str, str]:
        return {
            "name": self.name,
            "version": self.version,
            "file": self.file,
            "sha256": self.sha256,
        }

    @classmethod
    def of(cls, data: Mapping[str, str]) -> Entry:
        return cls(data["name"], data["version"], data["file"], data["sha256"])


# --------------------------------------------------------------------------- the lock (make lock)


def _resolve(requirements: Sequence[str], target: Sequence[str], work: Path) -> list[Entry]:
    """What pip would install for `requirements` with `target` options, as lock entries (name,
    version, file, sha256 from the index), without downloading the wheels (PEP 658 metadata)."""
    work.mkdir(parents=True, exist_ok=True)
    report = work / "report.json"
    (work / "requirements.txt").write_text("".join(f"{r}\n" for r in requirements))
    result = pip(
        "install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report),
        "--target", str(work / "target"), *target, "-r", str(work / "requirements.txt"),
    )  # fmt: skip
    if result.returncode != 0:
        output = result.stdout + result.stderr
        if "No matching distribution found" in output or "ResolutionImpossible" in output:
            raise Unavailable(_missing(output))
        raise BuildError(f"pip could not resolve {' '.join(target)}:\n{output}")  # the network?
    entries = []
    for item in json.loads(report.read_text())["install"]:
        info = item["download_info"]
        url: str = info["url"]
        sha256 = info.get("archive_info", {}).get("hashes", {}).get("sha256")
        if not url.startswith(("https://", "http://")) or not sha256:
            raise BuildError(f"{url}: make lock takes wheels from the package index only")
        entries.append(
            Entry(
                _canonical(item["metadata"]["name"]),
                item["metadata"]["version"],
                url.rsplit("/", 1)[-1].split("#")[0],
                sha256,
            )
        )
    return sorted(entries)


def _prefer_pure(entries: list[Entry], python: str, work: Path) -> list[Entry]:
    """Swap a PURE_PREFERRED distribution's compiled wheel for its pure one, when there is one."""
    out = []
    for entry in entries:
        if entry.name in PURE_PREFERRED and not entry.file.endswith("-none-any.whl"):
            pure_target = ["--only-binary=:all:", "--no-deps", "--platform", "any"]
            pure_target += ["--implementation", "py", "--abi", "none", "--python-version", python]
            with contextlib.suppress(Unavailable):  # no pure wheel: keep the compiled one
                (entry,) = _resolve([f"{entry.name}=={entry.version}"], pure_target, work / "pure")
        out.append(entry)
    return sorted(out)


def make_lock(platforms: Sequence[str], pythons: Sequence[str], jobs: int = 4) -> dict[str, Any]:
    """Resolve every (platform, Python) pair's wheels from pyproject's dependencies, and the
    build tools (pip, and setuptools as pyproject's build-system asks), into lock data."""
    wanted = declared()
    with tempfile.TemporaryDirectory(prefix="gitdrift-lock-") as tmp:
        work = Path(tmp)
        tools_target = ["--only-binary=:all:", "--no-deps", "--python-version", PYTHONS[0]]
        tools = _resolve(["pip", *wanted["build_requires"]], tools_target, work / "tools")
        pairs = [(PLATFORMS[p], py) for p in platforms for py in pythons]

        def one(pair: tuple[Platform, str]) -> tuple[str, list[Entry] | str]:
            platform, python = pair
            name = set_name(platform, python)
            try:
                found = _resolve(wanted["requires"], _target_args(platform, python), work / name)
            except Unavailable as exc:
                log(f"{name}: no wheel for {exc}")
                return name, str(exc)
            log(f"{name}: {len(found)} wheels")
            return name, _prefer_pure(found, python, work / name)

        with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
            results = dict(pool.map(one, pairs))
    return {
        "about": LOCK_ABOUT,
        **wanted,
        "source_date_epoch": int(time.time()),
        "tools": [e.as_json() for e in tools],
        "sets": {
            name: [e.as_json() for e in found]
            for name, found in sorted(results.items())
            if not isinstance(found, str)
        },
        "unavailable": {
            name: found for name, found in sorted(results.items()) if isinstance(found, str)
        },
    }


def write_lock(path: Path, lock: Mapping[str, Any]) -> None:
    """JSON with one wheel a line, so a `make lock` diff reads as the wheels that moved."""
    lines = []
    for key, value in lock.items():
        if key in ("tools", "sets"):
            groups = {"": value} if key == "tools" else value
            inner = []
            for name, entries in groups.items():
                rows = ",\n".join(f"   {json.dumps(e)}" for e in entries)
                inner.append(f"  {json.dumps(name)}: [\n{rows}\n  ]" if name else rows)
            text = (
                "[\n" + inner[0] + "\n ]" if key == "tools" else "{\n" + ",\n".join(inner) + "\n }"
            )
        else:
            text = json.dumps(value)
        lines.append(f" {json.dumps(key)}: {text}")
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n")


def read_lock(path: Path) -> dict[str, Any]:
    """The lock, checked against pyproject.toml: a dependency change needs `make lock`."""
    try:
        lock: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BuildError(f"{path}: cannot read the lock ({exc}); run `make lock`") from exc
    problems = lock_problems(lock, declared())
    if problems:
        raise BuildError(f"{path} is stale: {'; '.join(problems)}; run `make lock`")
    return lock


def lock_problems(lock: Mapping[str, Any], wanted: Mapping[str, Sequence[str]]) -> list[str]:
    """How `lock` disagrees with pyproject's dependencies (`declared()`); empty when it agrees."""
    problems = []
    for key, what in (("requires", "dependencies"), ("build_requires", "build-system requires")):
        have, want = list(lock.get(key, [])), list(wanted[key])
        if have != want:
            added = sorted(set(want) - set(have))
            dropped = sorted(set(have) - set(want))
            problems.append(f"pyproject's {what} changed (added {added}, dropped {dropped})")
    if problems:
        return problems
    names = {_canonical(re.split(r"[\s;<>=!~\[(]", r, maxsplit=1)[0]) for r in wanted["requires"]}
    for name, entries in lock.get("sets", {}).items():
        missing = sorted(names - {e["name"] for e in entries})
        if missing:
            problems.append(f"{name} has no wheel for {missing}")
    return problems


# --------------------------------------------------------------------------- wheels and installs


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _requirements(entries: Iterable[Entry], folder: Path | None = None) -> str:
    """pip requirements pinning each entry by hash: `name==version`, or the file in `folder`."""
    return "".join(
        f"{folder / e.file if folder else f'{e.name}=={e.version}'} --hash=sha256:{e.sha256}\n"
        for e in entries
    )


def fetch(
    groups: Mapping[str, tuple[Sequence[Entry], Sequence[str]]], cache: Path, *, offline: bool
) -> None:
    """Make sure `cache` holds every locked file with its locked sha256: pip downloads what is
    missing (`--require-hashes`, one call per group of target options)."""
    cache.mkdir(parents=True, exist_ok=True)
    checked: dict[str, bool] = {}

    def present(entry: Entry) -> bool:
        if entry.file not in checked:
            path = cache / entry.file
            checked[entry.file] = path.is_file() and _sha256(path) == entry.sha256
        return checked[entry.file]

    for group, (entries, target) in groups.items():
        missing = sorted({e for e in entries if not present(e)})
        if not missing:
            continue
        if offline:
            raise BuildError(f"{group}: offline, and {cache} lacks {missing[0].file}")
        with tempfile.TemporaryDirectory(prefix="gitdrift-fetch-") as tmp:
            reqs = Path(tmp) / "requirements.txt"
            reqs.write_text(_requirements(missing))
            result = pip(
                "download", "--no-deps", "--require-hashes", "-d", tmp, *target, "-r", str(reqs)
            )
            if result.returncode != 0:
                raise BuildError(f"{group}: pip download failed:\n{result.stdout}{result.stderr}")
            for entry in missing:
                got = Path(tmp) / entry.file
                if not got.is_file() or _sha256(got) != entry.sha256:
                    raise BuildError(f"{group}: pip did not fetch {entry.file} as locked")
                shutil.move(got, cache / entry.file)
                checked[entry.file] = True


def locked_pip(lock: Mapping[str, Any], cache: Path) -> list[str]:
    """The command that runs the locked pip (straight from its wheel, as pip allows)."""
    (entry,) = [Entry.of(e) for e in lock["tools"] if e["name"] == "pip"]
    return [sys.executable, str(cache / entry.file / "pip")]


def build_project_wheel(lock: Mapping[str, Any], cache: Path, work: Path, epoch: int) -> Path:
    """The project's wheel, built from a clean copy of the sources by the locked setuptools
    (PEP 517 `build_wheel`, called directly: nothing else on the path)."""
    src = work / "src"
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "kubectl_gitdrift",
        src / "kubectl_gitdrift",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    backend = work / "backend"
    tools = [Entry.of(e) for e in lock["tools"] if e["name"] != "pip"]
    reqs = work / "backend.txt"
    reqs.write_text(_requirements(tools, cache))
    result = pip(
        "install", "--target", str(backend), "--no-deps", "--no-index", "--no-compile",
        "--require-hashes", "-r", str(reqs), runner=locked_pip(lock, cache),
    )  # fmt: skip
    if result.returncode != 0:
        raise BuildError(f"installing the build backend failed:\n{result.stdout}{result.stderr}")
    out = work / "project"
    out.mkdir()
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "from setuptools import build_meta; print(build_meta.build_wheel(sys.argv[2]))"
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", code, str(backend), str(out)],
        cwd=src, capture_output=True, text=True, timeout=600, check=False,
        env={**_pip_env(), "SOURCE_DATE_EPOCH": str(epoch), "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    if result.returncode != 0:
        raise BuildError(f"building the project wheel failed:\n{result.stdout}{result.stderr}")
    wheels = sorted(out.glob("kubectl_gitdrift-*.whl"))
    if len(wheels) != 1:
        raise BuildError(f"expected one wheel in {out}, found {wheels}")
    return wheels[0]


def install(
    platform: Platform,
    python: str,
    entries: Sequence[Entry],
    project: Path,
    runner: Sequence[str],
    cache: Path,
    work: Path,
    *,
    keep_schemas: int,
    kube_default: str,
) -> tuple[Path, list[str]]:
    """Install the project and the locked wheels for one (platform, Python) into its own
    site-packages folder with the locked pip, every file checked against its hash (no
    resolution here). kubernetes-validate is unpacked by hand, keeping only the schemas a run
    reads. Returns the folder and the kept schema versions."""
    site = work / "site" / f"{platform.name}-{python}"
    shutil.rmtree(site, ignore_errors=True)
    by_hand = [e for e in entries if e.name == "kubernetes-validate"]
    if len(by_hand) != 1:
        raise BuildError(f"expected one kubernetes-validate wheel for {platform.name} {python}")
    others = [e for e in entries if e not in by_hand]
    reqs = work / f"{set_name(platform, python)}.txt"
    reqs.write_text(_requirements(others, cache) + f"{project} --hash=sha256:{_sha256(project)}\n")
    result = pip(
        "install", "--target", str(site), "--no-deps", "--no-index", "--no-compile",
        "--no-warn-script-location", "--no-cache-dir", "--require-hashes",
        *_target_args(platform, python), "-r", str(reqs), runner=runner,
    )  # fmt: skip
    if result.returncode != 0:
        raise BuildError(f"pip install for {platform.name} py{python}:\n{result.stderr}")
    kept = unpack_kubernetes_validate(cache / by_hand[0].file, site, keep_schemas, kube_default)
    return site, kept


# --------------------------------------------------------------------------- pruning


def _version_key(text: str) -> tuple[int, int, int | None]:
    match = re.match(r"^v?(\d+)\.(\d+)(?:\.(\d+))?", text)
    if match is None:
        raise BuildError(f"not a version: {text}")
    major, minor, patch = match.groups()
    return int(major), int(minor), None if patch is None else int(patch)


def _pick(versions: Sequence[tuple[int, int, int]], requested: str) -> tuple[int, int, int]:
    """The same choice kubectl_gitdrift.compare.openapi._pick makes."""
    major, minor, patch = _version_key(requested)
    limit = (major, minor, patch if patch is not None else 10**9)
    older = [v for v in sorted(versions) if v <= limit]
    return older[-1] if older else max(versions)


def default_kube_version() -> str:
    """The version compare/openapi.py's load_builtin_definitions() asks for by default (read from
    the source: the build's Python need not be able to import the package)."""
    source = (ROOT / "kubectl_gitdrift" / "compare" / "openapi.py").read_text()
    constants = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            constants.update(
                {t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)}
            )
        if isinstance(node, ast.FunctionDef) and node.name == "load_builtin_definitions":
            args = node.args.args[-len(node.args.defaults) :] if node.args.defaults else []
            for arg, default in zip(args, node.args.defaults, strict=True):
                if arg.arg != "kube_version":
                    continue
                if isinstance(default, ast.Constant):
                    return str(default.value)
                if isinstance(default, ast.Name) and default.id in constants:
                    return str(constants[default.id])
    raise BuildError("cannot read load_builtin_definitions' default kube_version in openapi.py")


def prune(site: Path) -> None:
    """Drop what a run never reads or what names the build machine: scripts (their shebang is
    the building interpreter's path) and bytecode, `direct_url.json` (the path of the wheel pip
    installed from), and their rows in each RECORD."""
    shutil.rmtree(site / "bin", ignore_errors=True)
    for cache in sorted(site.rglob("__pycache__"), reverse=True):
        shutil.rmtree(cache, ignore_errors=True)
    for direct_url in site.glob("*.dist-info/direct_url.json"):
        direct_url.unlink()
    for record in site.glob("*.dist-info/RECORD"):
        lines = record.read_text().splitlines()
        gone = (f"{record.parent.name}/direct_url.json,", "../", "/", "bin/")
        record.write_text("".join(f"{line}\n" for line in lines if not line.startswith(gone)))


def unpack_kubernetes_validate(
    wheel: Path, site: Path, keep_schemas: int, kube_default: str
) -> list[str]:
    """Unpack kubernetes-validate's code and only the newest `keep_schemas` minors'
    `_definitions.json` (kubectl_gitdrift/compare/openapi.py reads nothing else), instead of its
    108 MB of schemas. Checks that the default version openapi.py asks for resolves the same way."""
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        versions: dict[tuple[int, int, int], str] = {}
        for name in names:
            parts = name.split("/")
            if name.startswith(SCHEMA_DIR + "/") and len(parts) == 4:
                match = _SCHEMA_RE.match(parts[2])
                if match and parts[3] == "_definitions.json":
                    major, minor, patch = (int(g) for g in match.groups())
                    versions[(major, minor, patch)] = parts[2]
        if not versions:
            raise BuildError(f"{wheel.name}: no {SCHEMA_DIR}/v*-local/_definitions.json")
        every = sorted(versions)
        kept = every[-keep_schemas:]
        if _pick(kept, kube_default) != _pick(every, kube_default):
            raise BuildError(
                f"keeping {len(kept)} schema versions drops Kubernetes {kube_default}, the "
                "default of kubectl_gitdrift.compare.openapi: raise --keep-schemas"
            )
        wanted = {f"{SCHEMA_DIR}/{versions[v]}/_definitions.json" for v in kept}
        for name in names:
            if name.endswith("/") or (name.startswith(SCHEMA_DIR + "/") and name not in wanted):
                continue
            target = site.joinpath(*name.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(name))
    return [versions[v] for v in kept]


# --------------------------------------------------------------------------- the bundle


def _file_mode(path: Path) -> int:
    return 0o755 if path.stat().st_mode & 0o111 else 0o644


def split_distributions(site: Path) -> dict[str, dict[str, tuple[bytes, int]]]:
    """Group an installed site-packages by distribution: `<dist-info stem>-<content hash>` →
    {relative path: (content, mode)}. Identical builds of a distribution get identical keys."""
    owner: dict[str, str] = {}
    dists = sorted(site.glob("*.dist-info"))
    for dist in dists:
        for row in csv.reader((dist / "RECORD").read_text().splitlines()):
            rel = row[0] if row else ""
            if rel and not rel.startswith(("..", "/")) and (site / rel).is_file():
                owner[rel] = dist.name
        for extra in dist.rglob("*"):  # dist-info files not in RECORD (pip adds some)
            if extra.is_file():
                owner.setdefault(extra.relative_to(site).as_posix(), dist.name)
    files = sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())
    orphans = [f for f in files if f not in owner]
    if orphans:
        raise BuildError(f"files no distribution claims in {site}: {orphans[:5]}")
    grouped: dict[str, dict[str, tuple[bytes, int]]] = {d.name: {} for d in dists}
    for rel in files:
        path = site / rel
        grouped[owner[rel]][rel] = (path.read_bytes(), _file_mode(path))
    out = {}
    for name, members in grouped.items():
        digest = hashlib.sha256()
        for rel, (data, mode) in sorted(members.items()):
            digest.update(f"{rel}\0{mode:o}\0{hashlib.sha256(data).hexdigest()}\n".encode())
        out[f"{name.removesuffix('.dist-info')}-{digest.hexdigest()[:10]}"] = members
    return out


def _zip_bytes(members: Mapping[str, tuple[bytes, int]], epoch: int) -> bytes:
    stamp = time.gmtime(max(epoch, _ZIP_EPOCH))[:6]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name in sorted(members):
            data, mode = members[name]
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = (0o100000 | mode) << 16
            zf.writestr(info, data, compresslevel=6)
    return buffer.getvalue()


def make_bundle(
    sites: Mapping[str, Path], version: str, platform: Platform, epoch: int
) -> tuple[bytes, dict[str, int]]:
    """The executable: shebang + zip (bootstrap, `_bundle.json`, `lib/<dist>/...`)."""
    members: dict[str, tuple[bytes, int]] = {
        "__main__.py": (BOOTSTRAP.read_bytes(), 0o644),
    }
    pythons: dict[str, list[str]] = {}
    installed: dict[str, int] = {}
    for python, site in sorted(sites.items()):
        prefixes = []
        size = 0
        for key, files in sorted(split_distributions(site).items()):
            prefix = f"lib/{key}/"
            prefixes.append(prefix)
            for rel, (data, mode) in files.items():
                members[prefix + rel] = (data, mode)
                size += len(data)
        pythons[python] = prefixes
        installed[python] = size
    digest = hashlib.sha256()
    for name, (data, mode) in sorted(members.items()):
        digest.update(f"{name}\0{mode:o}\0{hashlib.sha256(data).hexdigest()}\n".encode())
    meta = {
        "name": "kubectl-gitdrift",
        "version": version,
        "platform": platform.name,
        "build": digest.hexdigest(),
        "entries": ENTRIES,
        "pythons": pythons,
    }
    members["_bundle.json"] = (json.dumps(meta, indent=1, sort_keys=True).encode(), 0o644)
    return SHEBANG + _zip_bytes(members, epoch), installed


def make_tarball(members: Iterable[tuple[str, bytes, int]], epoch: int) -> bytes:
    """A reproducible .tar.gz: sorted, root-owned, one mtime, no gzip name or timestamp."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data, mode in sorted(members):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = mode
            info.mtime = epoch
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, compresslevel=6, mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def archive_name(version: str, platform: Platform) -> str:
    return f"kubectl-gitdrift-v{version}-{platform.os}-{platform.arch}.tar.gz"


# --------------------------------------------------------------------------- the krew manifest


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def manifest_platforms(version: str, archives: Sequence[Archive]) -> list[dict[str, Any]]:
    files = ["kubectl-gitdrift", *WRAPPERS, "LICENSE", "README.md"]
    return [
        {
            "selector": {"matchLabels": {"os": a.platform.os, "arch": a.platform.arch}},
            "uri": f"{RELEASES}/v{version}/{a.path.name}",
            "sha256": a.sha256,
            "bin": "kubectl-gitdrift",
            "files": [{"from": name, "to": "."} for name in files],
        }
        for a in archives
    ]


def write_manifest(path: Path, version: str, archives: Sequence[Archive]) -> None:
    manifest = yaml.safe_load(path.read_text())
    spec = manifest["spec"]
    spec["version"] = f"v{version}"
    everywhere = sorted(set.intersection(*(set(a.pythons) for a in archives)), key=_version_key)
    spec["caveats"] = CAVEATS.format(pythons=", ".join(everywhere), version=version)
    spec["platforms"] = manifest_platforms(version, archives)
    text = yaml.dump(manifest, Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True)
    path.write_text(text)


# --------------------------------------------------------------------------- main


def _chosen(
    lock: Mapping[str, Any], platforms: Sequence[str], pythons: Sequence[str], lock_path: Path
) -> list[tuple[Platform, str, list[Entry]]]:
    """The (platform, Python, locked wheels) to build, in order; the lock's unavailable pairs
    are dropped with a message."""
    chosen = []
    for name in platforms:
        platform = PLATFORMS[name]
        for python in pythons:
            key = set_name(platform, python)
            if key in lock.get("unavailable", {}):
                log(f"{name}: dropping Python {python}: no wheel for {lock['unavailable'][key]}")
            elif key in lock.get("sets", {}):
                chosen.append((platform, python, [Entry.of(e) for e in lock["sets"][key]]))
            else:
                raise BuildError(f"{lock_path} has nothing for {key}: run `make lock`")
    return chosen


def build(args: argparse.Namespace) -> list[Archive]:
    version = project_version()
    lock = read_lock(args.lock)
    epoch = lock["source_date_epoch"] if args.source_date_epoch is None else args.source_date_epoch
    epoch = max(int(epoch), _ZIP_EPOCH)
    kube_default = default_kube_version()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    cache: Path = args.wheel_cache
    readme = (ROOT / "README.md").read_bytes()
    license_text = (ROOT / "LICENSE").read_bytes()
    chosen = _chosen(lock, args.platform, args.python, args.lock)
    started = time.monotonic()
    groups: dict[str, tuple[Sequence[Entry], Sequence[str]]] = {
        "build tools": ([Entry.of(e) for e in lock["tools"]], ["--only-binary=:all:"])
    }
    for platform, python, entries in chosen:
        groups[set_name(platform, python)] = (entries, _target_args(platform, python))
    fetch(groups, cache, offline=args.offline)
    log(f"every locked wheel is in {cache} ({time.monotonic() - started:.0f}s)")
    runner = locked_pip(lock, cache)
    with tempfile.TemporaryDirectory(prefix="gitdrift-dist-") as tmp:
        work = Path(tmp)
        project = build_project_wheel(lock, cache, work, epoch)
        log(f"built {project.name} ({time.monotonic() - started:.1f}s)")

        def one(name: str) -> Archive | None:
            sites: dict[str, Path] = {}
            kept: list[str] = []
            for platform, python, entries in chosen:
                if platform.name != name:
                    continue
                site, kept = install(
                    platform,
                    python,
                    entries,
                    project,
                    runner,
                    cache,
                    work,
                    keep_schemas=args.keep_schemas,
                    kube_default=kube_default,
                )
                prune(site)
                sites[python] = site
            platform = PLATFORMS[name]
            if not sites:
                log(f"dropping {platform.name}: no supported Python has wheels for it")
                return None
            bundle, installed = make_bundle(sites, version, platform, epoch)
            members = [
                ("kubectl-gitdrift", bundle, 0o755),
                *((name, text.encode(), 0o755) for name, text in WRAPPERS.items()),
                ("LICENSE", license_text, 0o644),
                ("README.md", readme, 0o644),
            ]
            data = make_tarball(members, epoch)
            path = out / archive_name(version, platform)
            path.write_bytes(data)
            archive = Archive(
                platform=platform,
                path=path,
                sha256=hashlib.sha256(data).hexdigest(),
                pythons=tuple(sorted(sites, key=_version_key)),
                bundle_bytes=len(bundle),
                installed_bytes=installed,
            )
            log(
                f"{path.name}: {len(data) / 1e6:.1f} MB (executable {len(bundle) / 1e6:.1f} MB; "
                f"Pythons {', '.join(archive.pythons)}; schemas {', '.join(kept)}; "
                f"{time.monotonic() - started:.0f}s)"
            )
            return archive

        # platforms in parallel (pip runs as a process; zlib lets go of the GIL); each
        # archive depends only on its own inputs, so the order they finish in changes nothing
        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            archives = [a for a in pool.map(one, args.platform) if a is not None]
    if not archives:
        raise BuildError("no platform could be built")
    write_manifest(args.manifest, version, archives)
    sums = "".join(f"{a.sha256}  {a.path.name}\n" for a in archives)
    (out / "SHA256SUMS").write_text(sums)
    log(f"wrote {args.manifest} ({len(archives)} platforms) and {out / 'SHA256SUMS'}")
    return archives


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--make-lock",
        action="store_true",
        help="resolve pyproject's dependencies anew for every platform and Python and write the "
        "lock (`make lock`); builds nothing",
    )
    parser.add_argument(
        "--lock",
        type=Path,
        default=ROOT / "dist.lock",
        help="the lock: every wheel's version and sha256 (default: dist.lock)",
    )
    parser.add_argument(
        "--platform",
        action="append",
        choices=sorted(PLATFORMS),
        help="build only this os-arch (repeatable; default: all)",
    )
    parser.add_argument(
        "--python",
        action="append",
        choices=PYTHONS,
        help="bundle only this CPython minor (repeatable; default: all supported)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="default: dist/")
    parser.add_argument(
        "--manifest",
        type=Path,
        default=ROOT / "krew-manifest.yaml",
        help="the krew manifest to fill in (default: krew-manifest.yaml)",
    )
    parser.add_argument(
        "--wheel-cache",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "kubectl-gitdrift-dist",
        help="where the locked wheels are kept once downloaded (checked by sha256 on every use)",
    )
    parser.add_argument(
        "--offline",
        action="store_true",
        help="never use the network: every locked wheel must be in the wheel cache",
    )
    parser.add_argument(
        "--source-date-epoch",
        type=int,
        metavar="SECONDS",
        help="the archives' timestamps (default: the lock's source_date_epoch)",
    )
    parser.add_argument(
        "--keep-schemas",
        type=int,
        default=6,
        metavar="N",
        help="keep the schemas of the newest N Kubernetes minors (default: 6)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=4,
        metavar="N",
        help="parallel resolutions (--make-lock) or platform builds (default: 4)",
    )
    args = parser.parse_args(argv)
    if args.make_lock and (args.platform or args.python):
        parser.error("--make-lock locks every platform and Python: no --platform/--python")
    args.platform = args.platform or list(PLATFORMS)
    args.python = sorted(set(args.python or PYTHONS), key=_version_key)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    try:
        if args.make_lock:
            lock = make_lock(args.platform, args.python, jobs=args.jobs)
            write_lock(args.lock, lock)
            log(
                f"wrote {args.lock}: {len(lock['sets'])} platform/Python sets, "
                f"{len(lock['unavailable'])} without wheels"
            )
        else:
            build(args)
    except BuildError as exc:
        log(f"error: {exc}")
        return 1
    log(f"done in {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
