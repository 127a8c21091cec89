"""An app priced from its numbers alone (``running_app.RunningApp``: the THEMIS simulator's
bidders) gives bit for bit the numbers of its FTF model: the rho table ``rho_grid`` builds, T_sh
and rho, for apps of one locality sensitivity under the even split."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.formulations.ftf import FTFModel, IdealTime, JobInfo, PerfCurve, SuccessiveHalving
from fairplace.formulations.ftf_counts import rho_grid
from fairplace.formulations.running_app import RunningApp, later_spec

R_C = 64


@st.composite
def models(draw):
    """An FTF model of a successive-halving app (any current phase) or a one-phase app, jobs of
    sensitivity 1, the even split."""
    J = draw(st.integers(1, 20))
    jobs = tuple(JobInfo(draw(st.floats(1.0, 500.0)), draw(st.floats(0.1, 2.0))) for _ in range(J))
    if draw(st.booleans()):
        phases = tuple(
            (max(J >> p, 1), draw(st.floats(1.0, 100.0)), min(2**p, 16))
            for p in range(draw(st.integers(1, 5)))
        )
        opt = SuccessiveHalving(jobs, phases, draw(st.integers(0, len(phases) - 1)))
    else:
        opt = PerfCurve(jobs)
    return FTFModel(
        opt,
        d_max=draw(st.sampled_from([1, 2, 4])),
        elapsed=draw(st.floats(0.0, 1000.0)),
        locality=draw(st.sampled_from([(1.0, 1.5, 2.0), (1.0, 1.1, 1.3)])),
        t_id=IdealTime(draw(st.sampled_from(["themis", "literal"])), n_avg=2.0),
        work_total=1234.5,
        demand_max=draw(st.integers(1, 40)),
        machine_gpus=draw(st.sampled_from([None, 4])),
    )


def numbers(model: FTFModel, future: dict | None) -> RunningApp:
    """``model``'s app as its numbers (what the simulator's agents read off its arrays)."""
    opt = model.optimizer
    halving = isinstance(opt, SuccessiveHalving)
    works = sorted((float(j.iters_remaining) * float(j.avg_time_per_iter) for j in opt.jobs),
                   reverse=True)  # fmt: skip
    return RunningApp(
        model.elapsed, works, model.d_max, opt.phases if halving and len(opt.phases) > 1 else (),
        opt.current_phase if halving else 0, opt._future_job if halving else (0.0, 1.0),
        model.ideal(R_C), R_C, model.locality, model.machine_gpus, model.app_demand_max, {},
        future,
    )  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    models(),
    st.lists(st.tuples(st.integers(0, 30), st.integers(1, 20)), min_size=1, max_size=5),
    st.sampled_from([[1.0], [1.0, 1.3], [0.8, 1.0, 1.7]]),
    st.booleans(),
)
def test_the_table_from_numbers_is_rho_grid_bit_for_bit(model, windows, levels, kept):
    """Windows of counts (a bidder's held..held + n_max), the memos kept between them or not."""
    app = numbers(model, {} if kept else None)
    for lo, size in windows:
        want = rho_grid(model, range(lo, lo + size), R_C, levels)
        np.testing.assert_array_equal(app.table(lo, size, np.asarray(levels)), want)


@settings(max_examples=200, deadline=None)
@given(models(), st.lists(st.integers(0, 40), min_size=1, max_size=6), st.integers(0, 2),
       st.sampled_from([1.0, 1.3]))  # fmt: skip
def test_t_shared_and_rho_from_numbers_are_the_models(model, ns, s, v):
    app = numbers(model, {})
    for n in ns:
        assert app.t_shared(n, s, v) == model.t_shared(n, s, v), (n, s, v)
        if n > 0:
            assert app.rho(n, s, v) == model.rho(n, R_C, s, v), (n, s, v)


@settings(max_examples=100, deadline=None)
@given(models(), st.integers(0, 30), st.integers(1, 20), st.booleans())
def test_the_table_and_t_shared_share_their_lpt_makespans(model, lo, size, table_first):
    """The LPT makespans kept by count (``RunningApp.lpt``) by the table or by ``t_shared``, in
    either order, give both the model's numbers."""
    app = numbers(model, {})
    levels = np.asarray([1.0])
    for first in [True, False] if table_first else [False, True]:
        if first:
            want = rho_grid(model, range(lo, lo + size), R_C, levels)
            np.testing.assert_array_equal(app.table(lo, size, levels), want)
        else:
            for n in range(lo, lo + size):
                assert app.t_shared(n, 0, 1.0) == model.t_shared(n, 0, 1.0), n


def test_later_spec_reads_each_phase_demand():
    assert later_spec(((4, 10.0, 1), (2, 20.0, 2), (1, 40.0)), 0, 8) == ((2, 20.0, 2), (1, 40.0, 8))
    assert later_spec(((4, 10.0, 1),), 0, 8) == ()
