"""One time budget for a whole solve (``SolveOptions.time_limit``).

An auction's budget covers the PF solve, every leave-one-out payment solve, the tie-break and the
rounding; a placement's covers PAL's warm start and the joint MILP. The rule:

* the clock starts when the solve starts (:meth:`Budget.begin`);
* every sub-solve is started with ``time_limit`` = what is left minus a margin of
  ``min(MARGIN_FRACTION * limit, MARGIN_MAX)`` seconds, kept for the work after the last sub-solve
  (building the next model, decoding, payments, rounding);
* no new sub-solve is started once less than :data:`MIN_SOLVE` seconds are left, or less than the
  seconds it needs (``need``, its caller's estimate: a leave-one-out PF_{-i} is about the PF, whose
  first LP HiGHS cannot interrupt): its result is recorded as not solved (auctions:
  ``extra['payments_inexact']``), so the solve does not overrun its limit by a sub-solve's cost.

The clock starts after the one-time set-up (imports, building a back end: ``dispatch.setup``), and
``Solution.seconds`` reads the same clock at the end, so it reports everything the budget covered.

Sub-solves running in parallel (the leave-one-out thread pool) each get the remaining time, so the
wall time stays within the limit. Without a limit (``time_limit=None``) every sub-solve runs to
optimality. The clock is injectable (tests drive a time-out deterministically with a fake clock): it
is read once by :meth:`begin` and once per :meth:`left` / :meth:`options` call.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from .options import SolveOptions

#: share of the limit kept back for the work after the last sub-solve, capped at MARGIN_MAX seconds
MARGIN_FRACTION = 0.1
MARGIN_MAX = 0.5
#: a sub-solve is not started with less than this many seconds left
MIN_SOLVE = 1e-3


@dataclass(frozen=True)
class Budget:
    """``limit`` seconds (None = no limit) counted on ``clock`` from ``start``."""

    limit: float | None
    start: float
    clock: Callable[[], float] = time.perf_counter

    @classmethod
    def begin(cls, limit: float | None, clock: Callable[[], float] = time.perf_counter) -> Budget:
        return cls(limit, clock(), clock)

    @property
    def margin(self) -> float:
        return 0.0 if self.limit is None else min(MARGIN_FRACTION * self.limit, MARGIN_MAX)

    def left(self) -> float | None:
        """Seconds a sub-solve started now may use (None = unlimited)."""
        if self.limit is None:
            return None
        return self.limit - self.margin - (self.clock() - self.start)

    def spent(self) -> bool:
        """True once no sub-solve may start (less than :data:`MIN_SOLVE` seconds left); also the
        ``stop`` test of the work before a solve (listing and pruning bids)."""
        left = self.left()
        return left is not None and left < MIN_SOLVE

    def options(self, opts: SolveOptions, need: float = 0.0) -> SolveOptions | None:
        """``opts`` for the next sub-solve (its ``time_limit`` = what is left), or None: do not start
        it, the budget is spent (less than ``MIN_SOLVE`` or ``need`` seconds left)."""
        left = self.left()
        if left is None:
            return opts.with_(time_limit=None)
        if left < max(MIN_SOLVE, need):
            return None
        return opts.with_(time_limit=left)


def budget_for(opts: SolveOptions, budget: Budget | None = None) -> Budget:
    """The given budget, or a new one of ``opts.time_limit`` seconds starting now."""
    return budget if budget is not None else Budget.begin(opts.time_limit)
