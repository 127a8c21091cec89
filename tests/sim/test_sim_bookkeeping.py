"""The simulator's bookkeeping kept in step instead of rebuilt per decision: the view's arrays, the active set and the jobs' objects, the rates of a decision's started jobs
in one step, the frames' rho over arrays, a resumed round's common head."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fairplace
from fairplace.formulations.ftf import T_ID_VARIANTS, IdealTime, n_avg
from fairplace.instances.generators import grid_cluster
from fairplace.instances.workloads import themis_workload
from fairplace.sim import engine, workload_from_trace
from fairplace.sim import metrics as M
from fairplace.sim.schedulers import make_scheduler
from fairplace.solvers.placement.resume import _common_head


def test_view_arrays_and_active_set_match_their_definitions_at_every_decision(monkeypatch):
    """``waiting_since`` (kept in place for the running jobs only) is np.where(running, t,
    min(waiting_since, release)) over every job, ``running`` the holdings' mask (read only), the
    active set np.flatnonzero(is_active) and the jobs' objects those of the active jobs, at every
    decision of a run with phases (releases) and LAS preemptions."""
    seen = []
    view = engine.Driver._view

    def checked(self, s):
        v = view(self, s)
        want = np.where(s.run.mask, s.t, np.minimum(s.waiting_since, s.release))
        np.testing.assert_array_equal(v.waiting_since, want)
        np.testing.assert_array_equal(v.running, s.run.mask)
        assert not v.running.flags.writeable and not v.waiting_since.flags.writeable
        np.testing.assert_array_equal(s.active, np.flatnonzero(s.is_active))
        assert sorted(s.jobs) == s.active.tolist()
        seen.append(int(np.count_nonzero(~s.run.mask[s.active])))  # jobs waiting
        return v

    monkeypatch.setattr(engine.Driver, "_view", checked)
    trace = themis_workload(2, n_apps=6, scale="small", gpus_per_machine=4, seed=2)
    res = fairplace.simulate(
        trace,
        "las",
        "packed-sticky",
        gpus=16,
        seed=2,
        progress=False,
        scheduler_options={"threshold": 200.0, "starve_factor": 1.5},
    )
    assert len(seen) >= 20 and max(seen) > 0  # decisions with jobs waiting: the arrays were read
    assert res.jobs["preemptions"].sum() > 0 and res.jobs["phase"].max() > 0


def test_started_jobs_rates_in_one_step_equal_the_one_job_slowdown():
    """:meth:`Driver.slowdowns` (spread from min / max machine and rack, max V by segments) gives
    exactly :meth:`Driver.slowdown` of each job, for GPU arrays and sorted tuples alike."""
    rng = np.random.default_rng(3)
    cl = grid_cluster(8, 4, machines_per_rack=2, pm={c: rng.uniform(1, 2, 32) for c in "AB"})
    J = 40
    rows = {
        "job_id": [f"j{k}" for k in range(J)],
        "num_gpus": rng.integers(1, 9, J),
        "submit_time": np.zeros(J),
        "duration": np.full(J, 100),
        "t_iter": np.ones(J),
        "model": ["m"] * J,
        "cls": rng.choice(["A", "B"], J).tolist(),
    }
    w = workload_from_trace(pd.DataFrame(rows), locality_penalty=1.7)
    d = engine.Driver(w, cl, {}, make_scheduler("fifo"), None, None)
    c = np.arange(J)
    gpus = [np.sort(rng.choice(32, int(n), replace=False)) for n in w.demand]
    for bundles in (gpus, [tuple(g.tolist()) for g in gpus]):
        k, sd = d.slowdowns(c, bundles)
        assert k.tolist() == w.demand.tolist()
        assert sd.tolist() == [d.slowdown(j, gpus[j]) for j in range(J)]


def test_window_n_avg_is_n_avg_of_each_window():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(1, 60))
        arr = np.sort(rng.uniform(0, 1e6, n))
        fin = arr + rng.exponential(3e4, n)
        steps = M.active_step(arr, fin)
        start = np.r_[arr, fin[:3], arr[:2] - 5.0]  # also empty windows and starts before the first
        end = np.r_[fin, fin[:3], arr[:2] + 1.0]
        got = M.window_n_avg(steps, start, end)
        want = [n_avg(*steps, a, b) if b > a else None for a, b in zip(start, end, strict=True)]
        for g, x, a in zip(got, want, start, strict=True):
            if x is None:  # an empty window: the count at its start
                k = max(int(np.searchsorted(steps[0], a, side="right")) - 1, 0)
                assert g == steps[1][k]
            else:
                assert g == pytest.approx(x, rel=1e-9)
    # a window inside one step of the function: its count, exactly
    steps = (np.array([0.0, 10.0, 1e6]), np.array([1, 3, 0]))
    assert M.window_n_avg(steps, np.array([10.1]), np.array([9.9e5])).tolist() == [3.0]


@pytest.mark.parametrize("with_phases", [False, True])
def test_rho_over_arrays_is_ideal_time_of_each_entity(with_phases):
    rng = np.random.default_rng(1)
    n, G = 50, 64
    arr = np.sort(rng.uniform(0, 1e5, n))
    fin = arr + rng.exponential(1e4, n)
    work, dmax, t_iso = rng.uniform(1, 1e5, n), rng.integers(1, 80, n), rng.uniform(0, 1e4, n)
    phases = (
        [
            tuple((float(rng.uniform(1, 1e4)), int(rng.integers(1, 9))) for _ in range(3))
            for _ in range(n)
        ]
        if with_phases
        else None
    )
    steps = M.active_step(arr, fin)
    got = M._rho(arr, fin, work, dmax, t_iso, steps, G, phases)
    navg = M.window_n_avg(steps, arr, fin)
    for k in range(n):
        pos = int(np.searchsorted(steps[0], arr[k], side="right")) - 1
        for v in T_ID_VARIANTS:
            tid = IdealTime(
                variant=v,
                n_avg=max(float(navg[k]), 1.0),
                n_arrival=max(int(steps[1][pos]) if pos >= 0 else 1, 1),
                n_active=1,
                t_isolated=float(t_iso[k]),
                phases=phases[k] if phases else (),
            ).value(float(work[k]), 0.0, int(dmax[k]), G)
            assert got[v][k] == (fin[k] - arr[k]) / tid  # the same operations: the same number


def test_common_head_of_two_processing_orders():
    rng = np.random.default_rng(5)
    for _ in range(300):
        n = int(rng.integers(0, 40))
        a = tuple(f"j{k}" for k in range(n))
        b = list(a)
        if n and rng.random() < 0.8:
            b[int(rng.integers(0, n))] = "x"
        b = tuple(b)
        m = int(rng.integers(0, n + 1))
        p = 0
        while p < m and a[p] == b[p]:
            p += 1
        assert _common_head(a, b, m) == p
