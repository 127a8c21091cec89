"""Reduced-cost fixing on a MILP (the argument is in :mod:`.rc`'s docstring): the weak-duality
bound UB(y) for any row prices y, integer columns fixed at their best bound when a step off it
costs more than the gap to an incumbent, forcing rows, the program restricted to the columns left,
and row prices for one leave-one-out problem from an alike app's (:func:`reprice`, per-app blocks
from :func:`block_owners`). Exact: no point at least as good as the incumbent is lost."""

from __future__ import annotations

import numpy as np

from fairplace.formulations.compact import CompactProgram
from fairplace.formulations.program import MILP

from ..backends import highs

#: a column is fixed only if leaving its bound loses this much more than the incumbent's gap
FIX_MARGIN = 1e-6


def lagrangian_bound(milp: MILP, y: np.ndarray) -> tuple[float, np.ndarray]:
    """(UB(y), d = c - A'y) for a max problem (module docstring); a row price whose side is
    unbounded (y_r > 0 with ru_r = inf, y_r < 0 with rl_r = -inf) is taken as 0."""
    y = np.where((y > 0) & np.isinf(milp.row_ub), 0.0, y)
    y = np.where((y < 0) & np.isinf(milp.row_lb), 0.0, y)
    d = milp.c - milp.A.T @ y
    rows = np.where(y > 0, y * np.where(np.isinf(milp.row_ub), 0.0, milp.row_ub), 0.0)
    rows += np.where(y < 0, y * np.where(np.isinf(milp.row_lb), 0.0, milp.row_lb), 0.0)
    cols = np.maximum(d * milp.col_lb, d * milp.col_ub)
    return float(milp.offset + rows.sum() + cols.sum()), d


def block_owners(prog: CompactProgram, milp: MILP) -> tuple[np.ndarray, np.ndarray]:
    """(owner app of each column, of each row; -1 where shared): an app's columns are contiguous
    from its ``z`` up to the next app's (``compact_milp.milp_layout``), the aggregated machine
    columns after them are shared; a row is an app's when all its columns are."""
    _, meta = prog.layout
    col = np.full(milp.n_cols, -1, dtype=np.int64)
    end = milp.n_cols - (len(prog.agg.m_cols) if prog.agg is not None else 0)
    starts = [e["z"] for e in meta] + [end]
    for k, e in enumerate(meta):
        col[starts[k] : starts[k + 1]] = e["i"]
    A = milp.A.tocsr()
    own = col[A.indices]
    full = np.diff(A.indptr) > 0
    row = np.full(milp.n_rows, -1, dtype=np.int64)
    if A.nnz:
        at = A.indptr[:-1][full]
        lo, hi = np.minimum.reduceat(own, at), np.maximum.reduceat(own, at)
        row[full] = np.where(lo == hi, lo, -1)
    return col, row


def reprice(
    milp: MILP, y: np.ndarray, owners: tuple[np.ndarray, np.ndarray], skip: int, back: int, opts
) -> np.ndarray:
    """Row prices for PF_{-skip} from those ``y`` of PF_{-back}'s LP: app ``skip``'s own rows at
    0 (its columns are 0, so 0 minimises their term of UB(y)), app ``back``'s own rows at the
    duals of its block LP  max (c - A_s' y_s) x  s.t. its own rows and bounds  (A_s, y_s: the
    other rows), which minimise UB over those prices with the rest held (LP duality). Any prices
    give a valid bound (:func:`lagrangian_bound`); these make it close to PF_{-skip}'s LP."""
    col, row = owners
    y = y.copy()
    y[row == skip] = 0.0
    rows = np.flatnonzero(row == back)
    cols = np.flatnonzero(col == back)
    if not rows.size or not cols.size:
        return y
    rest = y.copy()
    rest[rows] = 0.0
    A = milp.A.tocsc()[:, cols]
    block = MILP(
        c=milp.c[cols] - A.T @ rest,
        A=A.tocsr()[rows],
        row_lb=milp.row_lb[rows],
        row_ub=milp.row_ub[rows],
        col_lb=milp.col_lb[cols],
        col_ub=milp.col_ub[cols],
        integrality=np.zeros(cols.size, dtype=bool),
        sense=milp.sense,
    )
    h = highs.build(block, opts.with_(time_limit=None))
    h.run()
    if highs.read(h, block, 0.0).status != "optimal":
        return y
    y[rows] = np.asarray(h.getSolution().row_dual, dtype=float)
    return y


def fix_by_reduced_cost(
    milp: MILP, y: np.ndarray, incumbent: float, margin: float = FIX_MARGIN
) -> tuple[np.ndarray, np.ndarray, float]:
    """(col_lb, col_ub, UB(y)) with every integer column fixed at its best bound whose one-step
    move costs more than UB(y) - incumbent + ``margin`` (module docstring): no point better than
    ``incumbent`` is lost. Needs finite column bounds."""
    ub_y, d = lagrangian_bound(milp, y)
    lb, ub = milp.col_lb.copy(), milp.col_ub.copy()
    if not np.isfinite(ub_y):
        return lb, ub, ub_y
    out = milp.integrality & (ub_y - np.abs(d) < incumbent - margin) & (ub > lb)
    at_lb = out & (d < 0)
    at_ub = out & (d > 0)
    ub[at_lb] = lb[at_lb]
    lb[at_ub] = ub[at_ub]
    return lb, ub, ub_y


def row_signs(milp: MILP):
    """(A+, A-, A+', A-'): the positive and negative parts of ``milp.A`` and their transposes
    (CSR), for :func:`forcing_rows`."""
    A = milp.A.tocsr()
    pos, neg = A.maximum(0), A.minimum(0)
    return pos, neg, pos.T.tocsr(), neg.T.tocsr()


def forcing_rows(
    milp: MILP, lb: np.ndarray, ub: np.ndarray, passes: int = 3, signs=None
) -> tuple[np.ndarray, np.ndarray]:
    """Column bounds after fixing the columns of *forcing* rows: a row whose largest activity
    over the bounds is its lower side (or least activity its upper side) holds only with every
    column at the bound giving that activity (e.g. a count row  sum_q x_iq = sum_c n_c z_ic
    once app i's cells are fixed to 0 forces its x_iq to 0). Exact; ``passes`` rounds; ``signs``:
    :func:`row_signs` of ``milp`` when already at hand."""
    pos, neg, pos_t, neg_t = signs if signs is not None else row_signs(milp)
    lb, ub = lb.copy(), ub.copy()
    for _ in range(passes):
        lo = pos @ lb + neg @ ub  # least activity of each row
        hi = pos @ ub + neg @ lb
        up = (hi <= milp.row_lb + 1e-9).astype(float)  # every column at its maximising bound
        down = (lo >= milp.row_ub - 1e-9).astype(float)
        if not (up.any() or down.any()):
            break
        # columns with a positive (negative) entry in some forcing row: A+' u > 0 (A-' u < 0)
        to_ub = (pos_t @ up > 0) | (neg_t @ down < 0)
        to_lb = (pos_t @ down > 0) | (neg_t @ up < 0)
        if not ((to_ub | to_lb) & (lb < ub)).any():
            break
        lb = np.where(to_ub, ub, lb)
        ub = np.where(to_lb, lb, ub)
    return lb, ub


def restrict(milp: MILP, lb: np.ndarray, ub: np.ndarray) -> tuple[MILP, np.ndarray]:
    """(the MILP over the columns with lb < ub, that mask): fixed columns moved into the row
    sides and the offset, rows left without columns dropped."""
    free = lb < ub
    xf = np.where(free, 0.0, lb)
    act = milp.A @ xf
    A = milp.A.tocsc()[:, free].tocsr()
    keep = np.diff(A.indptr) > 0
    return (
        MILP(
            c=milp.c[free],
            A=A[keep],
            row_lb=(milp.row_lb - act)[keep],
            row_ub=(milp.row_ub - act)[keep],
            col_lb=lb[free],
            col_ub=ub[free],
            integrality=milp.integrality[free],
            sense=milp.sense,
            offset=milp.offset + float(milp.c @ xf),
        ),
        free,
    )
