"""Pyomo back end: the program's Pyomo model (``to_pyomo()`` / ``from_pyomo(model)``, or the generic
model of a matrix-form MILP) solved by HiGHS through Pyomo's ``highs`` solver. Pyomo is imported
inside the functions (seconds; ``preload`` imports it before a timed solve)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from fairplace.formulations.program import MILP, RawResult
from fairplace.formulations.pyomo_matrix import milp_to_pyomo

from ..options import SolveOptions
from .base import Capabilities, require
from .highs import silence_banner


def preload() -> None:
    # pyomo.environ loads ~345 plugin modules (~3 s) that would otherwise count in a first solve
    import pyomo.contrib.solver.common.factory  # heavy: imported on use  # noqa: F401
    import pyomo.environ  # heavy: imported on use  # noqa: F401


def _model(problem):
    """(Pyomo model, read(model) -> x, integrality or None)."""
    if isinstance(problem, MILP) or not hasattr(problem, "to_pyomo"):
        milp = problem if isinstance(problem, MILP) else problem.to_milp()
        model = milp_to_pyomo(milp)
        return (
            model,
            lambda m: np.array([m.x[k].value or 0.0 for k in m.x], dtype=float),
            milp.integrality,
        )
    return problem.to_pyomo(), problem.from_pyomo, None


@dataclass(frozen=True)
class PyomoBackend:
    """HiGHS through Pyomo (``SolverFactory("highs")``); no warm start."""

    name: str = "pyomo"
    capabilities: Capabilities = Capabilities(
        mip=True, warm_start=False, time_limit=True, thread_safe=False
    )

    def solve(self, problem, opts: SolveOptions = SolveOptions(), start=None) -> RawResult:
        from pyomo.contrib.solver.common.factory import SolverFactory  # heavy: imported on use
        from pyomo.contrib.solver.common.results import (  # heavy: imported on use
            SolutionStatus,
            TerminationCondition,
        )

        require(self, problem, opts, start)
        silence_banner()  # HiGHS' banner (first Highs of a process) would corrupt --json
        t0 = time.perf_counter()
        model, read, integrality = _model(problem)
        res = SolverFactory("highs").solve(
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
            x = read(model)
            if integrality is not None:
                x = np.where(integrality, np.round(x), x)
        obj = float(res.incumbent_objective) if res.incumbent_objective is not None else None
        bound = (
            float(res.objective_bound)
            if res.objective_bound is not None and np.isfinite(res.objective_bound)
            else None
        )
        return RawResult(status, x, obj, bound, time.perf_counter() - t0, str(tc))
