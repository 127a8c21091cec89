"""Generic algebraic views of a matrix-form :class:`MILP` (Pyomo and CVXPY) for formulations that are
naturally built in matrix form. Columns are ``x[k]``, rows ``con[r]``; a user can add constraints."""

from __future__ import annotations

import numpy as np

from .program import MILP


def milp_to_pyomo(milp: MILP):
    import pyomo.environ as pyo  # heavy: imported on use

    m = pyo.ConcreteModel()
    m.K = pyo.RangeSet(0, milp.n_cols - 1)
    lb, ub = milp.col_lb, milp.col_ub

    def bounds(_, k):
        return (
            None if np.isinf(lb[k]) else float(lb[k]),
            None if np.isinf(ub[k]) else float(ub[k]),
        )

    def domain(_, k):
        return pyo.Integers if milp.integrality[k] else pyo.Reals

    m.x = pyo.Var(m.K, bounds=bounds, within=domain)
    A = milp.A.tocsr()
    m.R = pyo.RangeSet(0, milp.n_rows - 1)

    def row(mm, r):
        lo, hi = milp.row_lb[r], milp.row_ub[r]
        s, e = A.indptr[r], A.indptr[r + 1]
        expr = sum(
            float(v) * mm.x[int(k)] for k, v in zip(A.indices[s:e], A.data[s:e], strict=True)
        )
        return (None if np.isinf(lo) else float(lo), expr, None if np.isinf(hi) else float(hi))

    m.con = pyo.Constraint(m.R, rule=row)
    sense = pyo.maximize if milp.sense == "max" else pyo.minimize
    nz = np.flatnonzero(milp.c)
    m.obj = pyo.Objective(
        expr=sum(float(milp.c[k]) * m.x[int(k)] for k in nz) + milp.offset, sense=sense
    )
    return m


def milp_to_cvxpy(milp: MILP):
    import cvxpy as cp  # heavy: imported on use

    x = cp.Variable(milp.n_cols, integer=bool(milp.integrality.any()))
    cons = []
    A = milp.A
    fin_hi, fin_lo = np.isfinite(milp.row_ub), np.isfinite(milp.row_lb)
    eq = fin_hi & fin_lo & (milp.row_ub == milp.row_lb)
    if eq.any():
        cons.append(A[eq] @ x == milp.row_ub[eq])
    if (fin_hi & ~eq).any():
        cons.append(A[fin_hi & ~eq] @ x <= milp.row_ub[fin_hi & ~eq])
    if (fin_lo & ~eq).any():
        cons.append(A[fin_lo & ~eq] @ x >= milp.row_lb[fin_lo & ~eq])
    cons += [x >= milp.col_lb, x <= milp.col_ub]
    obj = milp.c @ x + milp.offset
    prob = cp.Problem(cp.Maximize(obj) if milp.sense == "max" else cp.Minimize(obj), cons)
    return prob, x
