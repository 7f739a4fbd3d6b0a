"""The Helm chart (deploy/helm/kubectl-gitdrift): it renders with the real `helm template` in both
modes, every object validates against the Kubernetes schemas, its RBAC is read-only, and that
RBAC is enough: the CronJob's own command, run against the loopback API server as the chart's
service account, compares the incident without a single 403 or write."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from kubectl_gitdrift.sources import helm as source_helm
from tests.conftest import ROOT, TESTDATA
from tests.support.apiserver import (
    Identity,
    ServerFactory,
    kube_apiserver,  # noqa: F401 - the fixture
)

CHART = ROOT / "deploy" / "helm" / "kubectl-gitdrift"
NAMESPACE = "gitdrift"
K8S_VERSION = "1.32.0"  # a version kubernetes-validate bundles schemas for
CRD_KINDS = {"ServiceMonitor", "PrometheusRule"}  # prometheus-operator's: no bundled schema
Obj = dict[str, Any]


def template(*sets: str) -> list[Obj]:
    helm = source_helm.helm_binary()
    assert helm is not None, "no helm: run tools/install_helm.sh"
    args = [helm, "template", "gd", str(CHART), "-n", NAMESPACE]
    for item in sets:
        args += ["--set", item]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


MODES = {
    "cronjob": (),
    "cronjob-sharded-push": ("cronjob.shards=4", "cronjob.pushgateway.url=http://pg:9091"),
    "serve": ("mode=serve",),
    "serve-everything": (
        "mode=serve",
        "serve.serviceMonitor.enabled=true",
        "prometheusRule.enabled=true",
        "git.sshSecret=git-ssh",
        "git.credentialsSecret=git-https",
        'git.config=[url "git@github.com:"]',
        "argocd.allNamespaces=true",
        "rbac.readAll=false",
    ),
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_chart_renders_and_validates(mode: str) -> None:
    docs = template(*MODES[mode])
    kinds = sorted(d["kind"] for d in docs)
    assert {"ServiceAccount", "ClusterRole", "ClusterRoleBinding"} <= set(kinds)
    assert ("CronJob" in kinds) == mode.startswith("cronjob")
    assert ("Deployment" in kinds) == mode.startswith("serve")
    for doc in docs:
        if doc["kind"] in CRD_KINDS:
            continue
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)  # raises on any error
    for pod in _pod_specs(docs):
        container = pod["containers"][0]
        context = container["securityContext"]
        assert context["readOnlyRootFilesystem"] is True
        assert context["allowPrivilegeEscalation"] is False
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert container["resources"]["requests"]
        mounts = {m["mountPath"] for m in container["volumeMounts"]}
        assert {"/tmp", "/var/cache/gitdrift"} <= mounts  # all it writes, on a read-only root


def _pod_specs(docs: list[Obj]) -> list[Obj]:
    out = []
    for doc in docs:
        if doc["kind"] == "CronJob":
            out.append(doc["spec"]["jobTemplate"]["spec"]["template"]["spec"])
        elif doc["kind"] == "Deployment":
            out.append(doc["spec"]["template"]["spec"])
    return out


def test_sharded_cronjob_is_an_indexed_job() -> None:
    docs = template("cronjob.shards=4", "cronjob.pushgateway.url=http://pg:9091")
    (cron,) = [d for d in docs if d["kind"] == "CronJob"]
    job = cron["spec"]["jobTemplate"]["spec"]
    assert job["completionMode"] == "Indexed"
    assert job["completions"] == job["parallelism"] == 4
    args = job["template"]["spec"]["containers"][0]["args"]
    assert "--shard=$(JOB_COMPLETION_INDEX)/4" in args  # the kubelet expands it per pod
    assert "--pushgateway=http://pg:9091" in args
    assert "--output=openmetrics" in args


def test_serve_mode_is_scraped() -> None:
    docs = template("mode=serve", "serve.serviceMonitor.enabled=true")
    (service,) = [d for d in docs if d["kind"] == "Service"]
    assert service["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["kubectl-gitdrift", "serve"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    (monitor,) = [d for d in docs if d["kind"] == "ServiceMonitor"]
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"


def test_alert_names_the_field_and_the_manager() -> None:
    assert not [d for d in template() if d["kind"] == "PrometheusRule"]  # off by default
    (rule,) = [d for d in template("prometheusRule.enabled=true") if d["kind"] == "PrometheusRule"]
    alert = rule["spec"]["groups"][0]["rules"][0]
    assert alert["for"] == "30m"
    by = alert["expr"].split("by (", 1)[1].split(")", 1)[0]
    assert {"application", "path", "manager", "kind", "name"} <= {
        label.strip() for label in by.split(",")
    }
    assert "{{ $labels.manager }}" in alert["annotations"]["description"]


@pytest.mark.parametrize("read_all", [True, False])
def test_rbac_is_read_only(read_all: bool) -> None:
    docs = template(f"rbac.readAll={str(read_all).lower()}")
    (role,) = [d for d in docs if d["kind"] == "ClusterRole"]
    for rule in role["rules"]:
        if rule["resources"] == ["subjectaccessreviews"]:
            assert rule["verbs"] == ["create"]  # asks, changes nothing
            assert rule["apiGroups"] == ["authorization.k8s.io"]
        else:
            assert set(rule["verbs"]) <= {"get", "list", "watch"}, rule


# --------------------------------------------------------------------------- RBAC proven


@pytest.mark.cluster
def test_cronjob_command_runs_with_the_charts_rbac(
    kube_apiserver: ServerFactory,  # noqa: F811
    build_repo: Callable[[Path], Path],
    tmp_path: Path,
) -> None:
    docs = template()
    rbac = [d for d in docs if d["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding")]
    (account,) = [d for d in docs if d["kind"] == "ServiceAccount"]
    user = f"system:serviceaccount:{NAMESPACE}:{account['metadata']['name']}"
    identity = Identity(
        user=user,
        token="gitdrift-sa-token",
        groups=("system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}",
                "system:authenticated"),
        use_rbac=True,
        name="gitdrift-sa",
    )  # fmt: skip
    objects = yaml.safe_load((TESTDATA / "incident" / "snapshot.yaml").read_text())["items"]
    server = kube_apiserver([*objects, *rbac], identities=[identity])

    (cron,) = [d for d in docs if d["kind"] == "CronJob"]
    container = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    env["HOME"] = str(tmp_path / "home")
    env["KUBECTL_GITDRIFT_CACHE_DIR"] = str(tmp_path / "cache")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    # In the pod the service account's token is mounted; here the kubeconfig carries it.
    args = [
        *container["args"],
        "--kubeconfig", str(server.kubeconfig_path),
        "--repo-root", str(build_repo(TESTDATA / "incident" / "repo-src")),
    ]  # fmt: skip
    done = subprocess.run(
        [*container["command"], *args], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr  # drift found (1) is this job's normal result
    fields = [
        s.labels
        for f in text_string_to_metric_families(done.stdout)  # type: ignore[no-untyped-call]
        for s in f.samples
        if s.name == "gitdrift_drifted_field"
    ]
    assert [(f["kind"], f["path"], f["manager"]) for f in fields] == [
        ("Deployment", "spec.replicas", "kubectl")
    ]
    mine = [r for r in server.requests if r.user == user]
    assert mine  # it ran as the chart's service account
    assert [f"{r.verb} {r.resource}" for r in mine if r.status == 403] == []
    assert {r.verb for r in mine} <= {"get", "list", "create"}
    assert {r.resource for r in mine if r.verb == "create"} <= {"subjectaccessreviews"}
    assert "not checked" not in done.stderr


# --------------------------------------------------------------------------- the image


def test_image_matches_the_chart() -> None:
    """No container runtime runs here: check what the chart relies on in the Dockerfile."""
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    uid = values["podSecurityContext"]["runAsUser"]
    assert f"USER {uid}:{values['podSecurityContext']['runAsGroup']}" in dockerfile
    assert "KUBECTL_GITDRIFT_CACHE_DIR=/var/cache/gitdrift" in dockerfile
    assert 'ENTRYPOINT ["kubectl-gitdrift"]' in dockerfile
    for tool in ("git", "/usr/local/bin/kubectl", "/usr/local/bin/helm"):
        assert tool in dockerfile
    assert "--require-hashes" in dockerfile  # wheels only from dist.lock


def test_image_requirements_come_from_the_lock() -> None:
    lock = yaml.safe_load((ROOT / "dist.lock").read_text(encoding="utf-8"))  # JSON is YAML
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "lock_requirements.py"), "linux-amd64", "cp312"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    pinned = {line.split("==", 1)[0].lower().replace("_", "-") for line in lines}
    assert all(" --hash=sha256:" in line for line in lines)
    wanted = {
        r.split(">", 1)[0].split("=", 1)[0].lower().replace("_", "-") for r in lock["requires"]
    }
    assert wanted <= pinned, sorted(wanted - pinned)
    bad = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "lock_requirements.py"), "plan9-mips", "cp312"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert bad.returncode != 0
    assert "dist.lock has no set plan9-mips-cp312" in bad.stderr
