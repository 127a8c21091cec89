"""Partial-allocation payments of the compact arbiter: c_i = PF_{-i} at the allocation / PF_{-i}.

PA needs PF_{-i} for every app i holding a PF bundle. Made cheap by:

* whole classes of alike apps at once, when the PF's LP split apps: the *who leaves* MILP
  (``compact.pa_leave``: one MILP per class; 1,024 GPUs x 256 apps: 19 MILPs for 256 apps); the
  apps it leaves take the routes below;

* an upper-bound check: sum_{j != i} max_c w_jc is an upper bound on PF_{-i}; if the others already
  reach it in PF, PF_{-i} = PF restricted to the others and c_i = 1 without a solve;
* LP first: the LP of PF_{-i} is the PF LP with i's gains w_ic - w_i0 set to 0 (i may then
  take GPUs but earns nothing, so the optimum equals that of the LP without i); the PF optimal
  basis stays primal feasible, so primal simplex re-optimises in ~100 iterations (fixing i's
  selectors to 0 instead needs dual simplex, ~10^4 degenerate iterations at 128 apps). When the
  LP's cells of the others are integral and can be placed at the LP bound, PF_{-i} is that bound;
* split LPs (one or two apps between two cells; ~3/4 of them at 1,024 GPUs x 256 apps), and
  integral LP cells that cannot be placed at the LP bound: a dive and reduced-cost fixing on the
  same live model, then a small MILP (``compact.rc``); its first
  incumbent is PF minus i or, better, the PF_{-j} optimum of an app j with i's PF cell with i put
  in j's place (``compact.rc.swap_in``; apps are visited grouped by PF cell for that);
* shared prices: apps with the same PF cell free alike bundles, so after one app's leave-one-out
  LP the next ones of its chain skip theirs: its row duals, repriced on the two apps' own rows
  (``compact.rc.reprice``: the bound is then within a few 1e-4 of their own LP's), fix columns for
  the small MILP (route ``priced``; any prices give a valid bound, so c_i stays exact). 1,024 GPUs
  x 256 apps: ~220 of 256 LPs skipped, ~12 -> ~2 s CPU of LPs, the MILPs ~25% slower; only after
  a split LP (where the LP's cells are placed, as at 4,096 GPUs, the LP route is cheaper);
* warm starts: PF minus i is feasible for PF_{-i} and is handed to HiGHS as the first incumbent;
* only what the lottery reads (``draws``; THEMIS' simulator): app i keeps its bundle iff its draw
  is below c_i. The leave-one-out LP bounds c_i from below (:func:`lottery_floor`), the best
  feasible start of a split LP from above (:func:`lottery_ceiling`); a draw outside the two
  bounds decides, and PF_{-i} is not closed (W2 x4 seed 0: 44,665 of 96,106 closings left open
  by the first);
* a thread pool (HiGHS releases the GIL), as in ``solvers/auction.py``.

``budget`` bounds every LP / MILP (``solvers/budget.py``): none starts once it is spent; apps whose
PF_{-i} was not solved to optimality get status :data:`NOT_RUN` / the solver's status.
The bounds that settle c_i without a solve (or the lottery's outcome) are in :mod:`.pa_bounds`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from fairplace.core.blas import one_blas_thread
from fairplace.formulations import pa
from fairplace.formulations.compact import CompactProgram
from fairplace.formulations.compact_milp import Choice

from ..backends import highs
from ..budget import Budget, budget_for
from ..options import SolveOptions
from .lp import from_lp, lp_cells, rerun
from .pa_bounds import (
    _lp_proves_one,
    _others,
    _without_solve,
    lottery_ceiling,
    lottery_floor,
    values_without,
)
from .pa_leave import leave_max
from .pf import solve_compact_pf
from .rc import best_start, block_owners, leave_one_out, reprice, row_signs, swap_in


def payments(
    prog: CompactProgram,
    choice: Choice,
    opts: SolveOptions,
    parallel: bool = True,
    reduced: bool | None = None,
    budget: Budget | None = None,
    routes: dict[int, str] | None = None,
    live: tuple | None = None,
    draws: dict[int, float] | None = None,
    basis: tuple | None = None,
) -> tuple[dict[int, float], dict[int, str], int]:
    """({i: c_i}, {i: status of PF_{-i}}, number of leave-one-out problems); ``reduced``: the
    formulation of full leave-one-out MILPs (see :func:`solve_compact_pf`); ``budget``: no LP / MILP starts
    once it is spent (status :data:`NOT_RUN`, c_i = 1). ``routes``, if given, is filled with how
    each PF_{-i} was settled (:data:`ROUTES`). ``live``: (program, ``Highs``, LP model) of the PF's
    LP solved to optimality on ``prog`` and not changed since (``solve_compact_pf``'s
    ``log['live_lp']``): a single LP chain continues on it instead of building and solving the
    same LP again. ``draws``: {i: app i's draw of the lottery rounding} when only the rounding's
    outcome is wanted: a PF_{-i} whose bounds already put c_i above the draw (app i keeps its
    bundle, :func:`lottery_floor`: route ``lottery``) or at most the draw (it loses it,
    :func:`lottery_ceiling`: ``lottery_drop``) is not closed, and its c_i is NaN. ``basis``:
    (program, optimal basis of its LP) of the PF's LP (``solve_compact_pf``'s ``log['lp_basis']``):
    the who-leaves LP starts from it (used only if the program is ``prog``)."""
    with one_blas_thread():  # its spinning thread would take the second solver thread's core
        return _payments(prog, choice, opts, parallel, reduced, budget, routes, live, draws, basis)


def _payments(
    prog, choice, opts, parallel, reduced, budget, routes, live=None, draws=None, basis=None
):
    routes = {} if routes is None else routes
    budget = budget_for(opts, budget)
    value_with = values_without(prog, choice)
    c: dict[int, float] = {}
    status: dict[int, str] = {}
    todo = _without_solve(prog, choice, value_with, c, status, routes)
    k = len(todo)
    if todo and draws is None and live is None:  # the PF's LP split apps (``pa_leave``)
        pf_basis = basis[1] if basis is not None and basis[0] is prog else None
        got = leave_max(prog, choice, todo, opts, budget, basis=pf_basis)
        for i, v in got.items():
            c[i], status[i], routes[i] = pa.payment(value_with[i], v), "optimal", "leave_max"
        todo = [i for i in todo if i not in got]
    if todo and budget.options(opts) is None:  # spent before the first leave-one-out problem
        c.update(dict.fromkeys(todo, 1.0))
        status.update(dict.fromkeys(todo, NOT_RUN))
        routes.update(dict.fromkeys(todo, NOT_RUN))
        return c, status, k
    if not todo:
        return c, status, k
    loo = _LeaveOneOut(prog, choice, opts, reduced, budget, value_with, live, draws)
    hard = []
    for i, val, route in loo.lp_chains(todo, parallel):
        routes[i] = route
        if val is NOT_RUN:
            status[i], c[i] = NOT_RUN, 1.0
        elif val is KEPT or val is DROPPED:  # the lottery's outcome, whatever c_i is exactly
            status[i], c[i] = "optimal", math.nan
        elif val is None:
            hard.append(i)
        else:
            status[i] = "optimal"
            c[i] = pa.payment(value_with[i], val)
    runner: Callable = map
    pool = None
    if parallel and len(hard) > 1:
        pool = ThreadPoolExecutor(max_workers=2)
        runner = pool.map
    try:
        for i, st, val in runner(loo.full, hard):
            status[i] = st
            if st == NOT_RUN:
                routes[i] = NOT_RUN
            c[i] = pa.payment(value_with[i], val) if val is not None else 1.0
    finally:
        if pool is not None:
            pool.shutdown()
    return c, status, k


class _LeaveOneOut:
    """The leave-one-out problems PF_{-i} of one PF choice: the PF MILP, its LP and the PF LP's
    optimal basis, shared by the LP chains (:meth:`lp_chains`); a full solve per hard app
    (:meth:`full`)."""

    def __init__(self, prog, choice, opts, reduced, budget, value_with, live=None, draws=None):
        self.prog, self.choice, self.opts, self.draws = prog, choice, opts, draws
        self.reduced, self.budget, self.value_with = reduced, budget, value_with
        self.milp = prog.milp
        _, meta = prog.layout
        self.by = {e["i"]: e for e in meta}
        # the PF's live LP (``payments``), only if it is of this very program
        self.live = live[1] if live is not None and live[0] is prog else None
        self.lp_model = live[2] if self.live is not None else self.milp.relaxed()
        self.signs = row_signs(self.milp)  # for the forcing rows of every chain's fixed MILPs
        self.owners = block_owners(prog, self.milp)  # for ``reprice``
        self.pf_basis = None  # the PF LP's optimal basis, solved once: each chain starts from it

    def full(self, i: int):
        """PF_{-i} by its own solve (PF minus i as the start): (i, status, value or None)."""
        prog, opts = self.prog, self.opts
        if self.budget.options(opts) is None:  # spent: do not even build the problem
            return i, NOT_RUN, None
        start = {j: v for j, v in self.choice.items() if j != i}
        res, ch, p = solve_compact_pf(
            prog.cluster,
            prog.offer,
            prog.apps,
            opts,
            prog.exclude | {i},
            start,
            reduced=self.reduced,
            budget=self.budget,
            aggregate=prog.aggregate,
            cache=prog.cache,
        )
        if ch is None:
            return i, res.status, None
        return i, res.status, p.value(ch)

    def lp_chains(self, todo: list[int], parallel: bool) -> list[tuple]:
        """(i, PF_{-i} value / None (needs a full solve) / NOT_RUN, route) per app of ``todo``.

        Alike apps in a row, in contiguous chains: every app after the first of its PF cell in a
        chain starts from an alike app's PF_{-j} (``_starts``); :data:`CHAINS` of them on 2
        threads balance the load, each chain on its own model (the same results whichever thread
        runs it)."""
        choice = self.choice
        todo = sorted(todo, key=lambda i: (choice[i][0], i))
        k = min(CHAINS, max(2, len(todo) // 16)) if parallel and len(todo) > 1 else 1
        cut = np.linspace(0, len(todo), k + 1).round().astype(int)
        chunks = [todo[a:b] for a, b in zip(cut[:-1], cut[1:], strict=True)]
        o = self.budget.options(self.opts)
        if len(chunks) > 1 and self.live is not None:  # the PF's own LP at its optimum
            self.pf_basis = self.live.getBasis()  # (4,096 GPUs x 256 apps: a 3.8 s solve less)
        elif len(chunks) > 1 and o is not None:  # one PF LP solve, not one per chain
            h0 = highs.build(self.lp_model, o)
            h0.run()
            if highs.read(h0, self.lp_model, 0.0).status == "optimal":
                self.pf_basis = h0.getBasis()
        chunks = [ch for ch in chunks if ch]
        if len(chunks) == 1:  # one chain: no thread to start and join
            return self.lp_chain(chunks[0], self.live)
        with ThreadPoolExecutor(max_workers=2) as ex:
            return [r for part in ex.map(self.lp_chain, chunks) for r in part]

    def lp_chain(self, chunk: list[int], live=None) -> list[tuple]:
        """Leave-one-out LPs on one model: i's gains set to 0, primal simplex from the PF basis
        (``live``: the PF's ``Highs`` at its LP optimum, taken over instead of a new model)."""
        opts, budget, lp_model = self.opts, self.budget, self.lp_model
        o = budget.options(opts)
        if o is None:
            return [(i, NOT_RUN, NOT_RUN) for i in chunk]
        h = live
        if h is None:
            h = highs.build(lp_model, o)
            if self.pf_basis is not None:
                h.setOptionValue("presolve", "off")
                h.setBasis(self.pf_basis)
            rerun(h, lp_model)  # read by every leave-one-out re-solve below, not here
        basis = h.getBasis()
        h.setOptionValue("presolve", "off")  # keep the basis between re-solves
        h.setOptionValue("simplex_strategy", 4)  # primal: the PF basis stays primal feasible
        out = []
        solved: dict[int, Choice] = {}  # PF_{-i} optima of this chain: starts for the next ones
        duals: dict = {}  # per PF cell: the row duals of this chain's latest leave-one-out LP
        for i in chunk:
            o = budget.options(opts)
            if o is None:
                out.append((i, NOT_RUN, NOT_RUN))
                continue
            if o.time_limit is not None:  # HiGHS' run time is cumulative over re-solves
                h.setOptionValue("time_limit", float(h.getRunTime() + o.time_limit))
            priced = self._priced(i, solved, duals)
            if priced is not None:  # no LP to solve
                out.append(priced)
                continue
            e = self.by[i]
            cols = np.arange(e["z"], e["z"] + len(e["cells"]), dtype=np.int32)
            h.setBasis(basis)  # every re-solve starts from the PF basis (order-independent)
            if cols.size:
                h.changeColsCost(cols.size, cols, np.zeros(cols.size))
            out.append(self._lp_one(h, i, cols, solved, duals))
            if cols.size:
                h.changeColsCost(cols.size, cols, self.milp.c[cols])
        return out

    def _priced(self, i: int, solved: dict, duals: dict) -> tuple | None:
        """PF_{-i} without its LP: reduced-cost fixing at the row duals of the latest leave-one-out
        LP of an app with i's PF cell (valid for any prices, ``compact.rc.lagrangian_bound``;
        freeing alike bundles prices the rows alike) from the best start; (i, value, route
        ``priced``), or None (no such duals, no start close to their bound, or the MILP did not
        close: the LP route decides)."""
        got = duals.get(self.choice[i][0])
        o = self.budget.options(self.opts)
        if got is None or self.draws is not None or o is None:
            return None
        prog, milp = self.prog, self.milp
        y = reprice(milp, got[1], self.owners, i, got[0], o)
        starts = _starts(prog, self.choice, solved, i)
        hit = leave_one_out(
            prog, milp, None, self.lp_model, self.opts, self.budget, i, starts, self.signs, y
        )
        if hit is None:
            return None
        solved[i] = hit[1]
        return i, _others(prog, hit[1], i), "priced"

    def _lp_one(self, h, i: int, cols: np.ndarray, solved: dict, duals: dict) -> tuple:
        """PF_{-i} from the live LP (i's gains zeroed in ``h``): c_i = 1 from the LP bound, the LP's
        integral cells placed, or reduced-cost fixing; (i, value / None, route)."""
        prog, milp, lp_model, opts, budget = (
            self.prog,
            self.milp,
            self.lp_model,
            self.opts,
            self.budget,
        )
        lp = rerun(h, lp_model)  # not optimal even from scratch: the full solve
        y = np.asarray(h.getSolution().row_dual, dtype=float) if lp.status == "optimal" else None
        if lp.x is not None:  # value under i's zero gains: drop i's selectors
            x = lp.x.copy()
            x[cols] = 0.0
            v = lp_model.value(x)
            lp = replace(lp, x=x, objective=v, bound=v)
        value = lp.objective if lp.status == "optimal" else None
        if value is not None and _lp_proves_one(prog, i, value, self.value_with[i]):
            return i, self.value_with[i], "lp_bound"  # PF_{-i} = PF minus i: c_i = 1
        if value is not None and self.draws is not None:
            floor = lottery_floor(prog, i, value, self.value_with[i])
            if floor is not None and self.draws[i] < floor:  # kept: PF_{-i} need not be closed
                return i, KEPT, "lottery"
        hit, route = None, "full"
        if lp.status == "optimal":
            assert lp.x is not None  # optimal: a point (highs.read)
            if lp_cells(prog, lp.x, i) is not None:  # integral cells: place them
                hit = from_lp(prog, milp, lp, opts, skip=i, budget=budget)
                route = "lp_cells"
            if hit is None:  # split apps, or cells that cannot be placed at the LP bound
                starts = _starts(prog, self.choice, solved, i)
                if self.draws is not None:  # the incumbent rc would start from, found once
                    best = best_start(prog, milp, starts)  # (i's selectors are 0 in every start)
                    starts = () if best is None else (best[2],)
                    if best is not None and self.draws[i] >= lottery_ceiling(
                        prog, i, best[2], self.value_with[i]
                    ):  # dropped: PF_{-i} need not be closed
                        return i, DROPPED, "lottery_drop"
                hit = leave_one_out(prog, milp, h, lp_model, opts, budget, i, starts, self.signs)
                route = "fixing"
                if hit is not None and y is not None:  # prices for the next apps with i's cell
                    duals[self.choice[i][0]] = (i, y)  # (only after a split LP: where the LP's
                    # cells are placed, as everywhere at 4,096 GPUs x 256 apps, LPs are cheaper)
            if hit is not None:
                solved[i] = hit[1]
        if hit is None:
            return i, None, "full"
        return i, _others(prog, hit[1], i), route


def _starts(prog: CompactProgram, choice: Choice, solved: dict, j: int) -> tuple[dict, ...]:
    """Starts for PF_{-j}: PF minus j, then ``swap_in`` of the latest PF_{-i} optima of apps
    with j's PF cell (up to 3) and of the latest two others."""
    same = [i for i in reversed(solved) if choice[i][0] == choice[j][0]][:3]
    recent = [i for i in reversed(solved) if i not in same][:2]
    out = [{k: v for k, v in choice.items() if k != j}]
    for i in same + recent:
        s = swap_in(choice, solved[i], i, j, prog.apps[i], prog.cluster)
        if s is not None:
            out.append(s)
    return tuple(out)


#: marks a leave-one-out problem not started because the budget was spent
NOT_RUN = "not_run"
#: marks a leave-one-out problem left open because the lottery keeps / drops the app's bundle
#: whatever its exact c_i (``draws``: :func:`lottery_floor` / :func:`lottery_ceiling`)
KEPT = "kept"
DROPPED = "dropped"

#: how a PF_{-i} was settled (``payments(routes=...)``, ``extra['loo_routes']``): by enumeration
#: (``compact.enumeration``; set by the caller, not by :func:`payments`); c_i = 1 from every other
#: app's best value alone; by the who-leaves MILP (``compact.pa_leave``); c_i = 1 from the
#: leave-one-out LP bound; the LP's cells placed at its bound;
#: split LP closed by ``compact.rc``; closed by ``compact.rc`` at an alike app's repriced LP duals
#: (no LP of its own); its own solve (``solve_compact_pf``); left open because the
#: lottery keeps / drops the app's bundle anyway (``draws``: :func:`lottery_floor` from the
#: leave-one-out LP, :func:`lottery_ceiling` from a split LP's incumbent); not started
ROUTES = (
    "enumeration",
    "best_values",
    "leave_max",
    "lp_bound",
    "lp_cells",
    "fixing",
    "priced",
    "full",
    "lottery",
    "lottery_drop",
    NOT_RUN,
)

#: most leave-one-out chains (each on its own LP model, at least 16 apps) shared by the 2 threads
#: of the payments. More chains balance the threads better; each costs a model and, per PF cell,
#: a first app with no alike start (a target MILP, ~0.3 s). 1,024 GPUs x 256 apps, 2 runs each:
#: the threads' HiGHS time differed by 2.5-2.7 s with 4 chains, 0.8-1.0 s with 8
CHAINS = 8
