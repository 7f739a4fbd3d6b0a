"""kubectl's and argocd's command-line habits, kept: spaced and attached optional values,
durations, one-line usage errors with "did you mean", rule codes for rule ids, `--exit-code`,
a warning for cluster flags beside --snapshot, and a clear line for a missing or malformed
kubeconfig."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kubectl_gitdrift.cli import parser
from kubectl_gitdrift.errors import ExitCode
from tests.conftest import TESTDATA, Result

INCIDENT = TESTDATA / "incident"
Run = Callable[..., Result]


@pytest.fixture(scope="module")
def repo(build_repo) -> Path:  # type: ignore[no-untyped-def]
    return build_repo(INCIDENT / "repo-src")


def _offline(repo: Path, *extra: str) -> list[str]:
    return [
        "guestbook",
        "--snapshot",
        str(INCIDENT / "snapshot.yaml"),
        "--repo-root",
        str(repo),
        "--no-entry-points",
        *extra,
    ]


@pytest.mark.parametrize(
    ("given", "seen"),
    [
        (["--color", "never", "app"], ["--color=never", "app"]),
        (["--color=never", "app"], ["--color=never", "app"]),
        (["--color", "app"], ["--color=always", "app"]),  # bare: its value, then the app
        (["--progress", "never"], ["--progress=never"]),
        (["--exit-code", "false"], ["--exit-code=false"]),
        (["--exit-code"], ["--exit-code=true"]),
        (["--", "--color", "never"], ["--", "--color", "never"]),
    ],
)
def test_optional_values_spaced_or_attached(given: list[str], seen: list[str]) -> None:
    assert parser.attach_values(given) == seen


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30", 30.0), ("30s", 30.0), ("1m", 60.0), ("1m30s", 90.0), ("500ms", 0.5), ("1h", 3600.0),
     ("0", 0.0), ("2.5", 2.5)],
)  # fmt: skip
def test_request_timeout_takes_kubectl_durations(text: str, seconds: float) -> None:
    assert parser.duration(text) == seconds


def test_a_bad_duration_is_one_line(run_cli: Run) -> None:
    result = run_cli(["guestbook", "--request-timeout", "3x"])
    assert result.exit_code == ExitCode.USAGE_ERROR
    lines = result.stderr.splitlines()
    assert lines[0].startswith("error: argument --request-timeout: '3x': expected seconds")
    assert lines[1:] == ["See 'kubectl gitdrift --help' for usage."]


def test_a_misspelt_flag_is_one_line_with_did_you_mean(run_cli: Run) -> None:
    result = run_cli(["guestbook", "--show-supressed"])
    assert result.exit_code == ExitCode.USAGE_ERROR
    assert result.stderr.splitlines() == [
        "error: unrecognized arguments: --show-supressed (did you mean --show-suppressed?)",
        "See 'kubectl gitdrift --help' for usage.",
    ]
    assert "usage:" not in result.stderr


def test_color_never_spaced_runs(run_cli: Run, repo: Path) -> None:
    result = run_cli(_offline(repo, "--color", "never"))
    assert result.exit_code == ExitCode.DRIFT, result.stderr
    assert "\x1b[" not in result.stdout


def test_exit_code_false_makes_drift_exit_0(run_cli: Run, repo: Path) -> None:
    assert run_cli(_offline(repo)).exit_code == ExitCode.DRIFT
    for flag in (["--exit-code=false"], ["--exit-code", "false"]):
        result = run_cli(_offline(repo, *flag))
        assert result.exit_code == ExitCode.OK, result.stderr
        assert "OutOfSync" in result.stdout  # the report is the same
    assert run_cli(_offline(repo, "--exit-code")).exit_code == ExitCode.DRIFT


def test_exit_code_false_keeps_error_codes(run_cli: Run, repo: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    args = ["guestbook", "--snapshot", str(missing), "--repo-root", str(repo), "--exit-code=false"]
    assert run_cli(args).exit_code == ExitCode.ERROR


def test_rule_codes_are_accepted_where_rule_ids_are(run_cli: Run, repo: Path) -> None:
    by_id = run_cli(_offline(repo, "--disable-rule", "builtin/manual-drift", "-o", "json"))
    for name in ("manual-drift",):  # the code the report prints, and the id without prefix
        by_code = run_cli(_offline(repo, "--disable-rule", name, "-o", "json"))
        assert by_code.exit_code == ExitCode.DRIFT, by_code.stderr
        assert by_code.stdout == by_id.stdout
    assert '"manual-drift"' not in by_id.stdout
    quiet = run_cli(_offline(repo, "--disable-rule", "selfheal-disabled", "-o", "json"))
    assert '"prune-irrelevant"' not in quiet.stdout  # a code disables the rule reporting it


def test_an_unknown_rule_suggests_the_closest(run_cli: Run, repo: Path) -> None:
    result = run_cli(_offline(repo, "--disable-rule", "manual-drif"))
    assert result.exit_code == ExitCode.USAGE_ERROR
    assert result.stderr.splitlines()[0] == (
        "error: --disable-rule manual-drif: no such rule or code (did you mean manual-drift?)"
    )


def test_cluster_flags_beside_snapshot_are_warned_about(run_cli: Run, repo: Path) -> None:
    result = run_cli(_offline(repo, "--context", "prod", "--kubeconfig", "/nowhere"))
    assert result.exit_code == ExitCode.DRIFT
    assert result.stderr.splitlines()[0] == (
        "warning: --context and --kubeconfig ignored: --snapshot compares offline and reads "
        "no cluster"
    )


def test_a_missing_kubeconfig_is_one_line(run_cli: Run, tmp_path: Path) -> None:
    result = run_cli(["guestbook", "--kubeconfig", str(tmp_path / "config")])
    assert result.exit_code == ExitCode.CLUSTER_ERROR
    assert (
        result.stderr.splitlines()[0] == f"error: no kubeconfig: {tmp_path}/config does not exist"
    )


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("foo: bar\n", "is not a kubeconfig (no clusters or contexts)"),
        ("clusters: [\n", "not valid YAML (line 2)"),
        ("- a\n- b\n", "is not a kubeconfig"),
    ],
)
def test_a_malformed_kubeconfig_is_one_line(
    run_cli: Run, tmp_path: Path, text: str, needle: str
) -> None:
    config = tmp_path / "config"
    config.write_text(text)
    result = run_cli(["guestbook", "--kubeconfig", str(config)])
    assert result.exit_code == ExitCode.CLUSTER_ERROR
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"error: kubeconfig {config}"), result.stderr
    assert needle in first, result.stderr
    assert "Traceback" not in result.stderr


def _in_a_terminal(args: list[str], columns: int) -> str:
    """The CLI's output when its stdout is a terminal `columns` wide (a real pty)."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["NO_COLOR"] = "1"
    cli = Path(sys.executable).with_name("kubectl-gitdrift")
    proc = subprocess.Popen([str(cli), *args], stdout=follower, stderr=subprocess.DEVNULL, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    proc.wait(timeout=60)
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.parametrize("columns", [72, 160])
def test_text_fits_the_terminal(repo: Path, columns: int) -> None:
    text = _in_a_terminal(_offline(repo), columns)
    assert "[manual-drift]" in text
    # commands stay whole (to copy), the Source line has no space to break at
    fitted = [line for line in text.splitlines() if not line.startswith(("  $ ", "Source: "))]
    assert max(len(line) for line in fitted) <= columns, text
    if columns > 100:  # a wide terminal gets longer lines than a pipe's 100
        assert max(len(line) for line in fitted) > 100


def test_text_into_a_pipe_is_the_same_whatever_the_terminal(
    run_cli: Run, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    piped = run_cli(_offline(repo)).stdout
    shown = piped.replace(str(INCIDENT / "snapshot.yaml"), "testdata/incident/snapshot.yaml")
    shown = shown.replace(str(repo), ".venv/demo-repo")  # as the golden shows make demo's run
    golden = INCIDENT.parent / "scenarios/incident-replicas-scaled/expected.txt"
    assert shown == golden.read_text()
    monkeypatch.setenv("COLUMNS", "60")
    narrow = run_cli(_offline(repo)).stdout
    assert narrow != piped  # $COLUMNS is honoured, as kubectl's tools do
    assert max(len(line) for line in narrow.splitlines() if "[" in line) <= 60
