"""Jsonnet directory sources (sources/jsonnet.py): go-jsonnet, as Argo CD's repo-server runs it.

The unit tests evaluate real files with the real go-jsonnet bindings; the CLI tests run a whole
offline diagnosis against a real git repository and check that bad jsonnet is a one-line error
naming the file, exit 3."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift.errors import ExitCode, SourceError
from kubectl_gitdrift.model import Manifest
from kubectl_gitdrift.settings import KUSTOMIZE_TIMEOUT_ENV
from kubectl_gitdrift.sources import directory, jsonnet
from tests.conftest import Result

ENV = {"ARGOCD_APP_NAME": "metrics", "ARGOCD_APP_NAMESPACE": "monitoring"}
CONFIGMAP = "function(name='x') {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: name}}\n"


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def collect(
    tree: Path, path: str, options: dict[str, Any] | None = None, env: dict[str, str] | None = None
) -> list[Manifest]:
    """directory.collect with jsonnet files evaluated, as the directory renderer has them."""
    opts = options or {}

    def evaluate(files: list[Path]) -> list[list[Manifest]]:
        return jsonnet.evaluate_all(files, tree, tree / path, opts.get("jsonnet"), env or {})

    return directory.collect(tree, path, opts, env, jsonnet=evaluate)


def names(manifests: list[Any]) -> list[str]:
    return [m.key.name for m in manifests]


def test_tlas_ext_vars_and_build_env(tmp_path: Path) -> None:
    write(
        tmp_path,
        "app/main.jsonnet",
        "function(replicas, tier, obj) [{apiVersion: 'v1', kind: 'ConfigMap',\n"
        "  metadata: {name: std.extVar('app') + '-' + tier},\n"
        "  data: {replicas: std.toString(replicas * 2), code: std.extVar('code').k,\n"
        "         obj: std.toString(obj.a)}}]\n",
    )
    options = {
        "extVars": [
            {"name": "app", "value": "$ARGOCD_APP_NAME"},
            {"name": "code", "value": "{k: 'v'}", "code": True},
        ],
        "tlas": [
            {"name": "replicas", "value": "3", "code": True},
            {"name": "tier", "value": "gold"},
            {"name": "obj", "value": "{a: 1 + 1}", "code": True},
        ],
    }
    (manifest,) = collect(tmp_path, "app", {"jsonnet": options}, ENV)
    assert manifest.key.name == "metrics-gold"
    assert manifest.body["data"] == {"replicas": "6", "code": "v", "obj": "2"}
    assert manifest.origin == "app/main.jsonnet"


def test_libs_are_searched_last_first_after_the_files_directory(tmp_path: Path) -> None:
    # go-jsonnet's FileImporter: the importing file's directory, then the JPaths last first
    # ([app dir, *libs] as Argo CD passes them)
    write(tmp_path, "lib1/which.libsonnet", "'lib1'")
    write(tmp_path, "lib2/which.libsonnet", "'lib2'")
    write(tmp_path, "app/which.libsonnet", "'app'")
    write(tmp_path, "app/only-app.libsonnet", "'app-dir'")
    write(
        tmp_path,
        "app/sub/main.jsonnet",
        "{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'm'},"
        " data: {which: import 'which.libsonnet', app: import 'only-app.libsonnet'}}",
    )
    options = {"recurse": True, "jsonnet": {"libs": ["lib1", "/lib2"]}}
    (manifest,) = collect(tmp_path, "app", options, ENV)
    assert manifest.body["data"] == {"which": "lib2", "app": "app-dir"}
    write(tmp_path, "app/sub/which.libsonnet", "'beside'")
    (manifest,) = collect(tmp_path, "app", options, ENV)
    assert manifest.body["data"]["which"] == "beside"


def test_arrays_lists_and_plain_values(tmp_path: Path) -> None:
    write(
        tmp_path,
        "app/a.jsonnet",
        "[{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'one'}}, null,"
        " {apiVersion: 'v1', kind: 'List', items: [{apiVersion: 'v1', kind: 'Secret',"
        " metadata: {name: 'two'}}]}]",
    )
    write(tmp_path, "app/b.jsonnet", CONFIGMAP)  # a function with defaults and no TLAs
    write(tmp_path, "app/c.libsonnet", "error 'only imported'")
    assert names(collect(tmp_path, "app", {}, ENV)) == ["one", "two", "x"]


def test_include_exclude_and_recurse_apply_to_jsonnet(tmp_path: Path) -> None:
    write(tmp_path, "app/keep.jsonnet", CONFIGMAP)
    write(tmp_path, "app/test/broken.jsonnet", "error 'never rendered'")
    write(
        tmp_path,
        "app/deep/more.jsonnet",
        "{apiVersion: 'v1', kind: 'Secret', metadata: {name: 'd'}}",
    )
    assert names(collect(tmp_path, "app", {"recurse": True, "exclude": "test/*"})) == [
        "d",
        "x",
    ]
    assert names(collect(tmp_path, "app", {"recurse": True, "include": "deep/*"})) == ["d"]
    with pytest.raises(SourceError, match=r"^app/test/broken.jsonnet: jsonnet: RUNTIME ERROR"):
        collect(tmp_path, "app", {"recurse": True})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("local a = ; a", r"^app/bad.jsonnet: jsonnet: app/bad.jsonnet:1:11-12 Unexpected"),
        ("error 'boom'", r"^app/bad.jsonnet: jsonnet: RUNTIME ERROR: boom$"),
        ("function(missing) {}", r"^app/bad.jsonnet: jsonnet: RUNTIME ERROR: .*missing"),
        ("'a string'", r"^app/bad.jsonnet: jsonnet the result: object expected, got a string$"),
        ("[1]", r"^app/bad.jsonnet: jsonnet \[0\]: object expected, got a number$"),
        ("{kind: 'ConfigMap'}", r"^app/bad.jsonnet: document 1: apiVersion missing$"),
        ("import 'nowhere.libsonnet'", r"couldn't open import 'nowhere.libsonnet'"),
        ("importstr '/etc/hostname'", r"import '/etc/hostname' resolves outside the repository"),
        ("import '../../outside.libsonnet'", r"resolves outside the repository"),
    ],
)
def test_bad_jsonnet_is_one_line_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    repo = tmp_path / "repo"
    write(repo, "app/bad.jsonnet", text)
    write(tmp_path, "outside.libsonnet", "{}")
    with pytest.raises(SourceError) as err:
        collect(repo, "app", {}, ENV)
    assert "\n" not in err.value.message
    assert err.value.message == err.value.message.strip()
    assert re.search(message, err.value.message), err.value.message
    assert str(tmp_path) not in err.value.message


def test_symlinked_import_out_of_the_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write(tmp_path, "secret.libsonnet", "{password: 'x'}")
    write(repo, "app/main.jsonnet", "import 'link.libsonnet'")
    (repo / "app/link.libsonnet").symlink_to(tmp_path / "secret.libsonnet")
    with pytest.raises(SourceError, match="resolves outside the repository"):
        collect(repo, "app", {}, ENV)


def test_bad_options(tmp_path: Path) -> None:
    write(tmp_path, "app/a.jsonnet", CONFIGMAP)
    with pytest.raises(SourceError, match=r"libs entry '\.\./x' points outside the repository"):
        collect(tmp_path, "app", {"jsonnet": {"libs": ["../x"]}})
    with pytest.raises(SourceError, match=r"directory.jsonnet.tlas: entry .* has no name"):
        collect(tmp_path, "app", {"jsonnet": {"tlas": [{"value": "1"}]}})
    with pytest.raises(SourceError, match=r"directory.jsonnet.extVars: list expected"):
        collect(tmp_path, "app", {"jsonnet": {"extVars": {"a": "b"}}})
    with pytest.raises(SourceError, match=r"directory.jsonnet: mapping expected"):
        collect(tmp_path, "app", {"jsonnet": ["x"]})


def test_the_last_of_a_name_wins(tmp_path: Path) -> None:
    write(tmp_path, "app/a.jsonnet", CONFIGMAP)
    tlas = [{"name": "name", "value": "'code'", "code": True}, {"name": "name", "value": "str"}]
    (manifest,) = collect(tmp_path, "app", {"jsonnet": {"tlas": tlas}})
    assert manifest.key.name == "str"


def test_jsonnet_that_never_ends_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tail calls run for ever in go-jsonnet: the evaluation runs in a child under the time-out
    write(tmp_path, "app/a.jsonnet", "local f(x) = if x < 0 then x else f(x + 1) tailstrict; f(0)")
    monkeypatch.setenv(KUSTOMIZE_TIMEOUT_ENV, "1")
    with pytest.raises(SourceError, match=r"^jsonnet evaluation of app timed out after 1s$"):
        collect(tmp_path, "app", {})


def test_jsonnet_that_builds_a_huge_value_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the child's heap is capped (RLIMIT_DATA): go-jsonnet stops instead of eating the machine
    write(tmp_path, "app/a.jsonnet", "std.length(std.makeArray(50000000, function(i) {x: i}))")
    monkeypatch.setattr(jsonnet, "MAX_MEMORY", 256 << 20)
    with pytest.raises(
        SourceError, match=r"^app: jsonnet evaluation ran out of memory \(more than 256 MiB\)$"
    ):
        collect(tmp_path, "app", {})
    write(tmp_path, "app/a.jsonnet", "{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'a'}}")
    (manifest,) = collect(tmp_path, "app", {})  # an ordinary file fits
    assert manifest.key.name == "a"


def test_evaluate_names_the_repository_relative_file(tmp_path: Path) -> None:
    file = write(tmp_path, "deep/dir/x.jsonnet", CONFIGMAP)
    (manifest,) = jsonnet.evaluate(file, tmp_path, tmp_path / "deep", {}, {})
    assert manifest.origin == "deep/dir/x.jsonnet"


# --------------------------------------------------------------------------- through the CLI


def _git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "A",
        "GIT_AUTHOR_EMAIL": "a@example.com",
        "GIT_COMMITTER_NAME": "A",
        "GIT_COMMITTER_EMAIL": "a@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True)


def app_snapshot(tmp_path: Path, source: dict[str, Any]) -> Path:
    app = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "metrics", "namespace": "argocd"},
        "spec": {
            "project": "default",
            "destination": {"namespace": "monitoring", "server": "https://kubernetes.default.svc"},
            "source": {
                "repoURL": "https://git.example.com/obs.git",
                "targetRevision": "HEAD",
                **source,
            },
        },
    }
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [app]}))
    return path


def repo_with(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    for rel, text in files.items():
        write(repo, rel, text)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "jsonnet")
    return repo


def test_cli_jsonnet_error_is_exit_3(tmp_path: Path, run_cli: Callable[..., Result]) -> None:
    repo = repo_with(tmp_path, {"apps/metrics/main.jsonnet": "function(replicas) {a: replicas"})
    snap = app_snapshot(tmp_path, {"path": "apps/metrics"})
    result = run_cli(["metrics", "--snapshot", str(snap), "--repo-root", str(repo),
                      "--no-entry-points"])  # fmt: skip
    assert result.exit_code == ExitCode.ERROR, result.stderr
    assert result.stdout == ""
    first = result.stderr.splitlines()[0]
    assert first.startswith("error: apps/metrics/main.jsonnet: jsonnet: "), result.stderr
    assert "Expected" in first or "Unexpected" in first, first
    assert len(result.stderr.splitlines()) <= 2


def test_cli_renders_jsonnet_with_tlas(tmp_path: Path, run_cli: Callable[..., Result]) -> None:
    repo = repo_with(tmp_path, {"apps/metrics/main.jsonnet": CONFIGMAP})
    tlas = [{"name": "name", "value": "$ARGOCD_APP_NAME-settings"}]
    snap = app_snapshot(
        tmp_path, {"path": "apps/metrics", "directory": {"jsonnet": {"tlas": tlas}}}
    )
    result = run_cli(["metrics", "--snapshot", str(snap), "--repo-root", str(repo),
                      "--no-entry-points", "-o", "json"])  # fmt: skip
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    assert "ConfigMap monitoring/metrics-settings" in result.stdout or (
        "metrics-settings" in result.stdout
    )
