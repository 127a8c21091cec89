"""One decision clock for every scheduler: decisions only at ticks
t0 + k * tick at or after an event, at most one per tick, for queue and allocating schedulers
alike; the baselines' 10-minute lease (THEMIS §6.2)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from fairplace.cli import main
from fairplace.core.errors import OptionError
from fairplace.instances.generators import grid_cluster
from fairplace.runs.sweep_schema import known
from fairplace.sim import Driver, DriverConfig, SimulationConfig, simulate, workload_from_trace
from fairplace.sim.leases import Leased
from fairplace.sim.schedulers import make_scheduler
from fairplace.solvers.placement.policies import ClusterState, make_policy

TICK = 60.0
SMALL = {"scale": "small", "n_apps": 6, "jobs_range": (4, 8), "contention": 2}
RUN = {"trace_options": SMALL, "progress": False, "placement_options": {"backfill": True}}


def _sim(scheduler, **kw):
    return simulate("themis-2", scheduler, "packed-sticky", **{**RUN, **kw})


def _ticks(x, t0=0.0):
    """The first tick at or after each time of ``x``."""
    return t0 + np.ceil((np.asarray(x, float) - t0) / TICK - 1e-9) * TICK


def _event_ticks(res) -> set[float]:
    """Ticks at or after an arrival, a released phase or a completion at which some job is active
    (released by then and not finished by then): where a scheduler without other events decides."""
    rel, fin = res.jobs["arrival"].to_numpy(), res.jobs["finish"].to_numpy()
    out = set()
    for T in np.unique(_ticks(np.concatenate([rel, fin]))).tolist():
        if np.any((rel <= T + 1e-6) & (fin > T + 1e-6)):
            out.add(T)
    return out


def test_themis_workloads_default_to_the_tick_and_the_lease():
    res = _sim("las")
    assert (res.config["decision_tick"], res.config["baseline_lease"]) == (60.0, 600.0)
    old = _sim("las", decision_tick=0, baseline_lease=0)
    assert (old.config["decision_tick"], old.config["baseline_lease"]) == (0.0, 0.0)
    themis = _sim("themis")
    assert themis.config["decision_tick"] == 60.0 and themis.config["baseline_lease"] == 0.0
    assert themis.config["round_length"] == 600.0  # its own lease, not the decision grid


@pytest.mark.parametrize("scheduler", ["las", "srtf", "themis"])
def test_decisions_only_on_ticks_at_most_one_per_tick(scheduler):
    t = _sim(scheduler).rounds["t"].to_numpy()
    np.testing.assert_allclose(t, _ticks(t), atol=1e-6)  # on the grid (t0 = 0: first arrival)
    assert np.all(np.diff(t) >= TICK - 1e-6)  # strictly later ticks: one decision per tick


def test_two_schedulers_decide_at_the_event_ticks():
    """Without priority changes (LAS' threshold out of reach, no baseline lease) and without lease
    expiries within the run (THEMIS' lease longer than the run), each decides exactly at the ticks
    holding an event of its run; both at every arrival tick."""
    las = _sim("las", baseline_lease=0, scheduler_options={"threshold": 1e12})
    themis = _sim("themis", scheduler_options={"lease": 1e7})
    for res in (las, themis):
        assert set(res.rounds["t"].round(6).tolist()) == _event_ticks(res)
    arrivals = set(_ticks(las.jobs["submit"].unique()).tolist())
    assert arrivals <= set(las.rounds["t"]) & set(themis.rounds["t"])
    # the old clock decides LAS on a 300-s grid instead, between events too
    old = _sim("las", decision_tick=0, baseline_lease=0, scheduler_options={"threshold": 1e12})
    assert not set(old.rounds["t"].round(6).tolist()) <= _event_ticks(old)


@pytest.mark.parametrize("scheduler", ["las", "themis"])
def test_a_phase_is_released_by_its_last_job_to_finish(scheduler):
    """Several jobs of a phase finish within one tick: the next phase arrives at the latest."""
    w2 = {**SMALL, "n_apps": 8, "jobs_range": None}
    jobs = _sim(scheduler, trace_options={k: v for k, v in w2.items() if v is not None}).jobs
    for _, g in jobs.groupby("app_id"):
        for p in range(int(g["phase"].max())):
            nxt, cur = g[g["phase"] == p + 1], g[g["phase"] == p]
            assert nxt["arrival"].min() == pytest.approx(cur["finish"].max(), abs=1e-6)


def _drive(rows, cfg, scheduler):
    df = pd.DataFrame(rows, columns=["job_id", "num_gpus", "submit_time", "duration", "t_iter"])
    df["model"], df["cls"], df["job_id"] = "m", "A", df["job_id"].astype(str)
    w = workload_from_trace(df, locality_penalty=1.7)
    cl = grid_cluster(1, 4, pm={"A": np.ones(4)})
    pol = make_policy("packed-sticky")
    return Driver(w, cl, {"A": np.ones(4)}, scheduler, pol, ClusterState, cfg).run()


def test_a_gpu_freed_mid_tick_goes_to_the_waiting_job_at_the_next_tick():
    rows = [(0, 4, 0.0, 100, 1.0), (1, 4, 10.0, 50, 1.0)]  # job 1 waits for job 0's 4 GPUs
    tick = _drive(rows, DriverConfig(tick=TICK, checkpoint=0.0, restart=0.0), make_scheduler("las"))
    grid = _drive(rows, DriverConfig(round_length=300.0), make_scheduler("las"))
    assert tick.finish[0] == 100.0 and tick.start[1] == 120.0  # not 300 s later
    assert grid.start[1] == 300.0
    assert tick.idle_waiting_gpu_seconds == pytest.approx(4 * 20.0)
    assert grid.idle_waiting_gpu_seconds == pytest.approx(4 * 200.0)


def test_idle_while_waiting_drops_against_the_300_s_grid():
    for s in ("las", "srtf"):
        new = _sim(s).summary["idle_gpu_hours_while_waiting"]
        old = _sim(s, decision_tick=0, baseline_lease=0).summary["idle_gpu_hours_while_waiting"]
        assert new < 0.5 * old, (s, new, old)


def test_the_lease_defers_a_preemption_to_its_end():
    rows = [(0, 4, 0.0, 2000, 1.0), (1, 4, 60.0, 100, 1.0)]  # job 1 is shorter: SRTF prefers it
    cfg = DriverConfig(tick=TICK, checkpoint=0.0, restart=0.0)
    free = _drive(rows, cfg, make_scheduler("srtf"))
    leased = _drive(rows, cfg, Leased(make_scheduler("srtf"), 600.0, TICK))
    assert free.start[1] == 60.0 and free.preemptions[0] == 1
    assert leased.start[1] == 600.0 and leased.preemptions[0] == 1  # at its lease end, not before
    # nobody waited at 600: job 0 kept running, its next lease goes on to 1200
    rows[1] = (1, 4, 660.0, 100, 1.0)
    late = _drive(rows, cfg, Leased(make_scheduler("srtf"), 600.0, TICK))
    assert late.start[1] == 1200.0 and late.preemptions[0] == 1


def _holdings_at_preemption(res) -> list[float]:
    """How long each preempted job had held its GPUs (since its last start) when preempted."""
    fin = dict(zip(res.jobs["job_id"], res.jobs["finish"], strict=True))
    since: dict[str, float] = {}
    out = []
    for t, alloc in zip(res.rounds["t"], res.rounds["allocation"], strict=True):
        now = set(json.loads(alloc))
        for j in set(since) - now:
            if fin[j] > t + 1e-6:  # left unfinished: preempted at t
                out.append(t - since[j])
            del since[j]
        for j in now - set(since):
            since[j] = t
    return out


def test_a_leased_baseline_never_preempts_before_the_lease_ends():
    kw = {"trace_options": {**SMALL, "contention": 4, "n_apps": 10}}  # SRTF preempts here
    leased = _holdings_at_preemption(_sim("srtf", **kw))
    free = _holdings_at_preemption(_sim("srtf", baseline_lease=0, **kw))
    assert leased and min(leased) >= 600.0 - 1e-6
    assert free and min(free) < 600.0  # without the lease it does preempt earlier


def test_the_options_are_checked_and_in_the_sweep_schema():
    for name in ("decision_tick", "baseline_lease"):
        for bad in (-1.0, float("inf"), "x"):
            with pytest.raises(OptionError, match=name):
                SimulationConfig(**{name: bad})
        assert name in known()
    with pytest.raises(OptionError, match="decision_tick"):
        DriverConfig(tick=-1.0)


def test_the_cli_sets_the_clock(capsys):
    base = ["simulate", "--trace", "themis-2", "--scheduler", "las", "--placement", "packed-sticky"]
    base += ["--trace-option", "scale=small", "--trace-option", "n_apps=4", "--json"]
    assert main([*base, "--decision-tick", "0", "--baseline-lease", "0"]) == 0
    old = json.loads(capsys.readouterr().out)
    assert main(base) == 0
    new = json.loads(capsys.readouterr().out)
    assert new["idle_gpu_hours_while_waiting"] < old["idle_gpu_hours_while_waiting"]
    assert main([*base, "--decision-tick", "-1"]) == 2
    assert "--decision-tick" in capsys.readouterr().err
