"""Source shapes from Argo CD's example apps and e2e test data that gitdrift got wrong: hooks named
by generateName, glob value files, YAML files that are not manifests, kustomize.version
overrides argocd-cm does not register, kustomize helmCharts, spec.sourceHydrator. Real files,
real helm and kustomize where they run."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubectl_gitdrift import application, model, yamlio
from kubectl_gitdrift.diagnose import tracking
from kubectl_gitdrift.errors import AppError, ExitCode, SourceError
from kubectl_gitdrift.settings import KUSTOMIZE_TIMEOUT_ENV
from kubectl_gitdrift.sources import config as render_config
from kubectl_gitdrift.sources import directory, globs, helm, kustomize
from tests.conftest import TESTDATA, Result

needs_helm = pytest.mark.skipif(helm.helm_binary() is None, reason="needs helm")
needs_kustomize = pytest.mark.skipif(
    not (shutil.which("kustomize") or shutil.which("kubectl")), reason="needs kustomize"
)


def write(root: Path, rel: str, text: str = "") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- hooks


HOOK = """\
apiVersion: batch/v1
kind: Job
metadata:
  generateName: upgrade-sql-schema-
  annotations: {argocd.argoproj.io/hook: PreSync}
spec: {}
"""


def test_a_hook_named_by_generate_name_is_a_manifest() -> None:
    (body,) = yamlio.load_objects(HOOK, "hook.yaml")
    assert tracking.is_hook(body)
    with pytest.raises(SourceError, match=r"Job: metadata.name missing"):
        yamlio.load_objects(HOOK.replace("generateName", "labels"), "hook.yaml")


@pytest.mark.parametrize(
    ("annotations", "hook"),
    [
        ({"argocd.argoproj.io/hook": "PreSync"}, True),
        ({"argocd.argoproj.io/hook": ""}, True),  # present: gitops-engine's IsHook says hook
        ({"argocd.argoproj.io/hook": "Skip"}, True),  # not a hook there, but never counted
        ({"helm.sh/hook": "pre-install"}, True),
        ({"helm.sh/hook": ""}, True),
        ({"helm.sh/hook": "crd-install"}, False),
        ({"argocd.argoproj.io/sync-wave": "1"}, False),
    ],
)
def test_hooks_as_gitops_engine_tells_them(annotations: dict[str, str], hook: bool) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"annotations": annotations}}
    assert tracking.is_hook(body) is hook


def test_generate_name_objects_never_collide_as_duplicates() -> None:
    # NormalizeTargetObjects keys them `<generateName><index>`
    app = application.parse_application(
        {
            "metadata": {"name": "waves", "namespace": "argocd"},
            "spec": {
                "destination": {"namespace": "waves"},
                "source": {"repoURL": "https://x.example.com/r.git", "path": "."},
            },
        }
    )
    bodies = yamlio.load_objects(HOOK + "---\n" + HOOK, "hooks.yaml")
    manifests = [model.Manifest(model.ObjectKey.of(b), b) for b in bodies]
    desired, duplicates, _ = tracking.prepare_desired(manifests, app, model.Settings())
    assert len(desired) == 2
    assert duplicates == []


def test_a_non_hook_named_only_by_generate_name_stays_missing_and_is_explained(
    tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    # Argo CD looks the object up by its empty name and never finds it (Reconcile), so it is
    # OutOfSync after every sync, each of which creates another `report-<random>`
    scenario = TESTDATA / "scenarios" / "source-hooks-generatename"
    repo = tmp_path / "repo"
    shutil.copytree(scenario / "repo-src" / "01-initial", repo)
    write(repo, "sync-waves/report.yaml", REPORT)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    git = ["git", "-C", str(repo), "-c", "user.name=A", "-c", "user.email=a@example.com"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "x"]):
        subprocess.run([*git, *args], env=env, check=True, capture_output=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], env=env, check=True, capture_output=True)
    pinned = "ded751a6b8a7000b6f1110fb77365c832a5dbcaa"
    snapshot = write(
        tmp_path,
        "snapshot.yaml",
        (scenario / "snapshot.yaml").read_text().replace(pinned, sha.stdout.decode().strip()),
    )
    result = run_cli(["sync-waves", "--snapshot", str(snapshot), "--repo-root", str(repo),
                      "--no-entry-points", "-o", "json"])  # fmt: skip
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    (report,) = json.loads(result.stdout)["applications"]
    missing = [r for r in report["resources"] if r["status"] == "Missing"]
    assert [(r["kind"], r["name"]) for r in missing] == [("ConfigMap", "")]
    (finding,) = [f for f in report["findings"] if f["code"] == "missing-resource"]
    assert finding["message"].startswith(
        "configmap with generateName report- has no metadata.name and is not a hook: Argo CD "
        "never finds it in the cluster, so the app stays OutOfSync"
    )
    assert finding["evidence"]["generateName"] == "report-"
    assert "argocd.argoproj.io/hook" in finding["hint"]


REPORT = """\
apiVersion: v1
kind: ConfigMap
metadata:
  generateName: report-
data:
  day: monday
"""


# --------------------------------------------------------------------------- non-manifest YAML


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("values.yaml", "replicaCount: 1\nimage: {tag: v1}\n"),
        (".pre-commit-config.yaml", "repos:\n- repo: https://example.com\n"),
        ("list.yaml", "- a\n- b\n"),
        ("scalar.yml", "just text\n"),
        ("broken.yaml", "a: [unclosed\n"),
        ("mkdocs.yml", "site_name: docs\nnav:\n- Home: index.md\n"),
        ("only-metadata.yaml", "metadata: {name: x}\nspec: {}\n"),  # no apiVersion:, no kind:
    ],
)
def test_yaml_that_is_not_a_manifest_is_skipped(tmp_path: Path, name: str, text: str) -> None:
    write(tmp_path, f"app/{name}", text)
    write(tmp_path, "app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n")
    assert [m.key.name for m in directory.collect(tmp_path, "app", {})] == ["cm"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # looks like a manifest (apiVersion:, kind: and metadata: all appear): an error
        ("apiVersion: v1\nmetadata: {name: x}\nspec: {kind: y}\n", "kind missing"),
        ("- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n", "mapping expected"),
        # a bad document after a good one: an error
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nfoo: bar\n", "document 2"),
        # metadata that is no mapping: the repo-server cannot label it (one with no name is
        # kept: test_an_object_without_a_name_is_kept)
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: x\n", "metadata missing"),
    ],
)
def test_broken_manifests_are_still_errors(tmp_path: Path, text: str, message: str) -> None:
    write(tmp_path, "app/x.yaml", text)
    with pytest.raises(SourceError, match=message):
        directory.collect(tmp_path, "app", {})


@pytest.mark.parametrize(
    "text",
    [
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n",
    ],
)
def test_an_object_without_a_name_is_kept(tmp_path: Path, text: str) -> None:
    # Kubernetes' decoder into an Unstructured asks only for kind; Argo CD keeps the object with
    # an empty name (and shows it Missing)
    write(tmp_path, "app/x.yaml", text)
    assert [(m.key.name, m.origin) for m in directory.collect(tmp_path, "app", {})] == [
        ("", "app/x.yaml")
    ]


@pytest.mark.parametrize("text", ['{"name": "x", "version": "1.0.0"}', "", "{}"])
def test_a_json_file_that_is_not_a_manifest_is_an_error(tmp_path: Path, text: str) -> None:
    # Argo CD keeps it as a manifest without kind (or fails to decode it): the comparison fails
    write(tmp_path, "app/package.json", text)
    write(tmp_path, "app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n")
    with pytest.raises(SourceError, match=r"^app/package.json: ") as err:
        directory.collect(tmp_path, "app", {})
    assert "directory.exclude" in (err.value.hint or "")
    excluded = directory.collect(tmp_path, "app", {"exclude": "package.json"})
    assert [m.key.name for m in excluded] == ["cm"]


def test_a_json_array_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, "app/x.json", "[1, 2]")
    with pytest.raises(SourceError, match=r"app/x.json"):
        directory.collect(tmp_path, "app", {})


# --------------------------------------------------------------------------- glob value files


def test_filepath_glob_matches_doublestar(tmp_path: Path) -> None:
    for rel in ("envs/a.yaml", "envs/b.yml", "envs/.h.yaml", "envs/x/c.yaml", "envs/x/y/d.yaml"):
        write(tmp_path, rel)

    def glob(pattern: str) -> list[str]:
        return [
            p.relative_to(tmp_path).as_posix() for p in globs.filepath_glob(f"{tmp_path}/{pattern}")
        ]

    assert glob("envs/*.yaml") == ["envs/.h.yaml", "envs/a.yaml"]
    # `**` any number of directories; each directory's own matches before its subdirectories
    assert glob("envs/**/*.yaml") == [
        "envs/.h.yaml",
        "envs/a.yaml",
        "envs/x/c.yaml",
        "envs/x/y/d.yaml",
    ]
    assert glob("envs/*/*.yaml") == ["envs/x/c.yaml"]
    assert glob("envs/{a,b}.y*ml") == ["envs/a.yaml", "envs/b.yml"]
    assert glob("envs/[ab].*") == ["envs/a.yaml", "envs/b.yml"]
    assert glob("nowhere/*.yaml") == []
    assert globs.has_glob("a/*.yaml")
    assert not globs.has_glob("a/b.yaml")


def _value_files(tmp_path: Path, files: list[str], **options: Any) -> list[str]:
    chart = tmp_path / "chart"
    paths = helm.value_files(chart, tmp_path, {"valueFiles": files, **options}, {}, {}, "chart")
    return [p.relative_to(tmp_path).as_posix() for p in paths]


def test_glob_value_files_as_get_resolved_value_files(tmp_path: Path) -> None:
    for rel in ("chart/envs/common.yaml", "chart/envs/eu.yaml", "chart/envs/prod/o.yaml"):
        write(tmp_path, rel, "a: 1\n")
    # an explicit entry is left out of the globs and keeps its own place; no file twice
    assert _value_files(tmp_path, ["envs/*.yaml", "envs/**/*.yaml", "envs/common.yaml"]) == [
        "chart/envs/eu.yaml",
        "chart/envs/prod/o.yaml",
        "chart/envs/common.yaml",
    ]
    assert _value_files(tmp_path, ["envs/eu.yaml", "envs/eu.yaml"]) == ["chart/envs/eu.yaml"]
    with pytest.raises(SourceError, match=r"values file glob 'envs/\*.json' matched no files"):
        _value_files(tmp_path, ["envs/*.json"])
    assert _value_files(tmp_path, ["envs/*.json"], ignoreMissingValueFiles=True) == []


def test_a_glob_match_that_is_a_symlink_out_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write(tmp_path, "secret.yaml", "password: x\n")
    write(repo, "chart/envs/a.yaml", "a: 1\n")
    (repo / "chart/envs/b.yaml").symlink_to(tmp_path / "secret.yaml")
    with pytest.raises(SourceError, match=r"envs/b.yaml is a symlink out of the repository"):
        _value_files(repo, ["envs/*.yaml"])


# --------------------------------------------------------------------------- kustomize


def test_kustomize_version_must_be_registered() -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", "namespace": "argocd"},
        "data": {
            "kustomize.buildOptions": "--enable-helm --load-restrictor LoadRestrictionsNone",
            "kustomize.version.v5.4.3": "/tools/kustomize-5.4.3",
            "kustomize.path.v4.5.7": "/tools/kustomize-4.5.7",
            "kustomize.buildOptions.v4.5.7": "--enable-alpha-plugins",
        },
    }
    config = render_config.of([cm])
    assert config.kustomize_build_options == (
        "--enable-helm",
        "--load-restrictor",
        "LoadRestrictionsNone",
    )
    config.check_kustomize_version("v5.4.3", "app")
    config.check_kustomize_version("v4.5.7", "app")
    config.check_kustomize_version("", "app")
    with pytest.raises(SourceError) as err:
        config.check_kustomize_version("v5.0.0", "app")
    assert err.value.message == (
        "source path app: kustomize version v5.0.0 is not registered in argocd-cm; Argo CD fails "
        "this source too (registered: v4.5.7, v5.4.3)"
    )
    with pytest.raises(SourceError, match=r"not registered in argocd-cm \(not read"):
        render_config.of([]).check_kustomize_version("v5.0.0", "app")


KLOG_BLOCK = (
    b"""\
E1201 15:13:04.934559    3918 run.go:72] "command failed" err=<
\tError: chart/templates/bad.yaml:1:10
\t  executing "chart/templates/bad.yaml" at <.Values.x.y>:
\t    nil pointer evaluating interface {}.y
\t
\tUse --debug flag to render out invalid YAML
\t: unable to run: '/usr/bin/helm template r /tmp/root/app/charts/c -f /tmp/k/v.yaml' """
    b"""with env=[HELM_CONFIG_HOME=/tmp/k/helm] (is '/usr/bin/helm' installed?): exit status 1
 >
"""
)


def test_kustomize_errors_keep_the_cause(tmp_path: Path) -> None:
    detail = kustomize._error_detail(KLOG_BLOCK, Path("/tmp/root"))
    assert detail == (
        'chart/templates/bad.yaml:1:10 executing "chart/templates/bad.yaml" at <.Values.x.y>: '
        "nil pointer evaluating interface {}.y (helm template)"
    )
    one_line = b'E1201 run.go:72] "command failed" err="accumulating resources: missing.yaml"\n'
    assert kustomize._error_detail(one_line, tmp_path) == "accumulating resources: missing.yaml"
    plain = (
        b"Error: trouble configuring builtin HelmChartInflationGenerator\n"
        b"must specify --enable-helm\n"
    )
    assert kustomize._error_detail(plain, tmp_path) == (
        "trouble configuring builtin HelmChartInflationGenerator must specify --enable-helm"
    )
    assert len(kustomize._error_detail(b"Error: " + b"x" * 2000, tmp_path)) == 400


HELM_KUSTOMIZATION = """\
helmCharts:
- name: mini
  releaseName: demo
  valuesInline: {replicas: 3}
"""


def _helm_chart_tree(root: Path) -> None:
    write(root, "app/kustomization.yaml", HELM_KUSTOMIZATION)
    write(root, "app/charts/mini/Chart.yaml", "apiVersion: v2\nname: mini\nversion: 0.1.0\n")
    write(root, "app/charts/mini/values.yaml", "replicas: 1\n")
    write(
        root,
        "app/charts/mini/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}-cfg'}\n"
        "data: {replicas: '{{ .Values.replicas }}'}\n",
    )


@needs_helm
@needs_kustomize
def test_helm_charts_inflate_with_enable_helm(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    _helm_chart_tree(tree)
    (manifest,) = kustomize.build(
        tree, "app", {}, workdir=tmp_path / "w", build_options=["--enable-helm"]
    )
    assert manifest.key.name == "demo-cfg"
    assert manifest.body["data"] == {"replicas": "3"}
    assert sorted(p.name for p in (tree / "app/charts").iterdir()) == ["mini"], "tree written"


@needs_kustomize
def test_helm_charts_without_enable_helm_say_so(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    _helm_chart_tree(tree)
    with pytest.raises(SourceError) as err:
        kustomize.build(tree, "app", {}, workdir=tmp_path / "w")
    assert err.value.message.endswith("must specify --enable-helm")
    assert "kustomize.buildOptions: --enable-helm" in (err.value.hint or "")


@needs_helm
@needs_kustomize
def test_a_failing_chart_under_helm_charts_names_helms_cause(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    _helm_chart_tree(tree)
    write(tree, "app/charts/mini/templates/bad.yaml", "{{ .Values.nope.deeper }}\n")
    with pytest.raises(SourceError) as err:
        kustomize.build(tree, "app", {}, workdir=tmp_path / "w", build_options=["--enable-helm"])
    assert err.value.message.startswith("kustomize build app failed (exit 1): mini/templates/")
    assert "nil pointer evaluating interface {}.deeper (helm template)" in err.value.message
    assert str(tmp_path) not in err.value.message


# --------------------------------------------------------------------------- sourceHydrator


def _hydrated(hydrator: dict[str, Any]) -> model.Application:
    return application.parse_application(
        {
            "metadata": {"name": "guestbook", "namespace": "argocd"},
            "spec": {
                "destination": {"namespace": "dev"},
                "source": {"repoURL": "https://ignored.example.com/x.git", "path": "ignored"},
                "sourceHydrator": hydrator,
            },
        }
    )


def test_source_hydrator_compares_the_sync_source() -> None:
    dry = {"repoURL": "https://git.example.com/dry.git", "path": "dry", "targetRevision": "HEAD",
           "helm": {"valueFiles": ["x.yaml"]}}  # fmt: skip
    app = _hydrated({"drySource": dry, "syncSource": {"targetBranch": "env/dev", "path": "dev"}})
    (source,) = app.sources
    assert (source.repo_url, source.path, source.target_revision) == (
        "https://git.example.com/dry.git",
        "dev",
        "env/dev",
    )
    assert source.kind == ""
    assert source.options == {}
    other = {"targetBranch": "env/dev", "path": "dev", "repoURL": "https://git.example.com/h.git"}
    assert _hydrated({"drySource": dry, "syncSource": other}).sources[0].repo_url == (
        "https://git.example.com/h.git"
    )


@pytest.mark.parametrize(
    ("hydrator", "message"),
    [
        ({"drySource": {"repoURL": "x"}}, "syncSource needs path and targetBranch"),
        ({"drySource": {}, "syncSource": {"path": "p", "targetBranch": "b"}}, "repoURL is missing"),
        ("nonsense", "syncSource needs path and targetBranch"),
    ],
)
def test_a_bad_source_hydrator_is_an_app_error(hydrator: Any, message: str) -> None:
    with pytest.raises(AppError, match=message):
        _hydrated(hydrator)


def test_exec_flags_of_build_options_need_allow_plugins() -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", "namespace": "argocd"},
        "data": {
            "kustomize.buildOptions": "--enable-alpha-plugins --enable-exec --enable-helm "
            "--mount type=bind,src=/x,dst=/y --load-restrictor=LoadRestrictionsNone"
        },
    }
    # without --allow-plugins the flags that run commands are left out (a kustomization that
    # needs them fails with kustomize's own message), the rest stays
    assert render_config.of([cm]).kustomize_flags() == (
        "--enable-helm",
        "--load-restrictor=LoadRestrictionsNone",
    )
    allowed = render_config.of([cm], allow_plugins=True)
    assert allowed.kustomize_flags() == allowed.kustomize_build_options


def test_exec_flags_given_directly_are_refused(tmp_path: Path) -> None:
    write(tmp_path, "app/kustomization.yaml", "resources: []\n")
    with pytest.raises(SourceError, match=r"--enable-exec is not allowed") as err:
        kustomize.build(
            tmp_path, "app", {}, workdir=tmp_path / "w", build_options=["--enable-exec"]
        )
    assert "--allow-plugins" in (err.value.hint or "")


def test_a_kustomize_time_out_takes_the_plugins_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # with --allow-plugins a legacy exec plugin runs under kustomize: a time-out kills
    # kustomize's whole process group, the plugin's own children included
    pidfile = tmp_path / "pid"
    plugin = write(
        tmp_path,
        "plugins/example.com/v1/gen/Gen",
        f"#!/bin/sh\nsleep 300 &\necho $! > {pidfile}\nwait\n",
    )
    plugin.chmod(0o755)
    write(tmp_path, "repo/app/kustomization.yaml", "generators: [gen.yaml]\n")
    write(
        tmp_path,
        "repo/app/gen.yaml",
        "apiVersion: example.com/v1\nkind: Gen\nmetadata: {name: g}\n",
    )
    monkeypatch.setenv("KUSTOMIZE_PLUGIN_HOME", str(tmp_path / "plugins"))
    monkeypatch.setenv(KUSTOMIZE_TIMEOUT_ENV, "1")
    with pytest.raises(SourceError, match=r"^kustomize build app timed out after 1s$"):
        kustomize.build(
            tmp_path / "repo",
            "app",
            {},
            workdir=tmp_path / "work",
            build_options=("--enable-alpha-plugins",),
            allow_exec=True,
        )
    pid = int(pidfile.read_text())
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except FileNotFoundError:
        state = "gone"
    assert state in ("gone", "Z"), state


def test_source_types_argocd_cm_disables(tmp_path: Path) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", "namespace": "argocd"},
        "data": {"jsonnet.enable": "false", "helm.enable": "true", "kustomize.enable": ""},
    }
    assert render_config.of([cm]).disabled == frozenset({"jsonnet"})
    write(tmp_path, "app/a.jsonnet", "error 'jsonnet is off: never evaluated'")
    write(tmp_path, "app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n")
    assert [m.key.name for m in directory.collect(tmp_path, "app", {}, jsonnet=None)] == ["cm"]


@pytest.mark.parametrize(
    ("git_version", "expected"),
    [("v1.31.2+k3s1", "1.31.2"), ("v1.29.4-eks-1552ad0", "1.29.4"), ("1.30", "1.30"), ("", "")],
)
def test_kube_version_as_argo_cd_parses_it(git_version: str, expected: str) -> None:
    assert render_config.parse_kube_version(git_version) == expected
    assert render_config.of([], kube_version=git_version).kube_version == expected


@needs_helm
@needs_kustomize
def test_helm_charts_get_the_kube_version(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    _helm_chart_tree(tree)
    write(
        tree,
        "app/charts/mini/templates/kube.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kube}\n"
        "data: {version: '{{ .Capabilities.KubeVersion.Version }}'}\n",
    )
    built = kustomize.build(
        tree, "app", {"kubeVersion": "1.29.4"}, workdir=tmp_path / "w",
        build_options=["--enable-helm"],
    )  # fmt: skip
    assert {m.key.name: m.body["data"] for m in built}["kube"] == {"version": "v1.29.4"}


@needs_helm
def test_the_cluster_version_reaches_helm_unless_the_app_sets_one(tmp_path: Path) -> None:
    from kubectl_gitdrift.sources.render import render

    write(tmp_path, "chart/Chart.yaml", "apiVersion: v2\nname: c\nversion: 0.1.0\n")
    write(
        tmp_path,
        "chart/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kube}\n"
        "data: {version: '{{ .Capabilities.KubeVersion.Version }}'}\n",
    )

    def version(helm_options: dict[str, Any]) -> str:
        app = _hydrated({"drySource": {"repoURL": "x"}, "syncSource": {"path": "chart",
                         "targetBranch": "main"}})  # fmt: skip
        source = app.sources[0]
        app = dataclasses.replace(
            app, sources=(dataclasses.replace(source, kind="helm", options=helm_options),)
        )
        config = render_config.of([], kube_version="v1.28.3+k3s1")
        rendered = render(app, tmp_path, local=True, workdir=tmp_path / "w", config=config)
        return str(rendered.manifests[0].body["data"]["version"])

    assert version({}) == "v1.28.3"
    assert version({"kubeVersion": "1.30.1"}) == "v1.30.1"


API_RESOURCES = [
    {"apiVersion": "v1", "kind": "ConfigMap", "name": "configmaps", "verbs": ["list", "watch"]},
    {"apiVersion": "v1", "kind": "Pod", "name": "pods/log", "verbs": ["get"]},  # a subresource
    {"apiVersion": "v1", "kind": "Binding", "name": "bindings", "verbs": ["create"]},
    {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
     "name": "servicemonitors", "verbs": ["get", "list", "watch"]},
    {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
     "name": "horizontalpodautoscalers", "verbs": ["list", "watch"]},
    {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
     "name": "horizontalpodautoscalers", "verbs": ["list", "watch"]},
    {"apiVersion": "example.com/v1beta1", "kind": "Widget", "name": "widgets"},  # no verbs
]  # fmt: skip


def test_cluster_api_versions_as_argo_cd_sends_them() -> None:
    # APIResourcesToStrings(preferred resources that can be listed and watched, true)
    assert render_config.api_versions(API_RESOURCES) == [
        "autoscaling/v2",
        "autoscaling/v2/HorizontalPodAutoscaler",
        "example.com/v1beta1",
        "example.com/v1beta1/Widget",
        "monitoring.coreos.com/v1",
        "monitoring.coreos.com/v1/ServiceMonitor",
        "v1",
        "v1/ConfigMap",
    ]


@needs_helm
def test_the_cluster_api_versions_reach_helm_unless_the_app_sets_some(tmp_path: Path) -> None:
    # a chart that renders a ServiceMonitor only where the CRD is served, as many do
    from kubectl_gitdrift.sources.render import render

    write(tmp_path, "chart/Chart.yaml", "apiVersion: v2\nname: c\nversion: 0.1.0\n")
    write(
        tmp_path,
        "chart/templates/monitor.yaml",
        '{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" }}\n'
        "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: web}\n"
        "spec: {}\n{{- end }}\n",
    )
    write(
        tmp_path,
        "chart/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    )

    def kinds(helm_options: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
        app = _hydrated({"drySource": {"repoURL": "x"}, "syncSource": {"path": "chart",
                         "targetBranch": "main"}})  # fmt: skip
        source = app.sources[0]
        app = dataclasses.replace(
            app, sources=(dataclasses.replace(source, kind="helm", options=helm_options),)
        )
        config = render_config.of([], api_versions=render_config.api_versions(rows))
        rendered = render(app, tmp_path, local=True, workdir=tmp_path / "w", config=config)
        return sorted(m.key.kind for m in rendered.manifests)

    assert kinds({}, API_RESOURCES) == ["ConfigMap", "ServiceMonitor"]
    assert kinds({}, []) == ["ConfigMap"]  # a snapshot without apiResources: helm's defaults
    assert kinds({"apiVersions": ["v1"]}, API_RESOURCES) == ["ConfigMap"]  # the app's win


@needs_helm
@needs_kustomize
def test_the_cluster_api_versions_reach_helm_charts_only_with_enable_helm(tmp_path: Path) -> None:
    from kubectl_gitdrift.sources.render import render

    _helm_chart_tree(tmp_path)
    write(
        tmp_path,
        "app/charts/mini/templates/monitor.yaml",
        '{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" }}\n'
        "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: web}\n"
        "spec: {}\n{{- end }}\n",
    )
    app = _hydrated({"drySource": {"repoURL": "x"}, "syncSource": {"path": "app",
                     "targetBranch": "main"}})  # fmt: skip
    argocd_cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", "namespace": "argocd"},
        "data": {"kustomize.buildOptions": "--enable-helm"},
    }
    config = render_config.of([argocd_cm], api_versions=render_config.api_versions(API_RESOURCES))
    rendered = render(app, tmp_path, local=True, workdir=tmp_path / "w", config=config)
    assert sorted(m.key.kind for m in rendered.manifests) == ["ConfigMap", "ServiceMonitor"]


def test_the_cluster_api_versions_reach_plugins(tmp_path: Path) -> None:
    from kubectl_gitdrift.sources import cmp

    env = cmp.plugin_env({}, {}, "1.31.0", render_config.api_versions(API_RESOURCES[:1]))
    assert env["KUBE_API_VERSIONS"] == "v1,v1/ConfigMap"


def test_offline_refuses_what_kustomize_would_download(tmp_path: Path) -> None:
    write(
        tmp_path,
        "app/kustomization.yaml",
        "resources:\n- https://github.com/org/repo//base?ref=v1\n",
    )
    with pytest.raises(SourceError) as err:
        kustomize.build(tmp_path, "app", {}, workdir=tmp_path / "w", offline=True)
    assert err.value.message == (
        "kustomize build app: --offline, but kustomize would download app/kustomization.yaml: "
        "resources https://github.com/org/repo//base?ref=v1"
    )
    write(
        tmp_path,
        "charts/kustomization.yaml",
        "helmCharts:\n- {name: redis, repo: https://charts.example.com, version: 1.0.0}\n",
    )
    with pytest.raises(SourceError, match=r"helmCharts redis from https://charts.example.com$"):
        kustomize.build(
            tmp_path, "charts", {}, workdir=tmp_path / "w", offline=True,
            build_options=["--enable-helm"],
        )  # fmt: skip


def test_helm_charts_without_enable_helm_fail_so_before_offline(tmp_path: Path) -> None:
    # kustomize refuses helmCharts before it downloads the chart: --offline must not be what
    # the user is told first (its hint, "run without --offline", only leads to this failure)
    tree = tmp_path / "tree"
    write(
        tree,
        "app/kustomization.yaml",
        "helmCharts:\n- name: grafana\n  repo: https://grafana.github.io/helm-charts\n"
        "  version: 8.5.0\n",
    )
    with pytest.raises(SourceError) as err:
        kustomize.build(tree, "app", {}, workdir=tmp_path / "w", offline=True)
    assert err.value.message == (
        "kustomize build app: app/kustomization.yaml: helmCharts grafana: kustomize inflates "
        "helm charts only with --enable-helm, and Argo CD's build fails the same way: must "
        "specify --enable-helm"
    )
    assert "`kustomize.buildOptions: --enable-helm` to argocd-cm" in (err.value.hint or "")
    with pytest.raises(SourceError, match="--offline, but kustomize would download"):
        kustomize.build(
            tree, "app", {}, workdir=tmp_path / "w", offline=True, build_options=["--enable-helm"]
        )
