"""PAL against the exact joint placement; the policies as `fairplace solve` solvers; the gap report."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairplace
from fairplace.analysis.placement_gap import placement_gap, summarize_gap
from fairplace.core.domain import Job, PlacementInstance
from fairplace.instances import io
from fairplace.instances.generators import grid_cluster, random_placement
from fairplace.solvers.placement.policies import POLICY_NAMES


@st.composite
def small_instances(draw, max_jobs=1):
    machines = draw(st.integers(1, 3))
    gpm = draw(st.integers(1, 4))
    G = machines * gpm
    pm = {
        c: np.array(
            draw(st.lists(st.sampled_from([0.9, 0.95, 1.0, 1.1, 1.6, 2.5]), min_size=G, max_size=G))
        )
        for c in ("A", "B")
    }
    cl = grid_cluster(machines, gpm, pm=pm)
    n = draw(st.integers(1, max_jobs))
    jobs = tuple(
        Job(f"j{k}", draw(st.integers(1, G)), draw(st.sampled_from(["A", "B"]))) for k in range(n)
    )
    L = draw(st.sampled_from([1.0, 1.2, 1.5, 1.7, 3.0]))
    return PlacementInstance(cl, jobs, locality_penalty=L)


@settings(max_examples=80, deadline=None)
@given(inst=small_instances())
def test_single_job_pal_equals_exact_optimum(inst):
    exact = fairplace.solve(inst, solver="exact")
    pal = fairplace.solve(inst, solver="pal")
    assert exact.status == "optimal" and pal.status == "heuristic"
    job = inst.jobs[0].id
    assert pal.slowdown[job] == pytest.approx(exact.slowdown[job], abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(inst=small_instances(max_jobs=4))
def test_pal_never_beats_the_joint_optimum(inst):
    pal = fairplace.solve(inst, solver="pal", backfill=True)
    exact = fairplace.solve(inst, solver="exact")
    assert exact.extra["placed"] >= pal.extra["placed"]
    if pal.extra["placed"] == len(inst.jobs):
        assert exact.extra["placed"] == len(inst.jobs)
        assert exact.objective <= pal.objective + 1e-9


def test_gap_report_over_a_suite():
    results = []
    for seed in range(6):
        inst = random_placement(jobs=6, machines=4, gpus_per_machine=4, seed=seed, max_demand=4)
        results.append(
            (inst.name, fairplace.solve(inst, solver="pal", backfill=True), fairplace.solve(inst))
        )
    table = placement_gap(results)
    assert len(table) == 6 and (table["heuristic"] == "pal").all()
    ok = table[table["comparable"]]
    assert len(ok) >= 1 and (ok["gap"] >= -1e-9).all()
    summary = summarize_gap(table)
    assert summary["instances"] == 6 and summary["max_gap"] >= summary["mean_gap"] >= 0


@pytest.mark.parametrize("solver", POLICY_NAMES)
def test_policies_as_solvers(solver):
    inst = random_placement(jobs=5, machines=4, gpus_per_machine=4, seed=2, max_demand=4)
    sol = fairplace.solve(inst, solver=solver, seed=1)
    assert sol.status == "heuristic" and sol.solver == solver
    assert sol.objective == pytest.approx(sum(sol.slowdown.values()))
    placed = set(sol.allocation)
    assert sorted(placed | set(sol.extra["unplaced"])) == sorted(j.id for j in inst.jobs)
    ids = [g for gs in sol.allocation.values() for g in gs]
    assert len(ids) == len(set(ids))


def test_binned_solve_reports_raw_objective_too():
    inst = random_placement(
        jobs=4, machines=4, gpus_per_machine=4, seed=3, levels=None, max_demand=4
    )
    sol = fairplace.solve(inst, solver="pal", bin=True, seed=1, backfill=True)
    assert sol.extra["binned"] and sol.extra["objective_raw_scores"] > 0
    # the exact program accepts the same options and decides on the same binned scores
    exact = fairplace.solve(inst, solver="exact", bin=True, seed=1, backfill=True)
    assert exact.status == "optimal" and exact.extra["placed"] >= sol.extra["placed"]
    if exact.extra["placed"] == sol.extra["placed"]:
        assert exact.objective <= sol.objective + 1e-9


def test_binning_is_timed_apart_and_counted_in_seconds(monkeypatch):
    # a fake clock: binning "takes" 5 s, everything else 0 s; ``binning_seconds`` reports it apart
    # and ``seconds`` counts everything the solve does after loading (one honest budget)
    from fairplace.solvers.placement import policies

    clock = [0.0]
    real = policies.instance_scores

    def slow_binning(*a, **k):
        clock[0] += 5.0
        return real(*a, **k)

    monkeypatch.setattr(policies, "instance_scores", slow_binning)
    monkeypatch.setattr(policies.time, "perf_counter", lambda: clock[0])
    inst = random_placement(jobs=4, machines=2, gpus_per_machine=4, seed=0, max_demand=4)
    sol = fairplace.solve(inst, solver="pal", bin=True, seed=1)
    assert sol.extra["binning_seconds"] == 5.0 and sol.seconds == 5.0


@pytest.mark.slow
def test_cli_solve_with_policy(tmp_path):
    inst = random_placement(jobs=4, machines=2, gpus_per_machine=4, seed=0, max_demand=4)
    path = tmp_path / "p.json"
    io.save(inst, path)
    out = subprocess.run(
        [sys.executable, "-m", "fairplace.cli", "solve", str(path), "--solver", "pal", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["solver"] == "pal" and doc["status"] == "heuristic"
    assert set(doc) >= {"allocation", "objective", "slowdown", "seconds"}
    bad = subprocess.run(
        [sys.executable, "-m", "fairplace.cli", "solve", str(path), "--solver", "pal-x"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
