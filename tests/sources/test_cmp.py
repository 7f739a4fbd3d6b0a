"""Config management plugins (sources/cmp.py): the plugin's own commands run on a copy of the
repository, with the environment Argo CD's repo-server gives its sidecar. Real processes (sh,
kubectl kustomize), no mocks; bad plugins are one-line errors naming the plugin, exit 3."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift.errors import ExitCode, SourceError, UsageError
from kubectl_gitdrift.model import Application, AppSource, SyncPolicy
from kubectl_gitdrift.settings import KUSTOMIZE_TIMEOUT_ENV
from kubectl_gitdrift.sources import cmp, cmp_defs, process
from kubectl_gitdrift.sources import config as render_config
from kubectl_gitdrift.sources.render import render
from tests.conftest import TESTDATA, Result
from tests.support.apiserver import ServerFactory, kube_apiserver  # noqa: F401 - the fixture

BUILD_ENV = {"ARGOCD_APP_NAME": "payments", "ARGOCD_APP_NAMESPACE": "payments"}
CONFIGMAP = (
    "printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: %s\\ndata:\\n  v: \"%s\"\\n' "
)


def plugin_doc(
    name: str = "envsubst",
    *,
    version: str = "",
    generate: str = CONFIGMAP + "rendered ok",
    init: str = "",
    discover: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"generate": {"command": ["sh", "-c"], "args": [generate]}}
    if version:
        spec["version"] = version
    if init:
        spec["init"] = {"command": ["sh", "-c", init]}
    if discover is not None:
        spec["discover"] = discover
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ConfigManagementPlugin",
        "metadata": {"name": name},
        "spec": spec,
    }


def cmp_configmap(*docs: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "argocd-cmp-cm", "namespace": "argocd"},
        "data": {f"plugin-{i}.yaml": yaml.safe_dump(d) for i, d in enumerate(docs)},
    }


def plugins(*docs: dict[str, Any]) -> list[cmp_defs.Plugin]:
    return cmp_defs.from_configmap(cmp_configmap(*docs))


def write(root: Path, rel: str, text: str = "") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def generate(
    plugin: cmp_defs.Plugin,
    tree: Path,
    options: dict[str, Any] | None = None,
    *,
    allow: bool = True,
) -> list[Any]:
    return cmp.generate(
        plugin,
        tree=tree,
        app_path="app",
        options=options or {},
        build_env=BUILD_ENV,
        workdir=tree.parent / "work",
        allow=allow,
    )


# --------------------------------------------------------------------------- environment


def test_parameters_environment_as_argo_cd() -> None:
    env = cmp.parameter_env(
        [
            {"name": "replicas", "string": "3"},
            {"name": "helm-values", "map": {"image.tag": "v1", "a": "<&>"}},
            {"name": "regions", "array": ["eu", "us"]},
            {"name": "empty-array", "array": []},
            {"name": "null-map", "map": None},
            {"string": "nameless"},
        ]
    )
    # ApplicationSourcePluginParameter.MarshalJSON marshals a map[string]any: keys sorted
    # (array, map, name, string), name always, a present null map is {}; HTML escaped
    assert env["ARGOCD_APP_PARAMETERS"] == (
        '[{"name":"replicas","string":"3"},'
        '{"map":{"a":"\\u003c\\u0026\\u003e","image.tag":"v1"},"name":"helm-values"},'
        '{"array":["eu","us"],"name":"regions"},{"array":[],"name":"empty-array"},'
        '{"map":{},"name":"null-map"},{"name":"","string":"nameless"}]'
    )
    assert json.loads(env["ARGOCD_APP_PARAMETERS"])[1]["map"]["a"] == "<&>"
    assert {k: v for k, v in env.items() if k.startswith("PARAM_")} == {
        "PARAM_REPLICAS": "3",
        "PARAM_HELM_VALUES_IMAGE_TAG": "v1",
        "PARAM_HELM_VALUES_A": "<&>",
        "PARAM_REGIONS_0": "eu",
        "PARAM_REGIONS_1": "us",
        "PARAM_": "nameless",
    }


def test_plugin_env_substitutes_the_build_env() -> None:
    env = cmp.plugin_env(
        {"env": [{"name": "CLUSTER", "value": "prod-$ARGOCD_APP_NAME"}, {"name": "X"}]},
        BUILD_ENV,
        kube_version="1.31.0",
        api_versions=["v1", "apps/v1"],
    )
    assert env["ARGOCD_ENV_CLUSTER"] == "prod-payments"
    assert env["ARGOCD_ENV_X"] == ""
    assert env["KUBE_VERSION"] == "1.31.0"
    assert env["KUBE_API_VERSIONS"] == "v1,apps/v1"
    assert env["ARGOCD_APP_PARAMETERS"] == "[]"
    assert env["ARGOCD_APP_NAME"] == "payments"


# --------------------------------------------------------------------------- definitions


def test_definitions_are_validated(tmp_path: Path) -> None:
    bad = plugin_doc()
    del bad["spec"]["generate"]
    with pytest.raises(SourceError, match=r"envsubst: spec.generate command should be non-empty"):
        plugins(bad)
    nameless = plugin_doc()
    nameless["metadata"] = {}
    with pytest.raises(SourceError, match=r"metadata.name should be non-empty"):
        plugins(nameless)
    assert plugins() == []  # a ConfigMap with no plugin in it
    scripts = cmp_configmap(plugin_doc())
    scripts["data"]["generate.sh"] = "#!/bin/sh\nset -e\nhelm template . | avp generate -\n"
    scripts["data"]["notes.txt"] = "key: [unclosed"
    assert [p.name for p in cmp_defs.from_configmap(scripts)] == ["envsubst"]
    file = write(tmp_path, "plugin.yaml", yaml.safe_dump(plugin_doc(version="v2")))
    (plugin,) = cmp_defs.from_file(file)
    assert plugin.trusted
    assert plugin.full_name == "envsubst-v2"
    with pytest.raises(UsageError, match=r"--cmp .*missing.yaml: No such file"):
        cmp_defs.from_file(tmp_path / "missing.yaml")
    write(tmp_path, "empty.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    with pytest.raises(UsageError, match=r"no ConfigManagementPlugin in the file"):
        cmp_defs.from_file(tmp_path / "empty.yaml")


# --------------------------------------------------------------------------- selection


def test_select_by_name_and_discovery(tmp_path: Path) -> None:
    app = tmp_path / "app"
    write(app, "kustomization.yaml")
    write(app, "deep/dir/values.sops.yaml")
    known = plugins(
        plugin_doc("by-file", discover={"fileName": "kustomization.y*ml"}),
        plugin_doc("a-by-glob", discover={"find": {"glob": "**/*.sops.yaml"}}),
        plugin_doc("no-discovery", version="v1"),
    )
    assert cmp.select(known, {"name": "no-discovery-v1"}, app, {}, True, "app").name == (
        "no-discovery"
    )
    # without a name: the plugins with discovery rules, in socket-name order
    assert cmp.select(known, {}, app, {}, True, "app").name == "a-by-glob"
    assert cmp.discover(known[:1], app, {}, False) is not None  # fileName: no command runs
    with pytest.raises(SourceError, match=r"plugin no-discovery is not defined \(known: "):
        cmp.select(known, {"name": "no-discovery"}, app, {}, True, "app")
    (tmp_path / "app/kustomization.yaml").unlink()
    with pytest.raises(SourceError, match=r"plugin by-file does not support this source"):
        cmp.select(known, {"name": "by-file"}, app, {}, True, "app")
    (tmp_path / "app/deep/dir/values.sops.yaml").unlink()
    with pytest.raises(SourceError, match=r"no config management plugin supports this source"):
        cmp.select(known, {}, app, {}, True, "app")
    with pytest.raises(SourceError, match=r"no plugin definition is known") as err:
        cmp.select([], {"name": "x"}, app, {}, True, "app")
    assert "--cmp FILE" in (err.value.hint or "")


def test_discovery_by_command_runs_only_when_allowed(tmp_path: Path) -> None:
    app = tmp_path / "app"
    write(app, "Chart.yaml", "name: x\n")
    (found,) = plugins(
        plugin_doc("finder", discover={"find": {"command": ["sh", "-c", "ls Chart.yaml"]}})
    )
    assert cmp.discover([found], app, {}, True) is found
    with pytest.raises(SourceError, match=r"finder .* discovers sources by running `sh -c"):
        cmp.discover([found], app, {}, False)
    (quiet,) = plugins(plugin_doc("quiet", discover={"find": {"command": ["true"]}}))
    assert cmp.discover([quiet], app, {}, True) is None  # no output: no match
    (newline,) = plugins(plugin_doc("newline", discover={"find": {"command": ["echo"]}}))
    assert cmp.discover([newline], app, {}, True) is None  # runCommand trims one "\n"
    (space,) = plugins(plugin_doc("space", discover={"find": {"command": ["echo", " "]}}))
    assert cmp.discover([space], app, {}, True) is space
    # a failing command is no match (cmpSupports logs it); discovery goes on to the next plugin
    (failing, after) = plugins(
        plugin_doc("a-failing", discover={"find": {"command": ["sh", "-c", "echo x; exit 4"]}}),
        plugin_doc("b-after", discover={"fileName": "Chart.yaml"}),
    )
    assert cmp.discover([failing, after], app, {}, True) is after
    with pytest.raises(SourceError, match=r"a-failing does not support this source"):
        cmp.select([failing, after], {"name": "a-failing"}, app, {}, True, "app")


def test_discovery_tries_plugins_in_socket_order(tmp_path: Path) -> None:
    app = tmp_path / "app"
    write(app, "Chart.yaml", "name: x\n")
    rule = {"fileName": "Chart.yaml"}
    # os.ReadDir lists `helm-v1.sock` before `helm.sock` ("-" sorts before ".")
    found = plugins(
        plugin_doc("helm", discover=rule), plugin_doc("helm", version="v1", discover=rule)
    )
    assert [p.full_name for p in found] == ["helm", "helm-v1"]
    assert cmp.discover(found, app, {}, True) is found[1]


def test_discovery_file_name_is_a_plain_glob_and_find_glob_recurses(tmp_path: Path) -> None:
    app = tmp_path / "app"
    write(app, "a/b/values.enc.yaml")
    write(app, ".sops.yaml")

    def found(discover: dict[str, Any]) -> bool:
        (plugin,) = plugins(plugin_doc(discover=discover))
        return cmp.discover([plugin], app, {}, True) is plugin

    # fileName is filepath.Glob: `**` is one `*`, and `*` matches dotfiles
    assert not found({"fileName": "**/*.enc.yaml"})
    assert found({"fileName": "*/*/*.enc.yaml"})
    assert found({"fileName": "*.yaml"})
    # find.glob is zglob: `**` crosses directories
    assert found({"find": {"glob": "**/*.enc.yaml"}})


def test_discovery_commands_run_on_a_copy_with_the_plugin_env(tmp_path: Path) -> None:
    tree = tmp_path / "repo"
    write(tree, "app/x.txt")
    work = tmp_path / "work"
    find = 'touch written; test -n "$PARAM_MODE" && echo "$PWD"'
    (plugin,) = plugins(plugin_doc("finder", discover={"find": {"command": ["sh", "-c", find]}}))
    options = {"name": "finder", "parameters": [{"name": "mode", "string": "x"}]}
    env = cmp.plugin_env(options, BUILD_ENV)
    assert cmp.select([plugin], options, tree / "app", env, True, "app", tree=tree, workdir=work)
    assert not (tree / "app/written").exists(), "discovery wrote into the repository"
    assert list(work.iterdir()) == [], "the discovery copy is left behind"
    # without the parameters (the untyped discovery's env) the command prints nothing
    assert cmp.discover([plugin], tree / "app", BUILD_ENV, True, tree=tree, workdir=work) is None


@pytest.mark.parametrize("target", ["/etc", "../../outside", "sub/../../../outside"])
def test_out_of_bounds_symlinks_are_refused_before_a_plugin_runs(
    tmp_path: Path, target: str
) -> None:
    tree = tmp_path / "repo"
    marker = tmp_path / "ran"
    write(tree, "app/x.txt")
    (tree / "app/sub").mkdir()
    (tree / "app/link").symlink_to(target)
    (plugin,) = plugins(plugin_doc(generate=f"touch {marker}"))
    with pytest.raises(
        SourceError, match=r"^repository contains out-of-bounds symlinks\. file: app/link$"
    ):
        generate(plugin, tree)
    assert not marker.exists()
    (finder,) = plugins(plugin_doc("f", discover={"find": {"command": ["touch", str(marker)]}}))
    with pytest.raises(SourceError, match=r"out-of-bounds symlinks"):
        cmp.discover([finder], tree / "app", {}, True, tree=tree, workdir=tmp_path / "work")
    assert not marker.exists()


def test_symlinks_inside_the_repository_are_kept(tmp_path: Path) -> None:
    tree = tmp_path / "repo"
    write(tree, "shared/values.txt", "shared")
    write(tree, "app/x.txt")
    (tree / "app/values.txt").symlink_to("../shared/values.txt")
    (plugin,) = plugins(plugin_doc(generate=CONFIGMAP + 'linked "$(cat values.txt)"'))
    (manifest,) = generate(plugin, tree)
    assert manifest.body["data"] == {"v": "shared"}


# --------------------------------------------------------------------------- running


def test_generate_runs_init_then_generate_on_a_copy(tmp_path: Path) -> None:
    tree = tmp_path / "repo"
    write(tree, "app/input.txt", "from-git")
    (plugin,) = plugins(
        plugin_doc(
            init="echo from-init > init.txt",
            generate=CONFIGMAP + 'rendered "$ARGOCD_ENV_CLUSTER-$PARAM_REPLICAS-'
            '$(cat init.txt)-$(cat input.txt)-$(basename $PWD)"',
        )
    )
    options = {
        "env": [{"name": "CLUSTER", "value": "prod-$ARGOCD_APP_NAME"}],
        "parameters": [{"name": "replicas", "string": "3"}],
    }
    (manifest,) = generate(plugin, tree, options)
    assert manifest.body["metadata"]["name"] == "rendered"
    assert manifest.body["data"] == {"v": "prod-payments-3-from-init-from-git-app"}
    assert not (tree / "app/init.txt").exists(), "the plugin wrote into the tree"
    assert list((tmp_path / "work").iterdir()) == [], "the scratch copy is left behind"


def test_file_modes_are_the_sidecars_unless_preserve_file_mode(tmp_path: Path) -> None:
    # files.Untgz: 0644 files and 0755 directories, unless spec.preserveFileMode
    tree = tmp_path / "repo"
    script = write(tree, "app/render.sh", "#!/bin/sh\n" + CONFIGMAP + "by-script ok\n")
    script.chmod(0o755)
    (plain,) = plugins(plugin_doc(generate="./render.sh"))
    with pytest.raises(SourceError, match=r"generate `sh -c ./render.sh` failed \(exit 126\)"):
        generate(plain, tree)
    doc = plugin_doc(generate="./render.sh")
    doc["spec"]["preserveFileMode"] = True
    (preserving,) = plugins(doc)
    (manifest,) = generate(preserving, tree)
    assert manifest.body["metadata"]["name"] == "by-script"
    assert script.stat().st_mode & 0o777 == 0o755, "the repository's own file changed"


def test_a_plugin_from_cluster_state_is_not_run_unless_allowed(tmp_path: Path) -> None:
    tree = tmp_path / "repo"
    marker = tmp_path / "ran"
    write(tree, "app/x.txt")
    (plugin,) = plugins(plugin_doc(generate=f"touch {marker}"))
    with pytest.raises(SourceError) as err:
        generate(plugin, tree, allow=False)
    assert "config management plugin envsubst (from argocd-cmp-cm (argocd) plugin-0.yaml)" in (
        err.value.message
    )
    assert "not allowed" in err.value.message
    assert "--allow-plugins" in (err.value.hint or "")
    assert not marker.exists()


def test_a_failing_plugin_is_one_line_naming_it(tmp_path: Path) -> None:
    tree = tmp_path / "repo"
    write(tree, "app/x.txt")
    (plugin,) = plugins(
        plugin_doc(
            version="v1", generate="echo working >&2; echo 'Error: secret not found' >&2; exit 3"
        )
    )
    with pytest.raises(SourceError) as err:
        generate(plugin, tree)
    assert err.value.message == (
        "source path app: config management plugin envsubst-v1 generate `sh -c 'echo working >&2; "
        "echo '\"'\"'Error: secret not found'\"'\"' >&2; exit 3'` failed (exit 3): Error: secret "
        "not found"
    )
    (init_fails,) = plugins(plugin_doc(init="exit 9"))
    with pytest.raises(
        SourceError,
        match=r"plugin envsubst init `sh -c 'exit 9'` failed \(exit 9\): no error output",
    ):
        generate(init_fails, tree)
    (garbage,) = plugins(plugin_doc(generate="echo '- just a list'"))
    with pytest.raises(SourceError, match=r"^config management plugin envsubst output: document 1"):
        generate(garbage, tree)


def test_a_hanging_plugin_times_out_and_its_processes_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "repo"
    write(tree, "app/x.txt")
    pidfile = tmp_path / "pid"
    monkeypatch.setenv(KUSTOMIZE_TIMEOUT_ENV, "1")
    (plugin,) = plugins(plugin_doc(generate=f"sleep 300 & echo $! > {pidfile}; wait"))
    with pytest.raises(SourceError, match=r"plugin envsubst generate timed out after 1s") as err:
        generate(plugin, tree)
    assert KUSTOMIZE_TIMEOUT_ENV in (err.value.hint or "")
    pid = int(pidfile.read_text())
    # the sleep was in the plugin's process group: it is gone (or a zombie about to be reaped);
    # on a loaded machine the kill may take a moment to land, so wait a little for it
    deadline = time.monotonic() + 10
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split()[2]
        except FileNotFoundError:
            state = "gone"
        if state in ("gone", "Z") or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert state in ("gone", "Z"), state


def test_a_process_that_leaves_the_group_cannot_hang_the_run(tmp_path: Path) -> None:
    tree = tmp_path / "repo"
    write(tree, "app/x.txt")
    pidfile = tmp_path / "pid"
    # the daemon leaves the process group (setsid) and keeps generate's stdout open
    daemon = f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 300' & sleep 0.2; "
    (plugin,) = plugins(plugin_doc(generate=daemon + CONFIGMAP + "rendered ok"))
    try:
        (manifest,) = generate(plugin, tree)
        assert manifest.body["data"] == {"v": "ok"}
    finally:
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), 9)


def test_a_command_that_ends_is_never_killed_for_it(tmp_path: Path) -> None:
    # its pipes close just before it exits: the exit status is its own, never SIGKILL's
    for _ in range(20):
        proc = process.run_bounded(
            ["echo", " "], cwd=tmp_path, env=os.environ, timeout=30, what="echo", limit=100
        )
        assert (proc.returncode, proc.stdout) == (0, b" \n")


def test_a_command_that_closes_its_output_and_stays_times_out(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"^sleeper timed out after 1s$"):
        process.run_bounded(
            ["sh", "-c", "exec >&- 2>&-; sleep 300"],
            cwd=tmp_path, env=os.environ, timeout=1, what="sleeper", limit=100,
        )  # fmt: skip


def test_output_past_the_limit_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = tmp_path / "repo"
    write(tree, "app/x.txt")
    monkeypatch.setattr(cmp, "OUTPUT_LIMIT", 4096)
    (plugin,) = plugins(plugin_doc(generate="yes 'apiVersion: v1'"))
    with pytest.raises(SourceError, match=r"generate: wrote more than 4096 bytes of output"):
        generate(plugin, tree)


# --------------------------------------------------------------------------- through render


def make_app(options: dict[str, Any] | None = None) -> Application:
    return Application(
        name="payments",
        namespace="argocd",
        project="default",
        sources=(
            AppSource(
                repo_url="https://git.example.com/payments.git",
                path="app",
                kind="plugin" if options is not None else "",
                options=options or {},
            ),
        ),
        dest_server="https://kubernetes.default.svc",
        dest_name="",
        dest_namespace="payments",
        sync_policy=SyncPolicy(),
        ignore_rules=(),
        sync_status="OutOfSync",
        revisions=(),
        history=(),
        operation=None,
    )


def git_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    for rel, text in files.items():
        write(repo, rel, text)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "A",
        "GIT_AUTHOR_EMAIL": "a@example.com",
        "GIT_COMMITTER_NAME": "A",
        "GIT_COMMITTER_EMAIL": "a@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "x"]):
        subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True)
    return repo


def test_an_untyped_source_is_claimed_by_discovery_first(tmp_path: Path) -> None:
    # a kustomization and a plugin that discovers it: Argo CD asks the plugins first
    kustomization = "resources: [cm.yaml]\n"
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-kustomize}\n"
    repo = git_repo(tmp_path, {"app/kustomization.yaml": kustomization, "app/cm.yaml": cm})
    doc = plugin_doc("wrapper", discover={"fileName": "kustomization.yaml"})
    config = render_config.of([cmp_configmap(doc)], allow_plugins=True)
    rendered = render(make_app(), repo, workdir=tmp_path / "w", config=config)
    assert [m.key.name for m in rendered.manifests] == ["rendered"]
    assert rendered.sources[0].kind == "plugin"
    # without plugin definitions it is a kustomization
    plain = render(make_app(), repo, workdir=tmp_path / "w2")
    assert [m.key.name for m in plain.manifests] == ["from-kustomize"]
    # discovery by fileName never runs a command: without --allow-plugins the match is an error
    config = render_config.of([cmp_configmap(doc)])
    with pytest.raises(SourceError, match=r"plugin wrapper .* not allowed"):
        render(make_app(), repo, workdir=tmp_path / "w3", config=config)


def test_cli_plugin_from_snapshot_needs_allow_plugins(
    tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    repo = git_repo(tmp_path, {"app/x.txt": "x"})
    app = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "payments", "namespace": "argocd"},
        "spec": {
            "project": "default",
            "destination": {"namespace": "payments", "server": "https://kubernetes.default.svc"},
            "source": {
                "repoURL": "https://git.example.com/payments.git",
                "path": "app",
                "targetRevision": "HEAD",
                "plugin": {"name": "envsubst"},
            },
        },
    }
    marker = tmp_path / "ran"
    doc = plugin_doc(generate=f"touch {marker}; " + CONFIGMAP + "x")
    snapshot = tmp_path / "snapshot.yaml"
    items = [app, cmp_configmap(doc)]
    snapshot.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    base = ["payments", "--snapshot", str(snapshot), "--repo-root", str(repo), "--no-entry-points"]
    refused = run_cli(base)
    assert refused.exit_code == ExitCode.ERROR
    lines = refused.stderr.splitlines()
    assert lines[0].startswith("error: source path app: config management plugin envsubst"), lines
    assert "not allowed" in lines[0]
    assert "--allow-plugins" in lines[1]
    assert not marker.exists()
    allowed = run_cli([*base, "--allow-plugins", "-o", "json"])
    assert allowed.exit_code == ExitCode.DRIFT, allowed.stderr
    assert marker.exists()
    # a plugin named on the command line is allowed by that
    marker.unlink()
    plugin_file = write(tmp_path, "plugin.yaml", yaml.safe_dump(doc))
    snapshot.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [app]}))
    named = run_cli([*base, "--cmp", str(plugin_file), "-o", "json"])
    assert named.exit_code == ExitCode.DRIFT, named.stderr
    assert marker.exists()
    failing = write(tmp_path, "failing.yaml", yaml.safe_dump(plugin_doc(generate="exit 7")))
    result = run_cli([*base, "--cmp", str(failing)])
    assert result.exit_code == ExitCode.ERROR
    assert result.stderr.startswith(
        "error: source path app: config management plugin envsubst generate `sh -c 'exit 7'` "
        "failed (exit 7): no error output\n"
    ), result.stderr


def test_cli_a_hanging_discovered_plugin_is_exit_3(
    tmp_path: Path, run_cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = git_repo(tmp_path, {"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\n"})
    app = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "payments", "namespace": "argocd"},
        "spec": {
            "project": "default",
            "destination": {"namespace": "payments", "server": "https://kubernetes.default.svc"},
            "source": {
                "repoURL": "https://git.example.com/payments.git",
                "path": "app",
                "targetRevision": "HEAD",
                "plugin": {},  # no name: the plugins' discovery picks one
            },
        },
    }
    snapshot = write(
        tmp_path,
        "snapshot.yaml",
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [app]}),
    )
    doc = plugin_doc("slow", version="v2", discover={"find": {"glob": "*.yaml"}})
    doc["spec"]["generate"] = {"command": ["sleep", "600"]}
    plugin_file = write(tmp_path, "plugin.yaml", yaml.safe_dump(doc))
    monkeypatch.setenv(KUSTOMIZE_TIMEOUT_ENV, "1")
    result = run_cli(["payments", "--snapshot", str(snapshot), "--repo-root", str(repo),
                      "--cmp", str(plugin_file), "--no-entry-points"])  # fmt: skip
    assert result.exit_code == ExitCode.ERROR
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0] == (
        "error: source path app: config management plugin slow-v2 generate timed out after 1s"
    )
    assert lines[1] == f"  hint: raise {KUSTOMIZE_TIMEOUT_ENV} if the plugin needs longer"


# --------------------------------------------------------------------------- live mode

CMP_SCENARIO = TESTDATA / "scenarios" / "source-cmp-kustomize"


@pytest.mark.cluster
def test_live_reads_argocd_cmp_cm_only_with_allow_plugins(
    kube_apiserver: ServerFactory,  # noqa: F811
    build_repo: Callable[[Path], Path],
    run_cli: Callable[..., Result],
) -> None:
    if not (shutil.which("kustomize") or shutil.which("kubectl")):
        pytest.fail("the CMP scenario's plugin runs kustomize (kubectl or kustomize on PATH)")
    objects = yaml.safe_load((CMP_SCENARIO / "snapshot.yaml").read_text())["items"]
    server = kube_apiserver(objects)
    repo = build_repo(CMP_SCENARIO / "repo-src")
    base = ["payments", "--kubeconfig", str(server.kubeconfig_path), "--context", server.context,
            "--repo-root", str(repo), "--no-entry-points"]  # fmt: skip
    refused = run_cli(base)
    assert refused.exit_code == ExitCode.ERROR
    assert "config management plugin kustomize-envsubst-v1.0 renders this source, and no " in (
        refused.stderr
    )
    assert "--allow-plugins to read argocd-cmp-cm" in refused.stderr
    live = run_cli([*base, "--allow-plugins", "-o", "json"])
    assert live.exit_code == ExitCode.DRIFT, live.stderr
    offline = run_cli(
        [
            "payments",
            "--snapshot",
            str(CMP_SCENARIO / "snapshot.yaml"),
            "--repo-root",
            str(repo),
            "--no-entry-points",
            "--allow-plugins",
            "-o",
            "json",
        ]
    )
    live_doc, offline_doc = json.loads(live.stdout), json.loads(offline.stdout)
    assert live_doc.pop("mode") == "live"
    assert offline_doc.pop("mode") == "offline"
    assert live_doc["applications"][0]["resources"] == offline_doc["applications"][0]["resources"]


def test_a_broken_definition_fails_only_the_sources_that_need_a_plugin(tmp_path: Path) -> None:
    broken = plugin_doc("avp")
    del broken["spec"]["generate"]
    config = render_config.of([cmp_configmap(broken, plugin_doc("ok"))], allow_plugins=True)
    assert [p.name for p in config.plugins] == ["ok"]
    assert config.broken_plugins == (
        (
            "argocd-cmp-cm (argocd) plugin-0.yaml: ConfigManagementPlugin avp: spec.generate "
            "command should be non-empty"
        ),
    )
    app = tmp_path / "app"
    write(app, "x.txt")
    assert cmp.select(config.plugins, {"name": "ok"}, app, {}, True, "app", config.broken_plugins)
    with pytest.raises(SourceError) as err:
        cmp.select(config.plugins, {"name": "avp"}, app, {}, True, "app", config.broken_plugins)
    assert err.value.message.startswith(
        "source path app: no usable config management plugin named avp; a definition is broken: "
        "argocd-cmp-cm (argocd) plugin-0.yaml: ConfigManagementPlugin avp"
    )


def test_cli_nothing_from_a_snapshot_runs_without_allow_plugins(
    tmp_path: Path, run_cli: Callable[..., Result]
) -> None:
    """Discovery commands too: a snapshot's find.command runs only with --allow-plugins."""
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\ndata:\n  a: b\n"
    repo = git_repo(tmp_path, {"app/cm.yaml": cm})

    def app(name: str, **source: Any) -> dict[str, Any]:
        return {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": {"name": name, "namespace": "argocd"},
            "spec": {
                "project": "default",
                "destination": {
                    "namespace": "payments",
                    "server": "https://kubernetes.default.svc",
                },
                "source": {
                    "repoURL": "https://git.example.com/payments.git",
                    "path": "app",
                    "targetRevision": "HEAD",
                    **source,
                },
            },
        }

    marker = tmp_path / "ran"
    finder = plugin_doc(
        "finder", discover={"find": {"command": ["sh", "-c", f"touch {marker}; echo yes"]}}
    )
    finder["spec"]["init"] = {"command": ["touch", str(marker)]}
    items = [app("untyped"), app("typed", directory={}), cmp_configmap(finder)]
    snapshot = write(
        tmp_path,
        "snapshot.yaml",
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}),
    )
    base = ["--snapshot", str(snapshot), "--repo-root", str(repo), "--no-entry-points"]
    typed = run_cli(["typed", *base, "-o", "json"])  # an explicit type asks no plugin
    assert typed.exit_code == ExitCode.DRIFT, typed.stderr
    untyped = run_cli(["untyped", *base])
    assert untyped.exit_code == ExitCode.ERROR
    assert "source path app: config management plugin finder (from argocd-cmp-cm (argocd) " \
        "plugin-0.yaml) discovers sources by running `sh -c" in untyped.stderr  # fmt: skip
    assert "--allow-plugins" in untyped.stderr
    assert not marker.exists(), "a command from the snapshot ran without --allow-plugins"
    allowed = run_cli(["untyped", *base, "--allow-plugins", "-o", "json"])
    assert marker.exists()
    assert allowed.exit_code == ExitCode.DRIFT, allowed.stderr
