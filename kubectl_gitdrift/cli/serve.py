"""`kubectl gitdrift serve`: a long-running exporter of drift as Prometheus metrics.

Every `--interval` seconds it runs the same comparison as `kubectl gitdrift --all` (renders come
from the on-disk cache after the first cycle), one run at a time, and serves the last good
result on `/metrics` (OpenMetrics) and liveness on `/healthz`. A run that fails as a whole keeps
the previous result and raises `gitdrift_run_failures_total`; SIGTERM or SIGINT stop it between
requests, cleanly.
"""

from __future__ import annotations

import http.server
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from kubectl_gitdrift import model
from kubectl_gitdrift.errors import GitDriftError, UsageError
from kubectl_gitdrift.present import metrics


@dataclass(frozen=True, slots=True)
class Outcome:
    """One run's result: the reports, the apps that could not be compared, and whether the run
    as a whole worked (an unreadable snapshot or an unreachable cluster does not)."""

    reports: Sequence[model.AppReport]
    failed: Sequence[str]
    ok: bool
    error: str = ""


RunOnce = Callable[[], Outcome]

OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def parse_listen(text: str) -> tuple[str, int]:
    """`HOST:PORT` (IPv6 as `[::1]:PORT`); port 0 picks a free one."""
    host, sep, port_text = text.rpartition(":")
    host = host.strip("[]")
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not sep or not host or not 0 <= port <= 65535:
        raise UsageError(f"--listen {text}: expected HOST:PORT, for example 0.0.0.0:9765")
    return host, port


class Exporter:
    """The state `serve` shares between its timer and its HTTP handler."""

    def __init__(self, run_once: RunOnce, err: TextIO, clock: Callable[[], float] = time.time):
        self.run_once, self.err, self.clock = run_once, err, clock
        self.lock = threading.Lock()
        self.reports: Sequence[model.AppReport] = ()
        self.failed: Sequence[str] = ()
        self.last_success: float | None = None
        self.duration: float | None = None  # None until the first run ends
        self.failures = 0
        self.cycles = 0
        # the metrics of the last good run, or of the failures before any; before the first run
        # ends, a valid exposition with every family and no samples, so a scrape still parses
        self.text = self._render()

    def cycle(self) -> bool:
        """Run once and publish; True when the run worked."""
        started = time.monotonic()
        try:
            outcome = self.run_once()
        except GitDriftError as exc:
            outcome = Outcome((), (), ok=False, error=exc.message)
        elapsed = time.monotonic() - started
        with self.lock:
            self.cycles += 1
            if outcome.ok:
                self.reports, self.failed = outcome.reports, outcome.failed
                self.last_success, self.duration = self.clock(), elapsed
            else:
                self.failures += 1
                self.err.write(f"gitdrift serve: run failed, keeping the last result: "
                               f"{outcome.error or 'unknown error'}\n")  # fmt: skip
                self.err.flush()
            self.text = self._render()
        return outcome.ok

    def _render(self) -> str:
        return metrics.render(
            self.reports,
            metrics.RunInfo(
                duration_seconds=self.duration,
                last_success=self.last_success,
                failed=self.failed,
                run_failures=self.failures,
            ),
        )

    def page(self) -> str:
        with self.lock:
            return self.text


def serve(
    exporter: Exporter,
    listen: tuple[str, int],
    interval: float,
    *,
    cycles: int = 0,
    ready: Callable[[tuple[str, int]], None] | None = None,
) -> int:
    """Serve until SIGTERM/SIGINT (or `cycles` runs, for tests and benchmarks); returns the
    number of runs made."""
    stop = threading.Event()
    server = http.server.ThreadingHTTPServer(listen, _handler(exporter))
    server.daemon_threads = True
    previous = _on_signals(lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, name="gitdrift-serve", daemon=True)
    thread.start()
    try:
        exporter.cycle()  # the first result before anyone waits an interval for it
        if ready is not None:
            host, port = server.server_address[:2]
            ready((host if isinstance(host, str) else bytes(host).decode(), int(port)))
        while not stop.is_set() and not (cycles and exporter.cycles >= cycles):
            if stop.wait(interval):
                break
            exporter.cycle()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
        _restore_signals(previous)
    return exporter.cycles


def _handler(exporter: Exporter) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = "kubectl-gitdrift"

        def do_GET(self) -> None:  # http.server's naming
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, OPENMETRICS, exporter.page())
            elif path == "/healthz":
                self._send(200, "text/plain; charset=utf-8", "ok\n")
            else:
                self._send(404, "text/plain; charset=utf-8", "not found: try /metrics\n")

        def _send(self, status: int, content_type: str, text: str) -> None:
            body = text.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # scrapes every few seconds would flood stderr

    return Handler


def _on_signals(handler: Callable[..., None]) -> dict[int, Any]:
    previous: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous  # signals are only delivered to the main thread
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous[sig] = signal.signal(sig, handler)
    return previous


def _restore_signals(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)
