"""Job-ordering schedulers on hand-made views."""

from __future__ import annotations

import numpy as np
import pytest

from fairplace.core.errors import UnknownSolver
from fairplace.sim.protocols import SchedView
from fairplace.sim.schedulers import QUEUE_SCHEDULERS, make_scheduler


def view(**kw) -> SchedView:
    n = len(kw.get("arrival", [0, 1, 2, 3]))
    base = dict(
        t=1000.0,
        active=np.arange(n),
        arrival=np.arange(n, dtype=float),
        demand=np.ones(n, np.int64),
        remaining=np.full(n, 100.0),
        total=np.full(n, 100.0),
        t_iter=np.ones(n),
        attained=np.zeros(n),
        running=np.zeros(n, bool),
        app=np.arange(n),
        gpus=4,
        round_length=300.0,
        held=np.zeros(n),
        t_isolated=np.zeros(n),
    )
    base.update({k: np.asarray(v) if isinstance(v, list) else v for k, v in kw.items()})
    return SchedView(**base)


def test_fifo_and_srtf():
    v = view(arrival=[3.0, 1.0, 2.0, 0.0], remaining=[5.0, 50.0, 1.0, 20.0])
    assert make_scheduler("fifo").order(v).tolist() == [3, 1, 2, 0]
    assert make_scheduler("srtf").order(v).tolist() == [2, 0, 3, 1]


def test_las_two_queues_and_next_change():
    v = view(
        attained=[5000.0, 0.0, 10.0, 4000.0],
        running=[True, False, True, False],
        demand=[2, 1, 2, 1],
    )
    las = make_scheduler("las", threshold=3200.0)
    assert las.order(v).tolist() == [1, 2, 0, 3]
    assert las.next_change(v) == pytest.approx(1000.0 + (3200.0 - 10.0) / 2)


def test_drf_water_fills_over_apps():
    v = view(app=[0, 0, 0, 1], demand=[1, 1, 1, 2], arrival=[0.0, 1.0, 2.0, 3.0])
    # app 0 (share 0) -> job 0; app 1 (share 0, arrived later) -> job 3; app 0 (1) < app 1 (2) -> 1, 2
    assert make_scheduler("drf").order(v).tolist() == [0, 3, 1, 2]


def test_gandiva_moves_fitting_jobs_ahead():
    v = view(demand=[3, 2, 1, 1])
    assert make_scheduler("gandiva").order(v).tolist() == [0, 2, 1, 3]


def test_optimus_least_remaining_gpu_time_first():
    v = view(demand=[4, 1, 2, 1], remaining=[10.0, 30.0, 10.0, 5.0])
    assert make_scheduler("srpt-oracle").order(v).tolist() == [3, 2, 1, 0]


def test_slaq_prefers_jobs_early_on_their_loss_curve():
    v = view(remaining=[5.0, 100.0, 100.0, 100.0], total=[100.0] * 4, t_iter=[10.0] * 4)
    order = make_scheduler("slaq", seed=1).order(v)
    assert sorted(order.tolist()) == [0, 1, 2, 3] and order[-1] == 0
    np.testing.assert_array_equal(order, make_scheduler("slaq", seed=1).order(v))


def test_gavel_ftf_favours_the_job_furthest_from_fair():
    v = view(
        arrival=[0.0, 900.0, 0.0, 900.0],
        held=[1000.0, 100.0, 0.0, 0.0],
        remaining=[100.0, 100.0, 100.0, 100.0],
        demand=[2, 2, 2, 2],
    )
    order = make_scheduler("gavel-ftf").order(v)
    assert sorted(order.tolist()) == [0, 1, 2, 3]
    assert order[0] == 2  # waited longest with no service
    assert order.tolist().index(0) > order.tolist().index(2)


def test_gavel_ftf_shares_are_per_job_so_an_app_of_many_jobs_gets_more():
    """gavel-ftf's program is min max rho over jobs: four identical jobs get the same time share,
    so an app of three of them is promised three times the GPUs of a single-job app (the mechanism
    behind its single-job apps' rho under contention, docs/themis-results.md)."""
    v = view(arrival=[0.0] * 4, app=[0, 0, 0, 1], gpus=2, t=600.0)
    g = make_scheduler("gavel-ftf")
    assert g.last_shares is None
    g.order(v)
    idx, x = g.last_shares
    assert idx.tolist() == [0, 1, 2, 3]
    assert np.all((x >= 0) & (x <= 1)) and (x * v.demand[idx]).sum() <= v.gpus + 1e-9
    assert np.allclose(x, x[0]) and x[0] > 0
    per_app = np.bincount(v.app[idx], weights=x * v.demand[idx])
    assert per_app[0] == pytest.approx(3 * per_app[1])


def test_every_scheduler_returns_a_permutation_and_unknown_names_fail():
    v = view(remaining=[3.0, 7.0, 1.0, 9.0], attained=[0.0, 9e3, 5.0, 0.0])
    for name in QUEUE_SCHEDULERS:
        assert sorted(make_scheduler(name).order(v).tolist()) == [0, 1, 2, 3]
    with pytest.raises(UnknownSolver):
        make_scheduler("nope")


def test_las_starvation_promotion():
    # job 0 is in queue 1 (attained >= threshold) and has waited since t=0 after running 100 s;
    # job 1 (queue 0) arrived later. With starve_factor=5 job 0 is promoted at 0 + 5 * 100 = 500 s.
    kw = dict(
        arrival=[0.0, 10.0],
        attained=[5000.0, 0.0],
        held=[100.0, 0.0],
        waiting_since=np.array([0.0, 10.0]),
    )
    plain, guarded = make_scheduler("las"), make_scheduler("las", starve_factor=5)
    assert plain.order(view(t=1000.0, **kw)).tolist() == [1, 0]
    assert guarded.order(view(t=1000.0, **kw)).tolist() == [0, 1]
    assert guarded.order(view(t=400.0, **kw)).tolist() == [1, 0]
    assert guarded.next_change(view(t=400.0, **kw)) == 500.0
    running = view(t=1000.0, running=np.array([True, False]), **kw)
    assert guarded.order(running).tolist() == [1, 0]  # promotion lasts until the job runs


@pytest.mark.parametrize(
    "name,opts,field",
    [("las", {"nope": 1}, "nope"), ("las", {"starve_factor": -1}, "starve_factor"),
     ("las", {"threshold": 0}, "threshold"), ("themis", {"nope": 1}, "nope"),
     ("themis", {"leftover": "x"}, "leftover"), ("themis", {"pricing": "x"}, "pricing"),
     ("fifo", {"threshold": 1}, "threshold")],
)  # fmt: skip
def test_scheduler_options_are_checked(name, opts, field):
    """Every scheduler option error names its path, scheduler_options.<option> (the CLI turns it
    into --scheduler-option <option>)."""
    from fairplace.core.errors import OptionError

    with pytest.raises(OptionError) as exc:
        make_scheduler(name, **opts)
    assert exc.value.path == f"scheduler_options.{field}"


def test_las_starvation_guard_end_to_end():
    from fairplace.sim import simulate

    def run():
        return simulate(
            "workload-1", "las", "packed-sticky", scheduler_options={"starve_factor": 1},
            progress=False, debug=True,
        )  # fmt: skip

    a, b = run(), run()
    plain = simulate("workload-1", "las", "packed-sticky", progress=False)
    assert a.summary == {**b.summary, "wall_seconds": a.summary["wall_seconds"]}
    assert a.jobs["waiting"].max() < plain.jobs["waiting"].max()  # 51 262 s vs 81 883 s
