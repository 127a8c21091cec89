"""Bounds, heuristics and the Gavel-style FTF policy. No speed targets: the
numbers are the seconds and the quality (integrality gap, heuristic gap) on contended instances.
``--quick`` runs seed 0 only (full: seeds 0-2), at the same sizes."""

from __future__ import annotations

import time

import numpy as np

from fairplace.formulations.gavel import GavelFTFProgram
from fairplace.instances.generators import random_auction
from fairplace.solvers.auction import solve_pf
from fairplace.solvers.heuristics import solve_heuristic
from fairplace.solvers.relaxation import solve_gavel, solve_relaxation

from . import Case, cases

SIZES = {"apps": 16, "gpus": 64}


def _instance(seed: int, contention: float | None = None):
    return random_auction(
        apps=16, machines=16, gpus_per_machine=4, bids_per_app=20, seed=seed, contention=contention
    )


def _exact(inst) -> float:
    res, choice, prog = solve_pf(inst)
    return prog.value(choice).log_sum


def relaxation(quick: bool, contention: float | None = None) -> dict:
    """LP and EG bounds and their integrality gaps on 16 apps x 64 GPUs x 20 bids."""
    seeds = (0,) if quick else (0, 1, 2)
    secs, lp_gaps, eg_gaps = [], [], []
    for s in seeds:
        inst = _instance(s, contention)
        exact = _exact(inst)
        t0 = time.perf_counter()
        sol = solve_relaxation(inst, method="both")
        secs.append(time.perf_counter() - t0)
        lp_gaps.append(sol.extra["lp_bound"] - exact)
        eg_gaps.append(sol.extra["eg_bound"] - exact)
    return {
        "seconds": max(secs),
        "sizes": {"apps": len(inst.apps), "gpus": len(inst.cluster)},
        "lp_gap": lp_gaps,
        "eg_gap": eg_gaps,
        "seeds": list(seeds),
    }


def heuristics(quick: bool, contention: float | None = None) -> dict:
    """greedy-rho / greedy-log / lp-round: worst seconds and gap to the exact log-sum."""
    seeds = (0,) if quick else (0, 1, 2)
    out: dict = {"seconds": 0.0, "seeds": list(seeds)}
    for name in ("greedy-rho", "greedy-log", "lp-round"):
        gaps, secs = [], []
        for s in seeds:
            inst = _instance(s, contention)
            out["sizes"] = {"apps": len(inst.apps), "gpus": len(inst.cluster)}
            sol = solve_heuristic(inst, name=name, exact_objective=_exact(inst))
            gaps.append(sol.gap)
            secs.append(sol.seconds)
        out[f"{name}_gap"] = gaps
        out[f"{name}_seconds"] = max(secs)
        out["seconds"] = max(out["seconds"], max(secs))
    return out


def _gavel_problem(n: int, seed: int = 0) -> GavelFTFProgram:
    rng = np.random.default_rng(seed)
    K, R = 3 * n, 4
    thr = rng.uniform(0.2, 3.0, (n, K)) * (rng.random((n, K)) < 0.1)
    thr[np.arange(n), rng.integers(0, K, n)] = rng.uniform(0.5, 2.0, n)
    usage = rng.integers(0, 3, (K, R)).astype(float)
    usage[usage.sum(1) == 0, 0] = 1.0
    return GavelFTFProgram(
        thr,
        usage,
        np.full(R, n / 2.0),
        rng.uniform(1, 10, n),
        rng.uniform(0, 5, n),
        rng.uniform(2, 8, n),
    )


def gavel(quick: bool) -> dict:
    """min max rho by bisection (HiGHS LPs) and SOCP (Clarabel) on 64 jobs x 192 configs x 4 types."""
    n = 64
    prob = _gavel_problem(n)
    a = solve_gavel(prob, "bisection")
    b = solve_gavel(prob, "socp")
    return {
        "seconds": a.seconds + b.seconds,
        "sizes": {"jobs": n},
        "bisection_seconds": a.seconds,
        "bisection_lps": a.solves,
        "socp_seconds": b.seconds,
        "max_rho": a.max_rho,
        "abs_diff": abs(a.max_rho - b.max_rho),
    }


CASES = cases(
    __name__,
    {
        "bounds_relaxation_16x64": Case(relaxation, None, SIZES),
        "bounds_relaxation_16x64_contended": Case(lambda q: relaxation(q, 2.0), None, SIZES),
        "bounds_heuristics_16x64": Case(heuristics, None, SIZES),
        "bounds_heuristics_16x64_contended": Case(lambda q: heuristics(q, 2.0), None, SIZES),
        "bounds_gavel_ftf_64": Case(gavel, None, {"jobs": 64}),
    },
)
