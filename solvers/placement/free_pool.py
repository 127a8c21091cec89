"""Free-GPU bookkeeping for one placement round, vectorised with numpy (no per-GPU Python loops).

A :class:`FreePool` lives for one ``place`` call only (policies keep no state between calls). It offers
the three queries every policy is built from:

* :meth:`FreePool.first_free` — the first ``n`` free GPUs of a fixed order (GPUs by score, ties by
  index; Random: a seeded permutation). A pointer per order skips GPUs taken earlier in the round,
  so a round costs O(G) per order, not O(G) per job.
* :meth:`FreePool.pm_first` — PM-First's pick: the ``n`` lowest free scores, ties broken by *best-match
  locality* |c − n| (then index), ``c`` the free GPUs on the machine or (``count="level"``, the PAL
  artifact's rule) those of them with the same score, so single-GPU jobs fill fragmented machines and
  a job of a machine's size lands on a whole free machine when one ties.
* :meth:`FreePool.fewest_machines` — of the free GPUs scoring at most a level, ``n`` on as few
  machines as possible (best fit for the last one): PAL's pick among LV-equal spread sets.
* :meth:`FreePool.best_within` — PAL's packed query: the machine whose ``n``-th smallest free score is
  lowest, from a per-class (machines x slots) matrix of free scores sorted per machine, refreshed lazily
  for the machines touched since the last query; among tied machines fairplace's best fit, or the
  PAL artifact's node order (``ties="artifact"``).
* :meth:`FreePool.packed` — Tiresias/Gandiva consolidated placement from free counts per machine.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fairplace.core.domain import Cluster

from .cache import PlacementCache
from .pool_index import Cells, ClassIndex


def _smallest(idx: np.ndarray, key: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` entries of ``idx`` (ascending) with the smallest (key, idx), in that order; O(len)
    plus a sort of the ``n`` chosen."""
    if n >= idx.size:
        return idx[np.argsort(key, kind="stable")]
    kv = np.partition(key, n - 1)[n - 1]
    low = np.flatnonzero(key < kv)
    low = low[np.argsort(key[low], kind="stable")]
    rest = np.flatnonzero(key == kv)[: n - low.size]  # ascending index among equal keys
    return idx[np.concatenate([low, rest])]


class FreePool:
    """Free GPUs of ``cluster`` with per-class scores; mutable, one placement round."""

    def __init__(
        self,
        cluster: Cluster,
        scores: Mapping[str, np.ndarray],
        free: np.ndarray,
        cache: PlacementCache | None = None,
        index: bool | None = None,
    ):
        """``cache``: a :class:`.cache.PlacementCache` kept by the caller across pools of the same
        cluster, holding its layout and each class's score order (so it is sorted once, not once
        per round); None: a throw-away one. ``index``: pick
        through the incremental index (:mod:`.pool_index`; same picks) — None: where it pays off,
        measured: PAL's packed and fewest-machines queries from 2,048 GPUs, PM-First's picks (single
        and multi-GPU) from 8,192 (below, the vectorised rescan of a small tie level is cheaper than
        the index's Python bookkeeping)."""
        G = len(cluster)
        self.G = G
        self.cluster = cluster
        mi = cluster.machine_index
        self.mi = mi
        self.slots = cluster.machine_slots  # (M, P); G = padding sentinel; read only
        self.cache = PlacementCache() if cache is None else cache
        #: the most GPUs on one machine; whether GPU indices are grouped by machine
        self.P, self.grouped = self.cache.layout(cluster)
        self.free = np.empty(G + 1, dtype=bool)
        self.free[:G] = free
        self.free[G] = False  # sentinel is never free
        self._nfree_m: np.ndarray | None = None  # (nfree_m: made when first read)
        self.n_free = int(np.count_nonzero(self.free))
        self.scores = scores
        self._orders: dict[object, np.ndarray] = {}
        self._ranks: dict[object, np.ndarray] = {}
        self._ptr: dict[object, int] = {}
        self._sorted: dict[object, tuple[np.ndarray, ...]] = {}
        self._sorted_vals: dict[object, np.ndarray] = {}
        self._cache = self.cache.sorted_for(cluster, scores)
        self._ext: dict[object, np.ndarray] = {}
        self._log: list[tuple[np.ndarray, int]] = []  # (GPUs, +1 / -1) per take / release
        self._index: dict[object, ClassIndex] = {}
        # cell-ordered picks (pool_index) are exact when GPUs are grouped by machine
        self._fast = G > 0 and self.grouped and (G >= 2048 if index is None else bool(index))
        self._fast_match = self._fast and (G >= 8192 if index is None else True)

    @property
    def nfree_m(self) -> np.ndarray:
        """Free GPUs per machine (int64), made when first read (a compiled round counts its own)."""
        nf = self._nfree_m
        if nf is None:
            M = len(self.cluster.machines)
            nf = self._nfree_m = np.bincount(self.mi[self.free[: self.G]], minlength=M)
        return nf

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
        if self._index:  # for the incremental index (pool_index)
            gs = idx.tolist()
            self._log.append((gs, sign))
            nf, mil = self._nf, self._mil
            for g in gs:
                nf[mil[g]] += sign
        if self._nfree_m is not None:
            np.add.at(self._nfree_m, self.mi[idx], sign)
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
            if key not in self._cache:
                order = np.argsort(self.score(key), kind="stable")
                srt = self.score(key)[order]
                order.flags.writeable = srt.flags.writeable = False  # shared across rounds
                self._cache[key] = (order, srt)
            self.set_order(key, self._cache[key][0])
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

    def pm_first(self, cls, n: int, count: str = "machine") -> np.ndarray | None:
        """The ``n`` free GPUs PM-First gives a job of class ``cls`` (None if fewer are free).

        Free GPUs are ordered by (score, |c - n|, index), ``c`` the free GPUs on the GPU's machine
        (``count="machine"``) or those of them with the same score (``count="level"``, the PAL
        artifact's PM-First and PAL: ``groupby(['sf', 'Node_ID'])``). Every GPU scoring below the ``n``-th lowest is taken;
        the tie-break only chooses inside the level of the ``n``-th lowest."""
        head = self.first_free(cls, n)
        if head is None:
            return None
        s = self.score(cls)
        v = s[head[-1]]
        below = head[s[head] < v]
        if count == "machine" and self._fast_match:  # O(P² log G): the level's buckets
            ci = self._class_index(cls)
            lev = int(ci.c.clev[ci.c.cell_of[head[-1]]])
            need = n - below.size
            pick = np.array(self._level(ci, lev).best_match(n, need), dtype=np.int64)
            if ci.lfree[lev] == need:  # the whole level: ascending, as the scan returns it
                pick.sort()
            return np.concatenate([below, pick])
        order = self._order(cls)
        srt = self._sorted_scores(cls)
        lo, hi = np.searchsorted(srt, v, "left"), np.searchsorted(srt, v, "right")
        tie = order[lo:hi]
        tie = tie[self.free[tie]]
        need = n - below.size
        if tie.size == need:
            return np.concatenate([below, tie])
        if count == "machine":
            c = self.nfree_m[self.mi[tie]]
        elif count == "level":
            c = np.bincount(self.mi[tie], minlength=self.nfree_m.size)[self.mi[tie]]
        else:
            raise ValueError(f"count must be 'machine' or 'level', got {count!r}")
        pick = tie[np.lexsort((tie, np.abs(c - n)))[:need]]
        return np.concatenate([below, pick])

    def pm_first_singles(self, cls, k: int, count: str = "machine") -> np.ndarray:
        """The picks of ``k`` successive single-GPU PM-First jobs of class ``cls`` (fewer if the pool
        runs dry), taken from the pool: the same GPUs, in the same order, as ``k`` calls of
        ``pm_first(cls, 1, count)`` and ``take``.

        For ``n = 1`` the key |c - 1| is ``c - 1``, and taking a GPU lowers ``c`` on its machine, so
        within the lowest free level the calls drain one machine after another, machines ordered by
        (c, their lowest free GPU of the level), each machine's GPUs by index: one sort per level."""
        if count not in ("machine", "level"):
            raise ValueError(f"count must be 'machine' or 'level', got {count!r}")
        out = []
        got = 0
        while count == "machine" and self._fast_match and got < k and self._lowest(cls):
            ci = self._class_index(cls)
            lb = self._level(ci, int(ci.c.lev_pos[self._ptr[cls]]))
            seq = np.array(lb.singles(k - got), dtype=np.int64)
            self.take(seq)
            out.append(seq)
            got += seq.size
        order = self._order(cls)
        srt = self._sorted_scores(cls)
        while got < k and self.n_free:
            self.first_free(cls, 1)  # moves the pointer to the lowest free GPU
            v = srt[self._ptr[cls]]
            lo, hi = self._ptr[cls], np.searchsorted(srt, v, "right")
            tie = order[lo:hi]
            tie = tie[self.free[tie]]  # ascending GPU index (stable sort by score)
            m = self.mi[tie]
            first = np.empty(self.nfree_m.size, dtype=np.int64)
            first[m[::-1]] = tie[::-1]  # each machine's lowest free GPU of the level
            c = self.nfree_m[m] if count == "machine" else np.bincount(m, minlength=first.size)[m]
            key = c * (self.G + 1) + first[m]  # (c, first) is one machine; then GPU index
            seq = _smallest(tie, key, k - got)
            self.take(seq)
            out.append(seq)
            got += seq.size
        return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)

    # ---- the incremental index (pool_index) ------------------------------------------------------
    def _class_index(self, cls) -> ClassIndex:
        """``cls``'s per-cell free counts, up to date with every take and release."""
        ci = self._index.get(cls)
        if ci is None:
            key = ("__cells__", cls)
            if key not in self._cache:
                order = self._order(cls)
                self._cache[key] = Cells(order, self._sorted_scores(cls), self.mi)
            if not self._index:  # per-machine free counts as a list, kept from now on
                self._nf, self._mil = self.nfree_m.tolist(), self.mi.tolist()
            ci = self._index[cls] = ClassIndex(self._cache[key], self)
        else:
            ci.sync()
        return ci

    def _lowest(self, cls) -> bool:
        """Point ``cls``'s pointer at its lowest free GPU; False if none is free."""
        p = self._ptr.get(cls)
        if p is not None and p < self.G and self.free[self._orders[cls][p]]:
            return True
        return self.first_free(cls, 1) is not None

    def _level(self, ci: ClassIndex, lev: int):
        return ci.level(lev)

    def _cell_free(self, ci: ClassIndex, cell: int) -> list[int]:
        cs = ci.c.cs
        return [g for g in ci.c.og[cs[cell] : cs[cell + 1]] if self.free[g]]

    def _score_ext(self, cls) -> np.ndarray:
        """``cls``'s scores with an ``inf`` appended for the padding sentinel ``G``."""
        if cls not in self._ext:
            self._ext[cls] = np.append(self.score(cls), np.inf)
        return self._ext[cls]

    def _sorted_scores(self, cls) -> np.ndarray:
        if cls not in self._sorted_vals:
            self._order(cls)
            self._sorted_vals[cls] = self._cache[cls][1]
        return self._sorted_vals[cls]

    def fewest_machines(self, cls, n: int, v_max: float) -> np.ndarray:
        """``n`` free GPUs scoring <= ``v_max`` on as few machines as possible (PAL's tie-break).

        Every such set has the same LV-product, L_across * v_max, when ``v_max`` is the ``n``-th lowest
        free score; this one fragments least: machines by most eligible GPUs first (ties: lower
        index), the last one replaced by the best fit (fewest eligible GPUs that still cover the
        remainder); on each machine the lowest-scoring eligible GPUs. Needs >= ``n`` eligible GPUs."""
        if self._fast and self._lowest(cls):
            ci = self._class_index(cls)
            lev = int(ci.c.lev_pos[self._ptr[cls]])
            if ci.c.lval[lev] == v_max and ci.lfree[lev] >= n:  # one level: its buckets
                cells, take = self._level(ci, lev).fewest(n)
                return np.array(
                    [
                        g
                        for c, t in zip(cells, take, strict=True)
                        for g in self._cell_free(ci, c)[:t]
                    ],
                    dtype=np.int64,
                )
        s = self._score_ext(cls)
        order = self._order(cls)
        hi = int(np.searchsorted(self._sorted_scores(cls), v_max, "right"))
        elig = order[self._ptr[cls] : hi]  # GPUs before the pointer are taken
        elig = elig[self.free[elig]]
        sl = self.slots
        cnt = np.bincount(self.mi[elig], minlength=sl.shape[0])
        order = np.argsort((cnt.max() - cnt).astype(np.uint16), kind="stable")  # radix sort
        cum = np.cumsum(cnt[order])
        k = int(np.searchsorted(cum, n))  # machines order[:k+1] cover n
        used, rest = order[:k], n - (int(cum[k - 1]) if k else 0)
        cand = order[k:]
        fit = cand[cnt[cand] >= rest]
        last = int(fit[np.argmin(cnt[fit])])  # best fit; argmin keeps the lowest index on ties
        ms = np.append(used, last)
        take = np.append(cnt[used], rest)
        rows = sl[ms]  # (machines, slots); padding is the never-free sentinel G
        v = np.where(self.free[rows] & (s[rows] <= v_max), s[rows], np.inf)
        order = np.argsort(v, axis=1, kind="stable")  # lowest eligible scores first per machine
        first = np.arange(rows.shape[1])[None, :] < take[:, None]
        return np.take_along_axis(rows, order, axis=1)[first]

    # ---- PAL packed query ----------------------------------------------------------------------
    def _sorted_rows(self, cls):
        """(sorted free scores, their slot positions) per machine; inf marks busy or padding."""
        if cls not in self._sorted:
            shape = self.slots.shape
            self._sorted[cls] = (
                self._score_ext(cls),
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

    def best_within(self, cls, n: int, ties: str = "best-fit") -> tuple[float, np.ndarray] | None:
        """Best packed set of ``n`` free GPUs on one machine: min ``w`` over machines of the ``n``-th
        smallest free score there. ``ties="best-fit"``: among tied machines the one with the fewest
        free GPUs, then the lowest index; its ``n`` lowest free scores. ``ties="artifact"`` (the PAL
        artifact's ``value_counts`` node order and ``itertools.combinations`` order, placement/pal.py):
        the machine with the most free GPUs scoring <= ``w``, then the lowest index; its first ``n``
        of them by GPU index. Returns (max score of the set, GPU indices) or None."""
        if n > self.P:
            return None
        if ties == "artifact":
            return self._within_artifact(cls, n)
        if ties != "best-fit":
            raise ValueError(f"ties must be 'best-fit' or 'artifact', got {ties!r}")
        if self._fast and n == self.P:  # a wholly free machine: the one with the lowest top score
            m = self._class_index(cls).whole()
            if m is None:
                return None
            row = self.slots[m]
            s = self._score_ext(cls)[row]
            return float(s.max()), row[np.argsort(s, kind="stable")]
        if self._fast and self._lowest(cls):
            ci = self._class_index(cls)
            lev = int(ci.c.lev_pos[self._ptr[cls]])
            cell = self._level(ci, lev).packed(n)  # a machine with n free at the lowest level wins
            if cell is not None:
                return float(ci.c.lval[lev]), np.array(self._cell_free(ci, cell)[:n], np.int64)
        srt, pos = self._sorted_rows(cls)
        col = srt[:, n - 1]
        w = col.min()
        if not np.isfinite(w):
            return None
        cand = np.flatnonzero(col == w)
        m = int(cand[np.argmin(self.nfree_m[cand])])
        return float(w), self.slots[m, pos[m, :n]]

    def _within_artifact(self, cls, n: int) -> tuple[float, np.ndarray] | None:
        """:meth:`best_within` with the artifact's ties (a scan: the artifact set-up's clusters are
        small). No machine has ``n`` free GPUs below ``w``, so every ``n`` of a tied machine's GPUs
        scoring <= ``w`` have the LV-product ``w``; the artifact takes the first combination."""
        srt, _ = self._sorted_rows(cls)
        col = srt[:, n - 1]
        w = col.min()
        if not np.isfinite(w):
            return None
        elig = np.isfinite(srt) & (srt <= w)  # free GPUs scoring <= w, per machine
        cnt = np.where(col == w, elig.sum(axis=1), -1)
        m = int(np.argmax(cnt))  # most eligible; argmax keeps the lowest machine on ties
        row = self.slots[m]
        s = self._score_ext(cls)[row]
        return float(w), row[self.free[row] & (s <= w)][:n]

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
