"""The baselines' lease (THEMIS §6.2: "All baselines are evaluated ... with f = 0.8 and lease = 10
minutes"): a queue scheduler's running job is not preempted before its lease ends.

Rule (:class:`Leased`, a wrapper around any queue scheduler's order): a job that starts or resumes at
a decision at t holds leases [t, t + lease), [t + lease, t + 2 lease), ...: at the decision that
takes a lease end (the first point of the decision grid at or after it, ``grid`` s apart) it may be
preempted like any other job, and if it keeps running its next lease goes on (a lease renews when
the job keeps running at its end). Each decision's queue puts the
running jobs inside a lease first (in the scheduler's own order among them), then every other job in
the scheduler's order: a sticky placement policy (``packed-sticky``, Tiresias') keeps their GPUs, and
no job placed after them can take those GPUs. ``next_change`` reports the next lease end while some
job waits (with nobody waiting, a lease end changes nothing: the job renews), so the driver decides
there. A job that migrates keeps its leases. Starts happen only at decisions, and ``order`` is called
at every decision of a queue scheduler: a job running now that was not running at the previous
call started at that call's time.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Leased"]

_EPS = 1e-9


class Leased:
    """``scheduler``'s order with the running jobs of unexpired leases first (module docstring);
    ``lease`` seconds (> 0), ``grid``: the driver's decision grid (its tick, else its round; s).
    Every other attribute is the scheduler's."""

    def __init__(self, scheduler, lease: float, grid: float):
        self.inner = scheduler
        self.lease, self.grid = float(lease), float(grid)
        self._t = -np.inf  # time of the previous order() call
        self._run: np.ndarray | None = None  # jobs running in the view of that call (mask)
        self._start: np.ndarray | None = None  # per job: start of its current holding (nan: none)

    @property
    def name(self) -> str:
        return self.inner.name

    def __getattr__(self, attr):  # summary_extra, last_shares, ...: the scheduler's own
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def _starts(self, view) -> np.ndarray:
        """Start of each job's current holding as of ``view`` (a copy): a job running in it that
        was not running at the previous call started then; jobs not running hold none (nan)."""
        run = np.asarray(view.running, bool)
        start: np.ndarray
        prev: np.ndarray
        if self._start is None or self._run is None or self._start.size != run.size:
            start, prev = np.full(run.size, np.nan), np.zeros(run.size, bool)
        else:
            start, prev = self._start.copy(), self._run
        start[run & ~prev] = self._t if np.isfinite(self._t) else view.t
        start[~run] = np.nan
        return start

    def _last_end(self, start: np.ndarray, t: float) -> np.ndarray:
        """The last lease end start + k lease <= ``t`` of each holding (k >= 1; nan: none yet)."""
        k = np.floor((t - start) / self.lease + _EPS)
        return np.where(k >= 1, start + k * self.lease, np.nan)

    def order(self, view) -> np.ndarray:
        start = self._starts(view)
        base = np.asarray(self.inner.order(view))
        # a lease ended within the last grid step: this decision may preempt the job
        ended = self._last_end(start[base], view.t) > view.t - self.grid + _EPS  # nan: False
        keep = np.isfinite(start[base]) & ~ended
        self._start, self._run, self._t = (
            start,
            np.asarray(view.running, bool).copy(),
            float(view.t),
        )
        return np.concatenate([base[keep], base[~keep]])

    def next_change(self, view) -> float:
        own = np.inf
        if np.count_nonzero(~np.asarray(view.running, bool)[view.active]):  # some job waits
            start = self._starts(view)
            held = start[np.isfinite(start)]
            if held.size:  # the next lease end after t
                k = np.floor((view.t - held) / self.lease + _EPS) + 1.0
                own = float((held + k * self.lease).min())
        return min(float(self.inner.next_change(view)), own)
