"""The floor plan (issue 23), checked: the package root is the shared vocabulary and the wings,
each wing says its job in one line, no module has a second job's length, and no import circle
runs anywhere (import-linter's contracts in pyproject.toml check the layering between wings)."""

from __future__ import annotations

import ast
import sys

import grimp
import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "kubectl_gitdrift"
WINGS = (
    "compare",
    "diagnose",
    "present",
    "live",
    "run",
    "cli",
    "sources",
    "builtin",
    "yamlio",
    "appsets",
)
MAX_ROOT_MODULES = 12
MAX_LINES = 800


def _modules() -> list:  # type: ignore[type-arg]
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_root_holds_the_shared_vocabulary_and_the_wings() -> None:
    root_modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root_modules) <= MAX_ROOT_MODULES, root_modules
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert set(packages) <= set(WINGS), packages


@pytest.mark.parametrize("wing", WINGS)
def test_each_wing_says_its_job_in_one_line(wing: str) -> None:
    init = PACKAGE / wing / "__init__.py"
    tree = ast.parse(init.read_text())
    doc = ast.get_docstring(tree)
    assert doc, f"{wing}/__init__.py has no docstring"
    if wing not in ("builtin", "yamlio"):  # these two packages are plugins / an API themselves
        assert "\n" not in doc.strip(), f"{wing}: the job in one line"
        assert len(tree.body) == 1, f"{wing}/__init__.py holds code: it names the wing only"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_over_800_lines(path) -> None:  # type: ignore[no-untyped-def]
    lines = path.read_text().count("\n")
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)}: {lines} lines"
    assert ast.get_docstring(ast.parse(path.read_text())), f"{path.name}: no module docstring"


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_anywhere() -> None:
    """Every import that runs counts, a function-level one too (that is how the old circle in
    sources/ was held open); imports under TYPE_CHECKING never run and do not count."""
    sys.path.insert(0, str(ROOT))
    try:
        # no cache: lint-imports leaves one behind (.grimp_cache), and a stale graph proves nothing
        graph = grimp.build_graph(
            "kubectl_gitdrift", cache_dir=None, exclude_type_checking_imports=True
        )
    finally:
        sys.path.remove(str(ROOT))
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert len(edges) > 60
    assert _cycles(edges) == []
