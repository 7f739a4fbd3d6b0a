// Renders kubectl-gitdrift's goTemplate cases with Go's text/template (no sprig).
// Input: a JSON list of {"name","template","data","options"}; output: the same cases, each with
// Go's "output" or "error" (see ../cases.py).
package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"text/template"
)

// funcs are text/template's builtins alone, or sprig's (sprig.go, built with -tags sprig).
var funcs = template.FuncMap{}

type tcase struct {
	Name     string          `json:"name"`
	Template string          `json:"template"`
	Data     json.RawMessage `json:"data"`
	Options  []string        `json:"options"`
}

// convert turns json.Number into int (when integral) or float64, as YAML->Python gives.
func convert(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = convert(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = convert(e)
		}
		return x
	case json.Number:
		s := string(x)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := x.Int64(); err == nil {
				return int(i)
			}
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

func main() {
	raw, _ := os.ReadFile(os.Args[1])
	var cases []tcase
	if err := json.Unmarshal(raw, &cases); err != nil {
		panic(err)
	}
	out := []map[string]any{}
	for _, c := range cases {
		dec := json.NewDecoder(bytes.NewReader(c.Data))
		dec.UseNumber()
		var data any
		if len(c.Data) > 0 {
			if err := dec.Decode(&data); err != nil {
				panic(err)
			}
		}
		data = convert(data)
		res := map[string]any{"name": c.Name, "template": c.Template, "data": json.RawMessage(c.Data)}
		if len(c.Options) > 0 {
			res["options"] = c.Options
		}
		t := template.New("t").Funcs(funcs)
		for _, o := range c.Options {
			t = t.Option(o)
		}
		p, err := t.Parse(c.Template)
		if err != nil {
			res["error"] = err.Error()
		} else {
			var buf bytes.Buffer
			if err := p.Execute(&buf, data); err != nil {
				res["error"] = err.Error()
			} else {
				res["output"] = buf.String()
			}
		}
		out = append(out, res)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(out)
}
