"""kubectl_gitdrift.sources.helm: the real `helm template`, built like Argo CD's repo-server.

Skipped without a helm binary ($KUBECTL_GITDRIFT_HELM, or helm on PATH: tests/conftest.py puts
the .tools/bin/helm of tools/install_helm.sh there)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.model import Application, AppSource, Manifest, SyncPolicy
from kubectl_gitdrift.settings import HELM_ENV, Settings
from kubectl_gitdrift.sources import helm, tools

pytestmark = pytest.mark.skipif(helm.helm_binary() is None, reason="no helm binary")

CHART = "apiVersion: v2\nname: shop\nversion: 1.2.3\n"
VALUES = """\
replicas: 1
image: {repository: nginx, tag: "1.25"}
port: 8080
greeting: hello
build: ""
"""
CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  namespace: {{ .Release.Namespace }}
data:
  greeting: {{ .Values.greeting | quote }}
  buildType: {{ kindOf .Values.build | quote }}
  build: {{ .Values.build | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  monitoring: {{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" | quote }}
  {{- with .Values.extra }}
  extra: {{ . | quote }}
  {{- end }}
  {{- with .Values.cert }}
  cert: {{ . | quote }}
  {{- end }}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
      - name: app
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
        ports: [{containerPort: {{ .Values.port }}}]
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{port: 80, targetPort: {{ .Values.port }}}]
"""
TEST_HOOK = """\
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations: {"helm.sh/hook": test}
spec:
  containers: [{name: t, image: busybox}]
"""
CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true,
              schema: {openAPIV3Schema: {type: object}}}]
"""


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    write(root, "charts/shop/Chart.yaml", CHART)
    write(root, "charts/shop/values.yaml", VALUES)
    write(root, "charts/shop/templates/configmap.yaml", CONFIGMAP)
    write(root, "charts/shop/templates/app.yaml", DEPLOYMENT)
    write(root, "charts/shop/templates/tests/test.yaml", TEST_HOOK)
    write(root, "charts/shop/crds/widget.yaml", CRD)
    write(root, "charts/shop/values-a.yaml", "replicas: 2\ngreeting: from-a\n")
    write(root, "charts/shop/values-b.yaml", "replicas: 3\n")
    write(root, "env/prod/values.yaml", "greeting: from-env\n")
    write(root, "charts/shop/cert.pem", "-----CERT-----\n")
    return root


def make_app(name: str = "shop", dest_namespace: str = "prod") -> Application:
    return Application(
        name=name,
        namespace="argocd",
        project="default",
        sources=(),
        dest_server="https://kubernetes.default.svc",
        dest_name="",
        dest_namespace=dest_namespace,
        sync_policy=SyncPolicy(),
        ignore_rules=(),
        sync_status="OutOfSync",
        revisions=(),
        history=(),
        operation=None,
    )


def run(
    tree: Path,
    options: Mapping[str, Any] | None = None,
    *,
    path: str = "charts/shop",
    app: Application | None = None,
    refs: Mapping[str, Path] | None = None,
    chart: str = "",
) -> list[Manifest]:
    source = AppSource(repo_url="https://git.example.com/org/shop.git", path=path, chart=chart)
    return helm.template(
        tree / path,
        app=app or make_app(),
        source=source,
        options=dict(options or {}),
        tree_for_ref=refs or {},
        workdir=tree.parent / "work",
        env={"ARGOCD_APP_NAME": "shop", "ARGOCD_APP_NAMESPACE": "prod"},
    )


def by_kind(objs: list[Manifest], kind: str) -> Manifest:
    (found,) = [m for m in objs if m.body["kind"] == kind]
    return found


def test_defaults_release_name_namespace_crds_hooks_and_origins(tree: Path) -> None:
    objs = run(tree)
    kinds = sorted(m.body["kind"] for m in objs)
    assert kinds == ["ConfigMap", "CustomResourceDefinition", "Deployment", "Pod", "Service"]
    cm = by_kind(objs, "ConfigMap")
    assert cm.body["metadata"] == {"name": "shop-config", "namespace": "prod"}
    assert cm.origin == "charts/shop/templates/configmap.yaml"
    assert by_kind(objs, "Deployment").origin == "charts/shop/templates/app.yaml"
    assert by_kind(objs, "Service").origin == "charts/shop/templates/app.yaml"
    assert by_kind(objs, "CustomResourceDefinition").origin == "charts/shop/crds/widget.yaml"
    # helm template never runs hooks; the hook object is emitted (the engine drops it)
    assert by_kind(objs, "Pod").body["metadata"]["annotations"] == {"helm.sh/hook": "test"}
    assert not (tree.parent / "work").exists() or not any((tree.parent / "work").iterdir())


def test_release_name_namespace_skip_crds_skip_tests(tree: Path) -> None:
    options = {"releaseName": "web", "namespace": "shop-ns", "skipCrds": True, "skipTests": True}
    objs = run(tree, options)
    assert sorted(m.body["kind"] for m in objs) == ["ConfigMap", "Deployment", "Service"]
    assert by_kind(objs, "ConfigMap").body["metadata"] == {
        "name": "web-config",
        "namespace": "shop-ns",
    }


def test_app_in_any_namespace_uses_the_name_part(tree: Path) -> None:
    objs = run(tree, app=make_app(name="team-a_shop"))
    assert by_kind(objs, "Deployment").body["metadata"]["name"] == "shop"


def test_value_files_in_order_then_inline_values_then_parameters(tree: Path) -> None:
    objs = run(tree, {"valueFiles": ["values-a.yaml", "values-b.yaml"]})
    assert by_kind(objs, "Deployment").body["spec"]["replicas"] == 3  # b after a
    assert by_kind(objs, "ConfigMap").body["data"]["greeting"] == "from-a"
    objs = run(tree, {"valueFiles": ["values-b.yaml", "values-a.yaml"]})
    assert by_kind(objs, "Deployment").body["spec"]["replicas"] == 2
    # absolute value file paths are relative to the repository root; values come after files
    objs = run(
        tree,
        {"valueFiles": ["/env/prod/values.yaml", "values-a.yaml"], "values": "replicas: 4\n"},
    )
    assert by_kind(objs, "ConfigMap").body["data"]["greeting"] == "from-a"
    assert by_kind(objs, "Deployment").body["spec"]["replicas"] == 4
    # valuesObject wins over values; --set wins over everything
    objs = run(
        tree,
        {
            "values": "replicas: 4\ngreeting: from-values\n",
            "valuesObject": {"replicas": 5},
            "parameters": [{"name": "greeting", "value": "from-set"}],
        },
    )
    assert by_kind(objs, "Deployment").body["spec"]["replicas"] == 5
    assert by_kind(objs, "ConfigMap").body["data"]["greeting"] == "from-set"


def test_parameters_force_string_commas_and_file_parameters(tree: Path) -> None:
    options = {
        "parameters": [
            {"name": "build", "value": "1234", "forceString": True},
            {"name": "extra", "value": "a,b"},
            {"name": "image.tag", "value": "1.26"},
        ],
        "fileParameters": [{"name": "cert", "path": "cert.pem"}],
    }
    objs = run(tree, options)
    data = by_kind(objs, "ConfigMap").body["data"]
    assert data["buildType"] == "string"
    assert data["build"] == "1234"
    assert data["extra"] == "a,b"  # Argo CD escapes the comma
    assert data["cert"] == "-----CERT-----\n"
    image = by_kind(objs, "Deployment").body["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "nginx:1.26"
    objs = run(tree, {"parameters": [{"name": "build", "value": "1234"}]})
    assert by_kind(objs, "ConfigMap").body["data"]["buildType"] == "int64"


def test_set_value_escaping() -> None:
    assert helm.set_value("a,b") == "a\\,b"
    assert helm.set_value("a\\,b") == "a\\,b"
    assert helm.set_value("{a,b}") == "{a,b}"


def test_kube_version_and_api_versions(tree: Path) -> None:
    objs = run(tree, {"kubeVersion": "1.29.3", "apiVersions": ["monitoring.coreos.com/v1"]})
    data = by_kind(objs, "ConfigMap").body["data"]
    assert data["kube"] == "v1.29.3"
    assert data["monitoring"] == "true"


def test_ref_value_files_and_env_substitution(tree: Path, tmp_path: Path) -> None:
    other = tmp_path / "values-repo"
    write(other, "shop/shop/values.yaml", "greeting: from-ref\n")
    objs = run(tree, {"valueFiles": ["$values/$ARGOCD_APP_NAME/shop/values.yaml"]},
               refs={"values": other})  # fmt: skip
    assert by_kind(objs, "ConfigMap").body["data"]["greeting"] == "from-ref"
    with pytest.raises(SourceError, match=r"refers to ref valuez, but no source"):
        run(tree, {"valueFiles": ["$valuez/shop/values.yaml"]}, refs={"values": other})


def test_missing_value_files(tree: Path) -> None:
    with pytest.raises(SourceError, match=r"value file values-x.yaml does not exist"):
        run(tree, {"valueFiles": ["values-x.yaml", "values-a.yaml"]})
    objs = run(
        tree,
        {"valueFiles": ["values-x.yaml", "values-a.yaml"], "ignoreMissingValueFiles": True},
    )
    assert by_kind(objs, "Deployment").body["spec"]["replicas"] == 2


def test_value_files_outside_the_repo_or_remote_are_refused(tree: Path) -> None:
    with pytest.raises(SourceError, match="resolves outside the repository root"):
        run(tree, {"valueFiles": ["../../../etc/passwd"]})
    with pytest.raises(SourceError, match="is remote"):
        run(tree, {"valueFiles": ["https://example.com/values.yaml"]})


def test_dependencies_must_be_vendored(tree: Path) -> None:
    write(
        tree,
        "charts/shop/Chart.yaml",
        CHART + "dependencies:\n- name: redis\n  version: 18.0.0\n"
        "  repository: https://charts.bitnami.com/bitnami\n",
    )
    with pytest.raises(SourceError, match=r"helm chart shop depends on redis .*not vendored"):
        run(tree)
    write(
        tree,
        "charts/shop/charts/redis/Chart.yaml",
        "apiVersion: v2\nname: redis\nversion: 18.0.0\n",
    )
    write(
        tree,
        "charts/shop/charts/redis/templates/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: redis}\n",
    )
    objs = run(tree, {"skipCrds": True, "skipTests": True})
    redis = [m for m in objs if m.body["metadata"]["name"] == "redis"]
    assert [m.origin for m in redis] == ["charts/shop/charts/redis/templates/cm.yaml"]


def test_helm_failure_is_one_line_with_stderr(tree: Path) -> None:
    write(
        tree, "charts/shop/templates/bad.yaml", '{{ required "dbHost is required" .Values.db }}\n'
    )
    with pytest.raises(SourceError) as info:
        run(tree)
    message = str(info.value)
    assert "helm template charts/shop failed" in message
    assert "dbHost is required" in message
    assert "\n" not in message
    assert str(tree) not in message


SCHEMA_FAILURE = b"""\
walk.go:75: found symbolic link in path: /tmp/x/charts/gateway/link resolves to /tmp/x/y
Error: values don't meet the specifications of the schema(s) in the following chart(s):
gateway:
- at '/replicaCount': got string, want integer
- at '': additional properties 'name' not allowed
"""


@pytest.mark.parametrize(
    ("stderr", "detail"),
    [
        # helm 4's schema check: the line ending in a colon, then the chart and its problems
        (
            SCHEMA_FAILURE,
            (
                "values don't meet the specifications of the schema(s) in the following chart(s): "
                "gateway: - at '/replicaCount': got string, want integer; - at '': additional "
                "properties 'name' not allowed"
            ),
        ),
        (
            (
                b"Error: YAML parse error on shop/templates/a.yaml: error converting YAML to JSON: "
                b"yaml: line 3: did not find expected key\n"
                b"Use --debug flag to render out invalid YAML\n"
            ),
            (
                "YAML parse error on shop/templates/a.yaml: error converting YAML to JSON: yaml: "
                "line 3: did not find expected key"
            ),
        ),
        (b"WARNING: x\nsomething broke\n", "something broke"),
        (b"", "no error output"),
    ],
)
def test_helm_error_detail_keeps_the_whole_error(stderr: bytes, detail: str) -> None:
    here = Path("/tmp/x")
    assert helm._error_detail(stderr, here / "charts/gateway", here, here / "s") == detail
    long = helm._error_detail(b"Error: a:\n" + b"- x\n" * 500, here, here, here)
    assert len(long) == 600
    assert long.endswith("…")


def test_chart_repository_sources_are_refused(tree: Path) -> None:
    with pytest.raises(SourceError, match="cannot be rendered offline"):
        run(tree, path="", chart="redis")


def test_chart_at_repo_root(tree: Path) -> None:
    root = tree / "charts" / "shop"
    objs = helm.template(
        root,
        app=make_app(),
        source=AppSource(repo_url="x", path=""),
        options={},
        tree_for_ref={},
        workdir=tree.parent / "w",
        env={},
    )
    assert by_kind(objs, "Deployment").origin == "templates/app.yaml"


def test_binary_rule(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """$KUBECTL_GITDRIFT_HELM, else helm on PATH; never a helm the package finds beside itself."""
    monkeypatch.setenv(HELM_ENV, "/opt/helm/bin/helm")
    assert helm.helm_binary() == "/opt/helm/bin/helm"
    assert tools.helm_binary(Settings.from_environ()) == "/opt/helm/bin/helm"
    monkeypatch.delenv(HELM_ENV)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert helm.helm_binary() is None
    (tmp_path / "helm").write_text("#!/bin/sh\n", encoding="utf-8")
    (tmp_path / "helm").chmod(0o755)
    assert helm.helm_binary() == str(tmp_path / "helm")
