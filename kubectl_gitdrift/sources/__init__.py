"""The sources edge: an Application's git source(s) → desired Manifests, rendered locally.

`render.render` is the entry point; `git` reads the local clone, `kustomize` and `directory`
render a source path, `locate` finds the file and line that set a desired field. This package and
`snapshot`/`cluster` are the only places that do I/O; only `sources` runs processes (git,
kustomize/kubectl, helm).
"""

from __future__ import annotations
