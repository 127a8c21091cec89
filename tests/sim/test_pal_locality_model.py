"""One locality model per run: PAL decides with the L a job runs with."""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd
import pytest

import fairplace
from fairplace.core.domain import Job
from fairplace.instances.generators import grid_cluster
from fairplace.instances.models import measured_locality
from fairplace.instances.traces import load_trace
from fairplace.sim import Driver, DriverConfig, workload_from_trace
from fairplace.sim.schedulers import make_scheduler
from fairplace.sim.setups import setup_options
from fairplace.solvers.placement.job_queue import JobTable
from fairplace.solvers.placement.policies import ClusterState, make_policy

#: two machines of two GPUs, one fast (1.0) and one slow (1.5) on each: a 2-GPU job runs packed at
#: max V 1.5, or spread on the two fast GPUs at L x 1.0 (spread wins when L < 1.5)
PM = np.array([1.0, 1.5, 1.0, 1.5])


def _state():
    return ClusterState(grid_cluster(2, 2, pm={"A": PM}), {"A": PM}, {})


@pytest.mark.parametrize("own, expected", [(None, (0, 1)), (1.0, (0, 2)), (1.7, (0, 1))])
def test_a_jobs_own_locality_wins_over_the_policys_constant(own, expected):
    pol = make_policy("pal", locality_penalty=1.7)
    d = pol.place(_state(), [Job("j", 2, "A", locality=own)])
    assert d.allocation == {"j": expected}
    assert pol.locality(Job("j", 2, "A", locality=own)) == (1.7 if own is None else own)


def test_the_simulators_jobs_carry_their_runtime_locality():
    df = pd.DataFrame(
        {"job_id": ["0", "1"], "num_gpus": [4, 16], "submit_time": [0.0, 1.0],
         "duration": [10, 10], "model": ["resnet50", "resnet50"], "t_iter": [1.0, 1.0],
         "cls": ["A", "A"]}
    )  # fmt: skip
    df["locality"] = [measured_locality(m, n) for m, n in zip(df.model, df.num_gpus, strict=True)]
    w = workload_from_trace(df, locality_penalty=1.7)
    assert [j.locality for j in w.jobs()] == [1.0, 1.16]
    plain = workload_from_trace(df.drop(columns="locality"), locality_penalty=1.7)
    assert [j.locality for j in plain.jobs()] == [1.7, 1.7]  # constant: the policy's own L


@pytest.mark.parametrize("runtime_l, finish", [(1.0, 100.0), (1.7, 150.0)])
def test_pal_decides_with_the_runtime_penalty_in_the_driver(runtime_l, finish):
    """L = 1.0 at runtime: spread on the fast GPUs (100 s); 1.7: packed at max V 1.5 (150 s). The
    policy's own constant (1.7) decided both before: packed, 150 s, also when spreading was free."""
    df = pd.DataFrame({"job_id": ["0"], "num_gpus": [2], "submit_time": [0.0], "duration": [100],
                       "model": ["m"], "t_iter": [1.0], "cls": ["A"], "locality": [runtime_l]})  # fmt: skip
    w = workload_from_trace(df, locality_penalty=1.7)
    pol = make_policy("pal", locality_penalty=1.7)
    cl = grid_cluster(2, 2, pm={"A": PM})
    res = Driver(w, cl, {"A": PM}, make_scheduler("fifo"), pol, ClusterState, DriverConfig()).run()
    assert list(res.finish) == [pytest.approx(finish)]


def test_each_setup_decides_and_runs_with_one_model():
    """pal-artifact: constant 1.7 for both; pal-paper: the measured table for both, so the constant
    no longer moves a pal-paper run (before, PAL decided with 1.7 while jobs ran with ~1.0)."""
    assert setup_options("pal-artifact")["locality_model"] == "constant"
    assert setup_options("pal-paper")["locality_model"] == "measured"
    f = load_trace("workload-4").iloc[:24].reset_index(drop=True)
    f["num_gpus"] = f["num_gpus"].clip(upper=4)  # jobs PAL can pack or spread
    kw = dict(setup="pal-paper", gpus=16, seed=2, progress=False)
    a = fairplace.simulate(f, "fifo", "pal", **kw).jobs
    b = fairplace.simulate(f, "fifo", "pal", locality_penalty=1.0, **kw).jobs
    pd.testing.assert_series_equal(a["finish"], b["finish"])


def _patch_job_table(monkeypatch, make):
    prop = cached_property(make)
    prop.__set_name__(Driver, "job_table")
    monkeypatch.setattr(Driver, "job_table", prop)


def test_the_drivers_job_table_carries_each_jobs_model_and_locality(monkeypatch):
    """The driver's table gives a round each job's model and L (read once, not per job per round);
    a run with it equals a run whose table leaves the round to read each job's object."""
    f = load_trace("workload-4").iloc[:40].reset_index(drop=True)
    kw = dict(setup="pal-paper", gpus=16, seed=1, progress=False)
    made, original = [], Driver.job_table.func
    _patch_job_table(monkeypatch, lambda self: made.append((self.w, original(self))) or made[-1][1])
    with_table = fairplace.simulate(f, "fifo", "pal", **kw).jobs
    w, table = made[0]
    jobs = w.jobs()
    own, code, models = table.locality
    assert own.tolist() == [j.locality for j in jobs] and len(set(own.tolist())) > 1
    assert [models[k] for k in code.tolist()] == [j.model for j in jobs]
    _patch_job_table(monkeypatch, lambda self: JobTable(self.w.ids, self.w.demand, self.w.cls))
    pd.testing.assert_frame_equal(fairplace.simulate(f, "fifo", "pal", **kw).jobs, with_table)
