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

import collections
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

_FRAME = struct.Struct("<Q")
_TASK = struct.Struct("<Q")
_IN_FLIGHT = 2  # tasks queued per worker, so it never waits for the parent between two items


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
    """`fn(item)` for each item, in order, computed by `workers` forked children.

    An exception raised by `fn` in a child is raised here (the first one; the other workers
    are stopped). A child that dies (a signal, os._exit) raises GitDriftError naming the item.
    Closing the iterator early stops and reaps every child."""
    pool = _Pool(fn, items, workers)
    finished = False
    try:
        yield from pool.results(describe)
        finished = True
    finally:
        pool.close(kill=not finished)


class _Pool:
    def __init__(self, fn: Callable[[Any], Any], items: Sequence[Any], workers: int) -> None:
        self.items = items
        self.pids: list[int] = []
        self.tasks: list[int] = []  # parent's write end of each worker's task pipe
        self.results_fd: list[int] = []  # parent's read end of each worker's result pipe
        gc.freeze()  # keep the collector from touching (and so copying) inherited pages
        for _ in range(workers):
            task_r, task_w = os.pipe()
            result_r, result_w = os.pipe()
            with warnings.catch_warnings():  # 3.12+ warns of any other thread: see above
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
            if pid == 0:  # pragma: no cover (the child; coverage cannot follow os._exit)
                code = 70
                try:
                    for fd in (*self.tasks, *self.results_fd, task_w, result_r):
                        os.close(fd)
                    _child(fn, items, task_r, result_w)
                    code = 0
                finally:
                    os._exit(code)
            os.close(task_r)
            os.close(result_w)
            self.pids.append(pid)
            self.tasks.append(task_w)
            self.results_fd.append(result_r)

    def results(self, describe: Callable[[Any], str]) -> Iterator[Any]:
        pending: list[collections.deque[int]] = [collections.deque() for _ in self.pids]
        buffers = [bytearray() for _ in self.pids]
        done: dict[int, Any] = {}
        upcoming = iter(range(len(self.items)))
        emitted = 0
        with selectors.DefaultSelector() as sel:
            for worker, fd in enumerate(self.results_fd):
                sel.register(fd, selectors.EVENT_READ, worker)
                for _ in range(_IN_FLIGHT):
                    self._send(worker, upcoming, pending[worker])
            while emitted < len(self.items):
                for selected, _ in sel.select():
                    worker = selected.data
                    chunk = os.read(selected.fd, 1 << 20)
                    if not chunk:
                        sel.unregister(selected.fd)
                        if pending[worker]:
                            raise self._died(worker, describe(self.items[pending[worker][0]]))
                        continue
                    buffers[worker] += chunk
                    for ok, value in _frames(buffers[worker]):
                        index = pending[worker].popleft()
                        if not ok:
                            raise value
                        done[index] = value
                        self._send(worker, upcoming, pending[worker])
                while emitted in done:
                    yield done.pop(emitted)
                    emitted += 1

    def _send(self, worker: int, upcoming: Iterator[int], pending: collections.deque[int]) -> None:
        """The next item's index to `worker`, if any is left (a worker stops at the end of its
        task pipe, when `close` closes it)."""
        index = next(upcoming, None)
        if index is not None:
            pending.append(index)
            with contextlib.suppress(BrokenPipeError):  # it died: its result pipe says so next
                os.write(self.tasks[worker], _TASK.pack(index))

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
        """Close the pipes (an idle worker then exits) and reap every worker; `kill` first
        when results are still owed (an error, or the caller stopped reading)."""
        for fd in (*self.tasks, *self.results_fd):
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


def _frames(buffer: bytearray) -> Iterator[tuple[bool, Any]]:
    """Complete (ok, value) frames at the start of `buffer`, removed from it as they are read."""
    while len(buffer) >= _FRAME.size:
        (size,) = _FRAME.unpack_from(buffer)
        end = _FRAME.size + size
        if len(buffer) < end:
            return
        try:
            ok, value = pickle.loads(memoryview(buffer)[_FRAME.size : end])
        except Exception as exc:  # noqa: BLE001 (e.g. an exception class that cannot be rebuilt)
            ok, value = False, GitDriftError(f"a worker's answer could not be read: {exc!r}")
        del buffer[:end]
        yield ok, value


def _child(fn: Callable[[Any], Any], items: Sequence[Any], tasks: int, results: int) -> None:
    """A worker's life: read an index, answer with (True, fn(item)) or (False, the exception),
    until told to stop or the parent goes away. Nothing of the parent's (stdio buffers, atexit,
    signal handlers) runs here."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the whole process group goes
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # Never the parent's stdio objects: another thread may have held their locks at the fork,
    # and the report on stdout is the parent's alone. A warning or a crash still reaches fd 2.
    sys.stdin = sys.stdout = open(os.devnull, "r+", encoding="utf-8")  # noqa: PTH123, SIM115
    sys.stderr = open(  # noqa: SIM115
        2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False
    )
    with os.fdopen(tasks, "rb") as inbox, os.fdopen(results, "wb") as outbox:
        while True:
            raw = inbox.read(_TASK.size)
            if len(raw) < _TASK.size:
                return  # the parent closed the pipe: no more work
            (index,) = _TASK.unpack(raw)
            try:
                answer: tuple[bool, Any] = (True, fn(items[index]))
            except Exception as exc:  # noqa: BLE001 (handed to the parent, which raises it)
                answer = (False, exc)
            try:
                data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # noqa: BLE001 (an unpicklable result or exception)
                fallback = GitDriftError(f"a worker could not send its answer: {exc!r}")
                data = pickle.dumps((False, fallback), protocol=pickle.HIGHEST_PROTOCOL)
            outbox.write(_FRAME.pack(len(data)))
            outbox.write(data)
            outbox.flush()
