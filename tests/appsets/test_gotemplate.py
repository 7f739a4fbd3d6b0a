"""goTemplate's text/template (appsets/gotemplate.py): Go's own answers first, then the rest.

testdata/appsets/gotemplate/go-expected.json holds templates, data and what Go's text/template
printed or the error it gave (made by testdata/appsets/gotemplate/gen, Go 1.19): each case is
rendered again here and must print the same, or fail with Go's cause on Go's line.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from kubectl_gitdrift.appsets import gotemplate
from kubectl_gitdrift.appsets.gotemplate import TemplateError, render
from kubectl_gitdrift.errors import GitDriftError
from tests.conftest import TESTDATA

GO_CASES: list[dict[str, Any]] = json.loads(
    (TESTDATA / "appsets" / "gotemplate" / "go-expected.json").read_text(encoding="utf-8")
)
_GO_ERROR = re.compile(r'^template: t:(\d+)(?::\d+)?: (?:executing "\w+" at <.*?>: )?(.*)$', re.S)


@pytest.mark.parametrize("case", GO_CASES, ids=lambda case: case["name"])
def test_render_prints_what_go_prints(case: dict[str, Any]) -> None:
    options = case.get("options", ())
    if "output" in case:
        assert render(case["template"], case["data"], options=options) == case["output"]
        return
    with pytest.raises(TemplateError) as raised:
        render(case["template"], case["data"], options=options)
    go = _GO_ERROR.match(case["error"])
    assert go, case["error"]
    message = raised.value.message
    assert "\n" not in message
    assert message.startswith(f"line {go[1]}, col "), message
    assert message.endswith(": " + go[2]), (message, go[2])
