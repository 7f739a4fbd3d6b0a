"""What a failed sync recorded, read back: the resource's line of Argo CD's sync result, and the
API server's words in it (a 422 naming immutable fields, the 404 of a kind nobody serves).

Argo CD keeps, per resource, the error its apply returned (`syncResult.resources[].message`),
cleaned by gitops-engine's `cleanKubectlOutput`: kubectl's "error when applying patch: <patch> to:
<object> for: <file>:" preamble is cut, so a rejected patch reads
`error when patching "/dev/shm/123": Deployment.apps "orders" is invalid: spec.selector: Invalid
value: {...}: field is immutable` (the server's Status message after the file name). A kind the
cluster does not serve fails before any apply, in the sync's task check: `failed to discover
server resources for group version cert-manager.io/v1: the server could not find the requested
resource` (client-go's words for the plain-text `404 page not found`), or, from kubectl's REST
mapper, `no matches for kind "Certificate" in version "cert-manager.io/v1"` and `ensure CRDs are
installed first`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kubectl_gitdrift import model

FAILED_PHASES = ("Failed", "Error")

IMMUTABLE_WORDS = (
    "field is immutable",  # apimachinery ValidateImmutableField; also "... when `immutable` is set"
    "may not change once set",  # Service spec.clusterIPs
    "updates to statefulset spec for fields other than",  # apps ValidateStatefulSetUpdate
    "spec is immutable after creation",  # core ValidatePersistentVolumeClaimUpdate
    "cannot change roleRef",  # rbac ValidateRoleBindingUpdate
    "value is immutable",  # a CRD's x-kubernetes-validations `self == oldSelf` (the usual message)
)

UNSERVED_WORDS = (
    "the server could not find the requested resource",  # client-go, from a plain-text 404
    "404 page not found",  # the server's own body for a group/version nobody serves
    "ensure crds are installed first",  # kubectl's REST mapper
)

# a field error inside "<Kind> "<name>" is invalid: <errors>": "<field>: <type>: <detail>"
_FIELD = re.compile(
    r"(?:^|\[|, )([A-Za-z][\w.\-/]*(?:\[[^\]]*\][\w.\-/]*)*): "
    r"(Invalid value|Forbidden|Required value|Unsupported value|Duplicate value|Too many)\b"
)
_INVALID = re.compile(r" is invalid: ")
_NO_MATCHES = re.compile(r'no matches for kind "([^"]+)" in version "([^"]+)"')
_DISCOVER = re.compile(r"failed to discover server resources for group version (\S+?):")
_STEP = re.compile(r"\[([^\]]*)\]|([^.\[]+)")


@dataclass(frozen=True, slots=True)
class FieldError:
    """One field error of an `... is invalid:` message: the field and what the server said."""

    field: str  # as the server spells it: spec.selector, spec.clusterIPs[0], data
    detail: str  # the rest, e.g. "Invalid value: {...}: field is immutable"

    @property
    def path(self) -> model.FieldPath:
        return field_path(self.field)

    @property
    def immutable(self) -> bool:
        lowered = self.detail.lower()
        return any(w.lower() in lowered for w in IMMUTABLE_WORDS)


def failed(app: model.Application) -> model.OperationState | None:
    """The app's last operation when it failed, or failed and waits for its next retry (phase
    Running, retryCount > 0: Argo CD keeps the failed attempt's results meanwhile), else None."""
    op = app.operation
    if op is None:
        return None
    if op.phase in FAILED_PHASES or retrying(op):
        return op
    return None


def retrying(op: model.OperationState) -> bool:
    """An attempt failed and Argo CD will try again (`... Retrying attempt #N at 1:12AM.`)."""
    return op.phase == "Running" and op.retry_count > 0 and any(r.failed for r in op.resources)


def failed_result(app: model.Application, key: model.ObjectKey) -> model.ResourceResult | None:
    """The failed last sync's line for `key`, when that line says SyncFailed."""
    op = failed(app)
    if op is None:
        return None
    result = op.result_for(key)
    return result if result is not None and result.failed else None


def field_errors(message: str) -> list[FieldError]:
    """The field errors of the first `... is invalid: ...` in `message`, in order."""
    found = _INVALID.search(message)
    if found is None:
        return []
    text = message[found.end() :]
    starts = list(_FIELD.finditer(text))
    out = []
    for n, match in enumerate(starts):
        end = starts[n + 1].start() if n + 1 < len(starts) else len(text)
        detail = text[match.start(2) : end].rstrip("], ")
        out.append(FieldError(match.group(1), detail))
    return out


def immutable_errors(message: str) -> list[FieldError]:
    """The field errors of `message` that say the field cannot change."""
    return [e for e in field_errors(message) if e.immutable]


def field_path(field: str) -> model.FieldPath:
    """`spec.clusterIPs[0]` -> ("spec", "clusterIPs", 0); `data[tls.crt]` -> ("data", "tls.crt")."""
    out: list[model.PathElem] = []
    for bracket, plain in _STEP.findall(field):
        if plain:
            out.extend(p for p in plain.split(".") if p)
        elif bracket.isdigit():
            out.append(int(bracket))
        else:
            out.append(bracket.strip('"'))
    return tuple(out)


def says_unserved(message: str, key: model.ObjectKey) -> bool:
    """Whether `message` says the cluster does not serve the kind of `key` (or its group)."""
    lowered = message.lower()
    for match in _NO_MATCHES.finditer(message):
        kind, version = match.groups()
        if kind == key.kind and version.rpartition("/")[0] == key.group:
            return True
    for match in _DISCOVER.finditer(message):
        if match.group(1).rpartition("/")[0] == key.group:
            return True
    return any(w in lowered for w in UNSERVED_WORDS) and not _names_other_group(message, key)


def _names_other_group(message: str, key: model.ObjectKey) -> bool:
    """A message naming a group/version, and not the key's: about another kind."""
    versions = [m.group(2) for m in _NO_MATCHES.finditer(message)]
    versions += [m.group(1) for m in _DISCOVER.finditer(message)]
    return bool(versions) and all(v.rpartition("/")[0] != key.group for v in versions)


def quote(message: str, limit: int = 400) -> str:
    """A recorded message as a finding quotes it: “one line”, cut at `limit` characters."""
    line = " ".join(message.split())
    return "“" + (line if len(line) <= limit else line[: limit - 3] + "...") + "”"


def after_failure(app: model.Application) -> str:
    """What Argo CD does next about a sync that failed, and what a person's sync does."""
    op = app.operation
    if op is not None and retrying(op):
        left = f" of {op.retry_limit}" if op.retry_limit is not None and op.retry_limit >= 0 else ""
        return (
            f"Argo CD is retrying the sync (retry {op.retry_count}{left}); each attempt fails the "
            "same way, and after the last one automated sync does not retry the revision and "
            "selfHeal, which runs only after a successful sync, does not either."
        )
    if not app.sync_policy.automated:
        return (
            "Automated sync is off: nothing happens until someone syncs, and that sync fails the "
            "same way until the cause is fixed."
        )
    return (
        "Automated sync does not retry a revision whose sync failed, and selfHeal runs only "
        "after a successful sync: nothing retries it until a new commit or a manual sync, and "
        "both fail the same way until the cause is fixed."
    )


def before_failure(app: model.Application) -> str:
    """What a sync will do about a cause that makes it fail, before one has been tried."""
    if not app.sync_policy.automated:
        return "Every sync fails on it until the cause is fixed (automated sync is off)."
    return (
        "The next automated sync fails on it and, after its retries, stops: automated sync does "
        "not retry a failed revision, and selfHeal runs only after a successful sync."
    )


def server_words(message: str) -> str:
    """The API server's own message inside Argo CD's: without kubectl's `error when patching
    "<file>": ` (or creating, replacing) in front."""
    return _KUBECTL_PREFIX.sub("", message.strip(), count=1)


_KUBECTL_PREFIX = re.compile(r'^error when (?:patching|creating|replacing|updating) "[^"]*": ')
