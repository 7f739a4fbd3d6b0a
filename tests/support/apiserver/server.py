"""A read-only Kubernetes API server on loopback HTTPS, for tests.

:class:`KubeAPIServer` serves discovery, GET/LIST (and a minimal WATCH) of the objects in its
:class:`~tests.support.apiserver.store.Store`, and ``SubjectAccessReview`` POSTs, with bearer-token
authentication and per-identity authorization, and server-side apply dry-runs (``dryRun=All``,
which persist nothing) by replaying real recordings (:mod:`tests.support.apiserver.dryrun`). Every
other request is answered ``405`` and recorded in :attr:`KubeAPIServer.write_violations`.
Requests are logged in :attr:`KubeAPIServer.requests`; faults (status codes, delays, dropped
connections) are injected with :meth:`KubeAPIServer.inject`.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import hashlib
import http.server
import json
import re
import secrets
import shutil
import socket
import ssl
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import yaml

from . import dryrun
from .auth import RBAC, AccessRule, Attributes, Decision, Identity, authorize_identity
from .discovery import Discovery, ResourceType
from .status import (
    APIError,
    bad_request,
    error,
    for_code,
    forbidden,
    internal_error,
    method_not_supported,
    path_not_found,
    status_body,
    unauthorized,
)
from .store import ListOptions, Obj, Store, load_objects
from .tls import TLSMaterial, session_tls

if TYPE_CHECKING:
    from typing_extensions import Self

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
SAR_PATH = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
_METHOD_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
#: API Priority and Fairness headers every real response carries (fixed, fake UIDs).
_APF_HEADERS = {
    "X-Kubernetes-Pf-Flowschema-Uid": "8d0f2c5e-6a1c-4e8b-9d8e-3f1b7c2a9e10",
    "X-Kubernetes-Pf-Prioritylevel-Uid": "5b7e9a3c-2d4f-4a6b-8c1e-7f9d0b3a5c21",
}


# ---------------------------------------------------------------------------- data types
@dataclass(frozen=True)
class RequestInfo:
    """What a URL addresses, parsed like the apiserver's ``RequestInfoFactory``."""

    path: str
    verb: str
    resource_request: bool = False
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""


@dataclass(frozen=True)
class RequestRecord:
    """One request as the server saw and answered it."""

    method: str
    path: str
    query: dict[str, str]
    verb: str
    """Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection."""
    resource: str
    subresource: str
    namespace: str
    name: str
    api_group: str
    api_version: str
    user: str | None
    """Authenticated user name; None when the token was missing or unknown."""
    status: int
    """Status code sent (or being sent, for a dropped connection)."""
    user_agent: str
    accept: str
    fault: bool
    """Whether an injected fault shaped the answer (status, delay or drop)."""
    dropped: bool
    duration: float
    content_type: str = ""
    body: bytes = b""
    """The request body of a server-side apply dry-run or a SubjectAccessReview (empty for
    other requests)."""

    @property
    def is_dry_run(self) -> bool:
        """A server-side apply PATCH with ``dryRun=All``: the server persists nothing."""
        return dryrun.is_dry_run_apply(self.method, self.query, self.content_type)

    @property
    def is_write(self) -> bool:
        """Anything but a GET, the SubjectAccessReview POST and a ``dryRun=All`` apply."""
        return _is_write(self.method, self.path) and not self.is_dry_run


@dataclass
class Fault:
    """An injected fault; see :meth:`KubeAPIServer.inject`."""

    method: str | None
    path_regex: str
    query_regex: str | None
    status: int | None
    times: int | None
    retry_after: int | None
    body: Any
    delay: float
    drop_connection: bool
    hits: int = 0

    def matches(self, method: str, path: str, query: str) -> bool:
        """Whether this fault applies to a request (and is not used up)."""
        if self.times is not None and self.hits >= self.times:
            return False
        if self.method is not None and self.method.upper() != method:
            return False
        if not re.search(self.path_regex, path):
            return False
        return self.query_regex is None or re.search(self.query_regex, query) is not None

    @property
    def exhausted(self) -> bool:
        """True once the fault fired ``times`` times."""
        return self.times is not None and self.hits >= self.times


def _is_write(method: str, path: str) -> bool:
    return not (method == "GET" or (method == "POST" and path.rstrip("/") == SAR_PATH))


def default_identities() -> list[Identity]:
    """``admin`` (system:masters) and ``dev`` (authenticated, no permissions: 403s)."""
    return [
        Identity(
            user="admin",
            token="admin-" + secrets.token_hex(16),
            groups=("system:masters", "system:authenticated"),
        ),
        Identity(
            user="dev",
            token="dev-" + secrets.token_hex(16),
            groups=("developers", "system:authenticated"),
        ),
    ]


# ---------------------------------------------------------------------------- server
#: Every write any server in this process refused, in order (never cleared): the read-only
#: guard in tests/conftest.py fails a test during which this grew.
WRITE_ATTEMPTS: list[RequestRecord] = []
#: Every server-side apply dry-run (``dryRun=All``) any server in this process saw, in order
#: (never cleared): the guard allows them only in tests marked ``server_dry_run``.
DRY_RUN_ATTEMPTS: list[RequestRecord] = []


class KubeAPIServer:
    """A loopback HTTPS Kubernetes API server (read-only) for tests; a context manager.

    Args:
        objects: Initial objects (dicts, a ``kind: List`` dict, or a YAML/JSON file path).
        identities: Known bearer-token users; default :func:`default_identities`. The first one
            is the kubeconfig's current context.
        workdir: Where to write the kubeconfig; default a fresh temporary directory (removed
            on :meth:`stop`).
        fill_metadata: Give objects without them a uid, creationTimestamp and resourceVersion.
        keep_alive: Keep connections open between requests. Off by default: kr8s never closes
            its httpx session, so pooled keep-alive sockets would surface as ``ResourceWarning``
            (an error under ``filterwarnings = error``) whenever a kr8s ``Api`` is collected.
            With it off, every response says ``Connection: close`` (a TLS handshake per
            request costs about a millisecond on loopback).

    Attributes:
        aggregated_discovery: Answer ``/api`` and ``/apis`` as APIGroupDiscoveryList when the
            Accept asks for it (on by default, as kube-apiserver 1.30+); off, a server that
            knows only the plain documents (clients then fetch every group-version).
    """

    def __init__(
        self,
        objects: Iterable[Obj] | Obj | str | Path = (),
        *,
        identities: Sequence[Identity] | None = None,
        workdir: Path | None = None,
        fill_metadata: bool = True,
        keep_alive: bool = False,
    ) -> None:
        self.keep_alive = keep_alive
        self.aggregated_discovery = True
        self.discovery = Discovery()
        self.store = Store(self.discovery, fill_metadata=fill_metadata)
        self.store.load(load_objects(objects))
        self.rbac = RBAC(self.store.objects)
        #: A webhook authorizer consulted before RBAC (``--authorization-mode=Webhook,RBAC``)
        #: for SubjectAccessReviews: a Decision ends the chain, None leaves it to RBAC.
        self.webhook: Callable[[Attributes], Decision | None] | None = None
        self.identities: list[Identity] = list(identities or default_identities())
        self.unauthorized_token = "unknown-" + secrets.token_hex(16)
        self.tls: TLSMaterial = session_tls()
        self._own_workdir = workdir is None
        self.workdir = (
            Path(tempfile.mkdtemp(prefix="gitdrift-apiserver-")) if workdir is None else workdir
        )
        self._lock = threading.Lock()
        self._requests: list[RequestRecord] = []
        self._write_attempts: list[RequestRecord] = []
        self._faults: list[Fault] = []
        self._recordings: list[dryrun.Recording] | None = None
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Self:
        """Bind 127.0.0.1 on an ephemeral port, serve in a thread, write the kubeconfig."""
        if self._httpd is not None:
            return self
        context = self.tls.server_context()
        context.set_alpn_protocols(["http/1.1"])
        self._stopping.clear()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler, api=self, ssl_context=context)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"kube-apiserver:{self.port}",
            daemon=True,
        )
        self._thread.start()
        self.write_kubeconfig(self.kubeconfig_path)
        return self

    def stop(self) -> None:
        """Stop serving, close every connection, wait for the threads, remove the workdir."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        httpd.join_handlers(timeout=2.0)
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ addresses, credentials
    @property
    def port(self) -> int:
        """The bound TCP port."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``https://127.0.0.1:<port>``."""
        return f"https://127.0.0.1:{self.port}"

    @property
    def kubeconfig_path(self) -> Path:
        """The kubeconfig written at start (one context per identity, plus ``unauthorized``)."""
        return self.workdir / "kubeconfig"

    @property
    def ca_path(self) -> Path:
        """The session CA certificate (PEM)."""
        return self.tls.ca_path

    @property
    def context(self) -> str:
        """The kubeconfig's current context (the first identity, ``admin`` by default)."""
        return self.identities[0].context

    def identity(self, name: str) -> Identity:
        """The identity whose context/user name (or user) is ``name``."""
        for ident in self.identities:
            if name in (ident.context, ident.user):
                return ident
        raise KeyError(name)

    def token(self, name: str) -> str:
        """Bearer token of an identity; ``"unauthorized"`` gives the unknown (401) token."""
        if name == "unauthorized":
            return self.unauthorized_token
        return self.identity(name).token

    def ssl_context(self) -> ssl.SSLContext:
        """A client TLS context trusting the session CA (for ``httpx.Client(verify=...)``)."""
        return self.tls.client_context()

    def headers(self, name: str | None = None) -> dict[str, str]:
        """``Authorization`` header for an identity (default: the current context's)."""
        return {"Authorization": f"Bearer {self.token(name or self.context)}"}

    def kubeconfig(self) -> dict[str, Any]:
        """The kubeconfig as a dict."""
        cluster = "gitdrift-test"
        users = [(i.context, i.token) for i in self.identities]
        users.append(("unauthorized", self.unauthorized_token))
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "preferences": {},
            "clusters": [
                {
                    "name": cluster,
                    "cluster": {
                        "server": self.url,
                        "certificate-authority-data": base64.b64encode(self.tls.ca_pem).decode(),
                    },
                }
            ],
            "users": [{"name": name, "user": {"token": token}} for name, token in users],
            "contexts": [
                {
                    "name": name,
                    "context": {"cluster": cluster, "user": name, "namespace": "default"},
                }
                for name, _ in users
            ],
            "current-context": self.context,
        }

    def write_kubeconfig(self, path: Path) -> Path:
        """Write the kubeconfig (YAML, mode 0600) to ``path``."""
        path.write_text(yaml.safe_dump(self.kubeconfig(), sort_keys=False))
        path.chmod(0o600)
        return path

    # ------------------------------------------------------------------ objects (out of band)
    def load(self, objects: Iterable[Obj] | Obj | str | Path) -> None:
        """Add or replace objects as a live change (new resourceVersions)."""
        self.store.load(load_objects(objects), bump=True)

    def delete_object(self, api_version: str, kind: str, name: str, namespace: str = "") -> bool:
        """Remove an object as a live change. True if it existed."""
        return self.store.delete(api_version, kind, name, namespace)

    @property
    def objects(self) -> list[Obj]:
        """Copies of every stored object."""
        return self.store.all_objects()

    def expire_continue_tokens(self) -> None:
        """Every continue token handed out so far now gets 410 Expired (an etcd compaction)."""
        self.store.compact()

    # ------------------------------------------------------------------ faults
    def inject(
        self,
        method: str | None = "GET",
        path_regex: str = ".*",
        status: int | None = None,
        *,
        times: int | None = 1,
        retry_after: int | None = None,
        body: Any = None,
        delay: float = 0.0,
        drop_connection: bool = False,
        query_regex: str | None = None,
    ) -> Fault:
        """Make the next ``times`` matching requests misbehave (``times=None``: forever).

        ``path_regex`` is searched in the URL path (``query_regex`` in the raw query string);
        ``method=None`` matches any method. Effects, in order: wait ``delay`` seconds; then
        answer ``status`` with ``body`` (default: the server's ``Status`` for that code,
        ``Retry-After`` if ``retry_after``), or else serve normally; with ``drop_connection``
        the connection is closed halfway through the response body. The first matching
        fault, in injection order, applies.
        """
        fault = Fault(
            method=method,
            path_regex=path_regex,
            query_regex=query_regex,
            status=status,
            times=times,
            retry_after=retry_after,
            body=body,
            delay=delay,
            drop_connection=drop_connection,
        )
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        """Remove every injected fault."""
        with self._lock:
            self._faults.clear()

    def _take_fault(self, method: str, path: str, query: str) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path, query):
                    fault.hits += 1
                    if fault.exhausted:
                        self._faults.remove(fault)
                    return fault
        return None

    # ------------------------------------------------------------------ request log
    @property
    def requests(self) -> list[RequestRecord]:
        """Every request answered so far, in completion order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def write_violations(self) -> list[RequestRecord]:
        """Requests that tried to change something (anything but GET and SAR POST)."""
        return [r for r in self.requests if r.is_write]

    @property
    def write_attempts(self) -> list[RequestRecord]:
        """Every write ever attempted, including those :meth:`clear_requests` forgot."""
        with self._lock:
            return list(self._write_attempts)

    def requests_for(
        self,
        verb: str | None = None,
        resource: str | None = None,
        namespace: str | None = None,
        user: str | None = None,
    ) -> list[RequestRecord]:
        """Logged requests filtered by Kubernetes verb, resource, namespace and/or user."""
        return [
            r
            for r in self.requests
            if (verb is None or r.verb == verb)
            and (resource is None or r.resource == resource)
            and (namespace is None or r.namespace == namespace)
            and (user is None or r.user == user)
        ]

    def discovery_requests(self) -> list[str]:
        """The paths of the discovery requests answered so far, in order: ``/version``,
        ``/api``, ``/apis`` and each group-version's ``/api/v1``, ``/apis/<g>/<v>`` (what a
        client asks before its first LIST, and what its discovery cache saves)."""
        return [
            r.path
            for r in self.requests
            if r.method == "GET" and not r.resource and _is_discovery_path(r.path)
        ]

    @property
    def reviews(self) -> list[dict[str, Any]]:
        """The ``spec`` of every SubjectAccessReview POSTed so far, in completion order."""
        return [
            json.loads(r.body).get("spec") or {}
            for r in self.requests
            if r.method == "POST" and r.path.rstrip("/") == SAR_PATH and r.body
        ]

    @property
    def dry_runs(self) -> list[RequestRecord]:
        """The server-side apply dry-runs (``dryRun=All`` PATCHes) answered so far."""
        return [r for r in self.requests if r.is_dry_run]

    @property
    def recordings(self) -> list[dryrun.Recording]:
        """The recorded dry-runs it replays (testdata/apiserver/ssa), loaded on first use."""
        with self._lock:
            if self._recordings is None:
                self._recordings = dryrun.load_recordings()
            return self._recordings

    def clear_requests(self) -> None:
        """Forget the request log (and so the write violations)."""
        with self._lock:
            self._requests.clear()

    def _record(self, record: RequestRecord) -> None:
        with self._lock:
            self._requests.append(record)
            if record.is_write:
                self._write_attempts.append(record)
                WRITE_ATTEMPTS.append(record)
            elif record.is_dry_run:
                DRY_RUN_ATTEMPTS.append(record)

    def _sleep(self, seconds: float) -> None:
        """Sleep, but wake up when the server stops."""
        self._stopping.wait(seconds)

    # ------------------------------------------------------------------ request handling
    def authenticate(self, authorization: str | None) -> Identity | None:
        """The identity for an ``Authorization: Bearer`` header value, if known."""
        if not authorization or not authorization.startswith("Bearer "):
            return None
        token = authorization[len("Bearer ") :].strip()
        for ident in self.identities:
            if secrets.compare_digest(ident.token, token):
                return ident
        return None


def parse_request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    """Split a URL into group/version/namespace/resource/name/subresource and a verb."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return RequestInfo(path=path, verb=method.lower())
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in ("status", "finalize"):
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = "/".join(rest[2:])
    if method == "GET":
        if name:
            verb = "get"
        elif query.get("watch") in ("1", "true"):
            verb = "watch"
        else:
            verb = "list"
    elif method == "DELETE" and not name:
        verb = "deletecollection"
    else:
        verb = _METHOD_VERBS.get(method, method.lower())
    return RequestInfo(
        path=path,
        verb=verb,
        resource_request=True,
        api_group=group,
        api_version=version,
        namespace=namespace,
        resource=resource,
        subresource=subresource,
        name=name,
    )


def _is_discovery_path(path: str) -> bool:
    parts = path.strip("/").split("/")
    return (
        parts == ["version"]
        or (parts[0] == "api" and len(parts) <= 2)
        or (parts[0] == "apis" and len(parts) <= 3)
    )


def _accepts_aggregated(accept: str) -> bool:
    for media in accept.split(","):
        params = {p.strip() for p in media.split(";")}
        if {
            "application/json",
            "g=apidiscovery.k8s.io",
            "v=v2",
            "as=APIGroupDiscoveryList",
        } <= params:
            return True
    return False


@dataclass
class _Response:
    code: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    stream: list[bytes] | None = None
    """Chunks of a streamed (watch) answer; sent with chunked encoding, then closed."""


def _json(code: int, obj: Any, content_type: str = "application/json", **headers: str) -> _Response:
    data = json.dumps(obj, separators=(",", ":")).encode() + b"\n"
    return _Response(code, data, content_type, dict(headers))


def _error_response(err: APIError) -> _Response:
    return _json(err.code, err.body, **err.headers)


class _HTTPServer(http.server.ThreadingHTTPServer):
    """Threaded HTTP server doing the TLS handshake in the worker thread."""

    daemon_threads = True
    allow_reuse_address = True
    # socketserver's listen backlog is 5: a client opening more connections at once (kr8s with
    # 8 LISTs in flight, each on a new connection) overflows it while the serving thread waits
    # for the interpreter, the kernel drops the SYN and the client's retry comes a second later.
    # kube-apiserver listens with the system's maximum (Go's net.Listen).
    request_queue_size = socket.SOMAXCONN

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[http.server.BaseHTTPRequestHandler],
        *,
        api: KubeAPIServer,
        ssl_context: ssl.SSLContext,
    ) -> None:
        super().__init__(address, handler)
        self.api = api
        self.ssl_context = ssl_context
        self._connections: set[socket.socket] = set()
        self._handler_threads: set[threading.Thread] = set()
        self._conn_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self.process_request_thread, args=(request, client_address), daemon=True
        )
        with self._conn_lock:
            self._handler_threads = {t for t in self._handler_threads if t.is_alive()}
            self._handler_threads.add(thread)
        thread.start()

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(10.0)
        # Headers and body go out in separate writes: without this, Nagle + delayed ACK add
        # ~40 ms to every keep-alive request.
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            conn = self.ssl_context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return  # client went away or spoke no TLS
        with self._conn_lock:
            self._connections.add(conn)
        try:
            super().finish_request(conn, client_address)
        except (ssl.SSLError, OSError):
            pass
        finally:
            with self._conn_lock:
                self._connections.discard(conn)
            with contextlib.suppress(OSError):
                conn.close()

    def close_connections(self) -> None:
        """Shut down every open connection (wakes handlers blocked on keep-alive reads)."""
        with self._conn_lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def join_handlers(self, timeout: float) -> None:
        """Wait (bounded) for the handler threads to finish."""
        deadline = time.monotonic() + timeout
        with self._conn_lock:
            threads = list(self._handler_threads)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Connection errors are expected (drops, client timeouts): stay quiet."""


class _Handler(http.server.BaseHTTPRequestHandler):
    """Turns HTTP requests into calls on the :class:`KubeAPIServer`."""

    server: _HTTPServer
    protocol_version = "HTTP/1.1"
    timeout = 30.0

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log (the request log is the record)."""

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self._handle()

    def do_OPTIONS(self) -> None:
        self._handle()

    # ------------------------------------------------------------------ plumbing
    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, response: _Response, *, drop: bool = False) -> None:
        self.send_response_only(response.code)
        self.send_header("Date", self.date_time_string())
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header(
            "Cache-Control", response.headers.pop("Cache-Control", "no-cache, private")
        )
        self.send_header("Content-Type", response.content_type)
        for key, value in {**_APF_HEADERS, **response.headers}.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(response.body)))
        if drop or not self.server.api.keep_alive:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command == "HEAD":
            return
        if drop:
            self.wfile.write(response.body[: len(response.body) // 2])
            self.wfile.flush()
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(response.body)

    def _send_stream(self, code: int, lines: Iterable[bytes]) -> None:
        self.send_response_only(code)
        self.send_header("Date", self.date_time_string())
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for line in lines:
            self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")

    # ------------------------------------------------------------------ main flow
    def _handle(self) -> None:
        api = self.server.api
        started = time.monotonic()
        method = self.command
        split = urlsplit(self.path)
        path = split.path
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        info = parse_request_info(method, path, query)
        identity = api.authenticate(self.headers.get("Authorization"))
        fault = api._take_fault(method, path, split.query)
        try:
            body = self._read_body() if method not in ("GET", "HEAD") else b""
        except (OSError, ValueError):
            self.close_connection = True
            return
        if fault is not None and fault.delay:
            api._sleep(fault.delay)
        if fault is not None and fault.status is not None:
            response = self._fault_response(fault)
        else:
            response = self._respond(info, query, identity, body)
        dropped = fault is not None and fault.drop_connection
        # Record before answering, so a client that got its answer always finds it in the log.
        api._record(
            RequestRecord(
                method=method,
                path=path,
                query=query,
                verb=info.verb,
                resource=info.resource,
                subresource=info.subresource,
                namespace=info.namespace,
                name=info.name,
                api_group=info.api_group,
                api_version=info.api_version,
                user=identity.user if identity else None,
                status=response.code,
                user_agent=self.headers.get("User-Agent", ""),
                accept=self.headers.get("Accept", ""),
                fault=fault is not None,
                dropped=dropped,
                duration=time.monotonic() - started,
                content_type=self.headers.get("Content-Type", ""),
                body=body if method == "PATCH" or path.rstrip("/") == SAR_PATH else b"",
            )
        )
        try:
            if response.stream is not None:
                self._send_stream(response.code, response.stream)
            else:
                self._send(response, drop=dropped)
        except (OSError, ssl.SSLError):
            self.close_connection = True

    def _fault_response(self, fault: Fault) -> _Response:
        assert fault.status is not None
        default = for_code(fault.status, fault.retry_after)
        headers = dict(default.headers)
        if fault.body is None:
            return _json(fault.status, default.body, **headers)
        if isinstance(fault.body, bytes):
            return _Response(fault.status, fault.body, "text/plain; charset=utf-8", headers)
        if isinstance(fault.body, str):
            data = fault.body.encode()
            return _Response(fault.status, data, "text/plain; charset=utf-8", headers)
        return _json(fault.status, fault.body, **headers)

    def _respond(
        self, info: RequestInfo, query: dict[str, str], identity: Identity | None, body: bytes
    ) -> _Response:
        try:
            if identity is None:
                raise unauthorized()
            if dryrun.is_dry_run_apply(self.command, query, self.headers.get("Content-Type", "")):
                return self._dry_run_apply(info, query, identity, body)
            if _is_write(self.command, info.path):
                if info.resource_request:
                    raise method_not_supported(info.verb, info.resource, info.api_group)
                raise error(405, details={})
            if info.resource_request:
                return self._resource(info, query, identity, body)
            return self._non_resource(info.path)
        except APIError as err:
            return _error_response(err)
        except Exception as exc:  # noqa: BLE001 - a bug in the fake still answers like a server
            return _error_response(internal_error(f"{type(exc).__name__}: {exc}"))

    def _non_resource(self, path: str) -> _Response:
        discovery = self.server.api.discovery
        accept = self.headers.get("Accept", "")
        # `/apis/` is kube-aggregator's plain APIGroupList handler (UnlistedHandle); only
        # `/apis` itself answers aggregated discovery
        aggregated = self.server.api.aggregated_discovery and path != "/apis/"
        path = path.rstrip("/") or "/"
        if path == "/version":
            return _json(200, discovery.version_info)
        if path in ("/healthz", "/livez", "/readyz"):
            return _Response(200, b"ok", "text/plain; charset=utf-8")
        if path == "/openapi/v3" or path.startswith("/openapi/v3/"):
            return _openapi_v3(path)
        if path in ("/api", "/apis"):
            if aggregated and _accepts_aggregated(accept):
                doc = discovery.aggregated_core() if path == "/api" else discovery.aggregated_apis()
                response = _json(200, doc, AGGREGATED_V2, **{"Cache-Control": "public"})
                etag = hashlib.sha512(response.body).hexdigest().upper()
                response.headers["Etag"] = f'"{etag}"'
                return response
            versions = discovery.api_versions() if path == "/api" else discovery.group_list()
            return _json(200, versions)
        parts = path.strip("/").split("/")
        resource_list = None
        if parts[0] == "api" and len(parts) == 2:
            resource_list = discovery.resource_list("", parts[1])
        elif parts[0] == "apis" and len(parts) == 3:
            resource_list = discovery.resource_list(parts[1], parts[2])
        if resource_list is not None:
            return _json(200, resource_list)
        if parts[0] == "apis" and len(parts) == 2:
            for group in discovery.group_list()["groups"]:
                if group["name"] == parts[1]:
                    return _json(200, {"kind": "APIGroup", "apiVersion": "v1", **group})
        return _Response(404, b"404 page not found\n", "text/plain; charset=utf-8")

    def _resource(
        self, info: RequestInfo, query: dict[str, str], identity: Identity, body: bytes
    ) -> _Response:
        api = self.server.api
        discovery = api.discovery
        rtype = discovery.resource(info.api_group, info.api_version, info.resource)
        if rtype is None:
            if not discovery.serves(info.api_group, info.api_version):
                return _Response(404, b"404 page not found\n", "text/plain; charset=utf-8")
            raise path_not_found()
        self._authorize(info, identity)
        if self.command == "POST":  # only the SubjectAccessReview gets here
            return self._subject_access_review(body)
        if info.verb not in rtype.verbs:
            raise method_not_supported(info.verb, rtype.plural, rtype.group)
        if info.subresource and (
            info.subresource != "status" or info.subresource not in rtype.subresources
        ):
            raise path_not_found()
        namespace = info.namespace if rtype.namespaced else ""
        if rtype.plural == "namespaces":
            namespace = ""
        if info.verb == "get":
            return _json(200, api.store.get(rtype, namespace, info.name))
        options = _list_options(query)
        if info.verb == "watch":
            return self._watch(rtype, namespace, options)
        return _json(200, api.store.list(rtype, namespace, options))

    def _dry_run_apply(
        self, info: RequestInfo, query: dict[str, str], identity: Identity, body: bytes
    ) -> _Response:
        """``PATCH`` apply with ``dryRun=All``: authorized as ``patch`` (a 403 in the
        server's wording otherwise), then answered from the recordings
        (tests.support.apiserver.dryrun) with ``200`` and the object the server would have
        stored."""
        api = self.server.api
        rtype = (
            api.discovery.resource(info.api_group, info.api_version, info.resource)
            if info.resource_request
            else None
        )
        if rtype is None or not info.name:
            raise path_not_found()
        self._authorize(info, identity)
        if info.verb not in rtype.verbs or info.subresource:
            raise method_not_supported(info.verb, rtype.plural, rtype.group)
        dryrun.check_options(query)
        sent = dryrun.parse_body(body)
        try:
            live = api.store.get(rtype, info.namespace if rtype.namespaced else "", info.name)
        except APIError:  # a real server would create it (201); nothing recorded does that
            live = None
        return _json(200, dryrun.replay(api.recordings, query, sent, live))

    def _authorize(self, info: RequestInfo, identity: Identity) -> None:
        api = self.server.api
        attrs = Attributes(
            user=identity.user,
            groups=identity.groups,
            verb=info.verb,
            namespace=info.namespace,
            group=info.api_group,
            resource=info.resource,
            subresource=info.subresource,
            name=info.name,
            path=info.path,
        )
        if not authorize_identity(identity, attrs, api.rbac).allowed:
            raise forbidden(
                identity.user,
                info.verb,
                info.resource,
                info.api_group,
                info.namespace,
                info.name or None,
                info.subresource,
            )

    def _watch(self, rtype: ResourceType, namespace: str, options: ListOptions) -> _Response:
        events = list(self.server.api.store.watch_events(rtype, namespace, options))
        lines = [json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in events]
        return _Response(200, b"", stream=lines)

    def _subject_access_review(self, body: bytes) -> _Response:
        try:
            review = json.loads(body or b"{}")
        except ValueError as exc:
            raise bad_request(f"error decoding request body: {exc}") from exc
        if not isinstance(review, dict):
            raise bad_request("error decoding request body: not an object")
        spec = review.get("spec") or {}
        resource_attrs = spec.get("resourceAttributes")
        non_resource_attrs = spec.get("nonResourceAttributes")
        if not resource_attrs and not non_resource_attrs:
            raise error(
                422,
                'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: '
                'Invalid value: "null": exactly one of nonResourceAttributes or '
                "resourceAttributes must be specified",
                details={"group": "authorization.k8s.io", "kind": "SubjectAccessReview"},
            )
        if not spec.get("user") and not spec.get("groups"):
            raise error(
                422,
                'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid '
                'value: "": at least one of user or group must be specified',
                details={"group": "authorization.k8s.io", "kind": "SubjectAccessReview"},
            )
        user = str(spec.get("user") or "")
        groups = tuple(spec.get("groups") or ())
        if resource_attrs:
            attrs = Attributes(
                user=user,
                groups=groups,
                verb=str(resource_attrs.get("verb", "")),
                namespace=str(resource_attrs.get("namespace", "")),
                group=str(resource_attrs.get("group", "")),
                resource=str(resource_attrs.get("resource", "")),
                subresource=str(resource_attrs.get("subresource", "")),
                name=str(resource_attrs.get("name", "")),
            )
        else:
            assert isinstance(non_resource_attrs, dict)
            attrs = Attributes(
                user=user,
                groups=groups,
                verb=str(non_resource_attrs.get("verb", "")),
                resource_request=False,
                path=str(non_resource_attrs.get("path", "")),
            )
        api = self.server.api
        decision = api.webhook(attrs) if api.webhook is not None else None
        if decision is None:
            decision = api.rbac.authorize(attrs)
        status: dict[str, Any] = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        ordered_spec = {
            k: spec[k]
            for k in (
                "resourceAttributes",
                "nonResourceAttributes",
                "user",
                "groups",
                "extra",
                "uid",
            )
            if k in spec
        }
        manager = self.headers.get("User-Agent", "").split("/")[0] or "unknown"
        now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        answer = {
            "kind": "SubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1",
            "metadata": {
                "creationTimestamp": None,
                "managedFields": [
                    {
                        "manager": manager,
                        "operation": "Update",
                        "apiVersion": "authorization.k8s.io/v1",
                        "time": now,
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:spec": _fields_v1(ordered_spec, top=True)},
                    }
                ],
            },
            "spec": ordered_spec,
            "status": status,
        }
        return _json(201, answer)


#: The recorded OpenAPI v3 documents the server has (testdata/apiserver/openapi-0*.json), by key.
_OPENAPI_DOCS = {"apis/apps/v1": "openapi-02-v3-apis-apps-v1.json"}


def _openapi_v3(path: str) -> _Response:
    """``/openapi/v3``: the recorded index reduced to the documents in testdata (served as
    ``text/plain`` like the real server), and those documents (``public, immutable``)."""
    data_dir = Path(__file__).resolve().parents[3] / "testdata" / "apiserver"
    if path == "/openapi/v3":
        index = json.loads((data_dir / "openapi-01-v3-index.json").read_text())
        paths = {k: v for k, v in index["paths"].items() if k in _OPENAPI_DOCS}
        body = json.dumps({"paths": paths}, separators=(",", ":")).encode()
        return _Response(200, body, "text/plain; charset=utf-8")
    name = _OPENAPI_DOCS.get(path.removeprefix("/openapi/v3/"))
    if name is None:
        return _Response(404, b"404 page not found\n", "text/plain; charset=utf-8")
    return _Response(
        200,
        (data_dir / name).read_bytes(),
        "application/json",
        {"Cache-Control": "public, immutable"},
    )


def _fields_v1(value: Mapping[str, Any], *, top: bool = False) -> dict[str, Any]:
    """The managedFields ``fieldsV1`` set of a mapping (``.`` marks nested objects)."""
    out: dict[str, Any] = {} if top else {".": {}}
    for key in sorted(value):
        child = value[key]
        out[f"f:{key}"] = _fields_v1(child) if isinstance(child, Mapping) else {}
    return out


def _list_options(query: Mapping[str, str]) -> ListOptions:
    limit_text = query.get("limit", "") or "0"
    try:
        limit = int(limit_text)
    except ValueError as exc:
        raise bad_request(f'invalid limit "{limit_text}": must be an integer') from exc
    return ListOptions(
        label_selector=query.get("labelSelector", ""),
        field_selector=query.get("fieldSelector", ""),
        limit=max(limit, 0),
        continue_token=query.get("continue", ""),
        resource_version=query.get("resourceVersion", ""),
        resource_version_match=query.get("resourceVersionMatch", ""),
    )


__all__ = [
    "AccessRule",
    "Fault",
    "Identity",
    "KubeAPIServer",
    "RequestInfo",
    "RequestRecord",
    "default_identities",
    "parse_request_info",
    "status_body",
]
