"""Leave-one-out payments of many apps at once: the *who leaves* MILP (``formulations/compact_leave.py``).

Its optimum over the open apps S is PF + max_{j in S} D_j (D_j = PF_{-j} - (PF - w_j(c_j)),
c_j = exp(-D_j), c_j: j's PF cell), and its optimal point x* has l_t = 1 for an app t attaining
it. An open app j interchangeable with t (``compact_leave.bundle_keys``) that holds a bundle B of
cell c' in x*, c' a cell of t, gives a PF_{-j} point: j leaves and t takes B (B satisfies c' for t
too), worth x*'s value - w_j(c') - w_t(c_t) + w_t(B), w_t(B) >= w_t(c'). So

    D_t + g_j <= D_j <= D_t,   g_j = [w_t(c') - w_t(c_t)] + [w_j(c_j) - w_j(c')]

(the upper bound: D_j is one of the values the MILP maximises). Where g_j = 0 (c' = c_j = c_t:
alike apps of t's PF cell that keep their bundle's cell in x*) D_j = D_t exactly; so one MILP
settles a whole class of alike apps (1,024 GPUs x 256 apps: 19 MILPs for 256 apps; a removed app's
GPUs go to the same few upgrades whoever of a class frees them). Otherwise D_t + g_j is kept as a
lower bound on D_j. The settled apps' l are fixed to 0 and the MILP solved again (its LP warm, by
dual simplex); an app whose lower bound reaches the next MILP's Lagrangian bound UB(y) is settled
without a MILP. Each MILP: reduced-cost fixing at the floor (the best lower bound when within
``rc.TARGET_GAP`` of UB(y), else UB(y) - TARGET_GAP) and the small MILP left (``compact.rc``): its
optimum is the MILP's when it reaches the floor. If it does not, or fixing keeps more than
:data:`MAX_COLUMNS` columns, the route stops and the apps left take the per-app route
(``compact.pa_payments``). If the optimum has no l on, every open D_j is 0 (c_j = 1).

Warm starts (none changes an optimum): the first LP starts from the PF LP's optimal basis
(:func:`extended_basis`); each MILP gets the best point placed from its LP point's cells
(:class:`_LPPoints`) as its start and floor, and is skipped where that point reaches UB(y).

``pa_payments`` uses it when the PF's LP split apps (its PF_{-i} LPs split too, and the per-app
route closes each by a MILP); where the PF's LP cells were placed (4,096 GPUs x 256 apps), each
PF_{-i} LP is placed alike and the per-app LPs are cheaper than this MILP.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import highspy
import numpy as np

from fairplace.formulations.compact import CompactProgram
from fairplace.formulations.compact_leave import bundle_keys, leave_program
from fairplace.formulations.compact_milp import Choice
from fairplace.formulations.pf import PFValue

from ..backends import get_backend, highs
from .lp import rerun
from .packing import PACK_RULES, pack
from .rc import (
    FIX_MARGIN,
    TARGET_GAP,
    fix_by_reduced_cost,
    forcing_rows,
    lagrangian_bound,
    restrict,
    row_signs,
)

#: a bound gain above -SAME counts as 0 (the same cell: exactly 0; log-differences of alike cells)
SAME = 1e-12
#: fewest apps to settle for which the who-leaves MILP is tried (its LP is the PF's, ~0.5 s cold
#: at 1,024 GPUs x 256 apps; below, the per-app route of ``compact.pa_payments`` is as quick)
MIN_APPS = 16
#: most columns a small MILP may keep after fixing (1,024 GPUs x 256 apps: 900-1,700); beyond,
#: the route stops and the per-app route settles the apps left
MAX_COLUMNS = 5_000
#: most placements of LP-point candidates tried per MILP (``_LPPoints``; ~5-15 ms each)
TRIES = 3
#: most roundings of the LP point's split apps combined (``_LPPoints``)
COMBOS = 16
#: the first floor below UB(y) tried when no known point is closer (then ``rc.TARGET_GAP``): every
#: who-leaves optimum of 1,024 GPUs x 256 apps lay within 2.7e-3 of its UB(y)
FIRST_GAP = 3e-3


def leave_max(
    prog: CompactProgram,
    choice: Choice,
    todo: list[int],
    opts,
    budget,
    log: dict | None = None,
    basis=None,
) -> dict[int, PFValue]:
    """{j: PF_{-j} (the others' value)} of the apps of ``todo`` the who-leaves MILP settles
    (module docstring); the others are left out. ``log``, if given, gets ``iterations``.
    ``basis``: an optimal basis of ``prog.milp``'s LP (the PF's): the first LP starts from it
    (:func:`extended_basis`)."""
    apps = prog.apps
    if len(todo) < MIN_APPS or any(apps[i].w_empty is None for i in prog.active):
        return {}
    o = budget.options(opts)
    if o is None:
        return {}
    n = prog.milp.n_cols
    S = sorted(todo)
    G = leave_program(prog, choice, S)
    lp = G.relaxed()
    h = highs.build(lp, o)
    if basis is not None:
        h.setOptionValue("presolve", "off")  # presolve would drop the basis
        h.setOptionValue("simplex_strategy", 4)  # primal: the basis stays primal feasible
        h.setBasis(extended_basis(basis, len(S)))
    signs = row_signs(G)
    alike = _Alike(prog, choice, S, G)
    lp_points = _LPPoints(prog, S)
    pos = {j: n + k for k, j in enumerate(S)}
    open_ = set(S)
    low = dict.fromkeys(S, -np.inf)  # lower bounds on PF_{-j} + w_j(c_j) (G's value, j leaving)
    src: dict[int, tuple[np.ndarray, int]] = {}  # j -> (x*, its leaver) of j's lower bound
    out: dict[int, PFValue] = {}
    it = 0
    while open_:
        it += 1
        o = budget.options(opts)
        if o is None:
            break
        if o.time_limit is not None:
            h.setOptionValue("time_limit", float(h.getRunTime() + o.time_limit))
        res = rerun(h, lp)
        if res.status != "optimal":
            break
        y = np.asarray(h.getSolution().row_dual, dtype=float)
        ub_y, _ = lagrangian_bound(G, y)
        tol = max(o.mip_abs_gap, o.mip_rel_gap * abs(ub_y), 1e-9)
        done = [j for j in open_ if low[j] >= ub_y - tol]  # a known point reaches the bound
        out.update({j: PFValue(0, low[j] - alike.w[j]) for j in done})
        if not done:
            best = max(open_, key=lambda j: low[j])
            known = low[best]
            start: Callable[[], np.ndarray | None] | None = None
            if best in src:
                x_best, leaver = src[best]
                start = partial(alike.swap, G, x_best, leaver, best, pos)
            x_lp = res.x
            assert x_lp is not None  # optimal: a point (highs.read)
            got = None  # the LP point's cells placed, where no known point is as close
            if known < ub_y - FIRST_GAP or not lp_points.split(x_lp):
                got = lp_points.point(G, x_lp, ub_y, max(known, ub_y - FIRST_GAP))
            hit: tuple[np.ndarray, float] | None = None
            if got is not None and got[1] >= ub_y - tol:  # it reaches the bound: optimal
                hit = got
            else:
                if got is not None and got[1] > known:
                    known, start = got[1], partial(got[0].copy)
                hit = _best_point(G, y, ub_y, o, signs, known, start)
            if hit is None:
                break
            x, value = hit
            on = [j for j in S if x[pos[j]] > 0.5]
            if not on:  # a PF point is optimal: D_j = 0 for every open j (c_j = 1)
                out.update({j: PFValue(0, value - alike.w[j]) for j in open_})
                break
            (top,) = on
            done = [top]
            for j in open_:
                gain = alike.bound(x, top, j)  # D_j >= D_top + gain
                if j != top and gain >= -SAME:
                    done.append(j)
                elif value + gain > low[j]:
                    low[j], src[j] = value + gain, (x, top)
            out.update({j: PFValue(0, value - alike.w[j]) for j in done})
        open_.difference_update(done)
        cols = np.array([pos[j] for j in done], dtype=np.int32)
        zero = np.zeros(cols.size)
        h.changeColsBounds(cols.size, cols, zero, zero)
        col_ub = G.col_ub.copy()
        col_ub[cols] = 0.0
        G = replace(G, col_ub=col_ub)
        # dual simplex: a bound change keeps the basis dual feasible
        h.setOptionValue("simplex_strategy", 1)
    if log is not None:
        log["iterations"] = it
    return out


def extended_basis(basis, k: int):
    """The PF LP's ``basis`` as one of the who-leaves LP over k apps (``leave_program``): every
    l_j nonbasic at 0, the k + 1 new rows basic. Primal feasible (l = 0: the PF LP's point);
    primal simplex then moves the few l_j worth taking (~5x fewer iterations than a cold solve,
    1,024 GPUs x 256 apps)."""
    out = highspy.HighsBasis()
    out.col_status = list(basis.col_status) + [highspy.HighsBasisStatus.kLower] * k
    out.row_status = list(basis.row_status) + [highspy.HighsBasisStatus.kBasic] * (k + 1)
    out.valid = True
    return out


class _Alike:
    """Lower bounds on D_j from the who-leaves point x* whose leaver is ``top``: if j and top
    are interchangeable (``bundle_keys``) and j holds cell c' in x*, a cell top may take, then
    j leaving and top taking j's bundle is a PF_{-j} point, so
    D_j >= D_top + [w_top(c') - w_top(c_top)] + [w_j(c_j) - w_j(c')]  (module docstring)."""

    def __init__(self, prog: CompactProgram, choice: Choice, S: list[int], G):
        n = prog.milp.n_cols
        self.keys = bundle_keys(prog)
        _, meta = prog.layout
        self.cols = {e["i"]: (e["z"], e["cells"]) for e in meta}
        self.n = n
        self.decoded: dict = {}
        self.feasible = {i: set(prog.feasible_cells(i)) for i in S}
        self.choice, self.prog = choice, prog
        self.w = {j: G.c[n + k] + prog.apps[j].w_empty for k, j in enumerate(S)}  # w_j(c_j)

    def cell(self, x: np.ndarray, j: int):
        """j's cell in ``x`` (None: no cell)."""
        z, cells = self.cols[j]
        on = np.flatnonzero(x[z : z + len(cells)] > 0.5)
        return cells[int(on[0])] if on.size else None

    def swap(self, G, x: np.ndarray, top: int, j: int, pos: dict) -> np.ndarray | None:
        """The PF_{-j} point of :meth:`bound` as a point of ``G`` (j leaves, ``top`` takes j's
        bundle in ``x`` at its cell there), or None where it is not feasible."""
        key = id(x)
        if key not in self.decoded:  # one decoding per who-leaves point
            self.decoded = {key: self.prog.decode(x[: self.n])}
        ch = dict(self.decoded[key])
        if j not in ch:
            return None
        ch[top] = ch.pop(j)
        y = np.zeros(G.n_cols)
        y[: self.n] = self.prog.start_vector(ch)
        y[pos[j]] = 1.0
        return y if G.is_feasible(y) else None

    def bound(self, x: np.ndarray, top: int, j: int) -> float:
        """The gain of :class:`_Alike`'s bound (-inf where it does not apply)."""
        if self.keys[j] is None or self.keys[j] != self.keys[top]:
            return -np.inf
        c = self.cell(x, j)
        if c is None or c not in self.feasible[top]:
            return -np.inf
        cj, ct = self.choice[j][0], self.choice[top][0]
        if c == cj == ct:
            return 0.0
        rt, rj = self.prog.apps[top].table.rho, self.prog.apps[j].table.rho
        return float(np.log(rt[ct]) - np.log(rt[c]) + np.log(rj[c]) - np.log(rj[cj]))


class _LPPoints:
    """Points of the who-leaves MILP from its LP point x: the leaver (largest l_j in x), every
    other app's integral cell in x, each app that x splits on one of its cells there, and at most
    one app moved one GPU up or down its cell (n +- 1 at the same spread and level: the GPUs the
    rounding frees or takes). Candidates are ranked by value (their cells' gains; no placement
    needed) and those in [floor, UB(y)] placed by the greedy ``pack``, best first, at most
    :data:`TRIES`. 1,024 GPUs x 256 apps: the best candidate placed is the MILP's optimum in 11 of
    15 MILPs (where the LP's cells are integral it reaches the LP bound: no MILP), else a start."""

    def __init__(self, prog: CompactProgram, S: list[int]):
        self.prog, self.S = prog, S
        self.n = prog.milp.n_cols
        _, meta = prog.layout
        self.col = {e["i"]: {c: e["z"] + k for k, c in enumerate(e["cells"])} for e in meta}

    def _cells(self, x: np.ndarray) -> tuple[dict, set, int | None]:
        """({app: its integral cell}, the split apps, the leaver: largest l > 0, or None) of the
        LP point ``x``; an app with a fractional z or (another) fractional l is split."""
        cols, owner, cells_of = self.prog.selector_index
        z = x[cols]
        split = set(owner[(z > 1e-7) & (z < 1 - 1e-7)].tolist())
        cells = {int(owner[k]): cells_of[k] for k in np.flatnonzero(z >= 1 - 1e-7)}
        ls = x[self.n :]
        top = int(np.argmax(ls)) if ls.size else -1
        leaver = self.S[top] if top >= 0 and ls[top] > 1e-7 else None
        split.update(self.S[k] for k in np.flatnonzero((ls > 1e-7) & (ls < 1 - 1e-7)))
        split.discard(leaver)
        for i in split | {leaver}:
            cells.pop(i, None)  # type: ignore[arg-type]
        return cells, split, leaver

    def split(self, x: np.ndarray) -> bool:
        """Whether the LP point ``x`` splits an app (``_cells``)."""
        return bool(self._cells(x)[1])

    def point(self, G, x: np.ndarray, ub: float, floor: float) -> tuple[np.ndarray, float] | None:
        """(a point of ``G`` from the LP point ``x`` of value in [``floor``, ``ub``], its value),
        the best placed of the candidates (class docstring), or None."""
        cells, split, leaver = self._cells(x)
        col, c = self.col, G.c
        base = G.offset + sum(c[col[i][v]] for i, v in cells.items())
        if leaver is not None:
            base += c[self.n + self.S.index(leaver)]
        ways = [[(i, v, c[k]) for v, k in col[i].items() if x[k] > 1e-7] for i in sorted(split)]
        moves: list[tuple | None] = [None]  # one app one GPU up or down
        for i, (n, s, v) in cells.items():
            for m in (n - 1, n + 1):
                k = col[i].get((m, s, v))
                if k is not None:
                    moves.append((i, (m, s, v), c[k] - c[col[i][n, s, v]]))
        cands = []
        for combo in itertools.islice(itertools.product(*ways), COMBOS):
            v0 = base + sum(g for _, _, g in combo)
            for mv in moves:
                v = v0 + (mv[2] if mv is not None else 0.0)
                if floor <= v <= ub + 1e-7:  # above UB(y): not feasible
                    cands.append((v, combo, mv))
        cands.sort(key=lambda t: -t[0])
        for _, combo, mv in cands[:TRIES]:
            want = cells | {i: v for i, v, _ in combo}
            if mv is not None:
                want[mv[0]] = mv[1]
            choice = pack(self.prog, want, PACK_RULES[0])  # one rule: a start, not a proof
            if choice is None:
                continue
            y = np.zeros(G.n_cols)
            y[: self.n] = self.prog.start_vector(choice)
            if leaver is not None:
                y[self.n + self.S.index(leaver)] = 1.0
            if G.is_feasible(y):
                return y, G.value(y)
        return None


def _best_point(
    G,
    y: np.ndarray,
    ub_y: float,
    o,
    signs,
    known: float,
    start: Callable[[], np.ndarray | None] | None = None,
) -> tuple[np.ndarray, float] | None:
    """(optimal point, value) of the who-leaves MILP ``G``, or None: every point of value at
    least the floor survives reduced-cost fixing at it (``compact.rc``), and the small MILP left is
    solved; its optimum is ``G``'s when it reaches the floor (less ``FIX_MARGIN``: fixing keeps
    every point that good). The floors, highest first: UB(y) - :data:`FIRST_GAP`, UB(y) -
    ``TARGET_GAP`` (``ub_y`` = UB(y)), while above ``known`` (a lower bound on ``G``'s optimum),
    then ``known`` itself (its point reaches it). ``start``: a callable giving a point of ``G``
    worth ``known`` or None (built only where it survives fixing: HiGHS' first incumbent)."""
    for gap in (FIRST_GAP, TARGET_GAP):
        if ub_y - gap <= known:
            break
        hit = _closed(G, y, ub_y - gap, o, signs, start, known)
        if hit is not None:
            return hit
    return None if known == -np.inf else _closed(G, y, known, o, signs, start, known)


def _closed(G, y: np.ndarray, target: float, o, signs, start, known: float):
    """:func:`_best_point` at the floor ``target`` (``start`` used when ``known`` reaches it)."""
    lb, ub, _ = fix_by_reduced_cost(G, y, target)
    lb, ub = forcing_rows(G, lb, ub, signs=signs)
    small, free = restrict(G, lb, ub)
    if small.n_cols > MAX_COLUMNS:  # fixing left too much: the per-app route decides
        return None
    o = o.with_(mip_allow_restart=True, presolve_mode=1, mip_feasibility_jump=False)
    if o.mip_pool_soft_limit is None:
        o = o.with_(mip_pool_soft_limit=50)
    x0 = start() if start is not None and known >= target - FIX_MARGIN else None
    if x0 is not None and not ((x0 >= lb).all() and (x0 <= ub).all()):
        x0 = None
    res = get_backend("highs").solve(small, o, start=None if x0 is None else x0[free])
    if res.status != "optimal" or res.x is None:
        return None
    x = lb.copy()
    x[free] = np.round(res.x)
    if not G.is_feasible(x):  # never expected: the per-app route decides
        return None
    v = G.value(x)
    return (x, v) if v >= target - FIX_MARGIN else None  # what fixing keeps (``rc``)
