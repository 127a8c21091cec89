"""A small LP branch and bound over the compact PF's cell selectors z (exact; PF and PF_{-i}).

On contended offers the compact LP (aggregated, ``formulations/compact_agg.py``) is integral but for
one or two apps split between two cells: the capacity rows act as a knapsack over the apps' GPU
counts. HiGHS' MILP spends most of its time separating cuts at the root (1,024 GPUs x 256 apps:
20 of 27 s), while branching on those few selectors closes the gap in a handful of LPs, each
re-optimised by dual simplex from the previous basis on one live model:

* a node fixes some z_ic to 0 or 1 (column bounds); its LP value bounds every integer point in it;
* a node whose LP value is within the MIP gap of the incumbent is pruned;
* a node whose cell selectors are integral and whose cells can be placed (greedy pack, else the
  exact placement MILP: ``compact.lp.from_lp``) is an integer point at its LP value (the objective
  depends on z only): a new incumbent;
* otherwise branch on the most fractional z_ic of the app with the largest z (z_ic = 1 first).

When every node is closed the incumbent is optimal. A node with integral z that cannot be placed
(the fractional part is then in the placement variables), the node limit or the time budget end the
search with None: the caller falls back to the full MILP.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import replace

import numpy as np

from fairplace.formulations.compact import CompactProgram
from fairplace.formulations.program import RawResult

from ..options import SolveOptions
from .lp import from_lp, rerun, selector_columns, selectors
from .packing import PACK_RULES, pack

#: most LPs one branch and bound may solve before giving up (then the full MILP runs)
NODE_LIMIT = 60
#: simplex iterations one node's LP may take (a stalling re-solve ends the search, not the solve)
NODE_ITERATIONS = 20_000


def branch_and_bound(
    prog: CompactProgram,
    milp,
    h,
    lp_model,
    opts: SolveOptions,
    budget,
    skip: int | None = None,
    node_limit: int = NODE_LIMIT,
    why: list | None = None,
    start: dict | None = None,
):
    """(RawResult, choice) of the optimum of ``milp`` (app ``skip``'s selectors ignored, its
    costs 0 in the live model ``h`` of ``lp_model``), or None (module docstring). ``h`` is
    left with its column bounds and simplex strategy as found."""
    t0 = time.perf_counter()
    zcols, skip_cols = selector_columns(prog, skip)
    lb0, ub0 = lp_model.col_lb[zcols].copy(), lp_model.col_ub[zcols].copy()
    pos = {int(c): k for k, c in enumerate(zcols)}
    best = None  # (value, RawResult, choice)
    if start is not None:  # e.g. PF minus i for PF_{-i}
        best = _incumbent(prog, milp, start)
    stack: list[tuple[tuple[int, float], ...]] = [()]
    nodes = 0
    with _dual_resolves(h, zcols, lb0, ub0):
        while stack:
            o = budget.options(opts)
            nodes += 1
            if o is None or nodes > node_limit:
                if why is not None:
                    why.append("node limit" if o is not None else "budget")
                return None
            fixes = stack.pop()
            lb, ub = lb0.copy(), ub0.copy()
            for col, val in fixes:
                lb[pos[col]] = ub[pos[col]] = val
            h.changeColsBounds(zcols.size, zcols, lb, ub)
            if o.time_limit is not None:  # HiGHS' run time is cumulative over re-solves
                h.setOptionValue("time_limit", float(h.getRunTime() + o.time_limit))
            lp = rerun(h, lp_model)  # a failed warm re-solve is solved again from scratch
            if lp.status == "infeasible":
                continue
            if lp.status != "optimal":  # still no optimum: the caller's full MILP decides
                if why is not None:
                    why.append(f"LP {lp.status} at node {nodes}: {lp.message}")
                return None
            assert lp.x is not None  # optimal: a point (highs.read)
            x = lp.x.copy()
            x[skip_cols] = 0.0
            v = lp_model.value(x)
            lp = replace(lp, x=x, objective=v, bound=v)
            if best is not None and v <= best[0] + _tol(opts, best[0]):
                continue
            z = x[zcols]
            frac = np.abs(z - np.round(z))
            if frac.max() <= 1e-7:
                hit = from_lp(prog, milp, lp, opts, skip=skip, budget=budget)
                if hit is None:  # integral cells that cannot be placed: not for this search
                    if why is not None:
                        why.append(f"unplaced at node {nodes}")
                    return None
                best = (hit[0].objective, hit[0], hit[1])
                continue
            cand = _rounded(prog, milp, x, skip)  # split apps on their smallest cell
            if cand is not None and (best is None or cand[0] > best[0]):
                best = cand
                if v <= best[0] + _tol(opts, best[0]):
                    continue
            k = int(np.argmax(np.where(frac > 1e-7, z, -1.0)))  # largest fractional selector
            col = int(zcols[k])
            stack.append(fixes + ((col, 0.0),))
            stack.append(fixes + ((col, 1.0),))
    if best is None:
        if why is not None:
            why.append(f"infeasible after {nodes} nodes")
        return None
    _, res, choice = best
    msg = f"optimal (LP branch and bound, {nodes} nodes)"
    return replace(res, seconds=time.perf_counter() - t0, message=msg), choice


@contextmanager
def _dual_resolves(h, zcols, lb0, ub0):
    """The live model ``h`` set for node re-solves (dual simplex: bound changes keep the basis
    dual feasible; no presolve: the basis is kept; a stalling LP gives up after
    :data:`NODE_ITERATIONS`), then left with the column bounds and options it had."""
    strategy = h.getOptionValue("simplex_strategy")[1]  # (status, value)
    presolve = h.getOptionValue("presolve")[1]
    iter_limit = h.getOptionValue("simplex_iteration_limit")[1]
    h.setOptionValue("simplex_strategy", 1)
    h.setOptionValue("presolve", "off")
    h.setOptionValue("simplex_iteration_limit", NODE_ITERATIONS)
    try:
        yield
    finally:
        h.changeColsBounds(zcols.size, zcols, lb0, ub0)
        h.setOptionValue("simplex_strategy", strategy)
        h.setOptionValue("presolve", presolve)
        h.setOptionValue("simplex_iteration_limit", iter_limit)


def _tol(opts: SolveOptions, value: float) -> float:
    return max(opts.mip_abs_gap, opts.mip_rel_gap * abs(value), 1e-9) + 1e-9


def _incumbent(prog: CompactProgram, milp, choice: dict):
    """(value, RawResult, choice) of a placement, or None if it is not feasible here."""
    x = prog.start_vector(choice)
    if not milp.is_feasible(x):
        return None
    v = milp.value(x)
    return v, RawResult("optimal", x, v, v, 0.0, "optimal"), choice


def _rounded(prog: CompactProgram, milp, x: np.ndarray, skip: int | None):
    """An incumbent from an LP point: integral apps keep their cell, split apps take their
    smallest cell with z > 0 (fewer GPUs), placed by the greedy ``pack``; None if none fits."""
    cells = {}
    for i, cs, zs in selectors(prog, x, skip):
        on = np.flatnonzero(zs > 1e-7)
        if on.size:
            cells[i] = min((cs[k] for k in on), key=lambda c: (c[0], -c[1], -c[2]))
    for rule in PACK_RULES:
        choice = pack(prog, cells, rule)
        if choice is not None:
            return _incumbent(prog, milp, choice)
    return None
