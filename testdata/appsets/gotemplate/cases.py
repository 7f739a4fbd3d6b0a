"""The text/template cases checked against Go: templates, data, options.

Regenerate go-expected.json (Go's own answers) where Go is installed:
    python3 cases.py /tmp/cases.json && (cd gen && go run . /tmp/cases.json) > go-expected.json
gen/main.go runs Go's text/template alone (no sprig), numbers decoded as int or float64 as the
YAML a generator reads gives them. tests/appsets/test_gotemplate.py compares render() with it.
"""

# ruff: noqa: E501

import json
import sys
from pathlib import Path

APP = {
    "path": {
        "path": "apps/guestbook",
        "basename": "guestbook",
        "basenameNormalized": "guestbook",
        "segments": ["apps", "guestbook"],
    },
    "name": "in-cluster",
    "server": "https://kubernetes.default.svc",
    "metadata": {"labels": {"env": "prod", "team": "a"}, "annotations": {}},
    "values": {
        "replicas": 3,
        "ratio": 1.5,
        "big": 1000000.0,
        "small": 0.00001,
        "zero": 0,
        "on": True,
        "off": False,
        "none": None,
        "empty": "",
        "list": [],
        "map": {},
    },
    "clusters": [{"name": "a", "env": "dev"}, {"name": "b", "env": "prod"}],
    "text": "<a href='x'>&\"é\n",
}
CASES = [
    # actions, text, trim markers, comments
    ("plain", "hello", {}),
    ("field", "{{ .path.basename }}", APP),
    ("field-chain", "{{.metadata.labels.env}}-{{ .path.path }}", APP),
    ("trim", "a  {{- .name -}}  \n b", APP),
    ("trim-left-only", "a \n {{- .name }} b", APP),
    ("trim-right-only", "a {{ .name -}} \n\t b", APP),
    ("comment", "a{{/* a comment */}}b", APP),
    ("comment-trim", "a \n{{- /* x */ -}}\n b", APP),
    ("newline-in-action", '{{ .name\n | printf "%s!" }}', APP),
    ("dot-root", "{{ . }}", {"b": 2, "a": "x"}),
    ("dot-in-string", '{{ "{{ not an action }}" }}', {}),
    # printing values
    ("print-int", "{{ .values.replicas }}", APP),
    (
        "print-floats",
        "{{ .values.ratio }} {{ .values.big }} {{ .values.small }} {{ 1e21 }} {{ 123456.0 }} {{ 1234567.0 }} {{ 0.1 }} {{ -2.5e-7 }}",
        APP,
    ),
    ("print-bools", "{{ .values.on }} {{ .values.off }} {{ true }}", APP),
    ("print-nil-value", "{{ .values.none }}", APP),
    ("print-missing", "{{ .nothere }}", APP),
    ("print-missing-chain", "{{ .nothere.deeper }}", APP),
    ("print-map", "{{ .metadata }}", APP),
    ("print-list", "{{ .path.segments }} {{ .clusters }}", APP),
    ("print-nested-nil", "{{ .v }}", {"v": [None, {"a": None}, [1, 2.5]]}),
    ("print-empty", "[{{ .values.empty }}] {{ .values.list }} {{ .values.map }}", APP),
    (
        "print-constants",
        "{{ 3 }} {{ -3 }} {{ 0x1F }} {{ 0o17 }} {{ 017 }} {{ 1_000 }} {{ 'a' }} {{ 1.0 }} {{ 1e3 }}",
        {},
    ),
    ("print-strings", '{{ "a\\tb\\u00e9\\x41" }}|{{ `raw\\n` }}', {}),
    # missingkey
    ("missing-default-option", "{{ .nothere }}", APP, ["missingkey=default"]),
    ("missing-invalid-option", "{{ .nothere }}", APP, ["missingkey=invalid"]),
    ("missing-zero", "{{ .nothere }}", APP, ["missingkey=zero"]),
    ("missing-zero-chain", "{{ .nothere.deeper }}", APP, ["missingkey=zero"]),
    ("missing-error", "{{ .nothere }}", APP, ["missingkey=error"]),
    ("missing-error-deep", "x {{ .metadata.labels.region }}", APP, ["missingkey=error"]),
    ("missing-error-null-ok", "{{ .values.none }}", APP, ["missingkey=error"]),
    ("missing-error-in-if", "{{ if .nothere }}y{{ end }}", APP, ["missingkey=error"]),
    ("missing-error-index", '{{ index .metadata.labels "region" }}', APP, ["missingkey=error"]),
    ("nil-chain", "{{ .values.none.x }}", APP),
    ("field-of-string", "{{ .name.x }}", APP),
    ("field-of-list", "{{ .clusters.x }}", APP),
    # variables
    ("var-declare", "{{ $x := .name }}{{ $x }}", APP),
    ("var-assign", "{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}", {}),
    ("var-scope", "{{ $x := 1 }}{{ if true }}{{ $x := 2 }}{{ $x }}{{ end }}{{ $x }}", {}),
    ("var-root", "{{ range .clusters }}{{ $.name }}/{{ .name }} {{ end }}", APP),
    ("var-fields", "{{ $m := .metadata }}{{ $m.labels.env }}", APP),
    ("var-missing", "{{ $x := .nothere }}{{ $x }}", APP),
    ("var-undefined", "{{ $y }}", {}),
    # if / else
    ("if-else", "{{ if .values.on }}on{{ else }}off{{ end }}", APP),
    (
        "if-elseif",
        "{{ if .values.off }}a{{ else if .values.zero }}b{{ else if .name }}c{{ else }}d{{ end }}",
        APP,
    ),
    (
        "if-truth",
        "{{ if .values.list }}1{{ end }}{{ if .values.map }}2{{ end }}{{ if .values.empty }}3{{ end }}{{ if .values.none }}4{{ end }}{{ if .values.ratio }}5{{ end }}{{ if .clusters }}6{{ end }}{{ if 0.0 }}7{{ end }}",
        APP,
    ),
    ("if-decl", "{{ if $v := .name }}{{ $v }}{{ end }}", APP),
    # with
    ("with", "{{ with .metadata.labels }}{{ .env }}{{ end }}", APP),
    ("with-else", "{{ with .nothere }}x{{ else }}none{{ end }}", APP),
    ("with-decl", "{{ with $l := .metadata.labels }}{{ $l.team }}{{ .env }}{{ end }}", APP),
    # range
    ("range-list", "{{ range .path.segments }}[{{ . }}]{{ end }}", APP),
    ("range-index", "{{ range $i, $c := .clusters }}{{ $i }}:{{ $c.name }} {{ end }}", APP),
    ("range-one-var", "{{ range $c := .clusters }}{{ $c.env }} {{ end }}", APP),
    (
        "range-map-sorted",
        "{{ range $k, $v := .m }}{{ $k }}={{ $v }},{{ end }}",
        {"m": {"zeta": 1, "alpha": 2, "Beta": 3, "_x": 4, "10": 5, "9": 6}},
    ),
    ("range-map-values", "{{ range .m }}{{ . }},{{ end }}", {"m": {"b": 1, "a": 2}}),
    ("range-else", "{{ range .values.list }}x{{ else }}empty{{ end }}", APP),
    ("range-missing", "{{ range .nothere }}x{{ else }}empty{{ end }}", APP),
    ("range-nil", "{{ range .values.none }}x{{ else }}empty{{ end }}", APP),
    (
        "range-break",
        '{{ range .path.segments }}{{ if eq . "guestbook" }}{{ break }}{{ end }}{{ . }}{{ end }}',
        APP,
    ),
    (
        "range-continue",
        "{{ range $i, $v := .path.segments }}{{ if eq $i 0 }}{{ continue }}{{ end }}{{ $v }}{{ end }}",
        APP,
    ),
    ("range-string", "{{ range .name }}x{{ end }}", APP),
    ("range-scope-vars", "{{ range .path.segments }}{{ $x := . }}{{ $x }}{{ end }}", APP),
    (
        "range-dot-root",
        '{{ range .clusters }}{{ if eq .env "prod" }}{{ $.server }}{{ end }}{{ end }}',
        APP,
    ),
    # define / template / block
    (
        "define-template",
        '{{ define "n" }}<{{ .name }}>{{ end }}{{ template "n" . }}{{ template "n" .clusters }}',
        APP,
    ),
    ("template-nodata", '{{ define "n" }}[{{ . }}]{{ end }}{{ template "n" }}', APP),
    (
        "template-root-var",
        '{{ define "n" }}{{ $.name }}{{ end }}{{ template "n" (index .clusters 1) }}',
        APP,
    ),
    ("block", '{{ block "b" .name }}({{ . }}){{ end }}', APP),
    ("block-redefined", '{{ define "b" }}override{{ end }}{{ block "b" . }}default{{ end }}', APP),
    ("template-missing", '{{ template "nope" }}', {}),
    # comparisons
    ("eq-multi", '{{ eq .name "a" "in-cluster" }} {{ eq 1 2 3 }} {{ eq .values.replicas 3 }}', APP),
    ("eq-float-int", "{{ eq .values.ratio 1 }}", APP),
    ("eq-missing", '{{ eq .nothere "x" }} {{ eq .values.none "x" }}', APP),
    ("ne", '{{ ne .name "x" }} {{ ne 1 1 }}', APP),
    (
        "lt-le-gt-ge",
        '{{ lt 1 2 }} {{ le 2 2 }} {{ gt "b" "a" }} {{ ge 1.5 2.5 }} {{ lt .values.replicas 5 }}',
        APP,
    ),
    ("lt-mixed", "{{ lt 1 2.5 }}", {}),
    ("lt-bool", "{{ lt true false }}", {}),
    ("lt-missing", "{{ lt .nothere 1 }}", {}),
    ("eq-map", "{{ eq .metadata .metadata }}", APP),
    # and / or / not
    (
        "and-or-values",
        '{{ and 1 "x" .name }}|{{ and 1 0 2 }}|{{ or 0 "" }}|{{ or .nothere "fallback" }}|{{ or .name .x }}',
        APP,
    ),
    ("and-short-circuit", "{{ and .values.off (index .clusters 99) }}", APP),
    ("or-short-circuit", "{{ or .values.on (index .clusters 99) }}", APP),
    ("not", "{{ not .values.on }} {{ not .nothere }} {{ not .values.list }} {{ not 0 }}", APP),
    ("and-in-if", '{{ if and .values.on (eq .name "in-cluster") }}yes{{ end }}', APP),
    # len / index
    (
        "len",
        '{{ len .path.segments }} {{ len .metadata.labels }} {{ len .name }} {{ len "é" }}',
        APP,
    ),
    ("len-int", "{{ len 3 }}", {}),
    (
        "index-list-map",
        '{{ index .path.segments 1 }} {{ index .metadata.labels "env" }} {{ index .clusters 1 "name" }}',
        APP,
    ),
    ("index-missing-key", '{{ index .metadata.labels "nope" }}', APP),
    ("index-out-of-range", "{{ index .path.segments 5 }}", APP),
    ("index-string", "{{ index .name 0 }}", APP),
    ("index-float", "{{ index .path.segments 1.0 }}", APP),
    ("index-nil", "{{ index .nothere 1 }}", APP),
    (
        "index-dotted-key",
        '{{ index .m "app.kubernetes.io/name" }}',
        {"m": {"app.kubernetes.io/name": "web"}},
    ),
    ("paren-chain", "{{ (index .clusters 0).env }}", APP),
    # pipelines
    ("pipeline", '{{ .name | printf "%s-%s" "x" }}', APP),
    ("pipeline-multi", '{{ .values.replicas | printf "%d" | len }}', APP),
    ("pipeline-paren", '{{ printf "%s/%s" (index .path.segments 0) .path.basename }}', APP),
    ("non-function-arg", "{{ .name | .server }}", APP),
    ("non-function-const", '{{ "x" 1 }}', {}),
    # print / printf / println
    ("print", '{{ print 1 2 "a" 3 "b" "c" .values.none }}', APP),
    ("println", '{{ println 1 "a" .nothere }}', APP),
    (
        "printf-verbs",
        '{{ printf "%s|%d|%v|%q|%t|%x|%X|%o|%b|%c|%U|%%" "s" 42 .metadata.labels "q\\"" true 255 255 8 5 65 65 }}',
        APP,
    ),
    (
        "printf-width",
        '{{ printf "%05d|%-5s|%5s|%+d|%x|%.2f|%8.3f|%-8.1f|%e|%g|%G" 42 "ab" "ab" 3 "hi" 3.14159 2.5 2.5 1234.5678 0.000012345 1e21 }}',
        {},
    ),
    ("printf-v-floats", '{{ printf "%v %v %v %v" 1.0 2.5 1e6 100000.0 }}', {}),
    ("printf-bad-verb", '{{ printf "%d %s %f" "x" 3 1 }}', {}),
    ("printf-missing-extra", '{{ printf "%s %s" "a" }}|{{ printf "%s" "a" 2 }}', {}),
    (
        "printf-list",
        '{{ printf "%v|%s|%d" .path.segments .path.segments .l }}',
        {**APP, "l": [1, 2]},
    ),
    ("printf-nil", '{{ printf "%v|%s|%d" .nothere .values.none nil }}', APP),
    ("printf-quote-unicode", '{{ printf "%q" .text }}', APP),
    ("printf-star", '{{ printf "%*d|%-*d|%.*f" 5 42 4 7 2 3.14159 }}', {}),
    ("printf-precision-string", '{{ printf "%.3s|%.10s|%5.1s" "abcdef" "ab" "xyz" }}', {}),
    ("printf-int-float-verbs", '{{ printf "%f %e" 3 3 }}', {}),
    # escapers
    ("html", "{{ html .text }}", APP),
    ("js", '{{ js .text }} {{ js "a=b&c" }}', APP),
    ("urlquery", '{{ urlquery .text "a b/c?d" }}', APP),
    ("escaper-missing", "{{ html .nothere }}|{{ urlquery .nothere }}|{{ js 1 2 }}", APP),
    # shaped like real ApplicationSet templates (Argo CD's docs, public repositories)
    (
        "real-name",
        "{{.namespace}}-{{.app}}",
        {"namespace": "llajas", "app": "blog"},
        ["missingkey=error"],
    ),
    (
        "real-index-label",
        '{{ index .metadata.labels "app.kubernetes.io/part-of" }}',
        {"metadata": {"labels": {"app.kubernetes.io/part-of": "shop"}}},
    ),
    ("real-segments", "{{ index .path.segments 0 }}/{{ .path.basename }}", APP),
    (
        "real-patch",
        "{{- if .autoSync }}\nspec:\n  syncPolicy:\n    automated:\n      prune: {{ .prune }}\n{{- end }}\n",
        {"autoSync": True, "prune": False},
    ),
    (
        "real-patch-off",
        "{{- if .autoSync }}\nspec:\n  syncPolicy: {}\n{{- end }}",
        {"autoSync": False},
    ),
    (
        "real-params",
        '{{- range $k, $v := .values }}\n- name: {{ $k }}\n  value: {{ printf "%q" (print $v) }}\n{{- end }}',
        {"values": {"replicas": 2, "image": "nginx:1.27", "debug": True, "ratio": 0.25}},
    ),
    (
        "real-env-switch",
        '{{ if eq .env "prod" }}main{{ else if eq .env "staging" }}release{{ else }}HEAD{{ end }}',
        {"env": "staging"},
    ),
    (
        "real-or-default",
        '{{ or .targetRevision "HEAD" }}|{{ or .namespace .name }}',
        {"name": "web", "targetRevision": ""},
    ),
    (
        "real-cluster-env",
        '{{ with index .metadata.labels "env" }}{{ . }}{{ else }}none{{ end }}',
        APP,
    ),
    (
        "real-missing-error-field",
        "{{ .cluster }}-{{ .url }}",
        {"cluster": "dev"},
        ["missingkey=error"],
    ),
    # lexer and parser corners
    ("trim-number", "a {{- 3 }} {{-3}}", {}),
    ("trim-crlf", "a \r\n{{- .x -}}\r\n b", {"x": 1}),
    ("trim-comment-left", "a {{- /* c */}} b", {}),
    ("comment-between", '{{"a"}}{{/* c */}}{{"b"}}', {}),
    ("delims-in-string", '{{ "}}" }}{{ `{{` }}', {}),
    ("unicode-field", "{{ .ünï }}", {"ünï": "ok"}),
    (
        "numbers-more",
        "{{ 1_000.5 }} {{ 0x1p-2 }} {{ 1e100 }} {{ -0.0 }} {{ 0b101 }} {{ 0X_1F }}",
        {},
    ),
    ("redeclare", "{{ $x := 1 }}{{ $x := 2 }}{{ $x }}", {}),
    ("var-out-of-scope", "{{ with $x := .a }}{{ end }}{{ $x }}", {"a": 1}),
    ("range-map-key-var", "{{ range $k, $v := . }}{{ $k }}{{ end }}", {"b": 1, "a": 2}),
    (
        "define-dollar",
        '{{ define "x" }}{{ $.v }}{{ end }}{{ template "x" .inner }}',
        {"v": "outer", "inner": {"v": "inner"}},
    ),
    ("index-nested", '{{ index . "a" "b" }}', {"a": {"b": "deep"}}),
    ("index-chain-missing", '{{ (index . "nothere").x }}', {}),
    ("not-no-args", "{{ not }}", {}),
    ("and-no-args", "{{ and }}", {}),
    ("eq-one-arg", "{{ eq 1 }}", {}),
    ("print-nil", "{{ print nil }} {{ print }}", {}),
    ("field-of-list-nested", "{{ .a.b }}", {"a": [1]}),
    (
        "printf-more",
        '{{ printf "%6.2f|%-6d|%+.1e|%x|%X|% d|%-05d|%05s|%t" 3.14159 42 12345.678 -255 "hi" 42 42 "ab" 1 }}',
        {},
    ),
    (
        "printf-s-map",
        '{{ printf "%s|%d|%q" .m .l .s }}',
        {"m": {"a": "x", "n": 1}, "l": [1, 2], "s": ["a", "b"]},
    ),
    ("printf-v-width", '{{ printf "[%5v][%-4v][%3v]" .l true 1.5 }}', {"l": [1]}),
    ("printf-d-float-list", '{{ printf "%d" .l }}', {"l": [1.5, 2]}),
    ("printf-q-int", '{{ printf "%q %q" 97 10 }}', {}),
    ("print-big-int", "{{ 9223372036854775807 }} {{ -9223372036854775808 }}", {}),
    (
        "else-chain-with",
        "{{ if false }}a{{ else if false }}b{{ else }}{{ with .x }}{{ . }}{{ end }}{{ end }}",
        {"x": "c"},
    ),
    (
        "nested-range",
        "{{ range $a := .a }}{{ range $.b }}{{ $a }}{{ . }},{{ end }}{{ end }}",
        {"a": [1, 2], "b": ["x", "y"]},
    ),
    (
        "range-break-nested",
        '{{ range .a }}{{ range $.b }}{{ if eq . "y" }}{{ break }}{{ end }}{{ . }}{{ end }}|{{ end }}',
        {"a": [1, 2], "b": ["x", "y", "z"]},
    ),
    ("err-else-twice", "{{ if true }}a{{ else }}b{{ else }}c{{ end }}", {}),
    ("err-define-nested", '{{ if true }}{{ define "x" }}{{ end }}{{ end }}', {}),
    ("err-unexpected-paren", "{{ print 1) }}", {}),
    ("err-range-three-vars", "{{ range $a, $b, $c := . }}{{ end }}", {}),
    ("err-decl-comma-if", "{{ if $a, $b := . }}{{ end }}", {}),
    ("err-template-name", "{{ template .x }}", {}),
    ("err-dot-after-const", '{{ "x".y }}', {}),
    ("err-char", "{{ 'ab' }}", {}),
    # parse errors
    ("err-unclosed", "{{ .name ", {}),
    ("err-unknown-function", "{{ nope 1 }}", {}),
    ("err-end-alone", "{{ end }}", {}),
    ("err-missing-end", "{{ if true }}x", {}),
    ("err-else-alone", "{{ else }}", {}),
    ("err-break-outside", "{{ break }}", {}),
    ("err-empty-action", "{{ }}", {}),
    ("err-empty-if", "{{ if }}x{{ end }}", {}),
    ("err-bad-number", "{{ 3x }}", {}),
    ("err-unclosed-comment", "{{/* x }}", {}),
    ("err-comment-space", "{{/* x */ }}", {}),
    ("err-unclosed-paren", "{{ (print 1 }}", {}),
    ("err-nil-command", "{{ nil }}", {}),
    ("err-wrong-args", "{{ index }}", {}),
    ("err-len-args", "{{ len 1 2 }}", {}),
    ("err-stage-const", '{{ .name | "x" }}', APP),
    ("err-bad-string", '{{ "a\\qb" }}', {}),
    ("err-line-two", "line one\n{{ .a.b.c }}", {"a": {"b": "x"}}),
    ("err-nil-arg-string", "{{ printf nil }}", {}),
]


def main() -> None:
    cases = []
    for name, template, data, *options in CASES:
        case = {"name": name, "template": template, "data": data}
        if options:
            case["options"] = options[0]
        cases.append(case)
    Path(sys.argv[1]).write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
