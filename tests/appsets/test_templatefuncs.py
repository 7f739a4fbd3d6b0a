"""Argo CD's goTemplate functions (appsets/templatefuncs.py), rendered through the template.

Go cannot fetch sprig here, so the expectations are sprig's own (its *_test.go files at v3.3.0)
and Argo CD's (applicationset/utils/utils_test.go), restated as cases; the rest follow from the
Go functions each sprig function calls (strings, strconv, path, regexp, encoding/json).
"""

# ruff: noqa: E501

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from kubectl_gitdrift.appsets.gotemplate import TemplateError, render
from kubectl_gitdrift.appsets.templatefuncs import FUNCS, REMOVED, UNSUPPORTED
from tests.conftest import TESTDATA

DATA: dict[str, Any] = {
    "path": {"path": "apps/team-a/guest_book", "basename": "guest_book"},
    "branch": "feat/a_really+long_pull_request_name_to_test_argo_slugification_and_branch_name",
    "labels": {"env": "prod", "tier": "web"},
    "replicas": 3,
    "ratio": 1.5,
    "none": None,
    "list": ["b", "a", "c", "a"],
    "json": '{"foo": 55, "list": [1, "x"]}',
    "yaml": "hello: world\nreplicas: 3\nnested:\n  list: [a, b]",
    "yamlList": "- hello world\n- bonjour tout le monde",
    "long": "word " * 20 + "end",
    "lines": "a\nb\n",
    "trail": "a \nb",
    "uni": "héllo ✓",
    "tabs": "a\tb",
}

CASES = [
    # strings (sprig strings_test.go)
    ('{{"fooo" | substr 0 3 }}', "foo"),
    ('{{"foo" | substr 0 10 }}', "foo"),
    ('{{ "foooooo" | trunc 3 }}', "foo"),
    ('{{ "baaaaaar" | trunc -3 }}', "aar"),
    ('{{ "baaaaaar" | trunc -999 }}', "baaaaaar"),
    ('{{ "baaaaaz" | trunc 0 }}', ""),
    ('{{quote "a" "b" "c"}}', '"a" "b" "c"'),
    ('{{quote "\\"a\\"" "b" "c"}}', '"\\"a\\"" "b" "c"'),
    ("{{quote 1 2 3 }}", '"1" "2" "3"'),
    ("{{ .none | quote }}", ""),
    ('{{squote "a" "b" "c"}}', "'a' 'b' 'c'"),
    ("{{squote 1 2 3 }}", "'1' '2' '3'"),
    ('{{if contains "cat" "fair catch"}}1{{end}}', "1"),
    ('{{if hasPrefix "cat" "catch"}}1{{end}}', "1"),
    ('{{if hasSuffix "cat" "ducat"}}1{{end}}', "1"),
    ('{{trim "   5.00   "}}', "5.00"),
    ('{{trimAll "$" "$5.00$"}}', "5.00"),
    ('{{trimPrefix "$" "$5.00"}}', "5.00"),
    ('{{trimSuffix "$" "5.00$"}}', "5.00"),
    ('{{$v := "foo$bar$baz" | split "$"}}{{$v._0}}{{$v._2}}', "foobaz"),
    ('{{$v := "foo$bar$baz" | splitn "$" 2}}{{$v._1}}', "bar$baz"),
    ('{{ splitList "/" .path.path }}', "[apps team-a guest_book]"),
    ("{{ $s := list 1 2 3 | toStrings }}{{ index $s 1 | kindOf }}", "string"),
    ('{{ tuple "a" "b" "c" | join "-" }}', "a-b-c"),
    ('{{ tuple 1 2 3 | join "-" }}', "1-2-3"),
    ('{{ join "-" .path.basename }}', "guest_book"),
    ('{{ list "c" "a" "b" | sortAlpha | join "" }}', "abc"),
    ('{{ list 2 1 4 3 | sortAlpha | join "" }}', "1234"),
    ('{{b64enc "coffee"}}|{{ b64dec "Y29mZmVl" }}', "Y29mZmVl|coffee"),
    ('{{b32enc "coffee"}}|{{ b32dec "MNXWMZTFMU======" }}', "MNXWMZTFMU======|coffee"),
    ('{{nospace "h e l l o "}}', "hello"),
    ('{{untitle "First Try"}}|{{ title "hello wORLD-x_y" }}', "first try|Hello WORLD-X_y"),
    ('{{$b := "b"}}{{"c" | cat "a" $b}}', "a b c"),
    ('{{ .none | cat "a" "b"}}', "a b"),
    ('{{indent 4 "a\\nb\\nc"}}', "    a\n    b\n    c"),
    ('{{nindent 4 "a\\nb\\nc"}}', "\n    a\n    b\n    c"),
    ('{{"I Am Henry VIII" | replace " " "-"}}', "I-Am-Henry-VIII"),
    ('{{$num := len "two"}}{{$num}} {{$num | plural "1 char" "chars"}}', "3 chars"),
    ('{{ repeat 3 "ab" }}|{{ upper "é-x" }}|{{ lower "ABC" }}', "ababab|É-X|abc"),
    ('{{ sha256sum "abc" | trunc 16 }}', "ba7816bf8f01cfea"),
    ('{{ sha1sum "abc" }}', "a9993e364706816aba3e25717850c26c9cd0d89d"),
    ('{{ adler32sum "abc" }}', "38600999"),
    ("{{ toString 3 }}|{{ toString .ratio }}|{{ toString .labels }}", "3|1.5|map[env:prod tier:web]"),
    # paths
    ('{{ base "a/b/c.yaml" }} {{ dir "a/b/c.yaml" }} {{ ext "c.tar.gz" }}', "c.yaml a/b .gz"),
    ('{{ clean "a//b/../c/" }} {{ base "" }} {{ dir "x" }} {{ isAbs "/a" }}', "a/c . . true"),
    # numbers (sprig numeric_test.go)
    ("{{range $i, $e := until 5}}{{$i}}{{$e}}{{end}}", "0011223344"),
    ("{{range $i, $e := until -5}}{{$i}}{{$e}} {{end}}", "00 1-1 2-2 3-3 4-4 "),
    ("{{range $i, $e := untilStep 3 6 1}}{{$i}}{{$e}}{{end}}", "031425"),
    ("{{range $i, $e := untilStep 0 -10 -2}}{{$i}}{{$e}} {{end}}", "00 1-2 2-4 3-6 4-8 "),
    ("{{range $i, $e := untilStep 3 99 0}}{{$i}}{{$e}}{{end}}", ""),
    ("{{ biggest 1 2 3 345 5 6 7}} {{ max 345 }} {{ min 1 2 3 345 5 6 7 }}", "345 345 1"),
    ("{{ maxf 1 2 3 345.7 5 6 7}} {{ minf 1.4 2 3 345.6 5 6 7 }}", "345.7 1.4"),
    ("{{ 3 | add1 }} {{ 3.4 | add1f }} {{ 3 | add 1 2 }} {{ 3 | addf 1.5 2.2 }}", "4 4.4 6 6.7"),
    ("{{ 4 | div 5 }} {{ 2 | divf 5 4 }} {{ 1 | mul \"2\" 3 \"4\" }}", "1 0.625 24"),
    ('{{ 1.2 | mulf "2.4" 10 "4" }} {{ 3 | sub 14 }} {{ 3 | subf 4.5 1 }}', "115.2 11 0.5"),
    ("{{ div -7 2 }} {{ mod -7 2 }} {{ mod 7 -2 }}", "-3 -1 1"),
    ("{{ seq 0 1 3 }}|{{ seq 0 3 10 }}|{{ seq 3 3 2 }}|{{ seq 3 -3 2 }}|{{ seq }}", "0 1 2 3|0 3 6 9||3|"),
    ("{{ seq 0 4 }}|{{ seq 5 }}|{{ seq -5 }}|{{ seq 0 }}|{{ seq 0 -4 }}", "0 1 2 3 4|1 2 3 4 5|1 0 -1 -2 -3 -4 -5|1 0|0 -1 -2 -3 -4"),
    ('{{ atoi "42" }} {{ atoi "4x" }} {{ int "0x1F" }} {{ int "010" }} {{ int "12.00" }}', "42 0 31 8 12"),
    ('{{ int 3.9 }} {{ int64 "7" }} {{ float64 "2.5" }} {{ float64 "x" }} {{ int .none }}', "3 7 2.5 0 0"),
    ("{{ ceil 1.2 }} {{ floor 1.8 }} {{ round 3.14159 2 }} {{ round 2.5 0 }}", "2 1 3.14 3"),
    ("{{ add .replicas 1 | typeOf }} {{ len .list | typeOf }} {{ int 2 | typeOf }}", "int64 int int"),
    # defaults (sprig defaults_test.go)
    ('{{"" | default "foo"}} {{ default "foo" 234 }} {{ default "foo" 2.34 }}', "foo 234 2.34"),
    ('{{ .Nothing | default "123" }} {{ default "123" }} {{ .none | default "n" }}', "123 123 n"),
    ("{{if empty 1}}1{{else}}0{{end}}{{if empty 0}}1{{else}}0{{end}}{{if empty \"\"}}1{{end}}", "011"),
    ("{{if empty 0.0}}1{{end}}{{if empty false}}1{{end}}{{if empty .top.NoSuchThing}}1{{end}}", "111"),
    ('{{ coalesce 1 }} {{ coalesce "" 0 nil 2 }} {{ coalesce .none .x "z" }}', "1 2 z"),
    ("{{ coalesce }}", "<no value>"),
    ('{{ all 1 }} {{ all "" 0 nil 2 }} {{ all }} {{ any "" 0 nil 2 }} {{ any }}', "true false true true false"),
    ('{{true | ternary "foo" "bar"}} {{ternary "foo" "bar" false}}', "foo bar"),
    # JSON and YAML
    ("{{ .json | fromJson }}", "map[foo:55 list:[1 x]]"),
    ("{{ (.json | fromJson).foo | typeOf }}", "float64"),
    ('{{ fromJson "not json" }}', "<no value>"),
    ("{{ .labels | toJson }}", '{"env":"prod","tier":"web"}'),
    ('{{ dict "b" 1.0 "a" (list 1e6 0.000001 1e-7 "<&>") | toJson }}', '{"a":[1000000,0.000001,1e-7,"\\u003c\\u0026\\u003e"],"b":1}'),
    ('{{ dict "html" "<HEAD>" | toRawJson }}', '{"html":"<HEAD>"}'),
    ('{{ dict "n" 42 "s" "t" | toPrettyJson }}', '{\n  "n": 42,\n  "s": "t"\n}'),
    ("{{ list | toPrettyJson }} {{ dict | toPrettyJson }}", "[] {}"),
    ('{{ get (fromYaml .yaml) "hello" }} {{ (fromYaml .yaml).replicas | typeOf }}', "world float64"),
    ("{{ fromYamlArray .yamlList | last }}", "bonjour tout le monde"),
    ('{{ fromYaml "" }} {{ fromYamlArray "" }}', "map[] []"),
    (
        '{{ dict "foo" (dict "bar" (dict "bool" true "number" 2 "str" "Hello world")) | toYaml | indent 2 }}',
        "  foo:\n    bar:\n      bool: true\n      number: 2\n      str: Hello world",
    ),
    ('{{ dict "s" "true" "e" "" "n" "1" "l" (list "a") "m" "a\\nb" | toYaml }}', 'e: ""\nl:\n- a\nm: |-\n  a\n  b\n"n": "1"\ns: "true"'),
    ('{{ dict "e" "1e3" "h" "0x1F" "d" "-.5" "w" "1e3x" "v" "v1.2" | toYaml }}', 'd: "-.5"\ne: "1e3"\nh: "0x1F"\nv: v1.2\nw: 1e3x'),
    ("{{ toYaml .none }}|{{ list (dict \"a\" 1 \"b\" (list 1 2)) | toYaml }}", "null|- a: 1\n  b:\n  - 1\n  - 2"),
    # toYaml and fromYaml: what sigs.k8s.io/yaml v1.4.0 wrote and read (sprig-expected.json)
    ('{{ dict "on" 1 "yes" 2 "1" 3 "~" 4 "null" 5 "a b" 6 "x:y" 7 "-k" 8 | toYaml }}', '-k: 8\n"~": 4\n"1": 3\na b: 6\n"null": 5\n"on": 1\nx:y: 7\n"yes": 2'),
    ('{{ list "null" "~" "" " lead" "trail " "- x" "a: b" "#c" "@x" "`x" "*x" "&x" "!x" "%x" "x #y" "[x]" "{x}" "," "?" | toYaml }}', '- "null"\n- "~"\n- ""\n- \' lead\'\n- \'trail \'\n- \'- x\'\n- \'a: b\'\n- \'#c\'\n- \'@x\'\n- \'`x\'\n- \'*x\'\n- \'&x\'\n- \'!x\'\n- \'%x\'\n- \'x #y\'\n- \'[x]\'\n- \'{x}\'\n- \',\'\n- \'?\''),
    ('{{ list .long | toYaml }}', '- word word word word word word word word word word word word word word word word\n  word word word word end'),
    ('{{ dict "l" .lines "t" .trail "u" .uni "tab" .tabs | toYaml }}', 'l: |\n  a\n  b\nt: "a \\nb"\ntab: "a\\tb"\nu: héllo ✓'),
    ('{{ list 1.5 0.1 1e21 1e-7 100000000.0 -0.0 3.0 | toYaml }}', '- 1.5\n- 0.1\n- 1e+21\n- 1e-07\n- 100000000\n- 0\n- 3'),
    ('{{ list (list) (dict) (list (list 1)) (dict "a" (list (dict "b" 1))) | toYaml }}', '- []\n- {}\n- - - 1\n- a:\n  - b: 1'),
    ('{{ list true false nil | toYaml }}', '- true\n- false\n- null'),
    ('{{ fromYaml "a: &x 1\\nb: *x\\n" | toJson }}', '{"a":1,"b":1}'),
    ('{{ fromYamlArray "- 1\\n- a: b\\n" | toJson }}', '[1,{"a":"b"}]'),
    ('{{ fromYaml "key: value\\n---\\nother: doc" | toJson }}', '{"key":"value"}'),
    ('{{ toYaml (fromYaml "z: 1\\na: [3, 2]") }}', 'a:\n- 3\n- 2\nz: 1'),
    # dicts (sprig dict_test.go)
    ('{{$d := dict 1 2 "three" "four" 5}}{{range $k, $v := $d}}{{$k}}{{$v}}{{end}}', "125threefour"),
    ('{{$t := dict "I" "shot" "the" "albatross"}}{{$t.the}} {{$t.I}}', "albatross shot"),
    ('{{ dict "foo" 1 "bar" 2 | keys | sortAlpha }} {{ dict | keys }}', "[bar foo] []"),
    ('{{ keys (dict "foo" 1) (dict "bar" 2) (dict "bar" 3) | uniq | sortAlpha }}', "[bar foo]"),
    ('{{- $d := dict "one" 1 "two" 222222 }}{{ pick $d "two" }} {{ omit $d "one" }}', "map[two:222222] map[two:222222]"),
    ('{{- $d := dict "one" 1 "two" "2" }}{{ get $d "two" }}[{{ get $d "x" }}]', "2[]"),
    ('{{- $d := dict "a" 1 }}{{ $_ := set $d "b" 2 }}{{ $d }} {{ unset $d "a" }} {{ hasKey $d "b" }}', "map[a:1 b:2] map[b:2] true"),
    ('{{ pluck "a" (dict "a" 1) (dict "b" 2) (dict "a" 3) }}', "[1 3]"),
    ('{{- $d := dict "a" 1 "b" 2 }}{{ values $d | sortAlpha | join "," }}', "1,2"),
    ('{{- $one := dict "foo" (dict "bar" "baz") "qux" true -}}{{ deepCopy $one }}', "map[foo:map[bar:baz] qux:true]"),
    ('{{- $d := dict "a" (dict "b" (dict "c" 1)) }}{{ dig "a" "b" "c" "" $d }} {{ dig "a" "b" "z" "2" $d }}', "1 2"),
    ('{{ dict "a" 1 | dig "a" "" }} {{ dict "a" 1 | dig "z" "2" }}', "1 2"),
    (
        '{{ $dst := dict "a" 1 "e" "" "n" (dict "x" 1) }}{{ merge $dst (dict "a" 2 "b" 3 "e" "f" "n" (dict "x" 2 "y" 3)) }}',
        "map[a:1 b:3 e:f n:map[x:1 y:3]]",
    ),
    (
        '{{ $dst := dict "a" 1 "k" "keep" "n" 1 }}{{ mergeOverwrite $dst (dict "a" 2 "b" 3 "k" "" "n" nil) }}',
        "map[a:2 b:3 k: n:<nil>]",
    ),
    # lists (sprig list_test.go)
    ('{{$t := tuple 1 "a" "foo"}}{{index $t 2}}{{index $t 0 }}{{index $t 1}}', "foo1a"),
    ("{{ $t := tuple 1 2 3 4 }}{{ append $t 5 | join \"-\" }} {{ prepend $t 0 | join \"-\" }}", "1-2-3-4-5 0-1-2-3-4"),
    ('{{ $t := regexSplit "/" "foo/bar/baz" -1 }}{{ append $t "qux" | join "-" }}', "foo-bar-baz-qux"),
    ("{{ tuple 1 2 3 4 5 6 7 | chunk 3 | len }} {{ tuple | chunk 3 | len }}", "3 0"),
    ('{{ range ( tuple 1 2 3 4 5 6 7 8 | chunk 3 ) }}{{. | join "-"}}|{{end}}', "1-2-3|4-5-6|7-8|"),
    ("{{ list 1 2 3 | first }} {{ list | first }} {{ list 1 2 3 | last }} {{ list | last }}", "1 <no value> 3 <no value>"),
    ('{{ regexSplit "/src/" "foo/src/bar" -1 | first }}', "foo"),
    ("{{ list 1 2 3 | initial }} {{ list | initial }} {{ list 1 2 3 | rest }} {{ list 1 2 | reverse }}", "[1 2] [] [2 3] [2 1]"),
    ("{{ .list | uniq }} {{ without .list \"a\" }} {{ has \"c\" .list }} {{ has 1 .list }}", "[b a c] [b c] true false"),
    ('{{ list 1 "" nil 0 "x" false | compact }}', "[1 x]"),
    ("{{ slice (list 1 2 3 4) 1 3 }} {{ slice (list 1 2 3) 1 }} {{ concat (list 1) (list 2 3) }}", "[2 3] [2 3] [1 2 3]"),
    # regular expressions (sprig regex_test.go), Go's Expand and FindAll rules
    ('{{ regexMatch "[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\\\.[A-Za-z]{2,}" "Test@Acme.Com" }}', "true"),
    ('{{ regexMatch "^[a-z]+$" "test.com" }} {{ regexMatch "(" "x" }}', "false false"),
    ('{{ regexFindAll "a{2}" "aaaa" -1 | len }} {{ regexFindAll "a{2}" "aaaaaaaa" 1 | len }}', "2 1"),
    ('{{ regexFind "fo.?" "foo foe fome" }}|{{ regexFind "fo.?" "none" }}', "foo|"),
    ('{{ regexFindAll "a*" "baaac" -1 | toJson }}', '["","aaa",""]'),
    ('{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }}', "-W-xxW-"),
    ('{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "$1W" }}', "---"),
    ('{{ regexReplaceAll "(?P<first>\\\\w+) (?P<last>\\\\w+)" "Jane Doe" "$last, $first $$" }}', "Doe, Jane $"),
    ('{{ regexReplaceAllLiteral "a(x*)b" "-ab-axxb-" "${1}" }}', "-${1}-${1}-"),
    ('{{ regexReplaceAll "x*" "abc" "-" }}', "-a-b-c-"),
    ('{{ regexSplit "z+" "pizza" -1 | toJson }} {{ regexSplit "z+" "pizza" 1 | toJson }} {{ regexSplit "a" "" -1 | toJson }}', '["pi","a"] ["pizza"] [""]'),
    ('{{ regexQuoteMeta "1.5-2.0?" }} {{ regexMatch "^[[:alpha:]]+\\\\z" "abc" }}', "1\\.5-2\\.0\\? true"),
    # semverCompare (sprig semver_test.go, Masterminds/semver's rules)
    ('{{ semverCompare "1.2.3" "1.2.3" }} {{ semverCompare "^1.2.0" "1.2.3" }} {{ semverCompare "^1.2.0" "2.2.3" }}', "true true false"),
    ('{{ semverCompare ">=1.2.0 <2.0.0" "1.9.9" }} {{ semverCompare ">1.2, <1.4 || >=3" "3.1.0" }}', "true true"),
    ('{{ semverCompare "~1.2.3" "1.2.9" }} {{ semverCompare "~1.2.3" "1.3.0" }} {{ semverCompare "1.2.x" "1.2.7" }}', "true false true"),
    ('{{ semverCompare "^0.2.3" "0.2.9" }} {{ semverCompare "^0.2.3" "0.3.0" }} {{ semverCompare "*" "4.0.0" }}', "true false true"),
    ('{{ semverCompare ">=1.0.0" "1.1.0-beta.1" }} {{ semverCompare ">=1.0.0-0" "1.1.0-beta.1" }}', "false true"),
    ('{{ semverCompare "1.2 - 1.4" "1.4.0" }} {{ semverCompare "!=1.2.3" "1.2.3" }} {{ semverCompare "<1.2.3-beta.2" "1.2.3-beta.10" }}', "true false false"),
    ('{{ semverCompare "v1.x" "v1.5.0" }} {{ semverCompare ">1.2.x" "1.3.0" }} {{ semverCompare "<=1.2.x" "1.2.9" }}', "true true true"),
    # Argo CD's additions (utils_test.go)
    ('{{ normalize "Feature/My_Branch.1--" }}', "feature-my-branch.1"),
    ("{{ slugify .branch }}", "feat-a-really-long-pull-request-name-to-test-argo"),
    ('{{ slugify 50 false "feat/a_really+long_pull_request_name_to_test_argo_slugification" }}', "feat-a-really-long-pull-request-name-to-test-argo"),
    ('{{ slugify 50 true "feat/areallylongpullrequestnametotestargoslugificationandbranchnameshorteningfeature" }}', "feat"),
    ('{{ slugify 50 false "feat/areallylongpullrequestnametotestargoslugificationandbranchnameshorteningfeature" }}', "feat-areallylongpullrequestnametotestargoslugifica"),
    ('{{ slugify 20 true "Hello.World Again" }}', "hello-world-again"),
    # dates: deterministic given the time
    ('{{ date "2006-01-02T15:04:05Z07:00 Jan Mon 3PM .000" 0 }}', "1970-01-01T00:00:00Z Jan Thu 12AM .000"),
    ('{{ htmlDate 86400 }} {{ now | typeOf }}', "1970-01-02 time.Time"),
    ("{{ typeIs \"string\" .path.basename }} {{ kindIs \"map\" .labels }} {{ kindOf .list }} {{ deepEqual (list 1) (list 1) }}", "true true slice true"),
]  # fmt: skip


# data as generators give it (numbers are float64: a list or git-files generator's JSON)
WILD: dict[str, Any] = {
    "path": {"path": "apps/My_App/", "basename": "My_App"}, "name": "prod-eu-1", "branch": "",
    "labels": {"env": "prod", "team": "ops"}, "replicas": 3.0, "ratio": 2.5, "version": "1.4.2",
    "list": ["a", "", "b"], "a": None, "b": "bee", "uni": "héllo",
}  # fmt: skip
WILD_CASES = [  # shaped like real ApplicationSet templates; each output is sprig's
    ('{{ .path.basename | replace "_" "-" | lower | trunc 63 | trimSuffix "-" }}', 'my-app'),
    ('{{ default "main" .branch }} {{ .branch | default "main" }}', 'main main'),
    ('{{ hasPrefix "prod" .name | ternary "a" "b" }}', 'a'),
    ('{{ splitList "/" .path.path | last }}|{{ (split "-" .name)._0 }}|{{ (split "-" .name)._9 }}', '|prod|<no value>'),
    ('{{ .labels | toJson | b64enc }}', 'eyJlbnYiOiJwcm9kIiwidGVhbSI6Im9wcyJ9'),
    ('{{ dig "labels" "env" "x" . }} {{ dig "labels" "nope" "x" . }}', 'prod x'),
    ('{{ printf "%s-%d" .name (len .list) }}', 'prod-eu-1-3'),
    ('{{ regexReplaceAll "[^a-z0-9-]" (lower .path.basename) "-" }}', 'my-app'),
    ('{{ if has "prod" (list "prod" "staging") }}yes{{ end }}', 'yes'),
    ('{{ join "," (keys .labels | sortAlpha) }}', 'env,team'),
    ('{{ add .replicas 1 }} {{ mul .ratio 2 }} {{ int .ratio }} {{ .ratio | int64 | toString }} {{ toString .ratio }}', '4 4 2 2 2.5'),
    ('{{ float64 .replicas }} {{ round .ratio 0 }} {{ quote .replicas }} {{ .replicas | toString | quote }}', '3 3 "3" "3"'),
    ('{{ semverCompare ">=1.2" .version }} {{ semverCompare "~1.3" .version }}', 'true false'),
    ('{{ trimAll "/" .path.path }} {{ base .path.path }} {{ dir .path.path }} {{ .path.path | clean }}', 'apps/My_App My_App apps/My_App apps/My_App'),
    ('{{ sha256sum .name | trunc 8 }} {{ urlquery .path.path }}', 'c228ff7d apps%2FMy_App%2F'),
    ('{{ nindent 4 (toYaml .labels) }}', '\n    env: prod\n    team: ops'),
    ('{{ get .labels "env" }} {{ coalesce .a .b "z" }} {{ empty .list }}', 'prod bee false'),
    ('{{ list .a .b "" "c" | compact | join "-" }} {{ cat "a" nil "b" }}', 'bee-c a b'),
    ('{{ title .name }} {{ substr 0 3 .name }} {{ trunc 3 .uni }} {{ upper .uni }}', 'Prod-Eu-1 pro hé HÉLLO'),
    ('{{ max .replicas 7 }} {{ min .ratio 1 }} {{ maxf .ratio 1 }} {{ div 7 .ratio }}', '7 1 2.5 3'),
    ('{{ eq .replicas 3.0 }} {{ lt .ratio 3.0 }}', 'true true'),
    ('{{ printf "%v %.1f %d" .replicas .ratio (int .replicas) }}', '3 2.5 3'),
    ('{{ toJson .replicas }} {{ toJson .ratio }} {{ toPrettyJson .list }}', '3 2.5 [\n  "a",\n  "",\n  "b"\n]'),
    ('{{ range $i, $e := .list }}{{ if $e }}{{ $i }}={{ $e }};{{ end }}{{ end }}', '0=a;2=b;'),
    ('{{ $parts := splitList "-" .name }}{{ index $parts 1 }}/{{ len $parts }}', 'eu/3'),
    ('{{ until 3 | toJson }} {{ seq 3 }} {{ list 3 1 2 | sortAlpha | toJson }}', '[0,1,2] 1 2 3 ["1","2","3"]'),
    ('{{ .labels | values | sortAlpha | join "+" }} {{ pluck "env" .labels | first }}', 'ops+prod prod'),
    ('{{ without .list "" | toJson }} {{ uniq (list 1 1.0 "1" 1) | toJson }}', '["a","b"] [1,1,"1"]'),
    ('{{ typeOf .replicas }} {{ kindOf .labels }} {{ typeOf (list) }} {{ typeOf (dict) }} {{ typeOf nil }}', 'float64 map []interface {} map[string]interface {} <nil>'),
    ('{{ regexFind "[0-9]+" .name }} {{ regexFindAll "[a-z]+" .name 2 | toJson }} {{ regexSplit "-" .name -1 | toJson }}', '1 ["prod","eu"] ["prod","eu","1"]'),
    ('{{ mustRegexReplaceAll "(?P<env>\\\\w+)-(?P<rest>.*)" .name "${rest}.${env}" }}', 'eu-1.prod'),
    ('{{ b64dec "!!!" }} {{ b64enc "é" }}', 'illegal base64 data at input byte 0 w6k='),
    ('{{ indent 2 "a\\n\\nb" | toJson }}', '"  a\\n  \\n  b"'),
    ('{{ squote .replicas .a "x" }} {{ quote .a .b }}', '\'3\' \'x\' "bee"'),
    ('{{ atoi "012" }} {{ int "012" }} {{ int64 "0x10" }} {{ int "1e3" }} {{ float64 "1e3" }} {{ int "-7.0" }}', '12 10 16 0 1000 -7'),
    ('{{ toDecimal "777" }} {{ toDecimal 777 }}', '511 511'),
]  # fmt: skip


@pytest.mark.parametrize(("template", "expected"), WILD_CASES, ids=[c[0][:60] for c in WILD_CASES])
def test_template_of_the_wild_renders_as_sprig_does(template: str, expected: str) -> None:
    assert render(template, WILD) == expected


@pytest.mark.parametrize(("template", "expected"), CASES, ids=[c[0][:60] for c in CASES])
def test_function_renders_as_sprig_does(template: str, expected: str) -> None:
    assert render(template, DATA) == expected


ERRORS = [
    ("{{ upper 3 }}", "line 1, col 10: expected string; found 3"),
    ("{{ upper .replicas }}", "line 1, col 10: wrong type for value; expected string; got int"),
    ("{{ upper .missing }}", "line 1, col 10: invalid value; expected string"),
    ("{{ .x | trunc 2 }}", "invalid value; expected string"),
    ("{{ .ratio | trunc 2 .x }}", "line 1, col 13: wrong number of args for trunc: want 2 got 3"),
    ("{{ trunc .ratio .path.basename }}", "line 1, col 10: wrong type for value; expected int; got float64"),
    ("{{ trunc (add 1 1) .path.basename }}", "expected int; got int64"),
    ('{{ fail "stop here" }}', "line 1, col 4: error calling fail: stop here"),
    ('{{ fail "two\\nlines" }}', "error calling fail: two\\nlines"),
    ("{{ div 1 0 }}", "error calling div: runtime error: integer divide by zero"),
    ('{{ first "abc" }}', "error calling first: Cannot find first on type string"),
    ('{{ mustRegexMatch "(" "x" }}', "error calling mustRegexMatch: error parsing regexp: "),
    ('{{ semverCompare "badConstraint" "1.2.3" }}', "improper constraint: badConstraint"),
    ('{{ semverCompare "1.2.0" "badVersion" }}', "Invalid Semantic Version"),
    ("{{ fromYaml .yamlList }}", "cannot unmarshal array into Go value of type map[string]interface {}"),
    ('{{ fromYaml "non\\n compliant\\n yaml" }}', "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string"),
    ('{{ fromYamlArray "a: b" }}', "cannot unmarshal object into Go value of type []interface {}"),
    ('{{ mustFromJson "{" }}', "error calling mustFromJson: "),
    ('{{ env "HOME" }}', 'line 1, col 4: function "env" not defined (Argo CD removes it from sprig)'),
    ('{{ "x" | expandenv }}', 'function "expandenv" not defined'),
    ('{{ getHostByName "example.com" }}', 'function "getHostByName" not defined'),
    ('{{ genCA "x" 365 }}', "function \"genCA\" is not supported by gitdrift's goTemplate"),
    ("{{ slugify 5 }}", "error calling slugify: interface conversion: interface {} is int, not string"),
]  # fmt: skip


@pytest.mark.parametrize(("template", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_bad_call_is_one_line_naming_the_cause(template: str, message: str) -> None:
    with pytest.raises(TemplateError) as raised:
        render(template, DATA)
    assert message in raised.value.message
    assert "\n" not in raised.value.message
    assert raised.value.exit_code > 1


def test_argo_cd_removes_exactly_env_expandenv_and_get_host_by_name() -> None:
    assert {"env", "expandenv", "getHostByName"} == REMOVED
    assert not REMOVED & FUNCS.keys()
    assert not UNSUPPORTED & FUNCS.keys()
    for name in ("toYaml", "fromYaml", "fromYamlArray", "normalize", "slugify"):
        assert name in FUNCS


def _sprig_merge_data() -> dict[str, Any]:
    """The maps of sprig's TestMerge and TestMergeOverwrite (dict_test.go)."""
    return {
        "src2": {"h": 10, "i": "i", "j": "j"},
        "src1": {
            "a": 1,
            "b": 2,
            "d": {"e": "four"},
            "g": [6, 7],
            "i": "aye",
            "j": "jay",
            "k": {"l": False},
        },
        "dst": {"a": "one", "c": 3, "d": {"f": 5}, "g": [8, 9], "i": "eye", "k": {"l": True}},
    }


def test_merge_as_sprig_tests_it() -> None:
    data = _sprig_merge_data()
    render("{{ merge .dst .src1 .src2 }}", data)
    assert data["dst"] == {
        "a": "one", "b": 2, "c": 3, "d": {"e": "four", "f": 5}, "g": [8, 9], "h": 10,
        "i": "eye", "j": "jay", "k": {"l": True},
    }  # fmt: skip


def test_merge_overwrite_as_sprig_tests_it() -> None:
    data = _sprig_merge_data()
    render("{{ mergeOverwrite .dst .src1 .src2 }}", data)
    assert data["dst"] == {
        "a": 1, "b": 2, "c": 3, "d": {"e": "four", "f": 5}, "g": [6, 7], "h": 10,
        "i": "i", "j": "j", "k": {"l": False},
    }  # fmt: skip


def test_merge_changes_its_first_map_as_mergo_does() -> None:
    data: dict[str, Any] = {"base": {"a": 1}, "extra": {"b": 2}}
    assert render("{{ merge .base .extra }}|{{ .base }}", data) == "map[a:1 b:2]|map[a:1 b:2]"


# every name of sprig v3.3.0's GenericFuncMap (functions.go), as Argo CD starts from it
SPRIG_NAMES = """
abbrev abbrevboth add add1 add1f addf adler32sum ago all any append atoi b32dec b32enc b64dec
b64enc base bcrypt biggest buildCustomCert camelcase cat ceil chunk clean coalesce compact concat
contains date dateInZone dateModify date_in_zone date_modify decryptAES deepCopy deepEqual default
derivePassword dict dig dir div divf duration durationRound empty encryptAES env expandenv ext fail
first float64 floor fromJson genCA genCAWithKey genPrivateKey genSelfSignedCert
genSelfSignedCertWithKey genSignedCert genSignedCertWithKey get getHostByName has hasKey hasPrefix
hasSuffix hello htmlDate htmlDateInZone htpasswd indent initial initials int int64 isAbs join
kebabcase keys kindIs kindOf last list lower max maxf merge mergeOverwrite min minf mod mul mulf
mustAppend mustChunk mustCompact mustDateModify mustDeepCopy mustFirst mustFromJson mustHas
mustInitial mustLast mustMerge mustMergeOverwrite mustPrepend mustPush mustRegexFind
mustRegexFindAll mustRegexMatch mustRegexReplaceAll mustRegexReplaceAllLiteral mustRegexSplit
mustRest mustReverse mustSlice mustToDate mustToJson mustToPrettyJson mustToRawJson mustUniq
mustWithout must_date_modify nindent nospace now omit osBase osClean osDir osExt osIsAbs pick
pluck plural prepend push quote randAlpha randAlphaNum randAscii randBytes randInt randNumeric
regexFind regexFindAll regexMatch regexQuoteMeta regexReplaceAll regexReplaceAllLiteral
regexSplit repeat replace rest reverse round semver semverCompare seq set sha1sum sha256sum
sha512sum shuffle slice snakecase sortAlpha split splitList splitn squote sub subf substr swapcase
ternary title toDate toDecimal toJson toPrettyJson toRawJson toString toStrings trim trimAll
trimPrefix trimSuffix trimall trunc tuple typeIs typeIsLike typeOf uniq unixEpoch unset until
untilStep untitle upper urlJoin urlParse uuidv4 values without wrap wrapWith
""".split()  # noqa: SIM905
TEXT_TEMPLATE_NAMES = (
    "and call html index js len not or print printf println urlquery eq ge gt le lt ne slice"
)


def test_every_function_argo_cd_offers_is_implemented_or_refused_by_name() -> None:
    offered = set(SPRIG_NAMES) - REMOVED | set(TEXT_TEMPLATE_NAMES.split())
    offered |= {"normalize", "slugify", "toYaml", "fromYaml", "fromYamlArray"}
    assert offered - FUNCS.keys() == UNSUPPORTED
    assert FUNCS.keys() <= offered
    for name in sorted(UNSUPPORTED):
        with pytest.raises(TemplateError, match=f'function "{name}" is not supported'):
            render("{{ " + name + " }}", {})


def test_random_functions_render_something_new_each_time() -> None:
    """Argo CD renders them too: an Application using one changes on every reconcile."""
    template = "{{ uuidv4 }} {{ randAlphaNum 12 }} {{ randNumeric 4 }} {{ randInt 3 7 }}"
    first, second = render(template, {}), render(template, {})
    assert first != second
    uid, alnum, digits, number = first.split()
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", uid)
    assert re.fullmatch(r"[A-Za-z0-9]{12}", alnum)
    assert re.fullmatch(r"[0-9]{4}", digits)
    assert 3 <= int(number) < 7


def test_docs_example_slugify_after_cat() -> None:
    data = {"branch": "Feature/Add_Login+Page for-the/new-UI"}
    assert render("{{ cat .branch | slugify 23 }}", data) == "feature-add-login-page"
    assert render("{{ cat .branch | slugify 23 false }}", data) == "feature-add-login-page"
    assert render('{{ initials "First Try" }} {{ swapcase "aBc" }}', {}) == "FT AbC"


# ---------------------------------------------------------------- sprig's own answers

SPRIG: list[dict[str, Any]] = json.loads(
    (TESTDATA / "appsets" / "gotemplate" / "sprig-expected.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("case", SPRIG, ids=lambda case: case["template"][:60])
def test_render_gives_what_sprig_gives(case: dict[str, Any]) -> None:
    """sprig-expected.json: Go 1.19 with sprig v3.3.0 rendered these (sprig_cases.py)."""
    if "output" in case:
        assert render(case["template"], case["data"]) == case["output"]
        return
    with pytest.raises(TemplateError) as raised:
        render(case["template"], case["data"])
    cause = re.search(
        r"(error calling \w+|function \"\w+\" not defined|expected \w+|"
        r"wrong number of args for \w+|invalid value|wrong type for value)",
        case["error"],
    )
    assert cause, case["error"]
    assert cause[1] in raised.value.message


def test_the_expectations_written_here_are_sprigs() -> None:
    for cases, data in ((CASES, DATA), (WILD_CASES, WILD)):
        written = dict(cases)
        answered = [c for c in SPRIG if c["data"] == data and c["template"] in written]
        assert len(answered) > len(cases) // 2
        for case in answered:
            assert written[case["template"]] == case.get("output"), case["template"]
