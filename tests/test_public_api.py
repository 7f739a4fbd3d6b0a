"""The public API (issue 23): `kubectl_gitdrift/__init__.py` exports all a team plugin needs, and
the repository's own plugins and the plugin guide's examples import from nowhere else."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import pytest

import kubectl_gitdrift
from tests.conftest import ROOT

PLUGIN_FILES = sorted((ROOT / "plugins").glob("*.py"))
GUIDE = ROOT / "docs" / "plugins.md"
GUIDE_ALLOWED_MODULES = {"kubectl_gitdrift"}


def _package_imports(tree: ast.AST) -> list[tuple[str, list[str]]]:
    """(module, names) of every import of the package in `tree`, at any depth."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kubectl_gitdrift"):
            found.append((node.module or "", [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.startswith("kubectl_gitdrift")]
    return found


def _guide_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.DOTALL)


def test_the_repository_has_plugins_and_the_guide_has_examples() -> None:
    assert len(PLUGIN_FILES) >= 8  # four plugins and their tests
    assert len(_guide_blocks()) >= 5


@pytest.mark.parametrize("path", PLUGIN_FILES, ids=lambda p: p.name)
def test_team_plugins_import_only_the_public_api(path) -> None:  # type: ignore[no-untyped-def]
    imports = _package_imports(ast.parse(path.read_text(), filename=str(path)))
    assert imports, f"{path.name} does not use kubectl_gitdrift"
    for module, names in imports:
        assert module == "kubectl_gitdrift", f"{path.name} imports {module}"
        assert set(names) <= set(kubectl_gitdrift.__all__), (path.name, names)


def test_the_plugin_guide_imports_only_the_public_api() -> None:
    for block in _guide_blocks():
        for module, names in _package_imports(ast.parse(block)):
            assert module in GUIDE_ALLOWED_MODULES, module
            assert set(names) <= set(kubectl_gitdrift.__all__), names


@pytest.mark.parametrize("name", kubectl_gitdrift.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(kubectl_gitdrift, name) is not None
    assert name in dir(kubectl_gitdrift)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'diff'"):
        kubectl_gitdrift.diff  # noqa: B018


def test_importing_the_package_loads_neither_pluggy_nor_the_model() -> None:
    code = (
        "import sys, kubectl_gitdrift; print(sorted(m for m in sys.modules"
        " if 'pluggy' in m or m.startswith('kubectl_gitdrift')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert out.strip() == "['kubectl_gitdrift']"


def test_apply_ignore_rules_removes_what_the_rules_name_from_a_copy() -> None:
    from kubectl_gitdrift import IgnoreRule, apply_ignore_rules

    body = {"kind": "Deployment", "spec": {"replicas": 6, "paused": False}}
    rule = IgnoreRule(group="apps", kind="Deployment", json_pointers=("/spec/replicas",))
    assert apply_ignore_rules(body, [rule]) == {"kind": "Deployment", "spec": {"paused": False}}
    assert body["spec"]["replicas"] == 6
