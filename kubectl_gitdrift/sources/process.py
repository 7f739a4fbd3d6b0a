"""Runs the external renderers (kustomize, helm): no stdin, captured output, a time limit."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from kubectl_gitdrift.errors import SourceError


def run_tool(
    cmd: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    what: str,
    hint: str | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run `cmd`; a time-out or a binary that cannot start is a one-line SourceError naming
    `what` (e.g. "kustomize build overlays/prod"). The exit status is the caller's to judge."""
    try:
        return subprocess.run(
            list(cmd),
            cwd=cwd,
            capture_output=True,
            env=dict(env),
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise SourceError(f"{what} timed out after {timeout:g}s", hint=hint) from None
    except OSError as exc:
        raise SourceError(f"{what}: cannot run {cmd[0]}: {exc.strerror}", hint=hint) from None


def run_bounded(
    cmd: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    what: str,
    limit: int,
    hint: str | None = None,
    budget: float | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """`run_tool` for commands gitdrift did not write (config management plugins): the command
    runs in its own process group, which is killed as a whole on time-out (TERM, then KILL, as
    Argo CD's cmp-server does) and once the command exits (nothing it started outlives it);
    stdout past `limit` bytes is an error; only the tail of stderr is kept. `budget` is the
    time limit to name in the message when `timeout` is what is left of it."""
    try:
        proc = subprocess.Popen(
            list(cmd),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise SourceError(f"{what}: cannot run {cmd[0]}: {exc.strerror}", hint=hint) from None
    out = bytearray()
    err = bytearray()
    over = threading.Event()

    def read_out() -> None:
        assert proc.stdout is not None
        while chunk := proc.stdout.read(1 << 16):
            if len(out) + len(chunk) > limit:
                over.set()
                _kill_group(proc, signal.SIGKILL)
                break
            out.extend(chunk)

    def read_err() -> None:
        assert proc.stderr is not None
        while chunk := proc.stderr.read(1 << 16):
            err.extend(chunk)
            del err[: max(0, len(err) - _STDERR_TAIL)]

    readers = [threading.Thread(target=read_out), threading.Thread(target=read_err)]
    for thread in readers:
        thread.daemon = True
        thread.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=_TERM_GRACE)
    _kill_group(proc, signal.SIGKILL)  # what it left running (holding our pipes) goes too
    proc.wait()
    for thread in readers:
        thread.join()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    if timed_out:
        raise SourceError(f"{what} timed out after {budget or timeout:g}s", hint=hint)
    if over.is_set():
        raise SourceError(f"{what}: wrote more than {limit} bytes of output", hint=hint)
    return subprocess.CompletedProcess(list(cmd), proc.returncode, bytes(out), bytes(err))


_STDERR_TAIL = 64 * 1024
_TERM_GRACE = 5.0  # seconds between TERM and KILL, as Argo CD's cmp-server


def _kill_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
