"""Lease renewal at the same count moves no job: THEMIS' ARBITER may hand an app its count
back on other machines; :func:`~fairplace.sim.themis.back_to_held` moves each winner's bundle machine
for machine (same rack, same decision scores) onto machines it held, so the auction's outcome (count
per machine, spread, value) stays and only GPU identities change."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairplace
from fairplace.core.domain import spread
from fairplace.core.errors import OptionError
from fairplace.instances.workloads import themis_workload
from fairplace.sim.themis import Themis
from fairplace.sim.themis.renewal import back_to_held

#: 2 racks of 4 machines of 4 GPUs
MACHINE = np.repeat(np.arange(8), 4)
RACK = MACHINE // 4


def _machines(idx) -> list[int]:
    return sorted(set(MACHINE[np.asarray(idx)].tolist()))


@pytest.mark.parametrize("seed", [11, 5])
def test_a_lone_app_renewed_keeps_every_job_on_its_gpus(seed):
    """W2 paper scale, one app: its leases are renewed at the same count; no job moves or is
    preempted, so rho_solo is 1 (the control, swaps within a machine only, moves a job)."""
    trace = themis_workload(2, n_apps=1, seed=seed)
    kw = {"progress": False, "rho_variant": "solo"}
    res = fairplace.simulate(trace, "themis", "packed-sticky", **kw)
    assert res.summary["auctions"] >= 2  # at least one renewal
    assert res.jobs["migrations"].sum() == 0 and res.jobs["preemptions"].sum() == 0
    assert res.summary["max_rho_solo"] == pytest.approx(1.0, abs=1e-6)
    old = {"renewal": "within-machine"}
    ctl = fairplace.simulate(trace, "themis", "packed-sticky", scheduler_options=old, **kw)
    assert ctl.jobs["migrations"].sum() >= 1
    assert ctl.summary["max_rho_solo"] > 1.01


def test_an_unknown_renewal_rule_names_the_field():
    with pytest.raises(OptionError, match="scheduler_options.renewal"):
        Themis(renewal="nope")


def test_an_app_that_rewins_its_count_gets_its_machines_back():
    """Two winners: app 0 held machines 2 and 3 (rack 0) and wins 4 + 2 GPUs on machines 0 and 1;
    app 1 held machine 5 and wins 3 GPUs on machine 4 (rack 1). Each gets its machines back,
    machine for machine, the larger block where it held more."""
    before = np.full(32, -1)
    before[8:12] = 0
    before[12:14] = 0
    before[20:23] = 1
    won = {0: np.r_[0:4, 4:6], 1: np.r_[16:19]}
    pool = np.setdiff1d(np.r_[0:32], np.r_[0:6, 16:19])
    out = back_to_held(won, pool, before, MACHINE, RACK, np.zeros(32, np.int64))
    assert out[0].tolist() == [8, 9, 10, 11, 12, 13]
    assert out[1].tolist() == [20, 21, 22]


def test_no_remap_across_racks_or_scores():
    """App 0 held machine 4 (rack 1) but won on machine 0 (rack 0): it stays. App 1 held machine 2,
    but its GPUs there score differently: it stays."""
    before = np.full(32, -1)
    before[16:18] = 0
    before[8:10] = 1
    label = np.zeros(32, np.int64)
    label[8:12] = 1
    won = {0: np.r_[0:2], 1: np.r_[4:6]}
    pool = np.setdiff1d(np.r_[0:32], np.r_[0:6])
    out = back_to_held(won, pool, before, MACHINE, RACK, label)
    assert {a: g.tolist() for a, g in out.items()} == {0: [0, 1], 1: [4, 5]}


@pytest.mark.parametrize("neutral", [True, False])
def test_a_winner_on_anothers_machine_makes_way(neutral):
    """App 2 held 3 GPUs of machine 3 and wins 3 on machine 0; app 3 won 2 of app 2's GPUs on
    machine 3. With a machine of nobody's free GPUs (machine 2), app 3 moves there; without one,
    the two swap machines (each bundle fits on the other's). Either way app 2 gets its GPUs back."""
    before = np.full(32, -1)
    before[12:15] = 2
    won = {2: np.r_[0:3], 3: np.r_[12:14]}
    pool = np.r_[3, 8:12, 14, 15] if neutral else np.r_[14, 15]
    out = back_to_held(won, pool, before, MACHINE, RACK, np.zeros(32, np.int64))
    assert out[2].tolist() == [12, 13, 14]
    assert out[3].tolist() == ([8, 9] if neutral else [0, 1])


def test_no_gpu_granted_to_another_app_is_taken_without_a_fit():
    """App 0 held GPUs 4-5, which app 1 won; app 0 won GPU 0, app 2 GPUs 1-3 (machine 0), no GPU
    is free: app 1's 2-GPU block cannot fit on machine 0, so nothing moves."""
    before = np.full(32, -1)
    before[4:6] = 0
    won = {0: np.r_[0:1], 1: np.r_[4:6], 2: np.r_[1:4]}
    out = back_to_held(won, np.zeros(0, np.int64), before, MACHINE, RACK, np.zeros(32, np.int64))
    assert {a: g.tolist() for a, g in out.items()} == {a: g.tolist() for a, g in won.items()}


@st.composite
def _round(draw):
    """A random round on the 32-GPU cluster: previous owners, offered GPUs, the winners' bundles
    (disjoint, inside the offer) and decision-score labels."""
    before = np.asarray(draw(st.lists(st.integers(-1, 3), min_size=32, max_size=32)))
    label = np.asarray(draw(st.lists(st.integers(0, 1), min_size=32, max_size=32)))
    offered = np.asarray(draw(st.lists(st.booleans(), min_size=32, max_size=32)))
    who = np.asarray(draw(st.lists(st.integers(-1, 3), min_size=32, max_size=32)))
    who[~offered] = -1  # a GPU not offered is granted to nobody
    won = {a: np.flatnonzero(who == a) for a in range(4) if (who == a).any()}
    pool = np.flatnonzero(offered & (who < 0))
    takers = draw(st.sets(st.integers(0, 3)))
    return before, label, won, pool, takers


def _blocks(g, k, label) -> list:
    """Rack ``k``'s blocks of ``g``: per machine the sorted labels of its GPUs."""
    return sorted(
        sorted(label[g[MACHINE[g] == m]].tolist()) for m in set(MACHINE[g[RACK[g] == k]].tolist())
    )


def _net(g, a, before, others) -> int:
    """GPUs of ``g`` that ``a`` held, less those another recipient held."""
    return int((before[g] == a).sum() - np.isin(before[g], others).sum())


def _shape(idx):
    """What the auction priced: count per rack, GPUs per machine (sorted), spread, labels."""
    m = MACHINE[idx]
    return (
        sorted(np.bincount(RACK[idx], minlength=2).tolist()),
        sorted(np.bincount(m)[np.unique(m)].tolist()),
        spread(MACHINE, RACK, idx),
    )


@settings(max_examples=200, deadline=None)
@given(_round())
def test_the_remap_keeps_every_bundle_and_takes_nothing_granted(case):
    before, label, won, pool, takers = case
    out = back_to_held(won, pool, before, MACHINE, RACK, label, takers)
    assert set(out) == set(won)
    allg = np.concatenate([out[a] for a in out]) if out else np.zeros(0, np.int64)
    assert np.unique(allg).size == allg.size  # no GPU twice
    offer = set(pool.tolist()) | set(allg.tolist())
    for a, idx in out.items():
        w = won[a]
        # GPUs of the offer only (a winner may take one another winner's remap released)
        assert set(idx.tolist()) <= offer
        assert idx.size == w.size
        assert (
            np.bincount(RACK[idx], minlength=2).tolist()
            == np.bincount(RACK[w], minlength=2).tolist()
        )
        assert len(_machines(idx)) == len(_machines(w))
        assert _shape(idx) == _shape(w)
        assert sorted(label[idx].tolist()) == sorted(label[w].tolist())
        for k in range(2):  # per rack, the same blocks (a machine's labels)
            assert _blocks(idx, k, label) == _blocks(w, k, label)
        # GPUs it held back, less GPUs another recipient held: never worse than the auction's
        others = sorted((takers | set(won)) - {a})
        assert _net(idx, a, before, others) >= _net(w, a, before, others)


def test_two_winners_on_each_others_machines_swap():
    """App 0 held GPUs 4-5 (machine 1) and won 0-1 (machine 0); app 1 held 0-1 and won 4-5; no
    other GPU is free: they swap machines, each keeping its bundle's shape."""
    before = np.full(32, -1)
    before[4:6] = 0
    before[0:2] = 1
    won = {0: np.r_[0:2], 1: np.r_[4:6]}
    out = back_to_held(won, np.zeros(0, np.int64), before, MACHINE, RACK, np.zeros(32, np.int64))
    assert {a: g.tolist() for a, g in out.items()} == {0: [4, 5], 1: [0, 1]}
