"""PAL artifact replay: the seeded cluster draw, grid origin, completion stamping, PM-First's
per-level ties, the ``pal-artifact`` set-up and artifact-format traces from any path."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

import fairplace
from fairplace.core.domain import Job
from fairplace.core.errors import OptionError
from fairplace.instances.generators import grid_cluster
from fairplace.instances.variability import data_file, make_cluster
from fairplace.sim import Driver, DriverConfig, workload_from_trace
from fairplace.sim.schedulers import make_scheduler
from fairplace.solvers.placement.policies import ClusterState, make_policy

FIXTURE = Path(__file__).parents[1] / "data" / "longhorn-artifact-64gpu.csv"
COLS = {c: f"PerfVar_class{c}" for c in "ABCD"}
FILES = {"A": "resnet50", "B": "bert", "C": "bert", "D": "pagerank"}


def test_artifact_draw_equals_the_stored_fixture():
    want = pd.read_csv(FIXTURE, comment="#")
    cl = make_cluster("longhorn-artifact", 16, 4, classes="artifact")
    assert len(cl) == 64 and list(want["machine"]) == list(cl.machine_index)
    for c, col in COLS.items():
        np.testing.assert_array_equal(cl.pm_vector(c), want[col].to_numpy())
    # the simulation seed does not move the artifact's draw; the paper's classes keep A, B, D
    other = make_cluster("longhorn-artifact", 16, 4, classes="paper", seed=7)
    np.testing.assert_array_equal(other.pm_vector("C"), want[COLS["D"]].to_numpy())


def test_artifact_draw_first_gpus_by_hand():
    """Independent of fairplace's reader: the artifact's own steps, with the global ``random``."""
    perf = {
        c: pd.read_csv(data_file("variability", "longhorn", f"{f}.csv").open())["perf"]
        for c, f in FILES.items()
    }
    state = random.getstate()
    try:
        random.seed(42)
        hand = []
        for _gpu in range(3):  # GPU 0, 1, 2; classes in profiles.json order
            row = {}
            for c in "ABCD":
                s = (
                    perf[c] / perf[c].median()
                )  # a pandas Series with a RangeIndex, as in the artifact
                row[c] = random.choice(s)
            hand.append(row)
    finally:
        random.setstate(state)
    want = pd.read_csv(FIXTURE, comment="#")
    for g, row in enumerate(hand):
        for c, v in row.items():
            assert want.loc[g, COLS[c]] == v
    # the slow ResNet-50 GPU the headline rests on (the artifact's draw: one GPU at 2.83x)
    assert want[COLS["A"]].max() == pytest.approx(2.8279, abs=1e-4)
    assert (want[COLS["A"]] > 1.5).sum() == 1


# ---- timing: grid origin and completion stamping on hand-built traces -------------------------


def _run(rows, cfg):
    df = pd.DataFrame(rows, columns=["job_id", "num_gpus", "submit_time", "duration", "t_iter"])
    df["model"], df["cls"], df["job_id"] = "m", "A", df["job_id"].astype(str)
    cl = grid_cluster(1, 4, pm={"A": np.ones(4)})
    w = workload_from_trace(df, locality_penalty=1.7)
    pol = make_policy("packed-sticky")
    return Driver(w, cl, {"A": np.ones(4)}, make_scheduler("fifo"), pol, ClusterState, cfg).run()


TWO_JOBS = [(0, 2, 118.0, 100, 1.0), (1, 4, 150.0, 50, 1.0)]


def test_grid_origin_moves_the_decisions_only():
    first = _run(TWO_JOBS, DriverConfig(round_length=300.0))
    zero = _run(TWO_JOBS, DriverConfig(round_length=300.0, grid_origin="zero"))
    # first arrival: decisions at 118, 418; zero: at 300, 600
    assert list(first.start) == [118.0, 418.0]
    assert list(first.finish) == [218.0, 468.0]
    assert list(zero.start) == [300.0, 600.0]
    assert list(zero.finish) == [400.0, 650.0]
    np.testing.assert_array_equal(first.run, zero.run)  # same work at the same speed
    np.testing.assert_array_equal(first.release, zero.release)


def test_round_end_stamping_changes_only_completion_times():
    exact = _run(TWO_JOBS, DriverConfig(round_length=300.0))
    end = _run(TWO_JOBS, DriverConfig(round_length=300.0, stamping="round-end"))
    assert list(end.finish) == [418.0, 718.0]  # the end of the round each job finished in
    np.testing.assert_array_equal(exact.start, end.start)  # GPUs are freed at the same decisions
    for k in ("held", "run", "gpu_seconds", "done_iters", "migrations", "preemptions"):
        np.testing.assert_array_equal(getattr(exact, k), getattr(end, k))
    both = _run(
        TWO_JOBS, DriverConfig(round_length=360.0, grid_origin="zero", stamping="round-end")
    )
    assert list(both.finish) == [720.0, 1080.0]  # starts 360, 720 (artifact timing)


def test_a_completion_on_the_grid_is_stamped_there():
    end = _run([(0, 4, 0.0, 300, 1.0)], DriverConfig(round_length=300.0, stamping="round-end"))
    assert list(end.finish) == [300.0]


def test_timing_options_are_validated():
    with pytest.raises(OptionError, match="grid_origin"):
        DriverConfig(grid_origin="midnight")
    with pytest.raises(OptionError, match="stamping"):
        DriverConfig(stamping="later")


# ---- PM-First ties --------------------------------------------------------------------------


def test_pm_first_level_ties_pick_the_artifacts_gpus():
    # binned class-A scores: machine 0 = [1, 1, 1, 2], machine 1 = [1, 1, 2, 2], all free; a 2-GPU
    # job. Every level-1 GPU ties. Per machine all count 4 free (|4-2| = 2 everywhere): index order,
    # GPUs 0, 1. Per level (the artifact's groupby(['sf', 'Node_ID'])): machine 0 has 3 (|3-2| = 1),
    # machine 1 has 2 (|2-2| = 0): GPUs 4, 5, the artifact's sort by (sf, locality_score).
    cl = grid_cluster(2, 4, pm={"A": np.ones(8)})
    scores = {"A": np.array([1.0, 1, 1, 2, 1, 1, 2, 2])}
    job = [Job("j", 2, "A")]
    by_machine = make_policy("pm-first").place(ClusterState(cl, scores), job)
    by_level = make_policy("pm-first", ties="level").place(ClusterState(cl, scores), job)
    assert by_machine.allocation["j"] == (0, 1)
    assert by_level.allocation["j"] == (4, 5)
    with pytest.raises(OptionError, match="ties"):
        make_policy("pm-first", ties="artifact")


# ---- set-ups and defaults -------------------------------------------------------------------


def test_default_setup_is_the_papers_per_run_sampling():
    res = fairplace.simulate("workload-1", "fifo", "packed-sticky", progress=False)
    assert res.config["profile"] == "longhorn-runs"
    assert res.config["locality_model"] == "constant" and res.config["locality_penalty"] == 1.7
    assert not res.config["with_replacement"]


def test_pal_artifact_setup_sets_every_option_and_explicit_options_win():
    res = fairplace.simulate("workload-1", "fifo", "pm-first", setup="pal-artifact", progress=False)
    c = res.config
    assert (c["profile"], c["classes"], c["binning"], c["round_length"]) == (
        "longhorn-artifact",
        "artifact",
        "artifact",
        360.0,
    )
    assert (c["grid_origin"], c["stamping"], c["restart"], c["checkpoint"]) == (
        "zero",
        "round-end",
        0.0,
        0.0,
    )
    assert c["with_replacement"] and c["setup"] == "pal-artifact"
    # round-end stamps: every completion lies on the 360 s grid from 0
    assert np.allclose(np.mod(res.jobs["finish"].to_numpy(), 360.0), 0.0)
    mine = fairplace.simulate(
        "workload-1",
        "fifo",
        "pm-first",
        setup="pal-artifact",
        round_length=300.0,
        placement_options={"ties": "machine"},
        progress=False,
    )
    assert mine.config["round_length"] == 300.0 and mine.config["profile"] == "longhorn-artifact"
    with pytest.raises(OptionError, match="set-up"):
        fairplace.simulate("workload-1", setup="nope", progress=False)


def test_artifact_format_trace_is_accepted_from_any_path(tmp_path):
    src = data_file("traces", "sia-philly", "workload-1.csv")
    dst = tmp_path / "some where" / "my-trace.csv"
    dst.parent.mkdir()
    with src.open("rb") as fh, open(dst, "wb") as out:
        shutil.copyfileobj(fh, out)
    kw = dict(setup="pal-artifact", progress=False)
    a = fairplace.simulate(str(dst), "fifo", "packed-sticky", **kw)
    b = fairplace.simulate("workload-1", "fifo", "packed-sticky", **kw)
    assert a.summary["avg_jct"] == b.summary["avg_jct"]
    assert a.summary["jobs"] == 160


# ---- distribution over cluster draws --------------------------------------------------------


def test_draw_gains_pair_policy_and_baseline_on_the_same_draw():
    from fairplace.analysis.plots import jct_draws
    from fairplace.analysis.tables import draw_gains

    rows = []
    for seed in range(4):  # draw k: baselines 100 (sticky) / 200 (non-sticky) x (1 + k)
        for p, v in {"packed-sticky": 100, "packed-non-sticky": 200, "pal": 50 + 10 * seed}.items():
            rows.append(
                {
                    "trace": "w",
                    "seed": seed,
                    "placement": p,
                    "avg_jct": v * (1 + seed),
                    "status": "ok",
                }
            )
    t = draw_gains(pd.DataFrame(rows)).set_index(["placement", "baseline"])
    # paired: pal / sticky = (50 + 10k) / 100 -> gains 50, 40, 30, 20 %; median 35, IQR 27.5..42.5
    assert t.loc[("pal", "packed-sticky"), "median_%"] == 35.0
    assert t.loc[("pal", "packed-sticky"), "q25_%"] == 27.5
    assert t.loc[("pal", "packed-sticky"), "q75_%"] == 42.5
    assert t.loc[("pal", "packed-non-sticky"), "median_%"] == 67.5
    assert t.loc[("pal", "packed-sticky"), "draws"] == 4
    assert t.loc[("packed-non-sticky", "packed-sticky"), "median_%"] == -100.0
    assert ("packed-sticky", "packed-non-sticky") not in t.index  # the inverse is not repeated
    axes = jct_draws(pd.DataFrame(rows))
    assert len(axes) == 2 and all(ax.has_data() for ax in axes)
    plt.close(axes[0].figure)


def test_cli_setup_flag_matches_the_api(capsys):
    import json

    from fairplace.cli import main

    argv = ["simulate", "--trace", "workload-1", "--placement", "packed-sticky", "--json"]
    assert main([*argv, "--setup", "pal-artifact"]) == 0
    cli = json.loads(capsys.readouterr().out)
    api = fairplace.simulate("workload-1", "fifo", "packed-sticky", setup="pal-artifact")
    assert cli["avg_jct"] == api.summary["avg_jct"]
    assert main([*argv, "--setup", "nope"]) == 2
    assert "set-up" in capsys.readouterr().err
