"""Solve the compact arbiter: PF and the full partial-allocation auction without bid enumeration.

PA needs PF_{-i} for every app i holding a PF bundle. Made cheap by:

* an upper-bound check: sum_{j != i} max_c w_jc is an upper bound on PF_{-i}; if the others already
  reach it in PF, PF_{-i} = PF restricted to the others and c_i = 1 without a solve;
* LP first: the LP of PF_{-i} is the PF LP with i's gains w_ic - w_i0 set to 0 (i may then
  take GPUs but earns nothing, so the optimum equals that of the LP without i); the PF optimal
  basis stays primal feasible, so primal simplex re-optimises in ~100 iterations (fixing i's
  selectors to 0 instead needs dual simplex, ~10^4 degenerate iterations at 128 apps). When the
  LP's cells of the others are integral and can be placed at the LP bound, PF_{-i} is that bound;
* warm starts: PF minus i is feasible for PF_{-i} and is handed to HiGHS as the first incumbent;
* a thread pool (HiGHS releases the GIL), as in ``solvers/auction.py``.

``time_limit`` is the budget of the whole auction, as in ``solvers/auction.py`` (``solvers/budget.py``):
every LP / MILP gets what is left, none starts once it is spent; apps whose PF_{-i} was not solved
to optimality are listed in ``extra['payments_inexact']`` (c_i from the best incumbent, else 1).
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from dataclasses import replace as dc_replace

import numpy as np

from fairplace.core.domain import AuctionInstance, Cluster
from fairplace.core.errors import OptionError
from fairplace.core.solution import Solution
from fairplace.formulations import pa
from fairplace.formulations.compact import CompactApp, CompactProgram, compact_apps
from fairplace.formulations.pf import PFValue
from fairplace.formulations.program import RawResult
from fairplace.solvers.compact_pack import PACK_RULES, best_subbundle, pack

from . import highs
from .auction import auction_gap, pf_bound, unsolved
from .budget import Budget, budget_for
from .options import SolveOptions

Choice = dict[int, tuple[tuple[int, int, int], tuple[int, ...]]]


#: largest offer (in machines) whose full-MILP fallbacks use the tightened formulation by default
REDUCED_MAX_MACHINES = 16


def solve_compact_pf(
    cluster: Cluster,
    offer,
    apps: tuple[CompactApp, ...],
    opts: SolveOptions = SolveOptions(),
    exclude: frozenset[int] = frozenset(),
    start: Choice | None = None,
    lp_first: bool = True,
    reduced: bool | None = None,
    budget: Budget | None = None,
):
    """(raw result, decoded choice or None, program) of the compact PF (optionally without some apps).

    ``lp_first``: solve the LP relaxation of the plain program; when its cell selectors are integral
    (the usual case) place those cells (greedy ``pack``, else a placement-only MILP). A placement
    reaching the LP bound is optimal. Failing that, the same with per-(rack, cell) selectors
    (``rack_cells``: the LP then knows which racks hold enough GPUs of a level for a cell, so
    large spread-1 cells that the plain LP over-packs into one rack become placeable; its LP is
    larger, so it is the second try). Otherwise the full MILP runs (warm-started with ``start``), on
    the tightened, symmetry-broken formulation if ``reduced`` (``formulations/compact_sym.py``: same
    optimum, a far smaller search tree on contended instances, but a larger LP, so it is not used
    for the LP step). ``reduced=None`` picks it when the offer spans at most
    :data:`REDUCED_MAX_MACHINES` machines: measured, it cuts a contended 8-machine instance from
    268 s to 19 s, but its per-(place, cell) columns make 64-machine fallbacks ~20x slower.
    The program returned is the one whose LP gave the answer, else the ``rack_cells`` one (its
    layout serves the payments' LP chains). ``budget`` (default: ``opts.time_limit`` from now)
    bounds the LP and MILP solves together."""
    budget = budget_for(opts, budget)
    if budget.options(opts) is None:  # spent: do not even build the program
        msg = "time limit reached before the PF was started"
        return RawResult("time_limit", None, None, None, 0.0, msg), None, None
    offer = tuple(int(g) for g in offer)
    plain = CompactProgram(cluster, offer, tuple(apps), frozenset(exclude), reduced=False)
    racks = replace(plain, rack_cells=True)
    if reduced is None:
        reduced = np.unique(cluster.machine_index[list(offer)]).size <= REDUCED_MAX_MACHINES
    if lp_first:
        t0 = time.perf_counter()
        tried = []  # (program, MILP, LP) whose integral LP cells the greedy could not place
        for prog in (plain, racks) if _has_rack_selectors(racks) else (plain,):
            o = budget.options(opts)
            if o is None:
                break
            milp = prog.to_milp()
            if not milp.n_cols:
                break
            h = highs.build(milp.relaxed(), o)
            h.run()
            lp = highs.read(h, milp.relaxed(), 0.0)
            if lp.status != "optimal" or _lp_cells(prog, lp.x) is None:
                continue
            hit = _from_lp(prog, milp, lp, opts, placement_milp=False, budget=budget)
            if hit is not None:
                res, choice = hit
                return replace(res, seconds=time.perf_counter() - t0), choice, prog
            tried.append((prog, milp, lp))
        for prog, milp, lp in reversed(tried):  # placement MILPs, tightest LP first
            o = budget.options(opts)
            if o is None:
                break
            fixed = _fixed_cells(prog, milp, lp, o)
            if fixed is not None:
                return replace(fixed, seconds=time.perf_counter() - t0), prog.decode(fixed.x), prog
    full = replace(racks, reduced=True) if reduced else racks
    x0 = full.start_vector(start) if start is not None else None
    o = budget.options(opts)
    if o is None:
        msg = "time limit reached before the MILP was started"
        return RawResult("time_limit", None, None, None, 0.0, msg), None, racks
    res = highs.solve(full.to_milp(), o, start=x0)
    choice = full.decode(res.x) if res.has_solution else None
    if full is not racks and choice is not None:  # the point in the returned program's layout
        res = replace(res, x=racks.start_vector(choice))
    return res, choice, racks


def _has_rack_selectors(prog: CompactProgram) -> bool:
    """Whether some active app has spread-1 cells and no held rack (``rack_cells`` changes it)."""
    return any(
        prog.apps[i].held_rack < 0 and any(c[1] == 1 for c in prog.feasible_cells(i))
        for i in prog.active
    )


def _lp_cells(prog: CompactProgram, x: np.ndarray, skip: int | None = None) -> dict | None:
    """{app index: cell} when every cell selector of the LP point (apps other than ``skip``) is
    integral, else None."""
    _, meta = prog.layout
    cells = {}
    for e in meta:
        if e["i"] == skip:
            continue
        zs = x[e["z"] : e["z"] + len(e["cells"])]
        if zs.size and np.abs(zs - np.round(zs)).max() > 1e-7:
            return None
        on = np.flatnonzero(zs > 0.5)
        if on.size:
            cells[e["i"]] = e["cells"][int(on[0])]
    return cells


def _from_lp(
    prog: CompactProgram,
    milp,
    lp,
    opts: SolveOptions,
    skip: int | None = None,
    placement_milp: bool = True,
    budget=None,
):
    """(RawResult, choice) if the LP's integral cells can be placed at the LP bound, else None.
    ``skip``: an app whose gains were 0 in ``lp`` (leave-one-out on the full program); its cells are
    ignored (dropping them frees capacity and keeps the value). ``placement_milp``: when the greedy
    fails, place the cells exactly (:func:`_fixed_cells`)."""
    cells = _lp_cells(prog, lp.x, skip)
    if cells is None:
        return None
    tol = max(opts.mip_abs_gap, opts.mip_rel_gap * abs(lp.objective), 1e-9) + 1e-9
    for rule in PACK_RULES:  # cheap greedy placements first
        choice = pack(prog, cells, rule)
        if choice is None:
            continue
        x = prog.start_vector(choice)
        if milp.is_feasible(x) and milp.value(x) >= lp.objective - tol:
            res = RawResult("optimal", x, milp.value(x), lp.objective, 0.0, "optimal (LP cells)")
            return res, choice
    if not placement_milp:
        return None
    o = budget.options(opts) if budget is not None else opts
    if o is None:  # the budget is spent: no placement MILP
        return None
    fixed = _fixed_cells(prog, milp, lp, o, skip)
    if fixed is None:
        return None
    return fixed, prog.decode(fixed.x)


def _fixed_cells(prog: CompactProgram, milp, lp, opts: SolveOptions, skip: int | None = None):
    """Place the LP's integral cells exactly: the program restricted to those cells (placement
    variables only) is solved; a RawResult of the full program if it is feasible."""
    cells = _lp_cells(prog, lp.x, skip) or {}
    sub = dc_replace(prog, fixed=tuple(sorted(cells.items())))
    res = highs.solve(sub.to_milp(), opts)
    if not res.has_solution:
        return None
    choice = sub.decode(res.x)
    x = prog.start_vector(choice)
    tol = max(opts.mip_abs_gap, opts.mip_rel_gap * abs(lp.objective), 1e-9) + 1e-9
    if not milp.is_feasible(x) or milp.value(x) < lp.objective - tol:
        return None
    return RawResult("optimal", x, milp.value(x), lp.objective, res.seconds, "optimal (LP cells)")


def _best(prog: CompactProgram, j: int) -> float:
    """best_j = max(w_j0, max_{c fits alone} w_jc): app j's value alone with the whole offer, an
    upper bound on its value in any allocation of the offer (only cells that fit the offer alone,
    ``CompactProgram.feasible_cells``, can be part of one)."""
    app = prog.apps[j]
    t = app.table
    w = [-math.log(t.rho[c]) for c in prog.feasible_cells(j)]
    if app.w_empty is not None:
        w.append(app.w_empty)
    return max(w) if w else -math.inf


def payments(
    prog: CompactProgram,
    choice: Choice,
    opts: SolveOptions,
    parallel: bool = True,
    reduced: bool | None = None,
    budget: Budget | None = None,
) -> tuple[dict[int, float], dict[int, str], int]:
    """({i: c_i}, {i: status of PF_{-i}}, number of leave-one-out problems); ``reduced``: the
    formulation of full leave-one-out MILPs (see :func:`solve_compact_pf`); ``budget``: no LP / MILP starts
    once it is spent (status :data:`NOT_RUN`, c_i = 1)."""
    budget = budget_for(opts, budget)
    apps = prog.apps
    value_with = {i: _others(prog, choice, i) for i in choice}
    c, status = {}, {}
    todo = []
    # c_i = 1 without a solve when app i's GPUs help nobody: every other app j already gets
    # best_j (its value alone with the whole offer) in PF. Then PF_{-i} <= sum_{j != i} best_j =
    # value of PF minus i <= PF_{-i} (PF minus i is feasible for PF_{-i}), so PF_{-i} is PF minus
    # i and c_i = 1 exactly.
    best = {j: _best(prog, j) for j in prog.active}
    for i in choice:
        others = [j for j in prog.active if j != i]
        if all(a.w_empty is not None for a in (apps[j] for j in others)):
            ub = sum(best[j] for j in others)
            if value_with[i].log_sum >= ub - 1e-9:
                c[i], status[i] = 1.0, "optimal"  # the others cannot do better without i
                continue
        todo.append(i)
    if todo and budget.options(opts) is None:  # spent before the first leave-one-out problem
        c.update(dict.fromkeys(todo, 1.0))
        status.update(dict.fromkeys(todo, NOT_RUN))
        return c, status, len(todo)

    def one(i: int):
        if budget.options(opts) is None:  # spent: do not even build the problem
            return i, NOT_RUN, None
        start = {j: v for j, v in choice.items() if j != i}
        res, ch, p = solve_compact_pf(
            prog.cluster,
            prog.offer,
            apps,
            opts,
            prog.exclude | {i},
            start,
            reduced=reduced,
            budget=budget,
        )
        if ch is None:
            return i, res.status, None
        return i, res.status, p.value(ch)

    milp = prog.to_milp()
    _, meta = prog.layout
    by = {e["i"]: e for e in meta}

    def lp_chain(chunk: list[int]):
        """Leave-one-out LPs on one model: i's gains set to 0, primal simplex from the PF basis."""
        lp_model = milp.relaxed()
        o = budget.options(opts)
        if o is None:
            return [(i, NOT_RUN) for i in chunk]
        h = highs.build(lp_model, o)
        h.run()
        basis = h.getBasis()
        h.setOptionValue("presolve", "off")  # keep the basis between re-solves
        h.setOptionValue("simplex_strategy", 4)  # primal: the PF basis stays primal feasible
        out = []
        for i in chunk:
            o = budget.options(opts)
            if o is None:
                out.append((i, NOT_RUN))
                continue
            if o.time_limit is not None:  # HiGHS' run time is cumulative over re-solves
                h.setOptionValue("time_limit", float(h.getRunTime() + o.time_limit))
            e = by[i]
            cols = np.arange(e["z"], e["z"] + len(e["cells"]), dtype=np.int32)
            h.setBasis(basis)  # every re-solve starts from the PF basis (order-independent)
            if cols.size:
                h.changeColsCost(cols.size, cols, np.zeros(cols.size))
            h.run()
            lp = highs.read(h, lp_model, 0.0)
            if lp.x is not None:  # value under i's zero gains: drop i's selectors
                x = lp.x.copy()
                x[cols] = 0.0
                v = lp_model.value(x)
                lp = replace(lp, x=x, objective=v, bound=v)
            hit = (
                _from_lp(prog, milp, lp, opts, skip=i, budget=budget)
                if lp.status == "optimal"
                else None
            )
            if cols.size:
                h.changeColsCost(cols.size, cols, milp.c[cols])
            out.append((i, None if hit is None else _others(prog, hit[1], i)))
        return out

    chunks = [todo[k::2] for k in range(2)] if parallel and len(todo) > 1 else [todo]
    with ThreadPoolExecutor(max_workers=len(chunks)) as ex:
        results = [r for part in ex.map(lp_chain, [ch for ch in chunks if ch]) for r in part]
    hard = []
    for i, val in results:
        if val is NOT_RUN:
            status[i], c[i] = NOT_RUN, 1.0
        elif val is None:
            hard.append(i)
        else:
            status[i] = "optimal"
            c[i] = pa.payment(value_with[i], val)
    runner = map
    pool = None
    if parallel and len(hard) > 1:
        pool = ThreadPoolExecutor(max_workers=2)
        runner = pool.map
    try:
        for i, st, val in runner(one, hard):
            status[i] = st
            c[i] = pa.payment(value_with[i], val) if val is not None else 1.0
    finally:
        if pool is not None:
            pool.shutdown()
    return c, status, len(todo)


#: marks a leave-one-out problem not started because the budget was spent
NOT_RUN = "not_run"


def _others(prog: CompactProgram, choice: Choice, i: int) -> PFValue:
    sub = CompactProgram(prog.cluster, prog.offer, prog.apps, prog.exclude | {i})
    return sub.value({j: v for j, v in choice.items() if j != i})


def round_compact(
    prog: CompactProgram, choice: Choice, c: dict[int, float], rule: str = "floor", seed: int = 0
) -> dict[int, tuple[int, ...]]:
    """Final GPU indices per app under a PA rounding rule (``formulations/pa.py`` semantics)."""

    def floor_pick(i: int, gpus: tuple[int, ...], cap: int) -> tuple[int, ...] | None:
        sub = best_subbundle(prog.apps[i], prog.cluster, gpus, cap)
        return None if sub is None else sub[1]

    return pa.round_shares({i: gpus for i, (_, gpus) in choice.items()}, c, rule, seed, floor_pick)


def solve_compact_auction(
    inst: AuctionInstance,
    opts: SolveOptions = SolveOptions(),
    rounding: str = "floor",
    seed: int = 0,
    payments_: bool = True,
    name: str = "compact",
    offer=None,
    apps: tuple[CompactApp, ...] | None = None,
    ids: list[str] | None = None,
    reduced: bool | None = None,
    budget: Budget | None = None,
) -> Solution:
    """PF + PA over the agent-form apps of ``inst`` (or the given compact ``apps``) on ``offer``.
    ``reduced``: formulation of full-MILP fallbacks (None: by offer size, see :func:`solve_compact_pf`;
    True / False force the tightened / plain one; the optima are the same). ``budget`` (default:
    ``opts.time_limit`` from now) bounds the whole auction (module docstring)."""
    t0 = time.perf_counter()
    budget = budget_for(opts, budget)
    if opts.mip_allow_restart is None:  # as in solvers/auction.py (see SolveOptions)
        opts = opts.with_(mip_allow_restart=False)
    cl = inst.cluster
    if apps is None:
        apps = compact_apps(inst, offer)
        ids = [a.id for a in inst.agents]
    if offer is None:
        from fairplace.formulations.agents import free_gpus

        offer = free_gpus(inst)
    ids = ids or [a.table.app_id for a in apps]
    res, choice, prog = solve_compact_pf(cl, offer, apps, opts, reduced=reduced, budget=budget)
    if choice is None:
        sol = unsolved(
            name, res, time.perf_counter() - t0, rounding, ids if payments_ else [], True
        )
        return dc_replace(sol, extra={**sol.extra, "cells": {}})
    status = res.status
    c = {i: 1.0 for i in range(len(apps))}
    n_solves, k = 1, 0
    inexact: list[str] = []
    if payments_:
        ci, st, k = payments(
            prog, choice, opts, parallel=opts.parallel, reduced=reduced, budget=budget
        )
        n_solves += k - sum(s == NOT_RUN for s in st.values())
        c.update(ci)
        inexact = [ids[i] for i, s in sorted(st.items()) if s != "optimal"]
        if res.status != "optimal":  # every c_i is relative to a non-optimal PF
            inexact = list(ids)
        for s in st.values():
            if s != "optimal":
                status = "time_limit" if s in ("time_limit", NOT_RUN) else s
    final = round_compact(prog, choice, c, rounding, seed)
    used = {g for i in final for g in final[i]}
    pf_gpus = [g for i in sorted(choice) for g in choice[i][1]]
    val = prog.value(choice)
    bound, served_max = pf_bound(prog, res, val)
    return Solution(
        kind="auction",
        status=status,
        solver=name,
        seconds=time.perf_counter() - t0,
        objective=val.log_sum,
        bound=bound,
        gap=auction_gap(val.log_sum, bound),
        allocation={ids[i]: cl.ids(g) for i, g in final.items()},
        pf_allocation={ids[i]: cl.ids(choice[i][1]) for i in sorted(choice)},
        payments={ids[i]: c[i] for i in range(len(apps))} if payments_ else None,
        leftover=cl.ids(sorted(g for g in pf_gpus if g not in used)),
        message=res.message,
        extra={
            "rounding": rounding,
            "unserved_unbounded": [
                ids[i] for i, a in enumerate(apps) if a.w_empty is None and i not in choice
            ],
            "rho": {ids[i]: float(apps[i].table.rho[choice[i][0]]) for i in choice},
            "pf_status": res.status,
            "unbounded_served_bound": served_max,
            "cells": {ids[i]: list(choice[i][0]) for i in choice},
            "loo_solves": k if payments_ else 0,
            "milp_solves": n_solves,
            # c_i of these apps rests on a PF_{-i} not solved to optimality (time limit: the best
            # incumbent; no point at all: c_i = 1)
            "payments_inexact": inexact,
        },
    )


def solve_compact(inst: AuctionInstance, opts: SolveOptions, **kw) -> Solution:
    """Registry entry ``compact``: the compact arbiter on an agent-form auction."""
    if inst.apps:
        raise OptionError(
            "solver", "solver 'compact' needs every app in agent form (found apps with 'bids')"
        )
    kw.pop("name", None)
    known = {k: kw[k] for k in ("rounding", "seed", "budget") if k in kw}
    if "payments" in kw:
        known["payments_"] = kw["payments"]
    return solve_compact_auction(inst, opts, name="compact", **known)


def solve_agent_form(inst: AuctionInstance, solver: str, fn, opts: SolveOptions, **kw) -> Solution:
    """``fairplace.solve`` on an instance with agent-form apps: build exact subset bids when the
    offer is small enough (then any auction solver applies), else use the compact arbiter (for the
    exact solvers ``exact`` / ``highs`` / ``compact``)."""
    from fairplace.formulations.agents import to_explicit

    if solver == "compact":
        return solve_compact(inst, opts, **kw)
    try:
        explicit = to_explicit(inst)
    except OptionError:
        if solver in ("exact", "highs") and not inst.apps:
            return solve_compact(inst, opts, **kw)
        raise
    return fn(explicit, opts, name=solver, **kw)
