"""FreePool's tie-breaks against independent oracles: the artifact's best-match order (a full lexsort
over all free GPUs) and the fewest-machines pick (enumeration of machine subsets)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.core.domain import Job
from fairplace.instances.generators import grid_cluster
from fairplace.solvers.placement.free_pool import FreePool
from fairplace.solvers.placement.policies import ClusterState, make_policy


@st.composite
def pools(draw):
    """A small cluster with few score levels (many ties) and a random set of busy GPUs."""
    M = draw(st.integers(1, 5))
    P = draw(st.integers(1, 4))
    G = M * P
    levels = draw(st.lists(st.sampled_from([0.9, 1.0, 1.1, 1.5]), min_size=G, max_size=G))
    free = np.array(draw(st.lists(st.booleans(), min_size=G, max_size=G)))
    cl = grid_cluster(M, P, pm={"A": np.array(levels)})
    return cl, np.array(levels), free


def _machines(cl, idx):
    return len(set(cl.machine_index[np.asarray(idx)].tolist()))


@settings(max_examples=150, deadline=None)
@given(pools(), st.integers(1, 20), st.sampled_from(["machine", "level"]))
def test_pm_first_is_the_artifact_lexsort(p, n, count):
    cl, s, free = p
    pool = FreePool(cl, {"A": s}, free)
    got = pool.pm_first("A", n, count=count)
    idx = np.flatnonzero(free)
    if n > idx.size:
        assert got is None
        return
    mi = cl.machine_index
    if count == "machine":
        c = np.array([np.sum(free & (mi == mi[g])) for g in idx])
    else:
        c = np.array([np.sum(free & (mi == mi[g]) & (s == s[g])) for g in idx])
    oracle = idx[np.lexsort((idx, np.abs(c - n), s[idx]))][:n]
    assert sorted(got.tolist()) == sorted(oracle.tolist())


@settings(max_examples=150, deadline=None)
@given(pools(), st.integers(1, 20))
def test_fewest_machines_is_lv_equal_and_minimal(p, n):
    cl, s, free = p
    pool = FreePool(cl, {"A": s}, free)
    head = pool.first_free("A", n)
    if head is None:
        return
    v = s[head].max()
    got = pool.fewest_machines("A", n, v)
    assert len(set(got.tolist())) == n and free[got].all()
    assert s[got].max() <= v  # the same LV-product as PM-First (or better)
    ok = free & (s <= v)
    cnt = np.bincount(cl.machine_index[ok], minlength=len(cl.machines))
    best = min(
        k
        for k in range(1, len(cnt) + 1)
        for sub in combinations(range(len(cnt)), k)
        if cnt[list(sub)].sum() >= n
    )
    assert _machines(cl, got) == best


def test_pal_keeps_whole_machines_whole():
    # 4 machines x 4 GPUs, all one level: an 8-GPU job takes two whole machines (PM-First would
    # take them too here); after a 1-GPU job sits on machine 0, PAL puts a second 1-GPU job next to
    # it (fullest machine) and the 8-GPU job on two untouched machines.
    cl = grid_cluster(4, 4, pm={"A": np.ones(16)})
    state = ClusterState(cl, {"A": np.ones(16)}, {})
    q = [Job("s1", 1, "A"), Job("s2", 1, "A"), Job("big", 8, "A")]
    d = make_policy("pal").place(state, q)
    assert d.allocation["s1"] == (0,) and d.allocation["s2"] == (1,)
    assert cl.machine_index[list(d.allocation["big"])].tolist() == [1] * 4 + [2] * 4
    art = make_policy("pal", ties="artifact").place(state, q)
    assert _machines(cl, art.allocation["big"]) >= 2


def test_migrate_if_better_keeps_lv_equal_gpus():
    cl = grid_cluster(2, 2, pm={"A": np.ones(4)})
    flat = ClusterState(cl, {"A": np.ones(4)}, {"r": (2, 3)})
    q = [Job("r", 2, "A")]
    assert make_policy("pal").place(flat, q).allocation == {"r": (0, 1)}  # artifact: re-placed
    keep = make_policy("pal", migrate="if-better")
    assert keep.place(flat, q).allocation == {"r": (2, 3)}
    better = ClusterState(cl, {"A": np.array([1.0, 1.0, 1.2, 1.2])}, {"r": (2, 3)})
    assert keep.place(better, q).allocation == {"r": (0, 1)}  # 1.0 < 1.2: worth a migration
    assert make_policy("pm-first", migrate="if-better").place(flat, q).allocation == {"r": (2, 3)}
