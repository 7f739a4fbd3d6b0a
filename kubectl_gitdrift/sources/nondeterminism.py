"""Finds where a Helm chart renders differently on every render, as model.VaryingRender values.

Argo CD's repo-server renders a chart again on a hard refresh, when its render cache expires and
at every new commit; a template that calls randAlphaNum, genCA, uuidv4, now, htpasswd, ... then
gives a new value each time, so the app turns OutOfSync again, and a sync only writes yet another
value. `lookup` is answered with nothing there (the repo-server has no cluster access, argo-cd
issue 5202), so a chart's "keep the existing Secret" branch never runs.

The first evidence is the templates' text: every call of FUNCTIONS in an action of a template of
the chart or its subcharts (vendored directories and `.tgz` archives), directly or through the
named templates it includes. Only when some template that renders objects reaches such a call is
the chart rendered a second time, and the two renders compared: the fields that differ are the
proof (and a call a chart value replaced renders the same twice). The rest of the charts cost one
read of their templates and no second render. diagnose/nondeterminism.py turns what is found
into causes of the drifted fields.
"""

from __future__ import annotations

import dataclasses
import io
import posixpath
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import GitDriftError
from kubectl_gitdrift.model import FieldPath, Manifest, ObjectKey, RenderCall, VaryingRender
from kubectl_gitdrift.sources.cache import CacheMiss
from kubectl_gitdrift.sources.context import RenderContext

FUNCTIONS: Mapping[str, str] = {
    "randAlphaNum": "random",
    "randAlpha": "random",
    "randNumeric": "random",
    "randAscii": "random",
    "randBytes": "random",
    "randInt": "random",
    "shuffle": "random",
    "uuidv4": "random",
    "genPrivateKey": "random",
    "genCA": "random",
    "genCAWithKey": "random",
    "genSelfSignedCert": "random",
    "genSelfSignedCertWithKey": "random",
    "genSignedCert": "random",
    "genSignedCertWithKey": "random",
    "htpasswd": "random",  # bcrypt with a random salt
    "bcrypt": "random",
    "encryptAES": "random",  # a random IV
    "now": "time",  # also `date "..." now`, `unixEpoch now`, `dateInZone ... now`
    "ago": "time",
    "lookup": "lookup",  # empty in Argo CD's repo-server
}
"""Sprig and Helm template functions whose result is not the same at every render."""

MAX_FILE_BYTES = 1 << 20  # a template bigger than this is not read
MAX_TOTAL_BYTES = 64 << 20  # nor any more once a chart's templates came to this much
MAX_PATHS = 64  # differing fields kept per object

_ACTION = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|`[^`]*`')
_CALL = re.compile(r"(?<![\w.$])(" + "|".join(sorted(FUNCTIONS, key=len, reverse=True)) + r")\b")
_INCLUDE = re.compile(r'\b(?:include|template)\s+"([^"]+)"')
_DEFINE = re.compile(r'^(define|block)\s+"([^"]+)"')
_KEY = re.compile(r"""^\s*(?:-\s+)?["']?([\w.\-/]+)["']?\s*:(?:\s|$)""")
_VALUE = re.compile(r"\.Values\.([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)")
_PROVIDED = re.compile(r'"providedValues"\s*\(\s*list\s+"([\w.]+)"')
_VARIABLE = re.compile(r"\$(\w+)\s*:?=")
_FALLBACK = re.compile(r"\b(?:default|coalesce|ternary)\b")  # a value, else the call


@dataclass
class _Template:
    """One template file of the chart tree, as helm's `# Source:` comment names it."""

    rest: str  # the Source comment without the top chart's name: "charts/sub/templates/x.yaml"
    file: str  # as a report names it
    text: str
    chart: int  # index into _Tree.charts
    archive: str = ""  # the `.tgz` (rest form) it is in, if any


@dataclass
class _Chart:
    prefix: str  # the values key of the subchart in the top chart's values ("" for the top)
    values: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class _Site:
    file: str
    line: int
    name: str  # the function, or the named template included
    include: bool
    text: str  # the whole line
    lines: Sequence[str]  # the file's lines (for the guard before it)
    define: str  # the named template it is written in ("" at a file's top level)


@dataclass
class _Tree:
    templates: list[_Template] = field(default_factory=list)
    charts: list[_Chart] = field(default_factory=list)


def examine(
    ctx: RenderContext,
    first: Sequence[Manifest],
    render: Callable[[RenderContext], list[Manifest]],
) -> tuple[VaryingRender, ...]:
    """Where the chart at `ctx` renders differently each time; `first` is its render, `render`
    makes another (only when some template reaches a call of FUNCTIONS)."""
    display = ctx.display or ctx.path
    shown = "." if not ctx.origins else display  # pulled charts: chart-relative file names
    tree = _read_tree(ctx.app_dir, shown)
    if not any(_mentions(t.text) for t in tree.templates):
        return ()  # the common case: a substring search of the text, nothing parsed
    reached = _reached(tree)
    if not any(c.function != "lookup" for calls in reached.values() for c in calls):
        return ()  # lookup alone renders the same every time (empty), in Argo CD too
    chart = display if ctx.origins else (ctx.display or ctx.source.chart or display)
    try:
        again: list[Manifest] | None = render(dataclasses.replace(ctx, origins=True))
    except (GitDriftError, CacheMiss, OSError):
        again = None
    origins = {m.key: m.origin or "" for m in (again if again is not None else first)}
    varied = _compare(first, again) if again is not None else {}
    by_rest = {t.rest: t for t in tree.templates}
    objects: dict[str, list[ObjectKey]] = {}
    for key, origin in origins.items():
        rest = _rest(origin, display)
        template = by_rest.get(rest)
        if template is None:  # an archive: each of its templates that reaches a call
            inside = [t.rest for t in tree.templates if t.archive == rest and t.rest in reached]
            names = inside or [rest]
        else:
            names = [rest]
        for name in names:
            objects.setdefault(name, []).append(key)
    out: list[VaryingRender] = []
    for rest, keys in sorted(objects.items()):
        calls = reached.get(rest, ())
        paths = tuple((k, p) for k in sorted(set(keys)) for p in varied.get(k, ()))
        timed = any(FUNCTIONS[c.function] == "time" for c in calls)
        if not paths and not (calls and (timed or again is None)):
            continue
        template = by_rest.get(rest)
        shown_name = template.file if template is not None else _join(shown, rest)
        values = tree.charts[template.chart] if template is not None else _Chart("")
        out.append(
            VaryingRender(
                template=shown_name,
                chart=chart,
                objects=tuple(sorted(set(keys))),
                calls=tuple(c for c in calls if c.function != "lookup"),
                varied=paths,
                compared=again is not None,
                existing_secret=_existing_secret(values, calls, rest, keys),
                lookup=any(c.function == "lookup" for c in calls),
            )
        )
    return tuple(out)


# --------------------------------------------------------------------------- the chart's text


def _read_tree(chart_dir: Path, shown: str) -> _Tree:
    """Every template of the chart and its subcharts, within the size bounds."""
    tree = _Tree()
    budget = [MAX_TOTAL_BYTES]
    _read_dir(tree, chart_dir, "", "", shown, budget)
    return tree


def _read_dir(
    tree: _Tree, chart_dir: Path, rest: str, prefix: str, shown: str, budget: list[int]
) -> None:
    index = len(tree.charts)
    tree.charts.append(_Chart(prefix, _values(_read(chart_dir / "values.yaml", budget), rest)))
    templates = chart_dir / "templates"
    if templates.is_dir():
        for path in sorted(p for p in templates.rglob("*") if p.is_file() and not p.is_symlink()):
            text = _read(path, budget)
            if text is None:
                continue
            name = _join(rest, path.relative_to(chart_dir).as_posix())
            tree.templates.append(_Template(name, _join(shown, name), text, index))
    charts = chart_dir / "charts"
    if not charts.is_dir():
        return
    for sub in sorted(charts.iterdir()):
        sub_rest = _join(rest, f"charts/{sub.name}")
        if sub.is_dir() and not sub.is_symlink() and (sub / "Chart.yaml").is_file():
            _read_dir(tree, sub, sub_rest, f"{prefix}{sub.name}.", shown, budget)
        elif sub.is_file() and sub.name.endswith(".tgz"):
            _read_archive(tree, sub, _join(rest, "charts"), sub_rest, prefix, shown, budget)


def _read_archive(
    tree: _Tree,
    path: Path,
    charts_rest: str,
    archive: str,
    prefix: str,
    shown: str,
    budget: list[int],
) -> None:
    """A packaged subchart (`charts/sub-1.0.0.tgz`): its own templates and values."""
    import tarfile  # only a vendored chart archive is read: most runs never need it

    try:
        data = path.read_bytes() if path.stat().st_size <= MAX_TOTAL_BYTES else b""
        members: dict[str, str] = {}
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for member in tar:
                if not member.isfile() or member.size > MAX_FILE_BYTES or member.size > budget[0]:
                    continue
                parts = member.name.split("/")
                if len(parts) < 2 or (parts[1] != "templates" and member.name.count("/") != 1):
                    continue  # only the top chart of the archive: its templates and values.yaml
                handle = tar.extractfile(member)
                if handle is None:
                    continue
                budget[0] -= member.size
                members[member.name] = handle.read().decode("utf-8", "replace")
    except (tarfile.TarError, OSError, EOFError):
        return
    tops = sorted({name.split("/", 1)[0] for name in members})
    for top in tops:
        index = len(tree.charts)
        values = _values(members.get(f"{top}/values.yaml"), archive)
        tree.charts.append(_Chart(f"{prefix}{top}.", values))
        for name in sorted(members):
            if not name.startswith(f"{top}/templates/"):
                continue
            rest = _join(charts_rest, f"{top}/{name.split('/', 1)[1]}")
            shown_file = f"{_join(shown, archive)}/{name}"
            tree.templates.append(_Template(rest, shown_file, members[name], index, archive))


def _read(path: Path, budget: list[int]) -> str | None:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES or size > budget[0]:
            return None
        budget[0] -= size
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None


def _values(text: str | None, rest: str) -> Mapping[str, Any]:
    if not text:
        return {}
    try:
        docs = yamlio.load_documents(text, _join(rest, "values.yaml"))
    except GitDriftError:
        return {}
    return docs[0] if docs else {}


# --------------------------------------------------------------------------- which calls reach


def _reached(tree: _Tree) -> dict[str, tuple[RenderCall, ...]]:
    """The templates that render objects and reach a call of FUNCTIONS -> those calls."""
    tops: dict[str, list[_Site]] = {}
    defines: dict[str, list[_Site]] = {}
    parsed: set[int] = set()
    tainted: set[str] = set()
    while True:  # parse what mentions a function, then what includes a template that calls one
        todo = [
            i
            for i, t in enumerate(tree.templates)
            if i not in parsed
            and (_mentions(t.text) or any(f'"{name}"' in t.text for name in tainted))
        ]
        if not todo:
            break
        for i in todo:
            parsed.add(i)
            for site in _sites(tree.templates[i]):
                if site.define:
                    defines.setdefault(site.define, []).append(site)
                else:
                    tops.setdefault(tree.templates[i].rest, []).append(site)
        tainted = _tainted(defines)
    memo: dict[str, list[_Site]] = {}

    def calls_of(name: str, seen: frozenset[str]) -> list[_Site]:
        if name in memo:
            return memo[name]
        out: list[_Site] = []
        for site in defines.get(name, ()):
            if not site.include:
                out.append(site)
            elif site.name not in seen:
                out.extend(calls_of(site.name, seen | {site.name}))
        memo[name] = out
        return out

    reached: dict[str, tuple[RenderCall, ...]] = {}
    for template in tree.templates:
        base = posixpath.basename(template.rest)
        if base.startswith("_") or base == "NOTES.txt" or "/templates/" not in f"/{template.rest}":
            continue
        found: list[RenderCall] = []
        prefix = tree.charts[template.chart].prefix  # its values, as the app's values name them
        for site in tops.get(template.rest, ()):
            if not site.include:
                found.append(_call(site, site, prefix))
                continue
            for inner in calls_of(site.name, frozenset({site.name})):
                found.append(_call(inner, site, prefix))
        if found:
            unique = sorted(set(found), key=lambda c: (c.file, c.line, c.function))
            reached[template.rest] = tuple(unique)
    return reached


def _mentions(text: str) -> bool:
    """The text names a function of FUNCTIONS somewhere (a cheap test before parsing)."""
    return any(name in text for name in FUNCTIONS)


def _tainted(defines: Mapping[str, Sequence[_Site]]) -> set[str]:
    """The named templates that call a function of FUNCTIONS, directly or by inclusion."""
    out = {name for name, sites in defines.items() if any(not s.include for s in sites)}
    grew = True
    while grew:
        grew = False
        for name, sites in defines.items():
            if name not in out and any(s.include and s.name in out for s in sites):
                out.add(name)
                grew = True
    return out


def _sites(template: _Template) -> Iterator[_Site]:
    """The calls and includes of a template's actions, each with the named template it is in."""
    text = template.text
    lines = text.splitlines()
    stack: list[str] = []  # "" for if/range/with, the name for define/block
    line, seen = 1, 0
    for match in _ACTION.finditer(text):
        raw = match.group(1).strip(" \t\r\n-")
        if raw.startswith("/*"):
            continue  # a comment
        line += text.count("\n", seen, match.start())
        seen = match.start()
        word = raw.split(None, 1)[0] if raw.split() else ""
        define = _DEFINE.match(raw)
        if define is not None:
            stack.append(define.group(2))
            if define.group(1) == "block":  # defines it and renders it in place
                yield _site(template, lines, line, define.group(2), True, _inside(stack[:-1]))
            continue
        if word in ("if", "range", "with"):
            stack.append("")
        elif word == "end":
            if stack:
                stack.pop()
            continue
        where = _inside(stack)
        for name in _INCLUDE.findall(raw):
            yield _site(template, lines, line, name, True, where)
        bare = _STRING.sub(lambda m: " " * len(m.group(0)), raw)
        for call in _CALL.finditer(bare):
            at = line + bare.count("\n", 0, call.start())
            yield _site(template, lines, at, call.group(1), False, where)


def _inside(stack: Sequence[str]) -> str:
    """The innermost named template being defined ("" at the top level)."""
    for name in reversed(stack):
        if name:
            return name
    return ""


def _site(
    template: _Template, lines: Sequence[str], line: int, name: str, include: bool, define: str
) -> _Site:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return _Site(template.file, line, name, include, text, lines, define)


def _call(call: _Site, site: _Site, prefix: str) -> RenderCall:
    """A call, with the field it sets and the value that replaces it (under the subchart's
    `prefix`), from its own line or from the line of the object's template that includes it."""
    fields = _fields(call) or (_fields(site) if site is not call else ())
    value = _guard(call) or (_guard(site) if site is not call else "")
    return RenderCall(
        file=call.file,
        line=call.line,
        function=call.name,
        fields=fields,
        value=prefix + value if value else "",
        via=call.define if site is not call else "",
    )


def _fields(site: _Site) -> tuple[str, ...]:
    """The YAML key the line sets, or the keys of the later lines of the same file that use the
    variable the line assigns (`{{ $pw := ... }}` then `password: {{ $pw }}`)."""
    key = _KEY.match(site.text)
    if key is not None:
        return (key.group(1),)
    var = _VARIABLE.search(site.text)
    if var is None:
        return ()
    use = re.compile(r"\$" + re.escape(var.group(1)) + r"\b")
    out: list[str] = []
    for text in site.lines[site.line : site.line + 60]:
        key = _KEY.match(text)
        if key is not None and use.search(text) and key.group(1) not in out:
            out.append(key.group(1))
    return tuple(out)


def _guard(site: _Site) -> str:
    """The chart value that replaces the call when set: on its line (`.Values.x | default
    (randAlphaNum 10)`, bitnami's `"providedValues" (list "x")`), or the `if .Values.x` whose
    `else` branch the call is in."""
    provided = _PROVIDED.search(site.text)
    if provided is not None:
        return provided.group(1)
    if _FALLBACK.search(site.text):
        arguments = _arguments(site.text, site.name)
        for value in _VALUE.finditer(site.text):
            if not any(start <= value.start() < end for start, end in arguments):
                return value.group(1)  # not an argument of the call (its validity, its length)
    in_else = False
    for text in reversed(site.lines[max(0, site.line - 9) : site.line - 1]):
        for action in reversed(_ACTION.findall(text)):
            words = action.strip(" \t-").split()
            if words[:1] == ["else"] and words[1:2] != ["if"]:
                in_else = True
            elif in_else and (words[:1] == ["if"] or words[:2] == ["else", "if"]):
                found = _VALUE.search(action)
                return found.group(1) if found is not None else ""
            elif words[:1] == ["end"]:
                return ""
    return ""


def _arguments(text: str, function: str) -> list[tuple[int, int]]:
    """Where the arguments of each call of `function` on a line are: up to the `)` that
    closes the group it is in, a `|`, or the end of the action."""
    out = []
    for call in re.finditer(r"(?<![\w.$])" + re.escape(function) + r"\b", text):
        depth, end = 0, call.end()
        while end < len(text):
            char = text[end]
            if char == "(":
                depth += 1
            elif char == ")":
                if depth == 0:
                    break
                depth -= 1
            elif (char == "|" and depth == 0) or text.startswith("}}", end):
                break
            end += 1
        out.append((call.end(), end))
    return out


def _existing_secret(
    chart: _Chart, calls: Sequence[RenderCall], rest: str, keys: Sequence[ObjectKey]
) -> str:
    """The chart's `existingSecret` value for a template that renders a Secret: the one nearest
    the calls' guard, else the one whose path names the template or the Secret (`tls` for
    templates/tls-secret.yaml), else the shortest."""
    secrets = [k for k in keys if (k.group, k.kind) == ("", "Secret")]
    found: list[tuple[str, ...]] = sorted(_keys_named(chart.values, "existingSecret", ()))
    if not secrets or not found:
        return ""
    guards = [c.value.removeprefix(chart.prefix).split(".") for c in calls if c.value]
    words = set(re.split(r"[^a-z0-9]+", " ".join([rest, *(k.name for k in secrets)]).lower()))

    def score(path: tuple[str, ...]) -> tuple[int, int, int]:
        shared = max((_common(path, g) for g in guards), default=0)
        named = sum(1 for part in path[:-1] if part.lower() in words)
        return (shared, named, -len(path))

    best = max(found, key=score)
    return chart.prefix + ".".join(best)


def _keys_named(node: Any, name: str, at: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    if not isinstance(node, Mapping) or len(at) > 8:
        return
    for key, value in node.items():
        if not isinstance(key, str):
            continue
        if key == name:
            yield (*at, key)
        yield from _keys_named(value, name, (*at, key))


def _common(a: Sequence[str], b: Sequence[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


# --------------------------------------------------------------------------- two renders


def _compare(
    first: Sequence[Manifest], again: Sequence[Manifest]
) -> dict[ObjectKey, tuple[FieldPath, ...]]:
    """The fields of each object that differ between two renders."""
    second = {m.key: m.body for m in again}
    out: dict[ObjectKey, tuple[FieldPath, ...]] = {}
    for manifest in first:
        other = second.get(manifest.key)
        if other is None:
            continue
        paths: list[FieldPath] = []
        _differ(manifest.body, other, (), paths)
        if paths:
            out[manifest.key] = tuple(paths)
    return out


def _differ(a: Any, b: Any, at: FieldPath, out: list[FieldPath]) -> None:
    if len(out) >= MAX_PATHS or a == b:
        return
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted({*a, *b}, key=str):
            _differ(a.get(key), b.get(key), (*at, key), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _differ(x, y, (*at, i), out)
    else:
        out.append(at)


def _rest(origin: str, display: str) -> str:
    """An object's origin as the chart's `# Source:` names it, without the top chart's name."""
    if display in ("", "."):
        return origin
    return origin[len(display) + 1 :] if origin.startswith(display + "/") else origin


def _join(a: str, b: str) -> str:
    return b if a in ("", ".") else posixpath.join(a, b)
