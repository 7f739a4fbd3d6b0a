"""From a rendered field of a Helm chart back to the values key and file that set it
(sources/helm_locate.py), in Argo CD's order of values, exactly or not at all; and the
comment-keeping edits of a values file (diagnose/valuesedit.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from kubectl_gitdrift.diagnose import valuesedit
from kubectl_gitdrift.model import ListKey, ObjectKey
from kubectl_gitdrift.sources import helm_locate
from kubectl_gitdrift.sources.helm_locate import HelmSource

CM = ObjectKey("", "ConfigMap", "shop", "shop-config")
DEPLOY = ObjectKey("apps", "Deployment", "shop", "shop")
API = ListKey((("name", "api"),))

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  LOG_LEVEL: {{ .Values.config.logLevel | quote }}
  REGION: {{ .Values.config.region | quote }}
  BUILD: {{ default "dev" .Values.build }}
  MODE: batch
  {{- with .Values.config.schema }}
  SCHEMA: {{ . | quote }}
  {{- end }}
  {{- if .Values.flags }}
  FLAGS: {{ .Values.flags | join "," | quote }}
  {{- end }}
  {{- range $k, $v := .Values.extra }}
  {{ $k }}: {{ $v | quote }}
  {{- end }}
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  {{- if .Values.autoscaling }}
  replicas: {{ .Values.autoscaling.min }}
  {{- else }}
  replicas: {{ .Values.replicaCount }}
  {{- end }}
  template:
    spec:
      containers:
      - name: api
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
        ports:
        - containerPort: 8080
        resources:
          {{- toYaml .Values.resources | nindent 10 }}
      - name: sidecar
        image: "{{ .Values.sidecar.image }}"
"""


def _chart(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return _chart(
        tmp_path / "repo",
        {
            "charts/shop/Chart.yaml": "apiVersion: v2\nname: shop\nversion: 1.0.0\n",
            "charts/shop/templates/configmap.yaml": CONFIGMAP,
            "charts/shop/templates/deployment.yaml": DEPLOYMENT,
            "charts/shop/values.yaml": """\
                replicaCount: 1
                image:
                  repository: registry.example.com/shop/api
                  tag: "2.4.1"
                sidecar:
                  image: registry.example.com/proxy:1.0
                config:
                  logLevel: info
                  region: us-east-1
                resources:
                  limits:
                    cpu: 500m
                """,
            "charts/shop/values-prod.yaml": """\
                replicaCount: 3
                config:
                  logLevel: warn   # prod is quiet
                  region: us-east-1
                """,
            "charts/shop/values-eu.yaml": """\
                # applied after values-prod.yaml
                config:
                  region: eu-west-1
                """,
        },
    )


def _source(tree: Path, **options: Any) -> HelmSource:
    opts = {"valueFiles": ["values-prod.yaml", "values-eu.yaml"], **options}
    return HelmSource(tree / "charts/shop", tree, "charts/shop", opts, {}, repo_url="git")


def _at(source: HelmSource, key: ObjectKey, path: tuple[Any, ...], desired: Any, live: Any):  # type: ignore[no-untyped-def]
    template = "configmap" if key.kind == "ConfigMap" else "deployment"
    origin = f"charts/shop/templates/{template}.yaml"
    return helm_locate.locate(source, key, origin, path, desired, live)


def test_the_value_file_that_sets_the_key_last_wins(tree: Path) -> None:
    found = _at(_source(tree), CM, ("data", "REGION"), "eu-west-1", "eu-central-1")
    assert (found.how, found.file, found.line, found.key) == (
        "values",
        "charts/shop/values-eu.yaml",
        3,
        "config.region",
    )
    found = _at(_source(tree), CM, ("data", "LOG_LEVEL"), "warn", "debug")
    assert (found.how, found.file, found.line, found.key, found.old, found.new) == (
        "values",
        "charts/shop/values-prod.yaml",
        3,
        "config.logLevel",
        "warn",
        "debug",
    )


def test_a_number_stays_a_number_in_the_values_file(tree: Path) -> None:
    found = _at(_source(tree), DEPLOY, ("spec", "replicas"), 3, 5)
    assert (found.how, found.file, found.line, found.key, found.new) == (
        "values",
        "charts/shop/values-prod.yaml",
        1,
        "replicaCount",
        5,
    )


def test_a_chart_default_is_overridden_in_the_last_value_file(tree: Path) -> None:
    path = ("spec", "template", "spec", "containers", API, "resources", "limits", "cpu")
    found = _at(_source(tree), DEPLOY, path, "500m", "1")
    assert (found.how, found.file, found.key, found.note) == (
        "values-add",
        "charts/shop/values-eu.yaml",
        "resources.limits.cpu",
        "the chart's default",
    )
    # without value files, the chart's own values.yaml (in git) is the line to change
    found = _at(_source(tree, valueFiles=[]), DEPLOY, path, "500m", "1")
    assert (found.how, found.file, found.line) == ("values", "charts/shop/values.yaml", 12)
    assert found.note == "the chart's own default: every app of the chart gets the new value"


def test_the_part_of_an_image_that_differs(tree: Path) -> None:
    path = ("spec", "template", "spec", "containers", API, "image")
    found = _at(
        _source(tree), DEPLOY, path, "registry.example.com/shop/api:2.4.1",
        "registry.example.com/shop/api:2.5.0",
    )  # fmt: skip
    assert (found.how, found.key, found.old, found.new) == (
        "values-add",
        "image.tag",
        "2.4.1",
        "2.5.0",
    )
    sidecar = ("spec", "template", "spec", "containers", ListKey((("name", "sidecar"),)), "image")
    found = _at(_source(tree), DEPLOY, sidecar, "registry.example.com/proxy:1.0", "proxy:2")
    assert found.key == "sidecar.image"


def test_inline_values_and_parameters_name_no_file(tree: Path) -> None:
    src = _source(
        tree,
        values="config:\n  logLevel: error\n",
        valuesObject={"config": {"logLevel": "trace"}},
    )
    found = _at(src, CM, ("data", "LOG_LEVEL"), "trace", "debug")  # valuesObject wins
    assert (found.how, found.file, found.key) == ("helm-inline", "", "config.logLevel")
    assert "spec.source.helm.valuesObject" in found.note
    assert _at(src, CM, ("data", "LOG_LEVEL"), "error", "debug").how == "none"
    src = _source(tree, values="config:\n  logLevel: error\n")
    assert _at(src, CM, ("data", "LOG_LEVEL"), "error", "debug").how == "helm-inline"
    src = _source(tree, parameters=[{"name": "config.logLevel", "value": "7", "forceString": True}])
    found = _at(src, CM, ("data", "LOG_LEVEL"), "7", "8")
    assert (found.how, found.param) == ("helm-parameter", "--helm-set-string config.logLevel")


def test_literals_defaults_and_with_scopes(tree: Path) -> None:
    found = _at(_source(tree), CM, ("data", "MODE"), "batch", "stream")
    assert (found.how, found.file, found.line) == (
        "template",
        "charts/shop/templates/configmap.yaml",
        9,
    )
    found = _at(_source(tree), CM, ("data", "BUILD"), "dev", "42")  # `default "dev"`
    assert (found.how, found.key, found.note) == ("values-add", "build", "the template's default")
    src = _source(tree, valuesObject={"config": {"schema": "1.10"}})
    found = _at(src, CM, ("data", "SCHEMA"), "1.10", "1.11")  # `.` in `with .Values.config.schema`
    assert (found.how, found.key) == ("helm-inline", "config.schema")


def test_never_a_guess(tree: Path) -> None:
    # the effective value is not git's: something else renders the field
    assert _at(_source(tree), CM, ("data", "LOG_LEVEL"), "info", "debug").how == "none"
    # a computed value (join), a range's keys, a field the template does not write
    assert _at(_source(tree), CM, ("data", "FLAGS"), "a,b", "a").how == "none"
    assert _at(_source(tree), CM, ("data", "other"), "x", "y").how == "none"
    # two branches whose keys both hold git's value
    src = _source(tree, valuesObject={"autoscaling": {"min": 3}})
    found = _at(src, DEPLOY, ("spec", "replicas"), 3, 5)
    assert found.how == "none"
    assert "autoscaling.min, replicaCount" in found.note
    # a subchart's template
    found = helm_locate.locate(
        _source(tree), CM, "charts/shop/charts/db/templates/cm.yaml", ("data", "X"), "a", "b"
    )
    assert found.how == "none"
    assert "subchart" in found.note


def test_a_pulled_chart_with_values_from_a_ref_source(tmp_path: Path) -> None:
    chart = _chart(
        tmp_path / "pulled",
        {
            "Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.2.3\n",
            "values.yaml": "replicaCount: 1\ngreeting: hi\n",
            "templates/deployment.yaml": (
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
                "spec:\n  replicas: {{ .Values.replicaCount }}\n"
            ),
            "templates/configmap.yaml": (
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"
                "data:\n  greeting: {{ .Values.greeting }}\n"
            ),
        },
    )
    values = _chart(tmp_path / "values", {"envs/prod/web.yaml": "replicaCount: 3\n"})
    url = "https://git.example.com/values.git"
    src = HelmSource(
        chart, chart, ".", {"valueFiles": ["$values/envs/prod/web.yaml"]}, {},
        refs={"values": values}, ref_urls={"values": url}, repo_url="https://charts.example.com",
        pulled=True, chart="web",
    )  # fmt: skip
    key = ObjectKey("apps", "Deployment", "web", "web")
    found = helm_locate.locate(src, key, None, ("spec", "replicas"), 3, 5)
    assert (found.how, found.file, found.line, found.ref, found.repo) == (
        "values",
        "envs/prod/web.yaml",
        1,
        "values",
        url,
    )
    cm = ObjectKey("", "ConfigMap", "web", "web")
    found = helm_locate.locate(src, cm, None, ("data", "greeting"), "hi", "hello")
    assert (found.how, found.file, found.key, found.repo) == (
        "values-add",
        "envs/prod/web.yaml",
        "greeting",
        url,
    )
    alone = HelmSource(chart, chart, ".", {}, {}, pulled=True, chart="web")
    found = helm_locate.locate(alone, cm, None, ("data", "greeting"), "hi", "hello")
    assert found.how == "none"
    assert "valuesObject" in found.note


# --------------------------------------------------------------------------- valuesedit


VALUES = """\
# prod values
replicaCount: 3  # three
config:
    logLevel: warn
    region: "us-east-1"
# the end
"""


def test_add_a_key_at_its_nesting_keeping_comments() -> None:
    new, why = valuesedit.add_key(VALUES, ("config", "buildNumber"), "7")
    assert (new, why) == (
        VALUES.replace(
            '    region: "us-east-1"\n', '    region: "us-east-1"\n    buildNumber: "7"\n'
        ),
        "",
    )
    new, _ = valuesedit.add_key(VALUES, ("image", "tag"), "2.5.0")
    assert new == VALUES.replace("# the end", "image:\n    tag: 2.5.0\n# the end")
    assert valuesedit.add_key("", ("a", "b"), 1) == ("a:\n  b: 1\n", "")
    assert valuesedit.add_key("a: 1", ("b",), True) == ("a: 1\nb: true\n", "")
    assert valuesedit.add_key(VALUES, ("replicaCount", "x"), 1)[0] is None
    assert valuesedit.add_key("config: {a: 1}\n", ("config", "b"), 1)[0] is None


def test_change_a_scalar_on_its_line() -> None:
    assert valuesedit.set_line(VALUES, 2, 3, 5) == VALUES.replace("3  # three", "5  # three")
    assert valuesedit.set_line(VALUES, 5, "us-east-1", "eu-west-1") == VALUES.replace(
        "us-east-1", "eu-west-1"
    )
    assert valuesedit.set_line(VALUES, 4, "info", "debug") is None


TWO_CONFIGMAPS = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-a
data:
  MODE: {{ .Values.a.mode }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-b
  annotations:
    {{- toYaml .Values.b.annotations | nindent 4 }}
data:
  MODE: {{ .Values.b.mode }}
  LEVEL: {{ .Values.b.level | upper }}
  OTHER: {{ .Values.a.mode }}
"""


def test_the_document_is_picked_by_kind_and_name(tmp_path: Path) -> None:
    tree = _chart(
        tmp_path / "repo",
        {
            "Chart.yaml": "apiVersion: v2\nname: c\nversion: 1.0.0\n",
            "templates/cms.yaml": TWO_CONFIGMAPS,
            "values.yaml": (
                "a:\n  mode: fast\nb:\n  mode: fast\n  level: info\n"
                "  annotations:\n    example.com/owner: team-a\n"
            ),
        },
    )
    src = HelmSource(tree, tree, ".", {}, {}, repo_url="git")
    origin = "templates/cms.yaml"

    def at(name: str, path: tuple[Any, ...], desired: Any, live: Any):  # type: ignore[no-untyped-def]
        key = ObjectKey("", "ConfigMap", "ns", name)
        return helm_locate.locate(src, key, origin, path, desired, live)

    # both keys hold "fast": the object's name tells the documents apart
    assert at("rel-a", ("data", "MODE"), "fast", "slow").key == "a.mode"
    assert at("rel-b", ("data", "MODE"), "fast", "slow").key == "b.mode"
    # a key with dots, below a toYaml block
    found = at("rel-b", ("metadata", "annotations", "example.com/owner"), "team-a", "team-b")
    assert (found.how, found.key, found.key_path, found.line) == (
        "values",
        'b.annotations["example.com/owner"]',
        ("b", "annotations", "example.com/owner"),
        7,
    )
    # a function that changes the value: nothing is named
    assert at("rel-b", ("data", "LEVEL"), "INFO", "DEBUG").how == "none"


def test_a_line_gitdrift_cannot_follow_beside_one_it_can(tree: Path) -> None:
    """An if/else whose other branch computes the value: the key that matches is no proof."""
    (tree / "charts/shop/templates/deployment.yaml").write_text(
        DEPLOYMENT.replace(
            "replicas: {{ .Values.autoscaling.min }}",
            "replicas: {{ add 1 .Values.autoscaling.min }}",
        )
    )
    found = _at(_source(tree), DEPLOY, ("spec", "replicas"), 3, 5)
    assert found.how == "none"
    assert "cannot follow" in found.note
