"""Per-entity metrics read only their own window: the windowed N_avg equals ftf.n_avg over the whole
step function, and app phases group (app, phase) work exactly."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.formulations.ftf import n_avg
from fairplace.instances.workloads import themis_workload
from fairplace.sim import metrics as M
from fairplace.sim import workload_from_trace


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(0, 2**31 - 1))
def test_window_n_avg_equals_n_avg(n, seed):
    rng = np.random.default_rng(seed)
    arrival = np.round(rng.uniform(0, 100, n), 1)  # ties and zero-length lives included
    finish = arrival + np.round(rng.exponential(20, n), 1) * (rng.random(n) > 0.1)
    steps = M.active_step(arrival, finish)
    start = np.concatenate([arrival, [arrival.min() - 5.0]])  # a window opening before any change
    end = np.concatenate([finish, [arrival.min() - 1.0]])
    with np.errstate(invalid="ignore"):  # the window before any change: 0 / 0 in both
        got = M.window_n_avg(steps, start, end)
        want = np.array([n_avg(*steps, a, b) for a, b in zip(start, end, strict=True)])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=0)  # running sums: rounding differs
    assert np.array_equal(np.isnan(got), np.isnan(want))


def test_app_phases_sum_work_and_demand_per_phase():
    w = workload_from_trace(themis_workload(2, seed=0))
    ph = M.app_phases(w)
    for a in range(len(w.app_ids)):
        mine = w.app == a
        want = tuple(
            (
                float(np.sum((w.work * w.demand)[mine & (w.phase == p)])),
                int(np.sum(w.demand[mine & (w.phase == p)])),
            )
            for p in np.unique(w.phase[mine])
        )
        assert [d for _, d in ph[a]] == [d for _, d in want]
        np.testing.assert_allclose([x for x, _ in ph[a]], [x for x, _ in want], rtol=1e-12)
