"""--all: every Application, one summary row each; full reports in JSON; apps of other
repositories skipped; live and offline agree."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift.errors import ExitCode
from tests.conftest import TESTDATA, Result, Runner, without_run_context
from tests.support.apiserver import (
    ServerFactory,
    controller_rbac,
    kube_apiserver,  # noqa: F401 - the fixture
)

INCIDENT = TESTDATA / "incident"
Obj = dict[str, Any]


def fleet() -> list[Obj]:
    """The incident, plus `guestbook-b` (same repo, same path, destination prod-b, in sync)
    and `other` (another repository)."""
    objects: list[Obj] = yaml.safe_load((INCIDENT / "snapshot.yaml").read_text())["items"]
    app = next(o for o in objects if o["kind"] == "Application")
    b = copy.deepcopy(app)
    b["metadata"]["name"] = "guestbook-b"
    b["metadata"].pop("uid", None)
    b["spec"]["destination"]["namespace"] = "prod-b"
    b["status"]["resources"] = []
    other = copy.deepcopy(b)
    other["metadata"]["name"] = "other"
    other["spec"]["source"]["repoURL"] = "https://github.com/example/somewhere-else.git"
    return [*objects, other, b]


@pytest.fixture
def repo(build_repo, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    clone = tmp_path / "clone"
    shutil.copytree(build_repo(INCIDENT / "repo-src"), clone)
    subprocess.run(
        ["git", "-C", str(clone), "remote", "add", "origin",
         "git@github.com:example/guestbook-gitops.git"],
        check=True,
    )  # fmt: skip
    return clone


@pytest.fixture
def fleet_snapshot(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": fleet()}))
    return path


def test_all_offline_summary(
    run_cli: Callable[..., Result], repo: Path, fleet_snapshot: Path
) -> None:
    args = ["--all", "--snapshot", str(fleet_snapshot), "--repo-root", str(repo)]
    result = run_cli([*args, "--no-entry-points"])
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["APPLICATION", "SYNC", "DRIFTED", "TOP", "FINDING"]
    rows = {line.split()[0]: line for line in lines[2:5]}
    assert list(rows) == ["argocd/guestbook", "argocd/guestbook-b", "argocd/other"]
    assert rows["argocd/guestbook"].split()[1:3] == ["OutOfSync", "1"]
    assert "Missing" not in rows["argocd/guestbook"]
    assert rows["argocd/guestbook-b"].split()[1] == "OutOfSync"  # nothing in prod-b yet
    assert rows["argocd/other"].split()[1] == "Skipped"
    assert "somewhere-else" in rows["argocd/other"]
    assert lines[-1] == "2 compared, 2 not in sync, 1 skipped, 0 failed"
    assert result.stderr == ""  # no progress: stderr is not a terminal


def test_all_json_has_full_reports_and_skips(
    run_cli: Callable[..., Result], repo: Path, fleet_snapshot: Path
) -> None:
    args = ["--all", "--snapshot", str(fleet_snapshot), "--repo-root", str(repo), "-o", "json"]
    result = run_cli([*args, "--no-entry-points", "--progress"])
    doc = json.loads(result.stdout)
    assert [a["name"] for a in doc["applications"]] == ["guestbook", "guestbook-b"]
    assert doc["applications"][0]["findings"]
    assert doc["skipped"] == [
        {
            "application": "argocd/other",
            "reason": "repoURL https://github.com/example/somewhere-else.git is not the clone "
            "at --repo-root",
        }
    ]
    assert doc["errors"] == []
    assert "gitdrift: rendering" in result.stderr
    assert "gitdrift: comparing" in result.stderr
    single = run_cli(
        ["guestbook", "--snapshot", str(fleet_snapshot), "--repo-root", str(repo), "-o", "json"]
    )
    assert json.loads(single.stdout)["applications"][0] == doc["applications"][0]
    query = run_cli([*args, "--query", "skipped[].application"])
    assert json.loads(query.stdout) == ["argocd/other"]


def test_all_reports_a_broken_app_and_goes_on(
    run_cli: Callable[..., Result], repo: Path, tmp_path: Path
) -> None:
    objects = fleet()
    broken = next(o for o in objects if o["metadata"].get("name") == "guestbook-b")
    broken["spec"]["source"]["path"] = "overlays/nowhere"
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    result = run_cli(["--all", "--snapshot", str(path), "--repo-root", str(repo)])
    assert result.exit_code == ExitCode.ERROR
    row = next(line for line in result.stdout.splitlines() if "guestbook-b" in line)
    assert row.split()[1] == "Error"
    assert "overlays/nowhere" in row
    assert "1 failed" in result.stdout


@pytest.mark.cluster
def test_all_live_equals_offline_on_its_export(
    kube_apiserver: ServerFactory,  # noqa: F811
    run_cli: Runner,
    repo: Path,
    tmp_path: Path,
) -> None:
    run_cli = run_cli.tuned(backoff=0.01)
    server = kube_apiserver([*fleet(), *controller_rbac()])
    cluster = ["--kubeconfig", str(server.kubeconfig_path)]
    live = run_cli(["--all", *cluster, "--repo-root", str(repo), "-o", "json"])
    assert live.exit_code == ExitCode.DRIFT, live.stderr
    export = tmp_path / "fleet.json.gz"
    snap = run_cli(["snapshot", "--all", "-o", str(export), *cluster, "--repo-root", str(repo)])
    assert snap.exit_code == ExitCode.OK, snap.stderr
    offline = run_cli(["--all", "--snapshot", str(export), "--repo-root", str(repo), "-o", "json"])
    a, b = json.loads(live.stdout), json.loads(offline.stdout)
    assert (a.pop("mode"), b.pop("mode")) == ("live", "offline")
    assert without_run_context(a) == without_run_context(b)
    text_live = run_cli(["--all", *cluster, "--repo-root", str(repo)])
    text_offline = run_cli(["--all", "--snapshot", str(export), "--repo-root", str(repo)])
    assert text_live.stdout == text_offline.stdout
    lists = [(r.resource, r.namespace) for r in server.requests_for(verb="list")]
    assert not [r for r in server.requests if r.verb == "get" and r.resource]
    assert ("events", "prod-b") in lists  # the second app's destination
    assert not server.write_violations
