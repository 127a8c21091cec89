"""The speed-ups against their slow definitions: a run of single-GPU picks equals one
``pm_first(cls, 1)`` + ``take`` per job, and a round resumed from the previous decision equals the
round placed from scratch, for any change of the queue."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_pal_engine import pools

from fairplace.benchmarks.scaling import exponent
from fairplace.core.domain import Job
from fairplace.instances.generators import grid_cluster
from fairplace.solvers.placement.cache import PlacementCache
from fairplace.solvers.placement.free_pool import FreePool
from fairplace.solvers.placement.policies import ClusterState, make_policy


@settings(max_examples=150, deadline=None)
@given(pools(), st.integers(1, 25), st.sampled_from(["machine", "level"]))
def test_pm_first_singles_is_one_pm_first_per_job(p, k, count):
    cl, s, free = p
    one = FreePool(cl, {"A": s}, free.copy())
    expected = []
    for _ in range(k):
        g = one.pm_first("A", 1, count=count)
        if g is None:
            break
        one.take(g)
        expected.append(int(g[0]))
    run = FreePool(cl, {"A": s}, free.copy())
    assert run.pm_first_singles("A", k, count).tolist() == expected
    assert np.array_equal(run.free, one.free) and np.array_equal(run.nfree_m, one.nfree_m)


def _queue(draw, n, tag):
    return [
        Job(
            f"{tag}{i}",
            draw(st.sampled_from([1, 1, 1, 2, 3, 4, 8])),
            draw(st.sampled_from(["A", "B"])),
        )
        for i in range(n)
    ]


@st.composite
def queue_changes(draw):
    """A cluster with two classes of tied scores, a queue, and the same queue after completions
    (removals), arrivals (insertions) and a reordering of a tail."""
    M, P = draw(st.integers(2, 6)), draw(st.sampled_from([2, 4]))
    G = M * P
    lv = st.sampled_from([0.9, 1.0, 1.2])
    scores = {c: np.array(draw(st.lists(lv, min_size=G, max_size=G))) for c in "AB"}
    first = _queue(draw, draw(st.integers(0, 14)), "j")
    second = [j for j in first if draw(st.integers(0, 4))]  # some complete
    for j in _queue(draw, draw(st.integers(0, 4)), "n"):
        second.insert(draw(st.integers(0, len(second))), j)
    if second and draw(st.booleans()):
        cut = draw(st.integers(0, len(second) - 1))
        second = second[:cut] + list(reversed(second[cut:]))
    return grid_cluster(M, P, pm=scores), scores, first, second


@settings(max_examples=150, deadline=None)
@given(
    queue_changes(),
    st.sampled_from(
        [("pal", {}), ("pal", {"ties": "artifact"}), ("pm-first", {}), ("packed-non-sticky", {})]
    ),
    st.booleans(),
)
def test_resumed_round_equals_round_from_scratch(c, policy, backfill):
    cl, scores, first, second = c
    pol = make_policy(policy[0], backfill=backfill, **policy[1])
    assert pol.resumable
    prev = pol.place(ClusterState(cl, scores, {}), first)
    state = ClusterState(cl, scores, {j: g for j, g in prev.allocation.items()})
    fresh = pol.place(state, second)
    resumed = pol.place(state, second, previous=prev)
    assert list(resumed.allocation.items()) == list(fresh.allocation.items())
    assert resumed.preempted == fresh.preempted


def test_round_seeded_sticky_and_if_better_policies_do_not_resume():
    assert not make_policy("random-non-sticky").resumable
    assert not make_policy("packed-sticky").resumable
    assert not make_policy("pal", migrate="if-better").resumable


def test_growth_exponent_is_the_log_log_slope():
    assert abs(exponent([1, 2, 4, 8], [3, 12, 48, 192]) - 2.0) < 1e-9
    assert abs(exponent([10, 100], [0.5, 5.0]) - 1.0) < 1e-9


def test_rounds_sharing_a_cache_sort_each_class_once_and_see_changed_scores():
    """The per-class score orders are kept in the caller's :class:`PlacementCache` across rounds
    (no ``previous``): a round on equal scores reuses them, a round on scores changed in place
    sorts again; a round without a cache places the same."""
    cl = grid_cluster(8, 4)
    rng = np.random.default_rng(3)
    scores = {"A": rng.choice([1.0, 1.1, 1.3], len(cl))}
    queue = [Job(f"j{i}", g, "A") for i, g in enumerate([1, 2, 1, 4, 3, 1, 2])]
    pol = make_policy("pal", backfill=True)
    cache = PlacementCache()
    first = pol.place(ClusterState(cl, scores, {}, cache=cache), queue)
    order = cache.sorted_for(cl, scores)["A"]
    again = pol.place(ClusterState(cl, dict(scores), {}, cache=cache), queue)
    assert again.allocation == first.allocation
    assert cache.sorted_for(cl, scores)["A"] is order
    assert pol.place(ClusterState(cl, scores, {}), queue).allocation == first.allocation
    scores["A"][:] = scores["A"][::-1].copy()  # changed in place: the orders must follow
    changed = pol.place(ClusterState(cl, scores, {}, cache=cache), queue)
    fresh = make_policy("pal", backfill=True).place(
        ClusterState(grid_cluster(8, 4), {"A": scores["A"].copy()}, {}), queue
    )
    assert changed.allocation == fresh.allocation


def test_placement_cache_holds_one_cluster_at_a_time():
    """A new cluster empties the cache: its layout and GPU tuples are the new cluster's."""
    cache = PlacementCache()
    small, big = grid_cluster(2, 4), grid_cluster(3, 8)
    assert cache.layout(small) == (4, True) and cache.gpu_tuples(small)[0] == tuple(range(8))
    assert cache.layout(big) == (8, True)
    assert cache.gpu_tuples(big) == (tuple(range(24)), tuple((g,) for g in range(24)))
    assert cache.gpu_tuples(big)[1] is cache.gpu_tuples(big)[1]  # made once per cluster
