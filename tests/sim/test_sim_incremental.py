"""The incremental driver (decisions reused, resumable policies continuing from the previous decision)
gives exactly the results of placing every job afresh at every decision (``DriverConfig.incremental``
off), for every placement policy under FIFO, LAS and SRTF, sticky and non-sticky."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from fairplace.instances.traces import synergy_trace
from fairplace.sim import engine, simulate

POLICIES = [
    ("pal", {}),
    ("pal", {"ties": "artifact"}),
    ("pal", {"backfill": True}),
    ("pal", {"migrate": "if-better", "backfill": True}),
    ("pm-first", {}),
    ("pm-first", {"ties": "level", "backfill": True}),
    ("packed-sticky", {}),
    ("packed-non-sticky", {"backfill": True}),
    ("random-sticky", {}),
    ("random-non-sticky", {}),
]
SCHEDULERS = ["fifo", "las", "srtf"]
T_ITER = {"resnet50": 0.2, "bert": 0.5, "gpt2": 0.9, "vgg19": 0.3}


def _run(trace, scheduler, placement, options, incremental, monkeypatch, calls=None, debug=True):
    init = engine.Driver.__init__

    def patched(self, *a, **kw):
        init(self, *a, **kw)
        self.cfg = dataclasses.replace(self.cfg, incremental=incremental)
        if calls is not None:
            place = self.policy.place

            def counted(*pa, **pk):
                calls.append(1)
                return place(*pa, **pk)

            object.__setattr__(self, "policy", _Counting(self.policy, counted))

    with monkeypatch.context() as m:
        m.setattr(engine.Driver, "__init__", patched)
        return simulate(
            trace=trace,
            scheduler=scheduler,
            placement=placement,
            gpus=16,
            seed=3,
            debug=debug,  # debug re-asks the policy at every reused decision
            progress=False,
            placement_options=options,
            scheduler_options={"threshold": 400.0} if scheduler == "las" else None,
        )


class _Counting:
    """A policy wrapper that counts ``place`` calls (attributes pass through)."""

    def __init__(self, policy, place):
        self._policy, self.place = policy, place

    def __getattr__(self, name):
        return getattr(self._policy, name)


def _same(a, b) -> None:
    pd.testing.assert_frame_equal(a.jobs, b.jobs, check_exact=True)
    pd.testing.assert_frame_equal(a.apps, b.apps, check_exact=True)
    wall = ["place_seconds"]  # the policy's wall clock
    pd.testing.assert_frame_equal(
        a.rounds.drop(columns=wall), b.rounds.drop(columns=wall), check_exact=True
    )
    drop = {"wall_seconds"}
    assert {k: v for k, v in a.summary.items() if k not in drop} == {
        k: v for k, v in b.summary.items() if k not in drop
    }


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize(
    ("placement", "options"), POLICIES, ids=[f"{p}{o or ''}" for p, o in POLICIES]
)
def test_incremental_equals_full_replacement(scheduler, placement, options, monkeypatch):
    seed = (SCHEDULERS.index(scheduler) + POLICIES.index((placement, options))) % 3  # varied traces
    trace = synergy_trace(30, 40.0, T_ITER, max_gpus=8, seed=seed)  # overloaded: preemptions
    fast = _run(trace, scheduler, placement, options, True, monkeypatch)
    full = _run(trace, scheduler, placement, options, False, monkeypatch)
    _same(fast, full)


def test_incremental_driver_skips_repeated_decisions(monkeypatch):
    trace = synergy_trace(30, 10.0, T_ITER, max_gpus=8, seed=2)
    fast, full = [], []
    a = _run(trace, "fifo", "pal", {}, True, monkeypatch, fast, debug=False)
    b = _run(trace, "fifo", "pal", {}, False, monkeypatch, full, debug=False)
    _same(a, b)
    assert len(full) == a.summary["decisions"]  # the reference asks the policy at every decision
    assert len(fast) < len(full)  # unchanged queues reuse the previous decision
