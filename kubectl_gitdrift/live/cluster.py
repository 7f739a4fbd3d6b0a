"""The cluster client a run holds: one connection, each kind of request a synchronous method.

A translator, not a second model: every object leaves as a plain ``dict`` (kr8s's raw form),
never as a kr8s object. Reads only: discovery, ``/version``, ``/openapi/v3``, and LISTs (never
one GET per object: the one GET is of the argocd-repo-server Deployment, for its image, when a
helm render needs the Argo CD version), plus SubjectAccessReviews; and, only when asked
(``--server-dry-run``),
Argo CD's server-side apply dry-run (``dryRun=All``: the server persists nothing). Each kind of
request has a module of its own (discovery, listing, reviews, dryrun) built on the transport,
whose private event loop runs in a thread of its own, so callers stay synchronous, and LISTs
started with :meth:`Cluster.start_fetch` go on while the caller works (renders).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from kubectl_gitdrift.diagnose import rbac
from kubectl_gitdrift.live.discovery import Discovery, DiskCache, discover, openapi_documents
from kubectl_gitdrift.live.dryrun import SSA_MANAGER, DryRun, dry_run_all
from kubectl_gitdrift.live.listing import ListResult, Query, list_all
from kubectl_gitdrift.live.reviews import review_all
from kubectl_gitdrift.live.transport import (
    Config,
    Transport,
    Unreadable,
    retrieved,
    status_message,
)

__all__ = ["Cluster"]


class Cluster:
    """A read-only connection to one cluster (context manager; synchronous facade); the one
    PATCH it can send is a dryRun=All apply (:meth:`dry_run_apply`)."""

    def __init__(
        self,
        config: Config,
        *,
        cache_dir: str | None = None,
        cache: bool = True,
        known: tuple[dict[str, Any], Discovery] | None = None,
    ) -> None:
        """`cache_dir`: kubectl's --cache-dir (default `$KUBECACHEDIR` or ~/.kube/cache), where
        discovery is kept; `cache` False asks the server every time. `known`: the version and
        discovery an earlier connection of the run found: connecting sends no request."""
        self.config = config
        self._known = known
        self._link = Transport(config)
        self._cache_dir = cache_dir
        self._use_cache = cache
        self._cache: DiskCache | None = None
        self._early_queries: list[Query] = []
        self._early: asyncio.Task[list[ListResult]] | None = None
        self.version: dict[str, Any] = {}
        self.discovery = Discovery(())

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> Cluster:  # noqa: PYI034 - py3.10 has no typing.Self
        try:
            self._link.run(self._connect())
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
        self._link.close()

    async def _connect(self) -> None:
        # the kubeconfig names the server, and so the cache; with the cache fresh nothing is
        # sent before the first LIST (kubectl's warm runs send none either)
        await self._link.connect(check=False)
        if self._known is not None:
            self.version, self.discovery = self._known
            return
        if self._use_cache:
            self._cache = DiskCache.of(self._cache_dir, self._link.server)
        cached = self._cache.read() if self._cache is not None else None
        if cached is None or cached[1] is None:
            await self._link.check_version()  # connecting, as kr8s checks it
        if self._early_queries:
            self._early = asyncio.ensure_future(list_all(self._link, self._early_queries))
            self._early.add_done_callback(retrieved)  # raised by early_results(), if asked
        self.version, self.discovery = await discover(self._link, self._cache, cached=cached)

    def rediscover(self, wanted: Iterable[tuple[str, str, str]] | None = None) -> bool:
        """Ask the server again (and rewrite the cache) if discovery came from the cache and
        lacks one of the wanted (group, version, kind): a CRD installed since, as kubectl
        asks again when its cache has no match; with `wanted` None, whatever it holds (a
        kind it has answered 404: a CRD removed since). True if it did."""
        if not self.discovery.cached or (
            wanted is not None and all(self.discovery.serves(g, k, v) for g, v, k in wanted)
        ):
            return False

        async def again() -> None:
            self.version, self.discovery = await discover(self._link, self._cache, refresh=True)

        self._link.run(again())
        return True

    @property
    def where(self) -> str:
        """`https://host:6443 (context admin)`, for messages."""
        return self._link.where

    @property
    def server(self) -> str:
        return self._link.server

    @property
    def context(self) -> str:
        return self._link.context

    @property
    def requests(self) -> int:
        """Requests sent so far, every retry counted."""
        return self._link.requests

    # ------------------------------------------------------------------ LIST
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

        results = self._link.run(wait())
        if results and self.discovery.cached and all(r.error and not r.status for r in results):
            # with the cache fresh these were the first requests: nothing answered
            raise self._link.unreachable(results[0].error)
        return results

    def start_fetch(
        self, queries: Sequence[Query], done: Callable[[ListResult], None] | None = None
    ) -> concurrent.futures.Future[list[ListResult]]:
        """:meth:`fetch`, started: the LISTs run while the caller goes on (renders); the
        future's result is what `fetch` returns, or its error."""
        return self._link.submit(list_all(self._link, queries, done))

    # ------------------------------------------------------------------ GET
    def get_object(
        self, group: str, kind: str, namespace: str, name: str
    ) -> tuple[dict[str, Any] | None, str]:
        """One GET of the object (`apps`, `Deployment`, `argocd`, `argocd-repo-server`): its
        body, or None and why not ("403 Forbidden: …", "404 Not Found: …"); a 401 raises, as
        for a LIST. The only GET of an object gitdrift sends (the argocd-repo-server image)."""
        return self._link.run(self._get_object(group, kind, namespace, name))

    async def _get_object(
        self, group: str, kind: str, namespace: str, name: str
    ) -> tuple[dict[str, Any] | None, str]:
        found = self.discovery.find(group, kind)
        if found is None:
            return None, f"the server serves no {kind} in group {group or 'core'}"
        what = f"{found.resource} {name} in namespace {namespace}"
        async with self._link.slot:
            try:
                response = await self._link.get(
                    "/apis" if found.group else "/api",
                    version=found.api_version,
                    namespace=namespace,
                    url=f"{found.plural}/{name}",
                )
            except Unreadable as exc:
                return None, f"cannot get {what}: {exc}"
        code = response.status_code
        if code == 401:
            raise self._link.unauthorized()
        if code == 403:
            return None, f"403 Forbidden: RBAC does not allow verb 'get' on {what}"
        if code == 404:
            return None, f"404 Not Found: no {what}"
        if code != 200:
            return None, f"{code} {response.reason_phrase}: {status_message(response)}".strip()
        try:
            body = response.json()
        except ValueError:
            return None, f"cannot get {what}: the server answered something that is not JSON"
        if not isinstance(body, dict):
            return None, f"cannot get {what}: the server's answer is not an object"
        return {"apiVersion": found.api_version, "kind": found.kind, **body}, ""

    # ------------------------------------------------------------------ can-i
    def review(
        self, user: str, groups: Sequence[str], questions: Sequence[rbac.Question]
    ) -> rbac.Reviews:
        """Ask the API server, one SubjectAccessReview per question (the only POST gitdrift
        makes; it creates nothing): the answers, or none and why (e.g. we may not create
        SubjectAccessReviews), and the caller evaluates the RBAC objects instead."""
        return self.start_review(user, groups, questions).result()

    def start_review(
        self, user: str, groups: Sequence[str], questions: Sequence[rbac.Question]
    ) -> concurrent.futures.Future[rbac.Reviews]:
        """:meth:`review`, started: the reviews go out beside the LISTs in flight."""
        return self._link.submit(review_all(self._link, user, groups, questions))

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
        return self._link.run(dry_run_all(self._link, self.discovery, objects, manager))

    # ------------------------------------------------------------------ OpenAPI
    def openapi(self, group_versions: Iterable[str]) -> tuple[dict[str, Any], list[str]]:
        """The `/openapi/v3` documents of these group-versions (`apps/v1`, `v1`), and notes
        about the ones the server would not give."""
        return self._link.run(openapi_documents(self._link, sorted(set(group_versions))))
