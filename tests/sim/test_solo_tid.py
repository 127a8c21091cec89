"""The ``solo`` T_id: each app simulated alone on its 1/N_avg share,
n = max(1, round(R_C / N_avg)) GPUs (the first n of the run's cluster), by one reference executor
(THEMIS, default options, leases that never expire), so that an app alone on an empty cluster has
rho_solo = 1 under any scheduler that runs it as well as THEMIS alone."""

from __future__ import annotations

import numpy as np
import pytest

import fairplace
from fairplace.core.domain import Cluster
from fairplace.core.errors import OptionError
from fairplace.instances.workloads import themis_workload
from fairplace.sim import api, metrics
from fairplace.sim.config import RHO_VARIANT_NAMES, SimulationConfig
from fairplace.sim.isolated import SOLO_LEASE, solo_gpus, solo_workload

LONE = [(2, "paper", 5), (1, "paper", 6), (2, "paper", 11), (1, "small", 3), (2, "small", 4)]


@pytest.mark.parametrize(
    ("scheduler", "workload", "scale", "seed"),
    [(s, *case) for s in ("themis", "srtf") for case in LONE],
)
def test_a_lone_app_has_rho_solo_one(scheduler, workload, scale, seed):
    """The issue's probe (W2 seed 5: analytical rho 1.18; W1 seed 6: 1.61): alone, rho_solo is
    within 2% of 1 under THEMIS and under a queue baseline (SRTF + packed-sticky)."""
    trace = themis_workload(workload, n_apps=1, scale=scale, seed=seed)
    res = fairplace.simulate(trace, scheduler, "packed-sticky", rho_variant="solo", progress=False)
    s = res.summary
    assert s["rho_variant"] == "solo" and s["max_rho"] == s["max_rho_solo"]
    assert s["max_rho_solo"] == pytest.approx(1.0, abs=0.02)
    assert res.apps["solo_gpus"].tolist() == [s["gpus"]]  # N_avg = 1: the whole cluster


@pytest.mark.parametrize(("workload", "seed"), [(2, 11), (1, 7)])
def test_the_reference_executor_itself_has_rho_solo_exactly_one(workload, seed):
    """THEMIS without lease ends on the run's clock is the reference: a lone app's rho_solo is 1 up
    to rounding, per app and per job (the cases where THEMIS' 10-minute leases move jobs)."""
    trace = themis_workload(workload, n_apps=1, seed=seed)
    opts = {"scheduler_options": {"lease": SOLO_LEASE}, "round_length": 600.0}
    res = fairplace.simulate(trace, "themis", "packed-sticky", solo=True, progress=False, **opts)
    np.testing.assert_allclose(res.apps["rho_solo"], 1.0, rtol=1e-9)
    np.testing.assert_allclose(res.jobs["rho_solo"], 1.0, rtol=1e-9)


def test_the_analytical_variant_stays_the_default_and_by_name():
    trace = themis_workload(2, n_apps=1, seed=5)
    res = fairplace.simulate(trace, "themis", "packed-sticky", solo=True, progress=False)
    s = res.summary
    assert s["rho_variant"] == "themis" and s["max_rho"] == s["max_rho_themis"]
    assert s["max_rho_themis"] > 1.1  # the analytical T_id: perfect packing, no restarts
    assert s["max_rho_solo"] == pytest.approx(1.0, abs=0.02)
    assert "themis" in RHO_VARIANT_NAMES and "solo" in RHO_VARIANT_NAMES
    off = fairplace.simulate(trace, "themis", "packed-sticky", solo=False, progress=False)
    assert "rho_solo" not in off.apps and "max_rho_solo" not in off.summary


def test_on_by_default_for_themis_workloads_only():
    """THEMIS workloads (their ``attrs["solo"]``) report rho_solo without asking; other traces, and
    a Workload object, only when asked."""
    kw = {"trace_options": {"scale": "small", "n_apps": 3}, "progress": False}
    res = fairplace.simulate("themis-2", "srtf", "packed-sticky", **kw)
    assert "max_rho_solo" in res.summary and res.summary["rho_variant"] == "themis"
    assert "max_rho_solo" not in fairplace.simulate("workload-1", progress=False).summary
    w = api.plan("themis-2", "srtf", "packed-sticky", SimulationConfig(**kw)).workload
    alone = fairplace.simulate(w, "srtf", "packed-sticky", gpus=64, progress=False)
    assert "max_rho_solo" not in alone.summary


def test_solo_gpus_is_the_rounded_share_at_least_one():
    got = solo_gpus(np.array([1.0, 2.0, 3.0, 1.4, 300.0, 0.5]), 64)
    assert got.tolist() == [64, 32, 21, 46, 1, 64]


def test_a_job_wider_than_the_share_runs_elastic_with_the_same_work():
    trace = themis_workload(2, n_apps=2, scale="small", seed=1)
    w = api.plan(trace, "fifo", "packed-sticky", SimulationConfig()).workload
    a = int(w.app[np.argmax(w.demand)])
    n = int(w.demand.max()) // 2
    sub = solo_workload(w, a, n)
    mine = w.app == a
    assert sub.demand.max() == n and len(sub) == int(mine.sum())
    np.testing.assert_allclose(sub.demand * sub.t_iter, (w.demand * w.t_iter)[mine])
    np.testing.assert_array_equal(sub.iters, w.iters[mine])


def test_t_id_is_the_app_alone_on_the_first_n_gpus_under_themis():
    """Loaded run (SRTF, 6 apps on 16 GPUs): each app's T_id is the JCT of that app simulated by
    THEMIS (leases never expiring) alone on the first n GPUs of the run's cluster, n from its N_avg
    in the shared run."""
    trace = themis_workload(2, n_apps=6, scale="small", gpus_per_machine=4, seed=2)
    kw = {"gpus": 16, "progress": False, "seed": 2}
    res = fairplace.simulate(trace, "srtf", "packed-sticky", solo=True, **kw)
    apps = res.apps
    arr, fin = apps["arrival"].to_numpy(), apps["finish"].to_numpy()
    navg = metrics.window_n_avg(metrics.active_step(arr, fin), arr, fin)
    assert apps["solo_gpus"].tolist() == solo_gpus(navg, 16).tolist()
    assert (apps["solo_gpus"] < 16).any()  # contention: some app's share is below the cluster
    p = api.plan(trace, "srtf", "packed-sticky", SimulationConfig(**kw))
    if "decision_tick" in res.config:  # the run's decision clock (a Workload has no default)
        kw["decision_tick"] = res.config["decision_tick"]
    for a in (int(np.argmax(apps["rho_solo"])), int(np.argmin(apps["solo_gpus"]))):
        n = int(apps["solo_gpus"].iloc[a])
        sub = solo_workload(p.workload, a, n)
        alone = fairplace.simulate(
            sub,
            "themis",
            "packed-sticky",
            cluster=Cluster(p.cluster.gpus[:n]),
            scheduler_options={"lease": SOLO_LEASE},
            round_length=600.0,  # the driver's round: THEMIS' default lease, as the reference's
            **kw,
        )
        t_id = alone.apps["jct"].iloc[0]
        assert apps["rho_solo"].iloc[a] == pytest.approx(apps["jct"].iloc[a] / t_id, rel=1e-9)
    assert np.isfinite(apps["rho_solo"]).all() and (apps["rho_solo"] > 0).all()
    assert res.summary["max_rho_solo"] == apps["rho_solo"].max()


def test_solo_and_recycled_jobs_do_not_go_together():
    with pytest.raises(OptionError, match="recycle_jobs_per_hour"):
        fairplace.simulate("workload-1", recycle_jobs_per_hour=2.0, rho_variant="solo")
    with pytest.raises(OptionError, match="solo"):
        SimulationConfig(solo="yes")
