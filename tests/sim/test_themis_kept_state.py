"""What the app scheduler and the lease renewal keep, or skip, between and within decisions equals
what they would compute afresh: the running jobs kept while the active jobs are the same, each
app's split kept while its GPUs, jobs and holdings are, and the renewal's remaps and swaps not
redone while no GPU has moved (a remap gives back the GPUs it is given)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.sim.running import HeldGPUs
from fairplace.sim.themis.apps import AppScheduler, _groups_of, running_jobs
from fairplace.sim.themis.renewal import Renewal, _takers_lut

#: 4 machines of 4 GPUs; 8 jobs of 3 apps in 2 phases
MACHINE = np.arange(16) // 4
W = SimpleNamespace(
    app=np.array([0, 0, 0, 1, 1, 2, 2, 2]),
    phase=np.array([0, 0, 1, 0, 0, 0, 1, 1]),
    app_ids=["a", "b", "c"],
    demand=np.array([2, 1, 3, 4, 2, 1, 2, 2]),
    t_iter=np.array([1.0, 0.5, 2.0, 1.5, 1.0, 3.0, 0.25, 1.0]),
)


def _view(active, remaining) -> SimpleNamespace:
    return SimpleNamespace(
        active=np.asarray(active, np.int64),
        remaining=np.asarray(remaining, float),
        attained=np.asarray(remaining, float)[::-1].copy(),
    )


def _same_groups(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


_step = st.tuples(
    st.lists(st.integers(0, 7), unique=True, max_size=8),  # the active jobs
    st.lists(st.integers(-1, 2), min_size=16, max_size=16),  # the owner of each GPU
    st.lists(st.floats(1.0, 1e4), min_size=8, max_size=8),  # iterations left
    st.lists(st.booleans(), min_size=8, max_size=8),  # which jobs the driver let keep GPUs
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_step, min_size=1, max_size=8), st.sampled_from(["restart-aware", "even"]))
def test_the_kept_state_equals_one_made_afresh(steps, app_split):
    sch = AppScheduler(MACHINE, app_split, move_cost=45.0)
    held: dict = {}
    for active, owner, remaining, keeps in steps:
        view = _view(sorted(active), remaining)
        owner = np.asarray(owner, np.int64)
        running = sch.running(view, W)
        assert _same_groups(running, running_jobs(view, W))
        usable = sch.usable(running, view, W, HeldGPUs(held))
        fresh = AppScheduler(MACHINE, app_split, move_cost=45.0)
        assert usable.tolist() == fresh.usable(dict(running), view, W, HeldGPUs(held)).tolist()
        out = sch.split(owner, view, W, HeldGPUs(held), running)
        # the kept GPUs per app, and the bytes each app's split is keyed on, are those of now
        owned = np.flatnonzero(owner >= 0)
        assert _same_groups(sch.owned[1], _groups_of(owner[owned], owned))
        for a, (gpus, gb, run, rb, split) in sch.memo.items():
            assert gb == sch.owned[1][a].tobytes() == gpus.tobytes()
            assert rb == run.tobytes() == running.get(a, np.zeros(0, np.int64)).tobytes()
            assert all(out[j] is g for j, g in split.items())
        again = sch.split(owner, view, W, HeldGPUs(dict(out)), running)  # nothing changed
        assert again.keys() == out.keys() and all(again[j] is g for j, g in out.items())
        # the driver keeps some of the split's arrays, drops the others (a preemption)
        held = {j: g for (j, g), k in zip(sorted(out.items()), keeps, strict=False) if k}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.integers(0, 7), unique=True, max_size=8), min_size=1, max_size=6))
def test_the_running_jobs_are_kept_while_the_active_jobs_are_the_same(actives):
    sch = AppScheduler(MACHINE)
    last = None
    for active in actives:
        view = _view(sorted(active), np.ones(8))
        got = sch.running(view, W)
        assert _same_groups(got, running_jobs(view, W))
        if last is not None and last[0] == sorted(active):
            assert got is last[1]  # the same dict: nothing recomputed
        assert all(not g.flags.writeable for g in got.values())  # shared: read only
        last = (sorted(active), got)


# -- lease renewal ---------------------------------------------------------------------------------

#: 2 racks of 4 machines of 4 GPUs
R_MACHINE = np.repeat(np.arange(8), 4)
R_RACK = R_MACHINE // 4


@st.composite
def _round(draw):
    """A random round: previous owners, labels, the winners' bundles (disjoint, in the offer),
    the GPUs left in the offer and the other recipients."""
    before = np.asarray(draw(st.lists(st.integers(-1, 3), min_size=32, max_size=32)))
    label = np.asarray(draw(st.lists(st.integers(0, 1), min_size=32, max_size=32)))
    offered = np.asarray(draw(st.lists(st.booleans(), min_size=32, max_size=32)))
    who = np.asarray(draw(st.lists(st.integers(-1, 3), min_size=32, max_size=32)))
    who[~offered] = -1
    won = {a: np.flatnonzero(who == a) for a in range(4) if (who == a).any()}
    return before, label, won, np.flatnonzero(offered & (who < 0)), draw(st.sets(st.integers(0, 3)))


def _reference(r: Renewal, won, pool, before, takers, passes) -> dict:
    """The renewal with every remap and every pass of swaps done (nothing skipped)."""
    free = np.zeros(before.size, bool)
    free[pool] = True
    takers = set(won) | set(takers)
    out = {a: np.sort(np.asarray(g, np.int64)) for a, g in won.items()}
    if not out:
        return out
    offer = np.concatenate([np.flatnonzero(free), *out.values()])
    base = _takers_lut(before, takers)[before + 1]
    cats = {}
    for a in out:
        cats[a] = c = base.copy()
        c[before == a] = 0
    for _ in range(passes):
        changed = False
        best = [
            a
            for a in out
            if not (cats[a][out[a]] == 2).any()
            and np.count_nonzero(cats[a][out[a]] == 0) == np.count_nonzero(cats[a][offer] == 0)
        ]
        if len(best) == len(out):
            break
        for a in sorted(set(out) - set(best)):
            own = out[a]
            free[own] = True
            f = np.flatnonzero(free)
            out[a] = r._remap(own, f, cats[a][f])
            changed |= not np.array_equal(out[a], own)
            free[out[a]] = False
        if len(out) > 1:
            changed |= r._swap_pairs(out, free, cats, offer)
        if not changed:
            break
    return out


@settings(max_examples=200, deadline=None)
@given(_round(), st.integers(1, 4))
def test_the_renewal_skips_only_what_would_not_change(case, passes):
    before, label, won, pool, takers = case
    r = Renewal(R_MACHINE, R_RACK, label)
    got = r(won, pool, before, takers, passes)
    want = _reference(r, won, pool, before, takers, passes)
    assert got.keys() == want.keys()
    assert all(got[a].tolist() == want[a].tolist() for a in got)


@settings(max_examples=200, deadline=None)
@given(_round())
def test_a_remap_gives_back_the_gpus_it_is_given(case):
    """The rule the renewal's skipping rests on: remapped once, a winner's GPUs stay put when
    remapped again on the same free GPUs."""
    before, label, won, pool, takers = case
    r = Renewal(R_MACHINE, R_RACK, label)
    base = _takers_lut(before, set(won) | takers)[before + 1]
    free = np.zeros(32, bool)
    free[pool] = True
    for a, own in won.items():
        cat = base.copy()
        cat[before == a] = 0
        f = np.flatnonzero(free | np.isin(np.arange(32), own))
        once = r._remap(own, f, cat[f])
        assert r._remap(once, f, cat[f]).tolist() == once.tolist()
