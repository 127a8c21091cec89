"""The worker side of a batch: solve one (instance, solver) task or a chunk of them, never raising;
and :func:`warm`, the one-time imports done before any task is timed.

Local clusters start their workers with this module as a Dask *preload* (``dask_setup`` runs
:func:`warm` while the worker starts, in parallel on every worker), and an in-process batch calls
:func:`warm` before its first task, so neither a row's ``seconds`` (the solver's own clock) nor its
``wall_seconds`` (the whole task) includes importing the solver stack (~0.5-1 s once per process).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from fairplace.core.errors import UnknownSolver

#: solvers whose modelling layer (Pyomo, CVXPY: seconds to import) :func:`warm` imports on request
_BACKENDS = ("pyomo", "cvxpy")


def warm(solvers: Sequence[str] = ()) -> None:
    """Import the solver stack (fairplace, HiGHS, the auction / placement / compact solvers, the
    policies and heuristics) and the modelling layer of any Pyomo / CVXPY solver in ``solvers``."""
    import highspy  # noqa: F401

    import fairplace  # noqa: F401
    from fairplace.instances import suites  # noqa: F401
    from fairplace.solvers import auction, compact, heuristics, placement, policies  # noqa: F401
    from fairplace.solvers.backends import preload
    from fairplace.solvers.registry import solver_table

    solver_table()  # imports the relaxation module too
    for s in solvers:
        if s in _BACKENDS:
            preload(s)


def dask_setup(worker=None) -> None:
    """Dask preload hook: warm the HiGHS solver stack while the worker starts."""
    warm()


def _finite(v):
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


def solve_task(instance: str, solver: str, payload, time_limit: float | None = None) -> dict:
    """Solve one (instance, solver) pair on a worker with HiGHS ``threads=1``; never raises."""
    import fairplace
    from fairplace.instances import suites

    t0 = time.perf_counter()
    row: dict = {"instance": instance, "solver": solver}
    try:
        inst = suites.load_item(payload)
        row |= suites.summary(inst)
        row["optimum"] = suites.stored_optimum(inst)
    except Exception as exc:  # noqa: BLE001 - a bad instance is a row, not a crash
        return row | {"status": "error", "message": f"{type(exc).__name__}: {exc}"}
    try:
        sol = fairplace.solve(inst, solver, time_limit=time_limit, threads=1, parallel=False)
    except UnknownSolver as exc:
        row |= {"status": "skipped", "message": str(exc)}
    except Exception as exc:  # noqa: BLE001
        row |= {"status": "error", "message": f"{type(exc).__name__}: {exc}"}
    else:
        row |= {
            "status": sol.status,
            "objective": _finite(sol.objective),
            "bound": _finite(sol.bound),
            "seconds": sol.seconds,
            "message": sol.message or "",
        }
        row |= _primary(inst, sol)
    row["wall_seconds"] = time.perf_counter() - t0
    return row


def solve_chunk(tasks: Sequence[tuple], time_limit: float | None = None) -> list[dict]:
    """The rows of (instance, solver, payload) tasks solved one after the other (one Dask task)."""
    return [solve_task(n, s, p, time_limit) for n, s, p in tasks]


def _primary(inst, sol) -> dict:
    """The first, lexicographic part of the objective: unbounded apps left without GPUs (auctions) or
    jobs placed (placements), for the row and for the stored optimum."""
    opt = dict((inst.meta or {}).get("optimum") or {})
    if inst.kind == "auction":
        n_null = sum(a.rho_empty is None for a in inst.apps)
        out = {"unserved_unbounded": len(sol.extra.get("unserved_unbounded", []))}
        if "n_unbounded_served" in opt:
            out["optimum_unserved_unbounded"] = n_null - int(opt["n_unbounded_served"])
        return out
    out = {"placed": len(sol.allocation)}
    if "placed" in opt:
        out["optimum_placed"] = int(opt["placed"])
    return out
