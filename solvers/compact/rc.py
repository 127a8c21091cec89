"""Leave-one-out PF_{-i} by reduced-cost fixing (exact; the payments' hard case).

On contended offers (1,024 GPUs x 256 apps) ~3/4 of the leave-one-out LPs split one or two apps:
the capacity rows act as a knapsack over GPU counts, and branching on one selector moves the split
to another app (tens of LPs per branch). What closes them fast is a good incumbent: given one, the
LP's duals prove most columns can only take their LP value in any better point, and the MILP left
has a few hundred columns. For  max c x + c0  s.t.  rl <= A x <= ru,  l <= x <= u  and any row
prices y (here: the leave-one-out LP's duals), weak duality gives, with d = c - A'y,

    c x + c0 <= UB(y) = c0 + sum_r max(y_r rl_r, y_r ru_r) + sum_j max(d_j l_j, d_j u_j)

for every feasible x (:func:`lagrangian_bound`; valid for any y, so HiGHS' dual accuracy only
affects how much is fixed, never correctness). Moving an integer x_j one step off its best bound
costs |d_j|: when UB(y) - |d_j| < L - tol, every point of value >= L has x_j at that bound
(:func:`fix_by_reduced_cost`). Forcing rows then fix what the fixed columns imply, the fixed
columns leave the program (:func:`restrict`: ~1,000 of ~29,000 columns are left) and HiGHS solves
the rest (:func:`_fixed_milp`). Its optimum is PF_{-i} whenever it is >= L. The floor L is

* the best start when it is within :data:`TARGET_GAP` of the bound: the PF_{-j} optimum of an
  app j with i's PF cell with i put in j's place (:func:`swap_in`; usually optimal already), or
  PF minus i; it is also HiGHS' warm start, so the small MILP always reaches L;
* else the target UB(y) - TARGET_GAP (every leave-one-out optimum of 1,024 GPUs x 256 apps lies
  within 2.7e-3 of its LP); only if that MILP has no point >= the target does a *dive* on the
  live LP model (fix the largest fractional cell selector to 1, re-solve by dual simplex, until
  the cells are integral and placed, ``compact.lp.from_lp``) look for an incumbent to use as L.

Before either: when the cells that fixing at the best start's value leaves have at most
:data:`ENUM_AFTER_FIXING` joint choices (THEMIS' 5-8 bidder auctions on a few machines), their
best joint choice is enumerated instead (:func:`_enumerated`, no MILP, no dive): fixing keeps every
point at least as good as the start, so that choice is PF_{-i}.

Measured on 1,024 GPUs x 256 apps, PF_{-i} equals HiGHS' full MILP (8-13 s each) on the apps
checked.

The bound, the fixing, forcing rows, the restriction and the repricing are in :mod:`.rc_fixing`
(re-exported here); this module searches PF_{-i} with them.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from fairplace.formulations.compact import CompactProgram
from fairplace.formulations.program import MILP, RawResult

from ..backends import get_backend, highs
from ..options import SolveOptions
from .bb import _incumbent
from .enumeration import best_within
from .lp import from_lp, rerun, selector_columns
from .packing import best_subbundle
from .rc_fixing import (  # noqa: F401 - re-exported: the old import path (pa_leave, pa_payments)
    FIX_MARGIN,
    block_owners,
    fix_by_reduced_cost,
    forcing_rows,
    lagrangian_bound,
    reprice,
    restrict,
    row_signs,
)

#: most joint choices of the cells left by fixing at the start's value that are enumerated
#: (:func:`_enumerated`) instead of the fixed MILP. W2 x4 seed 0, 300 captured problems: 76% fit;
#: 1.7 ms each against 5 ms by fixed MILPs (and dives); at 200,000, 91% fit but cost as much
ENUM_AFTER_FIXING = 60_000
#: most LPs one dive may solve (each fixes one cell selector to 1)
DIVE_LIMIT = 60
#: with no start this close to the bound, the first small MILP keeps only the points within this
#: of the bound (1,024 GPUs x 256 apps: every leave-one-out optimum was 7e-5 to 2.7e-3 below its
#: LP); only if its optimum is below that does a dive look for an incumbent
TARGET_GAP = 0.01


def leave_one_out(
    prog: CompactProgram,
    milp: MILP,
    h,
    lp_model: MILP,
    opts: SolveOptions,
    budget,
    skip: int,
    starts: tuple[dict, ...] = (),
    signs=None,
    y: np.ndarray | None = None,
):
    """(RawResult, choice) of PF_{-skip}, or None (budget spent, or HiGHS did not finish).

    ``h``: the live model of ``lp_model`` (the relaxation of ``milp``, app ``skip``'s gains set to
    0) at its optimum; its bounds and options are restored, not its solution. ``milp``: the full
    program; app ``skip``'s selectors are fixed to 0 here, so values are PF_{-skip} + w_skip0
    (as in ``compact.bb``). ``starts``: choices without ``skip`` (PF minus skip, :func:`swap_in`
    of other apps' PF_{-j}); the best feasible one is the incumbent. If what fixing at its value
    leaves is small, it is enumerated (:func:`_enumerated`); else, when the incumbent is within
    :data:`TARGET_GAP` of the LP bound, one small MILP closes it; otherwise the first small MILP
    keeps the points within TARGET_GAP of the bound, and only if it has none does a dive look for
    a better incumbent.
    ``signs``: :func:`row_signs` of ``milp``. ``y``: row prices to fix by instead of ``h``'s
    duals (another leave-one-out LP's, :func:`lagrangian_bound` holds for any prices; ``h`` is
    then not read): no target MILP and no dive, None unless a start exists and the MILP closes."""
    t0 = time.perf_counter()
    _, meta = prog.layout
    (e,) = [e for e in meta if e["i"] == skip]
    mine = np.arange(e["z"], e["z"] + len(e["cells"]))
    c = milp.c.copy()
    c[mine] = 0.0
    col_ub = milp.col_ub.copy()
    col_ub[mine] = 0.0
    loo = replace(milp, c=c, col_ub=col_ub)
    shared = y is not None
    if y is None:
        y = np.asarray(h.getSolution().row_dual, dtype=float)
    best = best_start(prog, loo, starts)
    ub_y, _ = lagrangian_bound(loo, y)
    tol = max(opts.mip_abs_gap, opts.mip_rel_gap * abs(ub_y), 1e-9)
    if best is not None and ub_y <= best[0] + tol:  # the start reaches the bound: optimal
        return replace(best[1], bound=ub_y, seconds=time.perf_counter() - t0), best[2]
    if best is not None:  # what survives fixing at the start's value, enumerated when small
        hit = _enumerated(prog, meta, loo, y, best, skip)
        if hit is not None:
            return _done(hit, t0)
    target = ub_y - TARGET_GAP
    if shared and (best is None or best[0] < target):  # the caller solves the LP instead
        return None
    if best is None or best[0] < target:
        # a poor start: every point within TARGET_GAP of the bound survives fixing at the target;
        # if the small MILP's optimum reaches the target, it is PF_{-i}
        hit = _fixed_milp(prog, loo, y, target, None, opts, budget, signs)
        if hit is not None and hit[0] >= target:
            return _done(hit, t0)
        dived = _dive(prog, loo, h, lp_model, opts, budget, skip, best)  # below it: an incumbent
        if dived is not None and (best is None or dived[0] > best[0]):
            best = dived
    if best is None:
        return None
    hit = _fixed_milp(prog, loo, y, best[0], best, opts, budget, signs)
    return None if hit is None else _done(hit, t0)


def _done(hit, t0: float):
    v, res, choice = hit
    msg = "optimal (reduced-cost fixing)"
    out = replace(res, status="optimal", bound=max(v, res.bound or v), message=msg)
    return replace(out, seconds=time.perf_counter() - t0), choice


def _fixed_milp(prog, loo: MILP, y, floor: float, best, opts, budget, signs):
    """(value, RawResult, choice) of the best point of value >= ``floor`` (``best``, a point of
    value ``floor``, if nothing is better), or None (budget spent, HiGHS did not finish, or no
    such point when ``best`` is None): every integer column whose move off its best bound costs
    more than UB(y) - ``floor`` is fixed (:func:`fix_by_reduced_cost`), forcing rows fix what
    that implies, and HiGHS solves the columns left, warm-started with ``best``."""
    o = budget.options(opts)
    if o is None:
        return None
    lb, ub, _ = fix_by_reduced_cost(loo, y, floor)
    lb, ub = forcing_rows(loo, lb, ub, signs=signs)
    small, free = restrict(loo, lb, ub)
    # restarts on: with the incumbent most columns go inactive at the root and HiGHS restarts on
    # what is left (8 such MILPs of 1,024 GPUs x 256 apps, best of 5: 0.42 s, without: 0.59 s);
    # presolve's initial sweep only and no feasibility jump: the start is usually optimal and
    # full presolve (probing) was half of each solve (all 216 such MILPs of that instance,
    # replayed: 15-18 s -> 8-9 s, the same optima); a cut pool of 50 (every one of those MILPs
    # closes at the root, on cuts: 14.9 s -> 12.9 s CPU replayed, the same optima)
    o = o.with_(mip_allow_restart=True, presolve_mode=1, mip_feasibility_jump=False)
    if o.mip_pool_soft_limit is None:
        o = o.with_(mip_pool_soft_limit=50)
    start = None if best is None else best[1].x[free]
    res = get_backend("highs").solve(small, o, start=start)
    if res.status != "optimal":
        # infeasible with a start: impossible (``best`` survives the fixing), so HiGHS' answer is
        # not to be trusted and nothing is proven; like a failed or cut-short solve, None lets the
        # caller's full solve decide
        return None
    if (
        res.x is not None
        and res.objective is not None
        and (best is None or res.objective > best[0])
    ):
        x = lb.copy()
        x[free] = np.round(res.x)
        if not loo.is_feasible(x):  # never expected: let the caller's full solve decide
            return None
        v = loo.value(x)
        if best is None or v > best[0]:
            return v, replace(res, x=x, objective=v), prog.decode(x)
    return best


def _enumerated(prog, meta, loo: MILP, y, best, skip: int):
    """(value, RawResult, choice) of PF_{-skip}, the best point of value >= ``best``'s, by
    enumerating the cells no fixing at ``best``'s value removes (``compact.enumeration.best_within``:
    the exact model, placements by Hall's condition; the fixed placement columns are not used),
    or None above :data:`ENUM_AFTER_FIXING` joint choices. ``best`` survives, so the optimum does."""
    _, ub, _ = fix_by_reduced_cost(loo, y, best[0])
    allowed = {e["i"]: ub[e["z"] : e["z"] + len(e["cells"])] > 0.5 for e in meta if e["i"] != skip}
    choice = best_within(prog.excluding({skip}), allowed, ENUM_AFTER_FIXING)
    if choice is None:
        return None
    x = prog.start_vector(choice)
    if not loo.is_feasible(x):  # never expected: the MILP route decides
        return None
    v = loo.value(x)
    if v <= best[0]:  # the start is as good (a tie, or the same point)
        return best
    return v, RawResult("optimal", x, v, v, 0.0), choice


def best_start(prog: CompactProgram, milp, starts) -> tuple | None:
    """(value, RawResult, choice) of the best start that is feasible for ``milp`` (starts in
    value order; usually the first), or None: :func:`leave_one_out`'s incumbent."""
    for start in sorted(starts, key=lambda ch: _rank(prog.value(ch)), reverse=True):
        best = _incumbent(prog, milp, start)
        if best is not None:
            return best
    return None


def _rank(v) -> tuple[int, float]:
    return v.n_unbounded_served, v.log_sum


def _dive(prog, loo: MILP, h, lp_model: MILP, opts, budget, skip: int, best):
    """(value, RawResult, choice) of the first integral, placeable node of a dive from the live
    LP ``h`` (largest fractional selector fixed to 1 per LP), or None; stops early when an LP
    value falls to ``best``'s. Restores ``h``'s bounds and options (not its solution)."""
    zcols, mine = selector_columns(prog, skip)
    if not zcols.size:
        return None
    lb0, ub0 = lp_model.col_lb[zcols].copy(), lp_model.col_ub[zcols].copy()
    lb = lb0.copy()
    strategy = h.getOptionValue("simplex_strategy")[1]
    iter_limit = h.getOptionValue("simplex_iteration_limit")[1]
    h.setOptionValue("simplex_strategy", 1)  # dual: a bound change keeps the basis dual feasible
    h.setOptionValue("simplex_iteration_limit", 20_000)
    try:
        lp = highs.read(h, lp_model, 0.0)  # the leave-one-out LP, then each dive LP
        for _ in range(DIVE_LIMIT):
            if lp.status != "optimal":  # no optimum even from scratch: no incumbent from here
                return None
            assert lp.x is not None  # optimal: a point (highs.read)
            x = lp.x.copy()
            x[mine] = 0.0
            v = loo.value(x)
            if best is not None and v <= best[0]:
                return None  # the dive cannot beat the incumbent
            z = x[zcols]
            frac = np.abs(z - np.round(z))
            if frac.max() <= 1e-7:
                lp = RawResult("optimal", x, v, v, 0.0)
                hit = from_lp(prog, loo, lp, opts, skip=skip, budget=budget)
                return None if hit is None else (hit[0].objective, hit[0], hit[1])
            if budget.options(opts) is None:
                return None
            k = int(np.argmax(np.where(frac > 1e-7, z, -1.0)))
            lb[k] = 1.0
            h.changeColsBounds(zcols.size, zcols, lb, ub0)
            lp = rerun(h, lp_model)
        return None
    finally:
        h.changeColsBounds(zcols.size, zcols, lb0, ub0)
        h.setOptionValue("simplex_strategy", strategy)
        h.setOptionValue("simplex_iteration_limit", iter_limit)


def swap_in(pf: dict, sol: dict, i: int, j: int, app, cluster) -> dict | None:
    """A start for PF_{-j} from a solution ``sol`` of PF_{-i}: j leaves, and i (absent from
    ``sol``) takes its PF bundle if still free in ``sol``, else its best sub-bundle of j's GPUs
    there (``app``: app i). Exact only as a feasible point: the caller checks it (apps with the
    same PF cell make it optimal more often than not)."""
    if j not in sol or i not in pf:
        return None
    out = {k: v for k, v in sol.items() if k != j}
    used = {g for _, gpus in out.values() for g in gpus}
    if not used.intersection(pf[i][1]):
        out[i] = pf[i]
        return out
    sub = best_subbundle(app, cluster, sol[j][1], len(sol[j][1]))
    if sub is not None:
        out[i] = sub
    return out
