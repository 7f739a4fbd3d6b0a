"""Shell completion probes: a `kubectl-gitdrift` on PATH that answers `__complete` from this
checkout, and the bash and fish scripts sourced and asked to complete lines, as the shells do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def fake_cli_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Write a `kubectl-gitdrift` into ``tmp_path`` that runs the completion engine; return the
    environment with ``tmp_path`` first on PATH (plus ``extra`` variables)."""
    fake = tmp_path / "kubectl-gitdrift"
    fake.write_text(
        f"#!/bin/sh\nexec {sys.executable} -c 'import sys; from kubectl_gitdrift.cli import "
        'completion; sys.exit(completion.main(sys.argv[2:], sys.stdout, sys.stderr))\' "$@"\n'
    )
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}", **extra}


def _script(tmp_path: Path, shell: str) -> Path:
    from kubectl_gitdrift.cli import completion

    script = tmp_path / f"gitdrift.{shell}"
    script.write_text(completion.script(shell, "kubectl gitdrift"))
    return script


def bash_complete(
    bash: str, tmp_path: Path, env: dict[str, str], *lines: tuple[str, str]
) -> subprocess.CompletedProcess[str]:
    """Source the bash script and complete each ``(COMP_LINE, COMP_WORDS)`` at its end (the
    cursor in the last word), printing each COMPREPLY one value a line."""
    probe = f"source {_script(tmp_path, 'bash')}\n"
    for line, words in lines:
        probe += (
            f'COMP_LINE="{line}"; COMP_POINT=${{#COMP_LINE}}\n'
            f"COMP_WORDS=({words}); COMP_CWORD={len(words.split()) - 1}\n"
            '_gitdrift_direct; printf "%s\\n" "${COMPREPLY[@]}"\n'
        )
    return subprocess.run(
        [bash, "--norc", "-c", probe], capture_output=True, text=True, env=env, check=False
    )


def fish_complete(
    fish: str, tmp_path: Path, env: dict[str, str], *lines: str
) -> subprocess.CompletedProcess[str]:
    """Source the fish script and `complete -C` each line, the answers separated by `SEP`."""
    probe = f"source {_script(tmp_path, 'fish')}\n" + "echo SEP\n".join(
        f"complete -C '{line}'\n" for line in lines
    )
    return subprocess.run(
        [fish, "--no-config", "-c", probe], capture_output=True, text=True, env=env, check=False
    )
