"""Go's text/template in pure Python, as the ApplicationSet controller runs it for goTemplate.

`render(text, data, options=)` parses `text` once (parsed templates are cached by text) and
executes it over `data` with Argo CD's function set (`templatefuncs.FUNCS`). The language is
text/template's: actions with trim markers (`{{-`, `-}}`), comments, pipelines, fields and
chains (`.path.basename`, `(index . "a").b`), variables (`$x := ...`, `$x = ...`, `$`),
if/else if/else, range (lists, maps by sorted key, integers; break and continue; `$i, $v`),
with/else with/else, define/template/block, and constants as Go reads them. Values, their
printing and truth are Go's (`govalues`). The options are Go's `missingkey=` ones.

A bad template or a failing execution raises TemplateError, one line: the position (line and
column of the node, 1-based) and Go's cause, e.g. `line 1, col 12: map has no entry for key
"env"`. The caller names the ApplicationSet and the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from kubectl_gitdrift.appsets import govalues, templatefuncs
from kubectl_gitdrift.appsets.govalues import MISSING, Func, FuncError, show, truth
from kubectl_gitdrift.appsets.inputs import AppSetError
from kubectl_gitdrift.appsets.templatefuncs import FUNCS

__all__ = ["TemplateError", "render"]

MAX_DEPTH = 100  # nested {{template}} calls (Go allows 100000; Python's stack does not)
_MISSING_KEY = {"default": "default", "invalid": "default", "zero": "zero", "error": "error"}
_SPACE = " \t\r\n"


class TemplateError(AppSetError):
    """A goTemplate that does not parse or fails to execute: position and cause, one line."""


class _Error(Exception):
    def __init__(self, pos: int, message: str) -> None:
        super().__init__(message)
        self.pos = pos


# ---------------------------------------------------------------- the lexer

_TOKEN = re.compile(
    r"""(?P<space>[ \t\r\n]+)
    |(?P<number>[+-]?(?:0[xX][0-9a-fA-F_]*(?:\.[0-9a-fA-F_]*)?(?:[pP][+-]?\d+)?
        |0[oObB][0-7_]+|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?[\d_]+)?)i?)
    |(?P<field>\.\w+)
    |(?P<var>\$\w*)
    |(?P<string>"(?:[^"\\\n]|\\.)*")
    |(?P<raw>`[^`]*`)
    |(?P<char>'(?:[^'\\\n]|\\.)*')
    |(?P<ident>[^\W\d]\w*)
    |(?P<punct>:=|[()|,=.])""",
    re.VERBOSE,
)
_KEYWORDS = frozenset(("block", "break", "continue", "define", "else", "end", "if", "range"))
_KEYWORDS |= {"nil", "template", "with"}
_LEFT_TRIM = ("- ", "-\t", "-\r", "-\n")


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # text, open, close, number, field, var, string, char, ident, keyword, punct, eof
    value: str
    pos: int


def _lex(text: str) -> list[_Tok]:
    """text/template's items; spaces inside actions are kept (a chain must touch its operand)."""
    toks: list[_Tok] = []
    pos, trim_next = 0, False
    while True:
        start = text.find("{{", pos)
        chunk = text[pos:] if start < 0 else text[pos:start]
        trim_left = start >= 0 and text[start + 2 : start + 4] in _LEFT_TRIM
        if trim_next:
            stripped = chunk.lstrip(_SPACE)
            pos, chunk = pos + len(chunk) - len(stripped), stripped
        if trim_left:
            chunk = chunk.rstrip(_SPACE)
        if chunk:
            toks.append(_Tok("text", chunk, pos))
        if start < 0:
            toks.append(_Tok("eof", "", len(text)))
            return toks
        pos = start + (4 if trim_left else 2)
        if text.startswith("/*", pos):
            end = text.find("*/", pos + 2)
            if end < 0:
                raise _Error(start, "unclosed comment")
            pos, trim_next = end + 2, False
            if text.startswith(" -}}", pos) or text.startswith("\t-}}", pos):
                pos, trim_next = pos + 4, True
            elif text.startswith("}}", pos):
                pos += 2
            else:
                raise _Error(start, "comment ends before closing delimiter")
            continue
        toks.append(_Tok("open", "{{", start))
        pos, trim_next = _lex_action(text, pos, toks)


def _lex_action(text: str, pos: int, toks: list[_Tok]) -> tuple[int, bool]:
    while True:
        if text.startswith("}}", pos):
            toks.append(_Tok("close", "}}", pos))
            return pos + 2, False
        if text.startswith("-}}", pos) and pos > 0 and text[pos - 1] in _SPACE:
            toks.append(_Tok("close", "-}}", pos))
            return pos + 3, True
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if pos >= len(text):
                raise _Error(toks[-1].pos, "unclosed action")
            raise _Error(pos, f"unexpected {govalues.go_quote(text[pos])} in command")
        kind, value = m.lastgroup or "", m.group()
        if kind == "space":
            pos = m.end()
            continue
        if kind == "ident" and value in _KEYWORDS:
            kind = "keyword"
        elif kind == "ident" and value in ("true", "false"):
            kind = "bool"
        elif kind == "number" and re.match(r"\w", text[m.end() : m.end() + 1]):
            raise _Error(pos, f"bad number syntax: {govalues.go_quote(value + text[m.end()])}")
        toks.append(_Tok(kind, value, pos))
        pos = m.end()


def _unquote(tok: _Tok) -> str:
    try:
        return govalues.go_unquote(tok.value)
    except ValueError as err:
        raise _Error(tok.pos, str(err)) from None


# ---------------------------------------------------------------- the parse tree


@dataclass(slots=True)
class _Node:
    pos: int


@dataclass(slots=True)
class _Text(_Node):
    text: str


@dataclass(slots=True)
class _Const(_Node):
    """A bool, string or number constant: `value` as an interface{} gets it (ints stay ints)."""

    text: str
    value: Any
    as_int: int | None = None
    as_float: float | None = None


@dataclass(slots=True)
class _Field(_Node):
    names: tuple[str, ...]


@dataclass(slots=True)
class _Var(_Node):
    name: str
    names: tuple[str, ...] = ()


@dataclass(slots=True)
class _Ident(_Node):
    name: str


@dataclass(slots=True)
class _Word(_Node):
    word: str  # "." (dot) or "nil"


@dataclass(slots=True)
class _Chain(_Node):
    node: _Node
    names: tuple[str, ...]


@dataclass(slots=True)
class _Cmd(_Node):
    args: list[_Node]


@dataclass(slots=True)
class _Pipe(_Node):
    decl: tuple[str, ...]
    assign: bool
    cmds: list[_Cmd]


@dataclass(slots=True)
class _Action(_Node):
    pipe: _Pipe


@dataclass(slots=True)
class _Control(_Node):
    kind: str  # if, with, range
    pipe: _Pipe
    body: list[_Node]
    orelse: list[_Node]


@dataclass(slots=True)
class _Call(_Node):
    name: str
    pipe: _Pipe | None


@dataclass(slots=True)
class _Jump(_Node):
    kind: str  # break, continue


@dataclass(slots=True)
class _Template:
    root: list[_Node]
    defines: dict[str, list[_Node]] = field(default_factory=dict)


# ---------------------------------------------------------------- the parser


class _Parser:
    """text/template's parse: an item list to a tree, functions and variables checked."""

    def __init__(self, text: str) -> None:
        self.toks = _lex(text)
        self.i = 0
        self.vars = ["$"]
        self.range_depth = self.parens = 0
        self.tmpl = _Template([])

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def next(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def expect(self, kind: str, context: str) -> _Tok:
        tok = self.next()
        if tok.kind != kind:
            raise _Error(tok.pos, f"unexpected {_describe(tok)} in {context}")
        return tok

    def parse(self) -> _Template:
        body, _ = self.parse_list(top=True)
        self.tmpl.root = body
        return self.tmpl

    def parse_list(self, top: bool = False) -> tuple[list[_Node], _Tok]:
        """Nodes up to {{end}} or {{else}} (returned, its keyword consumed) or EOF at the top."""
        nodes: list[_Node] = []
        while True:
            tok = self.next()
            if tok.kind == "text":
                nodes.append(_Text(tok.pos, tok.value))
                continue
            if tok.kind == "eof":
                if top:
                    return nodes, tok
                raise _Error(tok.pos, "unexpected EOF")
            word = self.peek()
            if word.kind == "keyword" and word.value in ("end", "else"):
                if top:
                    raise _Error(word.pos, f"unexpected {{{{{word.value}}}}}")
                self.next()
                return nodes, word
            if word.kind == "keyword" and word.value == "define":
                if not top:
                    raise _Error(word.pos, "unexpected <define> in command")
                self.next()
                self.define(word)
                continue
            node = self.action()
            if node is not None:
                nodes.append(node)

    def define(self, word: _Tok) -> None:
        name = self.named("define")
        self.expect("close", "define clause")
        self.body(name, word.pos, "define")

    def named(self, context: str) -> str:
        tok = self.next()
        if tok.kind not in ("string", "raw"):
            raise _Error(tok.pos, f"unexpected {_describe(tok)} in {context} clause")
        return _unquote(tok)

    def body(self, name: str, pos: int, context: str) -> None:
        """A define's or a block's body, up to {{end}}, its variables its own."""
        saved, self.vars = self.vars, ["$"]
        body, end = self.parse_list()
        self.vars = saved
        if end.value != "end":
            raise _Error(end.pos, f"unexpected {{{{else}}}} in {context}")
        self.expect("close", "end")
        self.add_define(name, body, pos)

    def add_define(self, name: str, body: list[_Node], pos: int) -> None:
        """Go's rule: a second non-empty definition of a name in one template is an error."""
        old = self.tmpl.defines.get(name)
        if old and not _blank(body) and not _blank(old):
            quoted = govalues.go_quote(name)
            raise _Error(pos, f"template: multiple definition of template {quoted}")
        if not old or not _blank(body):
            self.tmpl.defines[name] = body

    def action(self) -> _Node | None:
        tok = self.peek()
        if tok.kind == "keyword":
            self.next()
            word = tok.value
            if word in ("if", "with", "range"):
                return self.control(tok, word)
            if word in ("template", "block"):
                return self.template(tok, word)
            if word in ("break", "continue"):
                if not self.range_depth:
                    raise _Error(tok.pos, f"{{{{{word}}}}} outside {{{{range}}}}")
                self.expect("close", word)
                return _Jump(tok.pos, word)
            if word != "nil":
                raise _Error(tok.pos, f"unexpected {_describe(tok)} in command")
            self.i -= 1
        pipe = self.pipeline("command", "close")
        return _Action(tok.pos, pipe)

    def control(self, tok: _Tok, kind: str) -> _Control:
        mark = len(self.vars)
        pipe = self.pipeline(kind, "close")
        self.range_depth += kind == "range"
        body, end = self.parse_list()
        self.range_depth -= kind == "range"
        orelse: list[_Node] = []
        if end.value == "else":
            nxt = self.peek()
            if kind != "range" and nxt.kind == "keyword" and nxt.value in ("if", "with"):
                if nxt.value != kind:
                    raise _Error(nxt.pos, f"unexpected {{{{else {nxt.value}}}}} in {kind}")
                self.next()  # {{else if}}: a nested control that shares this {{end}}
                orelse = [self.control(nxt, kind)]
            else:
                self.expect("close", "else")
                orelse, end = self.parse_list()
                if end.value != "end":
                    raise _Error(end.pos, "expected end; found {{else}}")
                self.expect("close", "end")
        else:
            self.expect("close", "end")
        del self.vars[mark:]
        return _Control(tok.pos, kind, pipe, body, orelse)

    def template(self, tok: _Tok, kind: str) -> _Call:
        name = self.named(kind)
        pipe = None if self.peek().kind == "close" else self.pipeline(kind, "close")
        if pipe is None:
            self.next()
        if kind == "block":
            self.body(name, tok.pos, "block")
        return _Call(tok.pos, name, pipe)

    def pipeline(self, context: str, end: str) -> _Pipe:
        start = self.peek()
        decl: list[str] = []
        assign = False
        while self.peek().kind == "var" and self.toks[self.i + 1].value in (":=", "=", ","):
            var, op = self.next(), self.next()
            decl.append(var.value)
            if op.value == ",":
                if context != "range" or len(decl) > 1 or self.peek().kind != "var":
                    raise _Error(op.pos, f"too many declarations in {context}")
                continue
            assign = op.value == "="
            if assign and var.value not in self.vars:
                raise _Error(var.pos, f"undefined variable {govalues.go_quote(var.value)}")
            break
        else:
            if decl:
                raise _Error(start.pos, f"missing := in {context}")
        if not assign:
            self.vars.extend(decl)
        cmds: list[_Cmd] = []
        while True:
            tok = self.peek()
            if end == ")" and tok.kind in ("close", "eof"):
                raise _Error(tok.pos, "unclosed left paren")
            if tok.kind == "eof":
                raise _Error(tok.pos, "unclosed action")
            if tok.kind == end or (end == ")" and tok.kind == "punct" and tok.value == ")"):
                self.next()
                break
            cmds.append(self.command(context))
            if self.peek().kind == "punct" and self.peek().value == "|":
                self.next()
        if not cmds:
            raise _Error(start.pos, f"missing value for {context}")
        for n, cmd in enumerate(cmds[1:], 2):
            if isinstance(cmd.args[0], _Const | _Word):
                raise _Error(cmd.pos, f"non executable command in pipeline stage {n}")
        return _Pipe(start.pos, tuple(decl), assign, cmds)

    def command(self, context: str) -> _Cmd:
        start = self.peek()
        args: list[_Node] = []
        while True:
            tok = self.peek()
            if tok.kind in ("close", "eof") or (tok.kind == "punct" and tok.value in "|)"):
                if tok.value == ")" and not self.parens:
                    raise _Error(tok.pos, 'unexpected ")" in command')
                break
            args.append(self.operand())
        if not args:
            raise _Error(start.pos, "missing value for command")
        return _Cmd(start.pos, args)

    def operand(self) -> _Node:
        node = self.term()
        names: list[str] = []
        while True:
            tok = self.peek()
            prev = self.toks[self.i - 1]
            if tok.kind != "field" or prev.pos + len(prev.value) != tok.pos:
                break
            names.append(self.next().value[1:])
        if not names:
            return node
        if isinstance(node, _Field):
            return _Field(node.pos, node.names + tuple(names))
        if isinstance(node, _Var):
            return _Var(node.pos, node.name, node.names + tuple(names))
        if isinstance(node, _Const | _Word):
            raise _Error(
                node.pos,
                "unexpected . after term "
                + govalues.go_quote(self.toks[self.i - len(names) - 1].value),
            )
        return _Chain(node.pos, node, tuple(names))

    def term(self) -> _Node:
        tok = self.next()
        kind, value = tok.kind, tok.value
        if kind == "field":
            return _Field(tok.pos, (value[1:],))
        if kind == "var":
            if value not in self.vars:
                raise _Error(tok.pos, f"undefined variable {govalues.go_quote(value)}")
            return _Var(tok.pos, value)
        if kind == "ident":
            if value not in FUNCS:
                raise _Error(tok.pos, templatefuncs.unknown(value))
            return _Ident(tok.pos, value)
        if kind == "punct" and value == ".":
            return _Word(tok.pos, ".")
        if kind == "punct" and value == "(":
            self.parens += 1
            pipe = self.pipeline("parenthesized pipeline", ")")
            self.parens -= 1
            return pipe
        if kind == "keyword" and value == "nil":
            return _Word(tok.pos, "nil")
        if kind == "bool":
            return _Const(tok.pos, value, value == "true")
        if kind in ("string", "raw"):
            return _Const(tok.pos, value, _unquote(tok))
        if kind in ("number", "char"):
            return _number(tok)
        raise _Error(tok.pos, f"unexpected {_describe(tok)} in operand")


def _number(tok: _Tok) -> _Const:
    try:
        value, as_int, as_float = govalues.go_number(tok.value)
    except ValueError as err:
        raise _Error(tok.pos, str(err)) from None
    return _Const(tok.pos, tok.value, value, as_int, as_float)


def _blank(nodes: list[_Node]) -> bool:
    return all(isinstance(n, _Text) and not n.text.strip() for n in nodes)


def _describe(tok: _Tok) -> str:
    if tok.kind == "eof":
        return "EOF"
    if tok.kind == "close":
        return "}}"
    return govalues.go_quote(tok.value) if tok.kind != "keyword" else f"<{tok.value}>"


@lru_cache(maxsize=4096)
def _parse(text: str) -> _Template:
    return _Parser(text).parse()


# ---------------------------------------------------------------- the executor

_NOARG: Any = object()  # no piped value (text/template's missingVal)


class _Jumped(Exception):
    def __init__(self, kind: str) -> None:
        self.kind = kind


class _State:
    """One execution: the output, the variable stack, the missingkey option."""

    __slots__ = ("depth", "missing", "out", "tmpl", "vars")

    def __init__(self, tmpl: _Template, missing: str, dot: Any) -> None:
        self.tmpl, self.missing, self.depth = tmpl, missing, 0
        self.out: list[str] = []
        self.vars: list[list[Any]] = [["$", dot]]

    def var(self, name: str) -> Any:
        for entry in reversed(self.vars):
            if entry[0] == name:
                return entry[1]
        raise _Error(0, f"undefined variable: {name}")

    def set_var(self, name: str, value: Any) -> None:
        for entry in reversed(self.vars):
            if entry[0] == name:
                entry[1] = value
                return

    def walk(self, dot: Any, nodes: list[_Node]) -> None:
        for node in nodes:
            if isinstance(node, _Text):
                self.out.append(node.text)
            elif isinstance(node, _Action):
                value = self.pipeline(dot, node.pipe)
                if not node.pipe.decl:
                    self.out.append("<no value>" if value is MISSING else show(value))
            elif isinstance(node, _Control):
                self.control(dot, node)
            elif isinstance(node, _Call):
                self.call(dot, node)
            elif isinstance(node, _Jump):
                raise _Jumped(node.kind)

    def control(self, dot: Any, node: _Control) -> None:
        mark = len(self.vars)
        value = self.pipeline(dot, node.pipe)
        try:
            if node.kind == "range":
                self.range(dot, node, value)
            elif truth(value):
                self.walk(value if node.kind == "with" else dot, node.body)
            else:
                self.walk(dot, node.orelse)
        finally:
            del self.vars[mark:]

    def range(self, dot: Any, node: _Control, value: Any) -> None:
        if isinstance(value, dict):
            items: list[tuple[Any, Any]] = [(k, value[k]) for k in sorted(value)]
        elif isinstance(value, list | tuple):
            items = list(enumerate(value))
        elif isinstance(value, int) and not isinstance(value, bool):
            if len(node.pipe.decl) > 1:
                raise _Error(node.pos, f"can't use {value} to iterate over more than one variable")
            items = [(i, i) for i in range(value)]
        elif value is MISSING or value is None:
            items = []
        else:
            raise _Error(node.pos, f"range can't iterate over {show(value)}")
        if not items:
            self.walk(dot, node.orelse)
            return
        decl, top = node.pipe.decl, len(self.vars)
        for index, elem in items:
            if decl:
                self.vars[top - 1][1] = elem
                if len(decl) > 1:
                    self.vars[top - 2][1] = index
            mark = len(self.vars)
            try:
                self.walk(elem, node.body)
            except _Jumped as jump:
                if jump.kind == "break":
                    break
            finally:
                del self.vars[mark:]

    def call(self, dot: Any, node: _Call) -> None:
        body = self.tmpl.defines.get(node.name)
        if body is None:
            raise _Error(node.pos, f"template {govalues.go_quote(node.name)} not defined")
        if self.depth >= MAX_DEPTH:
            raise _Error(node.pos, f"exceeded maximum template depth ({MAX_DEPTH})")
        value = MISSING if node.pipe is None else self.pipeline(dot, node.pipe)
        saved = self.vars
        self.vars, self.depth = [["$", value]], self.depth + 1
        try:
            self.walk(value, body)
        finally:
            self.vars, self.depth = saved, self.depth - 1

    def pipeline(self, dot: Any, pipe: _Pipe) -> Any:
        value = _NOARG
        for cmd in pipe.cmds:
            value = self.command(dot, cmd, value)
            if value is None:
                value = MISSING  # an interface{} holding nil is dug down to no value
        for name in pipe.decl:
            if pipe.assign:
                self.set_var(name, value)
            else:
                self.vars.append([name, value])
        return value

    def command(self, dot: Any, cmd: _Cmd, final: Any) -> Any:
        first = cmd.args[0]
        if isinstance(first, _Field):
            return self.fields(dot, dot, first, first.names, cmd.args, final)
        if isinstance(first, _Var):
            value = self.var(first.name)
            if not first.names:
                self.no_args(first, cmd.args, final)
                return value
            return self.fields(dot, value, first, first.names, cmd.args, final)
        if isinstance(first, _Chain):
            value = self.arg(dot, "value", first.node)
            return self.fields(dot, value, first, first.names, cmd.args, final)
        if isinstance(first, _Ident):
            return self.function(dot, first, cmd.args, final)
        self.no_args(first, cmd.args, final)
        if isinstance(first, _Pipe):
            return self.pipeline(dot, first)
        if isinstance(first, _Word):
            if first.word == "nil":
                raise _Error(first.pos, "nil is not a command")
            return dot
        assert isinstance(first, _Const)
        return first.value

    def no_args(self, first: _Node, args: list[_Node], final: Any) -> None:
        if len(args) > 1 or final is not _NOARG:
            text = first.text if isinstance(first, _Const) else type(first).__name__.strip("_")
            raise _Error(first.pos, f"can't give argument to non-function {text}")

    def fields(
        self,
        dot: Any,
        value: Any,
        node: _Node,
        names: tuple[str, ...],
        args: list[_Node],
        final: Any,
    ) -> Any:
        has_args = len(args) > 1 or final is not _NOARG
        for n, name in enumerate(names):  # past the first, a value is a map's interface {}
            last = n == len(names) - 1
            if value is MISSING:
                if self.missing == "error":
                    raise _Error(node.pos, f"nil data; no entry for key {govalues.go_quote(name)}")
                return MISSING
            if value is None:
                raise _Error(node.pos, f"nil pointer evaluating interface {{}}.{name}")
            if not isinstance(value, dict):
                typ = govalues.type_name(value) if n == 0 else "interface {}"
                raise _Error(node.pos, f"can't evaluate field {name} in type {typ}")
            if last and has_args:
                raise _Error(node.pos, f"{name} is not a method but has arguments")
            if name in value:
                value = value[name]
            elif self.missing == "error":
                raise _Error(node.pos, f"map has no entry for key {govalues.go_quote(name)}")
            else:
                value = None if self.missing == "zero" else MISSING
        return value

    def function(self, dot: Any, ident: _Ident, args: list[_Node], final: Any) -> Any:
        name, fn = ident.name, FUNCS[ident.name]
        argv = args[1:]
        count = len(argv) + (final is not _NOARG)
        if fn.variadic is None and count != len(fn.params):
            raise _Error(
                ident.pos, f"wrong number of args for {name}: want {len(fn.params)} got {count}"
            )
        if count < len(fn.params):
            raise _Error(
                ident.pos,
                f"wrong number of args for {name}: want at least {len(fn.params)} got {count}",
            )
        if name in ("and", "or"):  # they stop at the first argument that decides
            value = _NOARG
            for arg in argv:
                value = self.arg(dot, "value", arg)
                if truth(value) == (name == "or"):
                    return value
            return final if final is not _NOARG else value
        values = [self.arg(dot, _param(fn, i), arg) for i, arg in enumerate(argv)]
        if final is not _NOARG:
            values.append(self.check(ident, final, _param(fn, len(argv))))
        try:
            return fn.fn(*values)
        except (FuncError, ArithmeticError, LookupError, TypeError, ValueError) as err:
            raise _Error(ident.pos, f"error calling {name}: {err}") from None  # Go's recover()

    def arg(self, dot: Any, typ: str, node: _Node) -> Any:
        if isinstance(node, _Const):
            return _constant(node, typ)
        if isinstance(node, _Word) and node.word == "nil":
            if typ in ("any", "map", "value"):
                return None
            raise _Error(node.pos, f"cannot assign nil to {govalues.GO_TYPES.get(typ, typ)}")
        if isinstance(node, _Word):
            value = dot
        elif isinstance(node, _Field):
            value = self.fields(dot, dot, node, node.names, [node], _NOARG)
        elif isinstance(node, _Var):
            value = self.var(node.name)
            if node.names:
                value = self.fields(dot, value, node, node.names, [node], _NOARG)
        elif isinstance(node, _Chain):
            value = self.fields(
                dot, self.arg(dot, "value", node.node), node, node.names, [node], _NOARG
            )
        elif isinstance(node, _Pipe):
            value = self.pipeline(dot, node)
        else:
            assert isinstance(node, _Ident)
            value = self.function(dot, node, [node], _NOARG)
        return self.check(node, value, typ)

    def check(self, node: _Node, value: Any, typ: str) -> Any:
        try:
            return govalues.assign(value, typ)
        except FuncError as err:
            raise _Error(node.pos, str(err)) from None


def _param(fn: Func, i: int) -> str:
    return fn.params[i] if i < len(fn.params) else fn.variadic or "any"


def _constant(node: _Const, typ: str) -> Any:
    try:
        return govalues.assign_constant(node.text, node.value, node.as_int, node.as_float, typ)
    except FuncError as err:
        raise _Error(node.pos, str(err)) from None


# ---------------------------------------------------------------- the API


def render(text: str, data: Mapping[str, Any], *, options: Sequence[str] = ()) -> str:
    """`text` executed as a Go template over `data` with Argo CD's functions (goTemplate).
    Values inside `data` are plain JSON-like data (dict, list, str, int, float, bool, None)."""
    missing = "default"
    for option in options:
        key, _, value = option.partition("=")
        if key != "missingkey" or value not in _MISSING_KEY:
            raise TemplateError(f"unrecognized goTemplateOptions entry {govalues.go_quote(option)}")
        missing = _MISSING_KEY[value]
    try:
        tmpl = _parse(text)
        data = data if isinstance(data, dict) else dict(data)
        state = _State(tmpl, missing, data)
        state.walk(data, tmpl.root)
    except _Error as err:
        cause = str(err).replace("\n", "\\n")  # one line, whatever `fail` was given
        raise TemplateError(f"{_where(text, err.pos)}: {cause}") from None
    except RecursionError:
        raise TemplateError("template nested too deeply") from None
    return "".join(state.out)


def _where(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    return f"line {line}, col {pos - (text.rfind(chr(10), 0, pos) + 1) + 1}"
