"""The default ApplicationSet template syntax: `{{ param }}` replaced from flat string params,
as Argo CD's `Render.Replace` does it with valyala/fasttemplate (applicationset/utils/utils.go).

- A string is templated only when some one line of it holds `{{` followed later by `}}` (Argo CD's
  `.*{{.*}}.*`, whose `.` does not cross a newline); any other string is returned as it is, even
  one with an unclosed `{{`.
- A templated string is cut at each `{{` and the first `}}` after it (fasttemplate's tags do not
  nest: `{{ {{a}} }}` has the tag ` {{a`); a `{{` with no `}}` after it is an error.
- A tag is its text with the white space around it trimmed; it is replaced by the param of that
  exact name when that param is a string. Any other tag (an unknown param, a param that is not a
  string, an empty tag) is written back as it was, `{{` and `}}` included.

Params are flat: the generators give dotted names (`path.basename`, `metadata.labels.env`,
`values.region`); nothing here looks inside a mapping.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubectl_gitdrift.appsets.inputs import AppSetError

START = "{{"
END = "}}"
_TEMPLATED = re.compile(r"\{\{.*\}\}")  # Go's regexp: `.` stops at a newline, as re's does


def is_templated(text: str) -> bool:
    """Whether Argo CD runs fasttemplate on `text` at all."""
    return _TEMPLATED.search(text) is not None


def render(text: str, params: Mapping[str, Any]) -> str:
    """`text` with each `{{ name }}` whose param is a string replaced by it.

    Raises AppSetError ("invalid template: ...") for a `{{` that no `}}` follows, in a string
    Argo CD templates."""
    if not is_templated(text):
        return text
    out: list[str] = []
    rest = text
    while True:
        start = rest.find(START)
        if start < 0:
            out.append(rest)
            break
        out.append(rest[:start])
        rest = rest[start + len(START) :]
        end = rest.find(END)
        if end < 0:
            raise AppSetError(
                f"invalid template {_short(text)}: cannot find end tag {END!r} after {_short(rest)}"
            )
        tag = rest[:end]
        rest = rest[end + len(END) :]
        name = tag.strip()
        value = params.get(name) if name else None
        out.append(value if isinstance(value, str) else START + tag + END)
    return "".join(out)


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
