"""No Secret value ever leaves gitdrift (DESIGN.md §6): not in any output format, not on stderr,
not in a patch, not in an exported snapshot; not in clear, base64, base64 of base64, URL-safe
base64, hex or as an unkeyed SHA-256.

The scenario holds a distinct marker in every place a Secret value can sit: git's `stringData`
and `data`, the live `data` (changed by hand, plus a key only the cluster has), and the
last-applied-configuration annotation that a `stringData` apply leaves in plain text
(reference/apiserver/incident-06). A ConfigMap refers to the Secret by name, and an ignore rule
hides one Secret key (so --show-suppressed has a Secret change to show).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubectl_gitdrift.errors import ExitCode
from tests.cli.test_bad_input import make_repo
from tests.conftest import Result, Runner, without_run_context
from tests.support.apiserver import (
    ServerFactory,
    controller_rbac,
    kube_apiserver,  # noqa: F401 - the fixture
)

Obj = dict[str, Any]
MARKERS = {
    "git stringData": "gdm-git-stringdata-3f9a1c77e2",
    "git data": "gdm-git-data-b81d0e5a94",
    "git unchanged": "gdm-same-both-sides-5c02d9",
    "live data": "gdm-live-data-6e2b9f13ad",
    "live only": "gdm-live-only-key-0d7c4e",
    "live ignored": "gdm-live-ignored-9a3f61",
    "last-applied stringData": "gdm-applied-stringdata-71c5b0",
    "last-applied data": "gdm-applied-data-e4a82d",
}
SYNC = "2026-11-30T04:00:00Z"
EDIT = "2026-11-30T04:30:00Z"


def b64(text: str | bytes) -> str:
    raw = text.encode() if isinstance(text, str) else text
    return base64.b64encode(raw).decode()


def _cores(raw: bytes, encode: Callable[[bytes], bytes]) -> Iterator[bytes]:
    """What `encode` makes of `raw` wherever it sits in a longer value: one core per offset
    (the first and last 4 characters depend on the neighbours)."""
    for shift in range(3):
        encoded = encode(b"\0" * shift + raw)
        yield encoded[4 if shift else 0 : -4]


def encodings(marker: str) -> Iterator[tuple[str, bytes]]:
    """Every form in which `marker` could leak, at every base64 alignment."""
    raw = marker.encode()
    yield "plain", raw
    yield "hex", raw.hex().encode()
    yield "HEX", raw.hex().upper().encode()
    yield "sha256", hashlib.sha256(raw).hexdigest().encode()
    yield "json-escaped", json.dumps(marker)[1:-1].encode()
    for name, encode in (
        ("base64", base64.b64encode),
        ("urlsafe-base64", base64.urlsafe_b64encode),
    ):
        for core in _cores(raw, encode):
            yield name, core
            for twice in _cores(core, base64.b64encode):
                yield f"base64-of-{name}", twice
            for twice in _cores(core, base64.urlsafe_b64encode):
                yield f"urlsafe-base64-of-{name}", twice


NEEDLES = [(what, form, needle) for what, m in MARKERS.items() for form, needle in encodings(m)]


def assert_no_secret(data: str | bytes, where: str) -> None:
    blob = data.encode() if isinstance(data, str) else data
    if blob[:2] == b"\x1f\x8b":
        blob += gzip.decompress(blob)
    for what, form, needle in NEEDLES:
        assert needle not in blob, f"{what} leaked into {where} ({form})"


# --------------------------------------------------------------------------- the state

GIT_FILES = {
    "app/secret.yaml": f"""apiVersion: v1
kind: Secret
metadata:
  name: db
type: Opaque
stringData:
  password: {MARKERS["git stringData"]}
data:
  token: {b64(MARKERS["git data"])}
  user: {b64(MARKERS["git unchanged"])}
  ignored: {b64("git-side-of-an-ignored-key")}
""",
    "app/configmap.yaml": """apiVersion: v1
kind: ConfigMap
metadata:
  name: db-client
data:
  DB_SECRET_NAME: db
  DB_SECRET_KEY: password
""",
}


def _tracking(kind: str, name: str) -> str:
    return f"vault:/{kind}:pay/{name}"


def live_objects() -> list[Obj]:
    applied = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "annotations": {"argocd.argoproj.io/tracking-id": _tracking("Secret", "db")},
            "name": "db",
            "namespace": "pay",
        },
        "stringData": {"password": MARKERS["last-applied stringData"]},
        "data": {
            "token": b64(MARKERS["last-applied data"]),
            "user": b64(MARKERS["git unchanged"]),
        },
        "type": "Opaque",
    }
    fields_v1: Obj = {"f:data": {".": {}, "f:password": {}, "f:token": {}, "f:user": {}}}
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": "db",
            "namespace": "pay",
            "annotations": {
                "argocd.argoproj.io/tracking-id": _tracking("Secret", "db"),
                "kubectl.kubernetes.io/last-applied-configuration": json.dumps(
                    applied, separators=(",", ":")
                )
                + "\n",
            },
            "managedFields": [
                {
                    "manager": "argocd-controller",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": SYNC,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": fields_v1,
                },
                {
                    "manager": "kubectl-edit",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": EDIT,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {"f:token": {}, "f:extra": {}, "f:ignored": {}}},
                },
            ],
        },
        "data": {
            "password": b64(MARKERS["last-applied stringData"]),
            "token": b64(MARKERS["live data"]),
            "user": b64(MARKERS["git unchanged"]),
            "extra": b64(MARKERS["live only"]),
            "ignored": b64(MARKERS["live ignored"]),
        },
    }
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "db-client",
            "namespace": "pay",
            "annotations": {"argocd.argoproj.io/tracking-id": _tracking("ConfigMap", "db-client")},
        },
        "data": {"DB_SECRET_NAME": "db", "DB_SECRET_KEY": "token"},
    }
    app = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "vault", "namespace": "argocd"},
        "spec": {
            "project": "default",
            "source": {"repoURL": "https://example.com/pay/vault.git", "path": "app"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": "pay"},
            "syncPolicy": {"automated": {"prune": True, "selfHeal": False}},
            "ignoreDifferences": [
                {"kind": "Secret", "name": "db", "jsonPointers": ["/data/ignored"]}
            ],
        },
        "status": {
            "sync": {"status": "OutOfSync"},
            "history": [{"id": 1, "deployedAt": SYNC, "revision": "HEAD"}],
            "resources": [
                {"kind": "Secret", "name": "db", "namespace": "pay", "version": "v1"},
                {"kind": "ConfigMap", "name": "db-client", "namespace": "pay", "version": "v1"},
            ],
        },
    }
    argocd_cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", "namespace": "argocd"},
        "data": {
            "resource.customizations.ignoreDifferences.Secret": "jsonPointers:\n- /data/ignored\n"
        },
    }
    return [app, argocd_cm, secret, configmap]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    for rel, text in GIT_FILES.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    return make_repo(src, tmp_path / "repo")


@pytest.fixture
def offline_snapshot(tmp_path: Path) -> Path:
    path = tmp_path / "kubectl-get.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": live_objects()}))
    return path


FORMATS: list[list[str]] = [
    ["-o", "text"],
    ["-o", "diff"],
    ["-o", "json"],
    ["-o", "yaml"],
    ["-o", "markdown"],
    ["--show-suppressed"],
    ["--show-suppressed", "-o", "json"],
    ["--show-suppressed", "-o", "markdown"],
    ["--query", "@"],
    ["--query", "applications[].resources[].changes[]"],
    ["--progress", "-o", "json"],
]


def _run_every_format(
    run_cli: Callable[..., Result], base: list[str], tmp_path: Path, label: str
) -> list[Result]:
    results = []
    for extra in FORMATS:
        result = run_cli(["vault", *base, *extra, "--no-entry-points"])
        assert result.exit_code == ExitCode.DRIFT, f"{extra}: {result.stderr}"
        assert_no_secret(result.stdout, f"{label} stdout of {extra}")
        assert_no_secret(result.stderr, f"{label} stderr of {extra}")
        results.append(result)
    patch = tmp_path / f"{label}.patch"
    result = run_cli(["vault", *base, "--write-patch", str(patch), "--no-entry-points"])
    assert result.exit_code == ExitCode.DRIFT
    assert_no_secret(patch.read_bytes(), f"{label} --write-patch")
    assert_no_secret(result.stdout + result.stderr, f"{label} --write-patch output")
    for extra in (["-o", "text"], ["-o", "json"], ["-o", "markdown"], ["--query", "@"]):
        result = run_cli(["--all", *base, *extra, "--no-entry-points"])
        assert result.exit_code == ExitCode.DRIFT, result.stderr
        assert_no_secret(result.stdout + result.stderr, f"{label} --all {extra}")
    return results


def test_the_scenario_shows_that_secrets_changed(
    repo: Path, offline_snapshot: Path, run_cli: Callable[..., Result]
) -> None:
    """The check below is only meaningful if the Secret really drifts in every way."""
    args = ["vault", "--snapshot", str(offline_snapshot), "--repo-root", str(repo)]
    report = json.loads(run_cli([*args, "-o", "json", "--show-suppressed"]).stdout)
    (app,) = report["applications"]
    secret = next(r for r in app["resources"] if r["kind"] == "Secret")
    assert secret["status"] == "OutOfSync"
    changed = {c["path"]: c for c in secret["changes"]}
    assert {"data.password", "data.token"} <= set(changed)
    assert all(c["secret"] for c in secret["changes"])
    assert [s["path"] for s in secret["suppressed"]] == ["data.ignored"]
    assert secret["suppressed"][0]["secret"]
    for what, marker in MARKERS.items():  # the checker finds each marker where it is put in
        with pytest.raises(AssertionError, match=what):
            assert_no_secret(f"x{b64('c' + b64('ab' + marker))}x", "a self-test")
        with pytest.raises(AssertionError, match=what):
            assert_no_secret(base64.urlsafe_b64encode(b"?" + marker.encode()), "a self-test")
        with pytest.raises(AssertionError, match=what):
            assert_no_secret(marker.encode().hex(), "a self-test")
    with pytest.raises(AssertionError):
        assert_no_secret(offline_snapshot.read_bytes(), "the input")


def test_offline_outputs_never_show_a_secret_value(
    repo: Path, offline_snapshot: Path, run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    base = ["--snapshot", str(offline_snapshot), "--repo-root", str(repo)]
    _run_every_format(run_cli, base, tmp_path, "offline")


@pytest.mark.cluster
def test_live_outputs_and_the_export_never_hold_a_secret_value(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,
    run_cli: Runner,
    tmp_path: Path,
) -> None:
    run_cli = run_cli.tuned(backoff=0.01)
    server = kube_apiserver([*live_objects(), *controller_rbac()])  # Argo CD's RBAC, as real
    cluster = ["--kubeconfig", str(server.kubeconfig_path)]
    live = _run_every_format(run_cli, [*cluster, "--repo-root", str(repo)], tmp_path, "live")
    for name in ("export.yaml", "export.json", "export.yaml.gz", "export.json.gz"):
        path = tmp_path / name
        result = run_cli(["snapshot", "vault", "-o", str(path), *cluster, "--repo-root", str(repo)])
        assert result.exit_code == ExitCode.OK, result.stderr
        assert_no_secret(path.read_bytes(), f"snapshot {name}")
        assert_no_secret(result.stdout + result.stderr, f"snapshot {name} output")
    export = tmp_path / "export.yaml.gz"
    replay = _run_every_format(
        run_cli, ["--snapshot", str(export), "--repo-root", str(repo)], tmp_path, "replay"
    )
    json_live, json_replay = json.loads(live[2].stdout), json.loads(replay[2].stdout)
    assert (json_live.pop("mode"), json_replay.pop("mode")) == ("live", "offline")
    # fingerprints compare like the values they replace (can-i: by review live, RBAC offline)
    assert without_run_context(json_live) == without_run_context(json_replay)
