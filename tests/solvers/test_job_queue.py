"""A queue with its jobs' fields as arrays (``JobQueue``): checked once when made, with the errors
``place`` gives a list; placed as the list is by every policy (sticky and non-sticky, held jobs)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from fairplace.core.domain import Job
from fairplace.core.errors import DataError
from fairplace.instances.generators import grid_cluster
from fairplace.solvers.placement.job_queue import JobQueue, JobTable
from fairplace.solvers.placement.policies import POLICY_NAMES, ClusterState, make_policy


def _queue(n=40, seed=0):
    rng = np.random.default_rng(seed)
    demand = rng.choice([1, 1, 1, 2, 3, 4, 6], n)
    cls = rng.choice(["B", "A", "C", "Z"], n).tolist()
    return [
        Job(f"j{i}", int(g), None if c == "Z" else c)
        for i, (g, c) in enumerate(zip(demand, cls, strict=True))
    ]


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_a_job_queue_is_placed_as_its_list(name):
    cl = grid_cluster(6, 4)
    rng = np.random.default_rng(1)
    scores = {c: rng.choice([1.0, 1.1, 1.4], len(cl)) for c in "ABC"}
    jobs = _queue()
    held = {"j3": (0, 1), "j7": (5,)}
    for backfill in (False, True):
        pol = make_policy(name, backfill=backfill)
        for alloc in ({}, held):
            state = ClusterState(cl, scores, alloc, round=2)
            a, b = pol.place(state, jobs), pol.place(state, JobQueue.of(jobs))
            assert a.allocation == b.allocation and list(a.allocation) == list(b.allocation)
            assert a.preempted == b.preempted and a.trail[:3] == b.trail[:3]


def test_a_table_queue_is_its_rows():
    jobs = _queue()
    table = JobTable.of(jobs)
    rows = np.array([5, 2, 9, 0, 1])
    q = table.queue([jobs[r] for r in rows], rows)
    ids, gpus, codes = q.fields()
    assert ids.tolist() == [jobs[r].id for r in rows]
    assert gpus.tolist() == [jobs[r].gpus for r in rows]
    assert [table.classes[c] for c in codes] == [jobs[r].cls for r in rows]
    assert table.classes == ("A", "B", "C", None)  # PM-First's class order
    back = pickle.loads(pickle.dumps(q))
    assert tuple(back) == tuple(q) and back.rows.tolist() == rows.tolist()


def test_a_job_queue_is_checked_when_made():
    jobs = _queue(5)
    with pytest.raises(DataError, match=r"queue\[3\]\.id"):
        JobQueue.of([*jobs[:3], Job("j0", 1)])
    with pytest.raises(DataError, match=r"queue\[1\]\.gpus"):
        JobQueue.of([jobs[0], Job("x", 0)])
    with pytest.raises(DataError, match=r"jobs\[1\]\.gpus"):
        JobTable(["a", "b"], [1, 0], [None, None])
    with pytest.raises(DataError, match=r"jobs\[2\]\.id"):
        JobTable(["a", "b", "a"], [1, 1, 1], [None, None, None])
    table = JobTable.of(jobs)
    with pytest.raises(DataError, match="twice"):
        table.queue([jobs[0], jobs[0]], [0, 0])
    with pytest.raises(DataError, match="out of range"):
        table.queue([jobs[0]], [7])


@pytest.mark.parametrize("compiled", [True, False])
def test_ids_at_gives_the_ids_at_queue_positions(monkeypatch, compiled):
    from fairplace.solvers.placement import round_kernel

    if not compiled:
        monkeypatch.setattr(round_kernel, "_ext", None)
    elif not round_kernel.available():
        pytest.skip("the compiled round kernel is not built")
    jobs = _queue(30, seed=3)
    table = JobTable.of(jobs)
    rows = np.random.default_rng(0).permutation(30)[:20]
    q = table.queue([jobs[r] for r in rows], rows)
    pos = np.array([19, 0, 5, 5, 12])
    assert q.ids_at(pos) == tuple(jobs[rows[p]].id for p in pos.tolist())
    assert q.ids_at(np.zeros(0, dtype=np.int64)) == ()
    if compiled:
        with pytest.raises(IndexError, match="out of range"):
            round_kernel.gather(table.id_tuple, np.array([30]))
