"""The baselines' lease (THEMIS §6.2: "All baselines are evaluated ... with f = 0.8 and lease = 10
minutes"): a queue scheduler's running job is not preempted before its lease ends.

Rule (:class:`Leased`, a wrapper around any queue scheduler's order): a job that starts or resumes at
a decision at t holds a lease until t + ``lease``; at a decision at or after its lease end it may be
preempted like any other job, and if it keeps running it gets a new lease from that decision. Each
decision's queue puts the running jobs whose lease has not ended first (in the scheduler's own
order among them), then every other job in the scheduler's order: a sticky placement policy
(``packed-sticky``, Tiresias') keeps their GPUs, and no job placed after them can take those GPUs.
``next_change`` reports the next lease end (so the driver decides at it). A job that migrates keeps
its lease. Starts happen only at decisions, and ``order`` is called at every decision of a queue
scheduler: a job running now that was not running at the previous call started at that call's time.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Leased"]

_EPS = 1e-9


class Leased:
    """``scheduler``'s order with the running jobs of unexpired leases first (module docstring);
    ``lease`` seconds (> 0). Every other attribute is the scheduler's."""

    def __init__(self, scheduler, lease: float):
        self.inner = scheduler
        self.lease = float(lease)
        self._t = -np.inf  # time of the previous order() call
        self._run: np.ndarray | None = None  # jobs running in the view of that call (mask)
        self._end: np.ndarray | None = None  # per job: its lease end (nan: none)

    @property
    def name(self) -> str:
        return self.inner.name

    def __getattr__(self, attr):  # summary_extra, last_shares, ...: the scheduler's own
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    def _ends(self, view) -> np.ndarray:
        """Lease ends as of ``view`` (a copy): jobs running in it that were not running at the
        previous call, or whose lease had ended by then and that kept running, got a lease at the
        previous call's time; jobs not running hold none."""
        run = np.asarray(view.running, bool)
        if self._end is None or self._end.size != run.size:
            end = np.full(run.size, np.nan)
            prev = np.zeros(run.size, bool)
        else:
            end, prev = self._end.copy(), self._run
        fresh = run & (~prev | ~(end > self._t + _EPS))
        end[fresh] = self._t + self.lease if np.isfinite(self._t) else view.t + self.lease
        end[~run] = np.nan
        return end

    def order(self, view) -> np.ndarray:
        end = self._ends(view)
        self._end, self._run, self._t = end, np.asarray(view.running, bool).copy(), float(view.t)
        base = np.asarray(self.inner.order(view))
        keep = end[base] > view.t + _EPS  # nan compares False
        return np.concatenate([base[keep], base[~keep]])

    def next_change(self, view) -> float:
        end = self._ends(view)
        later = end[end > view.t + _EPS]
        own = float(later.min()) if later.size else np.inf
        return min(float(self.inner.next_change(view)), own)
