"""Restart accounting in every summary: ``restarts_per_job`` (paid
checkpoint-restarts: resumes after a preemption and moves; first starts are free),
``restart_gpu_hours`` (GPUs held x seconds before the job is ready again) and
``restart_gpu_share`` (of all GPU-hours the jobs held)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fairplace

#: one 2-GPU machine of identical GPUs, decisions every 100 s
KW = {
    "gpus": 2,
    "gpus_per_machine": 2,
    "round_length": 100.0,
    "profile": "uniform",
    "progress": False,
}


def _trace(submits: list[float]) -> pd.DataFrame:
    """A long 2-GPU job at t = 0, then short 2-GPU jobs that SRTF runs first."""
    n = len(submits)
    return pd.DataFrame(
        {
            "job_id": ["long", *[f"short{k}" for k in range(1, n)]],
            "num_gpus": [2] * n,
            "submit_time": submits,
            "duration": [5000] + [100] * (n - 1),
            "model": ["resnet50"] * n,
        }
    )


def test_one_preemption_gives_one_restart_of_exactly_its_gpu_seconds():
    """SRTF preempts the long job at t = 100 for the short one (done before 200); the long job
    resumes at 200 paying 10 + 35 s on its 2 GPUs: 1 restart, 90 GPU-seconds."""
    res = fairplace.simulate(_trace([0.0, 10.0]), "srtf", "packed-sticky", **KW)
    j, s = res.jobs, res.summary
    assert j["restarts"].tolist() == [1, 0]
    assert j["restart_gpu_time"].tolist() == pytest.approx([90.0, 0.0], abs=1e-9)
    assert s["restarts_per_job"] == 0.5
    assert s["restart_gpu_hours"] == pytest.approx(90.0 / 3600, rel=1e-12)
    assert s["restart_gpu_share"] == pytest.approx(90.0 / j["gpu_time"].sum(), rel=1e-12)
    assert res.apps["restarts"].sum() == 1


def test_a_restart_cut_short_counts_only_the_seconds_held():
    """Checkpoint + restart = 150 s: the long job resumes at 200 (ready at 350) but a second short
    job preempts it at 300, so that restart holds its 2 GPUs 100 s, not 150; it resumes at 400
    paying 150 s in full: 2 restarts, 2 x (100 + 150) = 500 GPU-seconds (the charged overhead
    says 300 s)."""
    res = fairplace.simulate(
        _trace([0.0, 10.0, 210.0]), "srtf", "packed-sticky", checkpoint=50.0, restart=100.0, **KW
    )
    j = res.jobs.set_index("job_id")
    assert j.loc["long", "restarts"] == 2 and j.loc["long", "overhead"] == 300.0
    assert j.loc["long", "restart_gpu_time"] == pytest.approx(500.0, abs=1e-9)
    assert res.summary["restarts_per_job"] == pytest.approx(2 / 3)
    assert res.summary["restart_gpu_hours"] == pytest.approx(500.0 / 3600, rel=1e-12)


def test_no_preemption_no_restart():
    res = fairplace.simulate(_trace([0.0, 10.0]), "fifo", "packed-sticky", **KW)
    assert res.jobs["restarts"].tolist() == [0, 0]
    assert res.summary["restarts_per_job"] == 0.0 and res.summary["restart_gpu_hours"] == 0.0
    assert res.summary["restart_gpu_share"] == 0.0


@pytest.mark.parametrize("scheduler", ["themis", "las", "optimus"])
def test_every_scheduler_reports_restarts_consistently(scheduler):
    """Each paid restart is charged checkpoint + restart once (so the count matches the charged
    overhead), holds at most the job's GPUs for at most that long, and the share is in [0, 1]."""
    res = fairplace.simulate(
        "themis-2",
        scheduler,
        "packed-sticky",
        trace_options={"scale": "small", "n_apps": 12, "contention": 4},
        seed=3,
        progress=False,
    )
    j, s = res.jobs, res.summary
    paid = 10.0 + 35.0
    if scheduler != "themis":  # the preempting baselines do restart here (THEMIS may not)
        assert j["restarts"].sum() > 0
    np.testing.assert_allclose(j["overhead"], j["restarts"] * paid)
    assert (j["restart_gpu_time"] >= 0).all()
    assert (j["restart_gpu_time"] <= j["overhead"] * j["gpus"] + 1e-6).all()
    assert s["restarts_per_job"] == pytest.approx(j["restarts"].mean())
    assert s["restart_gpu_hours"] == pytest.approx(j["restart_gpu_time"].sum() / 3600)
    assert 0.0 <= s["restart_gpu_share"] <= 1.0
    assert res.apps["restarts"].sum() == j["restarts"].sum()


def test_a_pal_run_reports_them_too():
    """The PAL set-ups go through the same summary (LAS preempts: restarts are paid)."""
    res = fairplace.simulate("workload-1", "las", "pal", progress=False)
    s, j = res.summary, res.jobs
    assert {"restarts_per_job", "restart_gpu_hours", "restart_gpu_share"} <= set(s)
    assert s["restarts_per_job"] == pytest.approx(j["restarts"].mean())
    assert 0.0 <= s["restart_gpu_share"] <= 1.0
