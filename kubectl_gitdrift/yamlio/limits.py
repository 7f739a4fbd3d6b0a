"""The bounds untrusted text is held to, shared by the JSON and the YAML readers (pure).

Readers look a bound up here when they run (`limits.MAX_DEPTH`), so a test that patches it here
patches it for every reader; the package re-exports the bounds for callers. `depth_exceeds` is
the depth check of both JSON readers (json's and msgspec's).
"""

from __future__ import annotations

from typing import Any

MAX_BYTES = 64 * 1024 * 1024
"""Largest input accepted, in bytes (of the UTF-8 text)."""
MAX_ALIASES = 10_000
"""Most alias references (``*name``) one document may contain."""
MAX_EXPANDED_NODES = 1_000_000
"""Aliases may not expand a document beyond this many nodes (and 10x its written size)."""
MAX_DEPTH = 200
"""Deepest nesting of mappings/sequences accepted."""


def depth_exceeds(doc: Any) -> bool:
    """Whether a JSON document has a mapping or list below MAX_DEPTH levels of them: walked
    level by level, keeping containers only (json makes plain dicts and lists)."""
    level = [doc] if type(doc) is dict or type(doc) is list else []
    for _depth in range(MAX_DEPTH):
        level = [
            child
            for node in level
            for child in (node.values() if type(node) is dict else node)
            if type(child) is dict or type(child) is list
        ]
        if not level:
            return False
    return True
