"""``metav1.Status`` error bodies, worded exactly as kube-apiserver words them.

Every builder returns an :class:`APIError` carrying the HTTP code, the ``Status`` body and any
extra response headers; the server turns it into a response. Formats follow
``k8s.io/apimachinery/pkg/api/errors`` and the recordings ``error-0*.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]

#: HTTP code -> (reason, default message) for codes without a dedicated builder.
_REASONS: dict[int, tuple[str, str]] = {
    400: ("BadRequest", "the server rejected our request for an unknown reason"),
    401: ("Unauthorized", "Unauthorized"),
    403: ("Forbidden", "forbidden"),
    404: ("NotFound", "the server could not find the requested resource"),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    406: (
        "NotAcceptable",
        "the server was unable to respond with a content type that the client supports",
    ),
    409: ("Conflict", "the server reported a conflict"),
    410: ("Expired", "the resource version is too old"),
    415: ("UnsupportedMediaType", "the server was unable to handle the media type"),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    429: ("TooManyRequests", "Too many requests, please try again later."),
    500: (
        "InternalError",
        'an error on the server ("unknown") has prevented the request from succeeding',
    ),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: ("Timeout", "the server was unable to return a response in the time allotted"),
}


@dataclass
class APIError(Exception):
    """An error answer: HTTP status code, ``Status`` body and extra headers."""

    code: int
    body: JSON
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code}: {self.body.get('message', '')}"


def status_body(
    code: int,
    message: str | None = None,
    reason: str | None = None,
    details: JSON | None = None,
    metadata: JSON | None = None,
) -> JSON:
    """A ``Status`` of ``status: Failure`` with keys in the server's order."""
    default_reason, default_message = _REASONS.get(code, ("", "unknown error"))
    body: JSON = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": metadata or {},
        "status": "Failure",
        "message": default_message if message is None else message,
    }
    if reason or default_reason:
        body["reason"] = reason or default_reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def error(code: int, message: str | None = None, **kwargs: Any) -> APIError:
    """A generic error for ``code`` (default reason and message from the table above)."""
    return APIError(code, status_body(code, message, **kwargs))


def qualified(resource: str, group: str) -> str:
    """``GroupResource.String()``: ``deployments.apps``, or ``pods`` for the core group."""
    return f"{resource}.{group}" if group else resource


def _details(resource: str, group: str, name: str | None = None) -> JSON:
    details: JSON = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = resource
    return details


def not_found(resource: str, group: str, name: str) -> APIError:
    """404 for a missing object: ``deployments.apps "x" not found``."""
    message = f'{qualified(resource, group)} "{name}" not found'
    return error(404, message, details=_details(resource, group, name))


def path_not_found() -> APIError:
    """404 for an unknown resource or path (``details`` is an empty object)."""
    return error(404, details={})


def unauthorized() -> APIError:
    """401 for a missing or unknown bearer token (no ``details``)."""
    return error(401)


def forbidden(
    user: str,
    verb: str,
    resource: str,
    group: str,
    namespace: str,
    name: str | None = None,
    subresource: str = "",
) -> APIError:
    """403 in the exact wording of ``responsewriters.Forbidden`` + ``errors.NewForbidden``."""
    full = f"{resource}/{subresource}" if subresource else resource
    if namespace:
        scope = f"in the namespace {_quote(namespace)}"
    else:
        scope = "at the cluster scope"
    why = (
        f"User {_quote(user)} cannot {verb} resource {_quote(full)} "
        f"in API group {_quote(group)} {scope}"
    )
    subject = qualified(resource, group)
    if name:
        message = f"{subject} {_quote(name)} is forbidden: {why}"
    else:
        message = f"{subject} is forbidden: {why}"
    return error(403, message, details=_details(resource, group, name))


def forbidden_path(user: str, verb: str, path: str) -> APIError:
    """403 for a non-resource URL."""
    return error(
        403, f"forbidden: User {_quote(user)} cannot {verb} path {_quote(path)}", details={}
    )


def method_not_supported(verb: str, resource: str, group: str) -> APIError:
    """405 as ``errors.NewMethodNotSupported``: ``create is not supported on resources of ...``."""
    message = f"{verb} is not supported on resources of kind {_quote(qualified(resource, group))}"
    return error(405, message, details=_details(resource, group))


def bad_request(message: str) -> APIError:
    """400 BadRequest (no ``details``)."""
    return error(400, message)


def expired_continue(inconsistent_token: str) -> APIError:
    """410 Expired for a continue token older than the last compaction (error-06)."""
    message = (
        "The provided continue parameter is too old to display a consistent list result. "
        "You can start a new list without the continue parameter, or use the continue token "
        "in this response to retrieve the remainder of the results. Continuing with the "
        "provided token results in an inconsistent list - objects that were created, "
        "modified, or deleted between the time the first chunk was returned and now may "
        "show up in the list."
    )
    return error(410, message, metadata={"continue": inconsistent_token})


def too_many_requests(retry_after: int | None) -> APIError:
    """429 as sent by API Priority and Fairness, with ``Retry-After``."""
    seconds = 1 if retry_after is None else retry_after
    err = error(429, details={"retryAfterSeconds": seconds})
    err.headers["Retry-After"] = str(seconds)
    return err


def internal_error(cause: str = "injected fault") -> APIError:
    """500 as ``errors.NewInternalError``."""
    return error(500, f"Internal error occurred: {cause}", details={"causes": [{"message": cause}]})


def for_code(code: int, retry_after: int | None = None) -> APIError:
    """A plausible error for an injected ``code``."""
    if code == 429:
        return too_many_requests(retry_after)
    if code == 500:
        return internal_error()
    if code == 401:
        return unauthorized()
    err = error(code, details={} if code in (404, 405) else None)
    if retry_after is not None:
        err.headers["Retry-After"] = str(retry_after)
    return err


def _quote(text: str) -> str:
    """Go's ``%q`` for the plain ASCII names used here."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
