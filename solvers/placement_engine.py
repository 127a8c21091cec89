"""Free-GPU bookkeeping for one placement round, vectorised with numpy (no per-GPU Python loops).

A :class:`FreePool` lives for one ``place`` call only (policies keep no state between calls). It offers
the three queries every policy is built from:

* :meth:`FreePool.first_free` — the first ``n`` free GPUs of a fixed order (PM-First: GPUs by score,
  ties by index; Random: a seeded permutation). A pointer per order skips GPUs taken earlier in the round,
  so a round costs O(G) per order, not O(G) per job.
* :meth:`FreePool.best_within` — PAL's packed query: the machine whose ``n``-th smallest free score is
  lowest, from a per-class (machines x slots) matrix of free scores sorted per machine, refreshed lazily
  for the machines touched since the last query.
* :meth:`FreePool.packed` — Tiresias/Gandiva consolidated placement from free counts per machine.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fairplace.domain import Cluster


class FreePool:
    """Free GPUs of ``cluster`` with per-class scores; mutable, one placement round."""

    def __init__(self, cluster: Cluster, scores: Mapping[str, np.ndarray], free: np.ndarray):
        G = len(cluster)
        self.G = G
        mi = cluster.machine_index
        self.mi = mi
        M = len(cluster.machines)
        counts = np.bincount(mi, minlength=M)
        self.P = int(counts.max()) if G else 0
        order = np.argsort(mi, kind="stable")
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        slot = np.arange(G) - starts[mi[order]]
        self.slots = np.full((M, max(self.P, 1)), G, dtype=np.int64)  # G = padding sentinel
        self.slots[mi[order], slot] = order
        self.free = np.append(np.asarray(free, dtype=bool), False)  # sentinel is never free
        self.nfree_m = np.bincount(mi[self.free[:G]], minlength=M)
        self.n_free = int(self.free[:G].sum())
        self.scores = scores
        self._orders: dict[object, np.ndarray] = {}
        self._ranks: dict[object, np.ndarray] = {}
        self._ptr: dict[object, int] = {}
        self._sorted: dict[object, tuple[np.ndarray, ...]] = {}

    # ---- state changes -------------------------------------------------------------------------
    def take(self, idx: np.ndarray) -> None:
        idx = np.asarray(idx, dtype=np.int64)
        self.free[idx] = False
        self._touch(idx, -1)

    def release(self, idx: np.ndarray) -> None:
        idx = np.asarray(idx, dtype=np.int64)
        if idx.size == 0:
            return
        self.free[idx] = True
        self._touch(idx, +1)
        for key in self._ptr:  # released GPUs may lie before a pointer: move it back
            self._ptr[key] = min(self._ptr[key], int(self._rank(key)[idx].min()))

    def _touch(self, idx: np.ndarray, sign: int) -> None:
        np.add.at(self.nfree_m, self.mi[idx], sign)
        self.n_free += sign * idx.size
        for *_, dirty in self._sorted.values():
            dirty[self.mi[idx]] = True

    # ---- orders (PM-First, Random) -------------------------------------------------------------
    def score(self, cls) -> np.ndarray:
        v = self.scores.get(cls)
        return np.ones(self.G) if v is None else v

    def set_order(self, key, order: np.ndarray) -> None:
        self._orders[key] = np.asarray(order, dtype=np.int64)
        self._ptr[key] = 0

    def _order(self, key) -> np.ndarray:
        if key not in self._orders:  # a class: GPUs by score, ties by index (stable sort)
            self.set_order(key, np.argsort(self.score(key), kind="stable"))
        return self._orders[key]

    def _rank(self, key) -> np.ndarray:
        if key not in self._ranks:
            r = np.empty(self.G, dtype=np.int64)
            r[self._orders[key]] = np.arange(self.G)
            self._ranks[key] = r
        return self._ranks[key]

    def first_free(self, key, n: int) -> np.ndarray | None:
        """The first ``n`` free GPUs in ``key``'s order (None if fewer than ``n`` are free)."""
        if n > self.n_free:
            return None
        order = self._order(key)
        p = self._ptr[key]
        size = max(4 * n, 64)
        while True:
            cand = order[p : p + size]
            f = self.free[cand]
            nz = np.flatnonzero(f)
            if nz.size >= n or p + size >= order.size:
                break
            size *= 4
        self._ptr[key] = p + (int(nz[0]) if nz.size else cand.size)
        return cand[nz[:n]] if nz.size >= n else None

    # ---- PAL packed query ----------------------------------------------------------------------
    def _sorted_rows(self, cls):
        """(sorted free scores, their slot positions) per machine; inf marks busy or padding."""
        if cls not in self._sorted:
            shape = self.slots.shape
            self._sorted[cls] = (
                np.append(self.score(cls), np.inf),
                np.empty(shape),
                np.empty(shape, dtype=np.int64),
                np.ones(shape[0], dtype=bool),
            )
        vals, srt, pos, dirty = self._sorted[cls]
        if dirty.any():
            rows = np.flatnonzero(dirty)
            sl = self.slots[rows]
            v = np.where(self.free[sl], vals[sl], np.inf)
            p = np.argsort(v, axis=1, kind="stable")
            srt[rows] = np.take_along_axis(v, p, axis=1)
            pos[rows] = p
            dirty[:] = False
        return srt, pos

    def best_within(self, cls, n: int) -> tuple[float, np.ndarray] | None:
        """Best packed set of ``n`` free GPUs on one machine: min over machines of the ``n``-th smallest
        free score there; ties go to the machine with the fewest free GPUs (best fit), then the lowest
        machine index. Returns (max score of the set, GPU indices) or None."""
        if n > self.P:
            return None
        srt, pos = self._sorted_rows(cls)
        col = srt[:, n - 1]
        w = col.min()
        if not np.isfinite(w):
            return None
        cand = np.flatnonzero(col == w)
        m = int(cand[np.argmin(self.nfree_m[cand])])
        return float(w), self.slots[m, pos[m, :n]]

    # ---- Tiresias / Gandiva consolidated placement ---------------------------------------------
    def free_on(self, m: int, k: int) -> np.ndarray:
        row = self.slots[m]
        return row[self.free[row]][:k]

    def packed(self, n: int) -> np.ndarray | None:
        """Exact-fit machine, else best fit (fewest free GPUs >= n), else spill over the machines with
        the most free GPUs (ties by machine index). None if fewer than ``n`` GPUs are free."""
        if n > self.n_free:
            return None
        exact = np.flatnonzero(self.nfree_m == n)
        if exact.size:
            return self.free_on(int(exact[0]), n)
        fits = np.flatnonzero(self.nfree_m >= n)
        if fits.size:
            return self.free_on(int(fits[np.argmin(self.nfree_m[fits])]), n)
        by_free = np.argsort(-self.nfree_m, kind="stable")
        take = np.minimum(
            self.nfree_m[by_free], n - np.concatenate([[0], np.cumsum(self.nfree_m[by_free])[:-1]])
        )
        take = np.clip(take, 0, None)
        return np.concatenate(
            [self.free_on(int(m), int(k)) for m, k in zip(by_free, take, strict=True) if k > 0]
        )
