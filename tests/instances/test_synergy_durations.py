"""The Synergy trace's duration models: the PAL artifact's Gavel-like mixture and the Philly quantiles."""

import numpy as np
import pandas as pd
import pytest

from fairplace.core.errors import OptionError, TraceError
from fairplace.instances.trace_generators import check_options, make_trace
from fairplace.instances.traces import (
    gavel_mean_seconds,
    philly_gpu_demand,
    synergy_seconds,
    synergy_trace,
)

ONE = {"m": 1.0}  # one model at 1 s per iteration: duration (iterations) = seconds


def test_gavel_mean_is_the_artifacts_60362_seconds():
    assert gavel_mean_seconds() == pytest.approx(60_362, abs=1)
    s = synergy_seconds(np.random.default_rng(7).random(400_000), "gavel")
    assert s.mean() == pytest.approx(gavel_mean_seconds(), rel=0.02)
    # 60 * 10^U(3, 4) s with probability 0.2, the other branch ends at 60 * 10^3 s
    assert (s > 60_000).mean() == pytest.approx(0.2, abs=0.005)
    assert s.min() >= 60 * 10**1.5 and s.max() <= 60 * 10**4
    # each branch is log-uniform: the short one's median minute is 10^2.25
    short = s[s <= 60_000]
    assert np.median(np.log10(short / 60)) == pytest.approx(2.25, abs=0.02)


def test_gavel_trace_is_seeded_and_keeps_arrivals_gpus_and_models():
    a = synergy_trace(500, 8.0, ONE, max_gpus=16, seed=3, durations="gavel")
    pd.testing.assert_frame_equal(a, synergy_trace(500, 8.0, ONE, max_gpus=16, seed=3, durations="gavel"))  # fmt: skip
    p = synergy_trace(500, 8.0, ONE, max_gpus=16, seed=3)  # durations = "philly"
    for col in ("num_gpus", "submit_time", "model"):
        assert a[col].equals(p[col])
    assert a["duration"].mean() > 4 * p["duration"].mean()  # 60,362 s against Philly's ~10,000 s
    assert a.attrs["name"].endswith("-gavel") and not p.attrs["name"].endswith("-gavel")


def _offered_load(frame: pd.DataFrame, gpus: int) -> float:
    """GPU-seconds asked for over GPU-seconds offered until the last arrival."""
    return float(
        (frame["num_gpus"] * frame["duration"]).sum() / (gpus * frame["submit_time"].max())
    )


@pytest.mark.parametrize("rate", [8.0, 10.0])
def test_offered_load_of_the_gavel_trace_matches_the_analytic_value(rate):
    """load = rate / 3600 * E[GPUs] * E[seconds] / 256 (0.66 at 8 jobs/h, 0.83 at 10 with <= 16 GPUs)."""
    hist = philly_gpu_demand().query("num_gpus <= 16")
    gpus_per_job = float((hist["num_gpus"] * hist["fraction"]).sum() / hist["fraction"].sum())
    analytic = rate / 3600 * gpus_per_job * gavel_mean_seconds() / 256
    assert analytic == pytest.approx({8.0: 0.664, 10.0: 0.830}[rate], abs=0.002)
    loads = [
        _offered_load(synergy_trace(20_000, rate, ONE, max_gpus=16, seed=s, durations="gavel"), 256)
        for s in range(4)
    ]
    assert np.mean(loads) == pytest.approx(analytic, rel=0.05)
    philly = _offered_load(synergy_trace(20_000, rate, ONE, max_gpus=16, seed=0), 256)
    assert philly < analytic / 3  # the Philly quantiles leave 256 GPUs mostly idle


def test_same_seed_load_scales_with_the_arrival_rate():
    lo = _offered_load(synergy_trace(3_500, 8.0, ONE, max_gpus=16, seed=1, durations="gavel"), 256)
    hi = _offered_load(synergy_trace(3_500, 10.0, ONE, max_gpus=16, seed=1, durations="gavel"), 256)
    assert hi / lo == pytest.approx(10 / 8, rel=1e-4)


def test_unknown_duration_model_names_the_field():
    with pytest.raises(TraceError, match="durations.*philly, gavel"):
        synergy_trace(10, 8.0, ONE, durations="gavell")
    with pytest.raises(OptionError, match="trace_options.durations"):
        check_options("synergy", {"durations": "exponential"})
    trace, kw = make_trace("synergy", 0, {"n_jobs": 20, "durations": "gavel", "gpus": 64})
    assert kw == {"n_jobs": 20, "durations": "gavel", "max_gpus": 64} and len(trace) == 20
