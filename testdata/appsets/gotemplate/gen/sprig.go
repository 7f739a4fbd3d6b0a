//go:build sprig

// With -tags sprig the cases run with sprig v3.3.0's GenericFuncMap less what Argo CD deletes
// (env, expandenv, getHostByName), plus Argo CD's own functions (argo.go). go.mod then needs sprig: see ../sprig_cases.py.
package main

import "github.com/Masterminds/sprig/v3"

func init() {
	funcs = sprig.GenericFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	delete(funcs, "getHostByName")
	addArgo(funcs)
}
