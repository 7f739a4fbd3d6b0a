"""Authentication (bearer tokens -> identities) and authorization (static rules and RBAC).

RBAC follows ``plugin/pkg/auth/authorizer/rbac``: ClusterRoleBindings are visited first, then the
RoleBindings of the request's namespace; the first rule that allows the request wins and the
reason names the binding (``RBAC: allowed by RoleBinding "name/namespace" of ClusterRole "role"
to ServiceAccount "sa/namespace"``). A denial carries no reason. Members of ``system:masters``
are allowed everything without a reason, as by the server's privileged-group authorizer.
ClusterRoles with an ``aggregationRule`` are used as stored: their ``rules`` must already be
materialised (as in the recordings).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
#: Lists every stored object of (API group, resource plural), across all namespaces.
ObjectSource = Callable[[str, str], Iterable[Obj]]

MASTERS = "system:masters"


@dataclass(frozen=True)
class AccessRule:
    """A static permission for an :class:`Identity`; ``"*"`` matches anything.

    ``namespaces`` uses ``""`` for cluster-scoped requests (and all-namespace lists).
    """

    verbs: tuple[str, ...] = ("*",)
    resources: tuple[str, ...] = ("*",)
    api_groups: tuple[str, ...] = ("*",)
    namespaces: tuple[str, ...] = ("*",)
    names: tuple[str, ...] = ("*",)

    def allows(self, attrs: Attributes) -> bool:
        """Whether this rule covers a resource request."""
        full = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        return (
            _has(self.verbs, attrs.verb)
            and _has(self.api_groups, attrs.group)
            and (_has(self.resources, full) or _has(self.resources, attrs.resource))
            and _has(self.namespaces, attrs.namespace)
            and _has(self.names, attrs.name)
        )


def _has(allowed: Iterable[str], value: str) -> bool:
    return any(item in ("*", value) for item in allowed)


@dataclass(frozen=True)
class Identity:
    """A user the server knows by bearer token.

    Authorization: members of ``system:masters`` may do anything; otherwise a request is
    allowed if one of ``rules`` covers it or, with ``use_rbac``, if the store's RBAC objects
    allow it. Discovery (``/version``, ``/api``, ``/apis``...) is open to every identity, like
    the built-in ``system:discovery`` role.
    """

    user: str
    token: str
    groups: tuple[str, ...] = ("system:authenticated",)
    rules: tuple[AccessRule, ...] = ()
    use_rbac: bool = False
    name: str = ""
    """Name of the kubeconfig user and context for this identity (default: ``user``)."""

    @property
    def context(self) -> str:
        """The kubeconfig context (and user entry) name."""
        return self.name or self.user


@dataclass(frozen=True)
class Attributes:
    """What a request asks to do (``authorizer.Attributes``)."""

    user: str
    groups: tuple[str, ...]
    verb: str
    resource_request: bool = True
    namespace: str = ""
    group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""


@dataclass(frozen=True)
class Decision:
    """Outcome of authorization; ``reason`` is empty for denials and for masters."""

    allowed: bool
    reason: str = ""


@dataclass
class RBAC:
    """Evaluates RBAC objects found through ``source`` (the object store)."""

    source: ObjectSource

    def _all(self, plural: str) -> list[Obj]:
        objects = list(self.source("rbac.authorization.k8s.io", plural))
        return sorted(objects, key=lambda o: (_meta(o, "namespace"), _meta(o, "name")))

    def _role_rules(self, ref: Obj, binding_namespace: str) -> list[Obj] | None:
        kind, name = ref.get("kind"), ref.get("name")
        if kind == "ClusterRole":
            roles = self._all("clusterroles")
            match = [r for r in roles if _meta(r, "name") == name]
        elif kind == "Role":
            roles = self._all("roles")
            match = [
                r
                for r in roles
                if _meta(r, "name") == name and _meta(r, "namespace") == binding_namespace
            ]
        else:
            return None
        return list(match[0].get("rules") or []) if match else None

    def authorize(self, attrs: Attributes) -> Decision:
        """Decide ``attrs`` like the RBAC authorizer (plus the ``system:masters`` shortcut)."""
        if MASTERS in attrs.groups:
            return Decision(True)
        for binding in self._all("clusterrolebindings"):
            decision = self._visit(binding, "", attrs)
            if decision is not None:
                return decision
        if attrs.namespace:
            for binding in self._all("rolebindings"):
                if _meta(binding, "namespace") != attrs.namespace:
                    continue
                decision = self._visit(binding, attrs.namespace, attrs)
                if decision is not None:
                    return decision
        return Decision(False)

    def _visit(self, binding: Obj, namespace: str, attrs: Attributes) -> Decision | None:
        ref = binding.get("roleRef") or {}
        for subject in binding.get("subjects") or []:
            if not _applies_to_user(subject, attrs, namespace):
                continue
            rules = self._role_rules(ref, namespace)
            if rules is None:
                continue
            for rule in rules:
                if _rule_allows(rule, attrs):
                    return Decision(True, "RBAC: allowed by " + _describe(binding, subject))
        return None


def _meta(obj: Obj, key: str) -> str:
    value = (obj.get("metadata") or {}).get(key) or ""
    return str(value)


def _applies_to_user(subject: Obj, attrs: Attributes, binding_namespace: str) -> bool:
    kind = subject.get("kind")
    name = subject.get("name", "")
    if kind == "User":
        return bool(attrs.user == name)
    if kind == "Group":
        return name in attrs.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return bool(attrs.user == f"system:serviceaccount:{namespace}:{name}")
    return False


def _rule_allows(rule: Obj, attrs: Attributes) -> bool:
    verbs = rule.get("verbs") or []
    if "*" not in verbs and attrs.verb not in verbs:
        return False
    if not attrs.resource_request:
        return any(
            url == "*"
            or url == attrs.path
            or (url.endswith("*") and attrs.path.startswith(url[:-1]))
            for url in rule.get("nonResourceURLs") or []
        )
    groups = rule.get("apiGroups") or []
    if "*" not in groups and attrs.group not in groups:
        return False
    if not _resource_matches(rule.get("resources") or [], attrs):
        return False
    names = rule.get("resourceNames") or []
    return not names or attrs.name in names


def _resource_matches(resources: list[str], attrs: Attributes) -> bool:
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    for resource in resources:
        if resource in ("*", combined):
            return True
        if attrs.subresource and resource == f"*/{attrs.subresource}":
            return True
    return False


def _describe(binding: Obj, subject: Obj) -> str:
    ref = binding.get("roleRef") or {}
    namespace = _meta(binding, "namespace")
    if namespace:
        what = f'RoleBinding "{_meta(binding, "name")}/{namespace}"'
    else:
        what = f'ClusterRoleBinding "{_meta(binding, "name")}"'
    kind = subject.get("kind", "")
    name = subject.get("name", "")
    if kind == "ServiceAccount":
        name = f"{name}/{subject.get('namespace') or namespace}"
    return f'{what} of {ref.get("kind")} "{ref.get("name")}" to {kind} "{name}"'


def authorize_identity(identity: Identity, attrs: Attributes, rbac: RBAC) -> Decision:
    """Decide a request made by ``identity``: masters, then static rules, then RBAC."""
    if MASTERS in identity.groups:
        return Decision(True)
    if attrs.resource_request and any(rule.allows(attrs) for rule in identity.rules):
        return Decision(True)
    if identity.use_rbac:
        return rbac.authorize(attrs)
    return Decision(False)
