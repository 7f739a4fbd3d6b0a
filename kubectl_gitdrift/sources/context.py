"""What one source's render reads (`RenderContext`), and the one verb every renderer has
(`Renderer.render`), as kapitan's InputType compiles over one set of inputs.

sources/render.py decides a source's type and where its files are, builds the context, and hands
it to that type's renderer: directory (sources/directory.py), kustomize, helm, or a config
management plugin (sources/cmp.py). Jsonnet (sources/jsonnet.py) renders files inside a directory
source, which hands it a context naming them (`files`). No renderer imports another: what they
share is here and in the leaves (buildenv, tools, globs, process).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kubectl_gitdrift.model import Application, AppSource, Manifest
from kubectl_gitdrift.settings import Settings
from kubectl_gitdrift.sources.cache import RenderCache
from kubectl_gitdrift.sources.charts import Charts, RepoPolicy
from kubectl_gitdrift.sources.config import RenderConfig


@dataclass(frozen=True, slots=True)
class RenderContext:
    """Everything a render of one source depends on."""

    app: Application
    source: AppSource
    tree: Path  # the repository tree (an exported commit, the working tree, or a pulled chart)
    path: str  # the source directory in `tree`, clean and relative ("." for its top)
    revision: str | None  # the commit (or pulled chart digest) `tree` holds; None: working tree
    env: Mapping[str, str]  # Argo CD's build environment (buildenv.build_env)
    options: Mapping[str, Any]  # the source's block for this renderer (`kustomize:`, …)
    workdir: Path  # the run's scratch directory for this application
    settings: Settings
    config: RenderConfig = field(default_factory=RenderConfig)
    cache: RenderCache | None = None  # used only with a `revision`
    cached_only: bool = False  # raise CacheMiss rather than run a tool
    offline: bool = False  # --offline: download nothing
    build_options: Sequence[str] = ()  # kustomize flags given by the caller (else argocd-cm's)
    refs: Mapping[str, Path] = field(default_factory=dict)  # `ref` name → that source's tree
    policy: RepoPolicy | None = None  # the AppProject's sourceRepos, for chart repositories
    charts: Charts | None = None  # pulls charts and builds dependencies (None: no helm)
    display: str | None = None  # how messages name the source (default: its path)
    origins: bool = True  # objects name the file that defines them (not for a pulled chart)
    jsonnet: FilesRenderer | None = None  # evaluates `*.jsonnet` (None: jsonnet.enable false)
    files: tuple[Path, ...] = ()  # for a FilesRenderer: the files of the source to render
    notes: list[str] = field(default_factory=list, compare=False)  # what the renderer tells (it
    # appends: a duplicate key kept at its last value); a render that notes is not cached

    @property
    def app_dir(self) -> Path:
        """The source directory."""
        return self.tree if self.path == "." else self.tree / self.path


class Renderer(Protocol):
    """Renders one source."""

    def render(self, ctx: RenderContext) -> list[Manifest]:
        """The objects the source at `ctx` renders to, each with its origin file when known."""
        ...


class FilesRenderer(Renderer, Protocol):
    """Renders some files of a source (`ctx.files`): `render` gives their objects in order."""

    def render_each(self, ctx: RenderContext) -> list[list[Manifest]]:
        """The objects of each of `ctx.files`, in order."""
        ...
