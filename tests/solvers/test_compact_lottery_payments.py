"""Payments only as far as the lottery needs them (``CompactAuctionOptions(exact_payments=False)``,
what THEMIS' simulator asks for): the same allocation as with exact payments; an app whose PF_{-i}
was left open keeps its bundle iff its exact c_i is above its draw."""

import math

import numpy as np
import pytest

from fairplace.instances.generators import random_agent_auction
from fairplace.solvers.compact import CompactAuctionOptions, pa_payments, solve_compact_auction

CASES = [(seed, empty) for seed in (0, 1, 2, 3, 5, 6, 7, 8) for empty in ("finite", "null")]


def _auction(seed: int, empty: str):
    rng = np.random.default_rng(seed)
    return random_agent_auction(
        apps=int(rng.integers(3, 7)), machines=4, machines_per_rack=2, seed=seed, rho_empty=empty
    )


def _both(seed: int, empty: str, draw_seed: int):
    inst = _auction(seed, empty)
    cfg = CompactAuctionOptions(rounding="lottery", seed=draw_seed, enum_limit=0)  # LP / MILP
    return solve_compact_auction(inst, config=cfg), solve_compact_auction(
        inst, config=cfg.with_(exact_payments=False)
    )


@pytest.mark.parametrize(("seed", "empty"), CASES)
def test_open_payments_give_the_exact_payments_allocation(seed, empty):
    """Same allocation and PF; every c_i left open (NaN) is, exactly, above the app's draw when
    the app kept its bundle and at most the draw when it lost it (draw k of the seeded stream
    decides the k-th app of the PF, ``pa.round_shares``); the other c_i are the exact ones."""
    for draw_seed in range(2):
        exact, open_ = _both(seed, empty, draw_seed)
        assert open_.allocation == exact.allocation
        assert open_.pf_allocation == exact.pf_allocation
        ids = sorted(exact.pf_allocation, key=lambda a: int(a[1:]))  # app k = id "A<k>"
        draws = dict(zip(ids, np.random.default_rng(draw_seed).random(len(ids)), strict=True))
        for a, c in open_.payments.items():
            if math.isnan(c) and a in open_.allocation:
                assert exact.payments[a] > draws[a], (a, exact.payments[a], draws[a])
            elif math.isnan(c):
                assert exact.payments[a] <= draws[a], (a, exact.payments[a], draws[a])
            else:
                assert c == pytest.approx(exact.payments[a], abs=1e-7)


def test_open_payments_are_left_open_and_exact_by_default():
    """The routes fire on these auctions (the test above is not vacuous): kept for bounded and
    unbounded rho(nothing), dropped too; the default keeps every c_i exact."""
    fired = {"finite": 0, "null": 0, "drop": 0}
    for seed, empty in CASES:
        exact, open_ = _both(seed, empty, 0)
        assert not any(math.isnan(c) for c in exact.payments.values())
        assert not {"lottery", "lottery_drop"} & set(exact.extra["loo_routes"])
        kept = open_.extra["loo_routes"].get("lottery", 0)
        drop = open_.extra["loo_routes"].get("lottery_drop", 0)
        assert kept + drop == sum(math.isnan(c) for c in open_.payments.values())
        fired[empty] += kept
        fired["drop"] += drop
    assert min(fired.values()) > 0, fired


def _bounds_and_exact(name: str, decide: float, **also):
    """(bound, exact c_i) of every app the payments bound with ``pa_payments.<name>`` (spied; it
    then returns ``decide``, so that every bounded app is decided and none is closed), over
    CASES; ``also``: other functions of ``pa_payments`` replaced meanwhile."""
    out = []
    real = getattr(pa_payments, name)
    for seed, empty in CASES:
        inst = _auction(seed, empty)
        cfg = CompactAuctionOptions(rounding="lottery", enum_limit=0)
        exact = solve_compact_auction(inst, config=cfg)
        ids, seen = list(exact.payments), []

        def spy(prog, i, *args, seen=seen):
            seen.append((i, real(prog, i, *args)))
            return decide

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(pa_payments, name, spy)
            for other, f in also.items():
                mp.setattr(pa_payments, other, f)
            solve_compact_auction(inst, config=cfg.with_(exact_payments=False))
        out += [(bound, exact.payments[ids[i]]) for i, bound in seen]
    return out


def test_lottery_floor_is_below_every_exact_payment():
    """The bound from every leave-one-out LP the payments solve: at most the exact c_i."""
    pairs = [(b, c) for b, c in _bounds_and_exact("lottery_floor", 2.0) if b is not None]
    assert pairs and all(b <= c + 1e-12 for b, c in pairs), pairs


def test_lottery_ceiling_is_above_every_exact_payment():
    """The bound from the starts of every split leave-one-out LP the payments reach (no app kept
    by the floor first): at least the exact c_i."""
    pairs = _bounds_and_exact("lottery_ceiling", -1.0, lottery_floor=lambda *a: None)
    assert pairs and all(b >= c - 1e-12 for b, c in pairs), pairs


def test_lottery_floor_needs_the_served_count_settled():
    """With unbounded apps the LP value is M x served + log-sum: a value that leaves room for one
    more served app gives no bound (c_i may be 0); below it, the bound is exp(L - (V - M s))."""
    from fairplace.formulations.compact import CompactProgram, compact_apps
    from fairplace.formulations.pf import PFValue

    inst = random_agent_auction(apps=4, machines=4, machines_per_rack=2, seed=3, rho_empty="null")
    prog = CompactProgram(inst.cluster, tuple(range(16)), compact_apps(inst), reduced=False)
    m, s_range = prog.big_m, prog.log_sum_range
    with_i = PFValue(2, -1.0)
    assert pa_payments.lottery_floor(prog, 0, m * 3 - s_range, with_i) is None
    got = pa_payments.lottery_floor(prog, 0, m * 2 - 0.5, with_i)
    v = (m * 2 - 0.5) * (1 + 1e-5) + 1e-5  # the slack for the LP's tolerances
    assert got == pytest.approx(math.exp(-1.0 - (v - 2 * m)))
    assert got < math.exp(-0.5)
