"""The bound on decisions without progress of one simulation (:class:`StallBound`, a base class of
:class:`.contract.Contract`).

A simulation that makes no progress (no job started, finished or advanced) in ``max_stalled``
consecutive decisions spanning more than ``checkpoint + restart`` seconds (the longest a job may hold
GPUs before it progresses) raises :class:`~fairplace.core.errors.SimulationStalled` instead of
running on: a started job progresses within ``checkpoint + restart`` s unless it is moved again, so
only a decision loop that never lets a job run that long trips it.
"""

from __future__ import annotations

import numpy as np

from fairplace.core.errors import SimulationStalled

__all__ = ["MAX_STALLED", "StallBound"]

#: decisions in a row without progress before a simulation stops (:class:`SimulationStalled`)
MAX_STALLED = 1000


class StallBound:
    """:meth:`step` of :class:`.contract.Contract`: its counters (``stalled``, ``stall_since``),
    bound (``max_stalled`` decisions over more than ``grace`` s) and the names its error gives are
    the contract's (set by ``Contract.__init__``)."""

    stalled: int
    stall_since: float
    max_stalled: int
    grace: float
    allocates: bool
    sched: str
    policy: str
    queue: np.ndarray

    def step(self, progressed: bool, t: float, t_next: float, active: int) -> None:
        """After the decision at ``t`` and the interval up to ``t_next``: stop a simulation that
        has made no progress in :attr:`max_stalled` decisions and more than :attr:`grace` s."""
        if progressed:
            self.stalled = 0
            return
        if not self.stalled:
            self.stall_since = t
        self.stalled += 1
        if self.stalled < self.max_stalled or not t_next - self.stall_since > self.grace:
            return
        if self.allocates:
            who, blame, queue = self.sched, "scheduler", ""
        else:
            who = f"{self.sched} with {self.policy}"
            blame = "placement" if self.queue.size else "scheduler"
            queue = f", {self.queue.size} in the last queue"
        raise SimulationStalled(
            blame,
            f"{who}: no job started, finished or advanced in {self.stalled} consecutive "
            f"decisions (t = {self.stall_since:g} to {t_next:g} s; {active} active jobs{queue}); "
            f"stopped (bound: DriverConfig.max_stalled decisions over more than checkpoint + "
            f"restart = {self.grace:g} s)",
        )
