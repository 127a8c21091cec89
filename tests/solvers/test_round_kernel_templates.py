"""The compiled round kernel's kept state: each class's template (its state and PAL's segment trees
when every GPU is free, kept in the round's :class:`.cache.PlacementCache` and brought to the round's
free GPUs), the jobs' L_across read from the queue's table instead of each job, and a queue's
processing order kept for its next rounds. Every way gives the Python path's decision: templates
off, on where few GPUs are taken, on always (however many are: resumed rounds start from a partly
taken cluster), a table with and without localities, a queue placed again.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from test_round_kernel import _place, _same, needs_kernel, rounds

from fairplace.core.domain import Job
from fairplace.solvers.placement import round_kernel
from fairplace.solvers.placement.cache import PlacementCache
from fairplace.solvers.placement.job_queue import JobQueue, JobTable
from fairplace.solvers.placement.policies import ClusterState, make_policy


def _with_cache(state: ClusterState, cache: PlacementCache) -> ClusterState:
    return ClusterState(state.cluster, state.scores, state.allocation, state.round, cache)


@needs_kernel
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rounds())
def test_template_rounds_equal_python_path(monkeypatch, case):
    """Rounds on one kept cache (the templates made by the first, used by the next), then resumed
    rounds (the kernel starts with the common head's GPUs taken), each way of using templates."""
    state, queue, policy, resumed = case
    py = _place(monkeypatch, "python", policy, state, queue)
    py_resumed = _place(monkeypatch, "python", policy, state, resumed, py)
    for templates in (False, True, 2):
        monkeypatch.setattr(round_kernel, "TEMPLATES", templates)
        cache = PlacementCache()
        kept = _with_cache(state, cache)
        for q in (queue, JobQueue.of(queue), queue):  # the second and third: templates made
            c = _place(monkeypatch, "c", policy, kept, q)
            _same(py, c)
        _same(py_resumed, _place(monkeypatch, "c", policy, kept, resumed, c))
        _same(py_resumed, _place(monkeypatch, "c", policy, kept, JobQueue.of(resumed), c))


@needs_kernel
def test_large_template_rounds_equal_fresh_state(monkeypatch):
    """A 4,096-GPU benchmark round and rounds resumed after a head of it, from templates (auto and
    always) and from each round's own state: the same picks, and the Python path's."""
    from fairplace.benchmarks.placement import _state, philly_queue

    base = _state(1024, "synthetic")
    jobs = philly_queue(len(base.cluster), seed=3)
    for name, ties in [("pal", "fewest-machines"), ("pal", "artifact"), ("pm-first", "machine")]:
        pol = make_policy(name, ties=ties, backfill=True)
        py = _place(monkeypatch, "python", pol, base, jobs)
        cut = len(jobs) // 3
        resumed = [*jobs[:cut], Job("new", 3, "A", model="ResNet-50"), *jobs[cut:]]
        py_resumed = _place(monkeypatch, "python", pol, base, resumed, py)
        for templates in (False, True, 2):
            monkeypatch.setattr(round_kernel, "TEMPLATES", templates)
            kept = _with_cache(base, PlacementCache())
            for _ in range(2):
                c = _place(monkeypatch, "c", pol, kept, JobQueue.of(jobs))
                _same(py, c)
            _same(py_resumed, _place(monkeypatch, "c", pol, kept, JobQueue.of(resumed), c))


def test_table_localities():
    """A table made from jobs keeps their models and own L_across (NaN: none); one whose own L is
    not a real number, or NaN itself, keeps none (a round then reads each job)."""
    jobs = [Job("a", 2, "A", model="m1"), Job("b", 2, "A", model="m2", locality=1.5)]
    jobs.append(Job("c", 1, None, model="m1", locality=2))
    t = JobTable.of(jobs)
    assert t.locality is not None
    own, model, models = t.locality
    assert np.isnan(own[0]) and own[1:].tolist() == [1.5, 2.0]
    assert models == ("m1", "m2") and model.tolist() == [0, 1, 0]
    q = t.queue([jobs[2], jobs[0]], [2, 0])
    own_q, model_q, _ = q.localities()
    assert own_q[0] == 2.0 and np.isnan(own_q[1]) and model_q.tolist() == [0, 0]
    assert JobTable(["a"], [1], ["A"]).locality is None  # not given
    assert JobQueue.of([Job("a", 2, "A", locality="1.5")]).localities() is None
    assert JobQueue.of([Job("a", 2, "A", locality=float("nan"))]).localities() is None
    assert JobQueue.of([Job("a", 2, "A", model=["unhashable"])]).localities() is None


@needs_kernel
def test_locality_from_the_table_equals_each_jobs(monkeypatch):
    """PAL's walk with L_across from the table's arrays equals reading each job (own L, the
    policy's per-model table, the constant) and the Python path."""
    from fairplace.benchmarks.placement import _state, philly_queue

    state = _state(64, "longhorn")
    jobs = philly_queue(len(state.cluster), seed=2)
    jobs = [
        Job(j.id, j.gpus, j.cls, model=j.model, locality=(1.3 if k % 3 == 0 else None))
        for k, j in enumerate(jobs)
    ]
    for penalty in (1.0, 1.7):
        pol = make_policy(
            "pal", backfill=True, locality_penalty=penalty, locality_by_model={jobs[1].model: 4.0}
        )
        q = JobQueue.of(jobs)
        assert q.localities() is not None
        with_table = _place(monkeypatch, "c", pol, state, q)
        bare = JobQueue(tuple(q), q.table, q.rows)
        bare.__dict__["_localities"] = None
        monkeypatch.setattr(JobQueue, "localities", lambda self: self.__dict__.get("_localities"))
        _same(with_table, _place(monkeypatch, "c", pol, state, bare))  # read from each job
        monkeypatch.undo()
        _same(_place(monkeypatch, "python", pol, state, jobs), with_table)


@pytest.mark.parametrize("bad", [(b"", b"", 0), (b"\0" * 8, b"\0" * 8, 0)])
@needs_kernel
def test_place_checks_the_localities(bad):
    ext = round_kernel._ext
    mi = np.zeros(2, np.int64)
    one = np.ones(1, np.int64)
    args = (mi, 1, 2, np.ones(2, np.uint8), [Job("a", 2, "A")], 2 * one, 0 * one, None, ("A",))
    args += (("a",), 0, 1, 0, 0, True, lambda c: None, lambda j: 1.0, lambda *a: True)
    args += (np.empty(1, np.int64), np.empty(1, np.int64), np.empty(2, np.int64))
    with pytest.raises(ValueError, match="localit|model index"):
        ext.place(*args, bad)


def test_a_queue_keeps_its_processing_order(monkeypatch):
    """PM-First's order of a JobQueue is made once per cluster size (read only), with its ids; a
    queue placed again gets the same decision."""
    from fairplace.benchmarks.placement import _state, philly_queue

    state = _state(16, "longhorn")
    q = JobQueue.of(philly_queue(len(state.cluster), seed=1))
    pol = make_policy("pal", backfill=True)
    first = pol.place(state, q)
    rows = pol._order_rows(q, len(state.cluster))
    assert rows is pol._order_rows(q, len(state.cluster)) and not rows.flags.writeable
    assert rows is not pol._order_rows(q, len(state.cluster) + 4)
    assert q.ids_for(rows) is q.ids_for(rows) == q.ids_at(rows)
    fresh = np.arange(len(q))
    assert q.ids_for(fresh) is not q.ids_for(fresh)  # (a writeable array: not kept)
    for path in ("c", "python"):
        _same(first, _place(monkeypatch, path, pol, state, q))
        assert list(first.allocation) == list(_place(monkeypatch, path, pol, state, q).allocation)


def test_same_array_compares_kept_scores():
    """The placement cache's check of kept scores: equal bytes (in one pass where both are arrays
    of one dtype and shape), else numpy's equality."""
    a = np.array([0.5, 1.0, np.nan, 2.0])
    assert round_kernel.same_array(a, a.copy())  # (NaN included: the same bytes, the same sort)
    assert not round_kernel.same_array(a, np.array([0.5, 1.0, np.nan, 2.5]))
    b = np.array([1.0, 2.0])
    assert round_kernel.same_array(b, [1.0, 2.0]) and round_kernel.same_array(b, np.array([1, 2]))
    assert not round_kernel.same_array(b, np.array([1.0, 2.0, 3.0]))
    assert round_kernel.same_array(b, np.array([[1.0, 2.0]])[0])
    assert not round_kernel.same_array(b, np.array([2.0, 1.0, 0.0])[1::-1][::-1])
