"""Exact joint placement: :class:`~fairplace.formulations.placement.PlacementProgram` on a back end."""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np

from fairplace.domain import PlacementInstance
from fairplace.formulations.placement import PlacementProgram, slowdowns
from fairplace.solution import Solution

from . import backends
from .options import SolveOptions


def solve_placement(
    inst: PlacementInstance,
    backend: str = "highs",
    opts: SolveOptions = SolveOptions(),
    scores: Mapping[str, np.ndarray] | None = None,
    name: str | None = None,
) -> Solution:
    """Place all jobs jointly, minimising the (weighted) sum of L*maxV; most jobs placed first."""
    t0 = time.perf_counter()
    prog = PlacementProgram(inst, scores=dict(scores or {}))
    res = backends.run(prog, backend, opts)
    label = name or ("exact" if backend == "highs" else backend)
    if not res.has_solution:
        return Solution(
            "placement", res.status, label, time.perf_counter() - t0, None, {}, message=res.message
        )
    alloc = prog.decode(res.x)
    S = slowdowns(inst, alloc, scores)
    n_placed = len(alloc)
    weighted = sum(j.weight * S[j.id] for j in inst.jobs if j.id in S)
    bound = None
    if (
        res.bound is not None
    ):  # program objective = weighted - big * placed; recover the slowdown bound
        bound = res.bound + prog.big * n_placed if res.status != "optimal" else weighted
    return Solution(
        kind="placement",
        status=res.status,
        solver=label,
        seconds=time.perf_counter() - t0,
        objective=float(sum(S.values())),
        bound=bound,
        allocation={k: list(v) for k, v in alloc.items()},
        slowdown=S,
        message=res.message,
        extra={
            "placed": n_placed,
            "unplaced": [j.id for j in inst.jobs if j.id not in alloc],
            "weighted_objective": weighted,
        },
    )
