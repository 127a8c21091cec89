"""The AGENT's T_sh over a table's GPU counts at the three spreads in one pass over the phases
(``ftf_counts.spread_times``) gives bit for bit the numbers of the per-spread path it replaces
(``t_shared_counts``, spread by spread), and the rho tables built on it (``rho_grid``) equal
that path's tables, whatever the memos already hold."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fairplace.formulations.ftf import (
    FTFModel,
    IdealTime,
    JobInfo,
    PerfCurve,
    SuccessiveHalving,
    ideal_time,
    running_rho,
)
from fairplace.formulations.ftf_counts import rho_grid, spread_times, t_shared_counts
from fairplace.formulations.hyperopt import model_job_of
from fairplace.formulations.phase_times import later_times


def _reference_grid(model: FTFModel, counts: list[int], r_c: int, levels) -> np.ndarray:
    """rho_grid as it was computed before the phase rows: t_shared_counts per spread."""
    ideal = model.ideal(r_c)
    lv = np.asarray(levels, float)

    def times(ns, s):
        return t_shared_counts(model.optimizer, ns, model.d_max, model.elapsed, s,
                               model.locality, model.split, model.machine_gpus)  # fmt: skip

    x0, x2 = times(counts, 0), times(counts, 2)
    x1 = x0.copy()
    differ = (x0 != x2).nonzero()[0]
    if differ.size:
        x1[differ] = times([counts[k] for k in differ], 1)
    x = np.stack([x0, x1, x2], axis=1)
    with np.errstate(invalid="ignore"):
        return (model.elapsed + lv[None, None, :] * (x - model.elapsed)[:, :, None]) / ideal


@st.composite
def models(draw):
    """An FTF model of a successive-halving app (any current phase, its later phases shared with
    its other optimisers or not) or a performance-curve app, jobs of one or mixed sensitivities."""
    J = draw(st.integers(1, 20))
    mixed = draw(st.booleans())
    jobs = tuple(
        JobInfo(
            draw(st.floats(1.0, 500.0)),
            draw(st.floats(0.1, 2.0)),
            draw(st.sampled_from([0.5, 1.0])) if mixed else 1.0,
        )
        for _ in range(J)
    )
    if draw(st.booleans()):
        phases = tuple(
            (max(J >> p, 1), draw(st.floats(1.0, 100.0)), min(2**p, 16))
            for p in range(draw(st.integers(1, 5)))
        )
        current = draw(st.integers(0, len(phases) - 1))
        memo = {} if draw(st.booleans()) else None
        opt = SuccessiveHalving(jobs, phases, current, future_memo=memo)
    else:
        opt = PerfCurve(jobs)
    return FTFModel(
        opt,
        d_max=draw(st.sampled_from([1, 2, 4])),
        elapsed=draw(st.floats(0.0, 1000.0)),
        locality=draw(st.sampled_from([(1.0, 1.5, 2.0), (1.0, 1.1, 1.3)])),
        t_id=IdealTime(n_avg=2.0),
        split=draw(st.sampled_from(["even", "even", "balanced"])),
        machine_gpus=draw(st.sampled_from([None, 4])),
    )


def _fresh(model: FTFModel) -> FTFModel:
    """The same model with empty memos (a new optimiser: its cached properties not yet read)."""
    opt = model.optimizer
    if isinstance(opt, SuccessiveHalving) and opt.future_memo is not None:
        return replace(model, optimizer=replace(opt, future_memo={}))
    return replace(model, optimizer=replace(opt))


@settings(max_examples=150, deadline=None)
@given(models(), st.lists(st.integers(0, 40), min_size=1, max_size=12, unique=True))
def test_spread_times_are_t_shared_counts_bit_for_bit(model, counts):
    """Any counts in any order, the memos filled or not: at each spread ``t_shared_counts`` on a
    fresh optimiser, bitwise (and ``t_shared`` count by count)."""
    spread_times(model, counts[::-2])  # some of them first: the memos hold part of the answer
    times = spread_times(model, counts)
    fresh = _fresh(model)
    for s in range(3):
        total = np.array(times[s])
        want = t_shared_counts(fresh.optimizer, counts, fresh.d_max, fresh.elapsed, s,
                               fresh.locality, fresh.split, fresh.machine_gpus)  # fmt: skip
        np.testing.assert_array_equal(total, want)
        for n, x in zip(counts, total.tolist(), strict=True):
            assert math.isclose(x, _fresh(model).t_shared(n, s, 1.0), rel_tol=1e-12), (n, s)


@settings(max_examples=150, deadline=None)
@given(
    models(),
    st.lists(st.tuples(st.integers(0, 30), st.integers(1, 20)), min_size=1, max_size=6),
    st.sampled_from([[1.0], [1.0, 1.3], [0.8, 1.0, 1.7]]),
)
def test_rho_tables_from_the_rows_equal_the_per_count_path(model, windows, levels):
    """A bidder's tables over windows of counts (held..held + n_max), the rows kept between them
    and its current rho read in between, equal the per-count path on a fresh optimiser, bitwise."""
    for lo, size in windows:
        counts = list(range(lo, lo + size))
        got = rho_grid(model, counts, 64, levels)
        np.testing.assert_array_equal(got, _reference_grid(_fresh(model), counts, 64, levels))
        rho_grid(model, [lo + size + 3], 64, levels)  # another bidder's window in between


@settings(max_examples=150, deadline=None)
@given(
    models(),
    st.lists(st.integers(0, 40), min_size=1, max_size=6),
    st.integers(0, 2),
    st.sampled_from([1.0, 1.3]),
    st.sampled_from(["themis", "literal"]),
)
def test_running_rho_from_numbers_is_the_models_rho_bit_for_bit(model, ns, s, v, variant):
    """The THEMIS agents' current rho from an app's numbers alone (``running_rho``: its running
    jobs' works, its later phases' ``later_times``, T_id by ``ideal_time``) is ``FTFModel.rho``
    of the same app, bitwise, for apps of one locality sensitivity under the even split."""
    opt = model.optimizer
    assume(model.split == "even" and len({j.locality_sensitivity for j in opt.jobs}) == 1)
    model = replace(model, t_id=IdealTime(variant, n_avg=2.5), work_total=1234.5, demand_max=8)
    halving = isinstance(opt, SuccessiveHalving)
    current = opt.current_phase if halving else 0
    phases = opt.phases if halving else ((len(opt.jobs), 1.0),)
    works = sorted((float(j.iters_remaining) * float(j.avg_time_per_iter) for j in opt.jobs),
                   reverse=True)  # fmt: skip
    mj = model_job_of([j.avg_time_per_iter for j in opt.jobs], [j.locality_sensitivity
                                                                 for j in opt.jobs])  # fmt: skip
    memo: dict = {}
    ideal = ideal_time(variant, 1234.5, 0.0, 8, 64, 2.5)
    for n in ns:
        later = later_times(phases, current, mj, n, model.d_max, s, v, model.locality,
                            model.machine_gpus, memo)  # fmt: skip
        got = running_rho(model.elapsed, works, n, model.d_max, later, ideal, s, v,
                          model.locality, model.machine_gpus, opt.jobs[0].locality_sensitivity)  # fmt: skip
        assert got == _fresh(model).rho(n, 64, s, v), (n, s, v)
