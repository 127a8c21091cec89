"""THEMIS in the driver: leases, event-driven auctions, app-level successive halving; max rho vs LAS and
gavel-ftf on a contended THEMIS Workload 2 instance (THEMIS §6.2: 2.2-3.25x better max rho)."""

from __future__ import annotations

import numpy as np
import pytest

from fairplace.core.errors import OptionError
from fairplace.instances.workloads import themis_workload
from fairplace.sim import simulate


@pytest.fixture(scope="module")
def w2():
    # 8 hyper-parameter apps of the small variant, contention x2: a 64-GPU workload on 32 GPUs
    return themis_workload(2, scale="small", n_apps=8, base_gpus=64, contention=2, seed=0)


@pytest.fixture(scope="module")
def runs(w2):
    # each scheduler on its own clock (THEMIS at events, the baselines on a 300-s grid, no baseline
    # lease), as before the one decision clock; on the one clock (THEMIS workloads' default: 60-s
    # tick, 10-minute baseline lease) max rho here is THEMIS 3.19, LAS 3.46, gavel-ftf 2.54
    old = {"decision_tick": 0, "baseline_lease": 0}
    return {
        s: simulate(w2, s, "packed-sticky", progress=False, debug=(s == "themis"), **old)
        for s in ("themis", "las", "gavel-ftf")
    }


@pytest.mark.slow
def test_themis_max_rho_below_las_and_gavel_ftf(runs):
    th = runs["themis"].summary["max_rho"]
    assert th < runs["las"].summary["max_rho"]
    assert th < runs["gavel-ftf"].summary["max_rho"]


@pytest.mark.slow
def test_themis_run_respects_leases_phases_and_invariants(runs, w2):
    res = runs["themis"]
    jobs = res.jobs
    assert res.config["round_length"] == 600.0  # the round is the lease
    assert jobs["finish"].notna().all()
    # successive halving: phase p+1 of an app starts only after its phase p finished
    for _, g in jobs.groupby("app_id"):
        for p in range(int(g["phase"].max())):
            assert (
                g[g["phase"] == p + 1]["arrival"].min() >= g[g["phase"] == p]["finish"].max() - 1e-6
            )
    t = res.rounds["t"].to_numpy()
    assert np.all(np.diff(t) > 0)
    assert res.rounds["busy"].max() <= 32
    # decisions on the lease grid and at events (completions / arrivals) in between
    off_grid = ~np.isclose(((t - t[0]) / 600.0) % 1.0, 0.0) & ~np.isclose(
        (t - t[0]) / 600 % 1.0, 1.0
    )
    assert off_grid.any()
    assert (jobs["gpu_time"] <= jobs["run_time"] * jobs["gpus"] + 1e-6).all()  # elastic: k <= N_j


def test_pm_score_pricing_option_and_bad_options():
    tiny = themis_workload(
        2, scale="small", n_apps=2, base_gpus=8, jobs_range=(2, 2), task_gpu_hours=0.2, seed=1
    )
    res = simulate(
        tiny, "themis", "pal", progress=False, scheduler_options={"pricing": "pm-score", "f": 0.5}
    )
    assert res.jobs["finish"].notna().all() and res.config["placed_by"] == "arbiter"
    with pytest.raises(OptionError, match="pricing"):
        simulate(tiny, "themis", "pal", progress=False, scheduler_options={"pricing": "x"})
    with pytest.raises(OptionError, match="f"):
        simulate(tiny, "themis", "pal", progress=False, scheduler_options={"f": 1.5})
