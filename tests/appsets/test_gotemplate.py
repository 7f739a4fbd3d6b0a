"""goTemplate's text/template (appsets/gotemplate.py): Go's own answers first, then the rest.

testdata/appsets/gotemplate/go-expected.json holds templates, data and what Go's text/template
printed or the error it gave (made by testdata/appsets/gotemplate/gen, Go 1.19): each case is
rendered again here and must print the same, or fail with Go's cause on Go's line.
"""

from __future__ import annotations

import json
import re
from types import MappingProxyType
from typing import Any

import pytest

from kubectl_gitdrift.appsets import gotemplate
from kubectl_gitdrift.appsets.gotemplate import TemplateError, render
from kubectl_gitdrift.errors import GitDriftError
from tests.conftest import TESTDATA

GO_CASES: list[dict[str, Any]] = json.loads(
    (TESTDATA / "appsets" / "gotemplate" / "go-expected.json").read_text(encoding="utf-8")
)
_GO_ERROR = re.compile(
    r'^template: t:(\d+)(?::\d+)?: (?:executing "\w+" at <.*?>: )?(.*)$', re.DOTALL
)


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


# ---------------------------------------------------------------- what Go 1.19 cannot show

NEWER_GO = [
    # Go 1.22: range over an integer; Go 1.23: {{else with}}
    ("{{ range 3 }}{{ . }}{{ end }}", {}, "012"),
    ("{{ range $i := .n }}{{ $i }},{{ else }}none{{ end }}", {"n": 0}, "none"),
    ("{{ with .a }}a{{ else with .b }}{{ . }}{{ else }}neither{{ end }}", {"b": "B"}, "B"),
    ("{{ with .a }}a{{ else with .b }}{{ . }}{{ else }}neither{{ end }}", {}, "neither"),
]


@pytest.mark.parametrize(("template", "data", "expected"), NEWER_GO)
def test_newer_go_forms(template: str, data: dict[str, Any], expected: str) -> None:
    assert render(template, data) == expected


def test_range_over_an_integer_takes_one_variable() -> None:
    with pytest.raises(TemplateError, match="can't use 3 to iterate over more than one variable"):
        render("{{ range $i, $v := 3 }}{{ end }}", {})


def test_sprig_arithmetic_gives_int64_which_int_parameters_refuse() -> None:
    assert render('{{ add 1 2 }} {{ printf "%T" (add 1 2) }}', {}) == "3 int64"
    with pytest.raises(TemplateError, match="wrong type for value; expected int; got int64"):
        render('{{ trunc (add 1 2) "abcdef" }}', {})


def test_error_names_line_and_column_of_the_node() -> None:
    template = "metadata:\n  name: {{ .cluster }}-{{ .nope }}\n"
    with pytest.raises(TemplateError) as raised:
        render(template, {"cluster": "dev"}, options=["missingkey=error"])
    assert raised.value.message == 'line 2, col 27: map has no entry for key "nope"'
    assert isinstance(raised.value, GitDriftError)
    assert raised.value.exit_code > 1


def test_unknown_option_is_an_error_naming_it() -> None:
    with pytest.raises(
        TemplateError, match='unrecognized goTemplateOptions entry "missingkey=loud"'
    ):
        render("x", {}, options=["missingkey=loud"])
    with pytest.raises(TemplateError, match='entry "strict"'):
        render("x", {}, options=["strict"])


def test_last_missingkey_option_wins() -> None:
    assert (
        render("{{ .x }}", {}, options=["missingkey=error", "missingkey=default"]) == "<no value>"
    )


def test_text_without_actions_is_kept_byte_for_byte() -> None:
    for text in ("", "plain", "a } b { c", "{ {x} }", "tabs\t\r\n and é", "50% {not} $x"):
        assert render(text, {}) == text


def test_a_template_is_parsed_once_per_text() -> None:
    text = "{{ .n }}-cache-probe-{{ len .l }}"
    gotemplate._parse.cache_clear()
    outputs = [render(text, {"n": i, "l": [0] * i}) for i in range(50)]
    assert outputs[7] == "7-cache-probe-7"
    info = gotemplate._parse.cache_info()
    assert (info.misses, info.hits) == (1, 49)


def test_a_bad_template_fails_each_time_it_is_rendered() -> None:
    for _ in range(2):
        with pytest.raises(TemplateError, match='line 1, col 4: function "nope" not defined'):
            render("{{ nope }}", {})


def test_recursion_stops_with_an_error() -> None:
    template = '{{ define "loop" }}{{ template "loop" . }}{{ end }}{{ template "loop" . }}'
    with pytest.raises(TemplateError, match=r"exceeded maximum template depth \(100\)"):
        render(template, {})


def test_rendering_does_not_change_the_data() -> None:
    data: dict[str, Any] = {"m": {"b": [1, {"c": None}]}, "s": "x"}
    before = json.dumps(data, sort_keys=True)
    render("{{ range $k, $v := .m }}{{ $k }}{{ $v }}{{ end }}{{ toJson . }}{{ .m.b }}", data)
    assert json.dumps(data, sort_keys=True) == before


def test_any_mapping_is_the_root() -> None:
    assert render("{{ .a }}", MappingProxyType({"a": "x"})) == "x"
