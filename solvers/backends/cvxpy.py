"""CVXPY back end: the program's CVXPY problem (``to_cvxpy() -> (problem, x)``, or the generic one of a
matrix-form MILP) solved with ``cp.HIGHS``. CVXPY is imported inside the functions."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from fairplace.formulations.program import MILP, RawResult
from fairplace.formulations.pyomo_matrix import milp_to_cvxpy

from ..options import SolveOptions
from .base import Capabilities, require
from .highs import silence_banner


def preload() -> None:
    import cvxpy  # heavy: imported on use  # noqa: F401


def _problem(problem):
    """(CVXPY problem, variable, integrality): a formulation's own model rounds every column (its
    programs are binary); a matrix-form MILP rounds its integer columns only."""
    if isinstance(problem, MILP) or not hasattr(problem, "to_cvxpy"):
        milp = problem if isinstance(problem, MILP) else problem.to_milp()
        prob, x = milp_to_cvxpy(milp)
        return prob, x, np.asarray(milp.integrality, dtype=bool)
    prob, x = problem.to_cvxpy()
    return prob, x, None


@dataclass(frozen=True)
class CvxpyBackend:
    """HiGHS through CVXPY (``solver=cp.HIGHS``); no warm start."""

    name: str = "cvxpy"
    capabilities: Capabilities = Capabilities(
        mip=True, warm_start=False, time_limit=True, thread_safe=False
    )

    def solve(self, problem, opts: SolveOptions = SolveOptions(), start=None) -> RawResult:
        import cvxpy as cp  # heavy: imported on use

        require(self, problem, opts, start)
        silence_banner()  # HiGHS' banner (first Highs of a process) would corrupt --json
        t0 = time.perf_counter()
        prob, x, integrality = _problem(problem)
        kwargs = opts.highs_options()
        if opts.time_limit is not None:
            kwargs["time_limit"] = opts.time_limit
        try:
            prob.solve(solver=cp.HIGHS, verbose=opts.verbose, **kwargs)
        except cp.SolverError as exc:
            return RawResult("error", None, None, None, time.perf_counter() - t0, str(exc))
        st = prob.status
        if st == cp.OPTIMAL:
            status = "optimal"
        elif st in (cp.OPTIMAL_INACCURATE, cp.USER_LIMIT):
            status = "time_limit"
        elif st in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
            status = "infeasible"
        else:
            status = "error"
        xv = None
        if x.value is not None:
            xv = np.asarray(x.value, dtype=float).ravel()
            xv = np.round(xv) if integrality is None else np.where(integrality, np.round(xv), xv)
        obj = (
            float(prob.value)
            if xv is not None and prob.value is not None and np.isfinite(prob.value)
            else None
        )
        bound = obj if status == "optimal" else None
        return RawResult(status, xv, obj, bound, time.perf_counter() - t0, str(st))
