"""Discovery as kubectl does it, against the loopback API server serving a real v1.36 server's
discovery: aggregated (`/version`, `/api`, `/apis`: three requests cold), kept in kubectl's
disk cache (none warm), and the per-group fallback for a server without aggregated discovery,
each giving the same report."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift import model
from kubectl_gitdrift.errors import ExitCode
from kubectl_gitdrift.live import discovery
from kubectl_gitdrift.run import gather
from tests.conftest import FAST_RETRIES, TESTDATA, Result, Runner
from tests.support.apiserver import (
    KubeAPIServer,
    ServerFactory,
    kube_apiserver,  # noqa: F401 - the fixture
    live_args,
)
from tests.support.apiserver.discovery import ResourceType

pytestmark = [pytest.mark.cluster]

INCIDENT = TESTDATA / "incident"
RECORDED = TESTDATA / "apiserver" / "v1.36" / "discovery"
COLD = ["/version", "/api", "/apis"]


@pytest.fixture
def run_cli(run_cli: Runner) -> Runner:
    return run_cli.tuned(**FAST_RETRIES)


@pytest.fixture
def repo(build_repo) -> Path:  # type: ignore[no-untyped-def]
    return Path(build_repo(INCIDENT / "repo-src"))


@pytest.fixture
def incident(kube_apiserver: ServerFactory) -> KubeAPIServer:  # noqa: F811
    return kube_apiserver(list(yaml.safe_load((INCIDENT / "snapshot.yaml").read_text())["items"]))


def args(server: KubeAPIServer, repo: Path, *extra: str) -> list[str]:
    return live_args("guestbook", server, repo, *extra)


def discovery_paths(server: KubeAPIServer) -> list[str]:
    return sorted(p.rstrip("/") for p in server.discovery_requests())


def cache_of(server: KubeAPIServer, cache_dir: Path) -> Path:
    return cache_dir / "discovery" / f"127.0.0.1_{server.port}"


def run_twice(
    server: KubeAPIServer, run_cli: Callable[..., Result], argv: list[str]
) -> tuple[list[str], list[str], str, str]:
    """Discovery paths and JSON report of a cold run, then of a warm one."""
    server.clear_requests()
    cold = run_cli(argv)
    assert cold.exit_code == ExitCode.DRIFT, cold.stderr
    cold_paths = discovery_paths(server)
    server.clear_requests()
    warm = run_cli(argv)
    assert warm.exit_code == ExitCode.DRIFT, warm.stderr
    return cold_paths, discovery_paths(server), cold.stdout, warm.stdout


# ---------------------------------------------------------------------------- request counts


def test_three_discovery_requests_cold_none_warm(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    cache_dir = tmp_path / "kube-cache"
    argv = args(incident, repo, "-o", "json", "--cache-dir", str(cache_dir))
    cold, warm, cold_report, warm_report = run_twice(incident, run_cli, argv)
    assert cold == sorted(COLD)
    assert warm == []
    assert warm_report == cold_report
    assert {r.verb for r in incident.requests} <= {"list", "create"}  # LISTs and reviews
    # kubectl's own layout, where kubectl looks: servergroups.json, one file per group-version
    where = cache_of(incident, cache_dir)
    groups = json.loads((where / "servergroups.json").read_text())
    assert groups["kind"] == "APIGroupList"
    assert groups["groups"][0]["name"] == ""
    recorded = json.loads((RECORDED / "apis.json").read_text())["groups"]
    assert groups["groups"][1:] == recorded  # as the server's plain APIGroupList has them
    assert (where / "v1" / "serverresources.json").is_file()
    apps = json.loads((where / "apps" / "v1" / "serverresources.json").read_text())
    assert apps["kind"] == "APIResourceList"
    assert {"deployments", "deployments/scale", "deployments/status"} <= {
        r["name"] for r in apps["resources"]
    }
    assert (where / "gitdrift_version.json").is_file()
    assert not [p for p in where.rglob("*") if ".json." in p.name]  # no temporary file left


def test_the_default_cache_is_kubectls(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result]
) -> None:
    """Without --cache-dir: $KUBECACHEDIR (tests/conftest.py points it at a fresh
    directory), else ~/.kube/cache, as kubectl."""
    cold, warm, _, _ = run_twice(incident, run_cli, args(incident, repo, "-o", "json"))
    assert (cold, warm) == (sorted(COLD), [])
    where = cache_of(incident, Path(os.environ["KUBECACHEDIR"]))
    assert (where / "servergroups.json").is_file()


def test_the_same_report_without_aggregated_discovery(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    """A server that answers `/api` and `/apis` plainly: every group-version asked, the same
    report, and then a warm cache as well."""
    aggregated = run_cli(args(incident, repo, "-o", "json", "--cache-dir", str(tmp_path / "a")))
    text = run_cli(args(incident, repo, "--cache-dir", str(tmp_path / "a")))
    incident.aggregated_discovery = False
    argv = args(incident, repo, "-o", "json", "--cache-dir", str(tmp_path / "b"))
    cold, warm, cold_report, warm_report = run_twice(incident, run_cli, argv)
    group_versions = json.loads((RECORDED / "apis.json").read_text())["groups"]
    expected = [
        "/api/v1",
        *(f"/apis/{v['groupVersion']}" for g in group_versions for v in g["versions"]),
    ]
    assert cold == sorted({*COLD, *expected})
    assert len(cold) == 3 + 1 + 22
    assert warm == []
    assert cold_report == warm_report == aggregated.stdout
    assert run_cli(args(incident, repo, "--cache-dir", str(tmp_path / "b"))).stdout == text.stdout


def test_kubectls_cache_is_used_and_the_version_asked(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    """A cache kubectl wrote has no gitdrift_version.json: only `/version` is asked."""
    cache_dir = tmp_path / "kube-cache"
    argv = args(incident, repo, "-o", "json", "--cache-dir", str(cache_dir))
    first = run_cli(argv)
    (cache_of(incident, cache_dir) / "gitdrift_version.json").unlink()
    incident.clear_requests()
    again = run_cli(argv)
    assert discovery_paths(incident) == ["/version"]
    assert again.stdout == first.stdout
    incident.clear_requests()
    assert run_cli(argv).stdout == first.stdout
    assert discovery_paths(incident) == []  # the version is kept from then on


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")
def test_kubectl_and_gitdrift_warm_each_other(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    """The real kubectl reads the cache gitdrift wrote (its warm run: `/version` alone), and
    gitdrift the one kubectl wrote."""

    def kubectl(cache_dir: Path) -> None:
        result = subprocess.run(
            ["kubectl", "--kubeconfig", str(incident.kubeconfig_path), "--cache-dir",
             str(cache_dir), "get", "configmaps,deployments", "-A", "-o", "name"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr

    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    run_cli(args(incident, repo, "--cache-dir", str(ours)))
    incident.clear_requests()
    kubectl(ours)
    assert discovery_paths(incident) == ["/version"]
    kubectl(theirs)
    incident.clear_requests()
    run_cli(args(incident, repo, "--cache-dir", str(theirs)))
    assert discovery_paths(incident) == ["/version"]  # kubectl keeps no version


# ---------------------------------------------------------------------------- freshness


@pytest.mark.parametrize(
    ("damage", "name"),
    [
        ("corrupt", "servergroups.json"),
        ("corrupt", "apps/v1/serverresources.json"),
        ("truncated", "v1/serverresources.json"),
        ("not-a-list", "servergroups.json"),
        ("missing", "argoproj.io/v1alpha1/serverresources.json"),
        ("expired", "v1/serverresources.json"),
        ("directory", "servergroups.json"),
    ],
)
def test_a_damaged_or_expired_cache_is_discovered_again(
    incident: KubeAPIServer,
    repo: Path,
    run_cli: Callable[..., Result],
    tmp_path: Path,
    damage: str,
    name: str,
) -> None:
    cache_dir = tmp_path / "kube-cache"
    argv = args(incident, repo, "-o", "json", "--cache-dir", str(cache_dir))
    first = run_cli(argv)
    path = cache_of(incident, cache_dir) / name
    if damage == "corrupt":
        path.write_bytes(b"\x00{not json")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    elif damage == "not-a-list":
        path.write_text('{"kind": "APIGroupList", "groups": {}}')
    elif damage == "missing":
        path.unlink()
    elif damage == "expired":
        old = time.time() - discovery.CACHE_TTL - 60
        os.utime(path, (old, old))
    else:
        path.unlink()
        path.mkdir()
    incident.clear_requests()
    again = run_cli(argv)
    assert again.exit_code == ExitCode.DRIFT, again.stderr
    assert again.stderr == first.stderr
    assert again.stdout == first.stdout
    assert discovery_paths(incident) == sorted(COLD)  # as a cold run
    if damage == "directory":
        return  # cannot be rewritten: no error either
    incident.clear_requests()
    assert run_cli(argv).stdout == first.stdout
    assert discovery_paths(incident) == []  # written again


def test_a_cache_that_cannot_be_written_is_no_error(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    argv = args(incident, repo, "-o", "json", "--cache-dir", str(blocker))
    cold, warm, cold_report, warm_report = run_twice(incident, run_cli, argv)
    assert cold == warm == sorted(COLD)
    assert cold_report == warm_report


def test_a_kind_the_cache_lacks_is_asked_again(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    """A CRD installed after the cache was written: discovered again (as kubectl asks again
    when its cache has no match), listed, not counted as not served."""
    cache_dir = tmp_path / "kube-cache"
    run_cli(args(incident, repo, "--cache-dir", str(cache_dir)))
    incident.discovery.add(
        ResourceType("example.org", "v1", "gadgets", "gadget", "Gadget", True, custom=True)
    )
    clone = tmp_path / "clone"
    shutil.copytree(repo, clone)
    overlay = clone / "overlays/prod/guestbook"
    (overlay / "gadget.yaml").write_text(
        "apiVersion: example.org/v1\nkind: Gadget\nmetadata:\n  name: g1\nspec:\n  size: 3\n"
    )
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    kustomization["resources"] = [*kustomization.get("resources", []), "gadget.yaml"]
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    incident.clear_requests()
    argv = args(incident, clone, "-o", "json", "--local", "--cache-dir", str(cache_dir))
    result = run_cli(argv)
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    assert discovery_paths(incident) == sorted(COLD)
    report = json.loads(result.stdout)
    assert not any("not served" in n for n in report["applications"][0]["notes"])
    assert incident.requests_for(verb="list", resource="gadgets")
    incident.clear_requests()
    assert run_cli(argv).stdout == result.stdout
    assert discovery_paths(incident) == []  # the cache was rewritten with it


def test_a_kind_the_server_dropped_since_is_said_as_a_cold_run_says_it(
    kube_apiserver: ServerFactory,  # noqa: F811
    repo: Path,
    run_cli: Callable[..., Result],
    tmp_path: Path,
) -> None:
    """The cache has a kind (its CRD since removed): the LIST's 404 makes the run discover
    again, and the report is the cold run's, not serving it."""
    objects = list(yaml.safe_load((INCIDENT / "snapshot.yaml").read_text())["items"])
    before, after = kube_apiserver(objects), kube_apiserver(objects)
    before.discovery.add(
        ResourceType("example.org", "v1", "gadgets", "gadget", "Gadget", True, custom=True)
    )
    clone = tmp_path / "clone"
    shutil.copytree(repo, clone)
    overlay = clone / "overlays/prod/guestbook"
    (overlay / "gadget.yaml").write_text(
        "apiVersion: example.org/v1\nkind: Gadget\nmetadata:\n  name: g1\nspec:\n  size: 3\n"
    )
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    kustomization["resources"] = [*kustomization.get("resources", []), "gadget.yaml"]
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    warm, cold = tmp_path / "warm", tmp_path / "cold"
    run_cli(args(before, clone, "--local", "--cache-dir", str(warm)))
    shutil.copytree(cache_of(before, warm), cache_of(after, warm))
    expected = run_cli(args(after, clone, "-o", "json", "--local", "--cache-dir", str(cold)))
    report = json.loads(expected.stdout)
    assert any("Gadget.example.org is not served" in n for n in report["applications"][0]["notes"])
    after.clear_requests()
    result = run_cli(args(after, clone, "-o", "json", "--local", "--cache-dir", str(warm)))
    assert after.requests_for(verb="list", resource="gadgets")  # the cache said it was served
    assert discovery_paths(after) == sorted(COLD)
    assert (result.exit_code, result.stdout, result.stderr) == (
        expected.exit_code,
        expected.stdout,
        expected.stderr,
    )


def test_warm_and_unreachable_is_a_cluster_error(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result], tmp_path: Path
) -> None:
    """With the cache fresh the first request is a LIST: a server that answers none is
    unreachable, as when connecting."""
    cache_dir = tmp_path / "kube-cache"
    run_cli(args(incident, repo, "--cache-dir", str(cache_dir)))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    shutil.copytree(cache_of(incident, cache_dir), cache_dir / "discovery" / f"127.0.0.1_{port}")
    config = yaml.safe_load(incident.kubeconfig_path.read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    argv = args(incident, repo, "--cache-dir", str(cache_dir))
    argv[argv.index("--kubeconfig") + 1] = str(kubeconfig)
    result = run_cli(argv)
    assert result.exit_code == ExitCode.CLUSTER_ERROR
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"error: cannot reach https://127.0.0.1:{port}"), first


# ---------------------------------------------------------------------------- the documents


def test_aggregated_documents_give_what_the_per_group_documents_give() -> None:
    """The recorded aggregated discovery read as client-go reads it equals the recorded
    APIResourceLists, kind for kind."""
    served = discovery.Served([], {})
    for name in ("aggregated-api.json", "aggregated-apis.json"):
        discovery._split_aggregated(json.loads((RECORDED / name).read_text()), served)
    assert len(served.group_versions()) == 1 + 22
    plain: list[discovery.Kind] = []
    for gv in served.group_versions():
        name = "api_v1" if gv == "v1" else "apis_" + gv.replace(".", "_").replace("/", "_")
        doc = json.loads((RECORDED / f"{name}.json").read_text())
        plain.extend(discovery.Served([{"versions": [{"groupVersion": gv}]}], {gv: doc}).kinds())
        listed = {r["name"] for r in served.resources[gv]["resources"]}
        assert listed == {r["name"] for r in doc["resources"]}, gv  # subresources too
    assert sorted(served.kinds()) == sorted(plain)


def test_stale_group_versions_are_left_out_and_remembered() -> None:
    doc: dict[str, Any] = json.loads((RECORDED / "aggregated-apis.json").read_text())
    autoscaling = next(i for i in doc["items"] if i["metadata"]["name"] == "autoscaling")
    autoscaling["versions"][0]["freshness"] = "Stale"  # v2
    served = discovery.Served([], {})
    discovery._split_aggregated(doc, served)
    assert served.stale == {"autoscaling/v2"}
    group = next(g for g in served.groups if g["name"] == "autoscaling")
    assert group["versions"] == [{"groupVersion": "autoscaling/v1", "version": "v1"}]
    assert group["preferredVersion"] == {"groupVersion": "autoscaling/v1", "version": "v1"}
    found = discovery.Discovery(served.kinds(), stale=served.stale)
    hpa = found.find("autoscaling", "HorizontalPodAutoscaler", "v2")
    assert hpa is not None
    assert hpa.version == "v1"
    assert found.stale_in("autoscaling") == ["autoscaling/v2"]


def test_a_kind_of_a_stale_group_is_unknown_not_missing() -> None:
    found = discovery.Discovery([], stale={"metrics.k8s.io/v1beta1"})
    unreadable: list[tuple[model.ObjectKey, str]] = []
    wants = [("metrics.k8s.io", "v1beta1", "PodMetrics", "web"), ("", "v1", "Widget", "web")]
    assert gather._known(wants, found, unreadable) == [("", "v1", "Widget", "web")]
    ((key, why),) = unreadable
    assert key == model.ObjectKey("metrics.k8s.io", "PodMetrics", "web", "")
    assert "metrics.k8s.io/v1beta1" in why
    assert "stale" in why


@pytest.mark.parametrize(
    ("content_type", "aggregated"),
    [
        ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", True),
        ("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", True),
        ("application/json; as=APIGroupDiscoveryList;v=v2;g=apidiscovery.k8s.io", True),
        (
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;charset=utf-8",
            True,
        ),
        ("application/json", False),
        ("application/json; charset=UTF-8", False),
        ("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList", False),
        ("text/plain", False),
        ("", False),
    ],
)
def test_aggregated_content_types(content_type: str, aggregated: bool) -> None:
    assert discovery._is_aggregated(content_type) is aggregated


def test_the_accept_header_is_kubectls(
    incident: KubeAPIServer, repo: Path, run_cli: Callable[..., Result]
) -> None:
    run_cli(args(incident, repo))
    accepts = {r.accept for r in incident.requests if r.path in ("/api", "/apis")}
    kubectl = (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
        "application/json"
    )
    assert accepts == {kubectl}


@pytest.mark.parametrize(
    ("server", "directory"),
    [
        ("https://127.0.0.1:6443", "127.0.0.1_6443"),
        ("https://api.prod.example.com", "api.prod.example.com"),
        ("http://10.0.0.1:8080", "10.0.0.1_8080"),
        (
            "https://rancher.example.com/k8s/clusters/c-m-x1",
            "rancher.example.com/k8s/clusters/c_m_x1",
        ),
        ("https://[::1]:6443", "___1__6443"),
    ],
)
def test_the_cache_directory_is_named_as_kubectl_names_it(server: str, directory: str) -> None:
    cache = discovery.DiskCache.of("/c", server)
    assert cache.directory == Path("/c/discovery") / directory


def test_discovery_reads_nothing_from_a_fresh_cache(tmp_path: Path) -> None:
    """No request at all: the transport is never asked."""
    cache = discovery.DiskCache(tmp_path)
    served = discovery.Served([], {})
    discovery._split_aggregated(json.loads((RECORDED / "aggregated-api.json").read_text()), served)
    cache.write(served, {"gitVersion": "v1.36.2"})

    class NoLink:
        def __init__(self) -> None:
            self.version: dict[str, Any] = {}

        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"asked the server: {name}")

    version, found = asyncio.run(discovery.discover(NoLink(), cache))  # type: ignore[arg-type]
    assert version == {"gitVersion": "v1.36.2"}
    assert found.cached
    assert found.find("", "ConfigMap") is not None
