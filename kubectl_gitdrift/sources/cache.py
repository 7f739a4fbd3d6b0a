"""A bounded on-disk cache of rendered manifests, so a second run (`--all` over a fleet) reads
renders instead of running kustomize again, and of the commit trees they were rendered from, so
it does not export them again either.

An entry is keyed by everything the render depends on: the commit rendered (its files are
immutable), the source path, the Application's tool options and build environment, the build
flags, and the identity of the kustomize binary. The working tree (`--local`) and kustomizations
that pull remote bases are never cached. Entries are JSON files in the cache directory the caller
names (Settings.cache_dir: `$KUBECTL_GITDRIFT_CACHE_DIR`, else `$XDG_CACHE_HOME/kubectl-gitdrift`,
else `~/.cache/kubectl-gitdrift`); the oldest are removed when the directory grows past its bound
(Settings.cache_max_bytes: `$KUBECTL_GITDRIFT_CACHE_MAX_MB`, default 512). A damaged or
unreadable entry is a miss; a cache directory that cannot be written is no cache.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubectl_gitdrift import settings
from kubectl_gitdrift.model import Manifest, ObjectKey

DEFAULT_MAX_BYTES = settings.DEFAULT_CACHE_MAX_MB * 1024 * 1024
FORMAT = 1
"""Bumped whenever what an entry holds, or how a render is made, changes."""

_prune_lock = threading.Lock()
_puts = 0


class CacheMiss(Exception):
    """A render asked for from the cache only (`cached_only`) is not there."""


@dataclass(frozen=True)
class RenderCache:
    """Renders kept in `directory`, pruned to `max_bytes` (least recently used first)."""

    directory: Path
    max_bytes: int = DEFAULT_MAX_BYTES

    @staticmethod
    def key(*parts: Any) -> str:
        text = json.dumps([FORMAT, *parts], sort_keys=True, default=str, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / "renders" / key[:2] / f"{key}.json"

    def get(self, key: str) -> list[Manifest] | None:
        path = self._path(key)
        try:
            entries = _loads(path.read_bytes())
            out = [Manifest(ObjectKey.of(e["body"]), e["body"], e.get("origin")) for e in entries]
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # least recently used goes first
        return out

    def put(self, key: str, manifests: list[Manifest]) -> None:
        """Store a render; one that JSON cannot hold exactly (non-string keys, …) is skipped."""
        path = self._path(key)
        entries = [{"body": m.body, "origin": m.origin} for m in manifests]
        try:
            data = json.dumps(entries, separators=(",", ":")).encode()
            if json.loads(data) != entries:
                return
        except (TypeError, ValueError):
            return
        try:
            _write(self.directory, path, data)
        except OSError:
            return
        global _puts
        with _prune_lock:
            _puts += 1
            due = _puts % 32 == 1
        if due:
            self._prune()

    def _prune(self) -> None:
        """Remove the least recently used entries while the cache is over its size bound."""
        limit = self.max_bytes
        with _prune_lock:
            files = []
            total = 0
            for entry in (self.directory / "renders").glob("*/*.json"):
                with contextlib.suppress(OSError):
                    st = entry.stat()
                    files.append((st.st_mtime, st.st_size, entry))
                    total += st.st_size
            if total <= limit:
                return
            for _, size, entry in sorted(files):
                with contextlib.suppress(OSError):
                    entry.unlink()
                    total -= size
                if total <= limit:
                    return


@dataclass(frozen=True)
class Probe(RenderCache):
    """The render cache as a render made with `cached_only` sees it, without reading it: `get`
    answers an empty render for each entry on disk and notes its key in `hits` (in the order
    asked), so the entries can be read later and elsewhere (`read`): with --all, by the process
    that compares the app. A render made through it anyway (a directory source is read even
    with `cached_only`) is stored as through the cache itself."""

    hits: list[str] = field(default_factory=list)

    def get(self, key: str) -> list[Manifest] | None:
        if not self._path(key).is_file():
            return None
        self.hits.append(key)
        return []

    def read(self) -> list[Manifest] | None:
        """The manifests of every entry hit, in order; None when one of them is gone or
        damaged since (another run's pruning): the render must then be made again."""
        out: list[Manifest] = []
        for key in self.hits:
            got = RenderCache.get(self, key)
            if got is None:
                return None
            out.extend(got)
        return out


def _loads(data: bytes) -> Any:
    """`json.loads(data)`, read by msgspec (a third faster) once it pays: the run has imported
    it (a big JSON snapshot does), has read many entries (`--all`), or this one is big; for a
    few small entries importing it would cost more than it saves. Whatever msgspec reads, json
    reads alike; what it refuses (NaN, lone surrogates, numbers json makes infinite, a BOM)
    json reads as before (tests/sources/test_cache_read.py)."""
    global _reads
    _reads += 1
    if _reads > _MSGSPEC_READS or len(data) >= _MSGSPEC_BYTES or "msgspec" in sys.modules:
        try:
            return _msgspec_decoder().decode(data)
        except (ValueError, RecursionError):  # msgspec.DecodeError, …: json decides
            pass
    return json.loads(data)


_MSGSPEC_BYTES = 1 << 20
"""An entry this big is worth importing msgspec for."""
_MSGSPEC_READS = 16
"""So are more entries than this."""
_reads = 0


@functools.cache
def _msgspec_decoder() -> Any:
    import msgspec

    return msgspec.json.Decoder()


TREES_KEPT = 4
"""Exported commit trees kept (most recently used first); older ones go once an hour old."""
_STALE_SECONDS = 3600


@dataclass(frozen=True)
class TreeCache:
    """Exported trees of commits, reused by later runs (a commit's files never change), so a
    second `--all` neither writes nor deletes the repository's files. A tree is complete once
    renamed into place; nothing ever writes into it (edited builds run on copies). A tree
    bigger than a quarter of `max_bytes` (the render cache's bound) is not kept."""

    directory: Path
    max_bytes: int = DEFAULT_MAX_BYTES

    def _root(self) -> Path:
        return self.directory / "trees"

    def get(self, sha: str) -> Path | None:
        tree = self._root() / sha
        if tree in _trees_seen:  # once per process: every app of a run asks for the same tree
            return tree
        if not tree.is_dir():
            return None
        with contextlib.suppress(OSError):
            os.utime(tree)  # least recently used goes first
        _trees_seen.add(tree)
        return tree

    def put(self, sha: str, export: Callable[[Path], object], size: int) -> Path | None:
        """Export `sha` (`size` bytes of files) with `export(dest)` and keep it; None when it is
        too big to keep beside the renders (a quarter of the bound) or the cache cannot be
        written: the caller exports into its own work directory then, once."""
        root = self._root()
        try:
            _private(self.directory)
            root.mkdir(parents=True, exist_ok=True)
            if size > self.max_bytes // 4:
                return None
            scratch = Path(tempfile.mkdtemp(dir=root, prefix=".tmp-"))
        except OSError:
            return None
        try:
            export(scratch / "tree")
            with contextlib.suppress(OSError):  # another run may have put it first
                (scratch / "tree").rename(root / sha)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        self._prune(keep=sha)
        return self.get(sha)

    def _prune(self, keep: str) -> None:
        now = time.time()
        trees = []
        for entry in self._root().iterdir():
            with contextlib.suppress(OSError):
                age = now - entry.stat().st_mtime
                if entry.name.startswith(".tmp-"):
                    if age > _STALE_SECONDS:
                        shutil.rmtree(entry, ignore_errors=True)
                elif entry.name != keep:
                    trees.append((age, entry))
        trees.sort()
        for age, entry in trees[TREES_KEPT - 1 :]:
            if age > _STALE_SECONDS:
                shutil.rmtree(entry, ignore_errors=True)


_trees_seen: set[Path] = set()


def _write(directory: Path, path: Path, data: bytes) -> None:
    """`data` into `path` (below the cache `directory`) through a temporary file and a rename:
    a reader sees the old entry or the new one, never half of one."""
    _private(directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        Path(tmp).replace(path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
        raise


def _private(directory: Path) -> None:
    """Make the cache directory readable by its owner only (renders and trees are copies of
    what git holds, Secret manifests committed to git included); an existing one is left as the
    user set it."""
    if not directory.is_dir():
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)


@dataclass(frozen=True)
class HistoryCache:
    """The last commit touching a path, as of a commit: immutable once known, so kept per
    commit (`history/<sha>.json`) and read back by later runs instead of running `git log`."""

    directory: Path

    def _path(self, sha: str) -> Path:
        return self.directory / "history" / f"{sha}.json"

    def entries(self, sha: str) -> dict[str, Any]:
        """path -> [commit, author, date, subject], or None (no commit touches it)."""
        with _history_lock:
            known = _histories.get((self.directory, sha))
            if known is None:
                try:
                    loaded = json.loads(self._path(sha).read_bytes())
                except (OSError, ValueError):
                    loaded = {}
                known = loaded if isinstance(loaded, dict) else {}
                _histories[(self.directory, sha)] = known
            return known

    def put(self, sha: str, path: str, value: list[str] | None) -> None:
        """Remember an answer; `flush` writes what was added (once per run, not per file)."""
        known = self.entries(sha)
        with _history_lock:
            known[path] = value
            _unwritten.add((self.directory, sha))

    def unwritten(self) -> dict[str, dict[str, Any]]:
        """The commits `put` added to since the last flush, with all they know, and no longer
        due here: a worker process hands them to its parent (`merge`), which writes them."""
        with _history_lock:
            due = sorted(sha for directory, sha in _unwritten if directory == self.directory)
            _unwritten.difference_update((self.directory, sha) for sha in due)
            return {sha: dict(_histories[(self.directory, sha)]) for sha in due}

    def merge(self, known: Mapping[str, Mapping[str, Any]]) -> None:
        """Take in what a worker's `unwritten` returned; `flush` writes it."""
        for sha, paths in known.items():
            for path, value in paths.items():
                self.put(sha, path, value)

    def flush(self) -> None:
        """Write the commits `put` added to since the last flush."""
        for sha, known in self.unwritten().items():
            text = json.dumps(known, sort_keys=True, separators=(",", ":")).encode()
            with contextlib.suppress(OSError):
                _write(self.directory, self._path(sha), text)


_history_lock = threading.Lock()
_histories: dict[tuple[Path, str], dict[str, Any]] = {}
_unwritten: set[tuple[Path, str]] = set()
