"""The vectorised finish-time-fairness paths (formulations/ftf_counts.py, the THEMIS driver's N_avg
bookkeeping) equal the scalar definitions they speed up (formulations/ftf.py), to 1e-12."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fairplace.formulations import ftf
from fairplace.formulations.ftf import (
    FTFModel,
    IdealTime,
    JobInfo,
    PerfCurve,
    SuccessiveHalving,
    identical_phase_time,
    model_job,
    n_avg,
    phase_time,
    remaining_work,
    t_shared,
)
from fairplace.formulations.ftf_counts import (
    _even_times3,
    _lpt_makespans,
    identical_phase_times,
    phase_time_counts,
    rho_grid,
)
from fairplace.formulations.phase_times import even_phase_times
from fairplace.sim.themis.apps import StepAverage


def _close(a: float, b: float) -> bool:
    return a == b or math.isclose(a, b, rel_tol=1e-12)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 30),
    st.floats(1.0, 500.0),
    st.floats(0.0, 1.0),
    st.integers(0, 40),
    st.sampled_from([1, 2, 4, 8, 16]),
    st.integers(0, 2),
    st.sampled_from([None, 4]),
)
def test_identical_jobs_in_closed_form(k, work, sens, n, d, spread, machine):
    job = JobInfo(work, 1.0, sens)
    loc = (1.0, 1.5, 2.0)
    want = phase_time([job] * k, n, d, spread, 1.3, loc, "even", machine)
    assert _close(identical_phase_time(k, work, sens, n, d, spread, 1.3, loc, machine), want)
    row = identical_phase_times(k, work, sens, np.array([n]), d, spread, loc, machine)
    assert _close(float(row[0]), phase_time([job] * k, n, d, spread, 1.0, loc, "even", machine))


@st.composite
def models(draw):
    J = draw(st.integers(1, 25))
    works = draw(st.lists(st.floats(1.0, 500.0), min_size=J, max_size=J))
    jobs = tuple(JobInfo(w, draw(st.floats(0.1, 2.0)), 1.0) for w in works)
    phases = tuple(
        (max(J >> p, 1), draw(st.floats(1.0, 100.0)), min(2**p, 16))
        for p in range(draw(st.integers(1, 5)))
    )
    opt = SuccessiveHalving(jobs, phases, 0) if draw(st.booleans()) else PerfCurve(jobs)
    return FTFModel(
        opt,
        d_max=draw(st.sampled_from([1, 2, 4])),
        elapsed=draw(st.floats(0.0, 1000.0)),
        locality=(1.0, 1.5, 2.0),
        t_id=IdealTime(n_avg=2.0),
        machine_gpus=draw(st.sampled_from([None, 4])),
    )


@settings(max_examples=60, deadline=None)
@given(models())
def test_rho_grid_equals_rho_count_by_count(model):
    counts, levels = list(range(0, 30)), [1.0, 1.3]
    grid = rho_grid(model, counts, 64, levels)
    for a, n in enumerate(counts):
        for s in range(3):
            for v, lv in enumerate(levels):
                assert _close(float(grid[a, s, v]), model.rho(n, 64, s, lv)), (n, s, lv)
    again = rho_grid(model, counts, 64, levels)  # from the optimiser's memo: the same numbers
    np.testing.assert_array_equal(again, grid)


@settings(max_examples=100, deadline=None)
@given(models())
def test_remaining_work_in_closed_form(model):
    opt = model.optimizer
    phases = range(opt.num_phases())
    want = sum(j.work for p in phases for j in opt.jobs_in_phase(p))
    assert _close(remaining_work(opt), float(want))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.0, 50.0), st.integers(1, 9)), min_size=1, max_size=30),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
)
def test_running_n_avg_equals_the_pass_over_every_decision(steps, lo, hi):
    t, times, counts, avg = 0.0, [], [], StepAverage()
    for dt, n in steps:
        t += dt
        times.append(t)
        counts.append(n)
        avg.append(t, n)
    a = times[0] + lo * (t - times[0])
    b = a + 1.0 + hi * (t + 10.0 - a)  # windows of a second or more (the integral's cancellation)
    assert math.isclose(avg.mean(a, b), n_avg(times, counts, a, b), rel_tol=1e-9)
    assert avg.mean(a, a) == n_avg(times, counts, a, a)  # an empty window: the value at t_start


@settings(max_examples=60, deadline=None)
@given(models(), st.integers(0, 4), st.floats(0.1, 0.9))
def test_memos_give_the_numbers_computed_afresh(model, current, progress):
    """The THEMIS driver's memos change no number: past phases skipped, later phases shared by an
    app's successive optimisers (``future_memo``), LPT makespans shared by the three spreads."""
    from dataclasses import replace

    opt = model.optimizer
    assume(isinstance(opt, SuccessiveHalving))
    opt = replace(opt, current_phase=min(current, len(opt.phases) - 1))
    later = replace(opt, jobs=tuple(replace(j, iters_remaining=j.iters_remaining * progress)
                                    for j in opt.jobs))  # fmt: skip
    levels = [1.0, 1.3]
    shared: dict = {}
    # the same app as its jobs progress, then the first view again; windows of counts that grow
    # the kept later-phase times and read them off at an offset
    for o, counts in ((opt, [0, 1, 2, 3]), (later, list(range(30))), (opt, list(range(11, 17)))):
        fresh = rho_grid(replace(model, optimizer=replace(o, future_memo=None)), counts, 64, levels)
        memo = rho_grid(
            replace(model, optimizer=replace(o, future_memo=shared)), counts, 64, levels
        )
        np.testing.assert_array_equal(memo, fresh)
        for a, n in enumerate(counts[:4]):
            assert _close(float(fresh[a, 2, 1]), replace(model, optimizer=o).rho(n, 64, 2, 1.3))
    if opt.current_phase < len(opt.phases) - 1:  # later phases exist: memoised, then reused
        assert shared


@settings(max_examples=60, deadline=None)
@given(models(), st.integers(0, 4), st.floats(0.1, 0.9))
def test_later_phases_kept_give_the_numbers_computed_afresh(model, current, progress):
    """An app's current rho reads its later phases' times from the optimisers' shared memo
    (``phase_times.later_phase_times``): bitwise the times computed afresh, at every count, spread and V,
    as its jobs progress and with the rho tables' grids in the same memo."""
    opt = model.optimizer
    assume(isinstance(opt, SuccessiveHalving))
    opt = replace(opt, current_phase=min(current, len(opt.phases) - 1))
    later = replace(opt, jobs=tuple(replace(j, iters_remaining=j.iters_remaining * progress)
                                    for j in opt.jobs))  # fmt: skip
    ahead = replace(later, current_phase=min(opt.current_phase + 1, len(opt.phases) - 1))
    shared: dict = {}
    for o in (opt, later, ahead, opt):  # the app's jobs progress, then its next phase runs
        kept = replace(model, optimizer=replace(o, future_memo=shared))
        fresh = replace(model, optimizer=replace(o, future_memo=None))
        rho_grid(kept, list(range(0, 12)), 64, [1.0, 1.3])  # the tables' grids share the memo
        for n in range(0, 20):
            for s in range(3):
                for v in (1.0, 1.3):
                    assert kept.t_shared(n, s, v) == fresh.t_shared(n, s, v), (n, s, v)
    if opt.current_phase < len(opt.phases) - 1:
        assert any(k[0] == "later" for k in shared)


@settings(max_examples=60, deadline=None)
@given(models(), st.floats(0.1, 0.9), st.sampled_from(["median", "slowest"]))
def test_a_model_job_given_by_the_caller_is_the_one_computed(model, progress, future):
    """The THEMIS agents compute an app's model job once per set of running jobs and hand it to
    every optimiser of that set (``SuccessiveHalving.model_job``): it is the one the optimiser would
    compute, before and after the jobs progress, so no rho changes."""
    from dataclasses import replace

    opt = model.optimizer
    assume(isinstance(opt, SuccessiveHalving))
    opt = replace(opt, future=future)
    mj = model_job(opt.jobs, future)
    assert mj == opt._future_job
    later = replace(opt, jobs=tuple(replace(j, iters_remaining=j.iters_remaining * progress)
                                    for j in opt.jobs))  # fmt: skip
    for o in (opt, later):
        given_mj = replace(model, optimizer=replace(o, model_job=mj))
        own = replace(model, optimizer=o)
        for n in (1, len(o.jobs), 2 * len(o.jobs) + 1):
            assert given_mj.rho(n, 64, 2, 1.0) == own.rho(n, 64, 2, 1.0)


def _even_split_by_job(jobs, n, d_max, spread, vmax, locality, machine_gpus):
    """phase_time's definition under the even split, job by job (n >= len(jobs))."""
    from fairplace.formulations.ftf import job_locality

    cap = max(1, d_max)
    share = [min(n // len(jobs), cap)] * len(jobs)
    for k in sorted(range(len(jobs)), key=lambda k: -jobs[k].work)[: n % len(jobs)]:
        share[k] = min(share[k] + 1, cap)
    out = []
    for j, nj in zip(jobs, share, strict=True):
        fits = machine_gpus is not None and nj <= machine_gpus and nj < n
        L = job_locality(locality, 0 if fits else spread, j.locality_sensitivity) if nj > 1 else 1.0
        out.append(j.work * vmax * L / nj)
    return max(out)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([1.0, 37.5, 100.0, 412.25, 999.0]), min_size=1, max_size=30),
    st.integers(0, 60),
    st.integers(1, 9),
    st.integers(0, 2),
    st.sampled_from([1.0, 0.93, 1.37]),
    st.sampled_from([None, 4, 8]),
)
def test_even_phase_time_in_closed_form_is_the_job_by_job_maximum(
    works, extra, d_max, spread, vmax, machine_gpus
):
    """With one locality sensitivity, phase_time reads the slowest job off the sorted works (the
    longest with the base share, the longest with a GPU more): bitwise the maximum over the jobs."""
    jobs = [JobInfo(w, 1.0, 0.7) for w in works]
    n = len(jobs) + extra
    locality = (1.0, 1.2, 1.5)
    got = phase_time(jobs, n, d_max, spread, vmax, locality, "even", machine_gpus)
    assert got == _even_split_by_job(jobs, n, d_max, spread, vmax, locality, machine_gpus)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from([0.0, 1.0, 2.5, 7.0, 1e-3, 333.3, 1e5]) | st.floats(0.0, 1e6),
        min_size=2,
        max_size=40,
    ),
    st.data(),
)
def test_lpt_makespans_are_phase_times_heap_bit_for_bit(works, data):
    """The LPT makespans of every count below J (started with the first n jobs one per GPU) equal
    ``phase_time``'s heap, bitwise: ties among equal loads included (repeated and zero works)."""
    jobs = [JobInfo(w, 1.0, 1.0) for w in works]
    J = len(jobs)
    counts = data.draw(st.lists(st.integers(1, J - 1), min_size=1, max_size=J, unique=True))
    got = _lpt_makespans(sorted((j.work for j in jobs), reverse=True), counts)
    want = [phase_time(jobs, n, 1, 0, 1.0) for n in counts]
    assert got.tolist() == want


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([1.0, 37.5, 100.0, 412.25]) | st.floats(1e-3, 1e6), min_size=1, max_size=30
    ),
    st.integers(1, 9),
    st.integers(0, 2),
    st.sampled_from([0.0, 0.7, 1.0]),
    st.sampled_from([None, 1, 4, 8]),
)
def test_phase_time_counts_are_phase_times_bit_for_bit(works, d_max, spread, sens, machine_gpus):
    """A rho table's row of the running phase (one locality sensitivity, the even split) is
    ``phase_time`` at every count, bitwise: below J the LPT makespans, from J on the slowest job."""
    jobs = [JobInfo(w, 1.0, sens) for w in works]
    locality = (1.0, 1.2, 1.5)
    counts = list(range(0, len(jobs) * d_max + 5))
    got = phase_time_counts(jobs, counts, d_max, spread, locality, "even", machine_gpus)
    want = [phase_time(jobs, n, d_max, spread, 1.0, locality, "even", machine_gpus) for n in counts]
    assert got.tolist() == want


@settings(max_examples=100, deadline=None)
@given(
    models(),
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 2), st.sampled_from([1.0, 1.3])),
        min_size=1,
        max_size=12,
    ),
)
def test_kept_sorted_works_change_no_phase_time(model, asks):
    """The sorted works an optimiser keeps (``phase_works``, read at max V = 1 only) give the
    times computed without them, bitwise, whatever was asked before (V = 1.3 included)."""
    opt = model.optimizer
    calls = [(n, model.d_max, model.elapsed, s, v, model.locality, "even", model.machine_gpus)
             for n, s, v in asks]  # fmt: skip
    got = [t_shared(opt, *args) for args in calls]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ftf, "phase_works", lambda *a: None)
        assert got == [t_shared(replace(opt), *args) for args in calls]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([1.0, 37.5, 100.0, 412.25]) | st.floats(1e-3, 1e6), min_size=1, max_size=30
    ),
    st.integers(1, 9),
    st.sampled_from([0.0, 0.7, 1.0]),
    st.sampled_from([None, 1, 2, 4, 8]),
    st.sampled_from([(1.0, 1.2, 1.5), (1.0, 1.0, 1.0), (1.3, 1.1, 2.0)]),
)
def test_even_times_of_the_three_spreads_are_even_phase_times(works, cap, sens, mg, locality):
    """The three spreads' rows in one pass (``_even_times3``: its cases taken apart) are
    ``even_phase_times`` at each spread, bitwise, on every count from J on."""
    works = sorted(works, reverse=True)
    counts = range(len(works), len(works) * (cap + 2) + 3)
    got = _even_times3(works, counts, cap, sens, locality, mg)
    for s in range(3):
        assert got[s] == even_phase_times(works, counts, cap, sens, s, locality, mg), s
