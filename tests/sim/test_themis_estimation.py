"""Errors in THEMIS' rho estimates (Fig. 17, ``fairplace.sim.themis.estimate_error``) and
the bid / arbiter overheads of §6.2.3 (``Themis.summary_extra``); the two experiments end to end."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

import fairplace
from fairplace.core.errors import OptionError
from fairplace.formulations.agents import RhoTable, free_gpus
from fairplace.formulations.compact import CompactApp, compact_apps
from fairplace.instances.generators import random_agent_auction
from fairplace.instances.workloads import themis_workload
from fairplace.runs.experiments import load_experiments, run_experiment
from fairplace.sim.schedulers import SCHEDULER_REGISTRY
from fairplace.sim.themis import OVERHEAD_KEYS, Themis
from fairplace.sim.themis.estimate_error import ERROR_KINDS, RhoError, misreport

TIMING = {"bid_ms_p50", "bid_ms_p95", "arbiter_ms_p50", "arbiter_ms_p95", "wall_seconds"}


def _table(rho=None) -> RhoTable:
    rho = (
        np.array([[[np.inf]] * 3, [[3.0], [3.3], [3.9]], [[2.0], [2.2], [2.6]]])
        if rho is None
        else rho
    )
    return RhoTable("a", np.ones(1), rho)


# ------------------------------------------------------------------ the transform


def test_random_factors_lie_in_the_band_and_are_seeded():
    err = RhoError(0.3, "random", seed=7)
    ks = np.array([err.factors(f"app{i}")[0] for i in range(200)])
    assert ((ks >= 0.7) & (ks <= 1.3)).all()
    assert ks.min() < 0.8 and ks.max() > 1.2  # the whole band is used, not one value
    assert all((err.factors(f"app{i}") == ks[i]).all() for i in range(200))  # per app, kept
    assert err.factors("app3", round_seed=5)[0] == ks[3]  # "random": the same in every auction
    again = RhoError(0.3, "random", seed=7)
    assert [again.factors(f"app{i}")[0] for i in range(200)] == ks.tolist()  # deterministic
    other = RhoError(0.3, "random", seed=8)
    assert [other.factors(f"app{i}")[0] for i in range(200)] != ks.tolist()
    per_round = RhoError(0.3, "random-round", seed=7)
    draws = {per_round.factors("app3", round_seed=r)[0] for r in range(20)}
    assert len(draws) == 20 and all(0.7 <= k <= 1.3 for k in draws)


def test_misreport_scales_the_remaining_time_only():
    """rho_hat = e0 + k (rho - e0): the elapsed share e0 stays, inf stays inf."""
    rho = np.array([np.inf, 0.5, 1.0, 4.0])
    out = misreport(rho, 0.5, 1.2)
    assert out[0] == np.inf and out[1] == 0.5
    assert out[2:] == pytest.approx(0.5 + 1.2 * (rho[2:] - 0.5))


def test_zero_error_leaves_tables_and_runs_untouched():
    t = _table()
    err = RhoError(0.0, "random", seed=3)
    assert err.table(t, 0.4, np.full(3, 1.0)) is t
    capps = (CompactApp(t),)
    assert err.bids(None, [None], capps, 0) is capps  # nothing read, nothing rebuilt
    assert Themis(rho_error=0.0).arbiter.rho_error is None  # the default is the truth
    assert Themis(rho_error=0.2).arbiter.rho_error == RhoError(0.2, "random", 0)


def test_strategic_exaggerates_the_placement_preference():
    """Every app: remaining time x (1 - X) on one machine, x (1 + X) across machines or racks."""
    err = RhoError(0.2, "strategic")
    assert err.factors("a").tolist() == pytest.approx([0.8, 1.2, 1.2])
    assert (err.factors("a") == err.factors("b", round_seed=9)).all()  # the same for every app
    t, e0 = _table(), 0.5
    out = err.table(t, e0, err.factors("a")).rho
    assert np.isinf(out[0]).all()
    for s, k in enumerate((0.8, 1.2, 1.2)):
        assert out[1:, s, 0] == pytest.approx(e0 + k * (t.rho[1:, s, 0] - e0))
    assert out[1, 0, 0] < t.rho[1, 0, 0] and out[1, 2, 0] > t.rho[1, 2, 0]


def test_a_factor_on_the_whole_table_would_change_nothing():
    """Why the error acts on the remaining time: PF maximises sum log 1/rho_i, so scaling one app's
    whole table drops out of the argmax and of every c_i (the module docstring)."""
    from fairplace.solvers.compact import CompactAuctionOptions, auction_on_offer

    inst = random_agent_auction(apps=3, machines=3, gpus_per_machine=4, seed=2)
    capps = compact_apps(inst)
    ids = [a.id for a in inst.agents]
    scaled = tuple(
        replace(c, table=replace(c.table, rho=c.table.rho * k))
        for c, k in zip(capps, (0.7, 1.0, 1.3), strict=True)
    )
    cfg, offer = CompactAuctionOptions(rounding="fractional"), free_gpus(inst)
    sols = [
        auction_on_offer(inst.cluster, offer, a, config=cfg).solution(inst.cluster, ids, "compact")
        for a in (capps, scaled)
    ]
    assert sols[0].pf_allocation == sols[1].pf_allocation
    for i in ids:
        assert sols[0].payments[i] == pytest.approx(sols[1].payments[i], abs=1e-6)


def test_the_ranking_reads_the_reported_current_rho():
    """Step 1 (the ARBITER asks every app for its current rho): e0 + k (rho - e0), inf stays inf."""
    from fairplace.formulations.agents import ftf_model
    from fairplace.sim.themis.outcome import AppState

    inst = random_agent_auction(apps=2, machines=2, gpus_per_machine=4, seed=1)
    cl, (a, b) = inst.cluster, inst.agents
    states = [AppState(a, rho=2.0, model=ftf_model(a, cl)), AppState(b, rho=math.inf)]
    err = RhoError(0.4, "random", seed=5)
    got = err.reported(cl, states, 0, lambda cluster, s: s.rho)
    e0 = RhoError.elapsed_share(cl, states[0])
    assert 0.0 < e0 < 2.0
    assert got[0].rho == pytest.approx(e0 + err.factors(a.id)[0] * (2.0 - e0))
    assert got[1].rho == math.inf and got[0].app is a


@pytest.mark.parametrize("bad", [{"rho_error": 1.0}, {"rho_error": -0.1}, {"rho_error": "x"}])
def test_bad_error_size_names_the_field(bad):
    with pytest.raises(OptionError, match="scheduler_options.rho_error"):
        Themis(**bad)


def test_bad_error_kind_names_the_field():
    with pytest.raises(OptionError, match="scheduler_options.rho_error_kind"):
        Themis(rho_error_kind="optimistic")


def test_the_options_are_declared_params():
    params = {p.name: p for p in SCHEDULER_REGISTRY.get("themis").params}
    assert params["rho_error"].default == 0.0 and params["rho_error"].constraint.contains(0.5)
    assert not params["rho_error"].constraint.contains(1.0)
    assert set(params["rho_error_kind"].constraint.values) == set(ERROR_KINDS)


# ------------------------------------------------------------------ in the simulator


def _run(sched=None, **opts):
    w = themis_workload(2, scale="small", n_apps=8, contention=2, seed=1)
    if sched is not None:
        return fairplace.simulate(w, sched, "packed-sticky", progress=False)
    return fairplace.simulate(w, "themis", "packed-sticky", progress=False, scheduler_options=opts)


def _same(a, b) -> bool:
    keys = set(a.summary) - TIMING
    return all(
        a.summary[k] == b.summary[k]
        or (a.summary[k] != a.summary[k] and b.summary[k] != b.summary[k])
        for k in keys
    ) and a.apps.equals(b.apps)


def test_errors_act_only_through_the_arbiter(monkeypatch):
    """X = 0.3 changes the run; with the two hooks (the reported ranking rho and the reported bids)
    made the identity it is the error-free run again: the metrics read the truth."""
    truth = _run()
    lied = _run(rho_error=0.3)
    assert lied.summary["auctions"] > 0 and np.isfinite(lied.summary["max_rho"])
    assert not _same(truth, lied)
    monkeypatch.setattr(RhoError, "bids", lambda self, cluster, part, capps, seed: capps)
    monkeypatch.setattr(RhoError, "reported", lambda self, cluster, states, seed, f: list(states))
    assert _same(truth, _run(rho_error=0.3))


def test_overheads_are_recorded_per_auction():
    sched = Themis()
    s = _run(sched).summary
    assert len(sched.auctions) == s["auctions"] > 0
    for _, bidders, offered, bid, arb in sched.auctions:
        assert bidders >= 1 and offered >= 1
        assert math.isfinite(bid) and math.isfinite(arb) and bid >= 0.0 and arb >= 0.0
    for k in OVERHEAD_KEYS:
        assert math.isfinite(s[k]) and s[k] >= 0.0, k
    assert s["bid_ms_p95"] >= s["bid_ms_p50"] >= 0.0
    assert s["arbiter_ms_p95"] >= s["arbiter_ms_p50"] >= 0.0
    assert s["mean_offered_gpus"] == pytest.approx(np.mean([a[2] for a in sched.auctions]))


# ------------------------------------------------------------------ the experiments


@pytest.mark.parametrize("key", ["estimation", "overheads"])
def test_tiny_experiment_runs_end_to_end(key, tmp_path):
    from fairplace.runs.reproduce import make_figures

    (exp,) = [e for e in load_experiments("themis", "tiny") if e.key == key]
    out = run_experiment(exp, tmp_path, progress=False)
    assert out.status == "ok", out.status
    df = out.frames["summary"]
    assert (df["status"] == "ok").all() and len(df) >= 1
    if key == "estimation":
        assert set(df["scheduler_options.rho_error"]) == {0.0, 0.3}
        assert set(df["scheduler_options.rho_error_kind"]) == {"random", "strategic"}
    else:
        assert (df["arbiter_ms_p95"] >= df["arbiter_ms_p50"]).all()
    made, failed = make_figures(exp, out)
    assert failed == [] and len(made) == len(exp.figures) == 2
