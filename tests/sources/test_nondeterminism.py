"""kubectl_gitdrift.sources.nondeterminism: the templates of a chart that render differently on
every render, found in their text and proven by a second render with the real helm.

The real-helm tests are skipped without a helm binary ($KUBECTL_GITDRIFT_HELM, or helm on PATH)."""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kubectl_gitdrift.model import (
    Application,
    AppSource,
    Manifest,
    ObjectKey,
    RenderCall,
    SyncPolicy,
)
from kubectl_gitdrift.settings import Settings
from kubectl_gitdrift.sources import helm, nondeterminism
from kubectl_gitdrift.sources.context import RenderContext

needs_helm = pytest.mark.skipif(helm.helm_binary() is None, reason="no helm binary")

CHART = "apiVersion: v2\nname: db\nversion: 0.1.0\n"
VALUES = 'auth:\n  password: ""\n  existingSecret: ""\nmetrics:\n  existingSecret: ""\n'
SECRET = """\
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-auth
data:
  password: {{ .Values.auth.password | default (randAlphaNum 16) | b64enc | quote }}
"""
CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  {{- /* randAlphaNum in a comment is no call */}}
  note: {{ "randAlphaNum now" | quote }}
  flag: {{ .Values.now | default "off" | quote }}
"""
SECRET_KEY = ObjectKey("", "Secret", "", "db-auth")


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def chart(root: Path, templates: Mapping[str, str], values: str = VALUES) -> Path:
    write(root, "charts/db/Chart.yaml", CHART)
    write(root, "charts/db/values.yaml", values)
    for name, text in templates.items():
        write(root, f"charts/db/templates/{name}", text)
    return root


def context(tree: Path, options: Mapping[str, Any] | None = None) -> RenderContext:
    app = Application(
        name="db",
        namespace="argocd",
        project="default",
        sources=(),
        dest_server="https://kubernetes.default.svc",
        dest_name="",
        dest_namespace="shop",
        sync_policy=SyncPolicy(),
        ignore_rules=(),
        sync_status="OutOfSync",
        revisions=(),
        history=(),
        operation=None,
    )
    return RenderContext(
        app=app,
        source=AppSource(repo_url="https://git.example.com/org/db.git", path="charts/db"),
        tree=tree,
        path="charts/db",
        revision=None,
        env={"ARGOCD_APP_NAME": "db"},
        options=dict(options or {}),
        workdir=tree.parent / "work",
        settings=Settings.from_environ(),
    )


def unused(ctx: RenderContext) -> list[Manifest]:
    raise AssertionError("a chart whose templates call nothing is not rendered again")


def same(objs: list[Manifest]) -> Any:
    return lambda ctx: list(objs)


# --------------------------------------------------------------------------- with the real helm


@needs_helm
def test_a_generated_password_is_named_and_proven_by_a_second_render(tmp_path: Path) -> None:
    tree = chart(tmp_path / "tree", {"secret.yaml": SECRET, "configmap.yaml": CONFIGMAP})
    ctx = context(tree)
    first = helm.Helm().render(ctx)
    (found,) = nondeterminism.examine(ctx, first, helm.Helm().render)
    assert found.template == "charts/db/templates/secret.yaml"
    assert found.chart == "charts/db"
    assert found.objects == (SECRET_KEY,)
    assert found.calls == (
        RenderCall(
            file="charts/db/templates/secret.yaml",
            line=6,
            function="randAlphaNum",
            fields=("password",),
            value="auth.password",
        ),
    )
    assert found.varied == ((SECRET_KEY, ("data", "password")),)
    assert found.compared
    assert found.existing_secret == "auth.existingSecret"  # nearer auth.password than metrics'


@needs_helm
def test_a_chart_value_that_replaces_the_call_renders_the_same_twice(tmp_path: Path) -> None:
    tree = chart(tmp_path / "tree", {"secret.yaml": SECRET})
    ctx = context(tree, {"values": "auth:\n  password: fixed\n"})
    assert nondeterminism.examine(ctx, helm.Helm().render(ctx), helm.Helm().render) == ()


@needs_helm
def test_a_named_template_of_a_packaged_subchart(tmp_path: Path) -> None:
    sub = tmp_path / "src/token"
    write(sub, "Chart.yaml", "apiVersion: v2\nname: token\nversion: 1.0.0\n")
    write(sub, "values.yaml", 'token: ""\nexistingSecret: ""\n')
    write(
        sub,
        "templates/_token.tpl",
        '{{- define "token.value" -}}\n'
        "{{- if .Values.token }}{{ .Values.token }}{{- else -}}\n"
        "{{ uuidv4 }}\n"
        "{{- end }}\n"
        "{{- end }}\n",
    )
    write(
        sub,
        "templates/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\nstringData:\n"
        '  token: {{ include "token.value" . | quote }}\n',
    )
    tree = chart(tmp_path / "tree", {})
    helm_bin = helm.helm_binary()
    assert helm_bin is not None
    (tree / "charts/db/charts").mkdir()
    subprocess.run(
        [helm_bin, "package", str(sub), "-d", str(tree / "charts/db/charts")],
        check=True,
        capture_output=True,
    )
    ctx = context(tree)
    (found,) = nondeterminism.examine(ctx, helm.Helm().render(ctx), helm.Helm().render)
    key = ObjectKey("", "Secret", "", "token")
    assert found.objects == (key,)
    assert found.template == "charts/db/charts/token-1.0.0.tgz/token/templates/secret.yaml"
    (call,) = found.calls
    assert call.file == "charts/db/charts/token-1.0.0.tgz/token/templates/_token.tpl"
    assert (call.line, call.function, call.via) == (3, "uuidv4", "token.value")
    assert (call.fields, call.value) == (("token",), "token.token")  # the subchart's own value
    assert found.varied == ((key, ("stringData", "token")),)
    assert found.existing_secret == "token.existingSecret"


# --------------------------------------------------------------------------- the text alone


def test_comments_strings_values_and_variables_are_no_calls(tmp_path: Path) -> None:
    notes = "{{ randAlphaNum 5 }}\n"  # NOTES.txt renders no object
    helper = '{{- define "db.unused" }}{{ genCA "x" 3 }}{{- end }}\n'  # included nowhere
    variable = "kind: ConfigMap\napiVersion: v1\nmetadata: {name: v}\ndata:\n  x: {{ $now }}\n"
    tree = chart(
        tmp_path / "tree",
        {
            "configmap.yaml": CONFIGMAP,
            "NOTES.txt": notes,
            "_helpers.tpl": helper,
            "variable.yaml": "{{- $now := 1 }}\n" + variable,
        },
    )
    assert nondeterminism.examine(context(tree), [], unused) == ()


def test_lookup_alone_is_not_rendered_again(tmp_path: Path) -> None:
    lookup = (
        '{{- $old := lookup "v1" "Secret" .Release.Namespace "x" }}\n'
        "apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n"
    )
    tree = chart(tmp_path / "tree", {"secret.yaml": lookup})
    assert nondeterminism.examine(context(tree), [], unused) == ()


def test_the_else_branch_of_a_value_and_a_variable_name_their_value_and_field(
    tmp_path: Path,
) -> None:
    template = """\
{{- $token := "" }}
{{- if .Values.auth.token }}
{{- $token = .Values.auth.token }}
{{- else }}
{{- $token = randAlphaNum 32 }}
{{- end }}
apiVersion: v1
kind: Secret
metadata:
  name: x
data:
  api-token: {{ $token | b64enc }}
"""
    tree = chart(tmp_path / "tree", {"secret.yaml": template})
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}
    first = [Manifest(ObjectKey("", "Secret", "", "x"), body, "charts/db/templates/secret.yaml")]
    (found,) = nondeterminism.examine(context(tree), first, lambda ctx: None)  # type: ignore[arg-type, return-value]
    (call,) = found.calls
    assert (call.line, call.function, call.fields, call.value) == (
        5,
        "randAlphaNum",
        ("api-token",),
        "auth.token",
    )
    assert not found.compared  # the second render failed: the text is all the evidence


def test_an_argument_of_the_call_is_no_value_that_replaces_it(tmp_path: Path) -> None:
    template = (
        "apiVersion: v1\nkind: Secret\nmetadata: {name: x}\ndata:\n"
        "  key: {{ randAlphaNum (int .Values.keyLength) | b64enc }}\n"
        "  token: {{ .Values.token | default (randAlphaNum (int .Values.keyLength)) }}\n"
    )
    tree = chart(tmp_path / "tree", {"secret.yaml": template})
    first = [Manifest(ObjectKey("", "Secret", "", "x"), {}, "charts/db/templates/secret.yaml")]
    (found,) = nondeterminism.examine(context(tree), first, lambda ctx: None)  # type: ignore[arg-type, return-value]
    assert [(c.fields, c.value) for c in found.calls] == [(("key",), ""), (("token",), "token")]


def test_the_existing_secret_is_the_one_the_template_or_the_secret_names(tmp_path: Path) -> None:
    values = 'auth:\n  existingSecret: ""\ntls:\n  existingSecret: ""\n'
    template = (
        "apiVersion: v1\nkind: Secret\nmetadata: {name: db-tls}\ndata:\n"
        '  tls.key: {{ genPrivateKey "rsa" | b64enc }}\n'
    )
    tree = chart(tmp_path / "tree", {"tls-secret.yaml": template}, values=values)
    key = ObjectKey("", "Secret", "", "db-tls")
    first = [Manifest(key, {}, "charts/db/templates/tls-secret.yaml")]
    (found,) = nondeterminism.examine(context(tree), first, lambda ctx: None)  # type: ignore[arg-type, return-value]
    assert found.existing_secret == "tls.existingSecret"
    config = [Manifest(ObjectKey("", "ConfigMap", "", "x"), {}, first[0].origin)]
    (found,) = nondeterminism.examine(context(tree), config, lambda ctx: None)  # type: ignore[arg-type, return-value]
    assert found.existing_secret == ""  # no Secret: no Secret of one's own to offer


def test_a_time_function_stays_evidence_when_two_renders_agree(tmp_path: Path) -> None:
    template = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n"
        '    deployed-on: {{ now | date "2006-01-02" | quote }}\n'
    )
    tree = chart(tmp_path / "tree", {"configmap.yaml": template})
    body = {"metadata": {"name": "x", "annotations": {"deployed-on": "2026-12-02"}}}
    first = [
        Manifest(ObjectKey("", "ConfigMap", "", "x"), body, "charts/db/templates/configmap.yaml")
    ]
    (found,) = nondeterminism.examine(context(tree), first, same(first))
    assert found.compared
    assert found.varied == ()
    assert [(c.function, c.fields) for c in found.calls] == [("now", ("deployed-on",))]


def test_an_object_derived_from_another_template_is_kept_without_calls(tmp_path: Path) -> None:
    deployment = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  template:\n"
        "    metadata:\n      annotations:\n"
        '        checksum/secret: {{ include (print $.Template.BasePath "/secret.yaml") . '
        "| sha256sum }}\n"
    )
    tree = chart(tmp_path / "tree", {"secret.yaml": SECRET, "deployment.yaml": deployment})
    key = ObjectKey("apps", "Deployment", "", "x")
    path = ("spec", "template", "metadata", "annotations", "checksum/secret")

    def body(value: str) -> dict[str, Any]:
        return {"spec": {"template": {"metadata": {"annotations": {"checksum/secret": value}}}}}

    origin = "charts/db/templates/deployment.yaml"
    first = [Manifest(key, body("a"), origin)]
    found = nondeterminism.examine(context(tree), first, same([Manifest(key, body("b"), origin)]))
    (derived,) = [f for f in found if f.template == origin]
    assert derived.calls == ()
    assert derived.varied == ((key, path),)


def test_oversized_templates_are_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = chart(tmp_path / "tree", {"secret.yaml": SECRET})
    monkeypatch.setattr(nondeterminism, "MAX_FILE_BYTES", 16)
    assert nondeterminism.examine(context(tree), [], unused) == ()


def test_no_templates_no_work(tmp_path: Path) -> None:
    tree = chart(tmp_path / "tree", {})
    assert not (tree / "charts/db/templates").exists()
    assert nondeterminism.examine(context(tree), [], unused) == ()


@needs_helm
def test_a_pulled_chart_names_its_templates_chart_relative(tmp_path: Path) -> None:
    tree = chart(tmp_path / "tree", {"secret.yaml": SECRET}) / "charts/db"
    ctx = dataclasses.replace(
        context(tree),
        source=AppSource(repo_url="https://charts.example.com", chart="db"),
        path=".",
        display="db",
        origins=False,  # as sources/render.py renders a chart from a Helm repository
    )
    first = helm.Helm().render(ctx)
    assert [m.origin for m in first] == [None]
    (found,) = nondeterminism.examine(ctx, first, helm.Helm().render)
    assert (found.template, found.chart) == ("templates/secret.yaml", "db")
    assert found.calls[0].file == "templates/secret.yaml"
    assert found.varied == ((SECRET_KEY, ("data", "password")),)
