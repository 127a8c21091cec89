"""Optimus (Peng et al., EuroSys'18) as THEMIS compares against it: greedy marginal-throughput scaling.

Every decision (on the round grid) re-divides the cluster among the active jobs:

1. every active job, in arrival order, first gets one GPU while GPUs last (Optimus' starvation guard);
2. then GPUs go, step by step, to the job whose estimated remaining time drops most per GPU,
   ``(T_j(k) - T_j(k + m)) / m`` over the step sizes m that fit (Optimus' greedy marginal gain), with
   ``T_j(k) = remaining_j * t_iter_j * N_j * L_j(k) / k`` (linear speedup up to the job's demand N_j,
   ``L_j(k)`` = 1 when k GPUs fit in one machine, else its cross-machine penalty), until GPUs run out
   or no step gains. Judging the whole step lets a job cross a machine boundary when going from one
   machine to two pays off overall (a network-heavy job: 4 -> 8 GPUs at L = 1.5 halves the time per
   GPU-width and gains, although 4 -> 5 alone loses), so GPUs do not sit idle behind a locality dip;
3. placement packs each job onto as few machines as possible (a job keeps the GPUs it held where it
   can, then best-fit by machine), as Optimus places tasks on the fewest servers.

Jobs are elastic as in THEMIS' model (k <= N_j GPUs run at k / N_j of the full rate). Unlike
``srpt-oracle`` it does not order whole gangs by remaining work: it scales every job's width.
"""

from __future__ import annotations

import heapq

import numpy as np

from fairplace.core.domain import Cluster

from ..protocols import SchedView
from ..themis.machine_pool import best_fit


class Optimus:
    """Greedy marginal-gain GPU scaling (module docstring); ``allocates`` GPUs itself."""

    name = "optimus"
    allocates = True

    def __init__(self):
        self._mi: np.ndarray | None = None
        self._gpm = 1

    def bind(self, cluster: Cluster) -> None:
        self._mi = cluster.machine_index
        self._gpm = int(np.bincount(cluster.machine_index).min())

    def next_change(self, view: SchedView) -> float:
        return view.t

    def counts(self, view: SchedView, w, G: int) -> dict[int, int]:
        """GPUs per active job (steps 1-2 of the module docstring)."""
        idx = view.active[np.lexsort((view.active, view.arrival[view.active]))]
        k = dict.fromkeys(idx.tolist(), 0)
        free = G
        for j in idx.tolist():  # step 1: one GPU each, arrival order
            if free == 0:
                break
            k[j], free = 1, free - 1

        def step(j: int) -> tuple[float, int]:
            """(best gain per GPU, step size) of job j within the free GPUs."""
            top = min(free, int(w.demand[j]) - k[j])
            n = k[j] + np.arange(0, top + 1)
            L = np.where(n <= self._gpm, 1.0, float(w.l_machine[j]))
            t = view.remaining[j] * w.t_iter[j] * w.demand[j] * L / n
            per_gpu = (t[0] - t[1:]) / np.arange(1, top + 1)
            m = int(np.argmax(per_gpu)) + 1
            return float(per_gpu[m - 1]), m

        heap = []
        for j in k:
            if 0 < k[j] < w.demand[j] and free > 0:
                g, m = step(j)
                heap.append((-g, j, m))
        heapq.heapify(heap)
        while free > 0 and heap:
            g, j, m = heapq.heappop(heap)
            if m > free:  # stale: fewer GPUs left than this step needs
                g2, m2 = step(j)
                if g2 > 0:
                    heapq.heappush(heap, (-g2, j, m2))
                continue
            if -g <= 0:
                break
            k[j] += m
            free -= m
            if k[j] < w.demand[j] and free > 0:
                g2, m2 = step(j)
                heapq.heappush(heap, (-g2, j, m2))
        return {j: n for j, n in k.items() if n > 0}

    def allocate(self, view: SchedView, w, cluster: Cluster, scores, alloc, grid) -> dict:
        if self._mi is None:
            self.bind(cluster)
        want = self.counts(view, w, len(cluster))
        pool = set(range(len(cluster)))
        out: dict[int, list[int]] = {}
        for j, n in want.items():  # keep held GPUs (no restart when the width is unchanged)
            keep = [g for g in alloc.get(j, ()) if g in pool][:n]
            out[j] = keep
            pool -= set(keep)
        for j in sorted(want, key=lambda j: (-(want[j] - len(out[j])), j)):
            need = want[j] - len(out[j])
            if need > 0:
                take = best_fit(pool, need, self._mi)
                out[j] += take
                pool -= set(take)
        return {j: np.asarray(sorted(g), np.int64) for j, g in out.items() if g}
