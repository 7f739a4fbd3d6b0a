"""At a terminal: the live progress line, colour, and WRITTEN BY naming the person (issue 19).

The CLI runs as a subprocess (the installed console script) with a real pseudo-terminal
(`os.openpty`, sized 120x40) as its stdout and/or stderr, or with pipes. What it wrote to a
terminal is replayed through pyte, a VT100 emulator, to see the screen a person is left with.
The fleets come from bench/generate.py (kustomize apps, a fifth of them drifted).
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import struct
import subprocess
import sys
import termios
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyte
import pytest
import yaml

from kubectl_gitdrift import model
from kubectl_gitdrift.cli import parser, progress
from kubectl_gitdrift.present import color, markdown, report
from kubectl_gitdrift.present import writtenby as writers
from tests.conftest import ROOT, load_script
from tests.support.apiserver import (  # noqa: F401 - the fixture
    ServerFactory,
    controller_rbac,
    kube_apiserver,
)

CLI = Path(sys.executable).with_name("kubectl-gitdrift")
COLS, ROWS = 120, 40
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


def _generator() -> Any:
    return load_script("bench_generate", ROOT / "bench" / "generate.py")


def _fleet(tmp_path_factory: pytest.TempPathFactory, apps: int) -> Path:
    gen = _generator()
    out = tmp_path_factory.mktemp(f"fleet{apps}")
    gen.generate(gen.Scenario(f"fleet-{apps}", apps, 1, drift=0.2), out)
    return out


@pytest.fixture(scope="module")
def fleet12(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _fleet(tmp_path_factory, 12)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One render cache for the module's runs (a test that wants renders to run uses its own)."""
    return tmp_path_factory.mktemp("render-cache")


@dataclass
class Run:
    code: int
    stdout: bytes
    stderr: bytes

    def screen(self, data: bytes) -> list[str]:
        """The terminal's lines after `data` was written to it (trailing blanks dropped)."""
        screen = pyte.Screen(COLS, ROWS)
        pyte.ByteStream(screen).feed(data)
        return [line.rstrip() for line in screen.display]


def _terminal() -> tuple[int, int]:
    """A pseudo-terminal (master, slave) of COLS x ROWS, in its default (cooked) mode."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    return master, slave


def _drain(fd: int, into: bytearray) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: every writer of the terminal has closed it
            return
        if not chunk:
            return
        into += chunk


def run_cli(
    args: Sequence[str],
    tmp_path: Path,
    *,
    stdout_tty: bool = True,
    stderr_tty: bool = True,
    env: dict[str, str] | None = None,
    python: Sequence[str] = (),
    cache: Path | None = None,
) -> Run:
    """`kubectl-gitdrift ARGS` with a terminal (or a pipe) as stdout and stderr."""
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    environ.update(
        TERM="xterm-256color", KUBECTL_GITDRIFT_CACHE_DIR=str(cache or tmp_path / "cache")
    )
    environ.update(env or {})
    command = [sys.executable, *python, "-m", "kubectl_gitdrift"] if python else [str(CLI)]
    ends: dict[str, tuple[int, int] | None] = {
        "stdout": _terminal() if stdout_tty else None,
        "stderr": _terminal() if stderr_tty else None,
    }
    proc = subprocess.Popen(
        [*command, *args],
        stdin=subprocess.DEVNULL,
        stdout=ends["stdout"][1] if ends["stdout"] else subprocess.PIPE,
        stderr=ends["stderr"][1] if ends["stderr"] else subprocess.PIPE,
        env=environ,
        cwd=tmp_path,
    )
    buffers = {"stdout": bytearray(), "stderr": bytearray()}
    readers = []
    for name, end in ends.items():
        if end is not None:
            os.close(end[1])
            fd = end[0]
        else:
            stream = getattr(proc, name)
            assert stream is not None
            fd = stream.fileno()
        readers.append(threading.Thread(target=_drain, args=(fd, buffers[name])))
    for reader in readers:
        reader.start()
    code = proc.wait(timeout=600)
    for reader in readers:
        reader.join(timeout=60)
    for name, end in ends.items():
        if end is not None:
            os.close(end[0])
        else:
            getattr(proc, name).close()
    return Run(code, bytes(buffers["stdout"]), bytes(buffers["stderr"]))


def _all(fleet: Path, *extra: str) -> list[str]:
    return [
        "--all",
        "--snapshot",
        str(fleet / "snapshot.yaml"),
        "--repo-root",
        str(fleet / "repo"),
        "--no-entry-points",
        *extra,
    ]


def _one(fleet: Path, *extra: str) -> list[str]:
    return ["shop-0000", *_all(fleet, *extra)[1:]]


def _text(data: bytes) -> str:
    """A terminal's bytes as the program wrote them (the terminal turns \\n into \\r\\n)."""
    return data.decode("utf-8").replace("\r\n", "\n")


# --------------------------------------------------------------------------- progress


def test_progress_is_one_line_updated_in_place_and_gone_at_the_end(
    fleet12: Path, tmp_path: Path
) -> None:
    run = run_cli(_all(fleet12), tmp_path)
    assert run.code == 1, run.stderr
    # one line: redrawn after carriage returns, never a newline
    assert b"\n" not in run.stderr
    frames = [f for f in run.stderr.split(b"\r") if f.strip()]
    rendering = {f for f in frames if f.startswith(b"gitdrift: rendering ")}
    comparing = {f for f in frames if f.startswith(b"gitdrift: comparing ")}
    assert len(rendering) >= 2, frames  # the count moved while it ran
    assert comparing
    counts = [int(f.split()[2].split(b"/")[0]) for f in frames if b"rendering" in f]
    assert counts == sorted(counts)
    assert counts[-1] > counts[0]
    assert all(re.search(rb"/12 .* \d\d:\d\d elapsed, eta (\d\d:\d\d|\?)", f) for f in comparing)
    assert any(
        re.search(rb" \d\d:\d\d elapsed, eta \d\d:\d\d  argocd/shop-00\d\d", f) for f in frames
    )
    assert all(len(f.decode().rstrip()) <= COLS for f in frames)  # never wraps
    # nothing of it is left on the screen
    assert not any(run.screen(run.stderr))
    # the report is the same as in a pipe of the terminal's width, once its colours are taken
    # away (a terminal's text fits its width; a pipe's is the stable layout unless $COLUMNS)
    piped = run_cli(
        _all(fleet12), tmp_path, stdout_tty=False, stderr_tty=False, env={"COLUMNS": str(COLS)}
    )
    assert piped.stderr == b""
    assert color.strip(_text(run.stdout)) == piped.stdout.decode()


def test_a_fleet_at_a_terminal_prints_its_table_and_nothing_else(
    fleet12: Path, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, cache: Path
) -> None:
    """The lines on screen besides the summary table do not grow with the fleet: the progress
    line leaves none (a 500-app --all printed one line per app per phase)."""
    fleet36 = _fleet(tmp_path_factory, 36)
    for fleet, apps in ((fleet12, 12), (fleet36, 36)):
        run = run_cli(_all(fleet), tmp_path, cache=cache)
        assert run.code == 1, run.stderr
        assert run.stderr.count(b"\n") == 0
        lines = _text(run.stdout).splitlines()
        assert len(lines) == apps + 4  # header, rule, a row per app, blank, summary
        assert re.fullmatch(rf"{apps} compared, \d+ not in sync, 0 skipped, 0 failed", lines[-1])


def test_forced_progress_off_a_terminal_is_plain_lines(
    fleet12: Path, tmp_path: Path, cache: Path
) -> None:
    run = run_cli(
        [*_all(fleet12, "-o", "json"), "--progress"],
        tmp_path,
        cache=cache,
        stdout_tty=False,
        stderr_tty=False,
    )
    lines = run.stderr.decode().splitlines()
    assert b"\r" not in run.stderr
    assert b"\x1b" not in run.stderr
    assert lines[0] == f"gitdrift: reading {fleet12 / 'snapshot.yaml'}"
    rendered = [line for line in lines if line.startswith("gitdrift: rendering ")]
    compared = [line for line in lines if line.startswith("gitdrift: comparing ")]
    assert [line.split()[2] for line in rendered] == [f"{n}/12" for n in range(1, 13)]
    assert sorted(line.split()[3] for line in compared) == [
        f"argocd/shop-{n:04d}" for n in range(12)
    ]
    assert json.loads(run.stdout)["summary"]["applications"] == 12


@pytest.mark.parametrize(
    ("flags", "env"),
    [(["--progress=never"], {}), ([], {"TERM": "dumb"})],
    ids=["progress-never", "term-dumb"],
)
def test_no_progress_when_told(
    fleet12: Path, tmp_path: Path, cache: Path, flags: list[str], env: dict[str, str]
) -> None:
    run = run_cli([*_one(fleet12), *flags], tmp_path, cache=cache, env=env)
    assert run.code == 1
    assert run.stderr == b""


@pytest.mark.cluster
def test_live_and_snapshot_show_their_phases(
    fleet12: Path,
    tmp_path: Path,
    cache: Path,
    kube_apiserver: ServerFactory,  # noqa: F811
) -> None:
    """Live: connecting, rendering, listing and comparing, each on the one line; `snapshot`
    too. All erased, and a live run prints the table an offline run prints."""
    items = yaml.safe_load((fleet12 / "snapshot.yaml").read_text())["items"]
    server = kube_apiserver([*items, *controller_rbac()])  # a real cluster has Argo CD's RBAC
    live = ["--kubeconfig", str(server.kubeconfig_path), "--repo-root", str(fleet12 / "repo")]
    run = run_cli(["--all", *live, "--no-entry-points"], tmp_path, cache=cache)
    assert run.code == 1, run.stderr
    frames = [f.split()[1] for f in run.stderr.split(b"\r") if f.startswith(b"gitdrift: ")]
    phases = list(dict.fromkeys(frames))
    assert phases == [b"connected", b"rendering", b"listing", b"indexing", b"comparing"]
    assert any(
        re.match(rb"gitdrift: listing +\d+/\d+ .* elapsed", f) for f in run.stderr.split(b"\r")
    )
    assert not any(run.screen(run.stderr))
    offline = run_cli(_all(fleet12), tmp_path, cache=cache)
    assert run.stdout == offline.stdout

    snap = run_cli(["snapshot", "--all", "-o", "export.json", *live], tmp_path, cache=cache)
    assert snap.code == 0, snap.stderr
    screen = [line for line in run.screen(snap.stderr) if line]
    assert screen[-1].startswith("wrote export.json: 12 Application(s), ")
    # the notes written while the line was up sit above it, whole
    assert all(line.startswith("note: ") for line in screen[:-1]), screen
    assert b"gitdrift: listing " in snap.stderr


# --------------------------------------------------------------------------- colour

RED_BOLD, YELLOW_BOLD, CYAN = "\x1b[31;1m", "\x1b[33;1m", "\x1b[36m"


def test_colour_at_a_terminal(fleet12: Path, tmp_path: Path, cache: Path) -> None:
    text = _text(run_cli(_one(fleet12), tmp_path, cache=cache).stdout)
    assert text.startswith(
        f"Application argocd/shop-0000: {YELLOW_BOLD}OutOfSync\x1b[0m (Argo CD says "
    )
    assert "\n\x1b[1mRESOURCE " in text  # table headers in bold
    assert "\x1b[32mSynced\x1b[0m" in text
    assert "\n\x1b[1mWHY\x1b[0m\n" in text
    assert f"\n{RED_BOLD}✗\x1b[0m [manual-drift] " in text
    assert f"\n{YELLOW_BOLD}!\x1b[0m [selfheal-disabled] " in text
    assert f"\n{CYAN}i\x1b[0m [prune-irrelevant] " in text

    diff = _text(run_cli(_one(fleet12, "-o", "diff"), tmp_path, cache=cache).stdout)
    assert "\n\x1b[1m===== /ConfigMap shop-0000/web-0000-config ======\x1b[0m\n" in diff
    assert "\n\x1b[31m-  LOG_LEVEL: debug\x1b[0m\n" in diff
    assert "\n\x1b[32m+  LOG_LEVEL: info\x1b[0m\n" in diff
    assert re.search(r"\n\x1b\[36m@@ -\d+,\d+ \+\d+,\d+ @@\x1b\[0m\n", diff)
    assert "\n  apiVersion: v1\n" not in diff  # context lines stay plain
    assert "\n apiVersion: v1\n" in diff

    several = _text(run_cli(_all(fleet12, "-o", "diff"), tmp_path, cache=cache).stdout)
    assert "\x1b[1m# Application argocd/shop-0000\x1b[0m\n" in several
    assert "\n\x1b[32m+  LOG_LEVEL: info\x1b[0m\n" in several

    table = _text(run_cli(_all(fleet12), tmp_path, cache=cache).stdout)
    assert table.startswith("\x1b[1mAPPLICATION ")
    assert f"argocd/shop-0000  {YELLOW_BOLD}OutOfSync\x1b[0m " in table


@pytest.mark.parametrize(
    ("flags", "env", "stdout_tty"),
    [
        ([], {}, False),  # a pipe
        ([], {"NO_COLOR": "1"}, True),
        (["--color=never"], {}, True),
        ([], {"TERM": "dumb"}, True),
        (["-o", "json", "--color"], {}, True),
        (["-o", "yaml", "--color=always"], {}, True),
        (["-o", "markdown", "--color=always"], {}, True),
        (["--query", "applications[0].name", "--color=always"], {}, True),
    ],
    ids=["pipe", "NO_COLOR", "never", "TERM-dumb", "json", "yaml", "markdown", "query"],
)
def test_no_colour(
    fleet12: Path,
    tmp_path: Path,
    cache: Path,
    flags: list[str],
    env: dict[str, str],
    stdout_tty: bool,
) -> None:
    chosen = "-o" in flags or any(f.startswith("--query") for f in flags)
    for output in [[]] if chosen else [[], ["-o", "diff"]]:
        run = run_cli(
            [*_one(fleet12, *output), *flags], tmp_path, cache=cache, stdout_tty=stdout_tty, env=env
        )
        assert run.code == 1, run.stderr
        assert run.stdout
        assert b"\x1b" not in run.stdout


def test_colour_always_reaches_a_pipe(fleet12: Path, tmp_path: Path, cache: Path) -> None:
    """`--color` (`always`) colours a pipe too, e.g. for `less -R`; NO_COLOR does not override
    the flag (no-color.org: the command line wins)."""
    run = run_cli(
        [*_one(fleet12), "--color"], tmp_path, cache=cache, stdout_tty=False, env={"NO_COLOR": "1"}
    )
    assert f"{RED_BOLD}✗\x1b[0m".encode() in run.stdout


# --------------------------------------------------------------------------- cost


def test_start_up_and_pipes_do_not_import_the_progress_library(
    fleet12: Path, tmp_path: Path, cache: Path
) -> None:
    version = run_cli(["version"], tmp_path, cache=cache, python=["-X", "importtime"])
    assert version.code == 0
    assert b"| kubectl_gitdrift.cli.main\n" in version.stderr.replace(b"\r\n", b"\n")
    assert b"tqdm" not in version.stderr
    piped = run_cli(
        [*_one(fleet12, "-o", "json")],
        tmp_path,
        cache=cache,
        stdout_tty=False,
        stderr_tty=False,
        python=["-X", "importtime"],
    )
    assert piped.code == 1
    assert b"kubectl_gitdrift.engine" in piped.stderr
    assert b"tqdm" not in piped.stderr


# --------------------------------------------------------------------------- flags


@pytest.mark.parametrize(
    ("argv", "progress", "colour", "app"),
    [
        ([], "auto", "auto", None),
        (["--progress"], "always", "auto", None),
        (["--progress", "guestbook"], "always", "auto", "guestbook"),
        (["--progress=never", "--color=never"], "never", "never", None),
        (["--color", "guestbook"], "auto", "always", "guestbook"),
    ],
)
def test_flags(argv: list[str], progress: str, colour: str, app: str | None) -> None:
    args = parser.build_parser().parse_args(argv)
    assert (args.progress, args.color, args.app) == (progress, colour, app)


# --------------------------------------------------------------------------- WRITTEN BY


def _audited(user: str, impersonated: str | None) -> model.AppReport:
    key = model.ObjectKey("apps", "Deployment", "prod", "guestbook")
    path: model.FieldPath = ("spec", "replicas")
    owner = model.Owner("kubectl", "Update", "scale", None)
    change = model.Change(model.Op.CHANGE, path, 3, 6, owner)
    write = {
        "user": user,
        "impersonatedUser": impersonated,
        "verb": "patch",
        "subresource": "scale",
        "time": "2026-11-30T04:01:43.285195Z",
    }
    finding = model.Finding(
        "manual-drift", model.Severity.ERROR, "changed by hand", key, path, {"audit": write}
    )
    return model.AppReport(
        name="guestbook",
        namespace="argocd",
        sync_status=model.SyncStatus.OUT_OF_SYNC,
        argocd_sync_status="OutOfSync",
        revision="0" * 40,
        source="repo path@rev",
        resources=(model.Drift(key, model.ResourceStatus.OUT_OF_SYNC, (change,)),),
        findings=(finding,),
        remedies=(),
    )


def test_written_by_names_the_person_first() -> None:
    app = _audited("jane.sre@example.com", None)
    cell = "jane.sre@example.com via kubectl (Update, /scale, 2026-11-30T04:01:43.285195Z)"
    doc = model.Report((app,), "offline")
    assert cell in report.render_text(doc)
    assert f"| {cell} |" in markdown.render(doc)
    # the JSON keeps the manager on the change and the person in the finding's evidence
    data = report.to_dict(doc)["applications"][0]
    assert data["resources"][0]["changes"][0]["owner"]["manager"] == "kubectl"
    assert data["findings"][0]["evidence"]["audit"]["user"] == "jane.sre@example.com"

    impersonating = _audited("kubernetes-admin", "jane.sre@example.com")
    change = impersonating.resources[0].changes[0]
    writes = writers.audited_writes(impersonating)
    assert writers.written_by(change, writes[(change_key(impersonating), change.path)]) == (
        "kubernetes-admin (as jane.sre@example.com) via kubectl "
        "(Update, /scale, 2026-11-30T04:01:43.285195Z)"
    )
    assert writers.written_by(change) == "kubectl (Update, /scale, no time recorded)"


def change_key(app: model.AppReport) -> model.ObjectKey:
    return app.resources[0].key


# --------------------------------------------------------------------------- displays


@pytest.mark.parametrize(
    ("mode", "terminal", "display"),
    [
        ("auto", True, progress.Live),
        ("always", True, progress.Live),
        ("never", True, progress.Silent),
        ("auto", False, progress.Silent),
        ("always", False, progress.Lines),
        ("never", False, progress.Silent),
    ],
)
def test_choose(mode: str, terminal: bool, display: type[progress.Silent]) -> None:
    assert type(progress.choose(mode, io.StringIO(), terminal=terminal)) is display


def test_plain_lines_count_in_order_from_many_threads() -> None:
    err = io.StringIO()
    with progress.Lines(err) as shown:
        shown("connected to somewhere")
        shown.start("rendering", 200)
        threads = [
            threading.Thread(target=lambda n=n: [shown.advance(f"app-{n}") for _ in range(25)])
            for n in range(8)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    lines = err.getvalue().splitlines()
    assert lines[0] == "gitdrift: connected to somewhere"
    assert [line.split()[2] for line in lines[1:]] == [f"{n}/200" for n in range(1, 201)]
