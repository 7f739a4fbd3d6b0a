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
import fcntl
import gc
import math
import os
import pickle
import selectors
import signal
import struct
import sys
import threading
import warnings
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path
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
_ANSWER_ROOM = 1 << 20  # a child's answers wait here while this process computes an item


def processes(items: int, limit: int) -> int:
    """How many processes to run `items` in, this one included: 1 means "only this one".

    At most one per usable core and `limit`, at least MIN_ITEMS_PER_PROCESS items each."""
    if sys.platform != "linux" or not hasattr(os, "fork"):
        return 1
    if threading.current_thread() is not threading.main_thread() or not all(
        t.daemon for t in threading.enumerate() if t is not threading.main_thread()
    ):
        return 1  # e.g. a render pool still running: its locks would stay held in a worker
    return max(1, min(usable_cores(), limit, items // MIN_ITEMS_PER_PROCESS))


def usable_cores(cgroup: Path = Path("/sys/fs/cgroup")) -> int:
    """The cores this process may keep busy: its CPU affinity, bounded by a CPU quota set on
    its cgroup (a container's CPU limit: v2 `cpu.max`, v1 `cpu/cpu.cfs_quota_us`), rounded up.
    A pod limited to 2 CPUs on a 64-core node forks one child, not 63 that the kernel would
    then throttle."""
    cores = len(os.sched_getaffinity(0))
    quota = _cpu_quota(cgroup)
    return max(1, min(cores, math.ceil(quota))) if quota else cores


def _cpu_quota(cgroup: Path) -> float | None:
    """CPUs' worth of time the cgroup may use per period, or None (no quota, or unreadable)."""
    with contextlib.suppress(OSError, ValueError):
        quota, period = (cgroup / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    with contextlib.suppress(OSError, ValueError):
        quota_us = int((cgroup / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = int((cgroup / "cpu" / "cpu.cfs_period_us").read_text())
        return quota_us / period_us if quota_us > 0 and period_us > 0 else None
    return None


def imap(
    fn: Callable[[T], R],
    items: Sequence[T],
    workers: int,
    describe: Callable[[T], str] = str,
    beside: Callable[[], object] | None = None,
) -> Generator[R, None, None]:
    """`fn(item)` for each item, in order, computed by `workers` processes: this one and
    `workers - 1` forked children, all taking the next item when free. `beside` is work of
    this process's own, done once the children run, before it takes items (they take more).

    This process computes the first item before forking, so what it loads on first use
    (schemas, per-kind plans, memoized answers) is inherited by every child instead of built
    again in each; and it works beside them, on pages that are its own (a child's first write
    to an inherited page copies it) with no answer to pickle.

    An exception raised by `fn` (here or in a child) is raised here; the children are then
    stopped. A child that dies (a signal, os._exit) raises GitDriftError naming its item.
    Closing the iterator early stops and reaps every child."""
    reap()
    if not items:
        return
    yield fn(items[0])
    pool = _Pool(fn, items, 1, workers - 1)
    finished = False
    try:
        if beside is not None:
            beside()
        yield from pool.results(describe)
        finished = True
    finally:
        pool.close(kill=not finished)


class _Pool:
    """Children forked over one task pipe, filled and closed before the first fork: a free
    process (a child, or this one between two answers) takes the next task itself and never
    waits for another. Each child answers on a pipe of its own."""

    def __init__(
        self, fn: Callable[[Any], Any], items: Sequence[Any], first: int, children: int
    ) -> None:
        self.fn = fn
        self.items = items
        self.pids: list[int] = []
        self.results_fd: list[int] = []  # this end of each child's result pipe
        self.chunk = max(1, -(-(len(items) - first) // _MAX_TASKS))
        self.tasks, tasks_w = os.pipe()
        try:
            os.write(
                tasks_w,
                b"".join(_TASK.pack(i) for i in range(first, len(items), self.chunk)),
            )
        finally:
            os.close(tasks_w)  # every process reads to the end, then stops
        gc.freeze()  # keep the collector from touching (and so copying) inherited pages
        for _ in range(children):
            result_r, result_w = os.pipe()
            with contextlib.suppress(OSError, AttributeError):  # room for answers while busy
                fcntl.fcntl(result_w, fcntl.F_SETPIPE_SZ, _ANSWER_ROOM)
            with warnings.catch_warnings():  # 3.12+ warns of any other thread: see above
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
            if pid == 0:  # pragma: no cover (the child; coverage cannot follow os._exit)
                code = 70
                try:
                    for fd in (*self.results_fd, result_r):
                        os.close(fd)
                    _child(fn, items, self.chunk, self.tasks, result_w)
                    code = 0
                finally:
                    os._exit(code)
            os.close(result_w)
            self.pids.append(pid)
            self.results_fd.append(result_r)

    def results(self, describe: Callable[[Any], str]) -> Iterator[Any]:
        buffers = [bytearray() for _ in self.pids]
        working: list[int | None] = [None for _ in self.pids]  # the item each child is on
        done: dict[int, Any] = {}
        emitted = 1  # the first item was computed before the pool
        mine: list[int] = []  # items of a task this process took and has not computed yet
        tasks_left = True
        with selectors.DefaultSelector() as sel:
            for child, fd in enumerate(self.results_fd):
                sel.register(fd, selectors.EVENT_READ, child)
            while emitted < len(self.items):
                if not mine and tasks_left:
                    mine = self._take()
                    tasks_left = bool(mine)
                if mine:  # work here; look at the children's answers between two items
                    index = mine.pop(0)
                    done[index] = self.fn(self.items[index])
                    timeout: float | None = 0
                elif not sel.get_map():
                    raise GitDriftError(f"the worker processes stopped after {emitted} items")
                else:
                    timeout = None  # nothing left to take: wait for the children
                for selected, _ in sel.select(timeout):
                    child = selected.data
                    data = os.read(selected.fd, 1 << 20)
                    if not data:
                        sel.unregister(selected.fd)
                        item = working[child]
                        if item is not None:
                            raise self._died(child, describe(self.items[item]))
                        continue
                    buffers[child] += data
                    for kind, index, value in _frames(buffers[child]):
                        if kind == _STARTED:
                            working[child] = index
                        elif kind == _FAILED:
                            raise value
                        else:
                            working[child] = None
                            done[index] = value
                while emitted in done:
                    yield done.pop(emitted)
                    emitted += 1

    def _take(self) -> list[int]:
        """The items of the next task in the pipe, taken by this process; none when empty."""
        raw = os.read(self.tasks, _TASK.size)
        if not raw:
            return []
        (first,) = _TASK.unpack(raw)
        return list(range(first, min(first + self.chunk, len(self.items))))

    def _died(self, child: int, item: str) -> GitDriftError:
        _, status = os.waitpid(self.pids[child], 0)
        self.pids[child] = 0
        if os.WIFSIGNALED(status):
            how = f"was killed by {signal.Signals(os.WTERMSIG(status)).name}"
        else:
            how = f"exited with code {os.waitstatus_to_exitcode(status)}"
        return GitDriftError(
            f"a worker process {how} while comparing {item}",
            hint="run it again with KUBECTL_GITDRIFT_WORKERS=1 to compare in one process",
        )

    def close(self, kill: bool) -> None:
        """Reap every child (each stops at the end of the task pipe); `kill` them first when
        results are still owed (an error, or the caller stopped reading). Children that
        answered everything and are still exiting (freeing a big address space takes the
        kernel a while) are left to `reap`, so this process goes on meanwhile."""
        for fd in (self.tasks, *self.results_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        for pid in self.pids:
            if not pid:
                continue
            if kill:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                if kill:
                    os.waitpid(pid, 0)
                elif os.waitpid(pid, os.WNOHANG) == (0, 0):
                    _exiting.append(pid)


_exiting: list[int] = []
"""Children done with their work, not reaped yet (`reap`)."""


def reap() -> None:
    """Wait for the children of earlier pools that were still exiting: before the next pool,
    and before this process leaves (cli._exit), so none is left a zombie and their CPU time
    counts as this process's children's."""
    while _exiting:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(_exiting.pop(), 0)


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
