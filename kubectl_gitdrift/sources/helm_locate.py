"""Find the Helm value that renders a desired field (for "adopt into git" fixes of Helm apps).

From the rendered field back to the values key, exactly or not at all:
1. The template that produced the object: its origin (helm's `# Source:` line, recorded by
   sources/helm.py for a git chart); for a pulled chart (no origin) every template of the chart
   is read, and the candidates of all of them must agree.
2. The template line at the field (the YAML keys of the template text, indentation tracked, Go
   template actions skipped), and its value expression: `{{ .Values.a.b }}` with value-keeping
   functions (`quote`, `toString`, `int`, `default`, `required`, ...), `.` and `.x` inside
   `{{ with .Values.a }}`, several actions with literal text between them (an image
   `repo:tag`: the action whose part differs between git and the cluster), a block
   (`{{ toYaml .Values.resources | nindent 12 }}`: the key below it), or a literal.
3. Argo CD's order of values (argocd-semantics.md §4.1; `helmTemplate` in
   reposerver/repository/repository.go, helm's own precedence): the chart's values.yaml, each
   `valueFiles` entry in order (`$<ref>/…` from a ref source's tree), the inline values
   (`valuesObject` if set, else `values`), then `parameters` and `fileParameters` (`--set`,
   highest). The last layer that sets the key wins; it must hold git's value, or nothing is
   named.

The answer says where to change the key: a line of a value file (how `values`), a value file
the key must be added to (`values-add`: the chart's default won and the app has value files),
a template line that writes the value literally (`template`), or why no file can be named
(`helm-inline`, `helm-parameter`, `none`, with a note).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import GitDriftError
from kubectl_gitdrift.model import FieldPath, ListKey, ObjectKey
from kubectl_gitdrift.sources import helm
from kubectl_gitdrift.sources.helm_templates import (
    COMPUTED,
    Ref,
    candidates,
    key_of,
    parse_action,
    pieces,
    split,
    unquote,
)

Key = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class HelmSource:
    """One rendered Helm source, as locating reads it."""

    chart_dir: Path  # the chart (in the exported tree, or the pulled chart)
    tree: Path  # the repository tree the chart is in (the pulled chart itself when pulled)
    path: str  # the chart's directory in `tree` ("." for its top)
    options: Mapping[str, Any]  # the source's `helm:` block as rendered
    env: Mapping[str, str]
    refs: Mapping[str, Path] = field(default_factory=dict)  # `ref` → tree
    ref_urls: Mapping[str, str] = field(default_factory=dict)  # `ref` → repoURL
    repo_url: str = ""  # the chart's repoURL
    pulled: bool = False  # from a Helm repository or OCI registry: no file of it is in git
    chart: str = ""  # the chart's name, for messages
    spec: str = "spec.source"  # where the Application sets the source (`spec.sources[1]`)


@dataclass(frozen=True, slots=True)
class HelmLocation:
    how: str  # values | values-add | template | helm-inline | helm-parameter | none
    file: str = ""  # relative to the root of the repository holding it
    line: int = 0  # 1-based (values, literal); for values-add, 0
    key: str = ""  # the values key, dotted (`image.tag`)
    old: Any = None  # the value as git has it (the part of the field the key renders)
    new: Any = None  # the value the cluster has
    ref: str = ""  # the `ref` source whose tree holds the file ("" = the chart's repository)
    repo: str = ""  # that repository's URL
    note: str = ""  # why no file is named, or what else to know
    param: str = ""  # helm-parameter: the argocd flag that sets it (`--helm-set-string a.b`)
    key_path: tuple[str, ...] = ()  # the values key, one element per level


# --------------------------------------------------------------------------- entry point


def locate(
    source: HelmSource,
    key: ObjectKey,
    origin: str | None,
    path: FieldPath,
    desired: Any,
    live: Any,
) -> HelmLocation:
    """Where the value that renders `path` of the object `key` is set."""
    return HelmLocator(source).locate(key, origin, path, desired, live)


class HelmLocator:
    """Locates fields of one Helm source, reading its values files and templates once."""

    def __init__(self, source: HelmSource) -> None:
        self.source = source
        self._values: _Values | None = None
        self._templates: dict[str | None, list[tuple[str, str]]] = {}

    def locate(
        self, key: ObjectKey, origin: str | None, path: FieldPath, desired: Any, live: Any
    ) -> HelmLocation:
        """Where the value that renders `path` of the object `key` is set."""
        source = self.source
        if isinstance(desired, Mapping | list) or isinstance(live, Mapping | list):
            return _none(
                "the field is a whole mapping or list; gitdrift names keys of scalars only"
            )
        if origin and not source.pulled and _in_subchart(source, origin):
            return _none(
                f"{origin}, a subchart's template, renders it: gitdrift does not follow values "
                "into subcharts"
            )
        if origin not in self._templates:
            self._templates[origin] = _templates(source, origin)
        templates = self._templates[origin]
        if not templates:
            return _none("the template that renders the object was not found in the chart")
        found: list[_Candidate] = []
        for rel, text in templates:
            for raw in candidates(text, key.kind, path, key.name):
                found.append(_Candidate(rel, *raw))
        if not found:
            return _none(
                f"no line of {_names(templates)} writes {_display(path)} by name (it may come "
                "from a loop, an include, or a whole mapping gitdrift does not follow)"
            )
        if self._values is None:
            self._values = _Values(source)
        answers: list[HelmLocation] = []
        unknown: list[_Candidate] = []
        for cand in found:
            answer = _answer(source, self._values, cand, desired, live, path)
            if answer is _UNKNOWN:
                unknown.append(cand)
            elif answer is not None and answer not in answers:
                answers.append(answer)
        if len(answers) == 1 and not unknown:
            return answers[0]
        if answers and unknown:
            return _none(
                f"{_display(path)} may also come from {unknown[0].template}:{unknown[0].line}, "
                "whose expression gitdrift cannot follow"
            )
        if not answers:
            return _none(
                f"{_names(templates)} renders {_display(path)} from an expression whose value "
                "gitdrift cannot follow back to one values key"
            )
        keys = sorted({a.key or f"{a.file}:{a.line}" for a in answers})
        return _none(f"{_display(path)} may come from any of {', '.join(keys)}; none is named")


def _in_subchart(source: HelmSource, origin: str) -> bool:
    prefix = "" if source.path == "." else source.path + "/"
    return origin.startswith(prefix + "charts/")


def _none(why: str) -> HelmLocation:
    return HelmLocation("none", note=f"no values key or file can be named: {why}")


def _names(templates: Sequence[tuple[str, str]]) -> str:
    if len(templates) == 1:
        return templates[0][0]
    return "the chart's templates"


def _display(path: FieldPath) -> str:
    out = []
    for elem in path:
        if isinstance(elem, ListKey):
            out.append("[" + ",".join(f"{k}={v}" for k, v in elem.fields) + "]")
        elif isinstance(elem, int):
            out.append(f"[{elem}]")
        else:
            out.append(("." if out else "") + elem)
    return "".join(out)


# --------------------------------------------------------------------------- templates


def _templates(source: HelmSource, origin: str | None) -> list[tuple[str, str]]:
    """(name to show, text) of the template that rendered the object: its origin, or for a
    pulled chart each template of the chart (not of subcharts)."""
    if origin and not source.pulled:
        file = (source.tree / origin).resolve()
        prefix = "" if source.path == "." else source.path + "/"
        if (
            not file.is_relative_to(source.tree.resolve())
            or not file.is_file()
            or not origin.startswith(prefix + "templates/")  # a subchart's: not followed
        ):
            return []
        return [(origin, _read(file))]
    if not source.pulled:
        return []
    folder = source.chart_dir / "templates"
    out = []
    for file in sorted(folder.rglob("*")) if folder.is_dir() else ():
        if file.is_file() and file.suffix in (".yaml", ".yml", ".tpl", ".txt", ".json"):
            if file.name.startswith("_") or file.suffix == ".tpl":
                continue  # helpers: named templates, not objects
            rel = file.relative_to(source.chart_dir).as_posix()
            out.append((f"{source.chart or 'chart'}/{rel}", _read(file)))
    return out


def _read(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


@dataclass(frozen=True, slots=True)
class _Candidate:
    template: str  # the template's name (repo-relative for a git chart)
    line: int  # 1-based
    expr: str  # the value text at the field (after `key:`), or the block's action
    scope: str | None  # `.` inside `{{ with X }}`: X's expression; None at the top
    rest: Key  # for a block (toYaml): the field's keys below the block's key
    literal: bool  # the line holds no action: the value is written in the template


# --------------------------------------------------------------------------- values


_FILE_CONTENT = object()  # a fileParameter's value: a file's text, never git's value here
_CHART = "chart"
_FILE = "file"
_INLINE = "inline"
_PARAM = "parameter"


@dataclass(frozen=True, slots=True)
class _Layer:
    what: str  # chart | file | inline | parameter
    values: Any  # the layer's values (a mapping), or for a parameter its value
    file: str = ""  # relative to its repository's root
    ref: str = ""
    path: Path | None = None
    name: str = ""  # the parameter's name, or `valuesObject`/`values`
    force: bool = False  # a parameter with forceString (--set-string)


class _Values:
    """The layers of values `helm template` merges, lowest first."""

    def __init__(self, source: HelmSource) -> None:
        self.source = source
        self.layers: list[_Layer] = []
        self.error = ""
        chart_values = source.chart_dir / "values.yaml"
        if chart_values.is_file():
            rel = chart_values.relative_to(source.tree).as_posix()
            self.layers.append(_Layer(_CHART, _load(chart_values), rel, path=chart_values))
        try:
            files = helm.value_files(
                source.chart_dir, source.tree, source.options, source.refs, source.env,
                source.path,
            )  # fmt: skip
        except GitDriftError as err:
            self.error = str(err)
            files = []
        for file in files:
            ref, root = self._root_of(file)
            rel = file.relative_to(root).as_posix() if file.is_relative_to(root) else file.name
            self.layers.append(_Layer(_FILE, _load(file), rel, ref, path=file))
        obj = source.options.get("valuesObject")
        if obj is not None:
            self.layers.append(_Layer(_INLINE, obj, name="valuesObject"))
        elif source.options.get("values") is not None:
            raw = source.options.get("values")
            try:
                loaded = yaml.safe_load(raw) if isinstance(raw, str) else raw
            except yaml.YAMLError:
                loaded = None
            self.layers.append(_Layer(_INLINE, loaded, name="values"))
        for kind in ("parameters", "fileParameters"):
            for param in source.options.get(kind) or ():
                if isinstance(param, Mapping) and param.get("name"):
                    value = param.get("value") if kind == "parameters" else param.get("path")
                    force = kind == "parameters" and bool(param.get("forceString"))
                    if kind == "fileParameters":
                        value = _FILE_CONTENT  # the file's text: not compared
                    self.layers.append(_Layer(_PARAM, value, name=str(param["name"]), force=force))

    def _root_of(self, file: Path) -> tuple[str, Path]:
        """(ref, its tree) of a value file: the ref source's tree it is in, else the chart's."""
        used = sorted(
            {
                str(raw).split("/", 1)[0][1:]
                for raw in self.source.options.get("valueFiles") or ()
                if str(raw).startswith("$")
            }
        )
        for ref in used:
            if ref not in self.source.refs:
                continue
            tree = self.source.refs[ref]  # exported already: the render read it
            if tree != self.source.tree and file.is_relative_to(tree):
                return ref, tree
        return "", self.source.tree

    def winner(self, key: Key) -> tuple[_Layer | None, Any]:
        """The layer whose value of `key` helm uses, and that value (None, None: unset)."""
        won: _Layer | None = None
        value: Any = None
        for layer in self.layers:
            if layer.what == _PARAM:
                pkey = _param_key(layer.name)
                if pkey == key:
                    won, value = layer, layer.values
                elif pkey[: len(key)] == key or key[: len(pkey)] == pkey:
                    return None, None  # a parameter sets part of it, or a parent: not followed
                continue
            found, got = _lookup(layer.values, key)
            if found == "set":
                won, value = layer, got
            elif found == "cleared":
                won, value = None, None
        return won, value


def _param_key(name: str) -> Key:
    if "[" in name:
        return ("[",)  # list indexes: never a plain key
    return tuple(p.replace("\0", ".") for p in name.replace("\\.", "\0").split("."))


def _lookup(values: Any, key: Key) -> tuple[str, Any]:
    """("set", value) | ("cleared", None): null or a scalar over a parent | ("absent", None)."""
    node = values
    for i, part in enumerate(key):
        if not isinstance(node, Mapping):
            return ("cleared", None) if i and node is not None else ("absent", None)
        if part not in node:
            return "absent", None
        node = node[part]
        if node is None:
            return "cleared", None
    return "set", node


def _load(file: Path) -> Any:
    try:
        docs = yamlio.load_documents(file.read_bytes(), file.name)
    except (OSError, GitDriftError):
        return None
    return docs[0] if docs else None


# --------------------------------------------------------------------------- the answer


_UNKNOWN = HelmLocation("unknown")  # a candidate line whose value gitdrift cannot follow


def _answer(
    source: HelmSource,
    values: _Values,
    cand: _Candidate,
    desired: Any,
    live: Any,
    path: FieldPath,
) -> HelmLocation | None:
    """Where `cand` sets the field; None when it certainly does not render git's value
    (another branch did); _UNKNOWN when gitdrift cannot tell."""
    if cand.literal:
        if cand.rest or unquote(cand.expr) != _text(desired):
            return None
        if source.pulled:
            return _none(
                f"{cand.template}:{cand.line} of chart {source.chart} writes it literally, and "
                "the chart is pulled from a chart repository, not kept in git"
            )
        return HelmLocation("template", cand.template, cand.line, old=desired, new=live)
    if cand.rest:  # a block: toYaml .Values.x at a key above the field
        key = key_of(cand.expr, cand.scope)
        if key is None:
            return _UNKNOWN
        return _from_key(source, values, (*key, *cand.rest), desired, live, None)
    parts = pieces(cand.expr)
    if parts is None or not parts[1]:
        return _UNKNOWN
    literals, actions = parts
    if len(actions) == 1 and literals == ["", ""]:
        ref = parse_action(actions[0], cand.scope)
        if ref is None or ref.key is None:
            return _UNKNOWN
        return _from_key(source, values, ref.key, desired, live, ref)
    # several actions (or literal text around one): the one part that differs
    if not isinstance(desired, str) or not isinstance(live, str):
        return _UNKNOWN
    want, have = split(literals, desired), split(literals, live)
    if want is None or have is None:
        return _UNKNOWN
    differ = [i for i, (w, h) in enumerate(zip(want, have, strict=True)) if w != h]
    if len(differ) != 1:
        return _UNKNOWN
    ref = parse_action(actions[differ[0]], cand.scope)
    if ref is None or ref.key is None:
        return _UNKNOWN
    return _from_key(source, values, ref.key, want[differ[0]], have[differ[0]], ref)


def _from_key(
    source: HelmSource,
    values: _Values,
    key: Key,
    desired: Any,
    live: Any,
    ref: Ref | None,
) -> HelmLocation | None:
    if values.error:
        return _UNKNOWN
    layer, value = values.winner(key)
    dotted = _dotted(key)
    defaulted = ref is not None and ref.has_default and _empty(value)
    if layer is None or defaulted:
        if (
            ref is not None
            and defaulted
            and ref.default is not COMPUTED
            and _text(ref.default) == _text(desired)
        ):
            target = _last_file(values)
            if target is None:
                return None
            return _add(source, target, key, desired, live, "the template's default")
        return None
    if isinstance(value, Mapping | list) or _text(value) != _text(desired):
        return None
    if layer.what == _PARAM:
        return HelmLocation(
            "helm-parameter",
            key=dotted,
            key_path=key,
            old=desired,
            new=live,
            note=(
                f"the Application's helm parameter {layer.name} ({source.spec}.helm.parameters, "
                f"helm's --set{'-string' if layer.force else ''}) sets it, over every values file"
            ),
            param=f"--helm-set{'-string' if layer.force else ''} {layer.name}",
        )
    if layer.what == _INLINE:
        return HelmLocation(
            "helm-inline",
            key=dotted,
            key_path=key,
            old=desired,
            new=live,
            note=(
                f"the Application's inline {source.spec}.helm.{layer.name} sets {dotted}, "
                "after every values file"
            ),
        )
    if layer.what == _CHART:
        target = _last_file(values)
        if target is not None:
            return _add(source, target, key, desired, live, "the chart's default")
        if source.pulled:
            return HelmLocation(
                "none",
                key=dotted,
                key_path=key,
                old=desired,
                new=live,
                note=(
                    f"{dotted} keeps chart {source.chart}'s default, and the app has no values "
                    f"file in git: set it in the Application's {source.spec}.helm.valuesObject"
                ),
            )
    if source.pulled and not layer.ref:
        return HelmLocation(
            "none",
            key=dotted,
            key_path=key,
            old=desired,
            new=live,
            note=f"{layer.file} of chart {source.chart}'s package sets {dotted}, not a file in "
            f"git: set it in a values file of the app, or in {source.spec}.helm.valuesObject",
        )
    assert layer.path is not None
    line = _line_of(layer.path, key)
    if not line:
        return _none(
            f"{layer.file} sets {dotted}, but not as a one-line scalar gitdrift can edit; "
            "change it there by hand"
        )
    return HelmLocation(
        "values",
        layer.file,
        line,
        key=dotted,
        key_path=key,
        old=value,
        new=_like(value, live),
        ref=layer.ref,
        repo=_repo(source, layer.ref),
        note=(
            "the chart's own default: every app of the chart gets the new value"
            if layer.what == _CHART
            else ""
        ),
    )


def _add(
    source: HelmSource, target: _Layer, key: Key, desired: Any, live: Any, why: str
) -> HelmLocation:
    dotted = _dotted(key)
    return HelmLocation(
        "values-add",
        target.file,
        0,
        key=dotted,
        key_path=key,
        old=desired,
        new=live,
        ref=target.ref,
        repo=_repo(source, target.ref),
        note=why,
    )


def _last_file(values: _Values) -> _Layer | None:
    """The value file that wins over the others, when it is in git."""
    files = [
        layer
        for layer in values.layers
        if layer.what == _FILE and (layer.ref or not values.source.pulled)
    ]
    return files[-1] if files else None


def _repo(source: HelmSource, ref: str) -> str:
    """The URL of the repository a ref's file is in, when it is not the chart's repository."""
    if not ref:
        return ""
    url = source.ref_urls.get(ref, "")
    if not source.pulled and _same_repo(url, source.repo_url):
        return ""
    return url


def _same_repo(a: str, b: str) -> bool:
    def norm(url: str) -> str:
        return re.sub(r"(\.git)?/*$", "", re.sub(r"^[a-z+]+://", "", url.strip().lower()))

    return bool(a) and norm(a) == norm(b)


def _line_of(file: Path, key: Key) -> int:
    """The 1-based line of the scalar at `key` in a values file (0 when not one line)."""
    node = _composed(file)
    for part in key:
        if not isinstance(node, MappingNode):
            return 0
        node = next(
            (v for k, v in node.value if isinstance(k, ScalarNode) and k.value == part), None
        )
    if not isinstance(node, ScalarNode) or node.style in ("|", ">"):
        return 0
    if node.start_mark.line != node.end_mark.line:
        return 0
    return int(node.start_mark.line) + 1


def _composed(file: Path) -> Node | None:
    try:
        docs = _compose(str(file), file.stat().st_mtime_ns)
    except OSError:
        return None
    return docs[0] if docs else None


@functools.lru_cache(maxsize=64)
def _compose(file: str, stamp: int) -> tuple[Node | None, ...]:
    try:
        return tuple(yamlio.compose_documents(Path(file).read_bytes(), Path(file).name))
    except (OSError, GitDriftError):
        return ()


def _dotted(key: Key) -> str:
    """`a.b`, with a level that is no plain name in brackets: `podAnnotations["x.io/y"]`."""
    out = ""
    for part in key:
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
            out += ("." if out else "") + part
        else:
            out += f'["{part}"]'
    return out


def _like(old: Any, new: Any) -> Any:
    """`new` as the type the values file writes `old` in (a port `80` stays a number when the
    template quotes it into a string)."""
    if isinstance(new, str) and isinstance(old, bool | int | float):
        try:
            loaded = yaml.safe_load(new)
        except yaml.YAMLError:
            return new
        if type(loaded) is type(old) and _text(loaded) == new:
            return loaded
    return new


def _empty(value: Any) -> bool:
    """Empty as Go templates' `default` sees it."""
    return value is None or value == "" or value is False or value == 0 or value in ({}, [])


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


__all__ = ["HelmLocation", "HelmLocator", "HelmSource", "locate"]
