"""Secret values as keyed fingerprints (HMAC-SHA256): what states and snapshots hold instead.

Secrets never leave the cluster side in clear: live Secret values are replaced by keyed
fingerprints (HMAC-SHA256 under a random per-snapshot key) as soon as they are read, and the
desired Secrets rendered from git are fingerprinted with the same key before comparing, so equal
values still compare equal and the diff still says *that* a key changed.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

from kubectl_gitdrift import model

__all__ = [
    "FINGERPRINT_ALGORITHM",
    "FINGERPRINT_PREFIX",
    "LAST_APPLIED",
    "fingerprint",
    "is_secret",
    "redact_secret",
]

FINGERPRINT_ALGORITHM = "hmac-sha256"
FINGERPRINT_PREFIX = "gitdrift-fingerprint:hmac-sha256:"
"""Plain form of a fingerprinted Secret value; `data` holds it base64-encoded."""
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def is_secret(key: model.ObjectKey) -> bool:
    return key.group == "" and key.kind == "Secret"


def fingerprint(key: bytes, value: bytes) -> str:
    """The plain (stringData) form of a fingerprinted value."""
    return FINGERPRINT_PREFIX + hmac.new(key, value, hashlib.sha256).hexdigest()


def _data_fingerprint(key: bytes, encoded: Any) -> Any:
    """A `data` value (base64) → base64 of the fingerprint of the decoded bytes."""
    if not isinstance(encoded, str):
        return encoded
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raw = encoded.encode()
    return base64.b64encode(fingerprint(key, raw).encode()).decode()


def _string_fingerprint(key: bytes, value: Any) -> Any:
    return fingerprint(key, value.encode()) if isinstance(value, str) else value


def redact_secret(body: Mapping[str, Any], key: bytes) -> dict[str, Any]:
    """A copy of a Secret whose `data`/`stringData` values are keyed fingerprints, and whose
    last-applied-configuration annotation (which keeps `stringData` in plain text) is
    fingerprinted the same way (or dropped when it cannot be parsed)."""
    out = copy.deepcopy(dict(body))
    if isinstance(out.get("data"), Mapping):
        out["data"] = {k: _data_fingerprint(key, v) for k, v in out["data"].items()}
    if isinstance(out.get("stringData"), Mapping):
        out["stringData"] = {k: _string_fingerprint(key, v) for k, v in out["stringData"].items()}
    annotations = (out.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        try:
            applied = json.loads(annotations[LAST_APPLIED])
        except (TypeError, ValueError):
            applied = None
        if isinstance(applied, dict):
            annotations[LAST_APPLIED] = (
                json.dumps(redact_secret(applied, key), separators=(",", ":")) + "\n"
            )
        else:
            del annotations[LAST_APPLIED]
    return out
