"""Can the Argo CD controller write what the app renders? `kubectl auth can-i` for its service
account, answered offline from the snapshot's RBAC objects (pure), or live by the API server:
the cluster edge asks it one SubjectAccessReview per question before the comparison and hands
the answers over as `Reviews` (looked up here, no I/O). Both paths ask the same `questions`.

The offline evaluator follows the API server's RBAC authorizer: ClusterRoleBindings first, then
the RoleBindings of the request's namespace; the first rule that allows wins and the reason names
the binding, in the server's wording. Subjects match by user, by group (a service account is in
`system:serviceaccounts`, `system:serviceaccounts:<ns>` and `system:authenticated`) or by service
account. Rules match verbs, API groups, resources (`*`, `res/sub`, `*/sub`) and resourceNames, with
`*` wildcards. A ClusterRole with an `aggregationRule` gets the union of the rules of every
ClusterRole its selectors match, even when the stored object's own `rules` is empty (a snapshot
taken before the aggregation controller ran, or with `ignoreAggregatedRoles`-style exports).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_gitdrift import model

CONTROLLER = "system:serviceaccount:argocd:argocd-application-controller"
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")
RBAC_GROUP = "rbac.authorization.k8s.io"
MASTERS = "system:masters"

# Kubernetes' own guess (meta.UnsafeGuessKindToResource) gets these right except "endpoints".
_IRREGULAR = {"endpoints": "endpoints"}


def plural(group: str, kind: str, known: Mapping[tuple[str, str], str] | None = None) -> str:
    """The resource name for a kind: from discovery (or CRDs) when known, else lowercase plus
    "s" the way the API machinery guesses it (ingress -> ingresses, networkpolicy ->
    networkpolicies, endpoints -> endpoints)."""
    if known and (group, kind) in known:
        return known[(group, kind)]
    lower = kind.lower()
    if lower in _IRREGULAR:
        return _IRREGULAR[lower]
    if lower.endswith(("s", "x", "ch", "sh")):
        return lower + "es"
    if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + "s"


def plurals_from(objects: Iterable[model.Body]) -> dict[tuple[str, str], str]:
    """Resource names for custom kinds, from CustomResourceDefinitions among `objects`."""
    out: dict[tuple[str, str], str] = {}
    for body in objects:
        if body.get("kind") != "CustomResourceDefinition":
            continue
        spec = body.get("spec") or {}
        names = spec.get("names") or {}
        if spec.get("group") and names.get("kind") and names.get("plural"):
            out[(str(spec["group"]), str(names["kind"]))] = str(names["plural"])
    return out


@dataclass(frozen=True, slots=True, order=True)
class Question:
    """May the controller do `verb` on `group/resource` in `namespace` ("" = cluster-scoped)?"""

    verb: str
    group: str
    resource: str
    namespace: str
    name: str = ""
    subresource: str = ""

    def display(self) -> str:
        res = self.resource + (f".{self.group}" if self.group else "")
        if self.subresource:
            res += f"/{self.subresource}"
        where = f" in namespace {self.namespace}" if self.namespace else " (cluster-scoped)"
        return f"{self.verb} {res}{where}"

    def attributes(self) -> dict[str, str]:
        """The SubjectAccessReview spec.resourceAttributes for this question."""
        out = {"verb": self.verb, "group": self.group, "resource": self.resource}
        if self.namespace:
            out["namespace"] = self.namespace
        if self.name:
            out["name"] = self.name
        if self.subresource:
            out["subresource"] = self.subresource
        return out


@dataclass(frozen=True, slots=True)
class Answer:
    question: Question
    allowed: bool
    reason: str = ""  # the authorizer's reason; empty for a denial, as the server sends it
    how: str = "offline"  # "offline" (snapshot RBAC) | "SubjectAccessReview"


Authorizer = Callable[[Question], "Answer | None"]
"""Answers one question (None: it was not asked, so it has no answer); live, the API server's
SubjectAccessReviews (`Reviews.answer`)."""


@dataclass(frozen=True)
class Reviews:
    """What the API server answered a live run by SubjectAccessReview: one answer per question
    asked, or, when it would not answer (`failure`: "SubjectAccessReview forbidden", ...), none,
    and the run evaluates the RBAC objects it could read instead."""

    answers: Mapping[Question, Answer]
    failure: str = ""

    def answer(self, question: Question) -> Answer | None:
        return self.answers.get(question)


@dataclass(frozen=True, slots=True)
class Subject:
    user: str
    groups: tuple[str, ...]


def subject(user: str = CONTROLLER, groups: Sequence[str] | None = None) -> Subject:
    """A user and the groups the server puts it in (service accounts get their three groups)."""
    if groups is not None:
        return Subject(user, tuple(groups))
    parts = user.split(":")
    if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"]:
        return Subject(
            user,
            (
                "system:serviceaccounts",
                f"system:serviceaccounts:{parts[2]}",
                "system:authenticated",
            ),
        )
    return Subject(user, ("system:authenticated",))


def questions(
    items: Iterable[model.Drift | model.Manifest | model.ObjectKey],
    *,
    verbs: Sequence[str] = VERBS,
    plurals: Mapping[tuple[str, str], str] | None = None,
) -> list[Question]:
    """One question per verb for every kind and namespace the app renders, sorted."""
    seen: set[Question] = set()
    for item in items:
        key = item if isinstance(item, model.ObjectKey) else item.key
        if isinstance(item, model.Drift) and item.desired is None and item.live is None:
            continue
        resource = plural(key.group, key.kind, plurals)
        for verb in verbs:
            seen.add(Question(verb, key.group, resource, key.namespace))
    return sorted(seen, key=_fields)  # the dataclass order, compared as tuples in C


def _fields(q: Question) -> tuple[str, ...]:
    return (q.verb, q.group, q.resource, q.namespace, q.name, q.subresource)


# --------------------------------------------------------------------------- offline evaluator


def _meta(obj: model.Body, key: str) -> str:
    return str((obj.get("metadata") or {}).get(key) or "")


def _by_name(obj: model.Body) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))


def _first(item: tuple[tuple[str, str], model.Body]) -> tuple[str, str]:
    return item[0]


class Evaluator:
    """RBAC over a set of objects (the snapshot's Roles, ClusterRoles and bindings)."""

    def __init__(self, objects: Iterable[model.Body]) -> None:
        self.cluster_roles: dict[str, model.Body] = {}
        self.roles: dict[tuple[str, str], model.Body] = {}
        cluster_bindings: list[tuple[tuple[str, str], model.Body]] = []
        bindings: list[tuple[tuple[str, str], model.Body]] = []
        for obj in objects:
            group = str(obj.get("apiVersion") or "").rpartition("/")[0]
            if group != RBAC_GROUP:
                continue
            kind = obj.get("kind")
            if kind == "ClusterRole":
                self.cluster_roles[_meta(obj, "name")] = obj
            elif kind == "Role":
                self.roles[_by_name(obj)] = obj
            elif kind == "ClusterRoleBinding":
                cluster_bindings.append((_by_name(obj), obj))
            elif kind == "RoleBinding":
                bindings.append((_by_name(obj), obj))
        # by (namespace, name), read once per binding; the sort is stable, as by _by_name
        cluster_bindings.sort(key=_first)
        bindings.sort(key=_first)
        self.cluster_bindings: list[model.Body] = [b for _, b in cluster_bindings]
        self.bindings: list[model.Body] = [b for _, b in bindings]
        self._in_namespace: dict[str, list[model.Body]] = {}
        for (namespace, _), binding in bindings:
            found = self._in_namespace.get(namespace)
            if found is None:
                self._in_namespace[namespace] = [binding]
            else:
                found.append(binding)
        self._rules: dict[str, list[Mapping[str, Any]]] = {}
        self._answers: dict[tuple[Subject, Question], Answer] = {}
        self._grants: dict[tuple[Subject, str], list[tuple[model.Body, Mapping[str, Any]]]] = {}

    @property
    def usable(self) -> bool:
        """Enough RBAC to conclude anything: some ClusterRole and some binding were exported."""
        return bool(self.cluster_roles) and bool(self.cluster_bindings or self.bindings)

    def counts(self) -> dict[str, int]:
        return {
            "clusterRoles": len(self.cluster_roles),
            "roles": len(self.roles),
            "clusterRoleBindings": len(self.cluster_bindings),
            "roleBindings": len(self.bindings),
        }

    def cluster_role_rules(self, name: str) -> list[Mapping[str, Any]] | None:
        """The ClusterRole's rules, aggregated ones included; None when it does not exist."""
        if name not in self.cluster_roles:
            return None
        if name not in self._rules:
            self._rules[name] = self._aggregate(name, set())
        return self._rules[name]

    def _aggregate(self, name: str, visiting: set[str]) -> list[Mapping[str, Any]]:
        role = self.cluster_roles[name]
        rules = [r for r in role.get("rules") or [] if isinstance(r, Mapping)]
        selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
        if not selectors:
            return rules
        visiting = visiting | {name}
        for other in sorted(self.cluster_roles):
            if other in visiting:
                continue
            labels = (self.cluster_roles[other].get("metadata") or {}).get("labels") or {}
            if any(selector_matches(s, labels) for s in selectors if isinstance(s, Mapping)):
                for rule in self._aggregate(other, visiting):
                    if rule not in rules:
                        rules.append(rule)
        return rules

    def authorize(self, who: Subject, question: Question) -> Answer:
        """Remembered per (subject, question): one evaluator serves every app of a run."""
        answer = self._answers.get((who, question))
        if answer is None:
            answer = self._answers[(who, question)] = self._authorize(who, question)
        return answer

    def _authorize(self, who: Subject, question: Question) -> Answer:
        if MASTERS in who.groups:
            return Answer(question, True)
        for binding, subj in self._granted(who, ""):
            if self._allows(binding, "", question):
                return Answer(question, True, "RBAC: allowed by " + _describe(binding, subj))
        if question.namespace:
            for binding, subj in self._granted(who, question.namespace):
                if self._allows(binding, question.namespace, question):
                    return Answer(question, True, "RBAC: allowed by " + _describe(binding, subj))
        return Answer(question, False)

    def authorizer(self, who: Subject) -> Authorizer:
        return lambda question: self.authorize(who, question)

    def _granted(self, who: Subject, namespace: str) -> list[tuple[model.Body, Mapping[str, Any]]]:
        """The bindings (cluster-wide for namespace "") naming `who`, in order, each with the
        first of its subjects that does: found once per subject and namespace."""
        key = (who, namespace)
        found = self._grants.get(key)
        if found is None:
            bindings = self._in_namespace.get(namespace, ()) if namespace else self.cluster_bindings
            found = []
            for binding in bindings:
                for subj in binding.get("subjects") or []:
                    if isinstance(subj, Mapping) and _applies(subj, who, namespace):
                        found.append((binding, subj))
                        break
            self._grants[key] = found
        return found

    def _allows(self, binding: model.Body, namespace: str, q: Question) -> bool:
        ref = binding.get("roleRef") or {}
        if ref.get("kind") == "ClusterRole":
            rules = self.cluster_role_rules(str(ref.get("name") or ""))
        elif ref.get("kind") == "Role" and namespace:
            role = self.roles.get((namespace, str(ref.get("name") or "")))
            rules = [r for r in (role or {}).get("rules") or [] if isinstance(r, Mapping)]
        else:
            rules = None
        return bool(rules) and any(rule_allows(rule, q) for rule in rules or ())


def _applies(subj: Mapping[str, Any], who: Subject, binding_namespace: str) -> bool:
    kind = subj.get("kind")
    name = str(subj.get("name") or "")
    if kind == "User":
        return who.user == name
    if kind == "Group":
        return name in who.groups
    if kind == "ServiceAccount":
        namespace = str(subj.get("namespace") or binding_namespace)
        return who.user == f"system:serviceaccount:{namespace}:{name}"
    return False


def rule_allows(rule: Mapping[str, Any], q: Question) -> bool:
    """Does one PolicyRule cover a resource request?"""
    verbs = rule.get("verbs") or []
    if "*" not in verbs and q.verb not in verbs:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and q.group not in groups:
        return False
    combined = f"{q.resource}/{q.subresource}" if q.subresource else q.resource
    resources = rule.get("resources") or []
    if not any(
        r in ("*", combined) or (q.subresource and r == f"*/{q.subresource}") for r in resources
    ):
        return False
    names = rule.get("resourceNames") or []
    return not names or q.name in names


def _describe(binding: model.Body, subj: Mapping[str, Any]) -> str:
    ref = binding.get("roleRef") or {}
    namespace = _meta(binding, "namespace")
    name = _meta(binding, "name")
    what = f'RoleBinding "{name}/{namespace}"' if namespace else f'ClusterRoleBinding "{name}"'
    kind = str(subj.get("kind") or "")
    who = str(subj.get("name") or "")
    if kind == "ServiceAccount":
        who = f"{who}/{subj.get('namespace') or namespace}"
    return f'{what} of {ref.get("kind")} "{ref.get("name")}" to {kind} "{who}"'


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """A metav1.LabelSelector: matchLabels and matchExpressions (an empty selector matches
    everything)."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key = expr.get("key")
        op = expr.get("operator")
        values = expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def ask(questions_: Iterable[Question], authorize: Authorizer) -> list[Answer]:
    """The answers to `questions_`, in order; a question `authorize` has no answer for is left
    out."""
    return [a for a in map(authorize, questions_) if a is not None]


def offline(
    objects: Iterable[model.Body] | Evaluator,
    questions_: Sequence[Question],
    user: str = CONTROLLER,
) -> tuple[list[Answer], Evaluator]:
    """Answer `questions_` from RBAC objects (or an evaluator already built over them); the
    evaluator tells whether that is conclusive."""
    evaluator = objects if isinstance(objects, Evaluator) else Evaluator(objects)
    return ask(questions_, evaluator.authorizer(subject(user))), evaluator


def service_account_user(text: str) -> str:
    """`--controller-sa`: `NAMESPACE:NAME`, `NAMESPACE/NAME` or the full
    `system:serviceaccount:NAMESPACE:NAME` -> the username the API server authenticates."""
    text = text.strip()
    if text.startswith("system:serviceaccount:"):
        return text
    namespace, sep, name = text.replace("/", ":").partition(":")
    if not sep or not namespace or not name or ":" in name:
        raise ValueError(f"{text!r}: expected NAMESPACE:NAME or system:serviceaccount:NS:NAME")
    return f"system:serviceaccount:{namespace}:{name}"
