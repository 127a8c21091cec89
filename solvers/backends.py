"""Run a formulation on one of three exact back ends and return a :class:`RawResult`.

A formulation object offers ``to_milp()`` (for highspy), ``to_pyomo()``/``from_pyomo(model)`` and
``to_cvxpy() -> (problem, x)``. All three solve the same program with HiGHS underneath.
"""

from __future__ import annotations

import time

import numpy as np

from fairplace.core.errors import UnknownSolver
from fairplace.formulations.program import RawResult

from . import highs
from .options import SolveOptions

BACKENDS = ("highs", "pyomo", "cvxpy")


def preload(backend: str) -> None:
    """Import ``backend``'s modelling layer now, so that one-time imports (Pyomo, CVXPY: seconds)
    are not counted in a solve's ``seconds``."""
    if backend == "pyomo":
        import pyomo.contrib.solver.common.factory  # noqa: F401
    elif backend == "cvxpy":
        import cvxpy  # noqa: F401


def run(
    program, backend: str = "highs", opts: SolveOptions = SolveOptions(), start=None
) -> RawResult:
    highs.silence_banner()
    if backend == "highs":
        return highs.solve(program.to_milp(), opts, start=start)
    if backend == "pyomo":
        return _pyomo(program, opts)
    if backend == "cvxpy":
        return _cvxpy(program, opts)
    raise UnknownSolver("solver", f"unknown back end {backend!r}; expected one of {list(BACKENDS)}")


def _pyomo(program, opts: SolveOptions) -> RawResult:
    from pyomo.contrib.solver.common.factory import SolverFactory
    from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition

    t0 = time.perf_counter()
    model = program.to_pyomo()
    solver = SolverFactory("highs")
    res = solver.solve(
        model,
        time_limit=opts.time_limit,
        tee=opts.verbose,
        load_solutions=False,
        raise_exception_on_nonoptimal_result=False,
        solver_options=opts.highs_options(),
    )
    tc = res.termination_condition
    has_x = res.solution_status in (SolutionStatus.optimal, SolutionStatus.feasible)
    if tc == TerminationCondition.convergenceCriteriaSatisfied:
        status = "optimal"
    elif tc in (
        TerminationCondition.maxTimeLimit,
        TerminationCondition.iterationLimit,
        TerminationCondition.interrupted,
    ):
        status = "time_limit"
    elif tc in (
        TerminationCondition.provenInfeasible,
        TerminationCondition.locallyInfeasible,
        TerminationCondition.infeasibleOrUnbounded,
    ):
        status = "infeasible"
    else:
        status = "error"
    x = None
    if has_x:
        res.solution_loader.load_vars()
        x = program.from_pyomo(model)
    obj = float(res.incumbent_objective) if res.incumbent_objective is not None else None
    bound = (
        float(res.objective_bound)
        if res.objective_bound is not None and np.isfinite(res.objective_bound)
        else None
    )
    return RawResult(status, x, obj, bound, time.perf_counter() - t0, str(tc))


def _cvxpy(program, opts: SolveOptions) -> RawResult:
    import cvxpy as cp

    t0 = time.perf_counter()
    prob, x = program.to_cvxpy()
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
    xv = None if x.value is None else np.round(np.asarray(x.value, dtype=float).ravel())
    obj = (
        float(prob.value)
        if xv is not None and prob.value is not None and np.isfinite(prob.value)
        else None
    )
    bound = obj if status == "optimal" else None
    return RawResult(status, xv, obj, bound, time.perf_counter() - t0, str(st))
