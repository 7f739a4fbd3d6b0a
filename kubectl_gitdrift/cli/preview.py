"""`kubectl gitdrift preview`: what a git change does to every Application it touches, before
it merges (issue 24). main.py parses the subcommand's flags (parser.preview_flags) and hands
them here; this module checks their combinations, runs the preview (run/preview.py), writes
text, JSON or markdown (present/preview.py) and picks the exit code: 0 nothing changes, 1
something does, above 1 an error (an app that could not be rendered or expanded is one).

Start-up: the run and the presenters are imported by `run`, not at module level, so that
`preview --help` stays as light as the other subcommands' help.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from kubectl_gitdrift.errors import ExitCode, SnapshotError, SourceError, UsageError

if TYPE_CHECKING:
    import argparse

    from kubectl_gitdrift import model
    from kubectl_gitdrift.cli.requests import PreviewCall
    from kubectl_gitdrift.present import color
    from kubectl_gitdrift.run.request import Tuning


def run(
    sub: argparse.Namespace, out: TextIO, err: TextIO, *, tuning: Tuning | None = None
) -> ExitCode:
    """The subcommand, its flags parsed: check, run, write, and the exit code."""
    from kubectl_gitdrift import model
    from kubectl_gitdrift.cli import progress, requests, terminal

    call = requests.preview_request_from(sub, tuning=tuning)
    check(call)
    from kubectl_gitdrift.run import preview as previewing

    request = call.request
    display = progress.choose(request.output.progress, err, terminal=terminal.is_terminal(err))
    with display:  # the live line is gone before the report or an error is written
        result = previewing.run(request, display)
    out.write(
        render(
            result,
            call,
            palette=terminal.palette(request.output.color, out),
            width=terminal.text_width(out),
        )
    )
    failed = [a for a in result.apps if a.action is model.PreviewAction.FAILED]
    err.writelines(f"error: {a.name}: {a.error or 'could not be previewed'}\n" for a in failed)
    return exit_code(result)


def exit_code(preview: model.Preview) -> ExitCode:
    """0 nothing changes, 1 something does (an app added, removed or changed, or a sync that
    would change the cluster), 3 an app could not be found, expanded or rendered on a side:
    what it would do is unknown, as an app whose comparison fails in `--all`."""
    from kubectl_gitdrift import model

    if any(a.action is model.PreviewAction.FAILED for a in preview.apps):
        return ExitCode.ERROR
    return ExitCode.DRIFT if preview.changed else ExitCode.OK


def check(call: PreviewCall) -> None:
    """The flag combinations argparse cannot refuse, each one line naming the flag."""
    from kubectl_gitdrift.present import preview as presenting

    request = call.request
    fmt = request.output.format
    if call.split and fmt != "markdown":
        raise UsageError(f"--split only goes with -o markdown (got -o {fmt})")
    if call.max_chars is not None:
        if fmt != "markdown":
            raise UsageError(f"--max-chars only goes with -o markdown (got -o {fmt})")
        if call.max_chars < presenting.MIN_CHARS:
            raise UsageError(
                f"--max-chars {call.max_chars}: at least {presenting.MIN_CHARS} (a comment "
                "holds its header, a row of the summary table and a cut section)"
            )
    cluster = request.cluster
    assert request.change is not None
    flags = (("--context", cluster.context), ("--kubeconfig", cluster.kubeconfig))
    given = [flag for flag, value in flags if value]
    if given and not (request.change.live and cluster.snapshot is None):
        raise UsageError(
            f"{' and '.join(given)} only go{'es' if len(given) == 1 else ''} with --live",
            hint="preview compares git with git unless --live (a cluster) or --snapshot FILE",
        )
    root = request.git.repo_roots[0].path
    if not root.is_dir():
        raise SourceError(f"--repo-root {root}: no such directory")
    if cluster.snapshot is not None and not cluster.snapshot.exists():
        raise SnapshotError(f"--snapshot {cluster.snapshot}: no such file or directory")


def render(
    preview: model.Preview,
    call: PreviewCall,
    *,
    palette: color.Palette | None = None,
    width: int | None = None,
) -> str:
    """The output the flags ask for; markdown parts one after the other (each starts with
    present.preview.MARKER's line, which a workflow splits them at)."""
    from kubectl_gitdrift.present import color
    from kubectl_gitdrift.present import preview as presenting

    fmt = call.request.output.format
    if fmt == "json":
        return presenting.render_json(preview)
    if fmt == "markdown":
        limit = presenting.GITHUB_LIMIT if call.max_chars is None else call.max_chars
        return "".join(presenting.render_markdown(preview, max_chars=limit, split=call.split))
    return presenting.render_text(preview, palette=palette or color.OFF, width=width)
