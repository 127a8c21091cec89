"""The queue baselines: schedulers that only order the active jobs (FIFO, Tiresias' LAS, SRTF, DRF,
Gandiva-style packing, the SRPT oracle, SLAQ); the placement policy then decides who runs and where.

A scheduler sees a :class:`~fairplace.sim.protocols.SchedView` (numpy arrays over all jobs of the
workload) and returns the active jobs in priority order (highest first). ``next_change(view)`` is the
earliest time at which the order can change *without* an arrival or a completion (``inf`` when only
events change it); the driver uses it to jump over quiet rounds. Gavel's finish-time fairness, the
one queue scheduler that solves a program, is in :mod:`fairplace.sim.schedulers.gavel`.
"""

from __future__ import annotations

import heapq

import numpy as np

from fairplace.core.limits import MAX_TIME
from fairplace.core.params import Interval, scheduler_option

from ..protocols import SchedView

__all__ = [
    "DRF",
    "FIFO",
    "LAS",
    "LAS_STARVE_FACTOR",
    "LAS_THRESHOLD",
    "SLAQ",
    "SRTF",
    "GandivaPacking",
    "SRPTOracle",
]

#: LAS' queue threshold: attained service (GPU-seconds) above which a job is in queue 1
LAS_THRESHOLD = scheduler_option(
    "threshold",
    3200.0,
    Interval(0.0, MAX_TIME, closed="right"),
    "LAS: GPU-seconds of attained service that move a job to the second queue",
)
#: Tiresias' starvation guard: a queue-1 job waiting starve_factor x its run time is promoted
LAS_STARVE_FACTOR = scheduler_option(
    "starve_factor",
    None,
    Interval(0.0, MAX_TIME, closed="right"),
    "LAS: promote a job waiting this many times its run time so far (None: never)",
    nullable=True,
)


def _fifo_key(view: SchedView, idx: np.ndarray) -> np.ndarray:
    """Stable order by release time, then job index."""
    return idx[np.lexsort((idx, view.arrival[idx]))]


class FIFO:
    """First-in first-out by release (arrival) time."""

    name = "fifo"

    def order(self, view: SchedView) -> np.ndarray:
        return _fifo_key(view, view.active)

    def next_change(self, view: SchedView) -> float:
        return np.inf


class LAS:
    """Tiresias' discretised two-queue LAS: queue 0 holds jobs whose attained service (GPU-seconds)
    is below ``threshold``, queue 1 the rest; queue 0 first, FIFO within a queue.

    ``starve_factor`` (Tiresias' starvation guard, off by default): a waiting job of queue 1 whose
    current wait reaches ``starve_factor`` x its run time so far is promoted to queue 0 until it runs.
    """

    name = "las"

    def __init__(
        self,
        threshold: float = LAS_THRESHOLD.default,
        starve_factor: float | None = LAS_STARVE_FACTOR.default,
    ):
        self.threshold = LAS_THRESHOLD.check(threshold)
        self.starve_factor = LAS_STARVE_FACTOR.check(starve_factor)

    def _promote_at(self, view: SchedView, idx: np.ndarray) -> np.ndarray:
        """Time at which each waiting job of ``idx`` is promoted (inf: never / not applicable)."""
        if self.starve_factor is None or view.waiting_since is None or view.held is None:
            return np.full(idx.size, np.inf)
        held = view.held[idx]
        at = view.waiting_since[idx] + self.starve_factor * held
        return np.where((held > 0) & ~view.running[idx], at, np.inf)

    def order(self, view: SchedView) -> np.ndarray:
        idx = view.active
        q = (view.attained[idx] >= self.threshold).astype(np.int64)
        q[self._promote_at(view, idx) <= view.t] = 0
        return idx[np.lexsort((idx, view.arrival[idx], q))]

    def next_change(self, view: SchedView) -> float:
        idx = view.active
        promote = self._promote_at(view, idx)
        nxt = float(np.min(promote[promote > view.t], initial=np.inf))
        run = idx[view.running[idx]]
        gap = self.threshold - view.attained[run]
        keep = gap > 0
        if keep.any():
            nxt = min(nxt, view.t + float(np.min(gap[keep] / view.demand[run][keep])))
        return nxt


class SRTF:
    """Shortest remaining (isolated) time first: remaining iterations x t_iter, ties by arrival."""

    name = "srtf"

    def order(self, view: SchedView) -> np.ndarray:
        idx = view.active
        rem = view.remaining[idx] * view.t_iter[idx]
        return idx[np.lexsort((idx, view.arrival[idx], rem))]

    def next_change(self, view: SchedView) -> float:
        return view.t  # remaining times of running jobs move continuously


class DRF:
    """DRF-style instantaneous fair share over apps (one resource: GPUs): water-filling, each next
    queue slot goes to the app with the smallest GPU share so far; FIFO within an app."""

    name = "drf"

    def order(self, view: SchedView) -> np.ndarray:
        idx = _fifo_key(view, view.active)
        per_app: dict[int, list[int]] = {}
        for j in idx.tolist():
            per_app.setdefault(int(view.app[j]), []).append(j)
        heap = [(0, view.arrival[jobs[0]], a, 0) for a, jobs in per_app.items()]
        heapq.heapify(heap)
        out = []
        while heap:
            share, arr, a, k = heapq.heappop(heap)
            j = per_app[a][k]
            out.append(j)
            if k + 1 < len(per_app[a]):
                heapq.heappush(heap, (share + int(view.demand[j]), arr, a, k + 1))
        return np.asarray(out, dtype=np.int64)

    def next_change(self, view: SchedView) -> float:
        return np.inf


class GandivaPacking:
    """Gandiva-style greedy packing (without time-slicing): walk the FIFO queue and move every job that
    still fits in the cluster ahead of those that do not (greedy backfilling for utilisation)."""

    name = "gandiva"

    def order(self, view: SchedView) -> np.ndarray:
        idx = _fifo_key(view, view.active)
        d = view.demand[idx]
        fits = np.zeros(idx.size, dtype=bool)
        free = view.gpus
        for k, dk in enumerate(d.tolist()):  # sequential by nature: capacity left depends on order
            if dk <= free:
                fits[k] = True
                free -= dk
        return np.concatenate([idx[fits], idx[~fits]])

    def next_change(self, view: SchedView) -> float:
        return np.inf


class SRPTOracle:
    """Oracle shortest-remaining-GPU-time first (formerly mislabelled "optimus"): it knows every job's
    remaining work; gain 1 / (remaining x t_iter x N_j), highest first."""

    name = "srpt-oracle"

    def order(self, view: SchedView) -> np.ndarray:
        idx = view.active
        gain = 1.0 / (view.remaining[idx] * view.t_iter[idx] * view.demand[idx])
        return idx[np.lexsort((idx, view.arrival[idx], -gain))]

    def next_change(self, view: SchedView) -> float:
        return view.t


class SLAQ:
    """SLAQ-style loss-reduction greedy on synthetic loss curves
    loss_j(x) = l_inf + (l0 - l_inf) exp(-k_j x), x = fraction of iterations done, k_j ~ U(2, 8)
    (seeded per job); priority = predicted loss drop over the next round per GPU."""

    name = "slaq"

    def __init__(self, seed: int = 0):
        self.seed = int(seed)

    def _k(self, n: int) -> np.ndarray:
        return np.random.default_rng([self.seed, 7]).uniform(2.0, 8.0, size=n)

    def order(self, view: SchedView) -> np.ndarray:
        idx = view.active
        k = self._k(view.total.size)[idx]
        x = 1.0 - view.remaining[idx] / view.total[idx]
        dx = view.round_length / (view.total[idx] * view.t_iter[idx])
        drop = np.exp(-k * x) - np.exp(-k * np.minimum(1.0, x + dx))  # (l0 - l_inf) = 1
        return idx[np.lexsort((idx, view.arrival[idx], -drop / view.demand[idx]))]

    def next_change(self, view: SchedView) -> float:
        return view.t
