"""A real `git daemon` on 127.0.0.1 for tests that fetch repoURL: serves every bare repository
under its base directory (`--export-all --base-path`), with partial clone allowed, and counts
the fetches it served from its own log.

    with GitDaemon(tmp_path / "served") as daemon:
        url = daemon.serve(clone_dir, "guestbook-gitops.git")  # a bare copy, served
        ...
        assert daemon.requests() == 2  # upload-pack requests: ls-remote and fetch each count
"""

from __future__ import annotations

import base64
import contextlib
import http.server
import os
import re
import socket
import subprocess
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Self

_REQUEST = re.compile(r"Request upload-pack for '(?P<path>[^']*)'")


def git_env() -> dict[str, str]:
    """git for the test's own setup: no user or system configuration."""
    return {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def bare_copy(repo: Path, dest: Path) -> None:
    """A bare clone of `repo` (every branch and tag) at `dest`, serving partial fetches."""
    subprocess.run(
        ["git", "clone", "--quiet", "--bare", str(repo), str(dest)],
        check=True,
        env=git_env(),
        capture_output=True,
    )
    subprocess.run(
        ["git", "-C", str(dest), "config", "uploadpack.allowFilter", "true"],
        check=True,
        env=git_env(),
    )


class GitDaemon:
    """`git daemon` serving `base` on a free loopback port; started by `start()` (or `with`),
    stopped by `stop()`."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.base.mkdir(parents=True, exist_ok=True)
        self.log = base.parent / f"{base.name}.daemon.log"
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Self:
        for _attempt in range(5):
            self.port = free_port()
            with self.log.open("ab") as log:
                self._proc = subprocess.Popen(
                    [
                        "git",
                        "daemon",
                        "--export-all",
                        f"--base-path={self.base}",
                        "--listen=127.0.0.1",
                        f"--port={self.port}",
                        "--reuseaddr",
                        "--verbose",
                        "--informative-errors",
                        str(self.base),
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    env=git_env(),
                    start_new_session=True,
                )
            if self._wait_ready():
                return self
            self.stop()
        raise RuntimeError(f"git daemon did not start; see {self.log}")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                return False
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5),
            ):
                return True
            time.sleep(0.02)
        return False

    def stop(self) -> None:
        if self._proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, 15)
        self._proc.wait(timeout=10)
        self._proc = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def serve(self, repo: Path, name: str) -> str:
        """A bare copy of `repo` (every branch and tag) served as `name`; its URL."""
        bare_copy(repo, self.base / name)
        return self.url(name)

    def requests(self, name: str | None = None) -> int:
        """upload-pack requests served so far (every ls-remote and fetch is one), for `name`
        or for every repository."""
        if not self.log.exists():
            return 0
        return sum(
            1
            for m in _REQUEST.finditer(self.log.read_text(errors="replace"))
            if name is None or m.group("path").strip("/") == name.strip("/")
        )


class GitHttp:
    """Smart HTTP on 127.0.0.1 (`git http-backend` behind python's http.server) that wants HTTP
    basic auth: `user`/`password`, else 401. Serves every repository under `base`."""

    def __init__(self, base: Path, user: str = "alice", password: str = "s3cret") -> None:
        self.base = base
        self.base.mkdir(parents=True, exist_ok=True)
        self.expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self.requests: list[tuple[str, int]] = []  # (path, status)
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._cgi()

            def do_POST(self) -> None:
                self._cgi()

            def _cgi(self) -> None:
                path, _, query = self.path.partition("?")
                if self.headers.get("Authorization") != owner.expected:
                    owner.requests.append((path, 401))
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                env = {
                    **git_env(),
                    "GIT_PROJECT_ROOT": str(owner.base),
                    "GIT_HTTP_EXPORT_ALL": "1",
                    "REQUEST_METHOD": self.command,
                    "PATH_INFO": path,
                    "QUERY_STRING": query,
                    "CONTENT_TYPE": self.headers.get("Content-Type") or "",
                    "CONTENT_LENGTH": str(len(body)),
                    "REMOTE_USER": "alice",
                    "REMOTE_ADDR": "127.0.0.1",
                    "GIT_PROTOCOL": self.headers.get("Git-Protocol") or "",
                    "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding") or "",
                }
                proc = subprocess.run(
                    ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
                )
                head, _, payload = proc.stdout.partition(b"\r\n\r\n")
                status = 200
                headers = []
                for line in head.decode("latin-1").split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                owner.requests.append((path, status))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def url(self, name: str) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/{name}"

    def serve(self, repo: Path, name: str) -> str:
        """A bare copy of `repo` served as `name` (filters allowed); its URL."""
        bare_copy(repo, self.base / name)
        return self.url(name)

    def fetches(self) -> int:
        """Authorized upload-pack exchanges (POST …/git-upload-pack)."""
        return sum(1 for path, status in self.requests if path.endswith("/git-upload-pack")
                   and status == 200)  # fmt: skip
