"""`kubectl gitdrift preview` on the command line: its grammar (one-line usage errors, the
flags' combinations), a light `--help`, completion in every shell the scripts support, the
exit codes, and end to end on a real two-commit repository (testdata/preview/cli/repo-src)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from kubectl_gitdrift import model
from kubectl_gitdrift.cli import completion, parser, requests
from kubectl_gitdrift.cli import preview as command
from kubectl_gitdrift.errors import ExitCode
from kubectl_gitdrift.present import preview as present
from tests.cli.test_startup import ENGINE, THIRD_PARTY, _present, imported
from tests.conftest import TESTDATA, Result
from tests.present.test_preview import nothing, sample
from tests.support.completion import bash_complete, fake_cli_env, fish_complete

Run = Callable[..., Result]
REPO_SRC = TESTDATA / "preview" / "cli" / "repo-src"


@pytest.fixture(scope="module")
def repo(build_repo) -> Path:  # type: ignore[no-untyped-def]
    return Path(build_repo(REPO_SRC))


def _one_line(result: Result, code: ExitCode, first: str) -> None:
    assert result.exit_code == code, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0] == first, result.stderr
    assert all(line.startswith(("  hint: ", "See ")) for line in lines[1:]), result.stderr
    assert "Traceback" not in result.stderr


# --------------------------------------------------------------------------- grammar


def test_help_is_light() -> None:
    """`preview --help` loads neither the engine, the run, the presenters nor third-party
    packages (tests/cli/test_startup.py's budget)."""
    code, modules = imported("preview", "--help")
    assert code == 0
    assert _present(modules, ENGINE) == []
    assert _present(modules, THIRD_PARTY) == []
    assert "kubectl_gitdrift.run.preview" not in modules
    assert "kubectl_gitdrift.present.preview" not in modules
    assert "kubectl_gitdrift.cli.preview" not in modules


def test_help_names_every_flag(run_cli: Run) -> None:
    result = run_cli(["preview", "--help"])
    assert result.exit_code == 0
    for flag in (
        "--base REV", "--head REV", "--repo-root DIR", "--all-apps", "--snapshot FILE", "--live",
        "--context NAME", "--kubeconfig FILE", "--offline", "--allow-plugins", "--split",
        "--max-chars N", "--no-cache", "--color WHEN", "-o {text,json,markdown}",
    ):  # fmt: skip
        assert flag in result.stdout, flag
    assert result.stdout.startswith("usage: kubectl gitdrift preview ")


def test_the_request_carries_the_change(tmp_path: Path) -> None:
    sub = parser.build_subparser("preview", "kubectl gitdrift").parse_args(
        ["--base", "origin/main", "--head", "HEAD", "--repo-root", str(tmp_path), "--all-apps",
         "--live", "--context", "prod", "-o", "markdown", "--split", "--max-chars", "2000",
         "--offline", "--no-cache", "--allow-plugins"]
    )  # fmt: skip
    call = requests.preview_request_from(sub)
    request = call.request
    assert request.change is not None
    assert (request.change.base, request.change.head) == ("origin/main", "HEAD")
    assert request.change.all_apps is True
    assert request.change.live is True
    assert [r.path for r in request.git.repo_roots] == [tmp_path]
    assert (request.git.offline, request.git.cache, request.git.allow_plugins) == (
        True,
        False,
        True,
    )
    assert request.cluster.context == "prod"
    assert request.cluster.snapshot is None
    assert request.output.format == "markdown"
    assert (call.split, call.max_chars) == (True, 2000)


def test_defaults(tmp_path: Path) -> None:
    sub = parser.build_subparser("preview", "kubectl gitdrift").parse_args([])
    call = requests.preview_request_from(sub)
    assert call.request.change == requests.Change()
    assert [r.path for r in call.request.git.repo_roots] == [Path()]
    assert call.request.output.format == "text"
    assert (call.split, call.max_chars) == (False, None)
    snap = parser.build_subparser("preview", "x").parse_args(["--snapshot", str(tmp_path)])
    change = requests.preview_request_from(snap).request.change
    assert change is not None
    assert change.live is True  # a snapshot is a live source


@pytest.mark.parametrize(
    ("args", "first"),
    [
        (["--split"], "error: --split only goes with -o markdown (got -o text)"),
        (["-o", "json", "--max-chars", "5000"], ("error: --max-chars only goes with -o markdown "
         "(got -o json)")),
        (["-o", "markdown", "--max-chars", "100"], ("error: --max-chars 100: at least 1024 (a "
         "comment holds its header, a row of the summary table and a cut section)")),
        (["--context", "prod"], "error: --context only goes with --live"),
        (["--kubeconfig", "k", "--context", "p"], ("error: --context and --kubeconfig only go "
         "with --live")),
    ],
)  # fmt: skip
def test_flag_combinations_are_one_line(run_cli: Run, args: list[str], first: str) -> None:
    _one_line(run_cli(["preview", *args]), ExitCode.USAGE_ERROR, first)


@pytest.mark.parametrize(
    ("args", "first"),
    [
        (["--live", "--snapshot", "s.yaml"], ("error: argument --snapshot: not allowed with "
         "argument --live")),
        (["-o", "yaml"], ("error: argument -o/--output: invalid choice: 'yaml' (choose from "
         "text, json, markdown)")),
        (["--all-appz"], "error: unrecognized arguments: --all-appz (did you mean --all-apps?)"),
        (["--max-chars", "many"], "error: argument --max-chars: invalid int value: 'many'"),
    ],
)  # fmt: skip
def test_argparse_errors_are_one_line(run_cli: Run, args: list[str], first: str) -> None:
    result = run_cli(["preview", *args])
    assert result.exit_code == ExitCode.USAGE_ERROR
    lines = result.stderr.splitlines()
    assert lines[0].replace("'text', 'json', 'markdown'", "text, json, markdown") == first
    assert lines[1:] == ["See 'kubectl gitdrift preview --help' for usage."]


def test_missing_inputs_name_the_file(run_cli: Run, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    _one_line(
        run_cli(["preview", "--repo-root", str(missing)]),
        ExitCode.ERROR,
        f"error: --repo-root {missing}: no such directory",
    )
    _one_line(
        run_cli(["preview", "--repo-root", str(tmp_path), "--snapshot", str(missing)]),
        ExitCode.ERROR,
        f"error: --snapshot {missing}: no such file or directory",
    )


# --------------------------------------------------------------------------- exit codes, formats


def test_exit_codes_follow_the_preview() -> None:
    assert command.exit_code(nothing()) is ExitCode.OK
    assert command.exit_code(sample(live=False)) is ExitCode.ERROR  # an app failed
    no_failure = sample()
    no_failure = model.Preview(
        no_failure.base,
        no_failure.head,
        no_failure.base_ref,
        no_failure.head_ref,
        tuple(a for a in no_failure.apps if a.action is not model.PreviewAction.FAILED),
    )
    assert command.exit_code(no_failure) is ExitCode.DRIFT
    unchanged = model.AppPreview("argocd/a", model.PreviewAction.UNCHANGED, "apps/a.yaml")
    same = model.Preview("a" * 40, "b" * 40, "m", "h", (unchanged,), untouched=4)
    assert command.exit_code(same) is ExitCode.OK
    effect = model.SyncEffect(model.ObjectKey("", "ConfigMap", "a", "c"), "set", ("data",), 1, 2)
    synced = model.Preview("a" * 40, "b" * 40, "m", "h", (unchanged.__class__(
        "argocd/a", model.PreviewAction.UNCHANGED, "apps/a.yaml", sync=(effect,)),))  # fmt: skip
    assert command.exit_code(synced) is ExitCode.DRIFT  # git unchanged, the cluster would not be


def _call(*args: str) -> requests.PreviewCall:
    return requests.preview_request_from(parser.build_subparser("preview", "x").parse_args(args))


def test_render_picks_the_format() -> None:
    preview = sample()
    assert command.render(preview, _call()) == present.render_text(preview)
    assert command.render(preview, _call("-o", "json")) == present.render_json(preview)
    (whole,) = present.render_markdown(preview)
    assert command.render(preview, _call("-o", "markdown")) == whole
    split = command.render(preview, _call("-o", "markdown", "--split", "--max-chars", "1500"))
    parts = present.render_markdown(preview, max_chars=1500, split=True)
    assert len(parts) > 1
    assert split == "".join(parts)
    assert split.count(present.MARKER) == len(parts)


# --------------------------------------------------------------------------- completion


def test_completion_knows_preview_and_its_flags(repo: Path) -> None:
    first = completion.complete(["pre"])[0]
    assert first == ["preview\twhat a git change does to the Applications it touches"]
    flags = [v.split("\t")[0] for v in completion.complete(["preview", "--a"])[0]]
    assert flags == ["--all-apps", "--allow-plugins"]
    assert completion.complete(["preview", "-o", ""])[0] == ["text", "json", "markdown"]
    assert completion.complete(["preview", "--output=m"])[0] == ["--output=markdown"]
    assert (
        completion.complete(["preview", "--repo-root", ""])[1] == completion.Directive.FILTER_DIRS
    )
    assert completion.complete(["preview", "--snapshot", ""])[1] == completion.Directive.DEFAULT
    assert completion.complete(["preview", "--color="])[0] == [f"--color={w}" for w in parser.WHEN]
    refs, _ = completion.complete(["preview", "--repo-root", str(repo), "--base", ""])
    assert refs == ["main"]
    assert completion.complete(["preview", "--repo-root", str(repo), "--head=m"])[0] == [
        "--head=main"
    ]
    assert (
        completion.complete(["preview", "--base", ""], "x")[1] is completion.Directive.NO_FILE_COMP
    )


def test_bash_completes_preview(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    result = bash_complete(
        bash,
        tmp_path,
        fake_cli_env(tmp_path),
        ("kubectl-gitdrift pre", "kubectl-gitdrift pre"),
        ("kubectl-gitdrift preview --spl", "kubectl-gitdrift preview --spl"),
        ("kubectl-gitdrift preview -o m", "kubectl-gitdrift preview -o m"),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["preview", "--split", "markdown"]


def test_fish_completes_preview(tmp_path: Path) -> None:
    fish = shutil.which("fish")
    assert fish is not None, "the tests need fish (tools/test_prereqs.sh installs it)"
    env = fake_cli_env(tmp_path, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "c"))
    result = fish_complete(
        fish, tmp_path, env, "kubectl-gitdrift preview -o ", "kubectl-gitdrift preview --max"
    )
    assert result.returncode == 0, result.stderr
    formats, _, flags = result.stdout.partition("SEP\n")
    assert {line.split("\t")[0] for line in formats.splitlines()} == {"text", "json", "markdown"}
    assert {line.split("\t")[0] for line in flags.splitlines()} == {"--max-chars"}


def test_zsh_script_hands_preview_to_the_engine() -> None:
    """zsh is not installed here: its script passes the words to the same engine, whose answer
    for preview is checked above; this checks the script is the one for every command."""
    script = completion.script("zsh", "kubectl gitdrift")
    assert 'out=$("$cmd" completion __complete "$@" 2>/dev/null)' in script
    assert "compdef _gitdrift kubectl-gitdrift argocd-gitdrift" in script


# --------------------------------------------------------------------------- end to end


def _preview(run_cli: Run, repo: Path, *args: str) -> Result:
    return run_cli(["preview", "--repo-root", str(repo), "--no-entry-points", *args])


def test_a_commit_that_scales_an_app_exits_1(run_cli: Run, repo: Path) -> None:
    result = _preview(run_cli, repo, "--base", "HEAD~1", "--head", "HEAD", "-o", "json")
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    doc = json.loads(result.stdout)
    assert doc["kind"] == "Preview"
    assert doc["changed"] is True
    (app,) = doc["apps"]
    assert (app["namespace"], app["name"], app["action"]) == ("argocd", "guestbook", "changed")
    assert "guestbook/deployment.yaml" in app["touchedBy"]
    deploy = next(o for o in app["objects"] if o["kind"] == "Deployment")
    assert deploy["edits"] == [
        {"op": "change", "path": "spec.replicas", "base": 3, "head": 5, "secret": False}
    ]
    added = next(o for o in app["objects"] if o["kind"] == "ConfigMap")
    assert (added["name"], added["action"]) == ("guestbook-settings", "added")
    assert doc["summary"]["untouched"] == 1  # `other` is found and not touched


def test_text_and_markdown_of_the_same_change(run_cli: Run, repo: Path) -> None:
    text = _preview(run_cli, repo, "--base", "HEAD~1", "--head", "HEAD")
    assert text.exit_code == ExitCode.DRIFT, text.stderr
    assert text.stdout.splitlines()[0].endswith("(HEAD~1..HEAD): 1 of 2 apps touched (1 changed)")
    assert "      spec.replicas: 3 -> 5\n" in text.stdout
    assert "  + /ConfigMap guestbook/guestbook-settings" in text.stdout
    md = _preview(run_cli, repo, "--base", "HEAD~1", "--head", "HEAD", "-o", "markdown")
    assert md.exit_code == ExitCode.DRIFT, md.stderr
    assert md.stdout.startswith(present.MARKER + " -->\n")
    assert "| `argocd/guestbook` | changed | +1 -0 ~1 | — |" in md.stdout
    assert "-spec.replicas: 3\n+spec.replicas: 5\n" in md.stdout


def test_no_change_exits_0(run_cli: Run, repo: Path) -> None:
    result = _preview(run_cli, repo, "--base", "HEAD", "--head", "HEAD")
    assert result.exit_code == ExitCode.OK, result.stderr
    assert "0 of 2 apps touched" in result.stdout.splitlines()[0]
    assert "No Application is touched by this change." in result.stdout


def test_an_unknown_revision_is_one_line(run_cli: Run, repo: Path) -> None:
    result = _preview(run_cli, repo, "--base", "no-such-branch", "--head", "HEAD")
    assert result.exit_code > 1
    assert result.stdout == ""
    (first, *rest) = result.stderr.splitlines()
    assert first.startswith("error: ")
    assert "no-such-branch" in first
    assert all(line.startswith("  hint: ") for line in rest)
