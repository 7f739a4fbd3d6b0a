"""One `git apply`-able patch from the adopt diffs of several resources: each diff is made
against the same commit, so two of them may edit one file (a Helm values file sets fields of
several objects) with hunks whose context overlaps; `git apply` takes the second one after the
first has changed its context, and refuses it. The edits of each file are merged into one diff
of that file (its hunks rebuilt from the lines the diffs show); a file only one diff edits is
kept as written. Pure text in, text out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_EOL = "\\ No newline at end of file"
_CONTEXT = 3


@dataclass(frozen=True, slots=True)
class _Block:
    start: int  # 1-based line of the original the block replaces from (or inserts before)
    removed: tuple[str, ...]
    added: tuple[str, ...]


@dataclass
class _File:
    header: list[str]
    texts: list[str]  # each diff's section of this file, as written
    blocks: list[_Block]
    lines: dict[int, str]  # original line number -> text (with its newline, if any)


def merge(diffs: Sequence[str]) -> str:
    """The diffs as one patch: each file once, in the order files first appear."""
    return _merged(diffs)[0]


def left_out(diffs: Sequence[str]) -> list[str]:
    """The edits `merge` cannot hold: a diff's change of lines another diff changes otherwise
    (one per edit, naming the file and line), so a patch is never silently partial."""
    return _merged(diffs)[1]


def _merged(diffs: Sequence[str]) -> tuple[str, list[str]]:
    files: dict[str, _File] = {}
    dropped: list[str] = []
    for diff in diffs:
        for name, section in _sections(diff):
            found = files.get(name)
            if found is None:
                found = files[name] = _File(section[:3], [], [], {})
            found.texts.append("".join(section))
            for block in _read_hunks(section[3:], found):
                dropped.append(
                    f"{name}:{block.start}: another adopt step changes the same lines of "
                    "this file; edit it by hand after applying the patch"
                )
    out = []
    for file in files.values():
        if len(file.texts) == 1:
            out.append(file.texts[0])
        else:
            out.append("".join(file.header) + "".join(_hunks(file)))
    return "".join(out), dropped


def _sections(diff: str) -> Iterable[tuple[str, list[str]]]:
    lines = diff.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith("diff --git ")]
    for a, b in zip(starts, [*starts[1:], len(lines)], strict=True):
        section = lines[a:b]
        yield section[0].split(" b/", 1)[-1].rstrip("\n"), section


def _read_hunks(lines: Sequence[str], file: _File) -> list[_Block]:
    """Add the hunks' edits to `file`; the edits it could not add (overlapping others)."""
    dropped: list[_Block] = []
    pos = 0
    removed: list[str] = []
    added: list[str] = []
    start = 0
    last: list[str] | None = None  # where the line just read went, for a no-newline marker

    def flush() -> None:
        nonlocal removed, added
        if removed or added:
            block = _Block(start, tuple(removed), tuple(added))
            if not _add(file.blocks, block):
                dropped.append(block)
        removed, added = [], []

    for line in lines:
        hunk = _HUNK.match(line)
        if hunk:
            flush()
            count = 1 if hunk.group(2) is None else int(hunk.group(2))
            pos = int(hunk.group(1)) + (1 if count == 0 else 0)
            continue
        if line.rstrip("\n") == _NO_EOL and last:
            last[-1] = last[-1].rstrip("\n")
            if last is not added:
                file.lines[pos - 1] = file.lines[pos - 1].rstrip("\n")
            continue
        tag, text = line[:1], line[1:]
        if tag == " ":
            flush()
            file.lines[pos] = text
            pos += 1
            last = [text]
        elif tag == "-":
            if not removed and not added:
                start = pos
            removed.append(text)
            file.lines[pos] = text
            pos += 1
            last = removed
        elif tag == "+":
            if not removed and not added:
                start = pos
            added.append(text)
            last = added
    flush()
    return dropped


def _add(blocks: list[_Block], block: _Block) -> bool:
    """Add `block` unless another diff made the same edit; two insertions at one place are
    both kept (keys added to one mapping), and so are an insertion and a replacement of the
    line it goes before. False: it overlaps another edit and is dropped (the patch could not
    hold both)."""
    for i, other in enumerate(blocks):
        if other == block:
            return True
        if other.start == block.start and not other.removed and not block.removed:
            if not _within(block.added, other.added):
                blocks[i] = _Block(other.start, (), (*other.added, *block.added))
            return True
        if other.start == block.start and (not other.removed or not block.removed):
            # lines inserted before the line another diff replaces: both hold (a block scalar
            # that grows, and the key right after it)
            insert, change = (other, block) if not other.removed else (block, other)
            blocks[i] = _Block(change.start, change.removed, (*insert.added, *change.added))
            return True
        if other.start == block.start or (
            other.start < block.start + len(block.removed)
            and block.start < other.start + len(other.removed)
        ):
            return False
    blocks.append(block)
    return True


def _within(part: tuple[str, ...], whole: tuple[str, ...]) -> bool:
    return any(whole[i : i + len(part)] == part for i in range(len(whole) - len(part) + 1))


def _hunks(file: _File) -> Iterable[str]:
    blocks = sorted(file.blocks, key=lambda b: b.start)
    groups: list[list[_Block]] = []
    for block in blocks:
        if groups:
            prev = groups[-1][-1]
            end = prev.start + len(prev.removed)
            gap = range(end, block.start)
            if len(gap) <= 2 * _CONTEXT and all(n in file.lines for n in gap):
                groups[-1].append(block)
                continue
        groups.append([block])
    offset = 0
    for group in groups:
        first, last = group[0], group[-1]
        before = [n for n in range(first.start - _CONTEXT, first.start) if n in file.lines]
        while before and before[0] != first.start - len(before):
            before.pop(0)  # only the known lines right before the block
        end = last.start + len(last.removed)
        after = []
        for n in range(end, end + _CONTEXT):
            if n not in file.lines:
                break
            after.append(n)
        body: list[str] = [" " + file.lines[n] for n in before]
        old_len = len(before) + len(after)
        new_len = old_len
        cursor = first.start
        for block in group:
            body.extend(" " + file.lines[n] for n in range(cursor, block.start))
            old_len += block.start - cursor
            new_len += block.start - cursor
            body.extend("-" + line for line in block.removed)
            body.extend("+" + line for line in block.added)
            old_len += len(block.removed)
            new_len += len(block.added)
            cursor = block.start + len(block.removed)
        body.extend(" " + file.lines[n] for n in after)
        old_start = before[0] if before else first.start
        if old_len == 0:
            old_start -= 1
        new_start = old_start + offset if old_len else old_start + offset + 1
        offset += new_len - old_len
        yield f"@@ -{old_start},{old_len} +{new_start},{new_len} @@\n"
        for line in body:
            yield line if line.endswith("\n") else line + "\n" + _NO_EOL + "\n"


__all__ = ["left_out", "merge"]
