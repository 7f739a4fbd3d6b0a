"""The sources edge: an Application's git source(s) → desired Manifests, rendered locally.

`render.render` is the entry point: `git` and `fetch` find the commit a source renders from,
`render` decides its type and hands one `context.RenderContext` to that type's renderer
(`directory`, whose `*.jsonnet` files `jsonnet` evaluates; `kustomize`; `helm`, with charts
pulled by `charts`; `cmp` for config management plugins). The renderers share only leaves
(`buildenv`, `tools`, `globs`, `process`, `cache`), never each other. `locate` finds the file and
line that set a desired field. This package and `live` are the only places that do I/O; only
`sources` runs processes (git, kustomize/kubectl, helm, plugins).
"""

from __future__ import annotations
