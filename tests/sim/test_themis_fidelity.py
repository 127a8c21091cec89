"""THEMIS fidelity — the headline T_id, the agent's successive-halving model, real Optimus
vs the SRPT oracle, the strategy-proofness set-up and claim outcomes."""

import math

import numpy as np
import pandas as pd
import pytest

import fairplace
from fairplace.analysis.claims import check_claim, evaluate, outcome
from fairplace.core.errors import DataError
from fairplace.formulations.ftf import (
    FTFModel,
    IdealTime,
    JobInfo,
    SuccessiveHalving,
    phase_time,
)
from fairplace.instances.generators import grid_cluster
from fairplace.sim.protocols import SchedView
from fairplace.sim.schedulers import make_scheduler


def _frame(rows):
    df = pd.DataFrame(rows)
    df.attrs["name"] = "t"
    return df


def _job(jid, app, phase, gpus, iters, t_iter, submit=0.0):
    return {
        "job_id": jid,
        "num_gpus": gpus,
        "submit_time": submit,
        "duration": iters,
        "model": "ResNet-50",
        "app_id": app,
        "phase": phase,
        "t_iter": t_iter,
        "cls": "A",
        "locality": 1.5,
        "locality_rack": 2.0,
    }


def test_lone_app_rho_is_one_under_headline_t_id():
    """A successive-halving app alone on an empty cluster: rho within 5% of 1 (headline T_id)."""
    rows = []
    for p, (n, d) in enumerate([(4, 1), (2, 2), (1, 4)]):
        for j in range(n):  # every phase: 1 h on its own GPUs, 4 GPUs in all
            rows.append(_job(f"p{p}j{j}", "A", p, d, 3600.0, 1.0 / d * d))
    flat = grid_cluster(4, 4, pm={"A": np.ones(16)})  # no GPU variability: THEMIS' model
    res = fairplace.simulate(
        trace=_frame(rows), scheduler="themis", placement="packed-sticky", cluster=flat, seed=0
    )
    rho = float(res.apps["rho_themis"].iloc[0])
    assert rho == pytest.approx(1.0, rel=0.05)
    # the literal Eq. 2 form gives the same here (N_avg = 1), a labelled variant
    assert "rho_literal" in res.apps


def test_agent_bids_match_hand_computed_successive_halving():
    """§4.3.3's app (jobs 80/100/100/120 s per iteration, phases 4 x 8, 2 x 16, 1 x 36 iterations)
    with per-phase job demand 1, 2, 4 GPUs, on 16 GPUs with N = 4 (T_id = 2500 s)."""
    jobs = tuple(JobInfo(8, t) for t in (80.0, 100.0, 100.0, 120.0))
    sh = SuccessiveHalving(jobs, ((4, 8.0, 1), (2, 16.0, 2), (1, 36.0, 4)))
    per_phase = ((3200.0, 4), (3200.0, 4), (3600.0, 4))  # (W_p, total demand of the phase)
    m = FTFModel(sh, d_max=1, t_id=IdealTime("themis", n_avg=4, phases=per_phase))
    assert m.ideal(16) == pytest.approx(800 + 800 + 900)  # W_p / min(16 / 4, d_p)
    # 2 GPUs: 4 jobs serialised 2 at a time (120+80 | 100+100) x 8 = 1600; 2 jobs x 1 GPU x 16 it
    # at the median 100 s = 1600; 1 job on 2 of its 4 GPUs: 100 x 36 / 2 = 1800 (the paper's 5000)
    assert m.t_shared(2) == pytest.approx(5000.0)
    # 16 GPUs: phase demands cap the jobs at 1, 2, 4 GPUs: 120 x 8 + 100 x 16 / 2 + 100 x 36 / 4
    assert m.t_shared(16) == pytest.approx(960 + 800 + 900)
    assert m.rho(16, 16) == pytest.approx(2660 / 2500)
    # the old model capped every phase at the current phase's demand (1 GPU): much slower
    old = SuccessiveHalving(jobs, ((4, 8.0), (2, 16.0), (1, 36.0)))
    assert FTFModel(old, d_max=1).t_shared(16) == pytest.approx(960 + 1600 + 3600)


def test_each_job_charged_its_own_spread():
    """Two 4-GPU jobs on 8 GPUs over two 4-GPU machines run within a machine each (no L);
    one 8-GPU job on the same bundle pays the cross-machine penalty."""
    two = [JobInfo(10, 1.0), JobInfo(10, 1.0)]
    loc = (1.0, 1.5, 2.0)
    assert phase_time(two, 8, 4, spread_level=1, locality=loc, machine_gpus=4) == pytest.approx(
        10 / 4
    )
    assert phase_time(two, 8, 4, spread_level=1, locality=loc) == pytest.approx(10 * 1.5 / 4)
    one = [JobInfo(10, 1.0)]
    assert phase_time(one, 8, 8, spread_level=1, locality=loc, machine_gpus=4) == pytest.approx(
        10 * 1.5 / 8
    )


def _view(rem, demand, t_iter, arrival, gpus):
    n = len(rem)
    return SchedView(
        t=0.0, active=np.arange(n), arrival=np.asarray(arrival, float),
        demand=np.asarray(demand), remaining=np.asarray(rem, float),
        total=np.asarray(rem, float), t_iter=np.asarray(t_iter, float),
        attained=np.zeros(n), running=np.zeros(n, bool), app=np.arange(n), gpus=gpus,
        round_length=300.0,
    )  # fmt: skip


class _W:
    def __init__(self, demand, t_iter):
        self.demand = np.asarray(demand)
        self.t_iter = np.asarray(t_iter, float)
        self.l_machine = np.full(len(demand), 1.5)


def test_optimus_scales_widths_srpt_oracle_runs_shortest_gang():
    """Two 4-GPU jobs on 4 GPUs, A short and B long: the SRPT oracle puts A's whole gang first;
    Optimus gives each one GPU, then the GPUs with the largest remaining-time drop go to B."""
    view = _view([100, 1000], [4, 4], [1.0, 1.0], [0.0, 1.0], 4)
    assert make_scheduler("srpt-oracle").order(view).tolist() == [0, 1]
    opt = make_scheduler("optimus")
    opt._gpm = 4
    k = opt.counts(view, _W([4, 4], [1.0, 1.0]), 4)
    assert k == {0: 1, 1: 3}
    # marginal gains: B 4000 -> 2000 -> 1333; A 400 -> 200: B gets the 2nd and 3rd GPU


CLAIM = {
    "id": "c", "text": "t", "experiment": "e", "measure": "max_rho_ratio",
    "paper_range": [2.2, 3.25], "direction": "higher", "null_value": 1.0, "unit": "x",
    "args": {"scheduler": "themis", "baselines": ["las"]}, "caveat": "why",
}  # fmt: skip


@pytest.mark.parametrize(
    "value, expect",
    [(2.5, "reproduces"), (2.2, "reproduces"), (1.4, "direction only"), (0.7, "does not reproduce"),
     (math.nan, "does not reproduce")],
)  # fmt: skip
def test_claim_outcomes(value, expect):
    assert outcome(value, CLAIM) == expect


def test_claim_tolerance_and_schema_errors():
    assert outcome(2.0, CLAIM | {"tolerance": 0.25}) == "reproduces"
    with pytest.raises(DataError, match="paper_range"):
        check_claim(CLAIM | {"paper_range": [3, 2]})
    with pytest.raises(DataError, match="rule"):
        check_claim(CLAIM | {"rule": "gt"})  # the old schema is rejected, naming the key
    with pytest.raises(DataError, match="null_value"):
        check_claim({k: v for k, v in CLAIM.items() if k != "null_value"})


def test_claim_row_reports_spread_over_seeds():
    rows = []
    for seed, (t, las) in enumerate([(1.0, 1.5), (1.0, 1.3), (1.0, 1.6)]):
        for c in (1, 2):
            rows += [
                {
                    "scheduler": "themis",
                    "contention": c,
                    "max_rho": t,
                    "seed": seed,
                    "status": "ok",
                },
                {"scheduler": "las", "contention": c, "max_rho": las, "seed": seed, "status": "ok"},
            ]
    row = evaluate(CLAIM, {"summary": pd.DataFrame(rows)})
    assert row["outcome"] == "direction only" and row["ours"] == "1.47x"
    assert row["spread"].startswith("1.3..1.6") and "3 seeds" in row["spread"]
    assert evaluate(CLAIM, None, "not run: x")["outcome"] == "not run"
