"""Runs the external renderers (kustomize, helm): no stdin, captured output, a time limit."""

from __future__ import annotations

import subprocess
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
