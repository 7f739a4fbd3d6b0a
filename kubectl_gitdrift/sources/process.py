"""Runs the external renderers (kustomize, helm): no stdin, captured output, a time limit."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
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
    over = False
    timed_out = False
    deadline = time.monotonic() + timeout
    drain_until: float | None = None  # set once the command has exited
    sel = selectors.DefaultSelector()
    for stream in (proc.stdout, proc.stderr):
        assert stream is not None
        os.set_blocking(stream.fileno(), False)
        sel.register(stream, selectors.EVENT_READ)
    try:
        # one loop reads both pipes, so a process that escaped the group (setsid) and keeps
        # them open cannot hang gitdrift: once the command is gone, reading stops after a grace
        while sel.get_map():
            now = time.monotonic()
            if drain_until is None and proc.poll() is not None:
                _kill_group(proc, signal.SIGKILL)  # what it left running goes too
                drain_until = now + _DRAIN_GRACE
            if drain_until is not None and now >= drain_until:
                break
            if drain_until is None and now >= deadline:
                timed_out = True
                _kill_group(proc, signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=_TERM_GRACE)
                _kill_group(proc, signal.SIGKILL)
                break
            wait = (drain_until if drain_until is not None else deadline) - now
            for key, _ in sel.select(timeout=min(max(wait, 0.0), 0.2)):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    sel.unregister(key.fileobj)
                elif key.fileobj is proc.stdout:
                    if len(out) + len(chunk) > limit:
                        over = True
                        _kill_group(proc, signal.SIGKILL)
                        sel.unregister(key.fileobj)
                    else:
                        out.extend(chunk)
                else:
                    err.extend(chunk)
                    del err[: max(0, len(err) - _STDERR_TAIL)]
            if over:
                break
        if not (timed_out or over) and proc.poll() is None:
            # both pipes closed: the command is exiting (or lives on without them)
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0.001))
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc, signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=_TERM_GRACE)
    finally:
        sel.close()
        _kill_group(proc, signal.SIGKILL)
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    if timed_out:
        raise SourceError(f"{what} timed out after {budget or timeout:g}s", hint=hint)
    if over:
        raise SourceError(f"{what}: wrote more than {limit} bytes of output", hint=hint)
    return subprocess.CompletedProcess(list(cmd), proc.returncode, bytes(out), bytes(err))


_STDERR_TAIL = 64 * 1024
_TERM_GRACE = 5.0  # seconds between TERM and KILL, as Argo CD's cmp-server
_DRAIN_GRACE = 2.0  # seconds to read what is left in the pipes once the command has exited


def _kill_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
