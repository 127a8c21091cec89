"""Exact PF + partial-allocation auction: N+1 solves of :class:`~fairplace.formulations.pf.PFProgram`.

1. The full PF solve gives the optimum value and an optimal allocation.
2. In parallel on a thread pool (HiGHS releases the GIL):
   * each leave-one-out solve PF_{-i}, warm-started from the PF allocation without i (feasible for it);
   * the tie-break solve (see :func:`break_ties`).
   Apps that need no solve: an app without a PF bundle (PF restricted to the others is optimal for
   PF_{-i}, so c_i = 1), and an app whose PF bundle no other app's bid touches (removing it frees GPUs
   nobody can use, so again c_i = 1).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from fairplace.domain import AuctionInstance
from fairplace.formulations import pa
from fairplace.formulations.pf import PFProgram, PFValue
from fairplace.solution import Solution

from . import backends, highs
from .options import SolveOptions

#: Work limit of the tie-break solve: a node count (deterministic), not a time limit (which is not).
TIE_BREAK_NODES = 2000


def _start_vector(prog: PFProgram, choice: dict[int, int]) -> np.ndarray:
    return np.array([1.0 if choice.get(i) == b else 0.0 for i, b in prog.columns])


def break_ties(
    prog: PFProgram, optimum: float, opts: SolveOptions, start: np.ndarray
) -> np.ndarray:
    """Deterministic choice among PF optima: keep the objective within the optimality tolerance of
    ``optimum`` and minimise ``prog.tie_break_costs()`` (fewest GPUs used, then earliest app/bid). The
    solve is node-limited; if the limit is hit, the best point found (never worse than ``start``) is
    used, which is still deterministic with ``threads=1`` and a fixed seed."""
    import highspy

    milp = prog.to_milp()
    h = highs.build(milp, opts.with_(time_limit=None))
    tol = max(opts.mip_abs_gap, opts.mip_rel_gap * abs(optimum), 1e-9)
    cols = np.arange(milp.n_cols, dtype=np.int32)
    h.addRow(
        optimum - milp.offset - tol, highspy.kHighsInf, milp.n_cols, cols, milp.c.astype(float)
    )
    h.changeObjectiveSense(highspy.ObjSense.kMinimize)
    h.changeColsCost(milp.n_cols, cols, prog.tie_break_costs())
    h.changeObjectiveOffset(0.0)
    sol = highspy.HighsSolution()
    sol.col_value = list(start)
    sol.value_valid = True
    h.setSolution(sol)
    h.setOptionValue("mip_rel_gap", 1e-6)
    h.setOptionValue("mip_max_nodes", TIE_BREAK_NODES)
    h.run()
    if h.getInfo().primal_solution_status != 2:
        return start
    x = np.round(np.asarray(h.getSolution().col_value))
    return x if milp.is_feasible(x) else start


def untouched(inst: AuctionInstance, i: int, bundle: tuple[str, ...]) -> bool:
    """True if no other app has a bid using a GPU of ``bundle`` (then c_i = 1 without a solve)."""
    gs = set(bundle)
    return not any(
        gs.intersection(b.gpus) for j, a in enumerate(inst.apps) if j != i for b in a.bids
    )


def solve_auction(
    inst: AuctionInstance,
    backend: str = "highs",
    opts: SolveOptions = SolveOptions(),
    rounding: str = "floor",
    seed: int = 0,
    payments: bool = True,
    tie_break: bool = True,
    name: str | None = None,
) -> Solution:
    """PF allocation, PA payments c_i, rounded final allocation and leftover."""
    t0 = time.perf_counter()
    label = name or ("exact" if backend == "highs" else backend)
    if opts.mip_allow_restart is None:  # see SolveOptions.mip_allow_restart
        opts = opts.with_(mip_allow_restart=False)
    if opts.mip_pool_soft_limit is None:  # see SolveOptions.mip_pool_soft_limit
        opts = opts.with_(mip_pool_soft_limit=50)
    prog = PFProgram(inst)
    res = backends.run(prog, backend, opts)
    if not res.has_solution:
        return Solution(
            "auction", res.status, label, time.perf_counter() - t0, None, {}, message=res.message
        )
    choice0 = prog.decode(res.x)
    apps = range(len(inst.apps))
    todo = (
        [i for i in sorted(choice0) if not untouched(inst, i, inst.apps[i].bids[choice0[i]].gpus)]
        if payments
        else []
    )
    want_tie = (
        tie_break and backend == "highs" and res.status == "optimal" and len(prog.columns) > 0
    )

    def loo(i: int):
        sub = PFProgram(inst, exclude=frozenset({i}))
        start = _start_vector(sub, {j: b for j, b in choice0.items() if j != i})
        r = backends.run(sub, backend, opts, start=start if backend == "highs" else None)
        return ("loo", i, r.status, sub.value(sub.decode(r.x)) if r.has_solution else None)

    def tie():
        return ("tie", None, None, break_ties(prog, res.objective, opts, res.x))

    jobs = [*((loo, i) for i in todo), *(((tie, None),) if want_tie else ())]
    run = lambda job: job[0]() if job[1] is None else job[0](job[1])  # noqa: E731
    if opts.parallel and backend == "highs" and len(jobs) > 1:
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(run, jobs))
    else:
        results = list(map(run, jobs))

    x = next((r[3] for r in results if r[0] == "tie"), res.x)
    choice = prog.decode(x)
    pf_val = prog.value(choice)
    status = res.status
    c = {i: 1.0 for i in apps}
    inexact = []
    for kind, i, st, val in results:
        if kind != "loo":
            continue
        if st != "optimal":
            inexact.append(inst.apps[i].id)
        if val is None:
            status = "error" if st == "error" else "time_limit"
            continue
        if st != "optimal":
            status = "time_limit"
        # others' value is taken in the *tie-broken* PF allocation: every PF optimum has the same value
        # for i's rivals only up to ties, so recompute it on the allocation we report.
        c[i] = pa.payment(pa.others_value(inst, choice, apps, i), val)
    if payments and choice != choice0:  # apps that gained a bundle through the tie-break
        for i in set(choice) - set(todo):
            if not untouched(inst, i, inst.apps[i].bids[choice[i]].gpus):
                _, _, st, val = loo(i)
                if st != "optimal":
                    inexact.append(inst.apps[i].id)
                c[i] = (
                    pa.payment(pa.others_value(inst, choice, apps, i), val)
                    if val is not None
                    else 1.0
                )
    final = pa.round_allocation(inst, choice, c, rule=rounding, seed=seed)
    ids = [a.id for a in inst.apps]
    bound = None
    if res.bound is not None:
        bound = (
            pf_val.log_sum
            if status == "optimal"
            else res.bound - prog.big_m * pf_val.n_unbounded_served
        )
    return Solution(
        kind="auction",
        status=status,
        solver=label,
        seconds=time.perf_counter() - t0,
        objective=pf_val.log_sum,
        bound=bound,
        allocation={ids[i]: list(g) for i, g in final.items()},
        pf_allocation={ids[i]: list(inst.apps[i].bids[b].gpus) for i, b in sorted(choice.items())},
        payments={ids[i]: c[i] for i in apps} if payments else None,
        leftover=pa.leftover(inst, choice, final),
        message=res.message,
        extra={
            "rounding": rounding,
            "unserved_unbounded": [
                ids[i] for i in apps if inst.apps[i].rho_empty is None and i not in choice
            ],
            "rho": {ids[i]: inst.apps[i].bids[b].rho for i, b in choice.items()},
            "loo_solves": len(todo),
            # c_i of these apps rests on a PF_{-i} not solved to optimality (see compact.py)
            "payments_inexact": sorted(inexact),
        },
    )


def solve_pf(inst: AuctionInstance, backend: str = "highs", opts: SolveOptions = SolveOptions()):
    """(raw result, choice {app index: bid index}, program) of the full PF problem, without payments."""
    prog = PFProgram(inst)
    res = backends.run(prog, backend, opts)
    return res, (prog.decode(res.x) if res.has_solution else None), prog


def leave_one_out_value(
    inst: AuctionInstance, i: int, backend: str = "highs", opts: SolveOptions = SolveOptions()
) -> tuple[str, PFValue | None]:
    """(status, PF value of the others) with app ``i`` removed."""
    sub = PFProgram(inst, exclude=frozenset({i}))
    r = backends.run(sub, backend, opts)
    return r.status, (sub.value(sub.decode(r.x)) if r.has_solution else None)
