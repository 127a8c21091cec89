"""THEMIS §6.3's truth-telling experiment (Fig. 18) in the simulator's own THEMIS:
one lying app (``scheduler_options.liar`` with ``rho_error_kind="strategic"``), the paper's cluster
(one 8-GPU machine, the rest 2-GPU machines), the experiment end to end through reproduce's path."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest

import fairplace
from fairplace.analysis.claims import evaluate
from fairplace.core.errors import OptionError
from fairplace.formulations.agents import ftf_model
from fairplace.instances.generators import random_agent_auction
from fairplace.runs import strategyproofness as sp
from fairplace.runs.experiments import load_claims, load_experiments, run_experiment
from fairplace.sim.themis import Themis
from fairplace.sim.themis.arbiter import Arbiter
from fairplace.sim.themis.estimate_error import RhoError
from fairplace.sim.themis.outcome import AppState

TINY = sp.Setup(gpu_hours=2.0)  # 15 min on the big machine: a few leases per run


# ------------------------------------------------------------------ the liar in the mechanism


def _states(n=3, seed=4):
    inst = random_agent_auction(apps=n, machines=3, gpus_per_machine=4, seed=seed)
    cl = inst.cluster
    return cl, [AppState(a, model=ftf_model(a, cl)) for a in inst.agents]


def test_the_liar_alone_misreports_its_bids():
    """Every app bids (f = 0); with a liar, its own rho table changes and every other app's table is
    bitwise the one it reports when nobody lies."""
    cl, states = _states()
    liar = states[1].app.id
    free = [g.id for g in cl.gpus]
    truth = Arbiter(f=0.0).auction_round(cl, states, free, 0.0)
    lie = Arbiter(f=0.0, rho_error=RhoError(0.4, "strategic", liar=liar))
    told = lie.auction_round(cl, states, free, 0.0)
    assert set(truth.participants) == set(told.participants) == {s.app.id for s in states}
    for s in states:
        a, b = truth.tables[s.app.id].rho, told.tables[s.app.id].rho
        if s.app.id == liar:
            assert not np.array_equal(a, b)  # the lie: dense cheaper, spread dearer
            fin = np.isfinite(a[1:, 0]) & np.isfinite(a[1:, 1])
            assert (b[1:, 0][fin] <= a[1:, 0][fin]).all() and (b[1:, 1][fin] >= a[1:, 1][fin]).all()
        else:
            assert np.array_equal(a, b) and a.tobytes() == b.tobytes()
    # the bids as reported: the truthful apps' compact apps are the very same objects
    from fairplace.formulations.compact import compact_app

    offer = cl.indices(free)
    capps = tuple(compact_app(s.app, cl, offer, s.room, s.model) for s in states)
    out = RhoError(0.4, "strategic", liar=liar).bids(cl, states, capps, 0)
    assert [o is c for o, c in zip(out, capps, strict=True)] == [s.app.id != liar for s in states]


def test_the_liar_alone_misreports_its_current_rho_on_the_gpus_it_held():
    """The ranking: only the liar's current rho changes, priced with the spread of the GPUs its rho
    was priced on (``AppState.rho_spread``: its lease may have ended, ``held`` is then empty)."""
    cl, states = _states()
    liar = states[0].app.id
    states = [
        AppState(s.app, rho=2.0, model=s.model, rho_spread=1 if k == 0 else 0)
        for k, s in enumerate(states)
    ]
    err = RhoError(0.3, "strategic", liar=liar)
    got = err.reported(cl, states, 0, lambda cluster, s: s.rho)
    assert got[1] is states[1] and got[2] is states[2]
    e0 = RhoError.elapsed_share(cl, states[0])
    assert got[0].rho == pytest.approx(e0 + 1.3 * (2.0 - e0)) and got[0].rho > 2.0  # spread: dearer
    dense = err.reported(cl, [AppState(states[0].app, rho=2.0, model=states[0].model)], 0,
                         lambda cluster, s: s.rho)  # fmt: skip
    assert dense[0].rho == pytest.approx(e0 + 0.7 * (2.0 - e0))  # nothing held, no spread: dense


def test_liar_option_is_checked_and_reaches_the_arbiter():
    assert Themis(rho_error=0.2, rho_error_kind="strategic", liar="a3").arbiter.rho_error == (
        RhoError(0.2, "strategic", 0, "a3")
    )
    assert Themis(liar="a3").arbiter.rho_error is None  # X = 0: the truth
    for bad in (3, "", ["a3"]):
        with pytest.raises(OptionError, match="scheduler_options.liar"):
            Themis(rho_error=0.2, liar=bad)
    assert RhoError(0.2, "random", liar="a1").errs("a1") and not RhoError(
        0.2, "random", liar="a1"
    ).errs("a2")
    assert RhoError(0.2, "random").errs("any")  # no liar: every app errs (Fig. 17)


# ------------------------------------------------------------------ the set-up


def test_the_cluster_is_the_papers():
    cl = sp.cluster()
    assert len(cl) == 64
    sizes = Counter(np.bincount(cl.machine_index).tolist())
    assert sizes == {8: 1, 2: 28}  # one 8-GPU machine, the rest 2-GPU machines
    assert len(set(cl.rack_index.tolist())) == 1


def test_the_apps_are_identical_and_the_liar_is_drawn():
    df = sp.workload()
    assert len(df) == df["app_id"].nunique() == 8
    same = df.drop(columns=["job_id", "app_id"])
    assert (same.nunique() == 1).all()  # the same job, arrival and locality for every app
    assert df["num_gpus"].iloc[0] == 8 and df["locality"].iloc[0] > 1.0  # network-intensive
    liars = {sp.liar_of(sp.Setup(), s) for s in range(20)}
    assert len(liars) >= 4 and liars <= set(df["app_id"])  # not always the same app
    with pytest.raises(OptionError, match="gpu_hours"):
        sp.Setup(gpu_hours=0.0)
    with pytest.raises(OptionError, match="nope"):
        sp.strategyproofness(xs=[0], seeds=[0], nope=1)


def test_x_zero_is_the_truthful_run():
    """X = 0 with a liar named is the run without any error: the same JCT for every app."""
    liar = sp.liar_of(TINY, 0)
    lying0 = sp.simulate(TINY, 0.0, seed=0, liar=liar).apps.set_index("app_id")["jct"]
    truth = fairplace.simulate(
        sp.workload(TINY), "themis", "packed-sticky", cluster=sp.cluster(TINY), seed=0,
        scheduler_options={"f": TINY.f}, progress=False,
    ).apps.set_index("app_id")["jct"]  # fmt: skip
    pd.testing.assert_series_equal(lying0, truth)
    assert (truth > 0).all()


# ------------------------------------------------------------------ the experiment


def test_experiment_table_and_gain():
    df = sp.strategyproofness(xs=[50], seeds=[0], setup=TINY)  # X = 0 is added
    assert df["X"].tolist() == [0, 50]
    cols = ["X", "seed", "liar", "liar_completion", "others_avg_completion", "liar_gain"]
    assert set(cols) <= set(df.columns)
    assert (df["liar_completion"] > 0).all() and (df["others_avg_completion"] > 0).all()
    base, lied = df["liar_completion"]
    assert df["liar_gain"].tolist() == pytest.approx([0.0, 100 * (base - lied) / base])
    assert df["liar"].nunique() == 1  # the same liar at every X of a seed
    synthetic = pd.DataFrame({"X": [0, 10, 40], "liar_completion": [100.0, 101.0, 130.0]})
    assert sp.tipping_point(synthetic) == 40.0
    assert sp.tipping_point(synthetic.iloc[:2]) is None


def test_tiny_size_runs_through_reproduce_and_the_claims_read_it(tmp_path):
    from fairplace.runs.reproduce import _summary_table, make_figures

    (exp,) = [e for e in load_experiments("themis", "tiny") if e.key == "strategyproofness"]
    out = run_experiment(exp, tmp_path, progress=False)
    assert out.status == "ok", out.status
    df = out.frames["strategyproofness"]
    assert df["X"].tolist() == [0, 50] and (df["liar_completion"] > 0).all()
    made, failed = make_figures(exp, out)
    assert failed == [] and len(made) == 1
    title, table = _summary_table(exp, out)
    assert "liar" not in table.columns and "liar_completion" in table.columns
    claims = {c["id"]: c for c in load_claims("themis")}
    for cid in ("sp-lying-does-not-help", "sp-tipping-point"):
        row = evaluate(claims[cid], out.frames)
        assert row["outcome"] != "not run", row
        assert isinstance(row["ours"], str) and row["ours"]
    gain = evaluate(claims["sp-lying-does-not-help"], out.frames)
    assert math.isfinite(float(gain["ours"].split()[0].rstrip("%")))
