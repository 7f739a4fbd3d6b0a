"""The connection to one API server through kr8s: the only module that runs kr8s and httpx.

It connects (kubeconfig, context, the first ``/version``), runs kr8s's async API on a private
event loop in a thread of its own, sends each request with retries, and says every failure to
connect or authenticate as a ClusterError. The modules beside it build their requests on it,
one kind of request each (discovery, listing, reviews, dryrun), and only name httpx for the
type checker; responses never leave them.

kr8s 0.20 behaviours this module relies on or works around:

- ``Api.call_api(..., raise_for_status=False)`` hands back the response as is: we do our own
  status handling, so kr8s's re-authenticate-and-retry loop on 401/403 (three extra requests)
  does not run on LISTs, and 429/5xx are retried here (kr8s raises them at once).
- ``kr8s.asyncio.api()`` checks ``/version`` while connecting, always (and warns about
  versions it does not list as supported): the ``Api`` is built directly instead, and
  ``/version`` asked through ``Api.async_version()`` only when the discovery cache does not
  hold it; a 401 there comes back as ``kr8s.ServerError`` after kr8s's own three retries.
- ``Api.call_api`` joins ``base`` and ``url`` with a ``/``: ``/apis/`` is kube-aggregator's
  plain APIGroupList, not aggregated discovery, so a GET of ``base`` alone goes through kr8s's
  httpx session with the exact path.
- kr8s never closes its httpx session; :meth:`Transport.close` does (``Api._session``).
- ``Api.get()`` would follow ``continue`` itself, but gives no control over ``limit``, a 410
  restart or retries, so LISTs are built on ``call_api``.
- Its session's ``User-Agent`` is the Api's ``__version__`` (``kr8s/0.20.15``), read whenever
  the session is made (on the first request, again after re-authenticating): a subclass says
  gitdrift's (:func:`user_agent`), and is built as ``kr8s.asyncio.api()`` builds its own
  (``bypass_factory=True``, then awaited: auth, then ``/version``), so no request goes without it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import email.utils
import json
import math
import os
import platform
import random
import sys
import threading
import time
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import kr8s
import kr8s.asyncio

from kubectl_gitdrift.errors import ClusterError

__all__ = ["TRANSIENT", "Config", "Transport", "Unreadable", "user_agent"]

T = TypeVar("T")
SHUTDOWN_GRACE = 1.0
"""Seconds requests still running when the connection closes (LISTs started before a render
failed) may take to end before they are cancelled."""
TRANSIENT: tuple[type[BaseException], ...] = (
    httpx.TransportError,
    kr8s.APITimeoutError,
    asyncio.TimeoutError,
)
"""How a request fails short of an answer (dropped, refused, timed out): worth another try."""

#: Go's names for the machine's architecture (GOARCH), as kubectl's User-Agent gives it.
_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64",
           "i386": "386", "i686": "386", "armv7l": "arm", "ppc64le": "ppc64le",
           "s390x": "s390x"}  # fmt: skip


def user_agent(version: str) -> str:
    """Who sends every request, in kubectl's form (`kubectl/v1.36.0 (linux/amd64) kubernetes/…`):
    `kubectl-gitdrift/0.1.0 (linux/amd64) kr8s/0.20.15`, so that an operator tells gitdrift's
    reads from any other kr8s client's in the audit log."""
    goos = "windows" if sys.platform == "win32" else sys.platform.rstrip("0123456789")
    machine = platform.machine().lower()
    return (
        f"kubectl-gitdrift/{version} ({goos}/{_GOARCH.get(machine, machine)}) "
        f"kr8s/{kr8s.__version__}"
    )


class _Api(kr8s.asyncio.Api):
    """kr8s's Api, naming gitdrift (and kr8s) in the User-Agent of its session."""

    def __init__(self, agent: str, **kwargs: Any) -> None:
        self._agent = agent
        super().__init__(**kwargs)

    @property
    def __version__(self) -> str:
        return self._agent


@dataclass(frozen=True)
class Config:
    """How to reach the cluster and how patient to be with it."""

    kubeconfig: str | None = None
    context: str | None = None
    timeout: float = 30.0  # seconds per request
    retries: int = 4  # extra attempts on 429, 5xx, timeouts and dropped connections
    backoff: float = 0.5  # first retry delay; doubles each attempt
    max_backoff: float = 10.0
    max_retry_after: float = 30.0  # cap on a server's Retry-After
    concurrency: int = 8  # LISTs in flight at once
    page_size: int = 500  # LIST limit; continue tokens fetch the rest
    version: str = "0"  # gitdrift's, for the User-Agent (the run wing knows it)


class Unreadable(Exception):
    """No usable answer: an error status (in `status`), or 0 when every attempt failed at the
    transport level."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def check_kubeconfig(explicit: str | None) -> None:
    """A ClusterError naming the file when there is no kubeconfig to read, or it is not one;
    kr8s would say "Unable to find valid credentials" or print a bare missing key."""
    import yaml

    hint = (
        "pass --kubeconfig FILE (or set KUBECONFIG), or --snapshot PATH to work offline "
        "(in a pod, the pod's service account is used)"
    )
    if explicit:
        paths = [Path(explicit)]
    elif os.environ.get("KUBECONFIG"):
        paths = [Path(p) for p in os.environ["KUBECONFIG"].split(os.pathsep) if p]
    else:
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            return  # in a pod: kr8s uses the service account
        paths = [Path("~/.kube/config").expanduser()]
    present = [p for p in paths if p.is_file()]
    if not present:
        missing = " nor ".join(str(p) for p in paths)
        raise ClusterError(f"no kubeconfig: {missing} does not exist", hint=hint)
    for path in present:
        try:
            with path.open(encoding="utf-8") as f:
                doc = yaml.safe_load(f)
        except (OSError, UnicodeDecodeError) as exc:
            raise ClusterError(f"kubeconfig {path}: cannot read it: {exc}", hint=hint) from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f" (line {mark.line + 1})" if mark is not None else ""
            raise ClusterError(f"kubeconfig {path}: not valid YAML{at}", hint=hint) from None
        if doc is None and len(present) > 1:
            continue  # an empty file among several merged ones, as kubectl allows
        lone = len(present) == 1  # merged files may each hold a part (users in one, ...)
        if not isinstance(doc, dict) or (lone and not ("clusters" in doc or "contexts" in doc)):
            raise ClusterError(
                f"kubeconfig {path} is not a kubeconfig (no clusters or contexts)", hint=hint
            )


class Transport:
    """One kr8s connection and the event loop it runs on; counts the requests it sends."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None  # runs the loop, from the first request
        self.api: Any = None  # kr8s.asyncio.Api; never leaves the live wing
        self._sem: asyncio.Semaphore | None = None
        self.server = ""
        self.context = config.context or ""
        self.requests = 0
        self.version: dict[str, Any] = {}  # /version, once asked

    # ------------------------------------------------------------------ the loop
    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run `coro` on the loop's thread (started on first use)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._loop.run_forever, name="gitdrift-cluster", daemon=True
            )
            self._thread.start()
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.submit(coro).result()

    @property
    def slot(self) -> asyncio.Semaphore:
        """The bound on requests in flight at once (`Config.concurrency`), from connecting."""
        assert self._sem is not None
        return self._sem

    def close(self) -> None:
        """Cancel what is still running (LISTs started before an error), close the session,
        stop the loop's thread."""
        if self._loop.is_closed():
            return
        if self._thread is not None:
            with contextlib.suppress(Exception):
                self.submit(self._shutdown()).result(self.config.timeout)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(self.config.timeout)
            if self._thread.is_alive():
                return  # a daemon thread: it goes with the process
        self._loop.close()

    async def _shutdown(self) -> None:
        current = asyncio.current_task()
        pending = [t for t in asyncio.all_tasks() if t is not current]
        if pending:
            # requests already sent may end first, briefly: one cancelled while it connects
            # leaves its socket to the garbage collector (anyio's connect_tcp)
            await asyncio.wait(pending, timeout=min(self.config.timeout, SHUTDOWN_GRACE))
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await self._close_session()

    async def _close_session(self) -> None:
        # kr8s never closes its httpx session (0.20.15): do it, or sockets leak.
        session = getattr(self.api, "_session", None)
        if session is not None and not session.is_closed:
            await session.aclose()

    # ------------------------------------------------------------------ connecting
    @property
    def where(self) -> str:
        """`https://host:6443 (context admin)`, for messages."""
        server = self.server or "the API server"
        return f"{server} (context {self.context})" if self.context else server

    async def connect(self, *, check: bool = True) -> None:
        """Load the kubeconfig and, with `check`, ask `/version` (kept in `version`);
        ClusterError if either fails. Without it nothing is sent (a discovery cache holds the
        version): the first request is then the first LIST."""
        cfg = self.config
        self._sem = asyncio.Semaphore(max(1, cfg.concurrency))
        check_kubeconfig(cfg.kubeconfig)
        try:
            # kr8s.asyncio.api() would also check /version, whatever the cache says
            api = _Api(
                user_agent(cfg.version),
                url=None,
                kubeconfig=cfg.kubeconfig,
                serviceaccount=None,
                namespace=None,
                context=cfg.context,
                bypass_factory=True,
            )
            await asyncio.wait_for(api.auth, cfg.timeout)
        except kr8s.ServerError as exc:
            raise self._server_error(exc) from None
        except TRANSIENT as exc:
            raise self._unreachable(exc) from None
        except (ValueError, KeyError, TypeError, AttributeError, OSError) as exc:
            # a kubeconfig of the wrong shape breaks kr8s's parser in any of these ways
            where = cfg.kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
            context = f"context {cfg.context!r} of" if cfg.context else "credentials from"
            reason = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ClusterError(
                f"cannot load {context} kubeconfig {where}: {reason}",
                hint="check --kubeconfig/--context (kubectl config get-contexts), "
                "or pass --snapshot PATH to work offline (in a pod without a kubeconfig, "
                "the pod's service account is used)",
            ) from None
        self.api = api
        api.timeout = cfg.timeout
        self.server = str(api.auth.server or "")
        self.context = str(api.auth.active_context or cfg.context or "")
        if check:
            await self.check_version()

    async def check_version(self) -> dict[str, Any]:
        """`/version`, as kr8s checks it when connecting (kept in `version`); ClusterError
        if there is no answer."""
        self.requests += 1
        try:
            version = await asyncio.wait_for(self.api.async_version(), self.config.timeout)
        except kr8s.ServerError as exc:
            raise self._server_error(exc) from None
        except TRANSIENT as exc:
            raise self._unreachable(exc) from None
        self.version = version if isinstance(version, dict) else {}
        return self.version

    async def essential(self, coro: Coroutine[Any, Any, T], what: str) -> T:
        """The answer of a request the run cannot go without (`what`: `/version`,
        `discovery`), or a ClusterError saying why there is none."""
        try:
            return await asyncio.wait_for(coro, self.config.timeout * 2)
        except kr8s.ServerError as exc:
            raise self._server_error(exc, what) from None
        except Unreadable as exc:
            if exc.status == 401:
                raise self.unauthorized() from None
            raise ClusterError(
                f"{self.where}: {exc}", hint="check the cluster's health: kubectl get --raw /readyz"
            ) from None
        except TRANSIENT as exc:
            raise self._unreachable(exc) from None

    # ------------------------------------------------------------------ errors
    def unauthorized(self) -> ClusterError:
        context = self.context or "the current context"
        return ClusterError(
            f"{self.where} rejected the credentials (401 Unauthorized)",
            hint=f"log in again or refresh the token of {context}, then check with: "
            f"kubectl --context {self.context or '<context>'} auth whoami",
        )

    def _server_error(self, exc: kr8s.ServerError, what: str = "") -> ClusterError:
        response = exc.response
        if response is not None:
            self.server = self.server or _origin(response.request.url)
        code = response.status_code if response is not None else 0
        if code == 401:
            return self.unauthorized()
        message = status_message(response) if response is not None else str(exc)
        return ClusterError(
            f"{self.where}: {what + ' ' if what else ''}failed with {code}: {message}",
            hint="check the cluster's health: kubectl get --raw /readyz",
        )

    def _unreachable(self, exc: BaseException) -> ClusterError:
        request = getattr(exc, "request", None) if isinstance(exc, httpx.HTTPError) else None
        with contextlib.suppress(RuntimeError):
            if request is not None:
                self.server = self.server or _origin(request.url)
        reason = (
            f"no answer within {self.config.timeout:g}s"
            if isinstance(exc, (kr8s.APITimeoutError, asyncio.TimeoutError, httpx.TimeoutException))
            else (str(exc) or type(exc).__name__)
        )
        return self.unreachable(reason)

    def unreachable(self, reason: str) -> ClusterError:
        return ClusterError(
            f"cannot reach {self.where}: {reason}",
            hint="check the network/VPN and the context (kubectl config current-context), "
            "or pass --snapshot PATH to work offline",
        )

    # ------------------------------------------------------------------ requests
    async def get(
        self,
        base: str,
        *,
        version: str = "",
        namespace: str = "",
        url: str = "",
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """One GET with retries on 429/5xx (honouring Retry-After), timeouts and drops.

        Returns the final response, whatever its status; raises Unreadable when every
        attempt failed at the transport level."""
        return await self.request(
            "GET",
            base,
            version=version,
            namespace=namespace,
            url=url,
            params=params,
            headers=headers,
        )

    async def request(
        self,
        method: str,
        base: str,
        *,
        version: str = "",
        namespace: str = "",
        url: str = "",
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
    ) -> httpx.Response:
        """One request with retries on 429/5xx (honouring Retry-After), timeouts and drops;
        only for requests that change nothing (GETs, dry-runs), which are safe to repeat."""
        cfg = self.config
        attempt = 0
        while True:
            self.requests += 1
            try:
                response = await asyncio.wait_for(
                    self._call(
                        method, base, version, namespace, url, params or {}, headers, content
                    ),
                    cfg.timeout,
                )
            except TRANSIENT as exc:
                if attempt >= cfg.retries:
                    timed_out = isinstance(
                        exc, (kr8s.APITimeoutError, asyncio.TimeoutError, httpx.TimeoutException)
                    )
                    why = (
                        f"no answer within {cfg.timeout:g}s"
                        if timed_out
                        else f"connection failed ({type(exc).__name__}: {exc})"
                    )
                    raise Unreadable(f"{why}, {attempt + 1} attempts") from None
                await asyncio.sleep(self.backoff(attempt))
                attempt += 1
                continue
            if (response.status_code == 429 or response.status_code >= 500) and (
                attempt < cfg.retries
            ):
                await asyncio.sleep(self.retry_after(response) or self.backoff(attempt))
                attempt += 1
                continue
            return response

    async def _call(
        self,
        method: str,
        base: str,
        version: str,
        namespace: str,
        url: str,
        params: Mapping[str, str],
        headers: Mapping[str, str] | None,
        content: bytes | None = None,
    ) -> httpx.Response:
        extra: dict[str, Any] = {"headers": dict(headers)} if headers else {}
        if content is not None:
            extra["content"] = content
        if not (version or namespace or url):
            # kr8s would send `base/`: `/apis/` is not `/apis` (no aggregated discovery there)
            if self.api._session is None or self.api._session.is_closed:
                await self.api._create_session()
            if self.api.auth.tls_server_name:
                extra["extensions"] = {"sni_hostname": self.api.auth.tls_server_name}
            response = await self.api._session.request(method, base, params=dict(params), **extra)
            return response  # type: ignore[no-any-return]
        async with self.api.call_api(
            method,
            version=version,
            base=base,
            namespace=namespace or None,
            url=url,
            raise_for_status=False,
            params=dict(params),
            **extra,
        ) as response:
            await response.aread()
            return response  # type: ignore[no-any-return]

    async def get_json(
        self, base: str, url: str = "", params: Mapping[str, str] | None = None
    ) -> Any:
        response = await self.get(base, url=url, params=params)
        if response.status_code != 200:
            raise Unreadable(
                f"GET {base}/{url} answered {response.status_code}: {status_message(response)}",
                response.status_code,
            )
        return response.json()

    def backoff(self, attempt: int) -> float:
        delay = min(self.config.max_backoff, math.ldexp(self.config.backoff, attempt))
        return delay * random.uniform(0.8, 1.2)  # jitter, not crypto

    def retry_after(self, response: httpx.Response) -> float | None:
        value = response.headers.get("Retry-After", "").strip()
        if not value:
            return None
        try:
            seconds = float(value)
        except ValueError:
            parsed = email.utils.parsedate_to_datetime(value) if value else None
            if parsed is None:
                return None
            seconds = parsed.timestamp() - time.time()
        return float(max(0.0, min(seconds, self.config.max_retry_after)))


def retrieved(task: asyncio.Task[Any]) -> None:
    """Marks a task's error as seen (a connection that failed says why itself)."""
    if not task.cancelled():
        task.exception()


async def in_order(*coros: Coroutine[Any, Any, Any]) -> list[Any]:
    """Run `coros` concurrently; the first to fail in argument order is raised (the others
    run to their end), as if they had run one after another."""
    results = await asyncio.gather(*coros, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def _origin(url: httpx.URL) -> str:
    return f"{url.scheme}://{url.netloc.decode()}"


def status_message(response: httpx.Response) -> str:
    """The `message` of a Status body, or the first line of whatever else came back."""
    try:
        body = response.json()
    except (ValueError, json.JSONDecodeError, httpx.ResponseNotRead):
        try:
            text = response.text.strip()
        except httpx.ResponseNotRead:
            return response.reason_phrase
        return text.splitlines()[0][:200] if text else response.reason_phrase
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return response.reason_phrase
