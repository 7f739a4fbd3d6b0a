"""Progress of long work (renders, LISTs, compares) on stderr: an edge of the CLI.

Three displays share one protocol (`workflow.Progress`): `start(phase, total)` begins a phase of
counted items, `advance(item)` marks one done (from any thread, in any order), and a call with a
message reports a step without a count ("connected to ...").

- `Live`: one line at a terminal, redrawn in place and erased at the end, e.g.
  `gitdrift: rendering  17/24 ██████▋    0:12 elapsed, eta 0:05  argocd/app-07`
  (tqdm, imported when the first step arrives: runs that show nothing never load it).
- `Lines`: plain, stable lines for logs (`--progress=always` off a terminal), one per step:
  `gitdrift: rendering 17/24 argocd/app-07`.
- `Silent`: nothing.

While a display is open, everything else written to stderr goes through `stream`, so a warning
appears above the live line instead of through it. `choose` is where the CLI's flag and the
terminal meet.
"""

from __future__ import annotations

import functools
import io
import threading
import time
from typing import TYPE_CHECKING, Any, TextIO, cast

if TYPE_CHECKING:
    from types import TracebackType

    from typing_extensions import Self

__all__ = ["MODES", "Lines", "Live", "Silent", "choose"]

MODES = ("auto", "always", "never")


class Silent:
    """Shows nothing."""

    def __init__(self, err: TextIO) -> None:
        self.err = err

    @property
    def stream(self) -> TextIO:
        """Where the rest of stderr goes while this display is open."""
        return self.err

    def __call__(self, message: str) -> None:
        """A step without a count."""

    def start(self, phase: str, total: int) -> None:
        """A phase of `total` items begins."""

    def advance(self, item: str = "") -> None:
        """One item of the current phase is done."""

    def close(self) -> None:
        """The work is over: leave nothing of the display behind."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Lines(Silent):
    """One plain line per step: for CI logs, stable and greppable."""

    def __init__(self, err: TextIO) -> None:
        super().__init__(err)
        self._lock = threading.Lock()
        self._phase, self._total, self._done = "", 0, 0

    def _line(self, text: str) -> None:
        self.err.write(f"gitdrift: {text}\n")
        self.err.flush()

    def __call__(self, message: str) -> None:
        with self._lock:
            self._line(message)

    def start(self, phase: str, total: int) -> None:
        with self._lock:
            self._phase, self._total, self._done = phase, total, 0

    def advance(self, item: str = "") -> None:
        with self._lock:
            self._done += 1
            self._line(f"{self._phase} {self._done}/{self._total} {item}".rstrip())


class Live(Silent):
    """One line at a terminal: the phase, items done of total, a bar, the run's elapsed time,
    the phase's ETA and the last item; redrawn in place (carriage return) at most 10 times a
    second and at least twice, and erased by `close`."""

    TICK = 0.5  # seconds between redraws while nothing happens (the clock keeps moving)

    def __init__(self, err: TextIO) -> None:
        super().__init__(err)
        self._t0 = time.monotonic()
        self._lock = threading.RLock()
        self._bar: Any = None  # a tqdm, from the first step on
        self._ticker: threading.Thread | None = None
        self._stop = threading.Event()
        self._stream = cast(TextIO, _Above(self))

    @property
    def stream(self) -> TextIO:
        return self._stream

    def __call__(self, message: str) -> None:
        self._show(message, None)

    def start(self, phase: str, total: int) -> None:
        self._show(phase, total)

    def advance(self, item: str = "") -> None:
        with self._lock:
            bar = self._bar
            if bar is None:
                return
            bar.item = item
            bar.update(1)

    def _show(self, phase: str, total: int | None) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            if self._bar is not None:
                self._bar.close()
            self._bar = _bar(self.err, phase, total, self._t0)
            if self._ticker is None:
                self._ticker = threading.Thread(target=self._tick, daemon=True)
                self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(self.TICK):
            with self._lock:
                if self._bar is not None:
                    self._bar.refresh()

    def write_above(self, text: str) -> None:
        """Write `text` to stderr above the live line (erase it, write, draw it again)."""
        with self._lock:
            bar = self._bar
            if bar is None:
                self.err.write(text)
                return
            bar.clear()
            self.err.write(text)
            self.err.flush()
            bar.refresh()

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            if self._bar is not None:
                self._bar.close()  # leave=False: erases the line
                self._bar = None
            self.err.flush()


class _Above(io.TextIOBase):
    """stderr while a Live display is open: writes land above the live line."""

    def __init__(self, live: Live) -> None:
        self._live = live

    def write(self, text: str) -> int:
        self._live.write_above(text)
        return len(text)

    def flush(self) -> None:
        self._live.err.flush()

    def isatty(self) -> bool:
        return True


_COUNTED = (
    "gitdrift: {desc} {n_fmt:>{width}}/{total_fmt} {bar:12} {run} elapsed, eta {remaining}  {item}"
)
_UNCOUNTED = "gitdrift: {desc}  {run} elapsed"


def _bar(err: TextIO, phase: str, total: int | None, t0: float) -> Any:
    return _bar_class()(
        total=total,
        desc=phase,
        file=err,
        leave=False,  # erased when closed
        dynamic_ncols=True,  # follows the terminal's width; longer lines are cut
        mininterval=0.1,
        bar_format=_COUNTED if total is not None else _UNCOUNTED,
        t0=t0,
    )


@functools.cache
def _bar_class() -> type[Any]:
    from tqdm import tqdm

    class Bar(tqdm):  # type: ignore[type-arg]
        """tqdm with the run's elapsed time and the last item in its format."""

        monitor_interval = 0  # Live redraws on its own clock: no tqdm monitor thread

        def __init__(self, *args: Any, t0: float, **kwargs: Any) -> None:
            self.t0 = t0  # when the run started (the line shows the run's elapsed time)
            self.item = ""  # the last item done
            super().__init__(*args, **kwargs)

        @property
        def format_dict(self) -> dict[str, Any]:
            values = dict(super().format_dict)
            values["run"] = tqdm.format_interval(time.monotonic() - self.t0)
            values["item"] = self.item
            values["width"] = len(str(self.total or ""))
            return values

    return Bar


def choose(mode: str, err: TextIO, *, terminal: bool) -> Silent:
    """The display for `--progress=MODE`: at a capable terminal (`terminal`, decided by the CLI)
    `auto` and `always` show the live line; elsewhere `always` writes plain lines and `auto`
    nothing."""
    if mode == "never":
        return Silent(err)
    if terminal:
        return Live(err)
    return Lines(err) if mode == "always" else Silent(err)
