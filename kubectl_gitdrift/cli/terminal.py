"""What the output stream is: a terminal a person watches, its width, and the colours --color asks
for. Shared by the main command (cli/main.py) and `preview` (cli/preview.py); it imports nothing
but `os`, so every command may load it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from kubectl_gitdrift.present import color


def is_terminal(stream: TextIO) -> bool:
    """A person watches `stream`: a TTY, and a terminal that does more than print text."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty is not None and isatty()) and os.environ.get("TERM") != "dumb"


def palette(when: str, out: TextIO) -> color.Palette:
    """--color: `always` and `never` as said; `auto` colours a terminal unless NO_COLOR is set
    (no-color.org: present and not empty) or TERM=dumb."""
    from kubectl_gitdrift.present import color

    if when == "never":
        return color.OFF
    if when == "always":
        return color.ON
    if os.environ.get("NO_COLOR"):
        return color.OFF
    return color.ON if is_terminal(out) else color.OFF


def text_width(out: TextIO) -> int | None:
    """The width text output fits: $COLUMNS, else the terminal's; None for a pipe or a file
    (whose output stays the same whatever terminal started it)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if out.isatty():
            return os.get_terminal_size(out.fileno()).columns
    except (OSError, ValueError, AttributeError):
        pass
    return None
