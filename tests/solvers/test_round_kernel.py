"""The compiled round kernel (solvers/placement/_round_kernel.c) against the Python path, the reference: the same
Decision (picks, preemptions, trail) on random clusters grouped by machine (machines of unequal size,
P up to 8, several classes with few score levels so ties are common, queues of single, <= P and > P
GPU jobs, misfits, backfill on and off, every PM-First / PAL tie rule, resumed rounds), the stored
reference picks and simulations through the kernel, and the choice of path (``FAIRPLACE_KERNEL``).

With ``CI`` set, a kernel that did not build FAILS the suite, so CI cannot test only the fallback.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairplace.core.domain import GPU, Cluster, Job
from fairplace.core.errors import OptionError
from fairplace.solvers.placement import round_kernel
from fairplace.solvers.placement.job_queue import JobQueue
from fairplace.solvers.placement.policies import ClusterState, make_policy

RULES = [
    ("pal", "fewest-machines"),
    ("pal", "artifact"),
    ("pm-first", "machine"),
    ("pm-first", "level"),
]

#: unbinned scores: many levels, mostly of one GPU
RAW_SCORES = [round(0.8 + 0.01 * i, 2) for i in range(60)]


def test_kernel_is_built_in_ci():
    if round_kernel.available():
        return
    if os.environ.get("CI"):
        pytest.fail(
            "the compiled round kernel did not build (CI must test it, not only the fallback)"
        )
    pytest.skip("the compiled round kernel is not built here (no C compiler?): Python path only")


needs_kernel = pytest.mark.skipif(
    not round_kernel.available() and not os.environ.get("CI"),
    reason="the compiled round kernel is not built",
)


@st.composite
def rounds(draw):
    """(state, queue, policy, resumed queue): a contiguous cluster, per-class scores of 1-4 levels
    (or unbinned: up to 60)."""
    P = draw(st.sampled_from([1, 2, 4, 8]))
    sizes = draw(st.lists(st.integers(1, P), min_size=1, max_size=12))
    sizes[draw(st.integers(0, len(sizes) - 1))] = P  # P is the largest machine
    classes = draw(st.sampled_from([["A"], ["A", "B"], ["A", "B", "C"]]))
    G = sum(sizes)
    scores = {}
    for c in classes:
        levels = draw(
            st.sampled_from([[1.0], [0.9, 1.0], [0.9, 1.0, 1.3], [0.8, 0.95, 1.0, 1.6], RAW_SCORES])
        )
        scores[c] = np.array(draw(st.lists(st.sampled_from(levels), min_size=G, max_size=G)))
    gpus, g = [], 0
    for m, k in enumerate(sizes):
        for _ in range(k):
            pm = {c: float(v[g]) for c, v in scores.items()}
            gpus.append(GPU(f"g{g}", f"m{m}", rack=f"r{m % 2}", pm=pm))
            g += 1
    cl = Cluster(tuple(gpus))
    demand = st.one_of(st.just(1), st.integers(1, 2 * P), st.integers(1, G + 2))
    cls = st.sampled_from([*classes, None, "Z"])  # None / "Z": no scores (all ones)
    model = st.sampled_from([None, "a", "b"])
    n = draw(st.integers(1, 3 * G))
    own = st.sampled_from([None, None, 1.0, 1.4, 2.2])  # a job's own L (the simulator's), or none
    queue = [
        Job(f"j{i}", draw(demand), draw(cls), model=draw(model), locality=draw(own))
        for i in range(n)
    ]
    name, ties = draw(st.sampled_from(RULES))
    policy = make_policy(
        name,
        ties=ties,
        backfill=draw(st.booleans()),
        locality_penalty=draw(st.sampled_from([1.0, 1.2, 1.7, 3.0])),
        locality_by_model={"a": 1.05, "b": 2.5},
    )
    cut = draw(st.integers(0, n))
    resumed = queue[:cut] + [Job("new", draw(demand), draw(cls))] + queue[cut:]
    return ClusterState(cl, scores, {}), queue, policy, resumed


def _place(monkeypatch, path, policy, state, queue, previous=None):
    monkeypatch.setenv(round_kernel.ENV, path)
    d = policy.place(state, queue, previous=previous)
    assert d.kernel == path
    return d


def _same(a, b):
    assert a.allocation == b.allocation
    assert list(a.allocation) == list(b.allocation)  # the same order of decisions
    assert a.preempted == b.preempted
    assert a.trail[:3] == b.trail[:3]


@needs_kernel
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rounds())
def test_kernel_equals_python_path(monkeypatch, case):
    state, queue, policy, resumed = case
    py = _place(monkeypatch, "python", policy, state, queue)
    c = _place(monkeypatch, "c", policy, state, queue)
    _same(py, c)
    # the queue with its fields as arrays (JobQueue): the same decision on either path
    jq = JobQueue.of(queue)
    _same(py, _place(monkeypatch, "c", policy, state, jq))
    _same(py, _place(monkeypatch, "python", policy, state, jq))
    # resuming after the previous decision's common head (the simulator's incremental rounds)
    _same(
        _place(monkeypatch, "python", policy, state, resumed, py),
        _place(monkeypatch, "c", policy, state, resumed, c),
    )


@needs_kernel
def test_reference_picks_and_simulations_through_the_kernel(monkeypatch):
    import speedup_cases as sc

    monkeypatch.setenv(round_kernel.ENV, "c")
    ref = sc.load_reference()
    for args in sc.placement_params():
        key = sc.placement_key(*args)
        sc.assert_matches(sc.placement_case(*args), ref["placement"][key], key)
    for args in sc.SIMULATIONS:
        key = sc.simulation_key(*args)
        sc.assert_matches(sc.simulation_case(*args), ref["simulation"][key], key)


@needs_kernel
def test_large_round_equals_python_path(monkeypatch):
    """A 4,096-GPU benchmark round (where the Python path uses its incremental index)."""
    from fairplace.benchmarks.placement import _state, philly_queue

    state = _state(1024, "synthetic")
    queue = philly_queue(len(state.cluster))
    for name, ties in RULES:
        for backfill in (False, True):
            pol = make_policy(name, ties=ties, backfill=backfill)
            _same(
                _place(monkeypatch, "python", pol, state, queue),
                _place(monkeypatch, "c", pol, state, queue),
            )


def test_uncovered_rounds_run_in_python(monkeypatch):
    monkeypatch.setenv(round_kernel.ENV, "auto")
    gpus = tuple(GPU(f"g{i}", f"m{i % 2}", pm={"A": 1.0}) for i in range(4))  # interleaved
    queue = [Job("a", 1, "A"), Job("b", 2, "A")]
    interleaved = ClusterState(Cluster(gpus), {"A": np.ones(4)}, {})
    assert make_policy("pal").place(interleaved, queue).kernel == "python"
    grouped = ClusterState(Cluster(tuple(sorted(gpus, key=lambda g: g.machine))), {}, {})
    for name, opts in [
        ("packed-sticky", {}),
        ("random-non-sticky", {}),
        ("pal", {"migrate": "if-better"}),
    ]:
        assert make_policy(name, **opts).place(grouped, queue).kernel == "python"
    expected = "c" if round_kernel.available() else "python"
    assert make_policy("pal").place(grouped, queue).kernel == expected
    monkeypatch.setenv(round_kernel.ENV, "python")
    assert make_policy("pal").place(grouped, queue).kernel == "python"


def test_subclass_overriding_a_pick_runs_in_python(monkeypatch):
    from fairplace.solvers.placement.policies import PALPolicy

    class Mine(PALPolicy):
        def _pick(self, pool, job):
            return pool.first_free(job.cls, job.gpus)

    monkeypatch.setenv(round_kernel.ENV, "auto")
    gpus = tuple(GPU(f"g{i}", f"m{i // 2}", pm={"A": 1.0}) for i in range(4))
    state = ClusterState(Cluster(gpus), {"A": np.ones(4)}, {})
    assert Mine().place(state, [Job("a", 2, "A")]).kernel == "python"


@needs_kernel
def test_cells_checks_its_arguments():
    """The kernel's per-class layout (made once per cluster and scores, kept across rounds)
    refuses an order that is not a permutation of the GPUs and machines out of range."""
    ext = round_kernel._ext
    mi, srt = np.array([0, 0, 1, 1], np.int64), np.array([0.1, 0.2, 0.2, 0.4])
    assert isinstance(ext.cells(mi, 2, 2, np.arange(4, dtype=np.int64), srt), bytes)
    with pytest.raises(ValueError, match="permutation"):
        ext.cells(mi, 2, 2, np.array([0, 1, 1, 3], np.int64), srt)
    with pytest.raises(ValueError, match="permutation"):
        ext.cells(mi, 1, 2, np.arange(4, dtype=np.int64), srt)
    with pytest.raises(ValueError, match="inconsistent"):
        ext.cells(mi, 2, 2, np.arange(3, dtype=np.int64), srt)


@needs_kernel
def test_rounds_on_new_scores_of_one_cluster_equal_python_path(monkeypatch):
    """Rounds on one cluster whose scores change between rounds (the kept layouts follow)."""
    from fairplace.benchmarks.placement import _state, philly_queue

    state = _state(64, "longhorn")
    queue = philly_queue(len(state.cluster))
    rng = np.random.default_rng(1)
    other = {c: rng.permutation(v) for c, v in state.scores.items()}
    pol = make_policy("pal", backfill=True)
    for scores in (state.scores, other, state.scores):
        s = ClusterState(state.cluster, scores, {})
        _same(_place(monkeypatch, "python", pol, s, queue), _place(monkeypatch, "c", pol, s, queue))


def test_kernel_choice_is_checked(monkeypatch):
    monkeypatch.setenv(round_kernel.ENV, "fast")
    with pytest.raises(OptionError, match="FAIRPLACE_KERNEL"):
        round_kernel.wanted()
    monkeypatch.setattr(round_kernel, "_ext", None)
    monkeypatch.setenv(round_kernel.ENV, "c")
    with pytest.raises(OptionError, match="not built"):
        round_kernel.wanted()
    monkeypatch.setenv(round_kernel.ENV, "auto")
    assert round_kernel.wanted() is False


def _one_pick_per_job(policy, state, queue):
    """The definition of a non-sticky round: each job in processing order gets ``policy._pick``
    (no batched runs of single-GPU jobs, no kernel)."""
    from fairplace.solvers.placement.free_pool import FreePool

    pool = FreePool(state.cluster, state.scores, np.ones(len(state.cluster), dtype=bool))
    alloc = {}
    for job in policy._order(list(queue), len(state.cluster)):
        g = policy._pick(pool, job) if job.gpus <= pool.n_free else None
        if g is None:
            if policy.backfill:
                continue
            break
        pool.take(g)
        alloc[job.id] = tuple(sorted(int(x) for x in g))
    return alloc


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rounds())
def test_batched_single_gpu_runs_equal_one_pick_per_job(monkeypatch, case):
    # every tie rule, PM-First's ``level`` included: its single-GPU jobs count same-score GPUs too
    state, queue, policy, _ = case
    want = _one_pick_per_job(policy, state, queue)
    for path in ("python", "c") if round_kernel.available() else ("python",):
        assert _place(monkeypatch, path, policy, state, queue).allocation == want
