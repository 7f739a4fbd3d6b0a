"""Colour for the human formats (text, `-o diff`, the `--all` table): ANSI SGR codes around
statuses, finding severities, diff lines, section titles and table headers.

Pure: it only paints. Whether to paint (a terminal, `--color`, `NO_COLOR`, `TERM=dumb`) is the
CLI's decision; the core receives a Palette. `OFF` paints nothing, so output built with it is
byte-identical to output built without colour at all. Machine formats (JSON, YAML, Markdown,
`--query`) never take a palette.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["OFF", "ON", "Palette", "strip"]

_RESET = "\x1b[0m"

# SGR parameters. Kept to the 8 basic colours plus bold/dim: every terminal has them and
# they follow the user's terminal theme.
_BOLD = "1"
_DIM = "2"
_RED = "31"
_GREEN = "32"
_YELLOW = "33"
_MAGENTA = "35"
_CYAN = "36"

_STATUS = {
    "Synced": (_GREEN,),
    "OutOfSync": (_YELLOW, _BOLD),
    "Missing": (_RED,),
    "Extraneous": (_MAGENTA,),
    "Unknown": (_MAGENTA, _BOLD),
    "Error": (_RED, _BOLD),
    "Skipped": (_DIM,),
}
_SEVERITY = {"✗": (_RED, _BOLD), "!": (_YELLOW, _BOLD), "i": (_CYAN,)}


@dataclass(frozen=True, slots=True)
class Palette:
    """Paints text when `enabled`; returns it unchanged otherwise."""

    enabled: bool = False

    def paint(self, text: str, *codes: str) -> str:
        if not self.enabled or not codes or not text:
            return text
        return f"\x1b[{';'.join(codes)}m{text}{_RESET}"

    def status(self, value: str) -> str:
        """A sync or resource status (Synced, OutOfSync, Missing, ...); others unchanged."""
        return self.paint(value, *_STATUS.get(value, ()))

    def severity(self, mark: str) -> str:
        """A finding's mark: ✗ error, ! warning, i info."""
        return self.paint(mark, *_SEVERITY.get(mark, ()))

    def title(self, text: str) -> str:
        """A section title (DRIFT, WHY, FIX ...)."""
        return self.paint(text, _BOLD)

    def header(self, table: str) -> str:
        """A tabulate table with its first line (the column headers) in bold."""
        if not self.enabled:
            return table
        head, sep, rest = table.partition("\n")
        return self.paint(head, _BOLD) + sep + rest

    def removed(self, line: str) -> str:
        return self.paint(line, _RED)

    def added(self, line: str) -> str:
        return self.paint(line, _GREEN)

    def hunk(self, line: str) -> str:
        return self.paint(line, _CYAN)


OFF = Palette(False)
ON = Palette(True)


def strip(text: str) -> str:
    """`text` without the codes this module writes (for tests and widths)."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)
