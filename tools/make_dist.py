"""Build the release archives for krew and the argocd CLI, and fill in krew-manifest.yaml.

Usage: ``python tools/make_dist.py [--platform linux-amd64]... [--python 3.12]... [--out dist]``
(``make dist`` runs it with the defaults: every platform, every supported CPython).

Each archive ``dist/kubectl-gitdrift-v<version>-<os>-<arch>.tar.gz`` holds:

- ``kubectl-gitdrift``: one self-contained executable, ``#!/usr/bin/env python3`` + a zip whose
  ``__main__.py`` is tools/bundle_bootstrap.py. The zip carries kubectl-gitdrift and all its
  dependencies installed once per supported CPython minor (3.10 ... 3.14), from wheels pip fetched
  for that platform (``--platform/--python-version/--only-binary=:all:``): PyYAML, jq, rpds-py,
  cffi and others are C extensions, so an install is per platform *and* per Python. Each
  distribution is stored once per distinct build (a pure wheel once for all Pythons). On first
  run the bootstrap extracts the running Python's set to ``~/.cache/kubectl-gitdrift/``.
- ``argocd-gitdrift`` and ``kubectl_complete-gitdrift``: tiny wrappers that run the executable
  beside them (through symlinks too) as the argocd CLI plugin and as kubectl's completion helper.
- ``LICENSE`` and ``README.md``.

kubernetes-validate ships ~108 MB of schemas; only the ``_definitions.json`` of the newest
``--keep-schemas`` Kubernetes minors are kept (kubectl_gitdrift/openapi.py reads nothing else),
and the build checks that the default version openapi.py asks for still resolves the same way.

A (platform, Python) pair without wheels for every dependency is dropped with a message; a platform
with no Python left is dropped from the archives and the manifest.

Reproducible: archives are byte-identical for the same sources and wheels: sorted entries, fixed
owners, modes and timestamps (``$SOURCE_DATE_EPOCH``, else the last commit's time), no gzip name
or time, and no paths of the build machine inside.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import importlib.util
import inspect
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
    "kubectl": "kubectl_gitdrift.cli:run",
    "argocd": "kubectl_gitdrift.cli:run_argocd",
    "complete": "kubectl_gitdrift.completion:kubectl_complete",
}
SCHEMA_DIR = "kubernetes_validate/kubernetes-json-schema"
# C-accelerated packages that also ship a pure wheel: the pure one is ~100x smaller
PURE_PREFERRED = {"python-box"}
_SCHEMA_RE = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-local$")
_ZIP_EPOCH = 315532800  # 1980-01-01, the earliest time a zip entry can carry

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


def project_version() -> str:
    import tomllib

    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def source_date_epoch() -> int:
    """$SOURCE_DATE_EPOCH, else the last commit's time, else 1980-01-01."""
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return max(int(os.environ["SOURCE_DATE_EPOCH"]), _ZIP_EPOCH)
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "log", "-1", "--format=%ct"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return max(int(out), _ZIP_EPOCH)
    except (OSError, subprocess.CalledProcessError, ValueError):
        return _ZIP_EPOCH


def pip(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


def build_project_wheel(work: Path, *, isolated: bool = True) -> Path:
    """The project's wheel, built from a clean copy of the sources (no stale build/ dir)."""
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
    out = work / "project"
    args = ["wheel", "--no-deps", "-w", str(out), str(src)]
    if not isolated:
        args[1:1] = ["--no-build-isolation", "--no-index"]
    result = pip(*args)
    if result.returncode != 0:
        raise BuildError(f"pip wheel failed:\n{result.stdout}{result.stderr}")
    wheels = sorted(out.glob("kubectl_gitdrift-*.whl"))
    if len(wheels) != 1:
        raise BuildError(f"expected one wheel in {out}, found {wheels}")
    return wheels[0]


# --------------------------------------------------------------------------- wheels and installs


def _target_args(platform: Platform, python: str) -> list[str]:
    tag = "cp" + python.replace(".", "")
    args = ["--only-binary=:all:", "--implementation", "cp", "--python-version", python]
    for abi in (tag, "abi3", "none"):
        args += ["--abi", abi]
    for plat in platform.pip_platforms:
        args += ["--platform", plat]
    return args


def _missing(output: str) -> str:
    found = re.findall(r"No matching distribution found for (\S+)", output)
    return found[-1] if found else output.strip().splitlines()[-1] if output.strip() else "?"


def project_requirements(project: Path) -> list[str]:
    """The project wheel's Requires-Dist lines (what a cached wheel set must have been resolved
    for)."""
    with zipfile.ZipFile(project) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(name).decode()
    return sorted(line for line in text.splitlines() if line.startswith("Requires-Dist:"))


def _lock_key(project: Path) -> str:
    return hashlib.sha256("\n".join(project_requirements(project)).encode()).hexdigest()


def fetch_wheels(platform: Platform, python: str, project: Path, cache: Path) -> Path:
    """Resolve and download every wheel the project needs on this platform and Python into
    `cache/<platform>-cpXY/`, replacing what was there, with a `lock.json` naming them."""
    wheels = cache / f"{platform.name}-cp{python.replace('.', '')}"
    cache.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{wheels.name}-", dir=cache))
    try:
        result = pip("download", "-d", str(tmp), *_target_args(platform, python), str(project))
        if result.returncode != 0:
            raise Unavailable(_missing(result.stdout + result.stderr))
        (tmp / project.name).unlink(missing_ok=True)  # the project's wheel comes from the build
        for wheel in sorted(tmp.glob("*.whl")):
            name, version = wheel.name.split("-")[:2]
            if name.lower().replace("_", "-") in PURE_PREFERRED and not wheel.name.endswith(
                "-none-any.whl"
            ):
                pure = pip(
                    "download", "--no-deps", "-d", str(tmp), "--only-binary=:all:",
                    "--platform", "any", "--implementation", "py", "--abi", "none",
                    "--python-version", python, f"{name}=={version}",
                )  # fmt: skip
                if pure.returncode == 0:
                    wheel.unlink()
        lock = {"requires": _lock_key(project), "wheels": sorted(w.name for w in tmp.glob("*.whl"))}
        (tmp / "lock.json").write_text(json.dumps(lock, indent=1) + "\n")
        shutil.rmtree(wheels, ignore_errors=True)
        tmp.rename(wheels)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return wheels


def _cached(wheels: Path, project: Path) -> bool:
    try:
        lock = json.loads((wheels / "lock.json").read_text())
    except (OSError, ValueError):
        return False
    return bool(lock.get("requires") == _lock_key(project)) and all(
        (wheels / name).is_file() for name in lock.get("wheels", ())
    )


def install(
    platform: Platform,
    python: str,
    project: Path,
    cache: Path,
    work: Path,
    *,
    keep_schemas: int,
    kube_default: str,
    prefer_cached: bool = False,
    offline: bool = False,
) -> tuple[Path, list[str]]:
    """Install the project and the locked wheels for one (platform, Python) into its own
    site-packages folder (no resolution here: `fetch_wheels` did it). kubernetes-validate is
    unpacked by hand, keeping only the schemas a run reads. Returns the folder and the kept
    schema versions."""
    wheels = cache / f"{platform.name}-cp{python.replace('.', '')}"
    if not ((prefer_cached or offline) and _cached(wheels, project)):
        if offline:
            raise Unavailable(f"the project (offline, and {wheels} holds no matching lock)")
        fetch_wheels(platform, python, project, cache)
    lock = json.loads((wheels / "lock.json").read_text())
    site = work / "site" / f"{platform.name}-{python}"
    shutil.rmtree(site, ignore_errors=True)
    by_hand = [wheels / n for n in lock["wheels"] if n.startswith("kubernetes_validate-")]
    others = [str(wheels / n) for n in lock["wheels"] if wheels / n not in by_hand]
    result = pip(
        "install", "--target", str(site), "--no-deps", "--no-index", "--no-compile",
        "--no-warn-script-location", "--no-cache-dir", *_target_args(platform, python),
        str(project), *others,
    )  # fmt: skip
    if result.returncode != 0:
        raise BuildError(f"pip install for {platform.name} py{python}:\n{result.stderr}")
    if len(by_hand) != 1:
        raise BuildError(f"expected one kubernetes_validate wheel in {wheels}")
    kept = unpack_kubernetes_validate(by_hand[0], site, keep_schemas, kube_default)
    return site, kept


# --------------------------------------------------------------------------- pruning


def _version_key(text: str) -> tuple[int, int, int | None]:
    match = re.match(r"^v?(\d+)\.(\d+)(?:\.(\d+))?", text)
    if match is None:
        raise BuildError(f"not a version: {text}")
    major, minor, patch = match.groups()
    return int(major), int(minor), None if patch is None else int(patch)


def _pick(versions: Sequence[tuple[int, int, int]], requested: str) -> tuple[int, int, int]:
    """The same choice kubectl_gitdrift.openapi._pick makes."""
    major, minor, patch = _version_key(requested)
    limit = (major, minor, patch if patch is not None else 10**9)
    older = [v for v in sorted(versions) if v <= limit]
    return older[-1] if older else max(versions)


def default_kube_version() -> str:
    """The version kubectl_gitdrift.openapi.load_builtin_definitions() asks for by default."""
    spec = importlib.util.spec_from_file_location(
        "_gitdrift_openapi", ROOT / "kubectl_gitdrift" / "openapi.py"
    )
    if spec is None or spec.loader is None:
        raise BuildError("cannot read kubectl_gitdrift/openapi.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    default = inspect.signature(module.load_builtin_definitions).parameters["kube_version"].default
    return str(default)


def prune(site: Path) -> None:
    """Drop what a run never reads or what names the build machine: scripts and bytecode, and
    `direct_url.json` (the path of the wheel pip installed from)."""
    shutil.rmtree(site / "bin", ignore_errors=True)
    for cache in sorted(site.rglob("__pycache__"), reverse=True):
        shutil.rmtree(cache, ignore_errors=True)
    for direct_url in site.glob("*.dist-info/direct_url.json"):
        direct_url.unlink()
        record = direct_url.parent / "RECORD"
        lines = record.read_text().splitlines()
        name = f"{direct_url.parent.name}/direct_url.json,"
        record.write_text("".join(f"{line}\n" for line in lines if not line.startswith(name)))


def unpack_kubernetes_validate(
    wheel: Path, site: Path, keep_schemas: int, kube_default: str
) -> list[str]:
    """Unpack kubernetes-validate's code and only the newest `keep_schemas` minors'
    `_definitions.json` (kubectl_gitdrift/openapi.py reads nothing else), instead of its 108 MB
    of schemas. Checks that the default version openapi.py asks for resolves the same way."""
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
                "default of kubectl_gitdrift.openapi: raise --keep-schemas"
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


def build(args: argparse.Namespace) -> list[Archive]:
    version = project_version()
    epoch = source_date_epoch()
    kube_default = default_kube_version()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    cache: Path = args.wheel_cache
    readme = (ROOT / "README.md").read_bytes()
    license_text = (ROOT / "LICENSE").read_bytes()
    archives = []
    with tempfile.TemporaryDirectory(prefix="gitdrift-dist-") as tmp:
        work = Path(tmp)
        started = time.monotonic()
        project = build_project_wheel(work, isolated=not args.offline)
        log(f"built {project.name} ({time.monotonic() - started:.1f}s)")
        for name in args.platform:
            platform = PLATFORMS[name]
            sites: dict[str, Path] = {}
            for python in args.python:
                try:
                    site, kept = install(
                        platform,
                        python,
                        project,
                        cache,
                        work,
                        keep_schemas=args.keep_schemas,
                        kube_default=kube_default,
                        prefer_cached=args.prefer_cached,
                        offline=args.offline,
                    )
                except Unavailable as exc:
                    log(f"{platform.name}: dropping Python {python}: no wheel for {exc}")
                    continue
                prune(site)
                sites[python] = site
            if not sites:
                log(f"dropping {platform.name}: no supported Python has wheels for it")
                continue
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
            archives.append(archive)
            log(
                f"{path.name}: {len(data) / 1e6:.1f} MB (executable {len(bundle) / 1e6:.1f} MB; "
                f"Pythons {', '.join(archive.pythons)}; schemas {', '.join(kept)}; "
                f"{time.monotonic() - started:.0f}s)"
            )
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
        help="where downloaded wheels are kept, per platform and Python",
    )
    parser.add_argument(
        "--prefer-cached",
        action="store_true",
        help="install from the wheel cache when it satisfies the project; resolve only if not",
    )
    parser.add_argument(
        "--offline",
        action="store_true",
        help="never use the network: build the project wheel with the running environment's "
        "setuptools and install from the wheel cache only",
    )
    parser.add_argument(
        "--keep-schemas",
        type=int,
        default=6,
        metavar="N",
        help="keep the schemas of the newest N Kubernetes minors (default: 6)",
    )
    args = parser.parse_args(argv)
    args.platform = args.platform or list(PLATFORMS)
    args.python = sorted(set(args.python or PYTHONS), key=_version_key)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    try:
        build(args)
    except BuildError as exc:
        log(f"error: {exc}")
        return 1
    log(f"done in {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
