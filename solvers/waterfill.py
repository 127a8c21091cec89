"""Gavel's min max rho in closed form for a *separable* program (solver route ``waterfill``).

A :class:`~fairplace.formulations.gavel.GavelFTFProgram` is separable when every job with work left
has exactly one configuration of positive throughput and no two such jobs share one (the simulator's
gavel-ftf: one gang configuration per job on a pool of GPUs). With a_j = work_j / throughput_j (the
job's time at X_j = 1), the smallest time fraction that meets rho_j <= t is

    x_j(t) = a_j / (t * t_id_j - elapsed_j)                          (decreasing in t)

so t is achievable iff x_j(t) <= 1 for every j, i.e. t >= b_j = (elapsed_j + a_j) / t_id_j, and
F_r(t) = sum_j usage_jr x_j(t) <= capacity_r for every resource r. Hence

    t* = max( max_j b_j,  max_r root of F_r(t) = capacity_r,  max_i elapsed_i / t_id_i )

where each root is found by Brent's method to the last bits of a float (then nudged up by ulps until
F_r(t*) <= capacity_r). The optimal X is not unique; this route picks the water-filling one,
X_j = min(1, mu * x_j(t*)) with the largest common mu >= 1 that keeps every resource within capacity
(so with one resource either every job holds X_j = 1 or the capacity is used up): unique, and
independent of an LP solver's choice of vertex.
"""

from __future__ import annotations

import numpy as np

from fairplace.core.errors import ProgramInfeasible
from fairplace.formulations.gavel import GavelFTFProgram


def separable_configs(prob: GavelFTFProgram) -> np.ndarray | None:
    """The configuration of each job (-1 for a job with no work left), or None when the program is
    not separable (a job with work left has several configurations, or two share one)."""
    need = prob.work > 0
    pos = prob.throughput > 0
    if np.any(pos[need].sum(axis=1) != 1):
        return None
    cfg = np.where(need, np.argmax(pos, axis=1), -1)
    used = cfg[need]
    if np.unique(used).size != used.size:
        return None
    return cfg


def _root(f, lo: float, cap: float) -> float:
    """Smallest t >= lo with f(t) <= cap, for f decreasing towards 0 (cap > 0)."""
    if f(lo) <= cap:
        return lo
    # heavy: imported on use. SciPy >= 1.15 bundles a HiGHS binding of its own
    # (scipy.optimize._highspy); imported with the solver stack, before highspy, it made a Ctrl-C
    # mid-batch hang ~100 s in a Pyomo solve's output capture (tests/runs/test_batch_safety.py)
    from scipy.optimize import brentq

    hi = 2.0 * lo
    while f(hi) > cap:
        hi *= 2.0
    t = float(
        brentq(
            lambda s: f(s) - cap, lo, hi, xtol=np.finfo(float).tiny, rtol=4 * np.finfo(float).eps
        )
    )
    while f(t) > cap:  # Brent's point may sit a few ulps on the infeasible side
        t = float(np.nextafter(t, np.inf))
    return t


def _common_scale(x: np.ndarray, u: np.ndarray, cap: float) -> float:
    """Largest mu with sum_j u_j min(1, mu x_j) <= cap (x > 0, u >= 0); inf when X = 1 fits."""
    keep = u > 0
    x, u = x[keep], u[keep]
    if u.sum() <= cap:
        return np.inf
    order = np.argsort(1.0 / x, kind="stable")
    beta = 1.0 / x[order]  # the mu at which job j saturates
    u, x = u[order], x[order]
    sat = np.concatenate([[0.0], np.cumsum(u)])  # u of the jobs saturated before breakpoint k
    lin = np.concatenate([np.cumsum((u * x)[::-1])[::-1], [0.0]])  # u x of those not yet saturated
    g = sat[:-1] + beta * lin[:-1]  # g(beta_k): jobs 0..k-1 saturated, k.. linear
    k = int(np.argmax(g > cap))  # first breakpoint past the capacity (exists: g(inf) > cap)
    return float((cap - sat[k]) / lin[k])


def waterfill(prob: GavelFTFProgram, cfg: np.ndarray) -> tuple[np.ndarray, float]:
    """(X, t*) for a separable program (``cfg`` from :func:`separable_configs`); see the module doc."""
    need = cfg >= 0
    X = np.zeros_like(prob.throughput)
    lb = prob.lower_bound()
    if not np.any(need):
        return X, lb
    j = np.flatnonzero(need)
    k = cfg[need]
    a = prob.work[j] / prob.throughput[j, k]
    e, tid = prob.elapsed[j], prob.t_id[j]
    u = prob.usage[k]  # (jobs, R)
    t = max(lb, float(np.max((e + a) / tid)))
    for r in range(u.shape[1]):
        if not np.any(u[:, r] > 0):
            continue
        cap = float(prob.capacity[r])
        if cap <= 0:
            raise ProgramInfeasible(
                f"gavel-ftf: resource {r} has capacity 0 but a job with work left needs it"
            )
        t = _root(lambda s, ur=u[:, r]: float(np.sum(ur * a / (s * tid - e))), t, cap)
    x = a / (t * tid - e)
    mu = min(
        (_common_scale(x, u[:, r], float(prob.capacity[r])) for r in range(u.shape[1])),
        default=np.inf,
    )
    X[j, k] = np.minimum(1.0, max(mu, 1.0) * x)
    return X, t
