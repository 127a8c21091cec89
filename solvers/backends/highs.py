"""HiGHS back end through highspy: solve a :class:`~fairplace.formulations.program.MILP`.

:class:`HighsBackend` is the :class:`~.base.Backend` (MIP, warm start, time limit, thread safe: highspy
releases the GIL). The module functions (``build``, ``read``, ``solve``, ``new_highs``) are also the
low-level API for callers that modify a ``Highs`` model in place (the compact auction's live-model
LPs).
"""

from __future__ import annotations

import functools
import os
import sys
import time
from dataclasses import dataclass

import highspy
import numpy as np

from fairplace.formulations.program import MILP, RawResult

from ..options import SolveOptions
from .base import Capabilities, as_milp

_INF = highspy.kHighsInf


def _status(h: highspy.Highs, has_x: bool) -> str:
    ms = h.getModelStatus()
    M = highspy.HighsModelStatus
    if ms == M.kOptimal:
        # HiGHS 1.16 can report "Optimal" with an infeasible point: a warm dual simplex re-solve
        # whose unscaled point misses a row by 1.9e-7 > the 1e-7 tolerance (a branch-and-bound
        # node of a THEMIS round, tests/solvers/test_compact_oracle.py); "optimal" needs a feasible point
        return "optimal" if has_x else "error"
    if ms in (M.kInfeasible,):
        return "infeasible"
    if ms in (M.kTimeLimit, M.kIterationLimit, M.kSolutionLimit, M.kInterrupt):
        return "time_limit"
    if ms == M.kUnboundedOrInfeasible:
        return "infeasible"
    return "error"


@functools.cache
def silence_banner() -> None:
    """HiGHS prints a copyright banner on stdout when the first ``Highs`` of a process is built; that
    would corrupt ``--json`` output. Build that first instance with fd 1 pointed at /dev/null."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def new_highs() -> highspy.Highs:
    silence_banner()
    return highspy.Highs()


def build(milp: MILP, opts: SolveOptions) -> highspy.Highs:
    """A configured ``highspy.Highs`` holding the model (exposed so callers can add rows)."""
    h = new_highs()
    h.setOptionValue("output_flag", bool(opts.verbose))
    for name, value in opts.highs_options().items():
        h.setOptionValue(name, value)
    if opts.time_limit is not None:
        h.setOptionValue("time_limit", float(opts.time_limit))
    lp = highspy.HighsLp()
    n, m = milp.n_cols, milp.n_rows
    lp.num_col_ = n
    lp.num_row_ = m
    lp.col_cost_ = np.asarray(milp.c, dtype=float)
    lp.offset_ = float(milp.offset)
    lp.col_lower_ = np.asarray(milp.col_lb, dtype=float)
    lp.col_upper_ = np.where(np.isinf(milp.col_ub), _INF, milp.col_ub).astype(float)
    lp.row_lower_ = np.where(np.isinf(milp.row_lb), -_INF, milp.row_lb).astype(float)
    lp.row_upper_ = np.where(np.isinf(milp.row_ub), _INF, milp.row_ub).astype(float)
    A = milp.A.tocsc()
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(float)
    lp.a_matrix_.num_col_ = n
    lp.a_matrix_.num_row_ = m
    lp.sense_ = highspy.ObjSense.kMaximize if milp.sense == "max" else highspy.ObjSense.kMinimize
    if milp.integrality.any():
        lp.integrality_ = [
            highspy.HighsVarType.kInteger if v else highspy.HighsVarType.kContinuous
            for v in milp.integrality
        ]
    h.passModel(lp)
    return h


def solve(
    milp: MILP, opts: SolveOptions = SolveOptions(), start: np.ndarray | None = None
) -> RawResult:
    """Solve with HiGHS; ``start`` is an optional feasible point given as the first incumbent."""
    t0 = time.perf_counter()
    if milp.n_cols == 0:  # HiGHS dislikes empty models; the answer is the offset
        return RawResult("optimal", np.zeros(0), milp.offset, milp.offset, time.perf_counter() - t0)
    h = build(milp, opts)
    if opts.time_limit is not None and milp.integrality.any():
        interrupt_after(h, opts.time_limit)
    if start is not None and milp.integrality.any():
        sol = highspy.HighsSolution()
        sol.col_value = list(np.asarray(start, dtype=float))
        sol.value_valid = True
        h.setSolution(sol)
    h.run()
    res = read(h, milp, time.perf_counter() - t0)
    if start is not None and res.message.startswith(INCONSISTENT):
        # HiGHS 1.16 can map a MIP start into presolve's reduced space, improve it there, report
        # that optimum and hand back the unimproved start: solve again without the start, in
        # what is left of the time limit
        if opts.time_limit is not None:
            left = opts.time_limit - (time.perf_counter() - t0)
            if left < 1e-3:
                x0 = np.asarray(start, dtype=float)  # no time for a second solve: the start
                return RawResult("time_limit", x0, milp.value(x0), None, res.seconds, res.message)
            opts = opts.with_(time_limit=left)
        return solve(milp, opts, start=None)
    return res


def interrupt_after(h: highspy.Highs, seconds: float) -> None:
    """Interrupt ``h``'s next MIP run ``seconds`` of wall time after this call (status
    ``time_limit``), on top of HiGHS' own ``time_limit``: HiGHS reads its clock at coarser points
    and overran it by 0.3-0.6 s on 20,000-column programs, 0.1-0.2 s with this. The callback runs a
    dozen times a second or so (highspy >= 1.8; older versions keep HiGHS' limit alone)."""
    subscribe = getattr(getattr(h, "cbMipInterrupt", None), "subscribe", None)
    if subscribe is None:
        return
    end = time.perf_counter() + seconds

    def stop(event) -> None:
        if time.perf_counter() > end:
            event.interrupt()

    subscribe(stop)


#: message prefix of a result whose point does not have the objective HiGHS reports for it
INCONSISTENT = "inconsistent"
#: message prefix of an "Optimal" model status whose point is not feasible (status ``error``)
NO_POINT = "no feasible point"


def read(h: highspy.Highs, milp: MILP, seconds: float) -> RawResult:
    """Read status, point, objective and bound honestly from a solved ``Highs``."""
    info = h.getInfo()
    has_x = info.primal_solution_status == 2  # kSolutionStatusFeasible
    status = _status(h, has_x)
    x = np.asarray(h.getSolution().col_value, dtype=float) if has_x else None
    if x is not None and milp.integrality.any():
        x = np.where(milp.integrality, np.round(x), x)
    obj = milp.value(x) if x is not None else None
    if milp.integrality.any():
        bound = float(info.mip_dual_bound) if np.isfinite(info.mip_dual_bound) else None
    else:
        bound = obj if status == "optimal" else None
    if status == "optimal" and x is not None and not milp.is_feasible(x, tol=1e-6):
        status = "error"
    claimed = float(info.objective_function_value)
    if (
        status == "optimal"
        and obj is not None
        and milp.integrality.any()
        and not np.isclose(obj, claimed, rtol=1e-9, atol=1e-7)
    ):
        status = "error"
        msg = f"{INCONSISTENT}: the point's objective {obj!r} is not HiGHS' optimum {claimed!r}"
    elif status == "time_limit" and x is None:
        msg = "time limit reached before any feasible point was found"
    elif status == "error" and h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
        msg = (
            f"{NO_POINT}: HiGHS reports 'Optimal' without a feasible point (max primal "
            f"infeasibility {info.max_primal_infeasibility:.3g})"
        )
    else:
        msg = h.modelStatusToString(h.getModelStatus())
    return RawResult(status, x, obj, bound, seconds, msg)


@dataclass(frozen=True)
class HighsBackend:
    """HiGHS through highspy: :func:`solve` on the problem's matrix form."""

    name: str = "highs"
    capabilities: Capabilities = Capabilities(
        mip=True, warm_start=True, time_limit=True, thread_safe=True
    )

    def solve(
        self, problem, opts: SolveOptions = SolveOptions(), start: np.ndarray | None = None
    ) -> RawResult:
        silence_banner()
        return solve(as_milp(problem), opts, start=start)
