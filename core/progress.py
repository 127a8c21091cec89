"""The one progress bar of long runs (``simulate``, ``batch``, ``sweep``, ``reproduce``).

A rich bar on stderr, shown only when stderr is a terminal (never in pipes, logs or ``--json``
output). A run nested in another (a sweep inside ``reproduce``) passes the outer bar as ``enabled``
and gets a line of its own on the same display (rich allows one live display at a time)::

    with progress_bar(len(cells), "sweep", enabled=progress) as bar:
        for c in cells:
            ...
            bar.advance()
"""

from __future__ import annotations

import sys
from typing import Any, Literal


class ProgressBar:
    """A context manager with ``advance(n=1)``; does nothing when not shown."""

    def __init__(self, total: int, label: str, show: bool, parent: ProgressBar | None = None):
        self.total, self.label = int(total), label
        self._owner = parent is None
        self._rich: Any = parent._rich if parent is not None else None
        self._task: Any = None
        if self._owner and show and self.total > 0:
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
        return self._rich is not None

    def __enter__(self) -> ProgressBar:
        if self._rich is not None:
            if self._owner:
                self._rich.start()
            self._task = self._rich.add_task(self.label, total=self.total)
        return self

    def advance(self, n: int = 1) -> None:
        if self._task is not None:
            self._rich.advance(self._task, n)

    def __exit__(self, *exc) -> Literal[False]:
        if self._rich is not None and self._task is not None:
            if self._owner:
                self._rich.stop()
            else:
                self._rich.remove_task(self._task)
            self._task = None
        return False


def progress_bar(total: int, label: str, enabled: bool | ProgressBar | None = True) -> ProgressBar:
    """A bar of ``total`` steps: ``enabled`` False hides it; True / None show it when stderr is a
    terminal; a :class:`ProgressBar` nests it under that (shown) bar."""
    if isinstance(enabled, ProgressBar):
        return ProgressBar(total, label, enabled.shown, parent=enabled)
    return ProgressBar(total, label, enabled is not False and _terminal())


def _terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False
