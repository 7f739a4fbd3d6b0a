"""Directory sources in the render cache (issue 18): a commit's plain YAML is parsed once; the
working tree and sources with Jsonnet files are never stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubectl_gitdrift.sources import directory
from kubectl_gitdrift.sources.cache import RenderCache
from kubectl_gitdrift.sources.render import render
from tests.sources.test_sources_render import Repo, git, make_app, repo, write  # noqa: F401


def _no_collect(*args: object, **kwargs: object) -> list[object]:
    raise AssertionError("the directory was parsed although its render is cached")


def test_second_render_of_a_commit_reads_the_cache(
    repo: Repo,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = RenderCache(tmp_path / "cache")
    app = make_app("plain", options={"directory": {"recurse": True}})
    first = render(app, repo.root, workdir=tmp_path / "w1", cache=cache)
    assert len(first.manifests) == 5

    monkeypatch.setattr(directory, "collect", _no_collect)
    second = render(app, repo.root, workdir=tmp_path / "w2", cache=cache)
    assert [(m.key, m.body, m.origin) for m in second.manifests] == [
        (m.key, m.body, m.origin) for m in first.manifests
    ]
    assert second.revision == first.revision
    other = make_app("plain", options={"directory": {"recurse": True, "exclude": "sub/*"}})
    with pytest.raises(AssertionError):  # other options: another key
        render(other, repo.root, workdir=tmp_path / "w3", cache=cache)
    with pytest.raises(AssertionError):  # the working tree is never cached
        render(app, repo.root, local=True, workdir=tmp_path / "w4", cache=cache)
    with pytest.raises(AssertionError):  # another commit: another key
        render(app, repo.root, revision=repo.first, workdir=tmp_path / "w5", cache=cache)


def test_a_source_with_jsonnet_files_is_not_stored(
    repo: Repo,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write(
        repo.root,
        "plain/j.jsonnet",
        '{apiVersion: "v1", kind: "ConfigMap", metadata: {name: "j"}}\n',
    )
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "jsonnet")
    cache = RenderCache(tmp_path / "cache")
    app = make_app("plain")
    first = render(app, repo.root, workdir=tmp_path / "w1", cache=cache)
    assert sorted(m.key.name for m in first.manifests) == ["a", "b", "c", "j"]
    assert not list((tmp_path / "cache").glob("renders/*/*.json"))

    monkeypatch.setattr(directory, "collect", _no_collect)
    with pytest.raises(AssertionError):  # parsed and evaluated again
        render(app, repo.root, workdir=tmp_path / "w2", cache=cache)
