"""The PAL artifact replayed cell by cell (``--setup pal-artifact``), its recycled jobs, and set-ups
that never override what the caller gave explicitly."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fairplace
from fairplace.cli import main
from fairplace.core.errors import OptionError, TraceError
from fairplace.instances.traces import load_trace, recycled_jobs
from fairplace.sim.config import SimulationConfig
from fairplace.sim.setups import SETUP_TIES, SETUPS, SOURCES, markdown_table, setup_options

CELLS = pd.read_csv(Path(__file__).parents[1] / "data" / "pal-artifact-avg-jct.csv", comment="#")
ROOT = Path(__file__).parents[2]


def _cell_param(r):
    slow = r.workload == 2  # W2 runs ~10x longer (a 583,000 s packed-sticky makespan)
    marks = [pytest.mark.slow] if slow else []
    return pytest.param(r.workload, r.placement, r.avg_jct, r.source, marks=marks,
                        id=f"W{r.workload}-{r.placement}-{r.source}")  # fmt: skip


@pytest.mark.parametrize(
    "workload,placement,avg_jct,source", [_cell_param(r) for r in CELLS.itertuples()]
)
def test_artifact_cells_are_replayed_exactly(workload, placement, avg_jct, source, capsys):
    if workload == 8:  # the held-out trace, through the CLI as a user runs it
        argv = ["simulate", "--trace", "workload-8", "--placement", placement]
        assert main([*argv, "--setup", "pal-artifact", "--json"]) == 0
        summary = json.loads(capsys.readouterr().out)
    else:
        res = fairplace.simulate(f"workload-{workload}", "fifo", placement, setup="pal-artifact")
        summary = res.summary
    assert summary["jobs"] == 160  # the trace's jobs only, not the recycled copies
    assert summary["avg_jct"] == pytest.approx(avg_jct, rel=1e-6)


# ---- recycled jobs ------------------------------------------------------------------------------


def test_recycled_arrivals_follow_the_artifacts_own_steps():
    """Independent of fairplace's code: the artifact's poisson_next_arrival_time after
    random.seed(1), chained from the last trace job, copies of trace jobs 0, 1, 2, ..."""
    f = load_trace("workload-3")
    state = random.getstate()
    try:
        random.seed(1)
        last, want = float(f["submit_time"].iloc[-1]), []
        for _ in range(5):
            last += math.ceil(-math.log(1.0 - random.random()) / 2.0 * 60 * 60)
            want.append(last)
    finally:
        random.setstate(state)
    got = recycled_jobs(f, 165, 2.0, seed=1)
    assert got["submit_time"].iloc[:5].tolist() == want
    assert got["job_id"].iloc[:2].tolist() == ["r160", "r161"]
    for col in ("num_gpus", "duration", "model"):
        assert got[col].iloc[163] == f[col].iloc[3]  # job 323 copies trace job 3 (323 mod 160)
    # prefix-stable: more copies never move the earlier ones
    pd.testing.assert_frame_equal(recycled_jobs(f, 40, 2.0).iloc[:10], recycled_jobs(f, 10, 2.0))
    with pytest.raises(TraceError, match="jobs_per_hour"):
        recycled_jobs(f, 3, 0.0)


def test_recycled_jobs_cannot_delay_fifo_packed_sticky_but_reach_pal():
    """FIFO + sticky packing never lets a later arrival ahead; PAL/PM-First sort the queue's head by
    class, so a recycled class-A job can take a trace job's GPUs (the artifact's W3 job 47)."""
    kw = dict(setup="pal-artifact", progress=False)
    off = dict(recycle_jobs_per_hour=0.0)
    for placement, same in (("packed-sticky", True), ("pal", False)):
        on = fairplace.simulate("workload-3", "fifo", placement, **kw)
        plain = fairplace.simulate("workload-3", "fifo", placement, **kw, **off)
        assert on.summary["recycled_jobs"] > 0 and "recycled_jobs" not in plain.summary
        assert (on.summary["avg_jct"] == plain.summary["avg_jct"]) is same
        assert len(on.jobs) == len(plain.jobs) == 160


def test_the_recycled_stream_is_cut_exactly():
    """A trace whose last job outlasts the first batch of copies: the run is repeated with more
    copies until the last one arrives after every trace job has finished, and equals a run with
    far more copies than needed (through the driver directly)."""
    from dataclasses import replace

    from fairplace.instances.variability import make_cluster
    from fairplace.sim import Driver, DriverConfig, workload_from_trace
    from fairplace.sim.resolve import binned_scores, models_table
    from fairplace.sim.schedulers import make_scheduler
    from fairplace.solvers.placement.policies import ClusterState, make_policy

    f = load_trace("workload-1").iloc[:12].reset_index(drop=True)
    f.loc[11, "duration"] = 120_000  # vgg19: a 10-hour tail
    res = fairplace.simulate(
        f, "fifo", "pm-first", gpus=16, recycle_jobs_per_hour=6.0, progress=False
    )
    # the first batch (12 copies) arrives before the tail ends: the run was repeated with more
    assert recycled_jobs(f, 12, 6.0)["submit_time"].max() < res.jobs["finish"].max()
    assert res.summary["recycled_jobs"] > 0

    full = pd.concat([f, recycled_jobs(f, 300, 6.0)], ignore_index=True)
    w = workload_from_trace(full, models_table(full["model"]), max_gpus=16)
    w = replace(w, tracked=np.arange(len(w)) < len(f))
    cluster = make_cluster("longhorn-runs", 4, 4, seed=0)
    scores = binned_scores(cluster, sorted(set(w.cls)), "silhouette", 0)
    tr = Driver(w, cluster, scores, make_scheduler("fifo"), make_policy("pm-first"),
                ClusterState, DriverConfig()).run()  # fmt: skip
    np.testing.assert_array_equal(res.jobs["finish"].to_numpy(), tr.finish[: len(f)])
    assert np.isnan(tr.finish[len(f) :]).any()  # the far tail never ran to completion


def test_recycling_needs_a_trace_and_a_valid_rate(capsys):
    with pytest.raises(OptionError, match="recycle_jobs_per_hour"):
        SimulationConfig(recycle_jobs_per_hour=-1.0)
    with pytest.raises(OptionError, match="recycle_jobs_per_hour"):
        fairplace.simulate("workload-1", recycle_jobs_per_hour=2.0, rho_variant="isolated")
    argv = ["simulate", "--trace", "workload-1", "--recycle-jobs-per-hour", "-2", "--json"]
    assert main(argv) == 2
    assert "--recycle-jobs-per-hour" in capsys.readouterr().err


# ---- set-ups: sources, explicit options --------------------------------------------------------


def test_every_setup_value_has_a_source_and_the_docs_print_them():
    assert set(setup_options("pal-paper")) == set(setup_options("pal-artifact"))
    for s in SETUPS:
        for k in setup_options(s):
            assert SOURCES[s][k].strip()
        for p in SETUP_TIES[s]:
            assert SOURCES[s][f"placement_options.ties.{p}"].strip()
    assert markdown_table() in (ROOT / "docs" / "pal-setups.md").read_text()


#: small enough to run every option twice (API, CLI): the first 12 jobs of workload-1
def _small(tmp_path) -> Path:
    p = tmp_path / "small.csv"
    load_trace("workload-1").iloc[:12].to_csv(p, index=False)
    return p


#: option -> (library default given explicitly, its CLI flags); pal-artifact sets another value
EXPLICIT = {
    "profile": ("longhorn-runs", ["--profile", "longhorn-runs"]),
    "classes": ("paper", ["--classes", "paper"]),
    "binning": ("silhouette", ["--binning", "silhouette"]),
    "outlier_side": ("both", ["--outlier-side", "both"]),
    "locality_model": ("constant", ["--locality-model", "constant"]),
    "locality_penalty": (1.7, ["--locality-penalty", "1.7"]),
    "round_length": (300.0, ["--round", "300"]),
    "restart": (35.0, ["--restart-cost", "35"]),
    "grid_origin": ("first-arrival", ["--grid-origin", "first-arrival"]),
    "stamping": ("exact", ["--stamping", "exact"]),
    "iter_times": ("rounded", ["--iter-times", "rounded"]),
    "recycle_jobs_per_hour": (0.0, ["--recycle-jobs-per-hour", "0"]),
    "recycle_seed": (1, ["--recycle-seed", "1"]),
}


def _config_via_cli(tmp_path, argv) -> dict:
    out = tmp_path / "out"
    assert main(["simulate", "--trace", str(_small(tmp_path)), *argv, "--out", str(out)]) == 0
    return json.loads((out / "summary.json").read_text())["config"]


@pytest.mark.parametrize("setup", list(SETUPS))
@pytest.mark.parametrize("option", list(EXPLICIT))
def test_an_explicit_option_wins_over_the_setup_even_at_the_default(tmp_path, option, setup):
    value, flags = EXPLICIT[option]
    kw = {option: value, "checkpoint": 10.0} if option == "restart" else {option: value}
    res = fairplace.simulate(
        _small(tmp_path), "fifo", "pm-first", setup=setup, progress=False, **kw
    )
    for k, v in kw.items():
        assert res.config[k] == v, k
    cfg = _config_via_cli(tmp_path, ["--placement", "pm-first", "--setup", setup, *flags])
    assert cfg[option] == value


@pytest.mark.parametrize("setup", list(SETUPS))
def test_without_explicit_options_the_setup_applies(tmp_path, setup):
    res = fairplace.simulate(_small(tmp_path), "fifo", "pm-first", setup=setup, progress=False)
    for option in EXPLICIT:
        assert res.config[option] == setup_options(setup)[option], option
    assert res.config["placement_options"] == {"ties": SETUP_TIES[setup]["pm-first"]}
    cfg = _config_via_cli(tmp_path, ["--placement", "pm-first", "--setup", setup])
    assert {k: cfg[k] for k in EXPLICIT} == {k: setup_options(setup)[k] for k in EXPLICIT}


@pytest.mark.parametrize("placement,ties", [("pm-first", "machine"), ("pal", "fewest-machines")])
def test_an_explicit_tie_break_wins_over_the_artifact_setup(tmp_path, placement, ties):
    res = fairplace.simulate(_small(tmp_path), "fifo", placement, setup="pal-artifact",
                             placement_options={"ties": ties}, progress=False)  # fmt: skip
    assert res.config["placement_options"] == {"ties": ties}
    cfg = _config_via_cli(
        tmp_path,
        ["--placement", placement, "--setup", "pal-artifact", "--placement-option", f"ties={ties}"],
    )
    assert cfg["placement_options"] == {"ties": ties}
    plain = _config_via_cli(tmp_path, ["--placement", placement, "--setup", "pal-artifact"])
    assert plain["placement_options"] == {"ties": SETUP_TIES["pal-artifact"][placement]}


def test_an_explicit_with_replacement_wins_too(tmp_path):
    """The CLI flag can only switch it on; through the API an explicit False wins over the set-up."""
    kw = dict(setup="pal-artifact", profile="longhorn-runs", progress=False)
    res = fairplace.simulate(_small(tmp_path), "fifo", "pm-first", with_replacement=False, **kw)
    assert res.config["with_replacement"] is False
    assert fairplace.simulate(_small(tmp_path), "fifo", "pm-first", **kw).config["with_replacement"]


def test_explicit_options_are_tracked_by_name_not_value():
    cfg = SimulationConfig(stamping="exact", setup="pal-artifact")
    assert cfg.given == {"stamping", "setup"}
    assert cfg.with_overrides(seed=2).given == {"stamping", "setup", "seed"}
    assert SimulationConfig() == SimulationConfig(stamping="exact")  # equal values, other givens
    res = fairplace.simulate("workload-4", "fifo", "pm-first", config=cfg, progress=False)
    assert res.config["stamping"] == "exact" and res.config["grid_origin"] == "zero"
    with pytest.raises(OptionError, match="nope"):
        SimulationConfig(nope=1)
