"""The adopt diffs of several resources, made against one commit, merged into one patch that
`git apply` takes (diagnose/diffmerge.py): for every pair of edits of one file, the merged
patch gives the file with both edits."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kubectl_gitdrift.diagnose import diffmerge, policies

ORIGINAL = "".join(f"line {n}\n" for n in range(1, 21))


def _edit(text: str, line: int, new: list[str]) -> str:
    lines = text.splitlines(keepends=True)
    lines[line - 1 : line] = new
    return "".join(lines)


def _apply(tmp_path: Path, original: str, patch: str) -> str:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "f.yaml").write_text(original)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (tmp_path / "p.diff").write_text(patch)
    subprocess.run(["git", "apply", str(tmp_path / "p.diff")], cwd=repo, check=True)
    return (repo / "f.yaml").read_text()


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ((1, ["one\n"]), (3, ["three\n"])),  # overlapping context
        ((5, ["five\n", "five and a half\n"]), (8, ["eight\n"])),  # a line added before
        ((10, []), (12, ["twelve\n"])),  # a line removed before
        ((2, ["two\n"]), (17, ["seventeen\n"])),  # far apart: two hunks
        ((20, ["twenty"]), (18, ["eighteen\n"])),  # no newline at the end
    ],
)
def test_two_edits_of_one_file(tmp_path: Path, first, second) -> None:  # type: ignore[no-untyped-def]
    a = policies.unified_diff("f.yaml", ORIGINAL, _edit(ORIGINAL, *first))
    b = policies.unified_diff("f.yaml", ORIGINAL, _edit(ORIGINAL, *second))
    both = _edit(ORIGINAL, *first) if first[0] > second[0] else _edit(ORIGINAL, *second)
    both = _edit(both, *second) if first[0] > second[0] else _edit(both, *first)
    merged = diffmerge.merge([a, b])
    assert merged.count("diff --git") == 1
    assert _apply(tmp_path, ORIGINAL, merged) == both


def test_two_keys_added_at_one_place_and_a_repeated_edit(tmp_path: Path) -> None:
    original = "config:\n  a: 1\nother: 2\n"
    a = policies.unified_diff("f.yaml", original, "config:\n  a: 1\n  b: 2\nother: 2\n")
    b = policies.unified_diff("f.yaml", original, "config:\n  a: 1\n  c: 3\nother: 2\n")
    merged = diffmerge.merge([a, b, a])
    assert _apply(tmp_path, original, merged) == "config:\n  a: 1\n  b: 2\n  c: 3\nother: 2\n"


def test_files_edited_once_are_kept_as_written() -> None:
    a = policies.unified_diff("a.yaml", "x: 1\n", "x: 2\n")
    b = policies.unified_diff("b.yaml", "y: 1\n", "y: 2\n")
    assert diffmerge.merge([a, b]) == a + b
    assert diffmerge.merge([]) == ""
    assert diffmerge.left_out([a, b]) == []


def test_an_edit_of_lines_another_edit_changes_is_named_as_left_out(tmp_path: Path) -> None:
    """Two resources adopt different values into the same line (one values key read by two
    objects): the patch holds the first and names the second, it does not drop it silently."""
    a = policies.unified_diff("f.yaml", ORIGINAL, _edit(ORIGINAL, 7, ["seven\n"]))
    b = policies.unified_diff("f.yaml", ORIGINAL, _edit(ORIGINAL, 7, ["SEVEN\n"]))
    c = policies.unified_diff("f.yaml", ORIGINAL, _edit(ORIGINAL, 15, ["fifteen\n"]))
    merged = diffmerge.merge([a, b, c])
    assert _apply(tmp_path, ORIGINAL, merged) == _edit(
        _edit(ORIGINAL, 7, ["seven\n"]), 15, ["fifteen\n"]
    )
    why = "another adopt step changes the same lines of this file"
    assert diffmerge.left_out([a, b, c]) == [
        f"f.yaml:7: {why}; edit it by hand after applying the patch"
    ]
    assert diffmerge.left_out([a, a, c]) == []  # the same edit twice is one edit
