"""Exact PF + partial-allocation auction: N+1 solves of :class:`~fairplace.formulations.pf.PFProgram`.

1. The full PF solve gives the optimum value and an optimal allocation.
2. In parallel on a thread pool (HiGHS releases the GIL):
   * each leave-one-out solve PF_{-i}, warm-started from the PF allocation without i (feasible for it);
   * the tie-break solve (see :func:`break_ties`).
   Apps that need no solve: an app without a PF bundle (PF restricted to the others is optimal for
   PF_{-i}, so c_i = 1), and an app whose PF bundle no other app's bid touches (removing it frees GPUs
   nobody can use, so again c_i = 1).

``time_limit`` is the budget of the whole auction (``solvers/budget.py``): each solve gets what is
left; once it is spent no new solve starts. Then the PF incumbent is returned with its bound and gap,
and every app whose PF_{-i} was not solved to optimality is listed in ``extra['payments_inexact']``
with c_i computed from the best PF_{-i} incumbent, or c_i = 1 when there is none (both are upper
bounds on the exact c_i: an incumbent under-estimates PF_{-i}).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from fairplace.core.blas import one_blas_thread
from fairplace.core.domain import AuctionInstance
from fairplace.core.solution import Solution
from fairplace.formulations import pa
from fairplace.formulations.pf import PFProgram, PFValue
from fairplace.formulations.program import MILP, RawResult, lexicographic_bound

from . import backends
from .budget import Budget, budget_for
from .options import SolveOptions

#: HiGHS' presolve is off for programs with more than this many columns per row (as wide as the
#: subset bids of agent-form apps): on them presolve alone ran 5-20 s (20,000 columns x 19 rows)
#: and overran the time limit, while the whole solve without it took 0.7-9 s; on bid tables of
#: 4-10 columns per row presolve helps (docs/solutions.md, "Which route")
WIDE_COLUMNS_PER_ROW = 25

#: Work limit of the tie-break solve: a node count (deterministic), not a time limit (which is not).
TIE_BREAK_NODES = 2000
#: under a time limit, a sub-solve after the PF (leave-one-out, tie-break) starts only with at least
#: this share of the PF solve's own seconds left: each is the PF program less one app or plus one
#: row, and HiGHS cannot interrupt its first LP (on 20,000 subset bids a PF_{-i} given 0.2 s ran
#: 0.7 s, the PF 1.1 s)
SUB_SOLVE_SHARE = 0.5


def _wide(milp: MILP) -> bool:
    return milp.n_cols > WIDE_COLUMNS_PER_ROW * max(milp.n_rows, 1)


def _start_vector(prog: PFProgram, choice: dict[int, int]) -> np.ndarray:
    return np.fromiter(
        (1.0 if choice.get(i) == b else 0.0 for i, b in prog.columns),
        dtype=float,
        count=len(prog.columns),
    )


def tie_break_milp(prog: PFProgram, optimum: float, opts: SolveOptions) -> MILP:
    """The tie-break program: min ``prog.tie_break_costs()`` @ x over the PF optima, i.e. PF's rows
    plus  c @ x + offset >= optimum - tol  (tol: the optimality tolerance of ``opts``)."""
    milp = prog.to_milp()
    tol = max(opts.mip_abs_gap, opts.mip_rel_gap * abs(optimum), 1e-9)
    return MILP(
        np.asarray(prog.tie_break_costs(), dtype=float),
        sp.vstack([milp.A, sp.csr_matrix(milp.c.reshape(1, -1))], format="csr"),
        np.append(milp.row_lb, optimum - milp.offset - tol),
        np.append(milp.row_ub, np.inf),
        milp.col_lb,
        milp.col_ub,
        milp.integrality,
        sense="min",
    )


def break_ties(
    prog: PFProgram,
    optimum: float,
    opts: SolveOptions,
    start: np.ndarray,
    backend: str | backends.Backend = "highs",
) -> np.ndarray:
    """Deterministic choice among PF optima: keep the objective within the optimality tolerance of
    ``optimum`` and minimise ``prog.tie_break_costs()`` (fewest GPUs used, then earliest app/bid),
    from ``start`` (needs a back end with a warm start). The solve is node-limited (and
    time-limited by what is left of the auction's budget, if any); if the node limit is hit, the
    best point found (never worse than ``start``) is used, which is still deterministic with
    ``threads=1`` and a fixed seed."""
    milp = tie_break_milp(prog, optimum, opts)
    o = opts.with_(mip_rel_gap=1e-6, mip_max_nodes=TIE_BREAK_NODES)
    res = backends.run(milp, backend, o, start=start)
    if res.x is None:
        return start
    x = np.round(res.x)
    return x if milp.is_feasible(x) else start


def untouched(inst: AuctionInstance, i: int, bundle: tuple[str, ...]) -> bool:
    """True if no other app has a bid using a GPU of ``bundle`` (then c_i = 1 without a solve)."""
    gs = set(bundle)
    return not any(
        gs.intersection(b.gpus) for j, a in enumerate(inst.apps) if j != i for b in a.bids
    )


def solve_auction(
    inst: AuctionInstance,
    backend: str | backends.Backend = "highs",
    opts: SolveOptions = SolveOptions(),
    rounding: str = "floor",
    seed: int = 0,
    payments: bool = True,
    tie_break: bool = True,
    name: str | None = None,
    budget: Budget | None = None,
) -> Solution:
    """PF allocation, PA payments c_i, rounded final allocation and leftover; ``budget`` (default:
    ``opts.time_limit`` from now) bounds the whole solve. ``backend``: a name or a
    :class:`~fairplace.solvers.backends.Backend`; with a warm start (``highs``) the leave-one-out
    solves start from the PF allocation and the tie-break runs, with ``thread_safe`` they run on a
    thread pool."""
    t0 = time.perf_counter()
    budget = budget_for(opts, budget)
    be = backends.get_backend(backend)
    label = name or ("exact" if be.name == "highs" else be.name)
    opts = _auction_options(opts)
    # pruning and model building count against the budget: the first solve gets what is left
    prog = PFProgram(inst, stop=budget.spent)
    if not budget.spent() and _wide(prog.to_milp()):
        # feasibility jump off too: on 20,000 subset bids it ran 0.5 s before the root LP, could
        # not be interrupted and found a point far from the optimum
        opts = opts.with_(presolve=False, mip_feasibility_jump=False)
    o = budget.options(opts)
    res = backends.run(prog, be, o) if o is not None else _not_started()
    if not res.has_solution:
        ids = [a.id for a in inst.apps] if payments else []
        return unsolved(label, res, time.perf_counter() - t0, rounding, ids, o is not None)
    solves = _SubSolves(inst, prog, be, opts, budget, res)
    choice0 = solves.choice0
    todo = [i for i in sorted(choice0) if not solves.untouched(i, choice0)] if payments else []
    want_tie = (
        tie_break and be.capabilities.warm_start and res.status == "optimal" and len(prog.columns)
    )
    results = solves.run(todo, bool(want_tie))
    x = next((r[3] for r in results if r[0] == "tie"), res.x)
    assert x is not None  # has_solution
    choice = prog.decode(x)
    pa_ = _settle_payments(inst, solves, results, choice, todo, payments)
    final = pa.round_allocation(inst, choice, pa_.c, rule=rounding, seed=seed)
    pf_val = prog.value(choice)
    bound, served_max = pf_bound(prog, res, pf_val)
    ids = [a.id for a in inst.apps]
    apps = range(len(inst.apps))
    return Solution(
        kind="auction",
        status=pa_.status,
        solver=label,
        seconds=time.perf_counter() - t0,
        objective=pf_val.log_sum,
        bound=bound,
        allocation={ids[i]: list(g) for i, g in final.items()},
        pf_allocation={ids[i]: list(inst.apps[i].bids[b].gpus) for i, b in sorted(choice.items())},
        payments={ids[i]: pa_.c[i] for i in apps} if payments else None,
        leftover=pa.leftover(inst, choice, final),
        gap=auction_gap(pf_val.log_sum, bound),
        message=res.message,
        extra={
            "rounding": rounding,
            "unserved_unbounded": [
                ids[i] for i in apps if inst.apps[i].rho_empty is None and i not in choice
            ],
            "rho": {ids[i]: inst.apps[i].bids[b].rho for i, b in choice.items()},
            "pf_status": res.status,
            "unbounded_served_bound": served_max,
            "loo_solves": len(todo),
            "milp_solves": 1 + pa_.n_run,
            # c_i of these apps rests on a PF_{-i} not solved to optimality (module docstring)
            "payments_inexact": sorted(set(pa_.inexact)),
        },
    )


def _auction_options(opts: SolveOptions) -> SolveOptions:
    """The auction's defaults of the options left None (see :class:`SolveOptions`)."""
    if opts.mip_allow_restart is None:  # see SolveOptions.mip_allow_restart
        opts = opts.with_(mip_allow_restart=False)
    if opts.mip_pool_soft_limit is None:  # see SolveOptions.mip_pool_soft_limit
        opts = opts.with_(mip_pool_soft_limit=50)
    return opts


class _SubSolves:
    """The solves after PF, within the auction's budget: each leave-one-out PF_{-i} (warm-started
    from PF minus i on a back end with a warm start) and the tie-break among PF optima."""

    def __init__(self, inst, prog: PFProgram, be, opts: SolveOptions, budget: Budget, res):
        self.inst, self.prog, self.be, self.opts, self.budget, self.res = (
            inst, prog, be, opts, budget, res,
        )  # fmt: skip
        self.choice0 = prog.decode(res.x)
        self.need = SUB_SOLVE_SHARE * res.seconds  # budget.options: what a sub-solve needs left

    def untouched(self, i: int, choice: dict[int, int]) -> bool:
        return untouched(self.inst, i, self.inst.apps[i].bids[choice[i]].gpus)

    def loo(self, i: int):
        """("loo", i, status, PF value of the others or None)."""
        budget, opts = self.budget, self.opts
        if budget.spent():  # not started
            return ("loo", i, "not_run", None)
        sub = self.prog.without(i)  # shares the PF program's pruned bids
        sub.to_milp()
        start = _start_vector(sub, {j: b for j, b in self.choice0.items() if j != i})
        o = budget.options(opts, self.need)  # what is left once the model is built
        if o is None:
            return ("loo", i, "not_run", None)
        r = backends.run(sub, self.be, o, start=start if self.be.capabilities.warm_start else None)
        return ("loo", i, r.status, sub.value(sub.decode(r.x)) if r.x is not None else None)

    def tie(self):
        """("tie", None, None, the tie-broken PF point)."""
        o, res = self.budget.options(self.opts, self.need), self.res
        x = res.x if o is None else break_ties(self.prog, res.objective, o, res.x, self.be)
        return ("tie", None, None, x)

    def run(self, todo: list[int], want_tie: bool) -> list[tuple]:
        """Every leave-one-out of ``todo`` and the tie-break (on 2 threads on a thread-safe back
        end)."""
        jobs = [*((self.loo, i) for i in todo), *(((self.tie, None),) if want_tie else ())]
        run = lambda job: job[0]() if job[1] is None else job[0](job[1])  # noqa: E731
        if self.opts.parallel and self.be.capabilities.thread_safe and len(jobs) > 1:
            with one_blas_thread(), ThreadPoolExecutor(max_workers=2) as pool:
                return list(pool.map(run, jobs))
        return list(map(run, jobs))


@dataclass
class _Payments:
    c: dict[int, float]
    inexact: list[str]
    n_run: int
    status: str


def _settle_payments(inst, solves: _SubSolves, results, choice, todo, payments) -> _Payments:
    """c_i from the leave-one-out values on the reported (tie-broken) PF allocation; apps that
    gained a bundle through the tie-break get their own leave-one-out; the status and the apps
    whose c_i rests on a non-optimal solve."""
    apps = range(len(inst.apps))
    res = solves.res
    out = _Payments({i: 1.0 for i in apps}, [], 0, res.status)
    for kind, i, st, val in results:
        if kind != "loo":
            continue
        out.n_run += st != "not_run"
        if st != "optimal":
            out.inexact.append(inst.apps[i].id)
        if val is None:
            out.status = "error" if st == "error" else "time_limit"
            continue
        if st != "optimal":
            out.status = "time_limit"
        # others' value is taken in the *tie-broken* PF allocation: every PF optimum has the same value
        # for i's rivals only up to ties, so recompute it on the allocation we report.
        out.c[i] = pa.payment(pa.others_value(inst, choice, apps, i), val)
    if payments and choice != solves.choice0:  # apps that gained a bundle through the tie-break
        for i in set(choice) - set(todo):
            if not solves.untouched(i, choice):
                _, _, st, val = solves.loo(i)
                out.n_run += st != "not_run"
                if st != "optimal":
                    out.inexact.append(inst.apps[i].id)
                    out.status = "error" if st == "error" else "time_limit"
                out.c[i] = (
                    pa.payment(pa.others_value(inst, choice, apps, i), val)
                    if val is not None
                    else 1.0
                )
    if payments and res.status != "optimal":  # every c_i is relative to a non-optimal PF
        out.inexact = [a.id for a in inst.apps]
    return out


def unsolved(
    label: str, res: RawResult, seconds: float, rounding: str, ids: list[str], started: bool
) -> Solution:
    """An auction Solution without any PF point (time limit, error): no allocation, the usual
    ``extra`` keys (docs/solutions.md), every payment (``ids``) unknown."""
    extra: dict[str, Any] = {
        "rounding": rounding,
        "unserved_unbounded": [],
        "rho": {},
        "pf_status": res.status,
        "unbounded_served_bound": None,
        "loo_solves": 0,
        "milp_solves": int(started),
        "payments_inexact": sorted(ids),
    }
    return Solution(
        "auction", res.status, label, seconds, None, {}, message=res.message, extra=extra
    )


def _not_started() -> RawResult:
    return RawResult("time_limit", None, None, None, 0.0, "time limit reached before the PF solve")


def pf_bound(prog, res: RawResult, value: PFValue) -> tuple[float | None, int | None]:
    """(bound on the log-sum objective or None, bound on the number of unbounded apps served) from
    the PF solve ``res`` whose incumbent has ``value``: the program's bound is in units of
    big_m * served + log-sum, so it is a log-sum bound only when it proves that no allocation serves
    more unbounded apps than the incumbent (``formulations.program.lexicographic_bound``)."""
    if res.bound is None:
        return None, None
    if res.status == "optimal":
        return value.log_sum, value.n_unbounded_served
    return lexicographic_bound(res.bound, prog.big_m, value.n_unbounded_served, prog.log_sum_range)


def auction_gap(objective: float, bound: float | None) -> float | None:
    """bound - objective in log units (>= 0): log of the ratio of the proven bound on the PF product
    prod 1/rho_i to the incumbent's (exp(gap) - 1 is the relative gap of that product)."""
    return None if bound is None else max(0.0, float(bound - objective))


def solve_pf(
    inst: AuctionInstance,
    backend: str | backends.Backend = "highs",
    opts: SolveOptions = SolveOptions(),
):
    """(raw result, choice {app index: bid index}, program) of the full PF problem, without payments."""
    prog = PFProgram(inst)
    res = backends.run(prog, backend, opts)
    return res, (prog.decode(res.x) if res.x is not None else None), prog
