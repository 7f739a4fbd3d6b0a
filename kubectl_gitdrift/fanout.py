"""Runs one function over many items in forked worker processes, yielding results in order.

The engine is pure Python: threads take turns on one core. Forked children share the parent's
loaded state (the snapshot, the renders, the live index) copy-on-write, so only an item's index
goes to a worker and only its result (pickled) comes back. Linux only, and only from the main
thread while every other thread is a daemon (a fork copies one thread, and a lock another
thread held stays held in the child: the daemons here are our own progress ticker, the serve
exporter's HTTP threads and a cluster loop already stopped, none of whose locks a worker takes,
and a worker writes through stdio objects of its own); anywhere else `processes` answers 1 and
the caller runs the items itself.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import selectors
import signal
import struct
import sys
import threading
import warnings
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any, TypeVar

from kubectl_gitdrift.errors import GitDriftError

T = TypeVar("T")
R = TypeVar("R")

MIN_ITEMS_PER_PROCESS = 16
"""Below this many items per worker a fork does not pay for itself."""

_TASK = struct.Struct("<Q")  # the first index of a run of `chunk` items
_FRAME = struct.Struct("<BQQ")  # kind, item index, size of the pickled payload that follows
_STARTED, _ANSWERED, _FAILED = 0, 1, 2
_MAX_TASKS = 4096  # task records that fit a pipe's buffer (64 KiB) with room to spare


def processes(items: int, limit: int) -> int:
    """How many worker processes to run `items` in: 1 means "in this process".

    At most one per usable core and `limit`, at least MIN_ITEMS_PER_PROCESS items each."""
    if sys.platform != "linux" or not hasattr(os, "fork"):
        return 1
    if threading.current_thread() is not threading.main_thread() or not all(
        t.daemon for t in threading.enumerate() if t is not threading.main_thread()
    ):
        return 1  # e.g. a render pool still running: its locks would stay held in a worker
    cores = len(os.sched_getaffinity(0))
    return max(1, min(cores, limit, items // MIN_ITEMS_PER_PROCESS))


def imap(
    fn: Callable[[T], R],
    items: Sequence[T],
    workers: int,
    describe: Callable[[T], str] = str,
) -> Generator[R, None, None]:
    """`fn(item)` for each item, in order: the first here, the rest by `workers` forked
    children. What the first call loads on first use (schemas, per-kind plans, memoized
    answers) is then inherited by every worker instead of built again in each.

    An exception raised by `fn` in a child is raised here (the first one; the other workers
    are stopped). A child that dies (a signal, os._exit) raises GitDriftError naming the item.
    Closing the iterator early stops and reaps every child."""
    if not items:
        return
    yield fn(items[0])
    rest = items[1:]
    pool = _Pool(fn, rest, workers)
    finished = False
    try:
        yield from pool.results(describe)
        finished = True
    finally:
        pool.close(kill=not finished)


class _Pool:
    """Workers forked over one task pipe, filled and closed before the first fork: a worker
    takes the next task when it is free, and never waits for the parent (which may be busy, or
    off the CPU, on a loaded machine). Each worker answers on a pipe of its own."""

    def __init__(self, fn: Callable[[Any], Any], items: Sequence[Any], workers: int) -> None:
        self.items = items
        self.pids: list[int] = []
        self.results_fd: list[int] = []  # parent's read end of each worker's result pipe
        chunk = max(1, -(-len(items) // _MAX_TASKS))
        tasks_r, tasks_w = os.pipe()
        try:
            os.write(tasks_w, b"".join(_TASK.pack(i) for i in range(0, len(items), chunk)))
        finally:
            os.close(tasks_w)  # workers read to the end, then stop
        gc.freeze()  # keep the collector from touching (and so copying) inherited pages
        try:
            for _ in range(workers):
                result_r, result_w = os.pipe()
                with warnings.catch_warnings():  # 3.12+ warns of any other thread: see above
                    warnings.simplefilter("ignore", DeprecationWarning)
                    pid = os.fork()
                if pid == 0:  # pragma: no cover (the child; coverage cannot follow os._exit)
                    code = 70
                    try:
                        for fd in (*self.results_fd, result_r):
                            os.close(fd)
                        _child(fn, items, chunk, tasks_r, result_w)
                        code = 0
                    finally:
                        os._exit(code)
                os.close(result_w)
                self.pids.append(pid)
                self.results_fd.append(result_r)
        finally:
            os.close(tasks_r)

    def results(self, describe: Callable[[Any], str]) -> Iterator[Any]:
        buffers = [bytearray() for _ in self.pids]
        working: list[int | None] = [None for _ in self.pids]  # the item each worker is on
        done: dict[int, Any] = {}
        emitted = 0
        with selectors.DefaultSelector() as sel:
            for worker, fd in enumerate(self.results_fd):
                sel.register(fd, selectors.EVENT_READ, worker)
            while emitted < len(self.items):
                if not sel.get_map():
                    raise GitDriftError(f"the worker processes stopped after {emitted} items")
                for selected, _ in sel.select():
                    worker = selected.data
                    data = os.read(selected.fd, 1 << 20)
                    if not data:
                        sel.unregister(selected.fd)
                        item = working[worker]
                        if item is not None:
                            raise self._died(worker, describe(self.items[item]))
                        continue
                    buffers[worker] += data
                    for kind, index, value in _frames(buffers[worker]):
                        if kind == _STARTED:
                            working[worker] = index
                        elif kind == _FAILED:
                            raise value
                        else:
                            working[worker] = None
                            done[index] = value
                while emitted in done:
                    yield done.pop(emitted)
                    emitted += 1

    def _died(self, worker: int, item: str) -> GitDriftError:
        _, status = os.waitpid(self.pids[worker], 0)
        self.pids[worker] = 0
        if os.WIFSIGNALED(status):
            how = f"was killed by {signal.Signals(os.WTERMSIG(status)).name}"
        else:
            how = f"exited with code {os.waitstatus_to_exitcode(status)}"
        return GitDriftError(
            f"a worker process {how} while comparing {item}",
            hint="run it again with KUBECTL_GITDRIFT_WORKERS=1 to compare in one process",
        )

    def close(self, kill: bool) -> None:
        """Reap every worker (each stops at the end of the task pipe); `kill` them first when
        results are still owed (an error, or the caller stopped reading)."""
        for fd in self.results_fd:
            with contextlib.suppress(OSError):
                os.close(fd)
        for pid in self.pids:
            if not pid:
                continue
            if kill:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _frames(buffer: bytearray) -> Iterator[tuple[int, int, Any]]:
    """Complete (kind, index, value) frames at the start of `buffer`, removed as read."""
    while len(buffer) >= _FRAME.size:
        kind, index, size = _FRAME.unpack_from(buffer)
        end = _FRAME.size + size
        if len(buffer) < end:
            return
        value = None
        if kind != _STARTED:
            try:
                value = pickle.loads(memoryview(buffer)[_FRAME.size : end])
            except Exception as exc:  # noqa: BLE001 (e.g. an exception that cannot be rebuilt)
                kind, value = (
                    _FAILED,
                    GitDriftError(f"a worker's answer could not be read: {exc!r}"),
                )
        del buffer[:end]
        yield kind, index, value


def _child(
    fn: Callable[[Any], Any], items: Sequence[Any], chunk: int, tasks: int, results: int
) -> None:
    """A worker's life: take the next task (`chunk` items from an index) from the shared pipe,
    say which item it starts, answer (pickled: the value, or the exception raised), until the
    pipe is empty. Nothing of the parent's (stdio objects, atexit, signal handlers) runs here."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the whole process group goes
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # Never the parent's stdio objects: another thread may have held their locks at the fork,
    # and the report on stdout is the parent's alone. A warning or a crash still reaches fd 2.
    sys.stdin = sys.stdout = open(os.devnull, "r+", encoding="utf-8")  # noqa: PTH123, SIM115
    sys.stderr = open(  # noqa: SIM115
        2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False
    )
    with os.fdopen(results, "wb") as outbox:
        while True:
            raw = os.read(tasks, _TASK.size)  # unbuffered: a task read is a task taken
            if not raw:
                return
            (first,) = _TASK.unpack(raw)
            for index in range(first, min(first + chunk, len(items))):
                outbox.write(_FRAME.pack(_STARTED, index, 0))
                outbox.flush()
                try:
                    answer: tuple[int, Any] = (_ANSWERED, fn(items[index]))
                except Exception as exc:  # noqa: BLE001 (handed to the parent, which raises it)
                    answer = (_FAILED, exc)
                try:
                    data = pickle.dumps(answer[1], protocol=pickle.HIGHEST_PROTOCOL)
                except Exception as exc:  # noqa: BLE001 (an unpicklable result or exception)
                    fallback = GitDriftError(f"a worker could not send its answer: {exc!r}")
                    answer = (_FAILED, fallback)
                    data = pickle.dumps(fallback, protocol=pickle.HIGHEST_PROTOCOL)
                outbox.write(_FRAME.pack(answer[0], index, len(data)))
                outbox.write(data)
                outbox.flush()
