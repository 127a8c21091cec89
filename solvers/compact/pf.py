"""Solve the compact PF (THEMIS Pseudocode 1 PF over counts per machine / PM level): LP first
(``compact.lp``), then the full MILP."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from fairplace.core.domain import Cluster
from fairplace.formulations.compact import CompactApp, CompactProgram
from fairplace.formulations.compact_cache import OfferCache
from fairplace.formulations.compact_milp import Choice
from fairplace.formulations.program import RawResult

from ..backends import get_backend, highs  # highs: live-model LP loops (build/read)
from ..budget import Budget, budget_for
from ..options import SolveOptions
from .bb import branch_and_bound
from .lp import fixed_cells, from_lp, has_rack_selectors, lp_cells

#: largest offer (in machines) whose full-MILP fallbacks use the tightened formulation by default
REDUCED_MAX_MACHINES = 16

#: how a PF was settled (``log['route']``, ``extra['pf_route']``): the LP's integral cells packed
#: at its bound; the LP branch and bound (``compact.bb``); the LP's cells placed by a placement
#: MILP; the full MILP (``checked_milp``); no app can use the offer (a program without columns);
#: not started (budget spent)
#: how a compact PF was settled (``extra['pf_route']``); ``enumeration`` is solve_compact_auction's
#: own route (``compact.enumeration``) before any LP, ``dp`` its dynamic program on homogeneous
#: offers (``compact.dp``)
PF_ROUTES = (
    "dp",
    "enumeration",
    "lp_cells",
    "branch_and_bound",
    "placement_milp",
    "full",
    "empty",
    "not_run",
)


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
    aggregate: bool = True,
    log: dict | None = None,
    program: CompactProgram | None = None,
    cache: OfferCache | None = None,
):
    """(raw result, decoded choice or None, program) of the compact PF (optionally without some apps).

    ``lp_first``: solve the LP relaxation of the plain program; when its cell selectors are integral
    (the usual case) place those cells (greedy ``pack``, else a placement-only MILP); when a few
    are split, branch on them (``compact.bb``: LPs on one live model). A placement reaching the
    LP bound is optimal. ``aggregate``: spread-0 cells over machine kinds and patterns
    (``formulations/compact_agg.py``; same optima, far fewer columns) in every program here.
    Failing that, the same with per-(rack, cell) selectors
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
    bounds the LP and MILP solves together. ``log``, if given, gets ``route`` (which of
    :data:`PF_ROUTES` settled the PF) and ``why`` (why each faster route did not; an LP that HiGHS
    leaves without an optimum, even from scratch, is one: the full MILP then decides, checked
    against the LP bound, ``checked_milp``), and after a branch and bound ``lp_basis``: (program,
    its LP's optimal basis), the payments' who-leaves LP's start (``compact.pa_leave``). ``program``: the plain program of these arguments
    if the caller has built it (its feasible cells and counts are then reused); ``cache``: what
    programs on the same offer share (``formulations/compact_cache.py``; default ``program``'s)."""
    log = {} if log is None else log
    why = log.setdefault("why", [])
    log["route"] = "not_run"
    budget = budget_for(opts, budget)
    if budget.options(opts) is None:  # spent: do not even build the program
        msg = "time limit reached before the PF was started"
        return RawResult("time_limit", None, None, None, 0.0, msg), None, None
    offer = tuple(int(g) for g in offer)
    if cache is None and program is not None:
        cache = program.cache
    plain = CompactProgram(
        cluster, offer, tuple(apps), frozenset(exclude), reduced=False, aggregate=aggregate,
        cache=cache,
    )  # fmt: skip
    if program is not None and program == plain:
        plain = program
    racks = plain.variant(rack_cells=True)
    if reduced is None:
        reduced = np.unique(cluster.machine_index[list(offer)]).size <= REDUCED_MAX_MACHINES
    lp_bound = None  # least LP optimum seen: an upper bound on the MILP (same integer optima)
    if lp_first:
        done, lp_bound = _lp_routes(plain, racks, opts, budget, why, log)
        if done is not None:
            return done
    full = racks.variant(reduced=True) if reduced else racks
    x0 = full.start_vector(start) if start is not None else None
    o = budget.options(opts)
    if o is None:
        msg = "time limit reached before the MILP was started"
        return RawResult("time_limit", None, None, None, 0.0, msg), None, racks
    full_milp = full.to_milp()
    log["route"] = "full" if full_milp.n_cols else "empty"
    res = checked_milp(full_milp, o, x0, lp_bound, opts, budget)
    choice = full.decode(res.x) if res.has_solution else None
    if full is not racks and choice is not None:  # the point in the returned program's layout
        res = replace(res, x=racks.start_vector(choice))
    return res, choice, racks


def _lp_routes(plain, racks, opts, budget, why: list, log: dict):
    """The LP routes of :func:`solve_compact_pf` (its docstring): ((raw result, choice, program)
    or None when none settled the PF, the least LP optimum seen or None)."""
    lp_bound = None
    t0 = time.perf_counter()
    tried = []  # (program, MILP, LP) whose integral LP cells the greedy could not place
    for prog in (plain, racks) if has_rack_selectors(racks) else (plain,):
        o = budget.options(opts)
        if o is None:
            break
        milp = prog.milp
        if not milp.n_cols:
            break
        lp_model = milp.relaxed()
        h = highs.build(lp_model, o)
        name = "rack-cell LP" if prog.rack_cells else "LP"
        h.run()
        lp = highs.read(h, lp_model, 0.0)
        if lp.status != "optimal":  # infeasible, cut short or no point: not usable
            why.append(f"{name} {lp.status}: {lp.message}")
            continue
        assert lp.x is not None and lp.objective is not None  # optimal: a point and its value
        lp_bound = lp.objective if lp_bound is None else min(lp_bound, lp.objective)
        if lp_cells(prog, lp.x) is None:  # a few split apps: branch on their cells
            bb_why: list[str] = []
            root = h.getBasis()  # the LP's optimal basis, before branching changes it
            hit = branch_and_bound(prog, milp, h, lp_model, opts, budget, why=bb_why)
            if hit is not None:
                res, choice = hit
                log["route"] = "branch_and_bound"
                # the payments' who-leaves LP (``compact.pa_leave``) starts from it
                log["lp_basis"] = (prog, root)
                return (replace(res, seconds=time.perf_counter() - t0), choice, prog), lp_bound
            why.append(f"{name} branch and bound: {'; '.join(bb_why)}")
            continue
        hit = from_lp(prog, milp, lp, opts, placement_milp=False, budget=budget)
        if hit is not None:
            res, choice = hit
            log["route"] = "lp_cells"
            # the live LP at its optimum, untouched since: the payments' LP chain starts from it
            log["live_lp"] = (prog, h, lp_model)
            return (replace(res, seconds=time.perf_counter() - t0), choice, prog), lp_bound
        why.append(f"{name} cells not packed at the LP bound")
        tried.append((prog, milp, lp))
    for prog, milp, lp in reversed(tried):  # placement MILPs, tightest LP first
        o = budget.options(opts)
        if o is None:
            break
        fixed = fixed_cells(prog, milp, lp, o)
        if fixed is not None:
            log["route"] = "placement_milp"
            done = replace(fixed, seconds=time.perf_counter() - t0), prog.decode(fixed.x), prog
            return done, lp_bound
        why.append("placement MILP: the LP's cells cannot be placed at its bound")
    return None, lp_bound


def checked_milp(milp, o: SolveOptions, x0, lp_bound: float | None, opts: SolveOptions, budget):
    """``highs.solve`` guarded against HiGHS 1.16 presolve returning a sub-optimal "optimal"
    (a PF_{-4} program of ``tests/solvers/test_compact_shortcuts.py``: -2.911 with presolve, -2.8461 =
    its LP bound without). When an "optimal" MILP value stays below the LP bound by more than the
    gap tolerance (an integrality gap, or that bug), the MILP is solved again with presolve off,
    from the first answer; the better of the two is kept, "optimal" only if the second finished."""
    res = get_backend("highs").solve(milp, o, start=x0)
    if res.status != "optimal" or not o.presolve or res.objective is None:
        return res
    if lp_bound is None:  # no LP solved on the way: the relaxation of this program
        lp = get_backend("highs").solve(milp.relaxed(), o.with_(time_limit=o.time_limit))
        lp_bound = lp.objective if lp.status == "optimal" else None
    tol = max(o.mip_abs_gap, o.mip_rel_gap * abs(res.objective), 1e-9) + 1e-7
    if lp_bound is None or res.objective >= lp_bound - tol:
        return res
    o2 = budget.options(opts)
    if o2 is None:
        return res
    res2 = get_backend("highs").solve(milp, o2.with_(presolve=False), start=res.x)
    if res2.objective is not None and res2.has_solution and res2.objective > res.objective + tol:
        msg = f"presolve off (presolve's 'optimal' {res.objective!r} was not optimal)"
        return replace(res2, message=msg, seconds=res.seconds + res2.seconds)
    if res2.status == "optimal":
        return replace(res, seconds=res.seconds + res2.seconds)
    return res
