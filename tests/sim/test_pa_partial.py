"""The ``partial`` PA rounding (``formulations/pa.py``): the paper's G_i = c_i G_i,pf in whole GPUs,
by largest remainders over the round, on exact c_i; THEMIS' default, the lottery an option."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import tiny_auction
from hypothesis import given, settings
from hypothesis import strategies as st
from test_themis_compact import _instance

import fairplace
from fairplace.core.errors import OptionError
from fairplace.formulations import pa
from fairplace.formulations.agents import to_explicit
from fairplace.instances.generators import random_agent_auction
from fairplace.instances.workloads import themis_workload
from fairplace.sim import simulate
from fairplace.sim.schedulers import make_scheduler
from fairplace.sim.themis import Themis
from fairplace.sim.themis.arbiter import Arbiter
from fairplace.sim.themis.params import THEMIS_ROUNDING
from fairplace.solvers.auction import solve_auction
from fairplace.solvers.compact import CompactAuctionOptions, solve_compact_auction


def _one_gpu_each(c):
    bundles = {3 * k + 2: (f"g{k}",) for k in range(len(c))}  # keys not 0..n-1
    return bundles, dict(zip(bundles, c, strict=True))


def _prefix(i, bundle, cap):  # a floor_pick that always fills its cap
    return bundle[:cap] if cap > 0 else None


@pytest.mark.parametrize(
    ("c", "kept"),
    [
        ((0.5, 0.5), 1),  # q = 1: exactly one of the two, never both, never none
        ((0.95,), 1),  # q = 0.95 rounds half up to 1: the app keeps its GPU
        ((0.3, 0.3, 0.3), 1),  # sum q = 0.9: one GPU in all
        ((0.2, 0.2), 0),  # sum q = 0.4: nothing
        ((0.49,), 0),
        ((0.5,), 1),  # half up
        ((1.0, 0.0, 0.7), 2),
    ],
)
def test_hand_made_rounds_keep_floor_of_sum_plus_half(c, kept):
    bundles, shares = _one_gpu_each(c)
    for seed in range(20):
        out = pa.round_shares(bundles, shares, "partial", seed, _prefix)
        assert sum(len(g) for g in out.values()) == kept
        assert all(shares[i] > 0 for i in out)  # c_i = 0 keeps nothing
        if 1.0 in c:  # c_i = 1 keeps its bundle
            assert 2 in out


def test_largest_remainders_get_the_extra_gpus():
    # q = (2.4, 1.5, 0.3): K = floor(4.2 + 0.5) = 4; floors 2 + 1 + 0 = 3; the extra one goes to 0.5
    counts = pa.partial_counts({0: 4, 1: 3, 2: 1}, {0: 0.6, 1: 0.5, 2: 0.3}, seed=0)
    assert counts == {0: 2, 1: 2, 2: 0}
    # q = (0.7, 0.6, 0.6): K = 2; the 0.7 gets one, the 0.6s draw for the other
    seen = set()
    for seed in range(30):
        k = pa.partial_counts({0: 1, 1: 1, 2: 1}, {0: 0.7, 1: 0.6, 2: 0.6}, seed)
        assert k[0] == 1 and k[1] + k[2] == 1
        seen.add(k[1])
    assert seen == {0, 1}


def test_ties_are_drawn_not_decided_by_app_id():
    """Equal remainders: over seeds each app wins about half the time, and renaming the apps
    (other keys, same draw positions) does not favour the lower id."""
    wins = {0: 0, 1: 0}
    for seed in range(200):
        k = pa.partial_counts({0: 1, 1: 1}, {0: 0.5, 1: 0.5}, seed)
        assert sum(k.values()) == 1
        wins[0] += k[0]
        wins[1] += k[1]
    assert 60 <= wins[0] <= 140 and wins[0] + wins[1] == 200  # binomial(200, 1/2): sd ~7


def test_whole_bundle_at_c_one_and_the_pick_for_fewer():
    bundles = {0: ("a", "b", "c", "d"), 1: ("e", "f")}
    picks = []

    def pick(i, bundle, cap):
        picks.append((i, cap))
        return bundle[-cap:]

    out = pa.round_shares(bundles, {0: 1.0, 1: 0.5}, "partial", 0, pick)
    assert out == {0: ("a", "b", "c", "d"), 1: ("f",)} and picks == [(1, 1)]
    # a floor_pick that finds nothing: the app keeps nothing (its GPUs are leftover)
    assert pa.round_shares(bundles, {0: 0.5, 1: 1.0}, "partial", 0, lambda *a: None) == {
        1: ("e", "f")
    }


def test_partial_needs_exact_shares():
    bundles, shares = _one_gpu_each((0.5, math.nan))
    with pytest.raises(ValueError, match="exact"):
        pa.round_shares(bundles, shares, "partial", 0, _prefix)
    with pytest.raises(OptionError, match="rounding"):
        pa.round_shares(bundles, {}, "ceil", 0, _prefix)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 8),
            st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.5, 1.0, 0.25, 1 / 3])),
        ),
        min_size=1,
        max_size=10,
    ),
    st.integers(0, 2**32 - 1),
)
def test_partial_counts_properties(apps, seed):
    """floor(q_i) <= k_i <= ceil(q_i) (1e-9 slack), |sum k - sum q| <= 1/2, every kept GPU inside
    the app's own PF bundle and none given twice, and the same outcome for the same seed."""
    bundles, shares, start = {}, {}, 0
    for k, (n, c) in enumerate(apps):
        bundles[5 * k + 1] = tuple(range(start, start + n))
        shares[5 * k + 1] = c
        start += n
    out = pa.round_shares(bundles, shares, "partial", seed, _prefix)
    assert out == pa.round_shares(bundles, shares, "partial", seed, _prefix)
    q = {i: shares[i] * len(b) for i, b in bundles.items()}
    kept = {i: len(out.get(i, ())) for i in bundles}
    for i in bundles:
        assert math.floor(q[i] - 1e-9) <= kept[i] <= math.ceil(q[i] + 1e-9), (i, q[i], kept[i])
        assert set(out.get(i, ())) <= set(bundles[i])
    assert abs(sum(kept.values()) - sum(q.values())) <= 0.5 + 1e-9
    given_out = [g for gs in out.values() for g in gs]
    assert len(given_out) == len(set(given_out))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), apps=st.integers(1, 5))
def test_explicit_bid_auction_accepts_partial(seed, apps):
    """``fairplace.solve`` on explicit bids: the kept bundle is a bid inside the PF bundle with at
    most the rule's count of GPUs (its best bid inside, which may be smaller), none given twice."""
    inst = tiny_auction(seed, apps=apps, machines=2, gpm=3, bids=4)
    sol = fairplace.solve(inst, rounding="partial", seed=seed)
    assert sol.extra["rounding"] == "partial"
    ids = [a.id for a in inst.apps]
    pf = {ids.index(a): g for a, g in sol.pf_allocation.items()}
    counts = pa.partial_counts(
        {i: len(g) for i, g in pf.items()}, {i: sol.payments[ids[i]] for i in pf}, seed
    )
    given_out = [g for gs in sol.allocation.values() for g in gs]
    assert len(given_out) == len(set(given_out))
    for a, gs in sol.allocation.items():
        i = ids.index(a)
        assert set(gs) <= set(sol.pf_allocation[a]) and 0 < len(gs) <= counts[i]
        assert tuple(gs) in {b.gpus for b in inst.apps[i].bids}
    assert set(sol.leftover) == {g for gs in pf.values() for g in gs} - set(given_out)


def test_compact_and_explicit_routes_keep_the_same_counts():
    """Where both routes pick PF bundles of the same sizes with the same c_i (the GPUs may be
    interchangeable others), ``partial`` keeps the same number of GPUs per app, inside the PF
    bundle; the kept GPUs differ by at most one from the rule's count."""
    compared = partial_somewhere = 0
    for seed in range(20):
        inst = _instance(seed, n_apps=4)  # test_themis_compact's random agent auctions
        e = solve_auction(to_explicit(inst), rounding="partial", seed=seed)
        c = solve_compact_auction(inst, config=CompactAuctionOptions("partial", seed))
        size_e = {a: len(g) for a, g in e.pf_allocation.items()}
        size_c = {a: len(g) for a, g in c.pf_allocation.items()}
        if size_e != size_c or any(
            abs(e.payments[a] - c.payments[a]) > 1e-7 for a in e.payments
        ):  # a tied PF optimum: each route rounds its own
            continue
        compared += 1
        kept_e = {a: len(g) for a, g in e.allocation.items()}
        kept_c = {a: len(g) for a, g in c.allocation.items()}
        assert kept_e == kept_c, seed
        for sol in (e, c):
            for a, gs in sol.allocation.items():
                assert set(gs) <= set(sol.pf_allocation[a])
        partial_somewhere += any(0 < kept_c.get(a, 0) < n for a, n in size_c.items())
    assert compared >= 15 and partial_somewhere >= 3, (compared, partial_somewhere)


CASES = [(seed, empty) for seed in (1, 2, 3, 6, 7) for empty in ("finite", "null")]


@pytest.mark.parametrize(("seed", "empty"), CASES)
def test_partial_reads_exact_payments_in_the_simulators_mode(seed, empty):
    """``exact_payments=False`` (THEMIS' simulator) leaves a PF_{-i} open only for the lottery:
    under ``partial`` every c_i equals the exact one (the LP / MILP route, ``enum_limit=0``)."""
    rng = np.random.default_rng(seed)
    inst = random_agent_auction(
        apps=int(rng.integers(3, 7)), machines=4, machines_per_rack=2, seed=seed, rho_empty=empty
    )
    cfg = CompactAuctionOptions(rounding="partial", seed=seed, enum_limit=0)
    exact = solve_compact_auction(inst, config=cfg)
    sim = solve_compact_auction(inst, config=cfg.with_(exact_payments=False))
    assert not any(math.isnan(c) for c in sim.payments.values())
    assert not {"lottery", "lottery_drop"} & set(sim.extra["loo_routes"])
    assert sim.payments == pytest.approx(exact.payments, abs=1e-9)
    assert sim.allocation == exact.allocation


def test_the_lottery_still_leaves_payments_open():
    """The contrast that makes the test above bite: the lottery in the same mode leaves some open."""
    opened = 0
    for seed, empty in CASES:
        rng = np.random.default_rng(seed)
        inst = random_agent_auction(
            apps=int(rng.integers(3, 7)),
            machines=4,
            machines_per_rack=2,
            seed=seed,
            rho_empty=empty,
        )
        cfg = CompactAuctionOptions("lottery", seed, enum_limit=0, exact_payments=False)
        sol = solve_compact_auction(inst, config=cfg)
        opened += sum(math.isnan(c) for c in sol.payments.values())
        if opened:
            break
    assert opened > 0


def test_partial_is_themis_default_and_checked():
    assert Arbiter().rounding == "partial" == THEMIS_ROUNDING.default
    assert Themis().arbiter.rounding == "partial"
    assert make_scheduler("themis", rounding="lottery").arbiter.rounding == "lottery"
    with pytest.raises(OptionError, match="scheduler_options.rounding"):
        make_scheduler("themis", rounding="ceil")
    with pytest.raises(OptionError, match="scheduler_options.rounding"):
        Arbiter(rounding="ceil")


@pytest.fixture(scope="module")
def contended():
    # 8 apps of the small variant at contention x4 (a 64-GPU workload on 16 GPUs), f = 0.5 so that
    # auctions have several bidders
    return themis_workload(
        2, scale="small", n_apps=8, base_gpus=64, contention=4, jobs_range=(3, 6),
        task_gpu_hours=0.5, seed=0,
    )  # fmt: skip


@pytest.mark.parametrize("asked", [None, "lottery"])
def test_themis_simulation_rounds_with_partial_by_default(contended, asked, monkeypatch):
    """A small THEMIS run rounds every auction with ``partial`` by default (on exact c_i, never
    keeping more than the rule's count) and with the lottery when asked."""
    real, seen = pa.round_shares, []

    def spy(bundles, c, rule, seed, pick):
        out = real(bundles, c, rule, seed, pick)
        seen.append((rule, bundles, c, out))
        return out

    monkeypatch.setattr(pa, "round_shares", spy)
    opts = {"f": 0.5} if asked is None else {"f": 0.5, "rounding": asked}
    res = simulate(contended, "themis", "packed-sticky", progress=False, scheduler_options=opts)
    assert res.jobs["finish"].notna().all()
    assert seen and {rule for rule, *_ in seen} == {asked or "partial"}
    if asked is None:
        assert not any(math.isnan(x) for _, _, c, _ in seen for x in c.values())
        for _, bundles, c, out in seen:  # every round kept what the rule counts, at most
            counts = pa.partial_counts({i: len(b) for i, b in bundles.items()}, c, 0)
            assert sum(map(len, out.values())) <= sum(counts.values())
            assert all(set(g) <= set(bundles[i]) for i, g in out.items())
