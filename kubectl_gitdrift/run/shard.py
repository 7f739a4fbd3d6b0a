"""`--shard K/N`: a stable partition of Applications over N workers (an Indexed Job's pods).

An Application belongs to shard `sha256("namespace/name") mod N`: the same on every machine and
run, whatever order the cluster lists apps in, so N workers with K = 0..N-1 take disjoint parts
that together cover every app, and an app keeps its shard while others come and go.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from kubectl_gitdrift.errors import UsageError

#: A sane upper bound for N (an Indexed Job's completions are far below it in practice).
MAX_SHARDS = 10_000


@dataclass(frozen=True, slots=True)
class Shard:
    index: int  # K, 0-based like JOB_COMPLETION_INDEX
    count: int  # N

    def owns(self, namespace: str, name: str) -> bool:
        return shard_of(namespace, name, self.count) == self.index


def parse(text: str) -> Shard:
    """`K/N` with 0 <= K < N; the flag's value, checked with a message naming it."""
    index_text, sep, count_text = text.partition("/")
    try:
        index, count = int(index_text), int(count_text)
    except ValueError:
        index, count = -1, 0
    if not sep or count < 1 or count > MAX_SHARDS or not 0 <= index < count:
        raise UsageError(
            f"--shard {text}: expected K/N with 0 <= K < N (for example 0/4)",
            hint="in an Indexed Job: --shard $(JOB_COMPLETION_INDEX)/<completions>",
        )
    return Shard(index, count)


def shard_of(namespace: str, name: str, count: int) -> int:
    digest = hashlib.sha256(f"{namespace}/{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % count


def select(names: Sequence[tuple[str, str]], shard: Shard) -> list[int]:
    """Indexes of the (namespace, name) pairs this shard owns, in their order."""
    return [i for i, (namespace, name) in enumerate(names) if shard.owns(namespace, name)]
