"""Placement policies: Frontera golden picks, PAL's L×V choice, stickiness, preemption, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.core.domain import Job
from fairplace.core.errors import DataError, OptionError, UnknownSolver
from fairplace.formulations.pm_score import bin_scores
from fairplace.instances.generators import grid_cluster
from fairplace.instances.variability import frontera_cluster
from fairplace.solvers.placement.free_pool import FreePool
from fairplace.solvers.placement.policies import (
    POLICY_NAMES,
    ClusterState,
    Decision,
    make_policy,
)

QUEUE = [
    Job("j1", 2, "C"),
    Job("j2", 4, "A"),
    Job("j3", 1, "B"),
    Job("j4", 3, "A"),
    Job("j5", 8, "B"),
    Job("j6", 2, "A"),
    Job("j7", 4, "B"),
]


@pytest.fixture(scope="module")
def frontera():
    cl = frontera_cluster()
    scores, _ = bin_scores({c: cl.pm_vector(c) for c in "ABC"}, random_state=0)
    return ClusterState(cl, scores, {})


def test_frontera_pm_first_golden(frontera):
    # Demand 24 <= 32: the whole queue is the guaranteed prefix, sorted A (j2, j4, j6), B (j3, j5, j7),
    # C (j1). Ties inside a score level go by best-match |free on machine - N|, then index (artifact).
    # Binned A is 1.0006 on machines 0-3, 5, 6: j2 -> 0-3, j4 -> 4-6; j6 takes GPU 7 (|1-2| = 1) and 8.
    # B is 0.9995 off machine 0: j3 -> 9 (machine 2 has 3 free), j5 -> machines 3, 4 (|4-8| beats
    # |2-8|), j7 -> machine 5 (exactly 4 free). C: GPUs 26, 27 have the lowest PageRank scores.
    d = make_policy("pm-first").place(frontera, QUEUE)
    assert d.allocation == {
        "j2": (0, 1, 2, 3),
        "j4": (4, 5, 6),
        "j6": (7, 8),
        "j3": (9,),
        "j5": (12, 13, 14, 15, 16, 17, 18, 19),
        "j7": (20, 21, 22, 23),
        "j1": (26, 27),
    }
    assert d.preempted == ()


def test_frontera_pal_golden(frontera):
    # PAL packs every 1 < N <= 4 job: j2 -> machine 0 (ties broken by fewest free GPUs, then index),
    # j4 -> machine 1 (3 of 4), j6 -> machine 2 (best 2 on one machine: w* = 1.0006 <= 1.7 * 1.0006),
    # j3 (1 GPU) -> the lowest B level on the fullest machine: GPU 7 (left over on machine 1); j5 (8 > 4)
    # -> the fewest machines at B <= 0.9995: machines 3 and 4; j7 -> machine 5; j1 -> machine 6.
    d = make_policy("pal").place(frontera, QUEUE)
    assert d.allocation == {
        "j2": (0, 1, 2, 3),
        "j4": (4, 5, 6),
        "j6": (8, 9),
        "j3": (7,),
        "j5": (12, 13, 14, 15, 16, 17, 18, 19),
        "j7": (20, 21, 22, 23),
        "j1": (26, 27),
    }
    cl = frontera.cluster
    for j in ("j2", "j4", "j6", "j7", "j1"):
        assert cl.spread(d.allocation[j]) == 0


def _two_machine_state():
    # machine 0: two fast GPUs (1.0) + two slow (1.3); machine 1: one fast + three slow (1.3)
    pm = {"A": np.array([1.0, 1.0, 1.3, 1.3, 1.0, 1.3, 1.3, 1.3])}
    cl = grid_cluster(2, 4, pm=pm)
    return ClusterState(cl, {"A": pm["A"]}, {})


@pytest.mark.parametrize(
    "L, expected",
    [
        (1.7, (0, 1, 2)),  # within: max 1.3 <= 1.7 * 1.0 -> packed on machine 0
        (1.2, (0, 1, 4)),  # across: 1.2 * 1.0 < 1.3 -> the three fast GPUs on two machines
        (1.3, (0, 1, 2)),  # tie 1.3 == 1.3 * 1.0: within first
    ],
)
def test_pal_trades_locality_against_variability(L, expected):
    d = make_policy("pal", locality_penalty=L).place(_two_machine_state(), [Job("j", 3, "A")])
    assert d.allocation == {"j": expected}


def test_per_model_locality_table():
    state = _two_machine_state()
    pol = make_policy("pal", locality_penalty=1.7, locality_by_model={"resnet50": 1.1})
    d = pol.place(state, [Job("x", 3, "A", model="resnet50"), Job("y", 1, "A", model="BERT")])
    assert d.allocation["x"] == (0, 1, 4)  # 1.1 * 1.0 < 1.3
    assert pol.locality(Job("y", 1, "A", model="BERT")) == 1.7


def test_pm_first_cut_and_class_sort():
    cl = grid_cluster(2, 2, pm={"A": np.array([1.0, 1.1, 1.2, 1.3]), "B": np.ones(4)})
    state = ClusterState(cl, {"A": cl.pm_vector("A"), "B": cl.pm_vector("B")}, {})
    q = [Job("b1", 2, "B"), Job("a1", 1, "A"), Job("a2", 2, "A"), Job("a3", 1, "A")]
    # demand 2, 3, 5 > 4: the prefix is (b1, a1); sorted a1 first -> GPU 0; b1 (B all 1.0, a tie)
    # best-matches machine 1 (2 free = N) -> GPUs 2, 3; a2 misfits
    d = make_policy("pm-first").place(state, q)
    assert d.allocation == {"a1": (0,), "b1": (2, 3)}
    # backfill skips the misfit a2 and places a3 on the last GPU
    d = make_policy("pm-first", backfill=True).place(state, q)
    assert d.allocation == {"a1": (0,), "b1": (2, 3), "a3": (1,)}


def test_packed_policies():
    cl = grid_cluster(3, 4)
    state = ClusterState(cl, {}, {"r": (0, 1, 4)})  # machine 0 has 2 free, machine 1 has 3 free
    q = [Job("r", 3), Job("a", 2), Job("b", 3), Job("c", 6)]
    d = make_policy("packed-sticky").place(state, q)
    assert d.allocation["r"] == (0, 1, 4)  # sticky
    assert d.allocation["a"] == (2, 3)  # exact fit on machine 0
    assert d.allocation["b"] == (5, 6, 7)  # exact fit on machine 1
    # c (6 GPUs) does not fit in the 4 left: the round stops there
    assert "c" not in d.allocation and d.preempted == ()
    g = make_policy("packed-non-sticky").place(state, q)
    assert g.allocation["r"] == (0, 1, 2)  # re-placed: best fit on an empty cluster
    assert g.migrated(state) == ("r",)
    # spill: 6 GPUs over the machines with the most free GPUs (machine 2: 4, then machine 1: 2 of 3)
    d = make_policy("packed-sticky").place(state, [Job("r", 3), Job("x", 6)])
    assert d.allocation["x"] == (5, 6, 8, 9, 10, 11)


def test_sticky_preempts_lower_priority_only_when_that_fits():
    cl = grid_cluster(2, 2)
    state = ClusterState(cl, {}, {"low": (0, 1), "high": (2,)})
    # a waiting job of top priority needs 3 GPUs: 1 free + low's 2 -> low is preempted
    q = [Job("w", 3), Job("high", 1), Job("low", 2)]
    d = make_policy("packed-sticky").place(state, q)
    assert d.allocation["high"] == (2,)
    assert sorted(d.allocation["w"]) == [0, 1, 3]
    assert d.preempted == ("low",)
    # w needs 4 behind high: preempting low gives only 3 -> nothing preempted, the round stops at w
    # and low (not reached) keeps its GPUs
    d = make_policy("random-sticky").place(state, [Job("high", 1), Job("w", 4), Job("low", 2)])
    assert d.allocation == {"high": (2,), "low": (0, 1)} and d.preempted == ()
    # a running job that left the queue releases its GPUs without being "preempted"
    d = make_policy("packed-sticky").place(state, [Job("w", 3), Job("high", 1)])
    assert d.preempted == () and sorted(d.allocation["w"]) == [0, 1, 3]


def test_random_policies_are_seeded_by_seed_and_round():
    cl = grid_cluster(8, 4)
    q = [Job(f"j{k}", 1 + k % 3) for k in range(8)]
    pol = make_policy("random-non-sticky", seed=3)
    a = pol.place(ClusterState(cl, {}, {}, round=1), q)
    assert a == pol.place(ClusterState(cl, {}, {}, round=1), q)
    b = pol.place(ClusterState(cl, {}, {}, round=2), q)
    c = make_policy("random-non-sticky", seed=4).place(ClusterState(cl, {}, {}, round=1), q)
    assert a.allocation != b.allocation and a.allocation != c.allocation


def test_make_policy_errors_and_interface():
    assert set(POLICY_NAMES) == {
        "pal",
        "pm-first",
        "packed-sticky",
        "packed-non-sticky",
        "random-sticky",
        "random-non-sticky",
    }
    for n in POLICY_NAMES:
        p = make_policy(n)
        assert p.name == n
        assert p.sticky == (n in ("packed-sticky", "random-sticky"))
        hash(p)  # frozen, hashable, no hidden state
    with pytest.raises(UnknownSolver):
        make_policy("tetris")
    with pytest.raises(OptionError):
        make_policy("pal", stop=True)
    cl = grid_cluster(1, 2)
    with pytest.raises(DataError, match="duplicate"):
        make_policy("pal").place(ClusterState(cl, {}, {}), [Job("a", 1), Job("a", 1)])
    with pytest.raises(DataError, match="shape"):
        make_policy("pal").place(ClusterState(cl, {"A": np.ones(3)}, {}), [Job("a", 1, "A")])
    with pytest.raises(DataError, match="share"):
        make_policy("pal").place(ClusterState(cl, {}, {"a": (0,), "b": (0,)}), [])


@st.composite
def rounds(draw):
    machines = draw(st.integers(1, 4))
    gpm = draw(st.integers(1, 4))
    G = machines * gpm
    levels = draw(st.lists(st.sampled_from([0.9, 1.0, 1.05, 1.3, 2.5]), min_size=G, max_size=G))
    cl = grid_cluster(machines, gpm, pm={"A": np.array(levels), "B": np.array(levels[::-1])})
    n_jobs = draw(st.integers(0, 7))
    jobs = [
        Job(f"j{k}", draw(st.integers(1, G)), draw(st.sampled_from(["A", "B", None])))
        for k in range(n_jobs)
    ]
    # a feasible current allocation for some of the jobs
    perm = draw(st.permutations(range(G)))
    alloc, used = {}, 0
    for j in jobs:
        if draw(st.booleans()) and used + j.gpus <= G:
            alloc[j.id] = tuple(perm[used : used + j.gpus])
            used += j.gpus
    order = draw(st.permutations(jobs))
    state = ClusterState(cl, {"A": cl.pm_vector("A"), "B": cl.pm_vector("B")}, alloc)
    return state, list(order)


@settings(max_examples=150, deadline=None)
@given(r=rounds(), name=st.sampled_from(POLICY_NAMES), backfill=st.booleans())
def test_decisions_are_valid(r, name, backfill):
    state, queue = r
    pol = make_policy(name, backfill=backfill, seed=1)
    d = pol.place(state, queue)
    assert isinstance(d, Decision)
    demand = {j.id: j.gpus for j in queue}
    used = [g for gs in d.allocation.values() for g in gs]
    assert len(used) == len(set(used)) and all(0 <= g < len(state.cluster) for g in used)
    for j, gs in d.allocation.items():
        assert j in demand
        if j not in state.allocation or not pol.sticky:
            assert len(gs) == demand[j]
        assert list(gs) == sorted(gs)
    for j in d.preempted:
        assert j in state.allocation and j not in d.allocation
    assert set(state.allocation) & set(demand) - set(d.allocation) == set(d.preempted)
    if pol.sticky:  # running jobs keep their exact GPUs unless a waiting job ahead preempted them
        pos = {j.id: k for k, j in enumerate(queue)}  # (then they may be relaunched elsewhere)
        started = [pos[j] for j in d.allocation if j not in state.allocation]
        for j in d.migrated(state):
            assert started and min(started) < pos[j]
    if not backfill and not pol.sticky:  # placed jobs form a prefix of the placement order
        placed = set(d.allocation)
        order = pol._order(list(queue), len(state.cluster))
        flags = [j.id in placed for j in order]
        assert flags == sorted(flags, reverse=True)
    assert d == pol.place(state, queue)  # deterministic


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.data())
def test_lv_product_is_the_domain_slowdown(M, P, data):
    """PlacementPolicy.lv_product (via fairplace.core.domain.slowdown) is L * max V, L = 1 on one
    machine, else the job's L_across (per-model table first, then the constant)."""
    G = M * P
    s = np.array(data.draw(st.lists(st.sampled_from([0.8, 1.0, 1.25]), min_size=G, max_size=G)))
    cl = grid_cluster(M, P, pm={"A": s})
    idx = np.array(sorted(data.draw(st.sets(st.integers(0, G - 1), min_size=1))))
    pol = make_policy("pal", locality_penalty=1.7, locality_by_model={"resnet": 2.5})
    pool = FreePool(cl, {"A": s}, np.ones(G, dtype=bool))
    one_machine = len(set(cl.machine_index[idx].tolist())) == 1
    for job, L in ((Job("a", idx.size, "A"), 1.7), (Job("b", idx.size, "A", model="resnet"), 2.5)):
        assert pol.lv_product(pool, job, idx) == (1.0 if one_machine else L) * float(s[idx].max())


def test_analysis_baseline_names_are_policy_names():
    # analysis may not import solvers, so it names the packed baselines itself: keep them in step
    from fairplace.analysis.tables import PACKED_BASELINES

    assert set(PACKED_BASELINES) <= set(POLICY_NAMES)
