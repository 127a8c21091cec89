"""Traces and workloads: bundled Sia-Philly traces, CSV validation, Synergy and THEMIS generators."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairplace.core.errors import OptionError, TraceError
from fairplace.instances.traces import SIA_PHILLY, load_trace, synergy_trace, validate_trace
from fairplace.instances.workloads import CATEGORY_MIX, themis_workload
from fairplace.sim import simulate, workload_from_trace


@pytest.mark.parametrize("name", SIA_PHILLY)
def test_bundled_sia_philly_traces_load(name):
    df = load_trace(name)
    assert len(df) == 160
    assert list(df.columns[:5]) == ["job_id", "num_gpus", "submit_time", "duration", "model"]
    assert df["num_gpus"].between(1, 64).all() and (df["duration"] > 0).all()
    assert df["submit_time"].is_monotonic_increasing


def _csv(tmp_path, text):
    p = tmp_path / "t.csv"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    "text,where",
    [
        ("job_id,num_gpus,submit_time,model\n0,1,0,vgg19\n", "column 'duration'"),
        ("job_id,num_gpus,submit_time,duration,model\n0,1,0,10,vgg19\n1,0,5,10,vgg19\n", "row 2"),
        ("job_id,num_gpus,submit_time,duration,model\n0,1.5,0,10,vgg19\n", "'num_gpus'"),
        ("job_id,num_gpus,submit_time,duration,model\n0,1,-3,10,vgg19\n", "'submit_time'"),
        ("job_id,num_gpus,submit_time,duration,model\n0,1,0,abc,vgg19\n", "'duration'"),
        ("job_id,num_gpus,submit_time,duration,model\n0,1,0,5,a\n0,1,0,5,a\n", "'job_id'"),
    ],
)
def test_bad_traces_name_the_row_and_column(tmp_path, text, where):
    with pytest.raises(TraceError, match=where):
        load_trace(_csv(tmp_path, text))


def test_unknown_trace_name_and_unknown_model(tmp_path):
    with pytest.raises(TraceError, match="unknown trace"):
        load_trace("workload-9")
    p = _csv(
        tmp_path, "job_id,num_gpus,submit_time,duration,model\n0,1,0,10,vgg19\n1,1,0,10,nope\n"
    )
    with pytest.raises(TraceError, match="row 2 column 'model'"):
        simulate(p, progress=False)


def test_job_larger_than_cluster_is_a_trace_error():
    df = validate_trace(load_trace("workload-1"))
    with pytest.raises(TraceError, match="num_gpus"):
        workload_from_trace(df, {m: {"t_iter": 1.0, "cls": "A"} for m in df["model"]}, max_gpus=8)


def test_synergy_generator_is_seeded_and_follows_the_histogram():
    t_iter = {"a": 0.1, "b": 0.5}
    a = synergy_trace(2000, 8.0, t_iter, max_gpus=16, seed=3)
    b = synergy_trace(2000, 8.0, t_iter, max_gpus=16, seed=3)
    pd.testing.assert_frame_equal(a, b)
    assert a["num_gpus"].max() <= 16
    assert (a["num_gpus"] == 1).mean() > 0.85  # Philly: > 90% single-GPU
    rate = (len(a) - 1) / (a["submit_time"].max() / 3600)
    assert rate == pytest.approx(8.0, rel=0.1)
    assert not a.equals(synergy_trace(2000, 8.0, t_iter, max_gpus=16, seed=4))
    with pytest.raises(TraceError):
        synergy_trace(10, -1.0, t_iter)


def test_themis_workloads_share_arrivals_and_halve_jobs_per_phase():
    w1 = themis_workload(1, n_apps=40, seed=2)
    w2 = themis_workload(2, n_apps=40, seed=2)
    a1 = w1.groupby("app_id")["submit_time"].first()
    a2 = w2.groupby("app_id")["submit_time"].first()
    pd.testing.assert_series_equal(a1, a2)
    assert (w1["phase"] == 0).all() and w1["num_gpus"].isin([1, 2]).all()
    assert w2.groupby("phase")["num_gpus"].mean().is_monotonic_increasing
    for _, g in w2.groupby("app_id"):
        counts = g.groupby("phase").size().to_numpy()
        assert np.all(counts[1:] == np.maximum(counts[:-1] // 2, 1))
    assert w2["num_gpus"].mean() > w1["num_gpus"].mean()  # more tasks per job
    cats = themis_workload(2, n_apps=400, seed=0).groupby("app_id")["category"].first()
    for c, p in CATEGORY_MIX.items():
        assert (cats == c).mean() == pytest.approx(p, abs=0.07)


def test_themis_knobs_network_fraction_and_contention():
    none = themis_workload(2, n_apps=20, network_fraction=0.0)
    assert (none["locality"] == 1.1).all()
    every = themis_workload(2, n_apps=20, network_fraction=1.0)
    assert (every["locality"] == 1.5).all()
    assert [themis_workload(2, n_apps=3, contention=c).attrs["gpus"] for c in (1, 2, 4)] == [
        256,
        128,
        64,
    ]
    with pytest.raises(OptionError, match="contention"):
        themis_workload(2, contention=3)
