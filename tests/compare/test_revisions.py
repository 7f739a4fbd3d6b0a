"""compare/revisions.py: what a change does to an app's objects, from two real commits of a git
repository rendered as Argo CD renders a directory source: objects added, removed and changed,
field edits with merge-keyed lists by key, no edit for what Argo CD's normalization makes equal
(a rewritten file, a quantity spelled anew, stringData for data, its own tracking metadata), and
Secret values masked as everywhere else."""

from __future__ import annotations

import base64
import subprocess
import textwrap
from pathlib import Path

import pytest

from kubectl_gitdrift import application, model
from kubectl_gitdrift.compare import revisions
from kubectl_gitdrift.errors import SourceError
from kubectl_gitdrift.model import Op, PreviewAction
from kubectl_gitdrift.sources import render

_GIT = ("git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false")

APP = application.parse_application(
    {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "shop", "namespace": "argocd"},
        "spec": {
            "project": "default",
            "source": {"repoURL": "https://example.com/shop.git", "path": "app"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": "shop"},
        },
    }
)

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: registry.example.com/web:1.0
        env:
        - {name: MODE, value: fast}
        - {name: LEVEL, value: info}
        ports:
        - {containerPort: 8080, name: http}
        resources:
          limits: {cpu: 1000m, memory: 1Gi}
      - name: proxy
        image: registry.example.com/proxy:2.1
"""


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run([*_GIT, "-C", str(repo), *args], check=True, capture_output=True)
    return done.stdout.decode().strip()


def _commit(repo: Path, files: dict[str, str]) -> str:
    """A commit whose app/ folder holds exactly `files`."""
    app = repo / "app"
    for old in app.glob("*") if app.is_dir() else ():
        old.unlink()
    app.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (app / name).write_text(textwrap.dedent(text))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "change")
    return _git(repo, "rev-parse", "HEAD")


def _renders(
    tmp_path: Path, base: dict[str, str], head: dict[str, str]
) -> tuple[list[model.Manifest], list[model.Manifest]]:
    """Both commits of a real repository, rendered as Argo CD renders the app's directory."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    shas = _commit(repo, base), _commit(repo, head)
    out = []
    for i, sha in enumerate(shas):
        work = tmp_path / f"work{i}"
        work.mkdir()
        out.append(list(render.render(APP, repo, revision=sha, workdir=work).manifests))
    return out[0], out[1]


def _edits(change: model.ObjectChange) -> list[tuple[str, str, object, object]]:
    return [(e.op.value, model.display_path(e.path), e.base, e.head) for e in change.edits]


def test_objects_added_removed_and_changed_by_key_with_field_edits(tmp_path: Path) -> None:
    head_deployment = (
        DEPLOYMENT.replace("replicas: 2", "replicas: 3")
        .replace("web:1.0", "web:1.1")
        .replace("value: info", "value: debug")
        .replace(
            "        - {containerPort: 8080, name: http}\n",
            "        - {containerPort: 9090, name: http}\n",
        )
    )
    base, head = _renders(
        tmp_path,
        {"web.yaml": DEPLOYMENT, "legacy.yaml": _configmap("legacy", "a: '1'")},
        {"web.yaml": head_deployment, "flags.yaml": _configmap("flags", "beta: 'on'")},
    )
    found = revisions.edits(base, head)
    assert [(c.key.short(), c.action, c.origin) for c in found] == [
        ("configmap/flags", PreviewAction.ADDED, "app/flags.yaml"),
        ("configmap/legacy", PreviewAction.REMOVED, "app/legacy.yaml"),
        ("deployment.apps/web", PreviewAction.CHANGED, "app/web.yaml"),
    ]
    added, removed, changed = found
    assert added.edits == removed.edits == ()
    app = "spec.template.spec.containers[name=app]"
    http = {"containerPort": 8080, "name": "http"}
    assert _edits(changed) == [
        ("change", "spec.replicas", 2, 3),
        ("change", f"{app}.env[name=LEVEL].value", "info", "debug"),
        ("change", f"{app}.image", "registry.example.com/web:1.0", "registry.example.com/web:1.1"),
        ("remove", f"{app}.ports[containerPort=8080]", http, None),
        ("add", f"{app}.ports[containerPort=9090]", None, {**http, "containerPort": 9090}),
    ]
    assert all(not e.secret for e in changed.edits)


def test_a_rewritten_file_that_argo_cd_applies_the_same_is_no_edit(tmp_path: Path) -> None:
    """Key order, flow or block style, quoting, comments, `1000m` for `1` CPU, `2.0` replicas,
    an empty annotations map, status, a tracking-id Argo CD overwrites anyway, and defaults the
    API server fills in spelled out (a tagged image's pull policy, a port's protocol)."""
    rewritten = """\
    # the same Deployment, written by someone else
    kind: Deployment
    apiVersion: "apps/v1"
    metadata:
      namespace: shop
      name: web
      annotations:
        argocd.argoproj.io/tracking-id: "copied:apps/Deployment:shop/web"
      labels:
        app: "web"
    spec:
      selector: {matchLabels: {app: web}}
      replicas: 2.0
      template:
        metadata: {labels: {app: web}, annotations: {}}
        spec:
          containers:
            - image: "registry.example.com/web:1.0"
              name: app
              imagePullPolicy: IfNotPresent
              resources: {limits: {memory: 1024Mi, cpu: "1"}}
              ports: [{name: http, containerPort: 8080, protocol: TCP}]
              env: [{value: fast, name: MODE}, {name: LEVEL, value: info}]
            - {name: proxy, image: "registry.example.com/proxy:2.1"}
    status: {replicas: 2}
    """
    base, head = _renders(tmp_path, {"web.yaml": DEPLOYMENT}, {"web.yaml": rewritten})
    assert base[0].body != head[0].body  # not the same data: equal once normalized
    assert revisions.edits(base, head) == []


def test_a_dropped_field_the_server_defaults_differently_is_an_edit(tmp_path: Path) -> None:
    no_replicas = DEPLOYMENT.replace("  replicas: 2\n", "")
    always = no_replicas.replace(
        "        image: registry.example.com/web:1.0\n",
        "        image: registry.example.com/web:1.0\n        imagePullPolicy: Always\n",
    )
    base, head = _renders(tmp_path, {"web.yaml": DEPLOYMENT}, {"web.yaml": always})
    (changed,) = revisions.edits(base, head)
    assert _edits(changed) == [  # git's values, not the defaulted ones (replicas 1, IfNotPresent)
        ("remove", "spec.replicas", 2, None),
        ("add", "spec.template.spec.containers[name=app].imagePullPolicy", None, "Always"),
    ]


def test_lists_with_merge_keys_compare_by_key_and_order_counts(tmp_path: Path) -> None:
    swapped = DEPLOYMENT.replace(
        "        - {name: MODE, value: fast}\n        - {name: LEVEL, value: info}\n",
        "        - {name: LEVEL, value: info}\n        - {name: MODE, value: fast}\n",
    )
    base, head = _renders(tmp_path, {"web.yaml": DEPLOYMENT}, {"web.yaml": swapped})
    (changed,) = revisions.edits(base, head)
    # every item equal: one edit of the whole list, as `kubectl apply` re-orders it to git's
    ((op, path, before, after),) = _edits(changed)
    assert (op, path) == ("change", "spec.template.spec.containers[name=app].env")
    assert [e["name"] for e in before] == ["MODE", "LEVEL"]  # type: ignore[attr-defined]
    assert [e["name"] for e in after] == ["LEVEL", "MODE"]  # type: ignore[attr-defined]


def test_a_custom_resource_s_lists_compare_whole(tmp_path: Path) -> None:
    route = """\
    apiVersion: gateway.networking.k8s.io/v1
    kind: HTTPRoute
    metadata: {name: web, namespace: shop}
    spec:
      hostnames: [a.example.com, b.example.com]
    """
    base, head = _renders(
        tmp_path, {"route.yaml": route}, {"route.yaml": route.replace("b.example", "c.example")}
    )
    (changed,) = revisions.edits(base, head)
    assert _edits(changed) == [
        (
            "change",
            "spec.hostnames",
            ["a.example.com", "b.example.com"],
            ["a.example.com", "c.example.com"],
        )
    ]


SECRET = """\
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: shop}
type: Opaque
stringData:
  password: base-password-7f3a1c
  user: app
"""


def test_secret_values_are_masked_and_a_changed_value_shows_as_changed(tmp_path: Path) -> None:
    encoded = base64.b64encode(b"head-password-9e2b40").decode()
    head_secret = f"""\
    apiVersion: v1
    kind: Secret
    metadata: {{name: db, namespace: shop}}
    type: Opaque
    data:
      password: {encoded}
      user: {base64.b64encode(b"app").decode()}
      token: {base64.b64encode(b"new-token-55d1aa").decode()}
    """
    base, head = _renders(tmp_path, {"db.yaml": SECRET}, {"db.yaml": head_secret})
    (changed,) = revisions.edits(base, head)
    assert changed.key == model.ObjectKey("", "Secret", "shop", "db")
    # user: stringData `app` and data `YXBw` are the same value: no edit
    assert _edits(changed) == [
        ("change", "data.password", "++++++++++++", "++++++++"),
        ("add", "data.token", None, "++++++++"),
    ]
    assert all(e.secret for e in changed.edits)
    text = repr(changed)
    for secret in ("base-password-7f3a1c", "head-password-9e2b40", "new-token-55d1aa"):
        assert secret not in text
        assert base64.b64encode(secret.encode()).decode() not in text


def test_swapping_the_revisions_swaps_added_and_removed(tmp_path: Path) -> None:
    head_deployment = DEPLOYMENT.replace(
        "      - name: proxy\n        image: registry.example.com/proxy:2.1\n", ""
    )
    base, head = _renders(
        tmp_path,
        {"web.yaml": DEPLOYMENT, "legacy.yaml": _configmap("legacy", "a: '1'")},
        {"web.yaml": head_deployment},
    )
    forward = revisions.edits(base, head)
    backward = revisions.edits(head, base)
    assert [c.action for c in forward] == [PreviewAction.REMOVED, PreviewAction.CHANGED]
    assert [c.action for c in backward] == [PreviewAction.ADDED, PreviewAction.CHANGED]
    ((op, path, before, after),) = [(e.op, e.path, e.base, e.head) for e in forward[1].edits]
    ((back_op, back_path, back_before, back_after),) = [
        (e.op, e.path, e.base, e.head) for e in backward[1].edits
    ]
    assert (op, back_op) == (Op.REMOVE, Op.ADD)
    assert path == back_path
    assert (before, after) == (back_after, back_before)
    assert revisions.edits(head, head) == []


def test_tracking_metadata_follows_the_tracking_method(tmp_path: Path) -> None:
    """Argo CD writes the instance label only under label tracking: there, git's value of it is
    no edit; under annotation tracking it is git's own label and a change of it is one."""
    labelled = DEPLOYMENT.replace(
        "  labels: {app: web}\n", "  labels: {app: web, app.kubernetes.io/instance: old}\n", 1
    )
    relabelled = labelled.replace("instance: old", "instance: new")
    base, head = _renders(tmp_path, {"web.yaml": labelled}, {"web.yaml": relabelled})
    label = model.Settings(tracking_method=model.TrackingMethod.LABEL)
    assert revisions.edits(base, head, settings=label) == []
    (changed,) = revisions.edits(base, head)
    assert _edits(changed) == [
        ("change", 'metadata.labels["app.kubernetes.io/instance"]', "old", "new")
    ]


def test_objects_named_only_by_generate_name_pair_in_order(tmp_path: Path) -> None:
    job = """\
    apiVersion: batch/v1
    kind: Job
    metadata: {{generateName: migrate-, namespace: shop}}
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{{name: m, image: "migrate:{tag}"}}]
    """
    job = textwrap.dedent(job)
    two = job.format(tag="1") + "---\n" + job.format(tag="2")
    base, head = _renders(
        tmp_path, {"jobs.yaml": two}, {"jobs.yaml": two.replace("migrate:1", "migrate:5")}
    )
    (changed,) = revisions.edits(base, head)  # the first with the first, not the last with all
    assert changed.key.name == ""
    assert _edits(changed) == [
        ("change", "spec.template.spec.containers[name=m].image", "migrate:1", "migrate:5")
    ]


def test_a_document_that_is_not_an_object_names_its_file() -> None:
    key = model.ObjectKey("", "ConfigMap", "shop", "x")
    bad = model.Manifest(key, ["not", "a", "mapping"], "app/x.yaml")  # type: ignore[arg-type]
    with pytest.raises(SourceError) as raised:
        revisions.edits([], [bad])
    assert str(raised.value).startswith("app/x.yaml: configmap/x is not an object")
    assert "\n" not in str(raised.value)


def _configmap(name: str, data: str) -> str:
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: shop}}\n"
        f"data: {{{data}}}\n"
    )
