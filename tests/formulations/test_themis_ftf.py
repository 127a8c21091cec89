"""Finish-time fairness (THEMIS Eq. 1, Eq. 2, §4.3.3 golden numbers, T_id variants)."""

import math

import pytest

from fairplace.core.errors import OptionError
from fairplace.formulations.ftf import (
    FTFModel,
    HyperOptimizer,
    IdealTime,
    JobInfo,
    PerfCurve,
    SuccessiveHalving,
    forecast_iteration,
    gavel_isolated_update,
    n_avg,
    phase_time,
    single_job_t_shared,
)

PHASES = ((4, 8), (2, 16), (1, 36))
JOBS = tuple(JobInfo(8, t) for t in (80, 100, 100, 120))


def _model(mode):
    sh = SuccessiveHalving(JOBS, PHASES, mode=mode)
    return FTFModel(sh, d_max=8, t_id=IdealTime("themis", n_avg=4))


def test_t_id_is_2500():
    # B = 10,000 GPU-s, min(R_C=16, 4 jobs x d_max 8) = 16, N_avg = 4
    assert _model("actual").ideal(16) == pytest.approx(2500.0)


def test_golden_current_actual_later_median():
    # 1 GPU: 8*400 + 2*16*100 + 36*100 = 10000; 2 GPUs: 1600+1600+1800 (the paper's arithmetic);
    # 4: 960+800+900; 8: 480+400+450; 16: 240+200+450 (d_max 8 caps the last phase).
    m = _model("actual")
    got = [m.rho(n, 16) for n in (1, 2, 4, 8, 16)]
    assert got == pytest.approx([4.0, 2.0, 1.064, 0.532, 0.356])


def test_golden_all_median():
    m = _model("median")
    got = [m.rho(n, 16) for n in (1, 2, 4, 8, 16)]
    assert got == pytest.approx([4.0, 2.0, 1.0, 0.5, 0.34])


def test_two_gpu_phase_one_serialises_pairs():
    assert phase_time(JOBS, 2, 8) == pytest.approx(1600.0)  # 120+80 and 100+100, 8 iterations


def test_revised_bid_correct_arithmetic():
    # The paper says Tsh(2) = 120 x 16 = 3200 s: an arithmetic slip, 120 x 16 = 1920 s.
    sh = SuccessiveHalving(
        (JobInfo(16, 120), JobInfo(16, 100)), PHASES, current_phase=1, future="slowest"
    )
    assert phase_time(sh.jobs_in_phase(1, range(2)), 2, 8) == pytest.approx(1920.0)
    assert phase_time(sh.jobs_in_phase(2, range(2)), 2, 8) == pytest.approx(2160.0)  # 120*36/2
    assert sh.jobs_in_phase(0, range(2)) == []


def test_single_job_eq1_and_slowdown():
    # rho = (elapsed + iter_left * t * S / min(|G|, d_max)) / (iter_total * t / min(R_C, d_max) * N)
    app = PerfCurve((JobInfo(100, 2.0),))
    m = FTFModel(app, d_max=4, elapsed=50, work_total=400.0, t_id=IdealTime("literal", n_avg=2))
    t_id = 400.0 / 4 * 2
    assert m.rho(2, 16, spread_level=1, vmax=1.2) == pytest.approx(
        (50 + 200 * 1.1 * 1.2 / 2) / t_id
    )
    assert m.rho(8, 16) == pytest.approx((50 + 200 / 4) / t_id)  # capped at d_max
    assert math.isinf(m.rho(0, 16))
    assert single_job_t_shared(50, 100, 2.0, 1.1, 2, 4) == pytest.approx(50 + 110)


def test_t_id_variants():
    assert IdealTime("static", n_arrival=4).value(1000, 500, 8, 16) == pytest.approx(1000 / 4)
    assert IdealTime("gavel", n_active=8, t_isolated=30).value(1000, 500, 8, 16) == pytest.approx(
        30 + 500 / 2
    )
    assert IdealTime("literal", n_avg=3).value(1000, 500, 8, 16) == pytest.approx(1000 / 8 * 3)
    # headline: the app alone on a 1/N share, min(R_C / N, d_max)
    assert IdealTime("themis", n_avg=4).value(1000, 500, 8, 16) == pytest.approx(1000 / 4)
    assert IdealTime("themis", n_avg=1).value(1000, 500, 8, 16) == pytest.approx(1000 / 8)
    # per phase: each phase limited by its own demand
    ph = IdealTime("themis", n_avg=2, phases=((400.0, 2), (600.0, 16)))
    assert ph.value(1000, 500, 16, 16) == pytest.approx(400 / 2 + 600 / 8)
    with pytest.raises(OptionError):
        IdealTime("nope")


def test_n_avg_time_weighted_and_gavel_update():
    # 2 apps during [0, 10), 4 apps during [10, 20)
    assert n_avg([0, 10], [2, 4], 0, 20) == pytest.approx(3.0)
    assert n_avg([0, 10], [2, 4], 5, 20) == pytest.approx((5 * 2 + 10 * 4) / 15)
    assert gavel_isolated_update(0.0, 10, 2.0, 16, 4, 8) == pytest.approx(20 / 4)


def test_perf_curve_takes_latest_forecast():
    pc = PerfCurve((JobInfo(10, 1.0), JobInfo(10, 2.0)), forecasts=((30, 50), ()))
    assert [j.iters_remaining for j in pc.jobs_remaining(range(2))] == [50, 10]
    assert isinstance(pc, HyperOptimizer) and isinstance(
        SuccessiveHalving(JOBS, PHASES), HyperOptimizer
    )
    assert forecast_iteration(1.0, 1.0, 0.0, 0.5) == pytest.approx(2.0)
    assert math.isinf(forecast_iteration(1.0, 1.0, 0.6, 0.5))


def test_rho_monotone_in_gpus_spread_and_score():
    m = _model("actual")
    for n in (2, 4, 8):
        assert m.rho(n, 16, 0, 1.0) <= m.rho(n, 16, 1, 1.0) <= m.rho(n, 16, 2, 1.0)
        assert m.rho(n, 16, 1, 1.0) <= m.rho(n, 16, 1, 1.3)


def test_locality_sources():
    from fairplace.formulations.ftf import LOCALITY_BOOTSTRAP, model_locality, profiled_locality

    assert profiled_locality([2.0, 2.4, 2.2]) == pytest.approx((1.0, 1.2, 1.2))  # made monotone
    table = {"vgg16": (1.0, 1.5, 2.0), "resnet50": 1.16}
    assert model_locality("vgg16", table) == (1.0, 1.5, 2.0)
    assert model_locality("resnet50", table) == (1.0, 1.16, 1.16)
    assert model_locality("bert", table) == LOCALITY_BOOTSTRAP
    with pytest.raises(OptionError):
        profiled_locality([0.0, 1.0, 1.0])
