"""Fleets: `--all --shard K/N` partitions the apps, `-o openmetrics` exports drift as metrics
(parsed with prometheus_client's own parser), and `serve` keeps serving the last good result."""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from prometheus_client.parser import text_string_to_metric_families as prometheus_text_families

from kubectl_gitdrift import model
from kubectl_gitdrift.errors import ExitCode, UsageError
from kubectl_gitdrift.present import metrics
from kubectl_gitdrift.run import shard
from tests.conftest import ROOT, TESTDATA, Result, load_script

CLI = Path(sys.executable).with_name("kubectl-gitdrift")


def _generator() -> Any:
    return load_script("bench_generate", ROOT / "bench" / "generate.py")


@pytest.fixture(scope="module")
def fleet24(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """24 generated Applications (bench/generate.py), a fifth of them drifted."""
    gen = _generator()
    out = tmp_path_factory.mktemp("fleet24")
    meta = gen.generate(gen.Scenario("fleet-24", 24, 1, drift=0.2), out)
    return out, meta


@pytest.fixture
def fleet_args(fleet24: tuple[Path, dict[str, Any]]) -> list[str]:
    out, _meta = fleet24
    return ["--all", "--snapshot", str(out / "snapshot.yaml"), "--repo-root", str(out / "repo")]


@pytest.fixture(autouse=True)
def _shared_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One render cache for the module's runs: the fleet is rendered once, not once per shard."""
    cache = tmp_path_factory.getbasetemp() / "fleet-render-cache"
    monkeypatch.setenv("KUBECTL_GITDRIFT_CACHE_DIR", str(cache))


# --------------------------------------------------------------------------- shards


def test_shard_of_is_stable() -> None:
    """The partition is a fact of the names alone: pinned, so a change is a visible decision."""
    assert [shard.shard_of("argocd", f"app-{i}", 4) for i in range(8)] == [
        shard.shard_of("argocd", f"app-{i}", 4) for i in reversed(range(8))
    ][::-1]
    assert shard.shard_of("argocd", "guestbook", 1) == 0
    names = [("argocd", f"shop-{i:04d}") for i in range(200)]
    parts = [shard.select(names, shard.Shard(k, 7)) for k in range(7)]
    assert sorted(i for part in parts for i in part) == list(range(200))
    assert min(len(p) for p in parts) > 10  # spread, not lumped


@pytest.mark.parametrize("text", ["4/4", "-1/4", "1", "a/b", "0/0", "1/"])
def test_bad_shard_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match=r"--shard"):
        shard.parse(text)


@pytest.mark.slow
def test_shards_partition_the_fleet(
    run_cli: Callable[..., Result], fleet_args: list[str], fleet24: tuple[Path, dict[str, Any]]
) -> None:
    _out, meta = fleet24
    seen: list[list[str]] = []
    for k in range(4):
        result = run_cli([*fleet_args, "--shard", f"{k}/4", "-o", "json"])
        assert result.exit_code in (ExitCode.OK, ExitCode.DRIFT), result.stderr
        seen.append(sorted(a["name"] for a in json.loads(result.stdout)["applications"]))
    flat = [name for part in seen for name in part]
    assert sorted(flat) == sorted(meta["apps"])  # every app, once
    assert len(set(flat)) == len(flat)  # disjoint
    assert all(seen), seen  # 24 apps over 4 shards: none empty
    # the same split as the library's, whatever order the snapshot lists the apps in
    for k, part in enumerate(seen):
        assert part == sorted(a for a in meta["apps"] if shard.shard_of("argocd", a, 4) == k)


def test_shard_needs_all(run_cli: Callable[..., Result], tmp_path: Path) -> None:
    result = run_cli(["guestbook", "--shard", "0/2", "--snapshot", str(tmp_path / "x.yaml")])
    assert result.exit_code == ExitCode.USAGE_ERROR
    assert "--shard only goes with --all" in result.stderr


# --------------------------------------------------------------------------- openmetrics


def _samples(text: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(text):  # type: ignore[no-untyped-call]
        for sample in family.samples:
            out.setdefault(sample.name, []).append(sample)
    return out


@pytest.mark.slow
def test_openmetrics_names_each_drifted_field_and_its_manager(
    run_cli: Callable[..., Result], fleet_args: list[str], fleet24: tuple[Path, dict[str, Any]]
) -> None:
    _out, meta = fleet24
    result = run_cli([*fleet_args, "-o", "openmetrics"])
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    assert result.stdout.endswith("# EOF\n")
    samples = _samples(result.stdout)  # prometheus_client's parser: the text is valid
    fields = {
        (s.labels["application"], s.labels["kind"], s.labels["name"], s.labels["path"],
         s.labels["manager"])
        for s in samples["gitdrift_drifted_field"]
    }  # fmt: skip
    expected = {(d["app"], d["kind"], d["name"], d["path"], d["manager"]) for d in meta["drifted"]}
    assert expected <= fields, sorted(expected - fields)
    out_of_sync = {
        s.labels["application"]: s.value for s in samples["gitdrift_application_out_of_sync"]
    }
    drifted_apps = {d["app"] for d in meta["drifted"]}
    assert set(out_of_sync) == set(meta["apps"])
    assert {a for a, v in out_of_sync.items() if v == 1} == drifted_apps
    counts = {
        s.labels["application"]: s.value for s in samples["gitdrift_application_drifted_fields"]
    }
    for app in meta["apps"]:
        assert counts[app] == sum(1 for d in meta["drifted"] if d["app"] == app)
    assert samples["gitdrift_run_duration_seconds"][0].value > 0
    assert samples["gitdrift_last_success_timestamp_seconds"][0].value > 1.7e9
    assert {s.labels["code"] for s in samples["gitdrift_finding"]} >= {"manual-drift"}


def test_openmetrics_never_carries_secret_values(
    run_cli: Callable[..., Result], tmp_path: Path, build_repo: Callable[[Path], Path]
) -> None:
    scenario = TESTDATA / "scenarios" / "secret-values-masked"
    spec_args = ["--snapshot", str(scenario / "snapshot.yaml"), "--repo-root",
                 str(build_repo(scenario / "repo-src"))]  # fmt: skip
    app = _scenario_app(scenario)
    result = run_cli([app, *spec_args, "-o", "openmetrics"])
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    secret_fields = [
        s for s in _samples(result.stdout)["gitdrift_drifted_field"] if s.labels["kind"] == "Secret"
    ]
    assert secret_fields  # the Secret's drifted keys are named, by path
    for value in _secret_values(scenario):
        assert value not in result.stdout


def _scenario_app(scenario: Path) -> str:
    import yaml

    return str(yaml.safe_load((scenario / "scenario.yaml").read_text())["app"])


def _secret_values(scenario: Path) -> set[str]:
    """Every plain and base64 value of every Secret the scenario holds, git side and live."""
    import base64

    import yaml

    values: set[str] = set()
    texts = [scenario / "snapshot.yaml", *sorted((scenario / "repo-src").rglob("*.yaml"))]
    for path in texts:
        for doc in yaml.safe_load_all(path.read_text()):
            for obj in (doc or {}).get("items", [doc]) if isinstance(doc, dict) else []:
                if not isinstance(obj, dict) or obj.get("kind") != "Secret":
                    continue
                for v in (obj.get("data") or {}).values():
                    values.add(str(v))
                    values.add(base64.b64decode(str(v)).decode("utf-8", "replace"))
                values.update(str(v) for v in (obj.get("stringData") or {}).values())
    return {v for v in values if len(v) >= 8}  # short ones ("billing") are also names


def _report_with(changes: int) -> model.AppReport:
    key = model.ObjectKey("", "ConfigMap", "prod", "settings")
    drift = model.Drift(
        key,
        model.ResourceStatus.OUT_OF_SYNC,
        changes=tuple(
            model.Change(model.Op.CHANGE, ("data", f"k{i}"), "a", "b",
                         owner=model.Owner("kubectl-edit", "Update"))
            for i in range(changes)
        ),
    )  # fmt: skip
    return model.AppReport(
        name="app",
        namespace="argocd",
        sync_status=model.SyncStatus.OUT_OF_SYNC,
        argocd_sync_status="OutOfSync",
        revision="abc",
        source="repo path@abc",
        resources=(drift,),
        findings=(),
        remedies=(),
    )


def test_openmetrics_bounds_label_cardinality() -> None:
    text = metrics.render(
        [_report_with(5)], metrics.RunInfo(duration_seconds=1.5, last_success=None, max_fields=2)
    )
    samples = _samples(text)
    assert len(samples["gitdrift_drifted_field"]) == 2
    assert [s.value for s in samples["gitdrift_drifted_fields_truncated"]] == [3]
    assert samples["gitdrift_application_drifted_fields"][0].value == 5
    assert "gitdrift_last_success_timestamp_seconds" not in samples  # no success yet


# --------------------------------------------------------------------------- serve


def _get(url: str) -> tuple[int, str, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.headers["Content-Type"], response.read().decode()


def _wait_for(predicate: Callable[[], bool], what: str, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"gave up waiting for {what}")


@pytest.mark.slow
def test_serve_keeps_the_last_good_result(
    tmp_path: Path, fleet24: tuple[Path, dict[str, Any]]
) -> None:
    out, meta = fleet24
    snap = tmp_path / "snapshot.yaml"
    snap.write_bytes((out / "snapshot.yaml").read_bytes())
    stderr = tmp_path / "serve.err"
    env = {**os.environ, "KUBECTL_GITDRIFT_CACHE_DIR": str(tmp_path / "cache")}
    with stderr.open("w") as err:
        proc = subprocess.Popen(
            [str(CLI), "serve", "--all", "--snapshot", str(snap), "--repo-root",
             str(out / "repo"), "--interval", "0.5", "--listen", "127.0.0.1:0"],
            stdout=subprocess.DEVNULL, stderr=err, env=env,
        )  # fmt: skip
    try:
        _wait_for(lambda: "listening on" in stderr.read_text(), "serve to listen")
        url = stderr.read_text().split("listening on ", 1)[1].split()[0].removesuffix("/metrics")
        status, ctype, text = _get(url + "/metrics")
        assert status == 200
        assert ctype.startswith("application/openmetrics-text")
        good = _samples(text)
        assert len(good["gitdrift_application_out_of_sync"]) == len(meta["apps"])
        assert _get(url + "/healthz")[:1] == (200,)
        with pytest.raises(urllib.error.HTTPError):
            _get(url + "/nope")

        snap.write_text("kind: [unclosed\n")  # the snapshot becomes unreadable

        def failed_once() -> bool:
            samples = _samples(_get(url + "/metrics")[2])
            return bool(samples["gitdrift_run_failures_total"][0].value >= 1)

        _wait_for(failed_once, "a failed cycle")
        kept = _samples(_get(url + "/metrics")[2])
        assert {s.labels["application"] for s in kept["gitdrift_application_out_of_sync"]} == set(
            meta["apps"]
        )  # the last good result, still served
        assert "keeping the last result" in stderr.read_text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0  # SIGTERM stops it cleanly
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_answers_a_scrape_before_its_first_run_ends(tmp_path: Path) -> None:
    """A Prometheus scrape of a fresh pod, while the first run still renders, gets a valid
    OpenMetrics exposition (every family, no samples, `# EOF`), never an empty body."""
    import io
    import socket

    from kubectl_gitdrift.cli import serve as serving

    release = threading.Event()

    def first_run() -> serving.Outcome:
        release.wait(30)
        return serving.Outcome((), (), ok=True)

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    exporter = serving.Exporter(first_run, io.StringIO())
    thread = threading.Thread(
        target=serving.serve, args=(exporter, ("127.0.0.1", port), 60.0), kwargs={"cycles": 1}
    )
    thread.start()
    try:
        url = f"http://127.0.0.1:{port}/metrics"

        def listening() -> bool:
            try:
                return _get(url)[0] == 200
            except OSError:
                return False

        _wait_for(listening, "serve to listen")
        status, ctype, text = _get(url)
        assert (status, exporter.cycles) == (200, 0)  # the first run has not ended
        assert ctype.startswith("application/openmetrics-text")
        assert text.endswith("# EOF\n")
        families = {f.name: f for f in text_string_to_metric_families(text)}
        assert "gitdrift_application_out_of_sync" in families
        with_samples = {f.name for f in families.values() if f.samples}
        assert with_samples == {"gitdrift_run_failures"}  # a counter at 0; no run, no app yet
    finally:
        release.set()
        thread.join(30)
    assert exporter.cycles == 1


def test_serve_rejects_other_outputs(run_cli: Callable[..., Result]) -> None:
    result = run_cli(["serve", "--all", "-o", "json", "--snapshot", "x.yaml"])
    assert result.exit_code == ExitCode.USAGE_ERROR
    assert "serve always serves OpenMetrics" in result.stderr


# --------------------------------------------------------------------------- pushgateway


class _Capture(http.server.BaseHTTPRequestHandler):
    """A Pushgateway's push endpoint: records each PUT and answers 200 (or 503 when told)."""

    pushes: ClassVar[list[tuple[str, str, bytes]]] = []
    status: ClassVar[int] = 200

    def do_PUT(self) -> None:  # http.server's naming
        body = self.rfile.read(int(self.headers["Content-Length"] or 0))
        self.pushes.append((self.path, self.headers["Content-Type"], body))
        self.send_response(self.status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def pushgateway() -> Iterator[tuple[str, type[_Capture]]]:
    _Capture.pushes, _Capture.status = [], 200
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Capture)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _Capture
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_pushgateway_gets_the_shards_metrics(
    run_cli: Callable[..., Result],
    fleet_args: list[str],
    pushgateway: tuple[str, type[_Capture]],
) -> None:
    url, capture = pushgateway
    result = run_cli([*fleet_args, "--shard", "2/4", "-o", "openmetrics", "--pushgateway", url])
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    ((path, ctype, body),) = capture.pushes
    assert path == "/metrics/job/kubectl-gitdrift/shard/2"  # a shard replaces only its own push
    assert ctype.startswith("text/plain")
    pushed = {
        s.labels["application"]
        for f in prometheus_text_families(body.decode())  # the 0.0.4 text format a push uses
        for s in f.samples
        if s.name == "gitdrift_application_out_of_sync"
    }
    printed = {
        s.labels["application"] for s in _samples(result.stdout)["gitdrift_application_out_of_sync"]
    }
    assert pushed == printed
    assert pushed  # shard 2 of 4 of 24 apps is not empty


def test_pushgateway_refusal_is_one_line(
    run_cli: Callable[..., Result],
    fleet_args: list[str],
    pushgateway: tuple[str, type[_Capture]],
) -> None:
    url, capture = pushgateway
    capture.status = 503
    result = run_cli([*fleet_args, "-o", "openmetrics", "--pushgateway", url])
    assert result.exit_code == ExitCode.ERROR
    assert result.stderr.splitlines()[0] == (
        f"error: --pushgateway {url}: the Pushgateway answered 503 Service Unavailable"
    )


def test_pushgateway_needs_openmetrics(run_cli: Callable[..., Result]) -> None:
    result = run_cli(["--all", "--snapshot", "x.yaml", "--pushgateway", "http://pg:9091"])
    assert result.exit_code == ExitCode.USAGE_ERROR
    assert "--pushgateway only goes with -o openmetrics" in result.stderr
