"""can-i, asked of the API server: one SubjectAccessReview per question, creating nothing.

The only POST gitdrift makes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubectl_gitdrift.diagnose import rbac
from kubectl_gitdrift.live.transport import TRANSIENT, Transport

if TYPE_CHECKING:
    import httpx

__all__ = ["review_all"]


async def review_all(
    link: Transport, user: str, groups: Sequence[str], questions: Sequence[rbac.Question]
) -> list[rbac.Answer | None]:
    """One answer per question, concurrently (bounded), in `questions` order; None where the
    server would not answer (e.g. we may not create SubjectAccessReviews)."""
    return list(await asyncio.gather(*(_review(link, user, groups, q) for q in questions)))


async def _review(
    link: Transport, user: str, groups: Sequence[str], question: rbac.Question
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
    async with link.slot:
        for attempt in range(link.config.retries + 1):
            link.requests += 1
            try:
                response = await asyncio.wait_for(_post(link, body), link.config.timeout)
            except TRANSIENT:
                await asyncio.sleep(link.backoff(attempt))
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
                await asyncio.sleep(link.retry_after(response) or link.backoff(attempt))
                continue
            return None
    return None


async def _post(link: Transport, body: Mapping[str, Any]) -> httpx.Response:
    async with link.api.call_api(
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
