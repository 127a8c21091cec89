"""Incremental index of a :class:`~.free_pool.FreePool`'s free GPUs per (class, score level), so
that a PM-First / PAL pick costs O(P² log G) (P GPUs per machine) instead of a rescan of its tie level.

A class's (binned) scores split the GPUs into *levels* of equal score; a *cell* is one machine's GPUs of
one level. When GPU indices are grouped by machine, machines ascending (every generated cluster;
:func:`contiguous`), "by GPU index" across machines is "by machine", so every tie-break of the picks
orders whole cells:

* PM-First (``count="machine"``): cells by (|nf - n|, machine), nf = free GPUs on the machine;
* fewest machines: cells by (cf descending, machine), cf = free GPUs in the cell, then best fit;
* PAL's packed query at the lowest level: cells with cf >= n by (nf, machine).

Per level the live cells sit in *buckets* keyed by (cf, nf), each a heap of cell ids (ascending cell id
= ascending machine inside a level). Takes and releases are appended to the pool's log; a class replays
it when next queried, updating cf and pushing the touched machines' cells with their new keys into the
buckets built so far; entries whose key is no longer the cell's are dropped when they reach a heap's top
(lazy deletion).

:class:`~.free_pool.FreePool` uses the index only where it pays off (``index=None``: PAL's queries
from 2,048 GPUs, PM-First's best match from 8,192) and when GPUs are grouped by machine; else it
rescans the tie level, vectorised (the same picks).
"""

from __future__ import annotations

from bisect import bisect_left
from heapq import heappop, heappush
from itertools import chain
from typing import Any

import numpy as np


def contiguous(mi: np.ndarray) -> bool:
    """True if GPU indices are grouped by machine with machines ascending (m(g) non-decreasing)."""
    return bool(mi.size == 0 or np.all(mi[1:] >= mi[:-1]))


class Cells:
    """Static cell layout of one class: levels and cells as runs of its score order (GPUs by score,
    ties by index). Depends only on the cluster and the scores, so it is cached across rounds."""

    def __init__(self, order: np.ndarray, srt: np.ndarray, mi: np.ndarray):
        G = order.size
        pos_level = np.zeros(G, dtype=np.int64)
        if G:
            pos_level[1:] = np.cumsum(srt[1:] != srt[:-1])
        m_sorted = mi[order]
        brk = np.flatnonzero((np.diff(pos_level) != 0) | (np.diff(m_sorted) != 0)) + 1
        self.cstart = np.concatenate([[0], brk, [G]]).astype(
            np.int64
        )  # cell c: order[cstart[c]:cstart[c+1]]
        cell_pos = np.zeros(G, dtype=np.int64)
        cell_pos[brk] = 1
        cell_pos = np.cumsum(cell_pos)
        self.cell_of = np.empty(G, dtype=np.int64)
        self.cell_of[order] = cell_pos
        starts = self.cstart[:-1]
        self.cm = m_sorted[starts]  # machine of each cell
        self.clev = pos_level[starts]  # level of each cell
        L = int(pos_level[-1]) + 1 if G else 0
        self.lcell = np.searchsorted(
            self.clev, np.arange(L + 1)
        )  # level l: cells lcell[l]:lcell[l+1]
        self.lval = srt[starts][self.lcell[:-1]] if G else srt[:0]
        self.lev_pos = pos_level  # level of each position of the order
        self.og = order.tolist()
        self.cs = self.cstart.tolist()
        self.cm_list = self.cm.tolist()
        self.cell_of_l = self.cell_of.tolist()
        self.clev_l = self.clev.tolist()
        M = int(mi.max()) + 1 if G else 0
        self.mtop = np.zeros(M, dtype=np.int64)  # each machine's highest level
        np.maximum.at(self.mtop, self.cm, self.clev)


class ClassIndex:
    """Free GPUs per cell of one class (``cf``) and per level (``lfree``), and the level buckets.

    Plain lists: a pick reads and updates a few entries at a time, where numpy's per-call cost would
    dominate."""

    def __init__(self, cells: Cells, pool):
        self.c, self.pool = cells, pool
        cell = cells.cell_of[np.flatnonzero(pool.free[: pool.G])]
        self.cf = np.bincount(cell, minlength=cells.cm.size).tolist()
        self.lfree = np.bincount(cells.clev[cell], minlength=cells.lval.size).tolist()
        self.cursor = len(pool._log)
        self.levels: dict[int, LevelBuckets] = {}
        self._whole: list[int] | None = None
        self._whole_cursor = 0

    def whole(self) -> int | None:
        """The wholly free machine (all P GPUs free) whose highest level is lowest, then the lowest
        machine; None if there is none. A heap of (top level, machine) over the machines wholly free
        when built, pushed again when a release frees a machine wholly; busy ones dropped lazily."""
        pool, P = self.pool, self.pool.P
        M, nf, log = self.c.mtop.size, pool._nf, pool._log
        if self._whole is None:
            ms = np.flatnonzero(pool.nfree_m == P)
            self._whole = np.sort(self.c.mtop[ms] * M + ms).tolist()
        else:
            mil, top = pool._mil, self.c.mtop
            for gs, sign in log[self._whole_cursor :]:
                for g in gs if sign > 0 else ():
                    m = mil[g]
                    if nf[m] == P:
                        heappush(self._whole, int(top[m]) * M + m)
        self._whole_cursor = len(log)
        h = self._whole
        while h:
            m = h[0] % M
            if nf[m] == P:
                return m
            heappop(h)
        return None

    def sync(self) -> None:
        """Replay the takes and releases logged since the last sync into ``cf`` and ``lfree``, and
        push the new keys of the touched machines' cells into the level buckets built so far (a long
        log, e.g. a whole other class's jobs: numpy, and the buckets are rebuilt when next used)."""
        log = self.pool._log
        if self.cursor == len(log):
            return
        new = log[self.cursor :]
        self.cursor = len(log)
        cell_of, clev = self.c.cell_of_l, self.c.clev_l
        if sum(len(gs) for gs, _ in new) > len(cell_of) // 8:
            idx = np.fromiter(chain.from_iterable(gs for gs, _ in new), np.int64)
            sign = np.fromiter(chain.from_iterable([s] * len(gs) for gs, s in new), np.int64)
            cell = self.c.cell_of[idx]
            cf, lf = np.array(self.cf), np.array(self.lfree)
            np.add.at(cf, cell, sign)
            np.add.at(lf, self.c.clev[cell], sign)
            self.cf, self.lfree = cf.tolist(), lf.tolist()
            self.levels.clear()
            return
        cf, lf, mil = self.cf, self.lfree, self.pool._mil
        touched = set()
        for gs, s in new:
            for g in gs:
                c = cell_of[g]
                cf[c] += s
                lf[clev[c]] += s
                touched.add(mil[g])
        for lb in self.levels.values():
            lb.push(touched)

    def level(self, lev: int) -> LevelBuckets:
        """The buckets of level ``lev``, up to date (call :meth:`sync` first)."""
        b = self.levels.get(lev)
        if b is None:
            b = self.levels[lev] = LevelBuckets(self, lev)
        return b


class LevelBuckets:
    """Live cells of one level in heaps keyed by (cf, nf); see the module docstring."""

    def __init__(self, ci: ClassIndex, lev: int):
        self.ci, self.pool, self.P = ci, ci.pool, ci.pool.P
        self.lo, self.hi = int(ci.c.lcell[lev]), int(ci.c.lcell[lev + 1])
        self.popped: list[tuple[tuple[int, int], int]] = []
        self.rebuild()

    def rebuild(self) -> None:
        """All live cells of the level, bucketed (sorted lists are valid heaps)."""
        cells = np.arange(self.lo, self.hi)
        cf = np.array(self.ci.cf[self.lo : self.hi], dtype=np.int64)
        cells, cf = cells[cf > 0], cf[cf > 0]
        key = cf * (self.P + 1) + self.pool.nfree_m[self.ci.c.cm[cells]]
        o = np.lexsort((cells, key))
        key, cells = key[o], cells[o]
        cut = np.flatnonzero(np.diff(key)) + 1
        self.b: dict[tuple[int, int], list[int]] = {}
        for a, z in zip(np.r_[0, cut].tolist(), np.r_[cut, key.size].tolist(), strict=True):
            self.b[divmod(int(key[a]), self.P + 1)] = cells[a:z].tolist()

    def push(self, machines) -> None:
        """Push the current key of each live cell of this level on ``machines``."""
        lo, hi = self.lo, self.hi
        nf, cf, cm, b = self.pool._nf, self.ci.cf, self.ci.c.cm_list, self.b
        for m in machines:
            p = bisect_left(cm, m, lo, hi)  # this level's cell on machine m, if any
            if p < hi and cm[p] == m and cf[p]:
                key = (cf[p], nf[m])
                h = b.get(key)
                if h is None:
                    b[key] = [p]
                else:
                    heappush(h, p)

    def _head(self, key: tuple[int, int]) -> int | None:
        """The smallest valid cell of bucket ``key``, dropping stale entries on the way."""
        h = self.b.get(key)
        if not h:
            return None
        cfk, nfk = key
        cf, nf, cm = self.ci.cf, self.pool._nf, self.ci.c.cm_list
        while h:
            c = h[0]
            if cf[c] == cfk and nf[cm[c]] == nfk:
                return c
            heappop(h)
        return None

    def cells(self, keys: list[tuple[int, int]]):
        """The valid cells of buckets ``keys`` in ascending order, each once (popped; :meth:`restore`
        pushes them back). The buckets must not change while this runs."""
        b = self.b
        heads: list[list[Any]] = []  # [cell, bucket key]
        for k in keys:
            c = self._head(k)
            if c is not None:
                heads.append([c, k])
        while heads:
            i = 0
            for j in range(1, len(heads)):
                if heads[j][0] < heads[i][0]:
                    i = j
            c, k = heads[i]
            h = b[k]
            while h and h[0] == c:  # the cell and its duplicates
                heappop(h)
            self.popped.append((k, c))
            yield c
            nc = self._head(k)
            if nc is None:
                heads.pop(i)
            else:
                heads[i][0] = nc

    def restore(self) -> None:
        b = self.b
        for k, c in self.popped:
            heappush(b[k], c)
        self.popped.clear()

    def free_gpus(self, cell: int) -> list[int]:
        """The free GPUs of ``cell``, ascending."""
        cs, free = self.ci.c.cs, self.pool.free
        return [g for g in self.ci.c.og[cs[cell] : cs[cell + 1]] if free[g]]

    # ---- the picks (each leaves the buckets as it found them) ------------------------------------
    def _fill(self, groups, need: int, consume: bool = False) -> list[int]:
        """The first ``need`` free GPUs of the cells of each bucket group in turn (cells ascending
        inside a group, GPUs ascending inside a cell). ``consume``: the caller takes them (every
        cell popped here is then empty or touched, so pushed again by the next sync), else the
        popped entries are pushed back."""
        b = self.b
        cf, nf, cm = self.ci.cf, self.pool._nf, self.ci.c.cm_list
        cs, og, free = self.ci.c.cs, self.ci.c.og, self.pool.free
        pick: list[int] = []
        popped: list[tuple[Any, int]] = []
        bh: Any
        bk: Any
        for keys in groups:
            hs = [(k, h) for k in keys if (h := b.get(k))]
            while hs and len(pick) < need:
                best, bh, bk = -1, None, None
                for k, h in hs:  # drop stale heads, find the smallest valid one
                    cfk, nfk = k
                    while h:
                        c = h[0]
                        if cf[c] == cfk and nf[cm[c]] == nfk:
                            if bh is None or c < best:
                                best, bh, bk = c, h, k
                            break
                        heappop(h)
                if bh is None:
                    break
                while bh and bh[0] == best:  # the cell and its duplicates
                    heappop(bh)
                popped.append((bk, best))
                for g in og[cs[best] : cs[best + 1]]:
                    if free[g]:
                        pick.append(g)
                        if len(pick) == need:
                            break
                hs = [x for x in hs if x[1]]
            if len(pick) == need:
                break
        if not consume:
            for k, c in popped:
                heappush(b[k], c)
        return pick

    def best_match(self, n: int, need: int) -> list[int]:
        """PM-First's tie-break inside this level: ``need`` GPUs by (|nf - n|, GPU index)."""
        P = self.P
        groups = []
        for d in range(max(0, n - P), max(n, P) + 1):
            nfs = [nf for nf in (n - d, n + d) if 1 <= nf <= P]
            if d == 0:
                nfs = nfs[:1]
            groups.append([(cf, nf) for nf in nfs for cf in range(1, nf + 1)])
        return self._fill(groups, need)

    def singles(self, need: int) -> list[int]:
        """``need`` successive single-GPU PM-First picks: cells by (nf, machine), drained in turn.
        The caller takes them."""
        groups = [[(cf, nf) for cf in range(1, nf + 1)] for nf in range(1, self.P + 1)]
        return self._fill(groups, need, consume=True)

    def fewest(self, n: int) -> tuple[list[int], list[int]]:
        """The fewest-machines fill of ``n`` GPUs from this level: cells by (cf desc, machine) while
        they do not cover ``n``, then the best fit (smallest cf >= the rest, lowest machine) among the
        others. Returns (cells, GPUs taken from each)."""
        P = self.P
        used: list[int] = []
        cum, kcf = 0, 0
        kth: Any = None
        for cf in range(P, 0, -1):
            for cell in self.cells([(cf, nf) for nf in range(cf, P + 1)]):
                if cum + cf >= n:
                    kth, kcf = cell, cf
                    break
                used.append(cell)
                cum += cf
            if kth is not None:
                break
        rest = n - cum
        last = kth
        for c in range(rest, kcf):
            cand = next(self.cells([(c, nf) for nf in range(c, P + 1)]), None)
            if cand is not None:
                last = cand
                break
        self.restore()
        cf = self.ci.cf
        return [*used, last], [int(cf[c]) for c in used] + [rest]

    def packed(self, n: int) -> int | None:
        """The cell with >= ``n`` free GPUs on the machine with the fewest free GPUs (then the lowest
        machine), or None."""
        for nf in range(n, self.P + 1):
            cell = next(self.cells([(cf, nf) for cf in range(n, nf + 1)]), None)
            if cell is not None:
                self.restore()
                return cell
        self.restore()
        return None
