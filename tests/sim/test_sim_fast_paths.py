"""The driver's compiled one-pass helpers (a placement's ids, GPUs, changes and JSON read by
:func:`~fairplace.solvers.placement.round_kernel.rekey`, ``flatten``, ``differs`` and
``int_lists_json``) give exactly the results of the Python passes they replace (the fallback
without the kernel), with a policy whose decisions are tuples of ints and one whose decisions are
lists (the contract's converting path), ids that JSON escapes included."""

from __future__ import annotations

import pandas as pd
import pytest

from fairplace.instances.traces import synergy_trace
from fairplace.sim import simulate
from fairplace.solvers.placement import round_kernel
from fairplace.solvers.placement.policies import Decision, make_policy

T_ITER = {"resnet50": 0.2, "bert": 0.5, "gpt2": 0.9, "vgg19": 0.3}


class Lists:
    """PAL, its GPUs handed back as lists (a user policy's allocation the contract converts)."""

    name = "pal-lists"

    def __init__(self):
        self.pal = make_policy("pal")

    def place(self, state, queue):
        dec = self.pal.place(state, queue)
        return Decision({j: list(g) for j, g in dec.allocation.items()}, dec.preempted)


def _run(placement, monkeypatch, compiled: bool):
    trace = synergy_trace(60, 40.0, T_ITER, max_gpus=16, seed=5)
    trace["job_id"] = [f'j"{k}\\é' if k % 3 == 0 else f"j{k}" for k in range(len(trace))]
    with monkeypatch.context() as m:
        if not compiled:
            for fn in ("flatten", "rekey", "int_lists_json", "differs"):
                m.setattr(round_kernel, fn, lambda *a: None)
        res = simulate(trace=trace, scheduler="fifo", placement=placement, gpus=16, progress=False)
    return res


@pytest.mark.parametrize("placement", ["pal", "lists"])
def test_compiled_passes_change_nothing(placement, monkeypatch):
    make = (lambda: Lists()) if placement == "lists" else (lambda: "pal")
    fast, slow = (_run(make(), monkeypatch, c) for c in (True, False))
    pd.testing.assert_frame_equal(fast.jobs, slow.jobs, check_exact=True)
    cols = [c for c in fast.rounds.columns if c != "place_seconds"]
    pd.testing.assert_frame_equal(fast.rounds[cols], slow.rounds[cols], check_exact=True)
    assert fast.rounds["allocation"].str.contains("\\\\u00e9").any()  # escaped ids were placed
