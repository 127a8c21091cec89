"""Exact PF + partial-allocation auction: N+1 solves of :class:`~fairplace.formulations.pf.PFProgram`.

The full PF solve gives the allocation; each leave-one-out solve PF_{-i} starts from the PF
allocation without i (a feasible incumbent), and they run on a thread pool (HiGHS releases the GIL).
Apps without a PF bundle need no solve: PF restricted to the others is then optimal for PF_{-i}, c_i = 1.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from fairplace.formulations import pa
from fairplace.formulations.pf import PFProgram, PFValue

from fairplace.domain import AuctionInstance
from fairplace.solution import Solution

from . import backends, highs
from .options import SolveOptions


def _start_vector(prog: PFProgram, choice: dict[int, int]) -> np.ndarray:
    return np.array([1.0 if choice.get(i) == b else 0.0 for i, b in prog.columns])


def _tie_break(
    prog: PFProgram, optimum: float, opts: SolveOptions, start: np.ndarray
) -> np.ndarray | None:
    """Among allocations within the optimality tolerance of ``optimum``, the one minimising the
    documented secondary cost (fewest GPUs, then earliest app/bid)."""
    import highspy

    milp = prog.to_milp()
    h = highs.build(milp, opts)
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
    h.run()
    info = h.getInfo()
    if info.primal_solution_status != 2:
        return None
    x = np.round(np.asarray(h.getSolution().col_value))
    return x if milp.is_feasible(x) else None


def solve_pf(
    inst: AuctionInstance,
    backend: str = "highs",
    opts: SolveOptions = SolveOptions(),
    tie_break: bool = True,
):
    """(raw result, choice {app index: bid index}, program) of the full PF problem."""
    prog = PFProgram(inst)
    res = backends.run(prog, backend, opts)
    if not res.has_solution:
        return res, None, prog
    x = res.x
    if tie_break and res.status == "optimal" and prog.columns:
        better = _tie_break(prog, res.objective, opts, x)
        x = better if better is not None else x
    return res, prog.decode(x), prog


def leave_one_out(
    inst: AuctionInstance,
    choice: dict[int, int],
    backend: str,
    opts: SolveOptions,
    parallel: bool = True,
) -> dict[int, tuple[str, PFValue]]:
    """{i: (status, value of PF_{-i})} for every app i holding a PF bundle."""
    todo = sorted(choice)

    def one(i: int):
        prog = PFProgram(inst, exclude=frozenset({i}))
        start = _start_vector(prog, {j: b for j, b in choice.items() if j != i})
        r = backends.run(prog, backend, opts, start=start if backend == "highs" else None)
        if not r.has_solution:
            return i, (r.status, None)
        return i, (r.status, prog.value(prog.decode(r.x)))

    if parallel and len(todo) > 1 and backend == "highs":
        with ThreadPoolExecutor(max_workers=2) as pool:
            return dict(pool.map(one, todo))
    return dict(map(one, todo))


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
    res, choice, prog = solve_pf(inst, backend, opts, tie_break)
    if choice is None:
        return Solution(
            "auction", res.status, label, time.perf_counter() - t0, None, {}, message=res.message
        )
    ids = [a.id for a in inst.apps]
    apps = range(len(inst.apps))
    pf_val = prog.value(choice)
    status = res.status
    c = {i: 1.0 for i in apps}
    if payments:
        loo = leave_one_out(inst, choice, backend, opts, parallel=opts.parallel)
        for i, (st, val) in loo.items():
            if val is None:
                status = "error" if st == "error" else "time_limit"
                continue
            if st != "optimal":
                status = "time_limit"
            c[i] = pa.payment(pa.others_value(inst, choice, apps, i), val)
    final = pa.round_allocation(inst, choice, c, rule=rounding, seed=seed)
    pf_alloc = {ids[i]: list(inst.apps[i].bids[b].gpus) for i, b in sorted(choice.items())}
    unserved = [ids[i] for i in apps if inst.apps[i].rho_empty is None and i not in choice]
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
        pf_allocation=pf_alloc,
        payments={ids[i]: c[i] for i in apps} if payments else None,
        leftover=pa.leftover(inst, choice, final),
        message=res.message,
        extra={
            "rounding": rounding,
            "unserved_unbounded": unserved,
            "rho": {ids[i]: inst.apps[i].bids[b].rho for i, b in choice.items()},
        },
    )
