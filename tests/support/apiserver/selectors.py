"""``labelSelector`` and ``fieldSelector`` parsing and matching, as the API server does it.

Label selectors support ``=``, ``==``, ``!=``, ``in (...)``, ``notin (...)``, ``key`` (exists),
``!key`` (does not exist) and ``>``/``<`` on integers. Field selectors support ``=``, ``==``
and ``!=`` on ``metadata.name``, ``metadata.namespace`` and the few extra field labels that
real resources register (e.g. ``status.phase`` on pods); anything else is a 400.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .status import APIError, bad_request

Obj = dict[str, Any]


@dataclass(frozen=True)
class Requirement:
    """One label requirement: ``key`` ``op`` ``values``."""

    key: str
    op: str  # one of: =, !=, in, notin, exists, !, gt, lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this requirement (k8s semantics for missing keys)."""
        present = self.key in labels
        value = labels.get(self.key)
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if not present or value is None:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        bound = int(self.values[0])
        return number > bound if self.op == "gt" else number < bound


_TOKEN = re.compile(r"\s*(?:(?P<op>==|!=|=|!|\(|\)|,|>|<)|(?P<word>[^\s=!(),<>]+))")


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None:  # pragma: no cover - the pattern accepts every non-space char
            raise bad_request(f"unable to parse requirement: unexpected {text[pos:]!r}")
        tokens.append(match.group("op") or match.group("word"))
        pos = match.end()
    return tokens


def parse_label_selector(text: str) -> list[Requirement]:
    """Parse a label selector; raise a 400 :class:`APIError` if it is malformed."""
    tokens = _tokens(text)
    requirements: list[Requirement] = []
    i = 0

    def fail(found: str, expected: str) -> APIError:
        return bad_request(f"unable to parse requirement: found '{found}', expected: {expected}")

    def word(index: int) -> str:
        if index >= len(tokens) or not _is_word(tokens[index]):
            raise fail(tokens[index] if index < len(tokens) else "", "identifier")
        return tokens[index]

    while i < len(tokens):
        if tokens[i] == "!":
            requirements.append(Requirement(word(i + 1), "!"))
            i += 2
        else:
            key = word(i)
            i += 1
            nxt = tokens[i] if i < len(tokens) else ","
            if nxt == ",":
                requirements.append(Requirement(key, "exists"))
            elif nxt in ("=", "==", "!="):
                value = tokens[i + 1] if i + 1 < len(tokens) else ""
                if value in (",", "") or not _is_word(value):
                    value, i = "", i + 1  # key= (empty value) is legal
                else:
                    i += 2
                requirements.append(Requirement(key, "!=" if nxt == "!=" else "=", (value,)))
            elif nxt in (">", "<"):
                value = word(i + 1)
                if not value.lstrip("-").isdigit():
                    raise bad_request(
                        f"unable to parse requirement: for 'gt', 'lt' operators, the value "
                        f"must be an integer: {value}"
                    )
                requirements.append(Requirement(key, "gt" if nxt == ">" else "lt", (value,)))
                i += 2
            elif nxt in ("in", "notin"):
                if i + 1 >= len(tokens) or tokens[i + 1] != "(":
                    raise fail(tokens[i + 1] if i + 1 < len(tokens) else "", "'('")
                i += 2
                values: list[str] = []
                while i < len(tokens) and tokens[i] != ")":
                    if tokens[i] != ",":
                        values.append(word(i))
                    i += 1
                if i >= len(tokens):
                    raise fail("", "')'")
                i += 1
                requirements.append(Requirement(key, nxt, tuple(values)))
            else:
                raise fail(nxt, "'=', '!=', '==', 'in', 'notin'")
        if i < len(tokens):
            if tokens[i] != ",":
                raise fail(tokens[i], "','")
            i += 1
    return requirements


def _is_word(token: str) -> bool:
    return token not in ("=", "==", "!=", "!", "(", ")", ",", ">", "<")


def label_matcher(text: str | None) -> Callable[[Obj], bool]:
    """A predicate for ``labelSelector`` (always true when empty)."""
    if not text:
        return lambda _obj: True
    requirements = parse_label_selector(text)

    def match(obj: Obj) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(req.matches(labels) for req in requirements)

    return match


#: Field labels beyond metadata.name/metadata.namespace, per resource (as registered in k8s).
EXTRA_FIELD_LABELS: dict[str, frozenset[str]] = {
    "pods": frozenset(
        {
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        }
    ),
    "secrets": frozenset({"type"}),
    "namespaces": frozenset({"status.phase"}),
    "nodes": frozenset({"spec.unschedulable"}),
    "events": frozenset(
        {
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        }
    ),
    "replicasets": frozenset({"status.replicas"}),
    "replicationcontrollers": frozenset({"status.replicas"}),
    "jobs": frozenset({"status.successful"}),
}


def _field_value(obj: Obj, path: str) -> str:
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, dict):
            return ""
        node = node.get(part)
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, current, escaped = [], "", False
    for char in text:
        if escaped:
            current += char
            escaped = False
        elif char == "\\":
            current += char
            escaped = True
        elif char == sep:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def field_matcher(text: str | None, resource: str) -> Callable[[Obj], bool]:
    """A predicate for ``fieldSelector`` on ``resource``; 400 for unsupported field labels."""
    if not text:
        return lambda _obj: True
    terms: list[tuple[str, bool, str]] = []
    for part in _split_unescaped(text, ","):
        if not part:
            continue  # fields.ParseSelector skips empty terms ("metadata.name=x," is fine)
        match = re.match(r"^(?P<key>[^=!]+)(?P<op>==|!=|=)(?P<value>.*)$", part)
        if match is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        key = match.group("key").strip()
        if key not in ("metadata.name", "metadata.namespace") and key not in (
            EXTRA_FIELD_LABELS.get(resource, frozenset())
        ):
            raise bad_request(f"field label not supported: {key}")
        terms.append((key, match.group("op") == "!=", _unescape(match.group("value"))))

    def match_obj(obj: Obj) -> bool:
        return all((_field_value(obj, key) == value) != negate for key, negate, value in terms)

    return match_obj
