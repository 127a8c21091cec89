"""Exact joint placement: :class:`~fairplace.formulations.placement.PlacementProgram` on a back end.

Time limits (``solvers/budget.py``): the budget covers PAL's warm start and the MILP. The result is
always a feasible placement, the best (most jobs placed, then lowest weighted slowdown sum) of the
MILP's incumbent, PAL's placement (the ``pal`` policy with backfill on the same scores, also the MILP's
warm start) and placing nothing.

Bound. The program minimises  weighted - big * placed, so its dual bound mixes the two levels. It is
stated in slowdown units only when it proves that no placement places more jobs than the one
returned (``formulations.program.lexicographic_bound``); then ``extra['weighted_bound']`` bounds the
weighted slowdown sum, and ``bound`` (the same number) bounds ``objective`` when every job weighs 1
(``objective`` is the unweighted sum). Otherwise ``bound`` is None and ``extra['placed_bound']``
still bounds how many jobs can be placed. ``gap`` = (objective - bound) / objective (0 when nothing
is placed).

The package: this module (the exact program), ``policies`` (PAL's policies, ``make_policy``),
``policy_round`` (``PolicyBase``: one round), ``free_pool`` (``FreePool``), ``pool_index`` (its
incremental index), ``cache`` (``PlacementCache``: what rounds on one cluster share, kept by the
caller), ``round_kernel`` (the compiled round, ``_round_kernel.c``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np

from fairplace.core.domain import PlacementInstance
from fairplace.core.solution import Solution
from fairplace.formulations.placement import PlacementProgram, slowdowns
from fairplace.formulations.program import RawResult, lexicographic_bound

from .. import backends
from ..budget import Budget, budget_for
from ..options import SolveOptions
from .policies import ClusterState, make_policy


def pal_placement(prog: PlacementProgram) -> dict[str, tuple[str, ...]]:
    """PAL's placement of all jobs of ``prog`` (backfill on: it places as many as it can) on the
    program's scores."""

    inst = prog.instance
    classes = dict.fromkeys([*inst.cluster.classes, *(j.cls for j in inst.jobs if j.cls)])
    scores = {c: prog.score(c) for c in classes}
    policy = make_policy(
        "pal",
        locality_penalty=inst.locality_penalty,
        locality_by_model=inst.locality_by_model,
        backfill=True,
    )
    decision = policy.place(ClusterState(inst.cluster, scores, {}), inst.jobs)
    return {j: tuple(inst.cluster.ids(g)) for j, g in decision.allocation.items()}


def _key(inst: PlacementInstance, alloc, scores) -> tuple[int, float]:
    """Lexicographic cost of a placement (lower is better): (-placed, weighted slowdown sum)."""
    S = slowdowns(inst, alloc, scores)
    return -len(alloc), sum(j.weight * S[j.id] for j in inst.jobs if j.id in S)


def solve_placement(
    inst: PlacementInstance,
    backend: str | backends.Backend = "highs",
    opts: SolveOptions = SolveOptions(),
    scores: Mapping[str, np.ndarray] | None = None,
    name: str | None = None,
    budget: Budget | None = None,
    warm_start: bool = True,
) -> Solution:
    """Place all jobs jointly, minimising the (weighted) sum of L*maxV; most jobs placed first.
    ``warm_start``: PAL's placement as the fallback, and the MILP's first incumbent on a back end
    that takes a warm start (module docstring). ``backend``: a name or a
    :class:`~fairplace.solvers.backends.Backend`."""
    t0 = time.perf_counter()
    budget = budget_for(opts, budget)
    be = backends.get_backend(backend)
    label = name or ("exact" if be.name == "highs" else be.name)
    prog = PlacementProgram(inst, scores=dict(scores or {}))
    scores = prog.scores or None
    milp = prog.to_milp()
    pal = pal_placement(prog) if warm_start else {}
    start = prog.start_vector(pal) if pal else None
    if start is not None and not milp.is_feasible(start):
        pal, start = {}, None  # cannot happen for a valid PAL placement; never start from junk
    o = budget.options(opts)
    if o is None:
        res = RawResult("time_limit", None, None, None, 0.0, "time limit reached before the MILP")
    else:  # the matrix form (PlacementProgram.to_pyomo / to_cvxpy are built from it too)
        res = backends.run(milp, be, o, start=start if be.capabilities.warm_start else None)
    status, alloc, source = _choose(inst, prog, pal, res, scores)
    S = slowdowns(inst, alloc, scores)
    n_placed = len(alloc)
    weighted = sum(j.weight * S[j.id] for j in inst.jobs if j.id in S)
    objective = float(sum(S.values()))
    weighted_bound, placed_bound, bound, gap = _bounds(
        inst, prog, res, status, weighted, n_placed, objective
    )
    return Solution(
        kind="placement",
        status=status,
        solver=label,
        seconds=time.perf_counter() - t0,
        objective=objective,
        bound=bound,
        gap=gap,
        allocation={k: list(v) for k, v in alloc.items()},
        slowdown=S,
        message=res.message
        if status != "error" or res.status == "error"
        else "the MILP's optimum is worse than a fallback placement",
        extra={
            "placed": n_placed,
            "unplaced": [j.id for j in inst.jobs if j.id not in alloc],
            "weighted_objective": weighted,
            "weighted_bound": weighted_bound,
            "placed_bound": placed_bound,
            "milp_status": res.status,
            "incumbent": source,
        },
    )


def _choose(inst, prog, pal, res, scores) -> tuple[str, dict, str]:
    """(status, allocation, its source): the best of nothing, PAL's placement and the MILP's
    point; on a tie the MILP's (it is the one the status and bound speak for). An "optimal" MILP
    point beaten by more than the tolerance is an ``error``."""
    candidates: list[tuple[dict, str]] = [({}, "empty")]
    if pal:
        candidates.append((pal, "pal"))
    if res.x is not None:
        candidates.append((prog.decode(res.x), "milp"))
    # best first; on a tie the MILP's point (it is the one the status and bound speak for)
    order = {"milp": 0, "pal": 1, "empty": 2}
    ranked = sorted(candidates, key=lambda c: (*_key(inst, c[0], scores), order[c[1]]))
    status = res.status
    if status == "optimal":  # a fallback beating the optimum by more than the tolerance: a bug
        alloc, source = candidates[-1]
        (n0, w0), (n1, w1) = _key(inst, ranked[0][0], scores), _key(inst, alloc, scores)
        if n0 < n1 or w0 < w1 - 1e-6 * max(1.0, abs(w1)):
            status, alloc, source = "error", *ranked[0]
    else:
        alloc, source = ranked[0]
    return status, alloc, source


def _bounds(inst, prog, res, status, weighted, n_placed, objective):
    """(bound on the weighted slowdown sum, on the jobs placed, on ``objective`` (unit weights
    only), the relative gap)."""
    weighted_bound, placed_bound = None, None
    if status == "optimal":
        weighted_bound, placed_bound = weighted, n_placed
    elif res.bound is not None:
        neg, placed_bound = lexicographic_bound(-res.bound, prog.big, n_placed, prog.worst)
        weighted_bound = None if neg is None else max(0.0, -neg)
    unit = all(j.weight == 1.0 for j in inst.jobs)
    bound = weighted_bound if unit else None
    gap = None
    if bound is not None:
        gap = max(0.0, (objective - bound) / objective) if objective > 0 else 0.0
    return weighted_bound, placed_bound, bound, gap
