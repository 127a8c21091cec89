"""The incremental pool index (solvers/placement/pool_index.py) against naive picks written from the definitions:
random small pools with many tied scores, machines of unequal size, GPUs grouped by machine (the
indexed path) or interleaved (the scan path), and a random sequence of picks, takes and releases on
one pool, so that every pick after the first runs on an index updated incrementally."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.core.domain import GPU, Cluster
from fairplace.solvers.placement.free_pool import FreePool


@st.composite
def pools(draw):
    """(cluster, scores, free): 1-6 machines of 1-4 GPUs, scores from 1-3 levels, some GPUs busy."""
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=6))
    machine = [m for m, k in enumerate(sizes) for _ in range(k)]
    if draw(st.booleans()):  # interleave the machines' GPUs (not grouped by machine)
        machine = draw(st.permutations(machine))
    G = len(machine)
    levels = draw(st.sampled_from([[1.0], [0.9, 1.0], [0.9, 1.0, 1.3]]))
    s = np.array(draw(st.lists(st.sampled_from(levels), min_size=G, max_size=G)))
    gpus = tuple(GPU(f"g{i}", f"m{m}", pm={"A": float(s[i])}) for i, m in enumerate(machine))
    free = np.array(draw(st.lists(st.booleans(), min_size=G, max_size=G)))
    return Cluster(gpus), s, free


# ---- naive picks, from the definitions ------------------------------------------------------------
def _free_on(cl, free, m):
    return [g for g in range(len(cl)) if free[g] and cl.machine_index[g] == m]


def naive_pm_first(cl, s, free, n):
    """The n lowest free scores; in the level of the n-th, by (|free GPUs on the machine - n|, index)."""
    F = sorted((g for g in range(len(cl)) if free[g]), key=lambda g: (s[g], g))
    if len(F) < n:
        return None
    v = s[F[n - 1]]
    below = [g for g in F if s[g] < v]
    tie = sorted(
        (g for g in F if s[g] == v),
        key=lambda g: (abs(len(_free_on(cl, free, cl.machine_index[g])) - n), g),
    )
    return sorted(below + tie[: n - len(below)])


def naive_fewest(cl, s, free, n, v_max):
    """Machines by most eligible (free, score <= v_max) GPUs, then index, until they cover n; the last
    replaced by the best fit (fewest eligible >= the rest, lowest index) among the others; on each
    machine its lowest eligible scores (then index)."""
    M = len(cl.machines)
    elig = {m: [g for g in _free_on(cl, free, m) if s[g] <= v_max] for m in range(M)}
    order = sorted(range(M), key=lambda m: (-len(elig[m]), m))
    used, total = [], 0
    for m in order:
        if total + len(elig[m]) >= n:
            break
        used.append(m)
        total += len(elig[m])
    rest = n - total
    last = min((m for m in order if m not in used and len(elig[m]) >= rest),
               key=lambda m: (len(elig[m]), m))  # fmt: skip
    take = [(m, len(elig[m])) for m in used] + [(last, rest)]
    return sorted(g for m, k in take for g in sorted(elig[m], key=lambda g: (s[g], g))[:k])


def naive_best_within(cl, s, free, n):
    """Min over machines with >= n free GPUs of the n-th lowest free score, then fewest free GPUs,
    then machine index; the machine's n lowest free scores (then index)."""
    best = None
    for m in range(len(cl.machines)):
        F = sorted(_free_on(cl, free, m), key=lambda g: (s[g], g))
        if len(F) >= n:
            key = (s[F[n - 1]], len(F), m)
            if best is None or key < best[0]:
                best = (key, F[:n])
    return None if best is None else (float(best[0][0]), sorted(best[1]))


# ---- the property ---------------------------------------------------------------------------------
ops = st.lists(
    st.tuples(st.sampled_from(["pm_first", "singles", "fewest", "within", "release"]),
              st.integers(1, 6)),
    min_size=1, max_size=12,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(pools(), ops)
def test_indexed_picks_equal_naive_picks(p, seq):
    cl, s, free = p
    pool = FreePool(cl, {"A": s}, free.copy(), index=True)
    free = free.copy()
    for op, n in seq:
        if op == "release":  # a sticky preemption: n busy GPUs come back
            busy = np.flatnonzero(~free)[:n]
            pool.release(busy)
            free[busy] = True
            continue
        if op == "singles":
            want = []
            for _ in range(n):
                g = naive_pm_first(cl, s, free, 1)
                if g is None:
                    break
                want += g
                free[g] = False
            assert pool.pm_first_singles("A", n).tolist() == want
            continue
        if op == "pm_first":
            got, want = pool.pm_first("A", n), naive_pm_first(cl, s, free, n)
            assert (None if got is None else sorted(got.tolist())) == want
        elif op == "fewest":
            head = pool.first_free("A", n)
            if head is None:
                continue
            v = float(s[head].max())
            got, want = pool.fewest_machines("A", n, v), naive_fewest(cl, s, free, n, v)
            assert sorted(got.tolist()) == want
        else:
            r, want = pool.best_within("A", n), naive_best_within(cl, s, free, n)
            got = None if r is None else (r[0], sorted(r[1].tolist()))
            assert got == want
        if got is not None and (op != "within" or n % 2):  # take some picks, leave others
            idx = np.asarray(sorted(got) if op != "within" else got[1])
            pool.take(idx)
            free[idx] = False
    assert np.array_equal(pool.free[: len(cl)], free)


class _Indexed(FreePool):
    """A pool that always picks through the index (the automatic choice uses it on large clusters
    only, and the reference cases are small)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{**kwargs, "index": True})


def test_reference_picks_and_simulations_through_the_index(monkeypatch):
    import speedup_cases as sc

    from fairplace.solvers.placement import policy_round

    monkeypatch.setattr(policy_round, "FreePool", _Indexed)
    monkeypatch.setenv("FAIRPLACE_KERNEL", "python")  # the index, not the compiled kernel
    ref = sc.load_reference()
    for args in sc.placement_params():
        key = sc.placement_key(*args)
        sc.assert_matches(sc.placement_case(*args), ref["placement"][key], key)
    for args in sc.SIMULATIONS:
        key = sc.simulation_key(*args)
        sc.assert_matches(sc.simulation_case(*args), ref["simulation"][key], key)
