"""Live cluster state through kr8s: the only module that imports kr8s.

A translator, not a second model: every object leaves as a plain ``dict`` (kr8s's raw form),
never as a kr8s object. Reads only: discovery, ``/version``, ``/openapi/v3``, and LISTs (never
one GET per object), plus SubjectAccessReviews; and, only when asked (``--server-dry-run``),
Argo CD's server-side apply dry-run (``dryRun=All``: the server persists nothing). kr8s's async
API runs on a private event loop owned by :class:`Cluster`, in a thread of its own, so callers
stay synchronous, and LISTs started with :meth:`Cluster.start_fetch` go on while the caller
works (renders).

kr8s 0.20 behaviours this module relies on or works around:

- ``Api.call_api(..., raise_for_status=False)`` hands back the response as is: we do our own
  status handling, so kr8s's re-authenticate-and-retry loop on 401/403 (three extra requests)
  does not run on LISTs, and 429/5xx are retried here (kr8s raises them at once).
- ``kr8s.asyncio.api()`` checks ``/version`` while connecting; a 401 there comes back as
  ``kr8s.ServerError`` after kr8s's own three retries. It warns (``UserWarning``) about server
  versions it does not list as supported: silenced, the version is recorded anyway.
- kr8s never closes its httpx session; :meth:`Cluster.close` does (``Api._session``).
- ``Api.get()`` would follow ``continue`` itself, but gives no control over ``limit``, a 410
  restart or retries, so LISTs are built on ``call_api``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import email.utils
import json
import math
import os
import random
import re
import threading
import time
import warnings
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlsplit

import httpx
import kr8s
import kr8s.asyncio

from kubectl_gitdrift.diagnose import rbac
from kubectl_gitdrift.errors import ClusterError

__all__ = ["Cluster", "Config", "Discovery", "DryRun", "Kind", "ListResult", "Query"]

T = TypeVar("T")
SSA_MANAGER = "argocd-controller"
"""The field manager Argo CD applies and dry-runs with (argo-cd common.ArgoCDSSAManager)."""
APPLY_PATCH = "application/apply-patch+yaml"
SHUTDOWN_GRACE = 1.0
"""Seconds requests still running when the connection closes (LISTs started before a render
failed) may take to end before they are cancelled."""
_AGGREGATED = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
)


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


# --------------------------------------------------------------------------- discovery


@dataclass(frozen=True, order=True)
class Kind:
    """One served resource type (a row of discovery)."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    verbs: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def resource(self) -> str:
        """kubectl's name for it: `deployments.apps`, `services`."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def to_dict(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.plural,
            "namespaced": self.namespaced,
            "verbs": list(self.verbs),
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Kind:
        """From kr8s's `api_resources()` rows (`version` is the group-version) or `to_dict`."""
        group_version = str(raw.get("apiVersion") or raw.get("version") or "")
        group, _, version = group_version.rpartition("/")
        return cls(
            group=group,
            version=version,
            kind=str(raw.get("kind") or ""),
            plural=str(raw.get("name") or ""),
            namespaced=bool(raw.get("namespaced")),
            verbs=tuple(str(v) for v in raw.get("verbs") or ()),
        )


class Discovery:
    """What the server serves: (group, kind) → its versions, preferred first."""

    def __init__(self, kinds: Iterable[Kind]) -> None:
        self._by_gk: dict[tuple[str, str], list[Kind]] = {}
        for kind in kinds:
            if not kind.kind or "/" in kind.plural:
                continue
            served = self._by_gk.setdefault((kind.group, kind.kind), [])
            if all(k.version != kind.version for k in served):
                served.append(kind)
        for served in self._by_gk.values():
            served.sort(key=lambda k: _version_priority(k.version))

    @classmethod
    def from_dicts(cls, rows: Iterable[Mapping[str, Any]]) -> Discovery:
        return cls(Kind.from_dict(r) for r in rows)

    def find(self, group: str, kind: str, version: str = "") -> Kind | None:
        """The served version `version` if there is one, else the preferred version."""
        served = self._by_gk.get((group, kind))
        if not served:
            return None
        return next((k for k in served if k.version == version), served[0])

    def namespaced(self, group: str, kind: str) -> bool | None:
        found = self.find(group, kind)
        return None if found is None else found.namespaced

    def kinds(self) -> list[Kind]:
        return sorted(k for served in self._by_gk.values() for k in served)


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def _version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version priority, highest first: v2 < v1 < v2beta1 < v1beta1 < v1alpha1 <
    anything else (alphabetically)."""
    match = _VERSION.match(version)
    if match is None:
        return (3, 0, 0, version)
    major, stage, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -int(major), -int(minor or 0), version)


# --------------------------------------------------------------------------- LIST


@dataclass(frozen=True, order=True)
class Query:
    """One LIST: a kind in one namespace ("" = cluster-scoped, or every namespace)."""

    kind: Kind
    namespace: str = ""
    label_selector: str = ""
    field_selector: str = ""

    def describe(self) -> str:
        where = (
            f"in namespace {self.namespace}"
            if self.namespace
            else ("in all namespaces" if self.kind.namespaced else "(cluster-scoped)")
        )
        selectors = ",".join(s for s in (self.label_selector, self.field_selector) if s)
        return f"{self.kind.resource} {where}" + (f" [{selectors}]" if selectors else "")


@dataclass(frozen=True)
class ListResult:
    """What one LIST gave: the items (with apiVersion and kind set), or why it could not."""

    query: Query
    items: tuple[dict[str, Any], ...] = ()
    error: str = ""  # non-empty: the kind/namespace could not be read (a one-line reason)
    status: int = 0  # HTTP status behind `error` (403, 500 …), 0 for transport failures
    not_found: bool = False  # 404: the kind is not served (any more)
    requests: int = 0


@dataclass(frozen=True)
class DryRun:
    """What one server-side apply dry-run gave: the object the server would store, or why
    there is none."""

    sent: Mapping[str, Any]  # the object applied
    predicted: dict[str, Any] | None = None  # the server's answer (with managedFields)
    error: str = ""  # non-empty: no prediction (a one-line reason)
    status: int = 0  # HTTP status (403 when `patch` is not allowed), 0 for transport failures
    requests: int = 0


class _Unreadable(Exception):
    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class _Expired(Exception):
    """410 Gone on a continue token."""


# --------------------------------------------------------------------------- the connection


class Cluster:
    """A read-only connection to one cluster (context manager; synchronous facade); the one
    PATCH it can send is a dryRun=All apply (:meth:`dry_run_apply`)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._early_queries: list[Query] = []
        self._early: asyncio.Task[list[ListResult]] | None = None
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None  # runs the loop, from the first request
        self._api: Any = None  # kr8s.asyncio.Api; never leaves this module
        self._sem: asyncio.Semaphore | None = None
        self.server = ""
        self.context = config.context or ""
        self.version: dict[str, Any] = {}
        self.discovery = Discovery(())
        self.requests = 0

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> Cluster:  # noqa: PYI034 - py3.10 has no typing.Self
        try:
            self._run(self._connect())
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Cancel what is still running (LISTs started before an error), close the session,
        stop the loop's thread."""
        if self._loop.is_closed():
            return
        if self._thread is not None:
            with contextlib.suppress(Exception):
                self._submit(self._shutdown()).result(self.config.timeout)
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

    def _submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run `coro` on the loop's thread (started on first use)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._loop.run_forever, name="gitdrift-cluster", daemon=True
            )
            self._thread.start()
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._submit(coro).result()

    @property
    def where(self) -> str:
        """`https://host:6443 (context admin)`, for messages."""
        server = self.server or "the API server"
        return f"{server} (context {self.context})" if self.context else server

    async def _connect(self) -> None:
        cfg = self.config
        self._sem = asyncio.Semaphore(max(1, cfg.concurrency))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # kr8s's supported-version warning
                api = await asyncio.wait_for(
                    kr8s.asyncio.api(kubeconfig=cfg.kubeconfig, context=cfg.context),
                    cfg.timeout,
                )
        except kr8s.ServerError as exc:
            raise self._server_error(exc) from None
        except (httpx.TransportError, kr8s.APITimeoutError, asyncio.TimeoutError) as exc:
            raise self._unreachable(exc) from None
        except (ValueError, KeyError, TypeError, AttributeError, OSError) as exc:
            # a kubeconfig of the wrong shape breaks kr8s's parser in any of these ways
            where = cfg.kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
            context = f"context {cfg.context!r} of" if cfg.context else "credentials from"
            raise ClusterError(
                f"cannot load {context} kubeconfig {where}: {exc}",
                hint="check --kubeconfig/--context (kubectl config get-contexts), "
                "or pass --snapshot PATH to work offline (in a pod without a kubeconfig, "
                "the pod's service account is used)",
            ) from None
        self._api = api
        api.timeout = cfg.timeout
        self.server = str(api.auth.server or "")
        self.context = str(api.auth.active_context or cfg.context or "")
        if self._early_queries:
            self._early = asyncio.ensure_future(self._list_all(self._early_queries))
            self._early.add_done_callback(_retrieved)  # raised by early_results(), if asked
        # /version, /api and /apis at once; a failure is said as if they ran in that order
        self.version, kinds = await _in_order(
            self._essential(self._get_json("/version"), "/version"),
            self._essential(self._aggregated_discovery(), "discovery"),
        )
        if kinds is None:  # no aggregated discovery (before 1.30): kr8s walks every group
            kinds = [Kind.from_dict(r) for r in await self._essential(api.api_resources(), "")]
        self.discovery = Discovery(kinds)

    async def _aggregated_discovery(self) -> list[Kind] | None:
        """Every group's resources in two requests (`/api`, `/apis` as APIGroupDiscoveryList,
        what kubectl 1.30+ asks for); None when the server does not speak it."""
        kinds: list[Kind] = []
        responses = await _in_order(
            *(self._get(base, headers={"Accept": _AGGREGATED}) for base in ("/api", "/apis"))
        )
        for base, response in zip(("/api", "/apis"), responses, strict=True):
            if response.status_code != 200:
                raise _Unreadable(
                    f"GET {base} answered {response.status_code}: {_status_message(response)}",
                    response.status_code,
                )
            if "as=APIGroupDiscoveryList" not in response.headers.get("content-type", ""):
                return None
            for group in response.json().get("items") or ():
                name = str((group.get("metadata") or {}).get("name") or "")
                for version in group.get("versions") or ():
                    for res in version.get("resources") or ():
                        kind = (res.get("responseKind") or {}).get("kind")
                        if not kind:
                            continue
                        kinds.append(
                            Kind(
                                group=name,
                                version=str(version.get("version") or ""),
                                kind=str(kind),
                                plural=str(res.get("resource") or ""),
                                namespaced=res.get("scope") == "Namespaced",
                                verbs=tuple(str(v) for v in res.get("verbs") or ()),
                            )
                        )
        return kinds

    async def _essential(self, coro: Coroutine[Any, Any, T], what: str) -> T:
        try:
            return await asyncio.wait_for(coro, self.config.timeout * 2)
        except kr8s.ServerError as exc:
            raise self._server_error(exc, what) from None
        except _Unreadable as exc:
            if exc.status == 401:
                raise self._unauthorized() from None
            raise ClusterError(
                f"{self.where}: {exc}", hint="check the cluster's health: kubectl get --raw /readyz"
            ) from None
        except (httpx.TransportError, kr8s.APITimeoutError, asyncio.TimeoutError) as exc:
            raise self._unreachable(exc) from None

    async def _close_session(self) -> None:
        # kr8s never closes its httpx session (0.20.15): do it, or sockets leak.
        session = getattr(self._api, "_session", None)
        if session is not None and not session.is_closed:
            await session.aclose()

    # ------------------------------------------------------------------ errors
    def _unauthorized(self) -> ClusterError:
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
            return self._unauthorized()
        message = _status_message(response) if response is not None else str(exc)
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
        return ClusterError(
            f"cannot reach {self.where}: {reason}",
            hint="check the network/VPN and the context (kubectl config current-context), "
            "or pass --snapshot PATH to work offline",
        )

    # ------------------------------------------------------------------ requests
    async def _get(
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

        Returns the final response, whatever its status; raises _Unreadable when every
        attempt failed at the transport level."""
        return await self._request(
            "GET",
            base,
            version=version,
            namespace=namespace,
            url=url,
            params=params,
            headers=headers,
        )

    async def _request(
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
            except (
                httpx.TransportError,
                kr8s.APITimeoutError,
                asyncio.TimeoutError,
            ) as exc:
                if attempt >= cfg.retries:
                    timed_out = isinstance(
                        exc, (kr8s.APITimeoutError, asyncio.TimeoutError, httpx.TimeoutException)
                    )
                    why = (
                        f"no answer within {cfg.timeout:g}s"
                        if timed_out
                        else f"connection failed ({type(exc).__name__}: {exc})"
                    )
                    raise _Unreadable(f"{why}, {attempt + 1} attempts") from None
                await asyncio.sleep(self._backoff(attempt))
                attempt += 1
                continue
            if (response.status_code == 429 or response.status_code >= 500) and (
                attempt < cfg.retries
            ):
                await asyncio.sleep(self._retry_after(response) or self._backoff(attempt))
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
        async with self._api.call_api(
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

    async def _get_json(
        self, base: str, url: str = "", params: Mapping[str, str] | None = None
    ) -> Any:
        response = await self._get(base, url=url, params=params)
        if response.status_code != 200:
            raise _Unreadable(
                f"GET {base}/{url} answered {response.status_code}: {_status_message(response)}",
                response.status_code,
            )
        return response.json()

    def _backoff(self, attempt: int) -> float:
        delay = min(self.config.max_backoff, math.ldexp(self.config.backoff, attempt))
        return delay * random.uniform(0.8, 1.2)  # jitter, not crypto

    def _retry_after(self, response: httpx.Response) -> float | None:
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

    # ------------------------------------------------------------------ LIST
    def review(
        self, user: str, groups: Sequence[str], questions: Sequence[rbac.Question]
    ) -> list[rbac.Answer | None]:
        """Ask the API server, one SubjectAccessReview per question (the only POST gitdrift
        makes; it creates nothing). None where the server would not answer (e.g. we may not
        create SubjectAccessReviews): the caller falls back to evaluating RBAC offline."""
        return self._run(self._review_all(user, groups, questions))

    async def _review_all(
        self, user: str, groups: Sequence[str], questions: Sequence[rbac.Question]
    ) -> list[rbac.Answer | None]:
        return list(await asyncio.gather(*(self._review(user, groups, q) for q in questions)))

    async def _review(
        self, user: str, groups: Sequence[str], question: rbac.Question
    ) -> rbac.Answer | None:
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": user,
                "groups": list(groups),
                "resourceAttributes": question.attributes(),
            },
        }
        assert self._sem is not None
        async with self._sem:
            for attempt in range(self.config.retries + 1):
                self.requests += 1
                try:
                    response = await asyncio.wait_for(self._post_review(body), self.config.timeout)
                except (httpx.TransportError, kr8s.APITimeoutError, asyncio.TimeoutError):
                    await asyncio.sleep(self._backoff(attempt))
                    continue
                if response.status_code in (200, 201):
                    status = (response.json() or {}).get("status") or {}
                    return rbac.Answer(
                        question,
                        bool(status.get("allowed")),
                        str(status.get("reason") or ""),
                        how="SubjectAccessReview",
                    )
                if response.status_code == 429 or response.status_code >= 500:
                    await asyncio.sleep(self._retry_after(response) or self._backoff(attempt))
                    continue
                return None
        return None

    async def _post_review(self, body: Mapping[str, Any]) -> httpx.Response:
        async with self._api.call_api(
            "POST",
            version="v1",
            base="/apis/authorization.k8s.io",
            url="subjectaccessreviews",
            raise_for_status=False,
            content=json.dumps(body),
            headers={"Content-Type": "application/json"},
        ) as response:
            await response.aread()
            return response  # type: ignore[no-any-return]

    def fetch(
        self, queries: Sequence[Query], done: Callable[[ListResult], None] | None = None
    ) -> list[ListResult]:
        """Run the LISTs concurrently (bounded); results come back in `queries` order. `done`
        hears of each result as it arrives (the CLI's progress line counts them), from the
        loop's thread."""
        return self.start_fetch(queries, done).result()

    def list_on_connect(self, queries: Sequence[Query]) -> None:
        """LISTs (of kinds the caller expects the server to serve) to send as soon as kr8s
        has connected, while discovery runs; call before entering. :meth:`early_results`."""
        self._early_queries = list(queries)

    def early_results(self) -> list[ListResult]:
        """The results of the :meth:`list_on_connect` LISTs, in their order."""
        if self._early is None:
            return []
        early = self._early

        async def wait() -> list[ListResult]:
            return await early

        return self._run(wait())

    def start_fetch(
        self, queries: Sequence[Query], done: Callable[[ListResult], None] | None = None
    ) -> concurrent.futures.Future[list[ListResult]]:
        """:meth:`fetch`, started: the LISTs run while the caller goes on (renders); the
        future's result is what `fetch` returns, or its error."""
        return self._submit(self._list_all(queries, done))

    async def _list_all(
        self, queries: Sequence[Query], done: Callable[[ListResult], None] | None = None
    ) -> list[ListResult]:
        async def one(query: Query) -> ListResult:
            result = await self._list(query)
            if done is not None:
                done(result)
            return result

        return list(await asyncio.gather(*(one(q) for q in queries)))

    async def _list(self, query: Query) -> ListResult:
        assert self._sem is not None
        async with self._sem:
            before = self.requests
            try:
                try:
                    items = await self._pages(query)
                except _Expired:  # 410 on a continue token: start over once, consistently
                    items = await self._pages(query)
            except _Expired:
                return ListResult(
                    query,
                    error=f"cannot list {query.describe()}: continue token expired twice (410)",
                    status=410,
                    requests=self.requests - before,
                )
            except _Unreadable as exc:
                if exc.status == 401:
                    raise self._unauthorized() from None
                if exc.status == 404:
                    return ListResult(query, not_found=True, requests=self.requests - before)
                return ListResult(
                    query,
                    error=f"cannot list {query.describe()}: {exc}",
                    status=exc.status,
                    requests=self.requests - before,
                )
            return ListResult(query, tuple(items), requests=self.requests - before)

    async def _pages(self, query: Query) -> list[dict[str, Any]]:
        kind = query.kind
        params: dict[str, str] = {"limit": str(max(1, self.config.page_size))}
        if query.label_selector:
            params["labelSelector"] = query.label_selector
        if query.field_selector:
            params["fieldSelector"] = query.field_selector
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            page = dict(params, **({"continue": token} if token else {}))
            response = await self._get(
                "/apis" if kind.group else "/api",
                version=kind.api_version,
                namespace=query.namespace,
                url=kind.plural,
                params=page,
            )
            code = response.status_code
            if code == 410 and token:
                raise _Expired
            if code == 403:
                raise _Unreadable(
                    f"403 Forbidden: RBAC does not allow verb 'list' on {kind.resource}"
                    + (f" in namespace {query.namespace}" if query.namespace else ""),
                    403,
                )
            if code != 200:
                phrase = f"{code} {response.reason_phrase}".strip()
                tries = " after retries" if code == 429 or code >= 500 else ""
                raise _Unreadable(f"{phrase}{tries}: {_status_message(response)}", code)
            try:
                body = response.json()
            except ValueError:
                raise _Unreadable("the server answered something that is not JSON") from None
            if not isinstance(body, dict) or not isinstance(body.get("items"), list):
                raise _Unreadable("the server's answer is not a list")
            for item in body["items"]:
                if isinstance(item, dict):
                    items.append({"apiVersion": kind.api_version, "kind": kind.kind, **item})
            token = str((body.get("metadata") or {}).get("continue") or "")
            if not token:
                return items

    # ------------------------------------------------------------------ apply dry-run
    def dry_run_apply(
        self, objects: Sequence[Mapping[str, Any]], *, manager: str = SSA_MANAGER
    ) -> list[DryRun]:
        """Ask the API server what applying each object would store, exactly as Argo CD's
        Server-Side Diff asks it: a server-side apply PATCH (`application/apply-patch+yaml`)
        with `dryRun=All` (admission runs, nothing is persisted), `fieldManager=manager` and
        `force=true`. Concurrent (bounded), in `objects` order; one DryRun each, with the
        predicted object or why there is none. The only PATCH gitdrift sends, and only when
        asked (--server-dry-run)."""
        return self._run(self._dry_run_all(objects, manager))

    async def _dry_run_all(
        self, objects: Sequence[Mapping[str, Any]], manager: str
    ) -> list[DryRun]:
        return list(await asyncio.gather(*(self._dry_run(o, manager) for o in objects)))

    async def _dry_run(self, body: Mapping[str, Any], manager: str) -> DryRun:
        metadata = body.get("metadata") or {}
        name = str(metadata.get("name") or "")
        namespace = str(metadata.get("namespace") or "")
        group, _, version = str(body.get("apiVersion") or "").rpartition("/")
        kind_name = str(body.get("kind") or "")
        kind = self.discovery.find(group, kind_name, version)
        what = f"{kind_name}.{group}" if group else kind_name
        if kind is None:
            return DryRun(body, error=f"cannot dry-run {what} {name}: the kind is not served")
        where = f"{kind.resource} {namespace + '/' if kind.namespaced else ''}{name}"
        assert self._sem is not None
        async with self._sem:
            before = self.requests
            try:
                response = await self._request(
                    "PATCH",
                    "/apis" if kind.group else "/api",
                    version=kind.api_version,
                    namespace=namespace if kind.namespaced else "",
                    url=f"{kind.plural}/{name}",
                    params={"dryRun": "All", "fieldManager": manager, "force": "true"},
                    headers={
                        "Content-Type": APPLY_PATCH,
                        "Accept": "application/json",
                    },
                    content=json.dumps(body, separators=(",", ":")).encode(),
                )
            except _Unreadable as exc:
                return DryRun(
                    body,
                    error=f"cannot dry-run {where}: {exc}",
                    requests=self.requests - before,
                )
        requests = self.requests - before
        code = response.status_code
        if code == 401:
            raise self._unauthorized()
        if code == 403:
            return DryRun(
                body,
                error=f"cannot dry-run {where}: 403 Forbidden: RBAC does not allow verb 'patch' "
                f"on {kind.resource}"
                + (f" in namespace {namespace}" if kind.namespaced and namespace else "")
                + " (--server-dry-run sends a dryRun=All apply PATCH, which needs it)",
                status=403,
                requests=requests,
            )
        if code not in (200, 201):
            phrase = f"{code} {response.reason_phrase}".strip()
            tries = " after retries" if code == 429 or code >= 500 else ""
            return DryRun(
                body,
                error=f"cannot dry-run {where}: {phrase}{tries}: {_status_message(response)}",
                status=code,
                requests=requests,
            )
        try:
            predicted = response.json()
        except ValueError:
            predicted = None
        if not isinstance(predicted, dict) or not isinstance(predicted.get("metadata"), dict):
            return DryRun(
                body,
                error=f"cannot dry-run {where}: the server's answer is not an object",
                status=code,
                requests=requests,
            )
        predicted = {"apiVersion": kind.api_version, "kind": kind.kind, **predicted}
        return DryRun(body, predicted, status=code, requests=requests)

    # ------------------------------------------------------------------ OpenAPI
    def openapi(self, group_versions: Iterable[str]) -> tuple[dict[str, Any], list[str]]:
        """The `/openapi/v3` documents of these group-versions (`apps/v1`, `v1`), and notes
        about the ones the server would not give."""
        return self._run(self._openapi(sorted(set(group_versions))))

    async def _openapi(self, group_versions: list[str]) -> tuple[dict[str, Any], list[str]]:
        docs: dict[str, Any] = {}
        notes: list[str] = []
        if not group_versions:
            return docs, notes
        try:
            index = await self._get_json("/openapi", url="v3")
        except _Unreadable as exc:
            return docs, [f"OpenAPI v3 index not available: {exc}"]
        paths = index.get("paths") if isinstance(index, dict) else None
        paths = paths if isinstance(paths, dict) else {}

        async def one(gv: str) -> None:
            key = f"apis/{gv}" if "/" in gv else f"api/{gv}"
            entry = paths.get(key)
            if not isinstance(entry, dict) or not entry.get("serverRelativeURL"):
                notes.append(f"the server publishes no OpenAPI v3 document for {gv}")
                return
            split = urlsplit(str(entry["serverRelativeURL"]))
            path = split.path.removeprefix("/openapi/v3/")
            try:
                assert self._sem is not None
                async with self._sem:
                    docs[gv] = await self._get_json(
                        "/openapi/v3", url=path, params=dict(parse_qsl(split.query))
                    )
            except _Unreadable as exc:
                notes.append(f"OpenAPI v3 document for {gv} not available: {exc}")

        await asyncio.gather(*(one(gv) for gv in group_versions))
        return docs, sorted(notes)


def _retrieved(task: asyncio.Task[Any]) -> None:
    """Marks a task's error as seen (a connection that failed says why itself)."""
    if not task.cancelled():
        task.exception()


async def _in_order(*coros: Coroutine[Any, Any, Any]) -> list[Any]:
    """Run `coros` concurrently; the first to fail in argument order is raised (the others
    run to their end), as if they had run one after another."""
    results = await asyncio.gather(*coros, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def _origin(url: httpx.URL) -> str:
    return f"{url.scheme}://{url.netloc.decode()}"


def _status_message(response: httpx.Response) -> str:
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


# --------------------------------------------------------------------------- planning

#: Kinds read beside an app's own objects, for diagnosis: Events (who scaled), HPAs that own
#: replicas, and the RBAC
#: objects an offline can-i for the Argo CD controller needs.
CONTEXT_KINDS = (
    ("", "Event"),
    ("autoscaling", "HorizontalPodAutoscaler"),
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
)


def plan(
    discovery: Discovery,
    wants: Iterable[tuple[str, str, str, str]],
    namespaces: Iterable[str],
    *,
    tracking_label: str = "",
) -> tuple[list[Query], list[str]]:
    """The LISTs for (group, version, kind, namespace) wants: one per kind and namespace (one
    per kind for cluster-scoped kinds), the context kinds in `namespaces`, and with label
    tracking one cluster-wide LIST per kind selecting the tracking label. Returns the queries
    (sorted) and notes about kinds the server does not serve."""
    queries: set[Query] = set()
    notes: set[str] = set()
    for group, version, kind_name, namespace in wants:
        kind = discovery.find(group, kind_name, version)
        if kind is None:
            name = f"{kind_name}.{group}" if group else kind_name
            notes.add(
                f"{name} is not served by the cluster (is its CRD installed?): "
                "its objects count as Missing"
            )
            continue
        queries.add(Query(kind, namespace if kind.namespaced else ""))
        if tracking_label:
            queries.add(Query(kind, "", label_selector=tracking_label))
    for group, kind_name in CONTEXT_KINDS:
        kind = discovery.find(group, kind_name)
        if kind is None:
            continue
        if kind.namespaced:
            queries.update(Query(kind, ns) for ns in namespaces if ns)
        else:
            queries.add(Query(kind, ""))
    return sorted(queries), sorted(notes)
