"""Bounds (LP / Eisenberg-Gale relaxations) and the Gavel-style min-max-rho policy."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import brute_force_pf, tiny_auction
from hypothesis import given, settings
from hypothesis import strategies as st

import fairplace
from fairplace.core.errors import DataError, OptionError
from fairplace.formulations.gavel import GavelFTFProgram
from fairplace.formulations.pf import PFProgram
from fairplace.formulations.relaxation import PFRelaxation
from fairplace.instances.generators import random_auction
from fairplace.solvers.backends import highs
from fairplace.solvers.relaxation import auction_to_gavel, eg_bound, lp_bound, solve_gavel


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), apps=st.integers(1, 4), null=st.sampled_from([0.0, 0.5, 1.0]))
def test_relaxation_never_below_exact(seed, apps, null):
    inst = tiny_auction(seed, apps=apps, null_fraction=null)
    (served, log_sum), _ = brute_force_pf(inst)
    sol = fairplace.solve(inst, solver="relaxation")
    assert sol.status == "bound"
    assert sol.objective >= log_sum - 1e-7
    assert sol.extra["eg_bound"] >= sol.extra["lp_bound"] - 1e-6  # Jensen: EG is the looser one
    assert sol.extra["n_min"] <= served
    # with the exact n* the bound is valid too and no looser
    tight = fairplace.solve(inst, solver="relaxation", compute_exact=True)
    assert log_sum - 1e-7 <= tight.objective <= sol.objective + 1e-7
    assert tight.extra["integrality_gap"] == pytest.approx(tight.objective - log_sum, abs=1e-7)
    assert tight.extra["integrality_gap"] >= -1e-7


def test_lp_is_the_pf_milp_relaxation_without_unbounded_apps():
    inst = random_auction(apps=6, machines=4, gpus_per_machine=4, bids_per_app=8, seed=3)
    ref = highs.solve(PFProgram(inst).to_milp().relaxed())
    v, _ = lp_bound(PFRelaxation(inst))
    assert v == pytest.approx(ref.objective, abs=1e-8)
    e, x = eg_bound(PFRelaxation(inst))
    assert e >= v - 1e-6 and np.all(x >= -1e-7)


def test_relaxation_reports_integrality_gap_on_contended_instance():
    inst = random_auction(apps=6, machines=4, gpus_per_machine=4, bids_per_app=8, seed=0)
    exact = fairplace.solve(inst, payments=False)
    sol = fairplace.solve(inst, solver="relaxation", exact_objective=exact.objective)
    assert sol.extra["integrality_gap"] > 1e-3  # this instance has a fractional LP optimum
    assert sol.objective >= exact.objective
    with pytest.raises(OptionError):
        fairplace.solve(inst, solver="relaxation", method="nope")


def _random_gavel(seed: int, n: int = 4, K: int = 5, R: int = 3) -> GavelFTFProgram:
    rng = np.random.default_rng(seed)
    thr = rng.uniform(0.2, 3.0, (n, K)) * (rng.random((n, K)) < 0.7)
    thr[np.arange(n), rng.integers(0, K, n)] = rng.uniform(0.5, 2.0, n)  # every job has a config
    usage = rng.integers(0, 3, (K, R)).astype(float)
    usage[usage.sum(1) == 0, 0] = 1.0
    cap = rng.integers(1, 5, R).astype(float)
    work = rng.uniform(1.0, 10.0, n)
    elapsed = rng.uniform(0.0, 5.0, n)
    t_id = rng.uniform(2.0, 8.0, n)
    return GavelFTFProgram(thr, usage, cap, work, elapsed, t_id)


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_gavel_bisection_and_socp_agree(seed):
    prob = _random_gavel(seed)
    a = solve_gavel(prob, "bisection")
    b = solve_gavel(prob, "socp")
    assert a.max_rho == pytest.approx(b.max_rho, rel=1e-6, abs=1e-6)
    # the bisection point is feasible and achieves its value
    assert np.all(a.X.sum(1) <= 1 + 1e-7)
    assert np.all(a.X >= -1e-9)
    assert np.all(np.einsum("ik,kr->r", a.X, prob.usage) <= prob.capacity + 1e-7)
    assert np.max(prob.rho(a.X)) == pytest.approx(a.max_rho, rel=1e-9)
    assert a.max_rho >= prob.lower_bound()


def test_gavel_single_job_closed_form():
    # one job, one config of rate 2 on 1 of 1 GPU: rho = (e + W/2)/T
    prob = GavelFTFProgram([[2.0]], [[1.0]], [1.0], [10.0], [3.0], [4.0])
    for m in ("waterfill", "bisection", "socp"):
        assert solve_gavel(prob, m).max_rho == pytest.approx((3 + 5) / 4, rel=1e-7)


def test_gavel_bad_input_names_the_field():
    with pytest.raises(DataError, match="throughput"):
        GavelFTFProgram([[0.0]], [[1.0]], [1.0], [1.0], [0.0], [1.0])
    with pytest.raises(DataError, match="t_id"):
        GavelFTFProgram([[1.0]], [[1.0]], [1.0], [1.0], [0.0], [0.0])


@pytest.mark.parametrize("null", ["finite", "null"])
def test_gavel_ftf_solver_on_auctions(null):
    inst = random_auction(
        apps=5, machines=2, gpus_per_machine=4, bids_per_app=6, seed=1, rho_empty=null
    )
    a = fairplace.solve(inst, solver="gavel-ftf")
    b = fairplace.solve(inst, solver="gavel-ftf", method="socp")
    assert a.extra["max_rho"] == pytest.approx(b.extra["max_rho"], rel=1e-6)
    assert max(a.extra["rho"].values()) == pytest.approx(a.extra["max_rho"], rel=1e-8)
    used = [g for gs in a.allocation.values() for g in gs]
    assert len(used) == len(set(used))
    # the mapping: holding one bundle all the time gives exactly its reported rho
    g, configs, apps = auction_to_gavel(inst)
    X = np.zeros_like(g.throughput)
    k = next(k for k, (i, b) in enumerate(configs) if b is not None)
    X[apps.index(configs[k][0]), k] = 1.0
    i, b = configs[k]
    assert g.rho(X)[apps.index(i)] == pytest.approx(inst.apps[i].bids[b].rho)


def test_gavel_ftf_time_sharing_beats_integral_min_max():
    # two apps wanting the same single GPU: time sharing gives each rho = 2 (rates 1/2 each)
    d = {
        "kind": "auction",
        "gpus": [{"id": "g", "machine": "m"}],
        "apps": [{"id": a, "rho_empty": None, "bids": [{"gpus": ["g"], "rho": 1.0}]} for a in "AB"],
    }
    sol = fairplace.solve(d, solver="gavel-ftf")
    assert sol.extra["max_rho"] == pytest.approx(2.0, rel=1e-8)
    assert len(sol.allocation) == 1
