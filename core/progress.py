"""The one progress helper of long runs (``simulate``, ``batch``, ``sweep``, ``reproduce``, ``bench``).

On a terminal: a rich bar on stderr. Elsewhere (a pipe, a log file, CI) the bar is hidden; inside
:func:`progress_lines` (the CLI's long commands: ``reproduce``, ``sweep``, ``batch``, ``bench``;
``-q`` turns it off) it prints instead one plain line on stderr per ``every`` steps (default a
tenth of the total) or per ``interval`` seconds (default 30), whichever comes first, when a step
ends: ``sweep: 12/48 (25%), 1 min 37 s elapsed, ETA 4 min 51 s`` (ETA = elapsed / done x left).
The Python API stays silent off a terminal. A run nested in another (a sweep inside
``reproduce``) passes the outer bar as ``enabled`` and gets a line of its own on the same display
(rich allows one live display at a time), or its own lines, labelled ``outer › inner``::

    with progress_bar(len(cells), "sweep", enabled=progress) as bar:
        for c in cells:
            ...
            bar.advance()
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, TextIO


@dataclass(frozen=True)
class LineSettings:
    """Plain progress lines off a terminal: at most ``interval`` seconds or ``every`` steps apart
    (``None``: a tenth of the total); ``clock`` (seconds) and ``stream`` (default stderr) can be
    replaced (tests)."""

    interval: float = 30.0
    every: int | None = None
    clock: Callable[[], float] = time.monotonic
    stream: TextIO | None = None


_LINES: ContextVar[LineSettings | None] = ContextVar("fairplace_progress_lines", default=None)


@contextmanager
def progress_lines(
    enabled: bool = True,
    *,
    interval: float = 30.0,
    every: int | None = None,
    clock: Callable[[], float] = time.monotonic,
    stream: TextIO | None = None,
) -> Iterator[None]:
    """Inside the block, bars that cannot be shown (stderr is not a terminal) print plain lines
    (:class:`LineSettings`); ``enabled`` False: none (``-q``)."""
    token = _LINES.set(LineSettings(interval, every, clock, stream) if enabled else None)
    try:
        yield
    finally:
        _LINES.reset(token)


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 12 s``, ``2 h 05 min``."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class ProgressBar:
    """A context manager with ``advance(n=1)``: a rich bar, plain lines, or nothing."""

    def __init__(
        self,
        total: int,
        label: str,
        show: bool,
        parent: ProgressBar | None = None,
        lines: LineSettings | None = None,
    ):
        self.total, self.label = int(total), label
        self._owner = parent is None
        self._rich: Any = parent._rich if parent is not None else None
        self._task: Any = None
        self._lines: LineSettings | None = lines if parent is None else parent._lines
        if parent is not None and parent._lines is not None:
            self.label = f"{parent.label} › {label}"
        if self.total <= 0 or self._rich is not None:
            self._lines = None
        self._done, self._t0, self._last = 0, 0.0, (0, 0.0)
        if self._owner and show and self.total > 0:
            self._lines = None
            # heavy: imported on use (only when a bar is shown)
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._rich = Progress(
                TextColumn("[progress.description]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(file=sys.stderr),
                transient=True,
            )

    @property
    def shown(self) -> bool:
        """A rich bar or plain lines report this run."""
        return self._rich is not None or self._lines is not None

    def __enter__(self) -> ProgressBar:
        if self._rich is not None:
            if self._owner:
                self._rich.start()
            self._task = self._rich.add_task(self.label, total=self.total)
        elif self._lines is not None:
            self._t0 = self._lines.clock()
            self._last = (0, self._t0)
            self._write(f"{self.label}: 0/{self.total} started")
        return self

    def advance(self, n: int = 1) -> None:
        if self._task is not None:
            self._rich.advance(self._task, n)
        elif self._lines is not None:
            self._done += n
            now = self._lines.clock()
            every = self._lines.every or max(1, math.ceil(self.total / 10))
            n0, t0 = self._last
            if (
                self._done - n0 >= every
                or now - t0 >= self._lines.interval
                or (self._done >= self.total)
            ):
                self._write(self.line(now))
                self._last = (self._done, now)

    def line(self, now: float) -> str:
        """``<label>: done/total (pct), <elapsed> elapsed, ETA <left>``."""
        elapsed = now - self._t0
        done, total = self._done, self.total
        pct = f"{100 * done / total:.0f}%"
        if done >= total:
            return f"{self.label}: {done}/{total} (100%) done in {duration(elapsed)}"
        eta = duration(elapsed / done * (total - done)) if done else "unknown"
        return f"{self.label}: {done}/{total} ({pct}), {duration(elapsed)} elapsed, ETA {eta}"

    def _write(self, text: str) -> None:
        stream = self._lines.stream if self._lines and self._lines.stream else sys.stderr
        try:
            stream.write(text + "\n")
            stream.flush()
        except (OSError, ValueError):  # a closed stderr: progress is not worth a failure
            pass

    def __exit__(self, *exc) -> Literal[False]:
        if self._rich is not None and self._task is not None:
            if self._owner:
                self._rich.stop()
            else:
                self._rich.remove_task(self._task)
            self._task = None
        elif self._lines is not None and self._done < self.total:
            now = self._lines.clock()
            self._write(f"{self.label}: stopped at {self._done}/{self.total} after "
                        f"{duration(now - self._t0)}")  # fmt: skip
        return False


def progress_bar(total: int, label: str, enabled: bool | ProgressBar | None = True) -> ProgressBar:
    """A bar of ``total`` steps: ``enabled`` False hides it; True / None show it when stderr is a
    terminal, else print plain lines inside :func:`progress_lines`; a :class:`ProgressBar` nests
    it under that (shown) bar."""
    if isinstance(enabled, ProgressBar):
        return ProgressBar(total, label, enabled.shown, parent=enabled)
    on = enabled is not False
    term = on and _terminal()
    return ProgressBar(total, label, term, lines=_LINES.get() if on and not term else None)


def _terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False
