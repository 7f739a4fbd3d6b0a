//go:build sprig

// Argo CD's additions to sprig (applicationset/utils: normalize, slugify, toYaml, fromYaml,
// fromYamlArray), over the libraries Argo CD calls: sigs.k8s.io/yaml and gosimple/slug.
package main

import (
	"regexp"
	"strings"
	"text/template"

	"github.com/gosimple/slug"
	"sigs.k8s.io/yaml"
)

// addArgo adds them to sprig's functions (sprig.go).
func addArgo(funcs template.FuncMap) {
	funcs["normalize"] = normalize
	funcs["slugify"] = slugify
	funcs["toYaml"] = func(v any) (string, error) {
		data, err := yaml.Marshal(v)
		return strings.TrimSuffix(string(data), "\n"), err
	}
	funcs["fromYaml"] = func(s string) (map[string]any, error) {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(s), &m); err != nil {
			return nil, err
		}
		return m, nil
	}
	funcs["fromYamlArray"] = func(s string) ([]any, error) {
		a := []any{}
		if err := yaml.Unmarshal([]byte(s), &a); err != nil {
			return nil, err
		}
		return a, nil
	}
}

var invalidDNSNameChars = regexp.MustCompile("[^-a-z0-9.]")

func normalize(name string) string {
	name = invalidDNSNameChars.ReplaceAllString(strings.ToLower(name), "-")
	if len(name) > 253 {
		name = name[:253]
	}
	return strings.Trim(name, "-.")
}

// slugify takes ([maxSize int], [smartTruncate bool], name string).
func slugify(args ...any) string {
	maxSize, smart, name := 50, true, ""
	for i, arg := range args {
		switch i {
		case len(args) - 1:
			name = arg.(string)
		case 0:
			maxSize = arg.(int)
		case 1:
			smart = arg.(bool)
		}
	}
	slug.EnableSmartTruncate = smart
	slug.MaxLength = maxSize
	return slug.Make(normalize(name))
}
