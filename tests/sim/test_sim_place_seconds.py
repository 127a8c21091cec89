"""The rounds frame's ``place_seconds``: the wall seconds of the placement policy's call per decision."""

from __future__ import annotations

import pandas as pd

from fairplace.instances.traces import synergy_trace
from fairplace.sim import simulate

T_ITER = {"resnet50": 0.2, "bert": 0.5, "gpt2": 0.9, "vgg19": 0.3}


def _run(**kw):
    trace = synergy_trace(20, 20.0, T_ITER, max_gpus=8, seed=1)
    return simulate(trace, scheduler="fifo", placement="pal", gpus=16, progress=False, **kw)


def test_every_round_that_asks_the_policy_records_its_seconds():
    res = _run(incremental=False, skip_quiet=False)  # the policy is asked at every round
    r = res.rounds
    assert len(r) == res.summary["decisions"] > 1
    assert (r["place_seconds"] > 0).all()
    assert (r["span"] == 1).all()


def test_a_kept_decision_costs_no_policy_time_and_results_stay_the_same():
    fast, full = _run(), _run(incremental=False)  # the policy asked afresh: the same results
    assert (fast.rounds["place_seconds"] >= 0).all()
    assert (fast.rounds["place_seconds"] > 0).any()
    assert (fast.rounds["place_seconds"] == 0).any()  # unchanged queues reuse the last decision
    pd.testing.assert_frame_equal(fast.jobs, full.jobs, check_exact=True)
