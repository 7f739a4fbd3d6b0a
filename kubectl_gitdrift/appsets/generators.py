"""The ApplicationSet generators, as the controller runs them (applicationset/generators/*.go):
each gives a list of param sets, and the template they fill.

- `list`: its `elements` (without goTemplate every value a string, `values.K` from an element's
  `values` mapping), then `elementsYaml`'s.
- `git` directories: every directory of the repository at the revision, depth first in name
  order as the repo-server walks them, hidden ones (and all below them) left out; a directory
  is kept when some `directories[].path` matches it (Go's path.Match) and no `exclude: true`
  item does, whatever their order. Params `path`, `path.basename`, `path.basenameNormalized`,
  `path[N]` (`path.segments` with goTemplate), under `pathParamPrefix` when it is set.
- `git` files: the files `git ls-files -- PATTERN` lists for the include items, less those of the
  exclude items, in path order; each one's YAML or JSON (one mapping, or a list of them) flattened
  with dots (nested with goTemplate), plus `path` (the directory), `path.basename`,
  `path.filename`, their `Normalized` forms and `path[N]` / `path.segments`.
- `clusters`: the clusters whose Secret matches `selector`, by name, then Argo CD's in-cluster
  default, which is there only with an empty selector and when no Secret declares its server:
  `name`, `nameNormalized`, `server`, `project`, `metadata.labels.K`/`metadata.annotations.K`
  (a `metadata` mapping with goTemplate; none for the in-cluster default); `flatList` makes
  one param set `clusters` of them all.
- `values` (git, clusters): each value templated with the generator's params, as `values.K`.
- `matrix`: exactly two children; the second is templated with each param set of the first, and
  each pair joined (goTemplate: deep merge, the first child winning; else flat keys that must
  agree). `merge`: two or more children; each later child's param sets override the first
  child's that share the values of `mergeKeys`; the first child's order is kept (Argo CD's is
  a map's). A matrix or merge may hold one more level of matrix or merge, no deeper.
- `selector` beside a generator filters its param sets, flattened, as labels (any value allowed).
- A generator's own `template` is filled from the ApplicationSet's (`params.fill`).
- `scmProvider`, `pullRequest`, `clusterDecisionResource` and `plugin` need a service gitdrift
  does not call: an AppSetError that names the generator.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.appsets import fasttemplate, globs, params
from kubectl_gitdrift.appsets.inputs import AppSetError, Cluster, Inputs
from kubectl_gitdrift.errors import GitDriftError

KINDS = (
    "list",
    "clusters",
    "git",
    "scmProvider",
    "clusterDecisionResource",
    "pullRequest",
    "matrix",
    "merge",
    "plugin",
)
"""The generator kinds in the order of Go's ApplicationSetGenerator fields: a generator entry
naming two kinds yields both, in this order."""

REMOTE = {
    "scmProvider": "the SCM provider's API, to list repositories",
    "pullRequest": "the SCM provider's API, to list pull requests",
    "clusterDecisionResource": "the cluster's decision resources (a duck-typed custom resource)",
    "plugin": "the plugin's HTTP service",
}
IN_CLUSTER_NAME = "in-cluster"
IN_CLUSTER_SERVER = "https://kubernetes.default.svc"
_MISSING_KEY = ("map has no entry for key", "can't evaluate field")
_QUALIFIED = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")

Params = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Context:
    """What every generator of one ApplicationSet shares."""

    inputs: Inputs
    go_template: bool = False
    options: tuple[str, ...] = ()  # goTemplateOptions

    def replace(self, text: str, data: Mapping[str, Any], *, options: Sequence[str] = ()) -> str:
        """`text` templated with `data` in the ApplicationSet's syntax (Argo CD's Replace)."""
        if not self.go_template:
            return fasttemplate.render(text, data)
        if "{{" not in text:
            return text  # text/template writes text without actions as it is
        from kubectl_gitdrift.appsets.gotemplate import render as go_render

        return go_render(text, data, options=tuple(options or self.options))


@dataclass(frozen=True, slots=True)
class Generated:
    """One generator kind's result: its param sets, and the template they fill."""

    kind: str
    params: list[Params]
    template: dict[str, Any]
    where: str  # "generators[0].list"


def transform(
    generator: Any,
    ctx: Context,
    *,
    where: str,
    template: Mapping[str, Any],
    given: Mapping[str, Any] | None = None,
    depth: int = 0,
) -> list[Generated]:
    """Every kind `generator` names, each with its param sets (filtered by its `selector`) and
    its template filled from `template` (Argo CD's Transform). `given`: the params of a matrix's
    first child, which the second child is templated with. `depth`: 0 at the top, 1 in a
    matrix or merge, 2 in one of those nested."""
    if not isinstance(generator, Mapping):
        raise AppSetError(
            f"{where}: a generator must be a mapping, got {yamlio.type_name(generator)}"
        )
    unknown = sorted(k for k in generator if k not in KINDS and k != "selector")
    if unknown:
        raise AppSetError(
            f"{where}: unknown generator {', '.join(unknown)}",
            hint="a generator is one of " + ", ".join(KINDS),
        )
    kinds = [k for k in KINDS if generator.get(k) is not None]
    if not kinds:
        raise AppSetError(f"{where}: no generator given (one of {', '.join(KINDS)})")
    selector = None
    if generator.get("selector") is not None:
        selector = parse_selector(generator["selector"], f"{where}.selector", values=False)
    out: list[Generated] = []
    for kind in kinds:
        at = f"{where}.{kind}"
        spec = generator[kind]
        if not isinstance(spec, Mapping):
            raise AppSetError(f"{at}: a mapping expected, got {yamlio.type_name(spec)}")
        if depth >= 2 and kind in ("matrix", "merge"):
            raise AppSetError(
                f"{at}: a {kind} nested in a matrix or merge that is itself nested: Argo CD "
                "allows two levels of matrix and merge, no more"
            )
        own = spec.get("template") or {}
        if not isinstance(own, Mapping):
            raise AppSetError(f"{at}.template: a mapping expected, got {yamlio.type_name(own)}")
        merged = params.fill(dict(own), dict(template))
        if given:
            spec = interpolate(kind, spec, given, ctx)
        found = _GENERATE[kind](spec, ctx, at, depth)
        if selector is not None:
            found = [p for p in found if selector.matches(params.flatten(p))]
        out.append(Generated(kind, found, dict(merged or {}), at))
    return out


# --------------------------------------------------------------------------- list


def _list(spec: Mapping[str, Any], ctx: Context, at: str, depth: int) -> list[Params]:
    elements = spec.get("elements") or []
    if not isinstance(elements, list):
        raise AppSetError(f"{at}.elements: a list expected, got {yamlio.type_name(elements)}")
    out: list[Params] = []
    for i, element in enumerate(elements):
        here = f"{at}.elements[{i}]"
        if not isinstance(element, Mapping):
            raise AppSetError(f"{here}: a mapping expected, got {yamlio.type_name(element)}")
        out.append(dict(element) if ctx.go_template else _flat_element(element, here))
    text = spec.get("elementsYaml")
    if text:
        if not isinstance(text, str):
            raise AppSetError(f"{at}.elementsYaml: a string expected, got {yamlio.type_name(text)}")
        docs = _load(text, f"{at}.elementsYaml")
        doc = docs[0] if docs else None
        if doc is not None and not isinstance(doc, list):
            raise AppSetError(f"{at}.elementsYaml: a list expected, got {yamlio.type_name(doc)}")
        for i, element in enumerate(doc or ()):
            if element is not None and not isinstance(element, Mapping):
                raise AppSetError(
                    f"{at}.elementsYaml[{i}]: a mapping expected, got {yamlio.type_name(element)}"
                )
            out.append(dict(element or {}))
    return out


def _flat_element(element: Mapping[str, Any], here: str) -> Params:
    """A list element without goTemplate: every value a string, `values` a mapping of them."""
    out: Params = {}
    for key, value in element.items():
        if key == "values":
            if not isinstance(value, Mapping):
                raise AppSetError(
                    f"{here}.values: a mapping expected, got {yamlio.type_name(value)}"
                )
            for name, item in value.items():
                out[f"values.{name}"] = _string(item, f"{here}.values.{name}")
        else:
            out[key] = _string(value, f"{here}.{key}")
    return out


def _string(value: Any, here: str) -> str:
    if not isinstance(value, str):
        raise AppSetError(
            f"{here}: {yamlio.type_name(value)} where a string is expected "
            "(without goTemplate, list elements hold strings)",
            hint="quote the value, or set goTemplate: true",
        )
    return value


# --------------------------------------------------------------------------- git


def _git(spec: Mapping[str, Any], ctx: Context, at: str, depth: int) -> list[Params]:
    repo_url = spec.get("repoURL")
    if not isinstance(repo_url, str) or not repo_url:
        raise AppSetError(f"{at}.repoURL: missing")
    revision = spec.get("revision") or "HEAD"
    if not isinstance(revision, str):
        raise AppSetError(f"{at}.revision: a string expected, got {yamlio.type_name(revision)}")
    prefix = spec.get("pathParamPrefix") or ""
    if not isinstance(prefix, str):
        raise AppSetError(f"{at}.pathParamPrefix: a string expected")
    values = _values(spec, at)
    if spec.get("directories"):
        items = _items(spec, "directories", at)
        for i, (pattern, _exclude) in enumerate(items):
            try:
                globs.check_go_pattern(pattern)
            except globs.BadPattern as exc:
                raise AppSetError(f"{at}.directories[{i}].path: {exc}") from None
        found = [
            _dir_params(d, prefix, ctx) for d in _directories(ctx, repo_url, revision, items, at)
        ]
    elif spec.get("files"):
        items = _items(spec, "files", at)
        found = []
        for path, data in _files(ctx, repo_url, revision, items, at):
            for obj in _file_objects(data, f"{at}: {repo_url} {path}"):
                found.append(_file_params(obj, path, prefix, ctx))
    else:
        raise AppSetError(f"{at}: neither directories nor files given")
    return [_with_values(p, values, ctx, at) for p in found]


def _items(spec: Mapping[str, Any], field: str, at: str) -> list[tuple[str, bool]]:
    raw = spec[field]
    if not isinstance(raw, list):
        raise AppSetError(f"{at}.{field}: a list expected, got {yamlio.type_name(raw)}")
    out: list[tuple[str, bool]] = []
    for i, item in enumerate(raw):
        here = f"{at}.{field}[{i}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("path"), str):
            raise AppSetError(f"{here}.path: missing")
        exclude = item.get("exclude", False)
        if not isinstance(exclude, bool):
            raise AppSetError(f"{here}.exclude: true or false expected")
        out.append((item["path"], exclude))
    return out


def _paths(ctx: Context, repo_url: str, revision: str, at: str) -> Sequence[str]:
    try:
        return ctx.inputs.repo.paths(repo_url, revision)
    except AppSetError:
        raise
    except GitDriftError as exc:
        raise AppSetError(f"{at}: {exc.message}", hint=exc.hint) from None


def _directories(
    ctx: Context, repo_url: str, revision: str, items: list[tuple[str, bool]], at: str
) -> list[str]:
    """The directories the items select, in the order the repo-server walks them."""
    dirs: set[str] = set()
    for path in _paths(ctx, repo_url, revision, at):
        parts = path.split("/")[:-1]
        for n in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:n]))
    walked = sorted(
        (d for d in dirs if not any(part.startswith(".") for part in d.split("/"))),
        key=lambda d: d.split("/"),
    )
    out = []
    for directory in walked:
        hits = [exclude for pattern, exclude in items if globs.go_match(pattern, directory)]
        if False in hits and True not in hits:  # included, and no exclude item matches
            out.append(directory)
    return out


def _dir_params(directory: str, prefix: str, ctx: Context) -> Params:
    base = posixpath.basename(directory)
    if ctx.go_template:
        nested = {
            "path": directory,
            "basename": base,
            "basenameNormalized": params.sanitize_name(base),
            "segments": directory.split("/"),
        }
        return {prefix: {"path": nested}} if prefix else {"path": nested}
    name = f"{prefix}.path" if prefix else "path"
    out: Params = {
        name: directory,
        f"{name}.basename": base,
        f"{name}.basenameNormalized": params.sanitize_name(base),
    }
    for i, segment in enumerate(directory.split("/")):
        if segment:
            out[f"{name}[{i}]"] = segment
    return out


def _files(
    ctx: Context, repo_url: str, revision: str, items: list[tuple[str, bool]], at: str
) -> list[tuple[str, bytes]]:
    """The files the include items list less those the exclude items do, sorted, with their
    bytes."""
    paths = _paths(ctx, repo_url, revision, at)
    include = [p for p, exclude in items if not exclude]
    exclude = [p for p, exclude in items if exclude]
    chosen = sorted(
        path
        for path in paths
        if any(globs.pathspec_match(p, path) for p in include)
        and not any(globs.pathspec_match(p, path) for p in exclude)
    )
    out = []
    for path in chosen:
        try:
            out.append((path, ctx.inputs.repo.read(repo_url, revision, path)))
        except AppSetError:
            raise
        except GitDriftError as exc:
            raise AppSetError(f"{at}: {exc.message}", hint=exc.hint) from None
    return out


def _file_objects(data: bytes, name: str) -> list[Mapping[str, Any]]:
    """A file's param objects: its one mapping (an empty file: one empty mapping), or each
    mapping of its list (as sigs.k8s.io/yaml reads it: the first document only)."""
    docs = _load(data, name)
    doc = docs[0] if docs else None
    if doc is None:
        return [{}]
    if isinstance(doc, Mapping):
        return [doc]
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            if item is not None and not isinstance(item, Mapping):
                raise AppSetError(
                    f"{name}: item {i}: a mapping expected, got {yamlio.type_name(item)}"
                )
        return [item or {} for item in doc]
    raise AppSetError(f"{name}: a mapping or a list of them expected, got {yamlio.type_name(doc)}")


def _file_params(obj: Mapping[str, Any], path: str, prefix: str, ctx: Context) -> Params:
    directory = posixpath.dirname(path) or "."
    base = posixpath.basename(directory)
    filename = posixpath.basename(path)
    if ctx.go_template:
        nested = {
            "path": directory,
            "basename": base,
            "filename": filename,
            "basenameNormalized": params.sanitize_name(base),
            "filenameNormalized": params.sanitize_name(filename),
            "segments": directory.split("/"),
        }
        out: Params = dict(obj)
        if prefix:
            out[prefix] = {"path": nested}
        else:
            out["path"] = nested
        return out
    out = params.flatten(obj)
    name = f"{prefix}.path" if prefix else "path"
    out[name] = directory
    out[f"{name}.basename"] = base
    out[f"{name}.filename"] = filename
    out[f"{name}.basenameNormalized"] = params.sanitize_name(base)
    out[f"{name}.filenameNormalized"] = params.sanitize_name(filename)
    for i, segment in enumerate(directory.split("/")):
        if segment:
            out[f"{name}[{i}]"] = segment
    return out


# --------------------------------------------------------------------------- clusters


def _clusters(spec: Mapping[str, Any], ctx: Context, at: str, depth: int) -> list[Params]:
    raw = spec.get("selector") or {}
    selector = parse_selector(raw, f"{at}.selector", values=True)
    local_ignored = bool(raw.get("matchLabels")) or bool(raw.get("matchExpressions"))
    values = _values(spec, at)
    flat = spec.get("flatList", False)
    by_name: dict[str, Cluster] = {}
    for cluster in ctx.inputs.clusters:
        if selector.matches(cluster.labels):
            by_name[cluster.name] = cluster
    found = [_with_values(_cluster_params(c, ctx), values, ctx, at) for c in by_name.values()]
    if not local_ignored and not any(c.server == IN_CLUSTER_SERVER for c in by_name.values()):
        local: Params = {
            "name": IN_CLUSTER_NAME,
            "nameNormalized": IN_CLUSTER_NAME,
            "server": IN_CLUSTER_SERVER,
            "project": "",
        }
        found.append(_with_values(local, values, ctx, at))
    return [{"clusters": found}] if flat else found


def _cluster_params(cluster: Cluster, ctx: Context) -> Params:
    out: Params = {
        "name": cluster.name,
        "nameNormalized": params.sanitize_name(cluster.name),
        "server": cluster.server,
        "project": cluster.project,
    }
    if ctx.go_template:
        meta: Params = {}
        if cluster.annotations:
            meta["annotations"] = dict(cluster.annotations)
        if cluster.labels:
            meta["labels"] = dict(cluster.labels)
        out["metadata"] = meta
        return out
    for key, value in cluster.annotations.items():
        out[f"metadata.annotations.{key}"] = value
    for key, value in cluster.labels.items():
        out[f"metadata.labels.{key}"] = value
    return out


# --------------------------------------------------------------------------- values


def _values(spec: Mapping[str, Any], at: str) -> dict[str, str]:
    raw = spec.get("values") or {}
    if not isinstance(raw, Mapping):
        raise AppSetError(f"{at}.values: a mapping expected, got {yamlio.type_name(raw)}")
    for key, value in raw.items():
        if not isinstance(value, str):
            raise AppSetError(
                f"{at}.values.{key}: a string expected, got {yamlio.type_name(value)}"
            )
    return dict(raw)


def _with_values(found: Params, values: Mapping[str, str], ctx: Context, at: str) -> Params:
    """`found` with each of the generator's `values` templated with it (Argo CD's
    appendTemplatedValues: a value sees the generator's params, not the other values)."""
    if not values:
        return found
    rendered = {}
    for key, value in values.items():
        try:
            rendered[key] = ctx.replace(value, found)
        except AppSetError as exc:
            raise AppSetError(f"{at}.values.{key}: {exc.message}", hint=exc.hint) from None
    out = dict(found)
    if ctx.go_template:
        out["values"] = rendered
    else:
        out.update({f"values.{k}": v for k, v in rendered.items()})
    return out


# --------------------------------------------------------------------------- matrix, merge


def _matrix(spec: Mapping[str, Any], ctx: Context, at: str, depth: int) -> list[Params]:
    children = _children(spec, at)
    if len(children) < 2:
        raise AppSetError(
            f"{at}.generators: a matrix needs two child generators, got {len(children)}"
        )
    if len(children) > 2:
        raise AppSetError(
            f"{at}.generators: a matrix takes two child generators, got {len(children)}",
            hint="nest a matrix in the matrix to combine more",
        )
    out: list[Params] = []
    for first in _child(children[0], ctx, f"{at}.generators[0]", depth, None):
        for second in _child(children[1], ctx, f"{at}.generators[1]", depth, first):
            if ctx.go_template:
                out.append(params.override(params.override({}, second), first))
            else:
                out.append(_combine(first, second, at))
    return out


def _combine(first: Params, second: Params, at: str) -> Params:
    a = {k: params.go_str(v) for k, v in first.items()}
    b = {k: params.go_str(v) for k, v in second.items()}
    out: Params = dict(a)
    for key, value in b.items():
        if key in out and out[key] != value:
            raise AppSetError(
                f"{at}: the two child generators give {key} different values "
                f"({out[key]!r} and {value!r})",
                hint="rename one with pathParamPrefix, or use goTemplate (the first child wins)",
            )
        out[key] = value
    return out


def _merge(spec: Mapping[str, Any], ctx: Context, at: str, depth: int) -> list[Params]:
    children = _children(spec, at)
    if len(children) < 2:
        raise AppSetError(f"{at}.generators: a merge needs at least two child generators")
    keys = spec.get("mergeKeys") or []
    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
        raise AppSetError(f"{at}.mergeKeys: a merge needs at least one merge key (strings)")
    sets = [_child(c, ctx, f"{at}.generators[{i}]", depth, None) for i, c in enumerate(children)]
    base = _by_key(sorted(set(keys)), sets[0], f"{at}.generators[0]")
    for i, others in enumerate(sets[1:], start=1):
        by_key = _by_key(sorted(set(keys)), others, f"{at}.generators[{i}]")
        for key, found in base.items():
            if key in by_key:
                if ctx.go_template:
                    base[key] = params.override(found, by_key[key])
                else:
                    base[key] = {**found, **by_key[key]}
    return list(base.values())


def _by_key(keys: list[str], found: list[Params], at: str) -> dict[str, Params]:
    out: dict[str, Params] = {}
    for p in found:
        key = json.dumps({k: p.get(k) for k in keys}, sort_keys=True, separators=(",", ":"))
        if key in out:
            raise AppSetError(f"{at}: two param sets share the merge key values {key}")
        out[key] = p
    return out


def _children(spec: Mapping[str, Any], at: str) -> list[Any]:
    children = spec.get("generators") or []
    if not isinstance(children, list):
        raise AppSetError(f"{at}.generators: a list expected, got {yamlio.type_name(children)}")
    return children


def _child(
    child: Any, ctx: Context, where: str, depth: int, given: Mapping[str, Any] | None
) -> list[Params]:
    results = transform(child, ctx, where=where, template={}, given=given, depth=depth + 1)
    if len(results) > 1:
        raise AppSetError(f"{where}: a child generator names one kind, this one names "
                          + ", ".join(r.kind for r in results))  # fmt: skip
    return results[0].params


def interpolate(kind: str, spec: Mapping[str, Any], given: Mapping[str, Any], ctx: Context) -> Any:
    """A matrix's second child templated with a param set of the first (Argo CD's
    RenderGeneratorParams): every string and key. With goTemplate, a value of `values` that
    names a param the first child lacks is left for the child's own params."""

    def walk(value: Any, top: bool) -> Any:
        if isinstance(value, str):
            return ctx.replace(value, given)
        if isinstance(value, Mapping):
            out = {}
            for key, item in value.items():
                if item is None:
                    continue
                if top and key == "values" and ctx.go_template and isinstance(item, Mapping):
                    out[key] = {k: _pre_resolve(v, given, ctx) for k, v in item.items()}
                else:
                    out[ctx.replace(str(key), given)] = walk(item, False)
            return out
        if isinstance(value, list):
            return [walk(item, False) for item in value]
        return value

    return walk(spec, kind in ("git", "clusters"))


def _pre_resolve(value: Any, given: Mapping[str, Any], ctx: Context) -> Any:
    if not isinstance(value, str):
        return value
    options = [o for o in ctx.options if not o.startswith("missingkey=")] + ["missingkey=error"]
    try:
        return ctx.replace(value, given, options=options)
    except AppSetError as exc:
        if any(text in exc.message for text in _MISSING_KEY):
            return value
        raise


# --------------------------------------------------------------------------- remote


def _remote(spec: Mapping[str, Any], ctx: Context, at: str, depth: int) -> list[Params]:
    kind = at.rsplit(".", 1)[-1]
    service = REMOTE[kind]
    if kind == "plugin" and ctx.inputs.allow_plugins:
        raise AppSetError(
            f"{at}: the plugin generator needs a remote service ({service}), which gitdrift "
            "cannot run, --allow-plugins or not",
            hint="preview the Applications it made from the cluster (--snapshot or a context)",
        )
    if ctx.inputs.offline:
        raise AppSetError(
            f"{at}: the {kind} generator needs a remote service ({service}), and this run is "
            "offline",
            hint="preview the Applications it made from the cluster (--snapshot or a context)",
        )
    raise AppSetError(
        f"{at}: the {kind} generator needs a remote service ({service}), which gitdrift does "
        "not call",
        hint="preview the Applications it made from the cluster (--snapshot or a context)",
    )


_GENERATE: dict[str, Callable[[Mapping[str, Any], Context, str, int], list[Params]]] = {
    "list": _list,
    "clusters": _clusters,
    "git": _git,
    "matrix": _matrix,
    "merge": _merge,
    **{kind: _remote for kind in REMOTE},
}


# --------------------------------------------------------------------------- selector


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        if self.operator == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "Exists":
            return self.key in labels
        return self.key not in labels


@dataclass(frozen=True, slots=True)
class Selector:
    """A label selector: every requirement must match."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)


def parse_selector(raw: Any, where: str, *, values: bool) -> Selector:
    """A LabelSelector (`matchLabels`, `matchExpressions`). `values`: label values must be
    valid too (the clusters generator's Secret selector); a generator's post-selector takes
    any value (Argo CD's own copy of LabelSelectorAsSelector), so it can match a server URL."""
    if not isinstance(raw, Mapping):
        raise AppSetError(f"{where}: a mapping expected, got {yamlio.type_name(raw)}")
    requirements: list[Requirement] = []
    labels = raw.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        raise AppSetError(f"{where}.matchLabels: a mapping expected")
    for key, value in labels.items():
        value = "" if value is None else value
        if not isinstance(value, str):
            raise AppSetError(
                f"{where}.matchLabels.{key}: a string expected, got {yamlio.type_name(value)}"
            )
        requirements.append(_requirement(str(key), "In", [value], f"{where}.matchLabels", values))
    expressions = raw.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise AppSetError(f"{where}.matchExpressions: a list expected")
    for i, expr in enumerate(expressions):
        here = f"{where}.matchExpressions[{i}]"
        if not isinstance(expr, Mapping):
            raise AppSetError(f"{here}: a mapping expected")
        operator = expr.get("operator")
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise AppSetError(f"{here}.operator: {operator!r} is not a valid selector operator")
        vals = expr.get("values") or []
        if not isinstance(vals, list) or not all(isinstance(v, str) for v in vals):
            raise AppSetError(f"{here}.values: a list of strings expected")
        requirements.append(_requirement(str(expr.get("key", "")), operator, vals, here, values))
    return Selector(tuple(sorted(requirements, key=lambda r: r.key)))


def _requirement(
    key: str, operator: str, vals: list[str], where: str, checked: bool
) -> Requirement:
    if not _qualified(key):
        raise AppSetError(f"{where}: {key!r} is not a valid label key")
    if operator in ("In", "NotIn") and not vals:
        raise AppSetError(f"{where}: {key}: 'In' and 'NotIn' need at least one value")
    if operator in ("Exists", "DoesNotExist") and vals:
        raise AppSetError(f"{where}: {key}: 'Exists' and 'DoesNotExist' take no values")
    if checked:
        for value in vals:
            if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
                raise AppSetError(f"{where}: {key}: {value!r} is not a valid label value")
    return Requirement(key, operator, frozenset(vals))


def _qualified(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _SUBDOMAIN.fullmatch(prefix)):
        return False
    return 0 < len(name) <= 63 and _QUALIFIED.fullmatch(name) is not None


def _load(text: str | bytes, name: str) -> list[Any]:
    return yamlio.load_any(text, name, error=AppSetError)
