"""run.appset_inputs: a real git repository read by GitRepo, and clusters from cluster Secrets."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from kubectl_gitdrift.appsets.inputs import AppSetError
from kubectl_gitdrift.run.appset_inputs import clusters
from tests.appsets.repos import commit, repo_of, symlink


def _secret(secret_name: str, **data: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name,
            "namespace": "argocd",
            "labels": {"argocd.argoproj.io/secret-type": "cluster"},
        },
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def test_git_repo_lists_a_commits_files_and_reads_them_through_symlinks(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    first = commit(repo, {"apps/a/config.json": "{}", "b.txt": "one"})
    symlink(repo, "apps/link.json", "a/config.json")
    commit(repo, {"b.txt": "two"})
    git_repo = repo_of(repo)
    assert git_repo.paths("https://x/repo.git", "HEAD") == [
        "apps/a/config.json",
        "apps/link.json",
        "b.txt",
    ]
    assert git_repo.read("https://x/repo.git", "HEAD", "apps/link.json") == b"{}"
    assert git_repo.read("https://x/repo.git", first, "b.txt") == b"one"
    assert git_repo.read("https://x/repo.git", "main", "b.txt") == b"two"


def test_clusters_are_only_the_secrets_the_in_cluster_default_is_the_generators() -> None:
    found = clusters([_secret("s1", name="prod", server="https://prod", config="{}")])
    assert [(c.name, c.server) for c in found] == [("prod", "https://prod")]
    local = clusters([_secret("s2", name="local", server="https://kubernetes.default.svc")])
    assert [(c.name, c.server) for c in local] == [("local", "https://kubernetes.default.svc")]


def test_a_secret_value_that_is_not_base64_names_the_secret() -> None:
    secret = _secret("broken")
    secret["data"] = {"server": "not base64!"}
    with pytest.raises(AppSetError, match=r"Secret argocd/broken: data.server: not base64"):
        clusters([secret])
