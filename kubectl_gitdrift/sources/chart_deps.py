"""A chart's dependencies as `helm dependency build` sees them: the repositories and aliases they
name, `file://` dependencies copied beside the chart, and the archives a build downloads merged
into the chart's `charts/` as helm merges them.

The build itself runs in sources/charts.py (Charts.build_dependencies), which caches what it
downloads.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.sources.chart_credentials import user_repositories


def for_policy(url: str) -> str:
    """How Argo CD names a dependency repository when it checks sourceRepos: OCI ones without
    their `oci://` (getHelmDependencyRepos trims it)."""
    return url.removeprefix("oci://")


def dependencies(chart_dir: Path) -> list[Mapping[str, Any]]:
    """The dependencies Chart.yaml declares (requirements.yaml for an apiVersion v1 chart)."""
    deps: Any = None
    for name in ("Chart.yaml", "requirements.yaml"):  # requirements.yaml: apiVersion v1
        try:
            data = yaml.safe_load((chart_dir / name).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError, UnicodeDecodeError):
            continue
        if isinstance(data, Mapping) and data.get("dependencies"):
            deps = data.get("dependencies")
            break
    return [d for d in deps or [] if isinstance(d, Mapping)]


def dependency_repo(dep: Mapping[str, Any]) -> str | None:
    """The repository URL of a dependency (aliases resolved through the user's
    repositories.yaml), or None for one vendored without a repository."""
    repo = str(dep.get("repository") or "").strip()
    if not repo:
        return None
    alias = _alias_name(repo)
    if alias is None:
        return repo
    for entry in user_repositories():
        if entry.get("name") == alias:
            return str(entry["url"])
    raise SourceError(
        f"helm dependency {dep.get('name')}: repository {repo} names a repository that is not "
        "in your helm repositories.yaml",
        hint=f"add it: helm repo add {alias} URL",
    )


def _alias_name(repo: str) -> str | None:
    if repo.startswith("@"):
        return repo[1:]
    if repo.startswith("alias:"):
        return repo[len("alias:") :]
    return None


def dependency_aliases(deps: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    out = {}
    for dep in deps:
        alias = _alias_name(str(dep.get("repository") or "").strip())
        if alias is not None:
            url = dependency_repo(dep)
            if url is not None:
                out[alias] = url
    return out


def repo_name(url: str) -> str:
    """Argo CD's sanitizeRepoName: the URL with `/` replaced."""
    return url.replace("/", "-")


def copy_local(
        dep: Mapping[str, Any], chart_dir: Path, tree: Path, dest_tree: Path, display: str,
        what: str,
) -> None:  # fmt: skip
    raw = str(dep.get("repository"))[len("file://") :]
    source = Path(os.path.normpath(chart_dir / raw))
    if not source.is_relative_to(tree) or not source.resolve().is_relative_to(tree.resolve()):
        raise SourceError(f"{what}: dependency {dep.get('name')} ({raw}) is outside the repository")
    if not source.is_dir():
        raise SourceError(f"{what}: dependency {dep.get('name')}: {raw} is not a directory")
    target = dest_tree / source.relative_to(tree)
    if not target.exists():
        shutil.copytree(source, target, symlinks=False)


def keep_built(charts: Path, vendored: Path, dest: Path) -> None:
    """Copy to `dest` the archives `helm dependency build` left in `charts` that are not the
    chart's own (`vendored`, as committed): what the build downloaded or packaged."""
    dest.mkdir(parents=True)
    for item in sorted(charts.iterdir()):
        if not item.is_file() or item.is_symlink():
            continue  # directories are the chart's own: helm never moves them
        own = vendored / item.name
        if own.is_file() and own.read_bytes() == item.read_bytes():
            continue
        shutil.copyfile(item, dest / item.name)


def merge_charts(charts: Path, dest: Path, deps: Sequence[Mapping[str, Any]]) -> None:
    """Put the built archives `charts` into the chart's `dest` (its charts/) as helm's
    safeMoveDeps does: they replace files of the same name, and every other chart archive is
    an outdated dependency and deleted, except those of dependencies without a repository
    (vendored by hand); directories and files that are not charts stay."""
    dest.mkdir(parents=True, exist_ok=True)
    built = {item.name for item in charts.iterdir()}
    local = {str(d.get("name")) for d in deps if not str(d.get("repository") or "").strip()}
    for item in sorted(dest.iterdir()):
        if item.name in built or not item.is_file() or item.is_symlink():
            continue
        name = _archive_chart_name(item)
        if name is not None and name not in local:
            item.unlink()
    for item in sorted(charts.iterdir()):
        shutil.copyfile(item, dest / item.name)


def _archive_chart_name(path: Path) -> str | None:
    """The name in a chart archive's Chart.yaml; None when `path` is no chart archive (as
    helm's loader.LoadFile fails on it)."""
    import tarfile  # only a vendored chart archive is read: most runs never need it

    try:
        with tarfile.open(path, "r:gz") as tar:
            for member in tar:
                parts = member.name.lstrip("./").split("/")
                if len(parts) == 2 and parts[1] == "Chart.yaml" and member.isfile():
                    handle = tar.extractfile(member)
                    if handle is None or member.size > 1024 * 1024:
                        return None
                    meta = yaml.safe_load(handle.read())
                    name = meta.get("name") if isinstance(meta, Mapping) else None
                    return str(name) if name else None
    except (tarfile.TarError, OSError, EOFError, yaml.YAMLError, UnicodeDecodeError):
        return None
    return None
