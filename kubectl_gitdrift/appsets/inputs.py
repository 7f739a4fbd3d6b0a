"""What a generator may read, handed in by the caller: files of git repositories at a revision,
and the clusters Argo CD knows. It does no I/O itself
(run/discover.py supplies these)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kubectl_gitdrift.errors import GitDriftError


class AppSetError(GitDriftError):
    """An ApplicationSet that cannot be expanded: an unknown or remote-only generator, a
    template error. The message names the ApplicationSet and the generator or field."""


class Repo(Protocol):
    """Git repositories as the git generators see them."""

    def paths(self, repo_url: str, revision: str) -> Sequence[str]:
        """Every file in `repo_url` at `revision`: posix paths relative to the repository's
        top, sorted. Raises GitDriftError (naming the repository and revision) if unreadable."""

    def read(self, repo_url: str, revision: str, path: str) -> bytes:
        """One file's bytes (a path `paths` listed)."""


@dataclass(frozen=True, slots=True)
class Cluster:
    """One cluster Argo CD knows: from a Secret labelled argocd.argoproj.io/secret-type=cluster
    (its name, labels and annotations, and the server and name it declares: never its config).
    The in-cluster default, which no Secret declares, is the cluster generator's to add."""

    name: str
    server: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    project: str = ""


@dataclass(frozen=True, slots=True)
class Inputs:
    repo: Repo
    clusters: Sequence[Cluster] = ()
    offline: bool = False  # generators that need the network fail, naming themselves
    allow_plugins: bool = False  # the plugin generator may run (with a configured plugin)
