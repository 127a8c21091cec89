"""gavel-ftf in closed form on separable programs (solvers/waterfill.py) against the LP bisection,
and against its own optimality certificate (no t below it is achievable)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.core.errors import OptionError, ProgramInfeasible
from fairplace.formulations.gavel import GavelFTFProgram
from fairplace.solvers.relaxation import solve_gavel
from fairplace.solvers.waterfill import separable_configs


def _separable(seed: int, n: int, R: int, finished: float = 0.15) -> GavelFTFProgram:
    """n jobs, one configuration each (a shuffled identity), R resources, some jobs finished."""
    rng = np.random.default_rng(seed)
    thr = np.zeros((n, n))
    thr[np.arange(n), rng.permutation(n)] = rng.uniform(0.2, 3.0, n)
    usage = rng.integers(0, 5, (n, R)).astype(float)
    usage[usage.sum(1) == 0, 0] = 1.0
    cap = rng.integers(1, 3 * n + 2, R).astype(float)
    work = rng.uniform(0.1, 100.0, n) * (rng.random(n) > finished)
    elapsed = rng.uniform(0.0, 50.0, n) * (rng.random(n) > 0.3)
    t_id = rng.uniform(1.0, 80.0, n)
    return GavelFTFProgram(thr, usage, cap, work, elapsed, t_id)


def _achievable(prob: GavelFTFProgram, t: float, rel: float = 0.0) -> bool:
    """Whether max rho <= t is reachable: the smallest X for t fits every bound up to ``rel``
    (rounding: x_j(b_j) = 1 only up to an ulp) (separable only)."""
    cfg = separable_configs(prob)
    assert cfg is not None
    j = np.flatnonzero(cfg >= 0)
    slack = t * prob.t_id[j] - prob.elapsed[j]
    if np.any(slack <= 0) or t < prob.lower_bound():
        return False
    x = prob.work[j] / prob.throughput[j, cfg[j]] / slack
    fits = x @ prob.usage[cfg[j]] <= prob.capacity * (1 + rel)
    return bool(np.all(x <= 1.0 + rel) and np.all(fits))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 12), R=st.integers(1, 3))
def test_waterfill_is_optimal_feasible_and_agrees_with_the_bisection(seed, n, R):
    prob = _separable(seed, n, R)
    w = solve_gavel(prob)  # auto: separable -> closed form
    assert w.method == "waterfill" and w.solves == 0
    # feasible: time fractions, capacities
    assert np.all(w.X >= 0) and np.all(w.X.sum(1) <= 1.0)
    assert np.all(np.einsum("ik,kr->r", w.X, prob.usage) <= prob.capacity * (1 + 1e-12))
    # the X achieves the value it reports, and no t below it is achievable (the certificate)
    assert np.max(prob.rho(w.X), initial=0.0) <= w.max_rho * (1 + 1e-12)
    assert _achievable(prob, w.max_rho, rel=1e-12)
    assert not _achievable(prob, w.max_rho * (1 - 1e-9)) or w.max_rho == prob.lower_bound()
    # the LP bisection reaches the same optimum (its tolerance: 1e-10 relative)
    b = solve_gavel(prob, "bisection")
    assert w.max_rho == pytest.approx(b.max_rho, rel=1e-8)
    assert w.max_rho <= b.max_rho * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(1, 15))
def test_waterfill_uses_the_capacity_or_gives_every_job_all_its_time(seed, n):
    """One resource (the simulator's GPU pool): the water-filling X is work-conserving."""
    prob = _separable(seed, n, 1)
    w = solve_gavel(prob, "waterfill")
    need = prob.work > 0
    held = w.X.sum(1)
    used = float(np.einsum("ik,k->", w.X, prob.usage[:, 0]))
    assert np.all(held[~need] == 0)
    assert np.all(held[need] == 1.0) or used == pytest.approx(prob.capacity[0], rel=1e-9)


def test_waterfill_worked_examples():
    # two equal jobs on one GPU: x_j(t) = 1/t, 2/t <= 1 -> t* = 2, half the time each
    two = GavelFTFProgram(np.eye(2), [[1.0], [1.0]], [1.0], [1.0, 1.0], [0.0, 0.0], [1.0, 1.0])
    w = solve_gavel(two)
    assert w.max_rho == 2.0 and np.allclose(np.diag(w.X), 0.5)
    # room for both: each runs all the time (t* = max_j (e_j + a_j) / t_id_j = 3), capacity left
    roomy = GavelFTFProgram(np.eye(2), [[1.0], [1.0]], [3.0], [2.0, 1.0], [1.0, 0.0], [1.0, 1.0])
    w = solve_gavel(roomy)
    assert w.max_rho == 3.0 and np.all(np.diag(w.X) == 1.0)
    # the job at its box bound sets t*; the other is scaled up to use the capacity
    box = GavelFTFProgram(np.eye(2), [[1.0], [1.0]], [1.5], [4.0, 1.0], [0.0, 0.0], [1.0, 1.0])
    w = solve_gavel(box)
    assert w.max_rho == 4.0 and np.allclose(np.diag(w.X), [1.0, 0.5])


def test_waterfill_declines_what_is_not_separable():
    shared = GavelFTFProgram(
        [[1.0, 0.0], [1.0, 0.0]], [[1.0], [1.0]], [1.0], [1.0, 1.0], [0.0, 0.0], [1.0, 1.0]
    )
    two_configs = GavelFTFProgram([[1.0, 2.0]], [[1.0], [2.0]], [2.0], [1.0], [0.0], [1.0])
    for prob in (shared, two_configs):
        assert separable_configs(prob) is None
        with pytest.raises(OptionError, match="method.*separable"):
            solve_gavel(prob, "waterfill")
        assert solve_gavel(prob).method == "bisection"
    with pytest.raises(OptionError, match="method"):
        solve_gavel(shared, "newton")


def test_waterfill_with_no_capacity_for_a_job_is_infeasible():
    prob = GavelFTFProgram(
        np.eye(2), [[1.0, 0.0], [0.0, 1.0]], [1.0, 0.0], [1.0] * 2, [0.0] * 2, [1.0] * 2
    )
    with pytest.raises(ProgramInfeasible, match="capacity 0"):
        solve_gavel(prob)


def test_waterfill_with_every_job_finished():
    prob = GavelFTFProgram(np.eye(2), [[1.0], [1.0]], [1.0], [0.0, 0.0], [2.0, 6.0], [1.0, 2.0])
    w = solve_gavel(prob)
    assert w.max_rho == 3.0 and not w.X.any()
