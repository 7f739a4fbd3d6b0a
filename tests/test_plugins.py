"""Plugin loading and the failure policy: a fresh manager per test, inline @hookimpl plugins,
team plugins by path and by module, an installed distribution by entry point, and the CLI's
`plugins` and `rules` listings. A plugin that fails makes the run exit 4 with one line on stderr
and nothing on stdout."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pluggy
import pytest

from kubectl_gitdrift import hookcalls, model, plugins
from kubectl_gitdrift.errors import ExitCode, PluginError
from kubectl_gitdrift.hookspecs import hookimpl
from kubectl_gitdrift.settings import AUTOLOAD_ENV, Settings
from tests.conftest import ROOT, TESTDATA

TEAM_PLUGINS = ROOT / "plugins"
HPA = TESTDATA / "scenarios" / "team-plugin-hpa-replicas"
OWNER_LABEL = str(TEAM_PLUGINS / "require_owner_label.py")


def _write(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("from kubectl_gitdrift import hookimpl\n\n" + textwrap.dedent(body))
    return str(path)


# --------------------------------------------------------------------------- the manager


def test_fresh_manager_has_only_the_builtins(pm: plugins.PluginManager) -> None:
    assert sorted(pm.sources) == [
        "builtin/normalizers",
        "builtin/renderers",
        "builtin/rules",
        "builtin/unreadable",
    ]
    assert set(pm.sources.values()) == {"builtin"}


def test_later_plugin_overrides_attribution(pm: plugins.PluginManager) -> None:
    """pluggy is LIFO: a team plugin registered after the built-ins is asked first."""
    owner = model.Owner("payments-operator", "Update")

    class Team:
        @hookimpl
        def gitdrift_attribute(self, change: model.Change) -> model.Owner | None:
            return owner if change.path == ("spec", "replicas") else None

    pm.register(Team(), name="team")
    live = {"metadata": {"managedFields": []}}
    replicas = model.Change(model.Op.CHANGE, ("spec", "replicas"), 2, 5)
    image = model.Change(model.Op.CHANGE, ("spec", "image"), "a", "b")
    assert hookcalls.first_result(pm, "gitdrift_attribute", change=replicas, live=live) == (
        "team",
        owner,
    )
    # None falls through to the built-in, which finds no managedFields owner here
    assert hookcalls.first_result(pm, "gitdrift_attribute", change=image, live=live) == ("", None)


def test_check_pending_rejects_a_misspelled_hook(pm: plugins.PluginManager) -> None:
    class Typo:
        @hookimpl
        def gitdrift_normalise(self, key: model.ObjectKey) -> None: ...

    pm.register(Typo(), name="typo")
    with pytest.raises(pluggy.PluginValidationError, match="gitdrift_normalise"):
        pm.check_pending()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "@hookimpl\ndef gitdrift_normalise(key, body, side):\n    pass\n",
            (
                "plugin 'typo' ({path}) implements unknown hook 'gitdrift_normalise' "
                "(did you mean gitdrift_normalize?)"
            ),
        ),
        (
            "def gitdrift_ignore_rules(app, live):\n    return []\n",
            "plugin 'typo' ({path}): gitdrift_ignore_rules is not decorated with @hookimpl",
        ),
        (
            "@hookimpl\ndef gitdrift_attribute(change, owner):\n    return None\n",
            "plugin 'typo' ({path}): Plugin 'typo' for hook 'gitdrift_attribute': Argument(s) "
            + "{'owner'} are declared in the hookimpl but can not be found in the hookspec",
        ),
        (
            "@hookimpl(wrapper=True)\ndef gitdrift_normalize(key, body, side):\n"
            + "    return (yield)\n",
            "plugin 'typo' ({path}): gitdrift_normalize is a hook wrapper",
        ),
        ("import kubectl_gitdrift.nope\n", "plugin 'typo' ({path}) failed to import: "),
    ],
    ids=["misspelled", "undecorated", "bad-argument", "wrapper", "import-error"],
)
def test_bad_plugins_fail_to_load(tmp_path: Path, body: str, message: str) -> None:
    path = _write(tmp_path, "typo.py", body)
    with pytest.raises(PluginError) as info:
        plugins.make_plugin_manager(paths=[path], entry_points=False)
    assert info.value.message.startswith(message.replace("{path}", path))
    assert "\n" not in info.value.message
    assert info.value.exit_code is ExitCode.PLUGIN_ERROR


def test_load_by_path_and_by_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(
        tmp_path,
        "team_rules.py",
        """
        __version__ = "2.0"

        @hookimpl
        def gitdrift_register_rules(register):
            register("team_rules/noop", lambda ctx: [], doc="Does nothing.")
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    pm = plugins.make_plugin_manager(paths=[OWNER_LABEL, "team_rules"], entry_points=False)
    assert pm.sources["require_owner_label"] == OWNER_LABEL
    assert pm.sources["team_rules"] == "team_rules"
    rules = {r.id: r.plugin for r in hookcalls.collect_rules(pm)}
    assert rules["require_owner_label/owner-label"] == "require_owner_label"
    assert rules["team_rules/noop"] == "team_rules"
    infos = {i.name: i for i in plugins.describe(pm)}
    assert infos["team_rules"].version == "2.0"
    assert infos["require_owner_label"].hooks == ("gitdrift_register_rules",)


def test_missing_path_and_module(tmp_path: Path) -> None:
    with pytest.raises(PluginError, match=r"--plugin .*nothere\.py: no such file"):
        plugins.make_plugin_manager(paths=[str(tmp_path / "nothere.py")], entry_points=False)
    with pytest.raises(PluginError, match=r"plugin 'no_such_mod' \(--plugin no_such_mod\) failed"):
        plugins.make_plugin_manager(paths=["no_such_mod"], entry_points=False)


def test_loaded_twice() -> None:
    with pytest.raises(PluginError, match=r"'require_owner_label' .* is loaded twice"):
        plugins.make_plugin_manager(paths=[OWNER_LABEL, OWNER_LABEL], entry_points=False)


def test_disable_plugin_blocks_before_import(tmp_path: Path) -> None:
    broken = _write(tmp_path, "broken.py", "raise RuntimeError('never imported')\n")
    pm = plugins.make_plugin_manager(
        paths=[broken, OWNER_LABEL],
        entry_points=False,
        blocked=["broken", "builtin/rules", "builtin/unreadable"],
    )
    assert "broken" not in pm.sources
    assert [r.id for r in hookcalls.collect_rules(pm)] == ["require_owner_label/owner-label"]


@pytest.mark.parametrize(
    ("value", "disabled"), [("1", True), ("true", True), ("0", False), ("", False)]
)
def test_autoload_env(value: str, disabled: bool) -> None:
    assert Settings.from_environ({AUTOLOAD_ENV: value}).autoload_disabled() is disabled


def test_autoload_env_skips_entry_points(
    monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., Any]
) -> None:
    """The CLI reads the environment once (Settings) and tells make_plugin_manager."""

    def boom(**_: Any) -> None:
        raise AssertionError("entry points were read")

    monkeypatch.setenv(AUTOLOAD_ENV, "1")
    monkeypatch.setattr(plugins.importlib.metadata, "entry_points", boom)
    for command in ("plugins", "rules"):
        assert run_cli([command]).exit_code == ExitCode.OK
    rows = json.loads(run_cli(["plugins", "--all", "-o", "json"]).stdout)
    assert sorted(r["name"] for r in rows) == sorted(plugins.BUILTIN_NAMES.values())


# --------------------------------------------------------------------------- failure policy, CLI


@pytest.fixture
def compare(run_cli: Callable[..., Any], build_repo: Callable[[Path], Path]) -> Callable[..., Any]:
    """`kubectl gitdrift checkout` on the team-plugin-hpa-replicas scenario, offline."""
    repo = build_repo(HPA / "repo-src")

    def run(*extra: str) -> Any:
        args = ["checkout", "--snapshot", str(HPA / "snapshot.yaml"), "--repo-root", str(repo)]
        return run_cli([*args, "--no-entry-points", *extra])

    return run


RAISES = {
    "import": ("raise ImportError('no module named payments_sdk')\n", "failed to import"),
    "ignore_rules": (
        "@hookimpl\ndef gitdrift_ignore_rules(app, live):\n    yield from ()\n"
        + "    raise KeyError('spec')\n",
        "plugin 'team' failed in gitdrift_ignore_rules: KeyError: 'spec'",
    ),
    "normalize": (
        "@hookimpl\ndef gitdrift_normalize(key, body, side):\n    body['spec']['x']['y'] = 1\n",
        "plugin 'team' failed in gitdrift_normalize: KeyError: 'x'",
    ),
    "attribute": (
        "@hookimpl\ndef gitdrift_attribute(change, live):\n    return 'someone'\n",
        "plugin 'team' failed in gitdrift_attribute: TypeError: must return an Owner or None",
    ),
    "rule": (
        "@hookimpl\ndef gitdrift_register_rules(register):\n"
        + "    register('team/boom', lambda ctx: [1 / 0])\n",
        "rule 'team/boom' of plugin 'team' failed: ZeroDivisionError: division by zero",
    ),
    "register": (
        "@hookimpl\ndef gitdrift_register_rules(register):\n    register('no-slash', print)\n",
        "plugin 'team' failed in gitdrift_register_rules: ValueError: rule id 'no-slash'",
    ),
    "renderer": (
        "@hookimpl\ndef gitdrift_register_renderers(register):\n"
        + "    register('team', lambda report: 'partial\\n' + report.nope)\n",
        "output format 'team' of plugin 'team' failed: AttributeError:",
    ),
    "multiline": (
        "@hookimpl\ndef gitdrift_ignore_rules(app, live):\n"
        + "    raise ValueError('first line\\nsecond line')\n",
        "plugin 'team' failed in gitdrift_ignore_rules: ValueError: first line",
    ),
}


@pytest.mark.parametrize("case", sorted(RAISES))
def test_failing_plugin_exits_4_with_one_line(
    compare: Callable[..., Any], tmp_path: Path, case: str
) -> None:
    body, message = RAISES[case]
    result = compare(
        "--plugin",
        _write(tmp_path, "team.py", body),
        "-o",
        "team" if case == "renderer" else "json",
    )
    assert result.exit_code == ExitCode.PLUGIN_ERROR
    assert result.stdout == ""
    first, *rest = result.stderr.splitlines()
    assert first.startswith("error: "), result.stderr
    assert message in first, result.stderr
    assert "team" in first
    assert len(rest) <= 1
    assert all(line.startswith("  hint: ") for line in rest)
    assert "Traceback" not in result.stderr


def test_disable_plugin_via_cli(compare: Callable[..., Any], tmp_path: Path) -> None:
    body, _ = RAISES["ignore_rules"]
    path = _write(tmp_path, "team.py", body)
    assert compare("--plugin", path).exit_code == ExitCode.PLUGIN_ERROR
    result = compare("--plugin", path, "--disable-plugin", "team")
    assert (result.exit_code, result.stderr) == (ExitCode.DRIFT, "")


def test_disable_rule(compare: Callable[..., Any]) -> None:
    args = ("--plugin", OWNER_LABEL, "-o", "json")
    codes = {f["code"] for f in json.loads(compare(*args).stdout)["applications"][0]["findings"]}
    assert "owner-label-missing" in codes
    result = compare(*args, "--disable-rule", "require_owner_label/owner-label")
    codes = {f["code"] for f in json.loads(result.stdout)["applications"][0]["findings"]}
    assert "owner-label-missing" not in codes


def test_plugin_output_format(compare: Callable[..., Any], tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "summary.py",
        """
        @hookimpl
        def gitdrift_register_renderers(register):
            register("summary", lambda r: f"{r.applications[0].sync_status.value}\\n")
        """,
    )
    result = compare("--plugin", path, "-o", "summary")
    assert (result.exit_code, result.stdout, result.stderr) == (ExitCode.DRIFT, "OutOfSync\n", "")


REPLACES = """
@hookimpl
def gitdrift_register_renderers(register):
    for fmt in ("text", "json", "yaml", "diff"):
        register(fmt, lambda r, fmt=fmt: f"team {fmt}: {len(r.applications)} app(s)\\n")
"""


@pytest.mark.parametrize("fmt", ["text", "json", "yaml", "diff"])
def test_a_plugin_that_replaces_a_builtin_format_writes_the_report(
    run_cli: Callable[..., Any],
    build_repo: Callable[[Path], Path],
    compare: Callable[..., Any],
    tmp_path: Path,
    fmt: str,
) -> None:
    """The hook says a later plugin may replace any built-in format: `-o text` (the default)
    included, for one app and for --all, where the built-in table and the per-worker JSON
    would otherwise be written."""
    path = _write(tmp_path, "team.py", REPLACES)
    one = compare("--plugin", path, "-o", fmt)
    assert (one.exit_code, one.stdout, one.stderr) == (
        ExitCode.DRIFT,
        f"team {fmt}: 1 app(s)\n",
        "",
    )
    if fmt == "text":
        assert compare("--plugin", path).stdout == "team text: 1 app(s)\n"
    repo = build_repo(HPA / "repo-src")
    every = run_cli(
        ["--all", "--snapshot", str(HPA / "snapshot.yaml"), "--repo-root", str(repo),
         "--no-entry-points", "--plugin", path, "-o", fmt]
    )  # fmt: skip
    assert every.stdout.startswith(f"team {fmt}: "), every.stdout
    assert every.exit_code in (ExitCode.OK, ExitCode.DRIFT), every.stderr
    builtin = compare("-o", fmt)
    assert not builtin.stdout.startswith("team"), "without the plugin the built-in format writes"


# --------------------------------------------------------------------------- `plugins` and `rules`


def test_plugins_lists_team_plugins_only(run_cli: Callable[..., Any]) -> None:
    result = run_cli(["plugins", "--no-entry-points", "--plugin", OWNER_LABEL, "-o", "json"])
    assert (result.exit_code, result.stderr) == (0, "")
    assert json.loads(result.stdout) == [
        {
            "hooks": ["gitdrift_register_rules"],
            "name": "require_owner_label",
            "source": OWNER_LABEL,
            "version": "1.0.0",
        }
    ]
    text = run_cli(["plugins", "--no-entry-points", "--plugin", OWNER_LABEL]).stdout.splitlines()
    assert text[0].split() == ["NAME", "VERSION", "SOURCE", "HOOKS"]
    assert text[2].split() == [
        "require_owner_label",
        "1.0.0",
        OWNER_LABEL,
        "gitdrift_register_rules",
    ]


def test_describe_all_includes_builtins() -> None:
    pm = plugins.make_plugin_manager(paths=[OWNER_LABEL], entry_points=False)
    infos = plugins.describe(pm, include_builtins=True)
    assert [(i.name, i.source) for i in infos] == [
        ("builtin/normalizers", "builtin"),
        ("builtin/renderers", "builtin"),
        ("builtin/rules", "builtin"),
        ("builtin/unreadable", "builtin"),
        ("require_owner_label", OWNER_LABEL),
    ]
    assert infos[0].hooks == ("gitdrift_attribute",)


def test_plugins_all_flag(run_cli: Callable[..., Any]) -> None:
    result = run_cli(["plugins", "--all", "--no-entry-points", "-o", "json"])
    assert result.exit_code == ExitCode.OK, result.stderr
    names = [row["name"] for row in json.loads(result.stdout)]
    assert names == [
        "builtin/normalizers",
        "builtin/renderers",
        "builtin/rules",
        "builtin/unreadable",
    ]


def test_rules_lists_every_rule_with_plugin(run_cli: Callable[..., Any]) -> None:
    paths = [str(TEAM_PLUGINS / name) for name in ("hpa_replicas.py", "require_owner_label.py")]
    args = ["rules", "--no-entry-points", "--plugin", paths[0], "--plugin", paths[1]]
    rows = json.loads(run_cli([*args, "-o", "json"]).stdout)
    by_id = {row["id"]: row for row in rows}
    assert [row["id"] for row in rows] == sorted(by_id)
    assert by_id["hpa_replicas/field-fight"]["plugin"] == "hpa_replicas"
    assert by_id["hpa_replicas/field-fight"]["codes"] == ["field-fight"]
    assert by_id["require_owner_label/owner-label"]["severity"] == "warning"
    assert by_id["builtin/manual-drift"]["plugin"] == "builtin/rules"
    assert all(row["doc"] and row["doc"] != "Undocumented" for row in rows)
    text = run_cli(args).stdout
    assert "hpa_replicas/field-fight" in text
    assert text.split()[0] == "RULE"


# --------------------------------------------------------------------------- installed distribution


@pytest.fixture(scope="module")
def example_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """testdata/example-plugin installed by pip into its own directory (real dist-info)."""
    target = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
         str(TESTDATA / "example-plugin")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.fail("pip could not install testdata/example-plugin:\n" + done.stderr[-2000:])
    return target


@pytest.mark.slow
def test_entry_point_plugin(
    example_site: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., Any]
) -> None:
    monkeypatch.syspath_prepend(str(example_site))
    monkeypatch.delenv(AUTOLOAD_ENV, raising=False)
    rows = json.loads(run_cli(["plugins", "-o", "json"]).stdout)
    assert {
        "hooks": ["gitdrift_register_rules"],
        "name": "example",
        "source": "entry point gitdrift-example",
        "version": "0.3.1",
    } in rows
    rules = {r["id"]: r for r in json.loads(run_cli(["rules", "-o", "json"]).stdout)}
    assert rules["example/latest-tag"]["plugin"] == "example"
    # switched off three ways
    assert "example" not in run_cli(["plugins", "--no-entry-points"]).stdout
    assert "example" not in run_cli(["plugins", "--disable-plugin", "example"]).stdout
    monkeypatch.setenv(AUTOLOAD_ENV, "1")
    assert "example" not in run_cli(["plugins"]).stdout
    sys.modules.pop("gitdrift_example", None)  # imported from a temporary directory


@pytest.mark.slow
def test_entry_point_that_fails_to_load(
    example_site: Path, monkeypatch: pytest.MonkeyPatch, run_cli: Callable[..., Any]
) -> None:
    monkeypatch.syspath_prepend(str(example_site))
    monkeypatch.delenv(AUTOLOAD_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "gitdrift_example", None)  # import raises ImportError
    result = run_cli(["rules"])
    assert (result.exit_code, result.stdout) == (ExitCode.PLUGIN_ERROR, "")
    assert result.stderr.splitlines()[0].startswith(
        "error: plugin 'example' (entry point from gitdrift-example) failed to load: "
        "ModuleNotFoundError: import of gitdrift_example halted"
    )
    assert "--disable-plugin example" in result.stderr
