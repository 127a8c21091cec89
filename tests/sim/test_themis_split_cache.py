"""The app scheduler's split keeps what does not change between decisions (the GPUs per app,
while the owner array is the same; each app's split, while its GPUs, jobs and holdings are):
an owner array changed in place, or a job that no longer holds its GPUs, is split afresh."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from fairplace.sim.running import HeldGPUs
from fairplace.sim.themis.apps import AppScheduler

#: 4 machines of 4 GPUs; jobs 0, 1 of app 0 (2 GPUs each), job 2 of app 1 (4 GPUs)
MACHINE = np.arange(16) // 4
W = SimpleNamespace(
    app=np.array([0, 0, 1]),
    app_ids=["a", "b"],
    demand=np.array([2, 2, 4]),
    t_iter=np.ones(3),
)
VIEW = SimpleNamespace(remaining=np.array([30.0, 20.0, 10.0]), attained=np.zeros(3))
RUN = {0: np.array([0, 1]), 1: np.array([2])}


def _held(out: dict) -> HeldGPUs:
    return HeldGPUs(dict(out))  # the driver keeps the split's arrays


def _lists(out: dict) -> dict:
    return {j: g.tolist() for j, g in out.items()}


def test_an_owner_changed_in_place_is_split_afresh():
    owner = np.full(16, -1)
    owner[0:4] = 0
    owner[8:12] = 1
    sch = AppScheduler(MACHINE)
    first = sch.split(owner, VIEW, W, HeldGPUs({}), RUN)
    assert _lists(first) == {0: [0, 1], 1: [2, 3], 2: [8, 9, 10, 11]}
    again = sch.split(owner, VIEW, W, _held(first), RUN)
    assert all(again[j] is g for j, g in first.items())  # nothing changed: the same arrays
    owner[8:12] = -1  # the same array object, changed in place: app 1 moves to machine 3
    owner[12:16] = 1
    moved = sch.split(owner, VIEW, W, _held(first), RUN)
    assert _lists(moved) == {0: [0, 1], 1: [2, 3], 2: [12, 13, 14, 15]}
    fresh = AppScheduler(MACHINE).split(owner.copy(), VIEW, W, _held(first), RUN)
    assert _lists(moved) == _lists(fresh)


def test_a_job_off_its_gpus_is_split_afresh():
    owner = np.full(16, -1)
    owner[0:4] = 0
    sch = AppScheduler(MACHINE)
    run = {0: np.array([0, 1])}
    first = sch.split(owner, VIEW, W, HeldGPUs({}), run)
    copies = HeldGPUs({j: g.copy() for j, g in first.items()})  # the same GPUs, other arrays
    assert _lists(sch.split(owner, VIEW, W, copies, run)) == _lists(first)
    held = HeldGPUs({0: first[0]})  # job 1 lost its GPUs (the driver's preemption)
    out = sch.split(owner, VIEW, W, held, run)
    fresh = AppScheduler(MACHINE).split(owner, VIEW, W, held, run)
    assert _lists(out) == _lists(fresh) == _lists(first)  # job 1 back on GPUs 2, 3
