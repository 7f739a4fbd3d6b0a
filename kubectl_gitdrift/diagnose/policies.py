"""Remediation artifacts, generated as text: the git patch that adopts a live value (a one-line,
comment-preserving edit of the exact source line), the kubectl patch that reverts it, the
Application patches (selfHeal, ignoreDifferences), admission policies that keep manual writes out
(ValidatingAdmissionPolicy + binding, Kyverno), a drift alert (PrometheusRule), and a Role that
gives the controller what it lacks. Pure: callers read and write the files.

Secrets: nothing here ever emits a value of a Secret (git's, the cluster's, or the plain text a
`stringData` apply leaves in the last-applied annotation): callers pass `secret=True` changes
only to be refused.
"""

from __future__ import annotations

import difflib
import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from kubectl_gitdrift import model
from kubectl_gitdrift.diagnose import rbac

BREAK_GLASS_GROUP = "break-glass"


def is_secret(key: model.ObjectKey, change: model.Change | None = None) -> bool:
    return (key.group, key.kind) == ("", "Secret") or bool(change and change.secret)


# --------------------------------------------------------------------------- adopt: edit a line


def yaml_scalar(value: Any) -> str:
    """`value` as a YAML flow scalar that reads back as the same value."""
    if isinstance(value, str):
        plain = (
            bool(value)
            and "\n" not in value
            and value.strip() == value
            and not value.startswith(("#", "&", "*", "!", "|", ">", "%", "@", "`", "{", "[", "-"))
            and ": " not in value
            and " #" not in value
        )
        try:
            if plain and yaml.safe_load(value) == value:
                return value
        except yaml.YAMLError:
            pass
    return json.dumps(value)


def _split_image(image: str) -> tuple[str, str, str]:
    name, _, digest = image.partition("@")
    tag = ""
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        name, tag = name[:colon], name[colon + 1 :]
    return name, tag, digest


_COMMENT = re.compile(r"\s+#.*$")


def edit_line(line: str, old: Any, new: Any) -> str | None:
    """`line` with the scalar that spells `old` replaced by `new` (quoting kept when it still
    reads back right); None when `old` is not on the line as a whole scalar."""
    ending = line[len(line.rstrip("\r\n")) :]
    body = line[: len(line) - len(ending)]
    comment = _COMMENT.search(body)
    code, tail = (body[: comment.start()], body[comment.start() :]) if comment else (body, "")
    spellings = _spellings(old)
    for spelled in spellings:
        for match in reversed(list(re.finditer(re.escape(spelled), code))):
            before = code[: match.start()]
            after = code[match.end() :]
            if not re.search(r"(^|[:\-\[{,]\s*|^\s*)$", before) or not re.match(
                r"^\s*([,\]}]|$)", after
            ):
                continue
            if spelled[:1] in "\"'" and isinstance(new, str):
                replacement = (
                    spelled[0] + new + spelled[0] if spelled[0] == "'" else json.dumps(new)
                )
                if "'" in new and spelled[0] == "'":
                    replacement = json.dumps(new)
            else:
                replacement = yaml_scalar(new)
            return before + replacement + after + tail + ending
    return None


def _spellings(value: Any) -> list[str]:
    if isinstance(value, bool):
        return ["true", "True", "TRUE"] if value else ["false", "False", "FALSE"]
    if isinstance(value, int | float):
        return [json.dumps(value), f'"{value}"']
    if isinstance(value, str):
        return [json.dumps(value), f"'{value}'", value]
    return []


@dataclass(frozen=True, slots=True)
class LineEdit:
    file: str  # repo-relative
    line: int  # 1-based
    old: Any
    new: Any
    how: str  # locate's how: replicas | images | patch | resource


def adopt_edit(how: str, file: str, line: int, desired: Any, live: Any) -> LineEdit | None:
    """The one-line edit that makes git say `live` where it says `desired`."""
    if line <= 0 or how in ("overlay", "generator"):
        return None
    if how == "images" and isinstance(desired, str) and isinstance(live, str):
        d_name, d_tag, d_digest = _split_image(desired)
        l_name, l_tag, l_digest = _split_image(live)
        # the kustomization line holds one part of the image: try each
        for old, new in ((d_tag, l_tag), (d_digest, l_digest), (d_name, l_name)):
            if old and new and old != new:
                return LineEdit(file, line, old, new, how)
        return None
    if isinstance(live, Mapping | list) or isinstance(desired, Mapping | list):
        return None
    return LineEdit(file, line, desired, live, how)


def apply_edits(text: str, edits: Sequence[LineEdit]) -> tuple[str, list[LineEdit]]:
    """`text` with every edit applied; also the edits that did not fit their line. An edit on
    the line of a block scalar (`key: |`, `|-`, `>`, ...) rewrites the block; edits are applied
    from the last line up, so a block that grows or shrinks moves no line still to edit."""
    lines = text.splitlines(keepends=True)
    failed = []
    for edit in sorted(edits, key=lambda e: e.line, reverse=True):
        if not 1 <= edit.line <= len(lines):
            failed.append(edit)
            continue
        index = edit.line - 1
        edited = edit_line(lines[index], edit.old, edit.new)
        if edited is not None:
            lines[index] = edited
            continue
        block = edit_block(lines, index, edit.old, edit.new)
        if block is None:
            failed.append(edit)
            continue
        end, replacement = block
        lines[index:end] = replacement
    failed.sort(key=edits.index)
    return "".join(lines), failed


_BLOCK_HEADER = re.compile(
    r"^(?P<head>(?:.*?:|[ \t]*-)[ \t]+)(?P<style>[|>])(?P<mods>[+-]?)(?P<tail>[ \t]*(?:#.*)?)$"
)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def edit_block(
    lines: Sequence[str], index: int, old: Any, new: Any
) -> tuple[int, list[str]] | None:
    """Rewrite the block scalar whose header is `lines[index]` (`key: |`, `- >-`, ...) from
    `old` to `new`: (the index past the old block, the lines that replace `lines[index:end]`).
    The new block is literal (`|`) at the old content's indentation, with the chomping
    indicator the new text needs (`|-` no final newline, `|` one, `|+` more), so it reads back
    as `new` exactly; text a literal block cannot hold (a first line that starts with a space,
    a carriage return) is written as one double-quoted scalar instead. None when the line is
    no block header (an indentation indicator included) or the block does not read as `old`."""
    if not isinstance(old, str) or not isinstance(new, str):
        return None
    header = lines[index]
    ending = header[len(header.rstrip("\r\n")) :] or "\n"
    found = _BLOCK_HEADER.match(header.rstrip("\r\n"))
    if found is None:
        return None
    head, style, mods, tail = found.group("head", "style", "mods", "tail")
    parent = len(head) - len(head.lstrip(" -"))  # the column of the key (or the item)
    end = index + 1
    content = parent + 2
    first = next((ln for ln in lines[end:] if ln.strip()), None)
    if first is not None and _indent(first) > parent:
        content = _indent(first)
        while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) >= content):
            end += 1
    if _load_block(style + mods, lines[index + 1 : end]) != old:
        return None
    last = end
    while last > index + 1 and not lines[last - 1].strip():
        last -= 1  # blank lines after the text: separators (or a kept text's, replaced below)
    body = new.rstrip("\n")
    trailing = len(new) - len(body)
    chomp = "-" if trailing == 0 else "" if trailing == 1 else "+"
    if chomp == "+" or mods == "+":
        last = end  # a kept block's blank lines are its text; a new one must not absorb others
    rows = body.split("\n")
    block = [(" " * content + row if row else "") + ending for row in rows]
    block += [ending] * (trailing - 1 if chomp == "+" else 0)
    fits = bool(body) and "\r" not in new and not body.lstrip("\n").startswith((" ", "\t"))
    if fits and _load_block("|" + chomp, block) == new:
        return last, [f"{head}|{chomp}{tail}{ending}", *block]
    quoted = json.dumps(new, ensure_ascii=False)
    return last, [f"{head}{quoted}{tail}{ending}"]


def _load_block(indicator: str, content: Sequence[str]) -> Any:
    """What a block scalar with this indicator and these content lines reads as."""
    try:
        loaded = yaml.safe_load("k: " + indicator + "\n" + "".join(content))
    except yaml.YAMLError:
        return None
    return loaded.get("k") if isinstance(loaded, dict) else None


def patched(text: str, file: str, diff: str) -> str:
    """`text` (of `file`) with the section of `diff` for `file` applied, for diffs
    `unified_diff` wrote: what the file says once `git apply` took them."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    taken = 0  # old lines consumed
    inside = False
    last = ""
    for row in diff.splitlines(keepends=True):
        if row.startswith("diff --git "):
            inside = row == f"diff --git a/{file} b/{file}\n"
            continue
        if not inside or row.startswith(("--- ", "+++ ")):
            continue
        if row.startswith("@@"):
            start = int(row.split()[1].lstrip("-").split(",")[0])
            count = row.split()[1].lstrip("-").split(",")
            first = start - 1 if len(count) == 1 or count[1] != "0" else start
            out += lines[taken:first]
            taken = first
        elif row.startswith("\\"):
            if out and last != "-":
                out[-1] = out[-1].rstrip("\n")
        elif row[:1] in (" ", "-"):
            if row[:1] == " ":
                out.append(lines[taken])
            taken += 1
        elif row[:1] == "+":
            out.append(row[1:])
        last = row[:1]
    return "".join(out + lines[taken:])


def unified_diff(file: str, old: str, new: str) -> str:
    """A `git apply`-able diff of one file, paths a/FILE b/FILE relative to the repo root."""
    if old == new:
        return ""
    out = [f"diff --git a/{file} b/{file}\n"]
    for line in difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{file}", f"b/{file}"
    ):
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


# --------------------------------------------------------------------------- revert


def revert_patch(changes: Iterable[model.Change]) -> dict[str, Any] | None:
    """A strategic-merge patch that puts git's values back (merge-keyed list items addressed by
    their keys); None when no change can be expressed that way."""
    patch: dict[str, Any] = {}
    used = False
    for change in changes:
        if change.secret:
            continue
        if any(isinstance(p, int) for p in change.path):
            continue  # an index into an atomic list: not patchable piecemeal
        value = None if change.op is model.Op.REMOVE else change.desired
        if _put(patch, change.path, value):
            used = True
    return patch if used else None


def _put(node: dict[str, Any], path: model.FieldPath, value: Any) -> bool:
    if not path:
        return False
    head, rest = path[0], path[1:]
    if isinstance(head, model.ListKey):
        return False
    if not rest:
        node[str(head)] = value
        return True
    if isinstance(rest[0], model.ListKey):
        items = node.setdefault(str(head), [])
        if not isinstance(items, list):
            return False
        wanted = dict(rest[0].fields)
        item = next((i for i in items if all(i.get(k) == v for k, v in wanted.items())), None)
        if item is None:
            item = dict(wanted)
            items.append(item)
        if len(rest) == 1:
            if value is None:
                item["$patch"] = "delete"
            elif isinstance(value, Mapping):
                item.update(value)
            return True
        return _put(item, rest[1:], value)
    child = node.setdefault(str(head), {})
    return isinstance(child, dict) and _put(child, rest, value)


def kubectl_patch(key: model.ObjectKey, patch: Mapping[str, Any], kind: str = "strategic") -> str:
    ns = f" -n {key.namespace}" if key.namespace else ""
    body = json.dumps(patch, sort_keys=True, separators=(",", ":"))
    return f"kubectl patch {key.short()}{ns} --type {kind} -p {shlex.quote(body)}"


# --------------------------------------------------------------------------- Application


def app_arg(app: model.Application) -> str:
    return app.name if app.namespace == "argocd" else f"{app.namespace}/{app.name}"


def selfheal_patch(app: model.Application) -> str:
    patch = {"spec": {"syncPolicy": {"automated": {"selfHeal": True}}}}
    body = json.dumps(patch, separators=(",", ":"))
    return (
        f"kubectl patch application {app.name} -n {app.namespace} --type merge "
        f"-p {shlex.quote(body)}"
    )


def ignore_differences(
    app: model.Application,
    key: model.ObjectKey,
    pointers: Sequence[str],
    managers: Sequence[str] = (),
) -> tuple[str, str]:
    """(YAML snippet for spec.ignoreDifferences, the kubectl JSON patch that appends it)."""
    entry: dict[str, Any] = {"group": key.group, "kind": key.kind, "name": key.name}
    if key.namespace:
        entry["namespace"] = key.namespace
    if pointers:
        entry["jsonPointers"] = list(pointers)
    if managers:
        entry["managedFieldsManagers"] = list(managers)
    snippet = _dump({"spec": {"ignoreDifferences": [entry]}})
    if app.ignore_rules:
        ops: list[dict[str, Any]] = [
            {"op": "add", "path": "/spec/ignoreDifferences/-", "value": entry}
        ]
    else:
        ops = [{"op": "add", "path": "/spec/ignoreDifferences", "value": [entry]}]
    if not app.sync_policy.has_option("RespectIgnoreDifferences=true"):
        opts = [*app.sync_policy.sync_options, "RespectIgnoreDifferences=true"]
        ops.append({"op": "add", "path": "/spec/syncPolicy/syncOptions", "value": opts})
        snippet += "# and keep the ignored live value when syncing:\n" + _dump(
            {"spec": {"syncPolicy": {"syncOptions": opts}}}
        )
    body = json.dumps(ops, separators=(",", ":"))
    command = (
        f"kubectl patch application {app.name} -n {app.namespace} --type json "
        f"-p {shlex.quote(body)}"
    )
    return snippet, command


# --------------------------------------------------------------------------- admission


def _kinds(
    keys: Iterable[model.ObjectKey], plurals: Mapping[tuple[str, str], str] | None
) -> dict[str, list[str]]:
    """API group -> resource names (with `/scale` for scalable kinds), for namespaced keys."""
    out: dict[str, set[str]] = {}
    for key in keys:
        if not key.namespace:
            continue
        resource = rbac.plural(key.group, key.kind, plurals)
        names = out.setdefault(key.group, set())
        names.add(resource)
        if key.kind in ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController"):
            names.add(f"{resource}/scale")
    return {g: sorted(r) for g, r in sorted(out.items())}


def _slug(app: model.Application) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", f"gitdrift-{app.name}-gitops-only".lower()).strip("-")[:63]


def _sa_parts(controller: str) -> tuple[str, str]:
    parts = controller.split(":")
    if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"]:
        return parts[2], parts[3]
    return "argocd", "argocd-application-controller"


def validating_admission_policy(
    app: model.Application,
    keys: Iterable[model.ObjectKey],
    *,
    controller: str = rbac.CONTROLLER,
    break_glass: str = BREAK_GLASS_GROUP,
    plurals: Mapping[tuple[str, str], str] | None = None,
) -> str:
    """A ValidatingAdmissionPolicy + binding (admissionregistration.k8s.io/v1, Kubernetes 1.30+)
    that rejects UPDATE (which includes PATCH and /scale writes) of the app's kinds in its
    destination namespace by anyone but the Argo CD controller, the break-glass group, and the
    cluster's own controllers (kube-system service accounts and `system:` users other than
    service accounts, e.g. the deployment controller writing its revision annotation)."""
    name = _slug(app)
    kinds = _kinds(keys, plurals)
    rules = [
        {"apiGroups": [group], "apiVersions": ["*"], "operations": ["UPDATE"], "resources": res}
        for group, res in kinds.items()
    ]
    expression = (
        f"request.userInfo.username == '{controller}' || "
        f"'{break_glass}' in request.userInfo.groups || "
        "request.userInfo.username.startsWith('system:serviceaccount:kube-system:') || "
        "(request.userInfo.username.startsWith('system:') && "
        "!request.userInfo.username.startsWith('system:serviceaccount:'))"
    )
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": rules},
            "validations": [
                {
                    "expression": expression,
                    "messageExpression": (
                        f"'{app.name} is managed by Argo CD from git: change it there "
                        f"(kubectl gitdrift {app_arg(app)}); break-glass: group {break_glass}'"
                    ),
                    "reason": "Forbidden",
                }
            ],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": app.dest_namespace}
                }
            },
        },
    }
    return _dump_all([policy, binding])


def kyverno_policy(
    app: model.Application,
    keys: Iterable[model.ObjectKey],
    *,
    controller: str = rbac.CONTROLLER,
    break_glass: str = BREAK_GLASS_GROUP,
    plurals: Mapping[tuple[str, str], str] | None = None,
) -> str:
    """The same rule as a Kyverno ClusterPolicy (kyverno.io/v1, Enforce)."""
    sa_ns, sa_name = _sa_parts(controller)
    kinds = []
    for key in sorted({(k.group, k.kind) for k in keys if k.namespace}):
        group, kind = key
        kinds.append(f"{group}/*/{kind}" if group else kind)
        if kind in ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController"):
            kinds.append(f"{kind}/scale")
    policy = {
        "apiVersion": "kyverno.io/v1",
        "kind": "ClusterPolicy",
        "metadata": {
            "name": _slug(app),
            "annotations": {
                "policies.kyverno.io/description": (
                    f"{app.name} is managed by Argo CD: only its controller writes it."
                )
            },
        },
        "spec": {
            "validationFailureAction": "Enforce",
            "background": False,
            "rules": [
                {
                    "name": "gitops-only",
                    "match": {
                        "any": [
                            {
                                "resources": {
                                    "kinds": kinds,
                                    "namespaces": [app.dest_namespace],
                                    "operations": ["UPDATE"],
                                }
                            }
                        ]
                    },
                    "exclude": {
                        "any": [
                            {
                                "subjects": [
                                    {"kind": "ServiceAccount", "name": sa_name, "namespace": sa_ns}
                                ]
                            },
                            {"subjects": [{"kind": "Group", "name": break_glass}]},
                            {
                                "subjects": [
                                    {"kind": "Group", "name": "system:serviceaccounts:kube-system"}
                                ]
                            },
                        ]
                    },
                    "validate": {
                        "message": (
                            f"{app.name} is managed by Argo CD from git: change it there; "
                            f"break-glass: group {break_glass}"
                        ),
                        "deny": {},
                    },
                }
            ],
        },
    }
    return _dump(policy)


def prometheus_rule(app: model.Application, *, wait: str = "15m") -> str:
    """A PrometheusRule (prometheus-operator) alerting while Argo CD reports the app OutOfSync."""
    selector = f'name="{app.name}",namespace="{app.namespace}",sync_status="OutOfSync"'
    rule = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": f"gitdrift-{app.name}-outofsync"[:63], "namespace": app.namespace},
        "spec": {
            "groups": [
                {
                    "name": f"gitdrift.{app.name}",
                    "rules": [
                        {
                            "alert": "ArgoCDApplicationOutOfSync",
                            "expr": f"argocd_app_info{{{selector}}} == 1",
                            "for": wait,
                            "labels": {"severity": "warning"},
                            "annotations": {
                                "summary": f"Argo CD application {app.name} is OutOfSync",
                                "description": (
                                    "selfHeal is off, so nothing reverts live changes: run "
                                    f"kubectl gitdrift {app_arg(app)} to see who changed what."
                                ),
                            },
                        }
                    ],
                }
            ]
        },
    }
    return _dump(rule)


def controller_role(
    app: model.Application, denied: Sequence[rbac.Question], controller: str = rbac.CONTROLLER
) -> str:
    """A Role + RoleBinding per namespace granting the controller the verbs it was denied
    (a ClusterRole + ClusterRoleBinding for cluster-scoped kinds)."""
    sa_ns, sa_name = _sa_parts(controller)
    by_ns: dict[str, dict[tuple[str, str], set[str]]] = {}
    for q in denied:
        by_ns.setdefault(q.namespace, {}).setdefault((q.group, q.resource), set()).add(q.verb)
    docs: list[dict[str, Any]] = []
    name = f"argocd-{app.name}-controller"[:63]
    for namespace, grants in sorted(by_ns.items()):
        rules = [
            {"apiGroups": [g], "resources": [r], "verbs": sorted(v)}
            for (g, r), v in sorted(grants.items())
        ]
        meta: dict[str, Any] = {"name": name}
        if namespace:
            meta["namespace"] = namespace
        role_kind = "Role" if namespace else "ClusterRole"
        docs.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": role_kind,
                "metadata": meta,
                "rules": rules,
            }
        )
        docs.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
                "metadata": dict(meta),
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": role_kind,
                    "name": name,
                },
                "subjects": [{"kind": "ServiceAccount", "name": sa_name, "namespace": sa_ns}],
            }
        )
    return _dump_all(docs)


def can_i(q: rbac.Question, controller: str = rbac.CONTROLLER) -> str:
    res = q.resource + (f".{q.group}" if q.group else "")
    ns = f" -n {q.namespace}" if q.namespace else ""
    return f"kubectl auth can-i {q.verb} {res}{ns} --as {controller}"


_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's emitter when built


def _dump(doc: Any) -> str:
    """Block-style YAML in the given key order (snippets users paste)."""
    return str(yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False))


def _dump_all(docs: Sequence[Any]) -> str:
    return str(yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, default_flow_style=False))
