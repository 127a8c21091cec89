"""THEMIS' 64-GPU testbed set-up (Figs. 9-13): the ``testbed`` workload scale and
the ``testbed`` experiment (papers/themis/testbed.toml), which judges the x1 headline over loads."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairplace.analysis.tables import themis_table
from fairplace.core.errors import OptionError
from fairplace.instances.workloads import SCALES, themis_workload, workload_stats
from fairplace.runs.experiments import load_experiments, run_experiment
from fairplace.sim import simulate
from fairplace.sim.config import SimulationConfig
from fairplace.sim.resolve import cluster_size, draw_cluster, trace_frame, trace_profile

SAME = ["job_id", "num_gpus", "duration", "model", "app_id", "phase", "t_iter", "category"]


def test_testbed_scale_is_the_paper_workload_on_64_gpus_in_16_machines_of_4():
    assert SCALES["testbed"]["base_gpus"] == 64
    res = simulate(
        trace="themis-2", scheduler="las", placement="packed-sticky", seed=0, progress=False,
        trace_options={"scale": "testbed", "load": 2.0, "n_apps": 3, "jobs_range": [2, 4]},
    )  # fmt: skip
    assert res.config["gpus"] == 64 and res.config["gpus_per_machine"] == 4  # 16 machines of 4
    frame = trace_frame("themis-2", 0, None, {"scale": "testbed"})
    cfg = SimulationConfig()
    gpus, gpm = cluster_size(cfg, frame)
    cluster, _ = draw_cluster(cfg, gpus, gpm, trace_profile(cfg, frame))
    assert len(cluster) == 64 and len(cluster.machines) == 16 and len(cluster.racks) == 1


@pytest.mark.parametrize("workload", [1, 2])
@pytest.mark.parametrize("load", [None, 0.5, 4.0])
def test_testbed_keeps_the_paper_scales_apps_jobs_and_task_lengths(workload, load):
    """Same seed: the same apps, jobs and task lengths as the 256-GPU paper scale; only the
    arrival times differ (uniform over a window the load sets, in the same order)."""
    paper = themis_workload(workload, scale="paper", seed=3)
    bed = themis_workload(workload, scale="testbed", seed=3, load=load)
    pd.testing.assert_frame_equal(bed[SAME], paper[SAME])
    ps, bs = workload_stats(paper), workload_stats(bed)
    for k in ("median_task_gpu_hours", "median_app_gpu_days", "median_jobs_per_exploring_app",
              "single_job_fraction", "jobs"):  # fmt: skip
        assert bs[k] == ps[k], k
    assert paper.attrs["gpus"] == 256 and bed.attrs["gpus"] == 64
    t_paper, t_bed = paper["submit_time"].to_numpy(), bed["submit_time"].to_numpy()
    scale = t_bed.max() / t_paper.max()
    assert scale == pytest.approx(bed.attrs["window_hours"] / paper.attrs["window_hours"])
    assert (scale == 1.0) == (load is None)  # without a load: the trace's own two-week window
    assert np.allclose(t_bed, t_paper * scale, atol=1e-2)  # the window compressed or stretched


@pytest.mark.parametrize("load", [0.5, 1.0, 2.0, 4.0])
def test_testbed_offered_load_is_the_requested_load(load):
    for seed in (0, 1):
        for workload in (1, 2):
            frame = themis_workload(workload, scale="testbed", seed=seed, load=load)
            assert workload_stats(frame)["offered_load"] == pytest.approx(load, rel=0.03)


def test_testbed_load_moves_the_window_not_the_work():
    light = themis_workload(2, scale="testbed", seed=0, load=0.5)
    heavy = themis_workload(2, scale="testbed", seed=0, load=4.0)
    assert (light["duration"] == heavy["duration"]).all()
    assert light.attrs["window_hours"] == pytest.approx(8 * heavy.attrs["window_hours"], rel=1e-3)
    with pytest.raises(OptionError, match="window_hours"):
        themis_workload(2, scale="testbed", load=1.0, window_hours=24.0)
    # the other scales keep rescaling the work at a fixed window
    small = themis_workload(2, scale="small", seed=0, load=1.0)
    assert small.attrs["window_hours"] == SCALES["small"]["window_hours"]


def test_testbed_spec_sweeps_loads_in_both_set_ups_as_contention_does():
    (full,) = [e for e in load_experiments("themis", "full") if e.key == "testbed"]
    (cont,) = [e for e in load_experiments("themis", "full") if e.key == "contention"]
    assert full.spec["params"] == {"load": [0.5, 1.0, 2.0, 4.0], "base_gpus": [64, 256]}
    assert set(full.spec["schedulers"]) == {"themis", "las", "srtf", "gandiva", "optimus", "slaq"}
    assert set(full.spec["traces"]) == {"themis-1", "themis-2"}
    assert full.spec["seeds"] == [0, 1, 2, 3, 4] and full.spec["fixed"]["scale"] == "testbed"
    for k, v in cont.spec["fixed"].items():  # the same decision clock, leases and placement
        if k not in ("scale", "contention"):
            assert full.spec["fixed"].get(k) == v, k


@pytest.mark.slow
def test_tiny_testbed_experiment_runs_end_to_end(tmp_path):
    from fairplace.runs.reproduce import make_figures

    (exp,) = [e for e in load_experiments("themis", "tiny") if e.key == "testbed"]
    out = run_experiment(exp, tmp_path, progress=False)
    assert out.status == "ok", out.status
    df = out.frames["summary"]
    assert (df["status"] == "ok").all() and len(df) == 2 * 4 * 2  # schedulers x loads x set-ups
    assert set(df["load"]) == {0.5, 1.0, 2.0, 4.0} and set(df["base_gpus"]) == {64, 256}
    assert set(df.loc[df["base_gpus"] == 64, "gpus"]) == {64}
    assert set(df.loc[df["base_gpus"] == 256, "gpus"]) == {256}
    assert {"load", "base_gpus"} <= set(out.frames["apps"].columns)
    table = themis_table(df)  # the report's THEMIS table: one row per set-up, load and scheduler
    assert len(table) == len(df) and {"base_gpus", "load"} <= set(table.columns)
    made, failed = make_figures(exp, out)
    assert failed == [] and len(made) == len(exp.figures)


def test_ratio_vs_load_figure_plots_best_baseline_over_themis_per_set_up():
    import matplotlib.pyplot as plt

    from fairplace.analysis.plots import max_rho_ratio_vs_load

    rows = []
    for gpus, load, themis, las, srtf in [(64, 0.5, 2.0, 2.0, 3.0), (64, 4.0, 1.5, 4.0, 3.0),
                                          (256, 0.5, 1.0, 1.5, 9.0), (256, 4.0, 2.0, 3.0, 3.0)]:  # fmt: skip
        for s, v in (("themis", themis), ("las", las), ("srtf", srtf)):
            rows.append(
                dict(base_gpus=gpus, load=load, trace="themis-2", seed=0, scheduler=s, max_rho=v)
            )
    ax = max_rho_ratio_vs_load(pd.DataFrame(rows), baselines=("las", "srtf"))
    curves = {
        tuple(np.round(line.get_ydata(), 3)) for line in ax.lines if len(line.get_xdata()) == 2
    }
    assert {(1.0, 2.0), (1.5, 1.5)} <= curves  # min(las, srtf) / themis at loads 0.5 and 4
    plt.close(ax.figure)


def test_testbed_claim_takes_the_worst_load_of_the_testbed_and_reports_both_set_ups():
    from fairplace.analysis.claims import max_rho_ratio_vs_load
    from fairplace.core.errors import DataError

    rows = []
    for gpus, load, themis, las in [(64, 0.5, 2.0, 1.0), (64, 4.0, 1.0, 3.0),
                                    (256, 0.5, 1.0, 0.5), (256, 4.0, 1.0, 9.0)]:  # fmt: skip
        for s, v in (("themis", themis), ("las", las)):
            rows.append(dict(base_gpus=gpus, load=load, trace="themis-2", seed=0, scheduler=s,
                             max_rho=v, status="ok"))  # fmt: skip
    res = {"summary": pd.DataFrame(rows)}
    value, detail = max_rho_ratio_vs_load(res, "themis", ["las"])
    assert value == pytest.approx(0.5)  # the testbed's load 0.5, not its better load 4 (3.0)
    assert "testbed (base_gpus 64)" in detail and "simulator (base_gpus 256)" in detail
    with pytest.raises(DataError):  # the judged set-up must have run
        max_rho_ratio_vs_load(res, "themis", ["las"], judged=32)
