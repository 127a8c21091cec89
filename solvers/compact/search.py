"""Leave-one-out values PF_{-i} of compact auctions too large to enumerate, by branch and bound over
the same joint choices (``compact.enumeration``), with no HiGHS model.

The enumeration ranks every feasible joint choice (a row: one option per app, Hall's condition
for the GPUs) by most unbounded apps served, then the largest log-sum (within ``TIE``), then fewest
GPUs, then the first row in option order, and PF_{-i} is the value of the best row in which app i
takes nothing. This module finds that same row without listing the others, in three depth-first
searches over the apps in their order (partial rows checked by Hall's condition as they grow):

1. the best (served, log-sum): options tried best first, a subtree cut when even its bound cannot
   reach the incumbent;
2. the fewest GPUs among rows with that served count and a log-sum within ``TIE`` of the best;
3. the first such row, in option order, with that many GPUs.

The bound of a partial row is the count relaxation of the apps still to choose: the best
(served, log-sum) they could add with the GPUs the offer has left, whatever their places (a
knapsack over GPU counts, solved once per problem). Log-sums are added in app order, as the
enumeration adds them, so the row found and its value are the enumeration's, bit for bit (tested
against it); cuts keep a margin far above rounding. A problem that needs more than ``node_limit``
partial rows in all returns None, and the caller solves it as before (LP chains).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from fairplace.formulations.compact import CompactProgram
from fairplace.formulations.pf import PFValue

from .enumeration import TIE, Options, _Fits

#: most partial rows (search nodes, all three searches) per leave-one-out problem before giving up
NODE_LIMIT = 20_000
#: relative margin of every cut (a bound below the target by less is not cut): far above the
#: rounding of a sum of a few dozen logs, far below any difference the ranking sees
MARGIN = 1e-9


@dataclass(frozen=True)
class _App:
    """One app's options as Python lists (option 0: nothing)."""

    mask: list[int]  # eligible groups as bits
    n: list[int]
    w: list[float]
    unbounded: bool
    by_w: list[int]  # option indices, largest w first (search 1)
    by_n: list[int]  # option indices, fewest GPUs first (search 2)

    @classmethod
    def of(cls, o: Options) -> _App:
        masks = [int.from_bytes(row.tobytes(), "little") for row in o.masks]
        n, w = o.n.tolist(), o.w.tolist()
        by_w = sorted(range(len(n)), key=lambda k: -w[k])
        by_n = sorted(range(len(n)), key=lambda k: n[k])
        return cls(masks, n, w, o.unbounded, by_w, by_n)


_UNSEEN = object()


class _Limit(Exception):
    """More search nodes than allowed."""


class _Search:
    """The three searches of one leave-one-out problem (module docstring)."""

    def __init__(self, apps: list[_App], caps: list[int], node_limit: int):
        self.apps, self.caps, self.left = apps, caps, node_limit
        self.total = sum(caps)
        self._cap: dict[int, int] = {0: 0}
        self._memo: dict = {}  # (state, mask, n) -> the next state or None (``_fits``)
        self.rest = self._relaxation()

    def cap(self, mask: int) -> int:
        """Free GPUs in the groups of ``mask``."""
        c = self._cap.get(mask)
        if c is None:
            c, m, q = 0, mask, 0
            while m:
                if m & 1:
                    c += self.caps[q]
                m >>= 1
                q += 1
            self._cap[mask] = c
        return c

    def _relaxation(self) -> list[list[tuple[int, float]]]:
        """rest[d][c]: the best (served, log-sum) apps d.. can add with c GPUs, places ignored."""
        C = self.total
        rest = [[(0, 0.0)] * (C + 1)]
        for a in reversed(self.apps):
            after, row = rest[0], []
            for c in range(C + 1):
                best = None
                for n, w in zip(a.n, a.w, strict=True):
                    if n <= c:
                        s, v = after[c - n]
                        cand = (s + (a.unbounded and n > 0), v + w)
                        if best is None or cand > best:
                            best = cand
                row.append(best if best is not None else (-1, -math.inf))
            rest.insert(0, row)
        return rest

    def _tick(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise _Limit

    def _fits(self, state: tuple, mask: int, n: int):
        """The row's demand per distinct group mask (``state``: sorted (mask, GPUs) pairs) with one
        more app (``mask``, ``n``), or None when Hall's condition fails. Apps with the same mask
        count as one (their union is the same, their demands add up), and only unions with the
        new mask can newly fail, so the check runs over the subsets of the other masks; memoised
        per (state, mask, n)."""
        key = (state, mask, n)
        out = self._memo.get(key, _UNSEEN)
        if out is not _UNSEEN:
            return out
        demand = dict(state)
        demand[mask] = demand.get(mask, 0) + n
        others = [(m, d) for m, d in demand.items() if m != mask]
        out = tuple(sorted(demand.items()))
        for bits in range(1 << len(others)):
            u, dem, k = mask, demand[mask], 0
            while bits:
                if bits & 1:
                    u |= others[k][0]
                    dem += others[k][1]
                bits >>= 1
                k += 1
            if dem > self.cap(u):
                out = None
                break
        self._memo[key] = out
        return out

    def best(self, start: tuple[int, float] | None = None) -> tuple[int, float]:
        """Search 1: the best (served, log-sum) of any row (``start``: the value of a feasible
        row, summed in app order, to cut with from the first node)."""
        self.top: tuple[int, float] | None = start
        self._best(0, 0, 0.0, 0, ())
        assert self.top is not None  # the row of nothing is always feasible
        return self.top

    def _best(self, d: int, served: int, ls: float, used: int, state) -> None:
        self._tick()
        if d == len(self.apps):
            if self.top is None or (served, ls) > self.top:
                self.top = (served, ls)
            return
        a = self.apps[d]
        for k in a.by_w:
            n = a.n[k]
            if used + n > self.total:
                continue
            s2 = served + (a.unbounded and n > 0)
            rs, rv = self.rest[d + 1][self.total - used - n]
            if self.top is not None and not self._may_reach(s2 + rs, ls + a.w[k] + rv, self.top):
                continue
            sub = self._fits(state, a.mask[k], n) if n else state
            if sub is not None:
                self._best(d + 1, s2, ls + a.w[k], used + n, sub)

    @staticmethod
    def _may_reach(served: int, bound: float, target: tuple[int, float]) -> bool:
        """Whether a subtree bounded by (served, bound) may reach (or beat) ``target``."""
        if served != target[0]:
            return served > target[0]
        return bound >= target[1] - MARGIN * (1.0 + abs(target[1]))

    def fewest(self, served: int, floor: float) -> int:
        """Search 2: the fewest GPUs of a row with ``served`` apps served and log-sum >= ``floor``."""
        self.g_best = self.total + 1
        self._fewest(0, 0, 0.0, 0, (), served, floor)
        return self.g_best

    def _fewest(self, d, served, ls, used, state, s_goal, floor) -> None:
        self._tick()
        if d == len(self.apps):
            if served == s_goal and ls >= floor and used < self.g_best:
                self.g_best = used
            return
        a = self.apps[d]
        for k in a.by_n:
            n = a.n[k]
            if used + n >= self.g_best:
                break  # sorted by n: the rest take as many or more
            s2 = served + (a.unbounded and n > 0)
            rs, rv = self.rest[d + 1][self.total - used - n]
            if not self._may_reach(s2 + rs, ls + a.w[k] + rv, (s_goal, floor)):
                continue
            sub = self._fits(state, a.mask[k], n) if n else state
            if sub is not None:
                self._fewest(d + 1, s2, ls + a.w[k], used + n, sub, s_goal, floor)

    def first(self, served: int, floor: float, gpus: int) -> list[int] | None:
        """Search 3: the first row in option order with ``served``, log-sum >= ``floor`` and
        ``gpus`` GPUs."""
        return self._first(0, 0, 0.0, 0, (), [], served, floor, gpus)

    def _first(self, d, served, ls, used, state, row, s_goal, floor, g_goal):
        self._tick()
        if d == len(self.apps):
            ok = served == s_goal and ls >= floor and used == g_goal
            return list(row) if ok else None
        a = self.apps[d]
        for k in range(len(a.n)):
            n = a.n[k]
            if used + n > g_goal:
                continue
            s2 = served + (a.unbounded and n > 0)
            rs, rv = self.rest[d + 1][self.total - used - n]
            if not self._may_reach(s2 + rs, ls + a.w[k] + rv, (s_goal, floor)):
                continue
            sub = self._fits(state, a.mask[k], n) if n else state
            if sub is not None:
                row.append(k)
                hit = self._first(d + 1, s2, ls + a.w[k], used + n, sub, row, s_goal, floor, g_goal)
                if hit is not None:
                    return hit
                row.pop()
        return None


def best_row(prog: CompactProgram, opts: list[Options], node_limit: int = NODE_LIMIT, start=None):
    """The enumeration's best row of ``prog`` (one option index per active app, in
    ``prog.active`` order; ``opts`` their options), or None beyond ``node_limit`` search nodes.
    ``start``: a feasible row's cells {app: cell} (the search then cuts from its value)."""
    apps = [_App.of(o) for o in opts]
    caps = [len(g.gpus) for g in prog.groups]
    try:
        s = _Search(apps, caps, node_limit)
        served, top = s.best(None if start is None else _value(prog, opts, apps, start))
        floor = top - TIE * (1.0 + abs(top))  # as ``enumeration._argbest`` ranks ties
        gpus = s.fewest(served, floor)
        row = s.first(served, floor, gpus)
    except _Limit:
        return None
    assert row is not None  # the rows of searches 1 and 2 qualify
    return row


def _value(prog: CompactProgram, opts: list[Options], apps: list[_App], cells: dict):
    """(served, log-sum in app order) of the row giving each app its cell in ``cells`` (or
    nothing): w read from the options, as the rows' sums read it; None when a cell is not one of
    the app's options."""
    served, ls = 0, 0.0
    for j, o, a in zip(prog.active, opts, apps, strict=True):
        k = 0
        if j in cells:
            k = next((k for k, c in enumerate(o.cells) if c == cells[j]), -1)
            if k < 0:
                return None
        served += a.unbounded and k > 0
        ls += a.w[k]
    return served, ls


def leave_one_out(
    prog: CompactProgram, apps, node_limit: int = NODE_LIMIT, choice=None
) -> dict[int, PFValue] | None:
    """PF_{-i} of each app i of ``apps``, the values ``enumeration.leave_one_out`` gives (the same
    options, row and sums), or None as soon as one problem needs more than ``node_limit`` nodes.
    ``choice``: the PF ({app: (cell, GPUs)}); PF minus i, feasible for PF_{-i}, starts its search."""
    opts = {j: _Fits.of(prog, j).options() for j in prog.active}
    out = {}
    for i in apps:
        sub = replace(prog, exclude=prog.exclude | {i})
        start = None if choice is None else {j: v[0] for j, v in choice.items() if j != i}
        row = best_row(sub, [opts[j] for j in sub.active], node_limit, start)
        if row is None:
            return None
        picked = {j: opts[j].cells[o] for j, o in zip(sub.active, row, strict=True) if o}
        value_of = CompactProgram(prog.cluster, prog.offer, prog.apps, sub.exclude | {i})
        out[i] = value_of.value({j: (c, ()) for j, c in picked.items()})
    return out
