"""The child process that evaluates jsonnet for sources/jsonnet.py (run as a script, by path:
it imports only the standard library and go-jsonnet's bindings, so it starts fast).

Usage: ``python jsonnet_child.py REQUEST.json MAX_STACK [MAX_MEMORY]``; MAX_MEMORY (bytes) caps
the process's data segment (RLIMIT_DATA, which Go's heap counts against): past it, go-jsonnet
stops with "fatal error: runtime: cannot allocate memory". Prints a JSON list with one
``{"ok": <json text>}`` or ``{"error": <message>}`` per file, stopping at the first error.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from collections.abc import Sequence
from pathlib import Path


class Importer:
    """go-jsonnet's FileImporter (the importing file's directory, then the JPaths last first),
    confined to the repository tree."""

    def __init__(self, tree: Path, jpaths: Sequence[Path]) -> None:
        self.problem = ""  # why the last import failed, in full
        self.tree = tree.absolute()
        self.real_tree = tree.resolve()
        self.jpaths = list(jpaths)

    def __call__(self, base: str, rel: str) -> tuple[str, bytes]:
        # a long message raised here comes back garbled through the bindings: keep it aside
        if Path(rel).is_absolute():
            candidates = [Path(rel)]
        else:
            candidates = [Path(base or ".") / rel, *(p / rel for p in reversed(self.jpaths))]
        for candidate in candidates:
            path = Path(os.path.normpath(candidate.absolute()))
            if not path.is_file():
                continue
            if not (
                path.is_relative_to(self.tree) and path.resolve().is_relative_to(self.real_tree)
            ):
                self.problem = f"import {rel!r} resolves outside the repository"
                raise RuntimeError("import refused")
            return str(path), path.read_bytes()
        self.problem = (
            f"couldn't open import {rel!r}: no match locally or in the Jsonnet library paths"
        )
        raise RuntimeError("import not found")


def main(argv: Sequence[str]) -> int:
    request = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    max_stack = int(argv[1])
    if len(argv) > 2:
        limit = int(argv[2])
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    try:
        import _gojsonnet  # type: ignore[import-not-found]  # go-jsonnet's bindings, no stubs
    except ImportError:
        message = "the gojsonnet package is not installed (pip install gojsonnet)"
        json.dump([{"error": message}], sys.stdout)
        return 0
    tree = Path(request["tree"])
    results: list[dict[str, str]] = []
    for file in request["files"]:
        importer = Importer(tree, [Path(p) for p in request["jpaths"]])
        try:
            text = _gojsonnet.evaluate_file(
                file,
                max_stack=max_stack,
                ext_vars=request["ext_vars"],
                ext_codes=request["ext_codes"],
                tla_vars=request["tla_vars"],
                tla_codes=request["tla_codes"],
                import_callback=importer,
            )
        except (RuntimeError, UnicodeDecodeError) as exc:
            results.append({"error": importer.problem or str(exc)})
            break
        results.append({"ok": text})
    json.dump(results, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
