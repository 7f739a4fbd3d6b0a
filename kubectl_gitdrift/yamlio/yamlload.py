"""YAML text in, documents (or PyYAML node trees) out, within the bounds, refusals in one line.

Pure, like the package: the streamed load, the composing load that decides, and the node checks
that word a refusal.

Scalars follow what Kubernetes' YAML decoder produces rather than PyYAML's defaults: timestamps
stay strings and non-string mapping keys become strings (``1: a`` is ``{"1": "a"}``).

YAML is read straight from libyaml's event stream into Python objects, so a 40 MiB snapshot never
becomes a PyYAML node tree (a Mark pair per node: ~30x the text). That reader handles plain data
under the bounds; whenever it meets anything else (an error, a tag outside the core schema, a
complex key, two keys that read the same, an anchor reused, aliases near a bound) it gives up and
the text is composed, checked and constructed by PyYAML, which decides: results and messages are
those of the composing load either way.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kubectl_gitdrift.errors import GitDriftError
from kubectl_gitdrift.yamlio import limits

_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}"
    for name in ("binary", "bool", "float", "int", "null", "str", "timestamp")
)
"""The scalar tags the streamed load constructs (with the composing load's constructors)."""
_TEXT_TAGS = frozenset(("tag:yaml.org,2002:null", _STR_TAG, _TIMESTAMP_TAG))
"""Scalar tags whose construction cannot fail."""
_NUMBER_TAGS = frozenset(f"tag:yaml.org,2002:{name}" for name in ("bool", "float", "int"))
_SCALARS: Any = yaml.constructor.SafeConstructor()  # its scalar constructors keep no state

_BaseLoader: Any = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader


class _Loader(_BaseLoader):  # type: ignore[misc]
    """Safe loader that keeps timestamps as strings and stringifies mapping keys."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)  # merge keys (<<) first, so explicit keys win
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, (list, dict, set)):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found a {type(key).__name__} as a mapping key",
                    key_node.start_mark,
                )
            mapping[_key_text(key)] = self.construct_object(value_node, deep=deep)
        return mapping


def _construct_timestamp_as_str(loader: Any, node: Node) -> str:
    return str(loader.construct_scalar(node))


_Loader.add_constructor(_TIMESTAMP_TAG, _construct_timestamp_as_str)

_RESOLVED_FIRST = frozenset(c for c in _Loader.yaml_implicit_resolvers if c)
"""First characters of plain scalars that may resolve to something other than a string (the
loader registers no wildcard resolver, so any other plain scalar is a string)."""


def _key_text(key: Any) -> str:
    """The string sigs.k8s.io/yaml makes of a non-string key."""
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return key if isinstance(key, str) else str(key)


def load_yaml(
    text: str, name: str, error: type[GitDriftError], *, duplicates: list[str] | None = None
) -> list[Any]:
    """The documents of `text`, streamed (`_stream_yaml`) or, when that is unsure, composed
    (`_load_composed`), which raises `error` with the one-line message.

    `duplicates`: a key given twice in a mapping keeps its last value (sigs.k8s.io/yaml's
    go-yaml v2, not strict) and is noted here (`document 1: line 7: duplicate key 'image'`),
    instead of being refused. The streamed load gives up on such a mapping, so the composing
    load sees every one."""
    try:
        return _stream_yaml(text)
    except _Unsure:
        return _load_composed(text, name, error, duplicates)


def compose(
    text: str, name: str, error: type[GitDriftError], *, is_json: bool
) -> list[Node | None]:
    """The node trees of `text`'s documents (`yamlio.compose_documents`). Raises `error` when
    composing fails, or when the trees leave a doubt (`_plain_document`) and `load_yaml`
    refuses `text`. `is_json`: the package reads `text` as JSON, not as this YAML, so the trees
    need no load."""
    loader = _Loader(text)
    nodes: list[Node | None] = []
    failure: GitDriftError | None = None
    try:
        while loader.check_node():
            nodes.append(loader.get_node())
    except yaml.YAMLError as exc:
        failure = _yaml_error(exc, name, error)
    finally:
        loader.dispose()
    if failure is None and (is_json or all(map(_plain_document, nodes))):
        return nodes
    if not is_json:
        load_yaml(text, name, error)  # raises what load_any raises
    if failure is not None:
        raise failure
    return nodes


def _load_composed(
    text: str, name: str, error: type[GitDriftError], duplicates: list[str] | None = None
) -> list[Any]:
    """The documents of `text` through PyYAML's node trees: each document composed, checked
    (`_check_node`) and constructed in turn."""
    loader = _Loader(text)
    docs: list[Any] = []
    index = 0
    try:
        while loader.check_node():
            index += 1
            node = loader.get_node()
            if node is None:
                docs.append(None)
                continue
            problem = _check_node(node, duplicates_kept=duplicates is not None)
            if problem:
                raise error(f"{name}: document {index}: {problem}")
            if duplicates is not None:
                duplicates.extend(f"document {index}: {dup}" for dup in _duplicate_keys(node))
            try:
                docs.append(loader.construct_document(node))
            except (LookupError, ValueError, TypeError):  # `!!int x`, `!!bool maybe`, ...
                raise error(f"{name}: document {index}: {_bad_scalar(loader, node)}") from None
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, name, error) from None
    except RecursionError:
        raise error(
            f"{name}: document {index}: nested deeper than {limits.MAX_DEPTH} levels"
        ) from None
    finally:
        loader.dispose()
    return docs


def _bad_scalar(loader: Any, root: Node) -> str:
    """Which tagged scalar of a document its tag's constructor refuses, for the error line."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, ScalarNode):
            constructor = loader.yaml_constructors.get(node.tag)
            if node.tag != _STR_TAG and constructor is not None:
                try:
                    constructor(loader, node)
                except (LookupError, ValueError, TypeError):
                    tag = node.tag.replace("tag:yaml.org,2002:", "!!")
                    line = node.start_mark.line + 1
                    return f"line {line}: {node.value!r} is not a valid {tag} value"
        else:
            stack.extend(reversed(_children(node)))
    return "a tagged value cannot be read"


# ---- the streamed load


class _Unsure(Exception):
    """The streamed load met something it leaves to the composing load."""


_MISSING: Any = object()
_NO_KEY: Any = object()  # a mapping's next node is a key
_MERGE: Any = object()  # a plain `<<` key


class _Frame:
    """Bookkeeping for an open mapping or sequence that is anchored or merges mappings."""

    __slots__ = ("anchor", "depth", "expanded", "loose", "merges", "nodes", "peak")

    def __init__(
        self,
        anchor: str | None = None,
        nodes: int = 0,
        expanded: int = 0,
        peak: int = 0,
        depth: int = 0,
    ) -> None:
        self.anchor = anchor
        self.nodes = nodes  # nodes written before this one
        self.expanded = expanded  # alias expansion before this one
        self.peak = peak  # deepest path seen before this one
        self.depth = depth  # this one's path length
        self.merges: list[dict[str, Any]] = []  # mappings merged in (`<<`), in order
        self.loose = False  # a key that is not a string as written (`1`, `~`, `true`)

    def merge(self, value: Any) -> None:
        """`<<: value`, for a mapping or a list of one (PyYAML releases order the keys of a
        longer list differently)."""
        if type(value) is list and len(value) == 1:
            value = value[0]
        if type(value) is not dict:
            raise _Unsure
        self.merges.append(value)

    def merged(self, explicit: dict[str, Any], tangled: set[int]) -> dict[str, Any]:
        """The mapping with its merges: their keys first, in order, explicit keys win. Only for
        merges whose keys were all written as strings, distinct across them: then every PyYAML
        release reads them alike (6.0.4 skips a merged key whose text is the same object as one
        before it, so the outcome of a repeat depends on string caching)."""
        out: dict[str, Any] = {}
        for source in self.merges:
            if id(source) in tangled:
                raise _Unsure
            out.update(source)
        if len(out) != sum(map(len, self.merges)):
            raise _Unsure
        out.update(explicit)
        return out


def _stream_yaml(text: str) -> list[Any]:
    """The documents of `text` built straight from the parser's events, or _Unsure when the
    composing load may decide otherwise (`_stream_document` says when)."""
    loader = _Loader(text)
    try:
        cache: dict[str, Any] = {}
        docs: list[Any] = []
        loader.get_event()  # StreamStartEvent
        while type(loader.get_event()) is DocumentStartEvent:
            docs.append(_stream_document(loader, cache))
            loader.get_event()  # DocumentEndEvent
        return docs
    except yaml.YAMLError:
        raise _Unsure from None
    finally:
        loader.dispose()


def _stream_document(loader: Any, cache: dict[str, Any]) -> Any:
    """One document, from the event after DocumentStartEvent to its root's last event.

    Gives up (_Unsure) on anything `_check_node` might refuse, conservatively: a container
    MAX_DEPTH deep (a scalar in it would be too deep), an alias reaching that deep, more than
    MAX_ALIASES aliases, aliases expanding to more than 90% of MAX_EXPANDED_NODES (below that no
    node can expand 10x past its written size and over the limit), a key already in its mapping
    (written twice, or two keys that read the same, like `1` and `"1"`), an undefined, reused or
    recursive anchor. And on anything the constructor might refuse or build otherwise: tags
    outside the core schema, mappings or sequences as keys, `<<` anywhere but as a key, merges
    but of mappings with string keys distinct across them (`_Frame.merged`). Aliases share one
    object, as constructed aliases do.
    """
    max_depth = limits.MAX_DEPTH
    max_aliases = limits.MAX_ALIASES
    max_expanded = limits.MAX_EXPANDED_NODES
    get_event = loader.get_event
    anchors: dict[str, tuple[Any, int, int] | None] = {}  # name -> (value, size, height)
    stack: list[tuple[Any, Any, _Frame | None]] = []  # the enclosing (top, key, frame)
    top: Any = None  # the open container; None for the document itself
    key: Any = _NO_KEY  # in a mapping: the key awaiting its value
    frame: _Frame | None = None
    tangled: set[int] = set()  # ids of mappings with merges or keys not written as strings
    nodes = expanded = aliases = peak = 0
    while True:
        event = get_event()
        kind = type(event)
        if kind is ScalarEvent:
            nodes += 1
            value = event.value
            tag = event.tag
            if tag is not None and tag != "!":
                obj = _scalar(loader, tag, value)
            elif not event.implicit[0]:
                obj = value
            elif value and value[0] not in _RESOLVED_FIRST:
                obj = cache.setdefault(value, value)  # one object per text: keys repeat a lot
            else:
                obj = cache.get(value, _MISSING)
                if obj is _MISSING:
                    obj = _plain(loader, cache, value)
                if obj is _MERGE and (key is not _NO_KEY or type(top) is not dict):
                    raise _Unsure
            if event.anchor is not None:
                if event.anchor in anchors or obj is _MERGE:
                    raise _Unsure
                anchors[event.anchor] = (obj, 1, 1)
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            nodes += 1
            tag = event.tag
            if (key is _NO_KEY and type(top) is dict) or not (
                tag is None
                or tag == "!"
                or tag == (_MAP_TAG if kind is MappingStartEvent else _SEQ_TAG)
            ):
                raise _Unsure
            stack.append((top, key, frame))
            depth = len(stack)
            if depth >= max_depth:
                raise _Unsure
            if depth >= peak:
                peak = depth + 1  # with a scalar in it
            top = {} if kind is MappingStartEvent else []
            key = _NO_KEY
            frame = None
            if event.anchor is not None:
                if event.anchor in anchors:
                    raise _Unsure
                anchors[event.anchor] = None
                frame = _Frame(event.anchor, nodes - 1, expanded, peak, depth)
                peak = depth + 1
            continue
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            obj = top
            if frame is not None:
                if frame.merges:
                    obj = frame.merged(top, tangled)
                if frame.merges or frame.loose:
                    tangled.add(id(obj))  # not a mapping the streamed load merges
                if frame.anchor is not None:
                    size = nodes - frame.nodes + expanded - frame.expanded
                    anchors[frame.anchor] = (obj, size, peak - frame.depth + 1)
                    peak = max(peak, frame.peak)
            top, key, frame = stack.pop()
        elif kind is AliasEvent:
            aliases += 1
            target = anchors.get(event.anchor)
            if target is None or aliases > max_aliases or (key is _NO_KEY and type(top) is dict):
                raise _Unsure
            obj, size, height = target
            expanded += size
            reach = len(stack) + height
            if 10 * expanded > 9 * max_expanded or reach > max_depth:
                raise _Unsure
            peak = max(peak, reach)
        else:
            raise _Unsure
        # obj is a complete node: place it
        if type(top) is dict:
            if key is _NO_KEY:
                if type(obj) is not str:
                    if frame is None:
                        frame = _Frame()
                    if obj is _MERGE:
                        key = _MERGE
                        continue
                    frame.loose = True
                    obj = _key_text(obj)
                if obj in top:
                    raise _Unsure
                key = obj
            elif key is _MERGE:
                frame.merge(obj)  # type: ignore[union-attr]
                key = _NO_KEY
            else:
                top[key] = obj
                key = _NO_KEY
        elif type(top) is list:
            top.append(obj)
        else:
            return obj


def _plain(loader: Any, cache: dict[str, Any], value: str) -> Any:
    """A plain scalar that may not be a string, resolved and constructed (and remembered, but
    floats: a NaN is not equal to itself, so each stays its own object)."""
    tag = loader.resolve(ScalarNode, value, (True, False))
    obj = _MERGE if tag == _MERGE_TAG else _scalar(loader, tag, value)
    if type(obj) is not float:
        cache[value] = obj
    return obj


def _scalar(loader: Any, tag: str, value: str) -> Any:
    """A scalar of the core schema, as the loader constructs it."""
    if tag == _STR_TAG:
        return value
    if tag not in _SCALAR_TAGS:
        raise _Unsure
    try:
        return loader.yaml_constructors[tag](loader, ScalarNode(tag, value))
    except (LookupError, ValueError, yaml.YAMLError):  # `!!int ""`, …: left to the composing load
        raise _Unsure from None


# ---- errors


def _yaml_error(exc: yaml.YAMLError, name: str, error: type[GitDriftError]) -> GitDriftError:
    if isinstance(exc, yaml.MarkedYAMLError):
        return error(f"{name}: {_describe_yaml_error(exc)}")
    # reader errors: NUL bytes, unprintable characters
    detail = re.sub(r'in "<[^>]*>", position (\d+)', r"at offset \1", str(exc))
    return error(f"{name}: could not parse YAML ({_one_line(detail)})")


def _describe_yaml_error(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "invalid YAML"
    if exc.context and exc.problem:
        problem = f"{exc.context}: {exc.problem}"
    where = f"line {mark.line + 1}: " if mark is not None else ""
    return f"{where}could not parse YAML ({_one_line(problem)})"


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _plain_document(root: Node | None) -> bool:
    """Whether loading the document of `root` certainly succeeds without changing the tree:
    `_check_node` finds nothing and `_constructs` holds."""
    return root is None or (_check_node(root) is None and _constructs(root))


def _constructs(root: Node) -> bool:
    """Whether constructing `root` (checked) certainly succeeds and leaves the nodes as they
    are (merge keys rewrite them): core-schema tags only, scalar keys, no merge keys, and every
    boolean and number constructs. False when unsure."""
    level = [root]
    while level:
        below: list[Node] = []
        for node in level:
            tag = node.tag
            if type(node) is ScalarNode:
                if tag in _TEXT_TAGS:
                    continue
                if tag not in _NUMBER_TAGS:
                    return False
                try:
                    _SCALARS.yaml_constructors[tag](_SCALARS, node)
                except (LookupError, ValueError, yaml.YAMLError):  # `!!int x`, 5,000 digits
                    return False
            elif type(node) is MappingNode:
                if tag != _MAP_TAG or any(type(key) is not ScalarNode for key, _ in node.value):
                    return False
                below.extend(itertools.chain.from_iterable(node.value))
            elif type(node) is SequenceNode and tag == _SEQ_TAG:
                below.extend(node.value)
            else:
                return False
        level = below
    return True


def _check_node(root: Node, *, duplicates_kept: bool = False) -> str | None:
    """Why a composed document is refused (aliases, depth, duplicate keys unless
    `duplicates_kept`), or None."""
    if _plain_tree(root):
        return None
    return _first_problem(root, duplicates_kept=duplicates_kept)


def _plain_tree(root: Node) -> bool:
    """Whether `root` is certainly fine: a tree (no node reached twice, so no alias) at most
    MAX_DEPTH levels deep whose mappings have scalar keys of distinct values. Walked level by
    level, mostly in C; False when unsure (then `_first_problem` decides)."""
    seen = {id(root)}
    level = [root]
    for _depth in range(limits.MAX_DEPTH):
        below: list[Node] = []
        for node in level:
            if type(node) is MappingNode:
                pairs = node.value
                try:
                    if len({key.value for key, _value in pairs}) != len(pairs):
                        return False
                except TypeError:  # a mapping or sequence as a key
                    return False
                below.extend(itertools.chain.from_iterable(pairs))
            elif type(node) is SequenceNode:
                below.extend(node.value)
        if not below:
            return True
        size = len(seen)
        seen.update(map(id, below))
        if len(seen) != size + len(below):
            return False  # a node reached twice
        level = below
    return False


def _first_problem(root: Node, *, duplicates_kept: bool = False) -> str | None:
    """`_check_node`'s answer for any document, in the order a depth-first walk finds them.

    Aliases compose to shared node objects, so the walk visits each distinct node once and counts
    how many nodes the document would have once expanded.
    """
    max_depth = limits.MAX_DEPTH
    max_aliases = limits.MAX_ALIASES
    max_expanded = limits.MAX_EXPANDED_NODES
    sizes: dict[int, int] = {}  # id(node) -> expanded node count (also the "done" set)
    heights: dict[int, int] = {}
    on_path: set[int] = set()
    aliases = 0
    unique = 0
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, exiting = stack.pop()
        ident = id(node)
        if exiting:
            on_path.discard(ident)
            children = _children(node)
            sizes[ident] = 1 + sum(sizes[id(c)] for c in children)
            heights[ident] = 1 + max((heights[id(c)] for c in children), default=0)
            if heights[ident] > max_depth:
                return f"nested deeper than {max_depth} levels"
            if sizes[ident] > max_expanded and sizes[ident] > 10 * unique:
                return f"aliases expand to more than {max_expanded} nodes (is this an alias bomb?)"
            continue
        if ident in sizes:
            aliases += 1
            if aliases > max_aliases:
                return f"more than {max_aliases} aliases"
            continue
        if ident in on_path:
            return f"line {node.start_mark.line + 1}: recursive alias"
        unique += 1
        if isinstance(node, MappingNode) and not duplicates_kept:
            duplicate = _duplicate_key(node)
            if duplicate:
                return duplicate
        on_path.add(ident)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                return f"line {child.start_mark.line + 1}: recursive alias"
            if id(child) in sizes:
                aliases += 1
                if aliases > max_aliases:
                    return f"more than {max_aliases} aliases"
            else:
                stack.append((child, False))
        if len(on_path) > max_depth:
            return f"nested deeper than {max_depth} levels"
    return None


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _duplicate_key(node: MappingNode) -> str | None:
    seen: set[tuple[str, str]] = set()
    for key, _value in node.value:
        if not isinstance(key, ScalarNode) or key.tag == _MERGE_TAG:
            continue
        ident = (key.tag, key.value)
        if ident in seen:
            return f"line {key.start_mark.line + 1}: duplicate key {key.value!r}"
        seen.add(ident)
    return None


def _duplicate_keys(root: Node) -> list[str]:
    """Every repeated key of the document (`line 7: duplicate key 'image'`), in text order;
    the document is checked (no alias loops)."""
    found: list[tuple[int, int, str]] = []
    done: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in done:
            continue
        done.add(id(node))
        if isinstance(node, MappingNode):
            seen: set[tuple[str, str]] = set()
            for key, _value in node.value:
                if not isinstance(key, ScalarNode) or key.tag == _MERGE_TAG:
                    continue
                ident = (key.tag, key.value)
                if ident in seen:
                    mark = key.start_mark
                    found.append((mark.line, mark.column, f"duplicate key {key.value!r}"))
                seen.add(ident)
        stack.extend(_children(node))
    return [f"line {line + 1}: {what}" for line, _column, what in sorted(found)]
