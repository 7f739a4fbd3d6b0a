"""can-i, asked of the API server: one SubjectAccessReview per question, creating nothing.

The only POST gitdrift makes. Asked as `kubectl auth can-i VERB RESOURCE -n NS --as USER`
would be answered: the user and its groups (a service account's three), no impersonation.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

from kubectl_gitdrift.diagnose import rbac
from kubectl_gitdrift.live.transport import Transport, Unreadable, status_message

__all__ = ["review_all"]


class _Refused(Exception):
    """The server would not answer a review: 403 (we may not create them) or another status."""

    def __init__(self, reason: str, status: int) -> None:
        super().__init__(reason)
        self.status = status


async def review_all(
    link: Transport, user: str, groups: Sequence[str], questions: Sequence[rbac.Question]
) -> rbac.Reviews:
    """The answers to `questions`, concurrently (bounded by the transport); none, and why, when
    the server would not answer one of them (a 403: we may not create SubjectAccessReviews;
    a 404: the API is not served; 5xx or timeouts after retries). A 401 is a ClusterError."""

    async def one(question: rbac.Question) -> rbac.Answer | _Refused:
        try:
            return await _review(link, user, groups, question)
        except _Refused as exc:
            return exc

    results = await asyncio.gather(*(one(q) for q in questions))
    refused = [r for r in results if isinstance(r, _Refused)]
    if any(r.status == 401 for r in refused):
        raise link.unauthorized()
    if refused:
        forbidden = next((r for r in refused if r.status == 403), None)
        if forbidden is not None:
            return rbac.Reviews({}, "SubjectAccessReview forbidden")
        return rbac.Reviews({}, f"SubjectAccessReview failed: {refused[0]}")
    answers = [r for r in results if isinstance(r, rbac.Answer)]
    return rbac.Reviews({a.question: a for a in answers})


async def _review(
    link: Transport, user: str, groups: Sequence[str], question: rbac.Question
) -> rbac.Answer:
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
        try:
            # safe to repeat: a review is answered, never stored
            response = await link.request(
                "POST",
                "/apis/authorization.k8s.io",
                version="v1",
                url="subjectaccessreviews",
                headers={"Content-Type": "application/json"},
                content=json.dumps(body).encode(),
            )
        except Unreadable as exc:
            raise _Refused(str(exc), exc.status) from None
    code = response.status_code
    if code not in (200, 201):
        phrase = f"{code} {response.reason_phrase}".strip()
        raise _Refused(f"{phrase}: {status_message(response)}", code)
    try:
        answer = response.json()
    except ValueError:
        raise _Refused("the server answered something that is not JSON", code) from None
    status = (answer.get("status") if isinstance(answer, dict) else None) or {}
    if not isinstance(status, dict):
        raise _Refused("the server's answer has no status", code)
    reason = str(status.get("reason") or status.get("evaluationError") or "")
    return rbac.Answer(question, status.get("allowed") is True, reason, how="SubjectAccessReview")
