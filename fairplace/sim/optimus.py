"""Optimus (Peng et al., EuroSys'18) as THEMIS compares against it: greedy marginal-throughput scaling.

Every decision (on the round grid) re-divides the cluster among the active jobs:

1. every active job, in arrival order, first gets one GPU while GPUs last (Optimus' starvation guard);
2. then each further GPU goes to the job whose estimated remaining time drops most by it,
   ``T_j(k) - T_j(k + 1)`` with ``T_j(k) = remaining_j * t_iter_j * N_j * L_j(k) / k`` (linear speedup up
   to the job's demand N_j, ``L_j(k)`` = 1 when k GPUs fit in one machine, else its cross-machine
   penalty), until GPUs run out or no job can use one more;
3. placement packs each job onto as few machines as possible (a job keeps the GPUs it held where it
   can, then best-fit by machine), as Optimus places tasks on the fewest servers.

Jobs are elastic as in THEMIS' model (k <= N_j GPUs run at k / N_j of the full rate). Unlike
``srpt-oracle`` it does not order whole gangs by remaining work: it scales every job's width.
"""

from __future__ import annotations

import heapq

import numpy as np

from fairplace.core.domain import Cluster

from .schedulers import SchedView
from .themis import best_fit


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

        def t_rem(j: int, n: int) -> float:
            L = 1.0 if n <= self._gpm else float(w.l_machine[j])
            return float(view.remaining[j] * w.t_iter[j] * w.demand[j] * L / n)

        def gain(j: int) -> float:
            return t_rem(j, k[j]) - t_rem(j, k[j] + 1)

        heap = [(-gain(j), j) for j in k if 0 < k[j] < w.demand[j]]
        heapq.heapify(heap)
        while free > 0 and heap:
            g, j = heapq.heappop(heap)
            if -g <= 0:
                break
            k[j] += 1
            free -= 1
            if k[j] < w.demand[j]:
                heapq.heappush(heap, (-gain(j), j))
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
