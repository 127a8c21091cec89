"""Joint placement IP against brute force, across back ends."""

from __future__ import annotations

import pytest
from conftest import brute_force_placement, tiny_placement
from hypothesis import given, settings
from hypothesis import strategies as st

import fairplace
from fairplace.instances.generators import random_placement


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    jobs=st.integers(1, 4),
    penalty=st.sampled_from([1.0, 1.3, 1.7, 3.0]),
)
def test_joint_placement_matches_brute_force(seed, jobs, penalty):
    inst = tiny_placement(seed, jobs=jobs, machines=2, gpm=2, penalty=penalty)
    sol = fairplace.solve(inst)
    assert sol.status == "optimal"
    placed, cost = brute_force_placement(inst)
    assert sol.extra["placed"] == placed
    assert sol.extra["weighted_objective"] == pytest.approx(cost, abs=1e-9)
    used = [g for gs in sol.allocation.values() for g in gs]
    assert len(used) == len(set(used))
    for job in inst.jobs:
        if job.id in sol.allocation:
            assert len(sol.allocation[job.id]) == job.gpus


@pytest.mark.parametrize("seed", [0, 1])
def test_placement_backends_agree(seed):
    inst = random_placement(jobs=8, machines=4, gpus_per_machine=4, seed=seed)
    objs = {
        s: fairplace.solve(inst, solver=s).extra["weighted_objective"]
        for s in ("exact", "pyomo", "cvxpy")
    }
    objs["presolve-off"] = fairplace.solve(inst, presolve=False).extra["weighted_objective"]
    assert max(objs.values()) - min(objs.values()) < 1e-7, objs


def test_overfull_round_places_most_jobs_first():
    """Two 4-GPU jobs and a 1-GPU job on 8 GPUs ... plus a 4-GPU job that cannot fit: 3 jobs placed."""
    doc = {
        "kind": "placement",
        "locality_penalty": 1.7,
        "gpus": [
            {"id": f"m{m}/{g}", "machine": f"m{m}", "pm": {"A": 1.0 + 0.1 * g}}
            for m in range(2)
            for g in range(4)
        ],
        "jobs": [
            {"id": "big1", "gpus": 4, "class": "A"},
            {"id": "big2", "gpus": 4, "class": "A"},
            {"id": "small1", "gpus": 1, "class": "A"},
            {"id": "small2", "gpus": 1, "class": "A"},
        ],
    }
    sol = fairplace.solve(doc)
    assert sol.extra["placed"] == 3
    assert len(sol.extra["unplaced"]) == 1


def test_locality_vs_variability_tradeoff():
    """A 2-GPU job: packing on a slow machine (V=1.2) beats spreading over fast GPUs (1.0 * L=1.5)."""
    doc = {
        "kind": "placement",
        "locality_penalty": 1.5,
        "gpus": [
            {"id": "a0", "machine": "a", "pm": {"A": 1.0}},
            {"id": "a1", "machine": "a", "pm": {"A": 1.2}},
            {"id": "b0", "machine": "b", "pm": {"A": 1.0}},
            {"id": "b1", "machine": "b", "pm": {"A": 1.2}},
        ],
        "jobs": [{"id": "j", "gpus": 2, "class": "A"}],
    }
    sol = fairplace.solve(doc)
    assert sol.slowdown["j"] == pytest.approx(1.2)
    doc["locality_penalty"] = 1.1
    sol = fairplace.solve(doc)
    assert sol.slowdown["j"] == pytest.approx(1.1)
    assert sorted(sol.allocation["j"]) == ["a0", "b0"]
