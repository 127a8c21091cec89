"""Round-by-round auctions: filtering, leftovers, leases, determinism."""

import math

import pytest

from fairplace.domain import AgentApp, AgentJob
from fairplace.errors import OptionError
from fairplace.instances.generators import grid_cluster
from fairplace.rounds import AppState, Arbiter

CL = grid_cluster(4, 4, 2)


def _states(n=7):
    return [
        AppState(
            AgentApp(
                f"A{k}",
                (AgentJob(100.0 * (k + 1), 1.0, 1.0),),
                t_start=0.0,
                d_max=1 + k % 4,
                t_id={"n_avg": 3},
            ),
            held=(CL.gpus[k].id,) if k % 2 else (),
        )
        for k in range(n)
    ]


FREE = [g.id for g in CL.gpus[7:]]


@pytest.mark.parametrize(
    "f, n, expect", [(0.8, 7, 2), (0.8, 10, 2), (0.5, 7, 4), (0.99, 7, 1), (0.0, 3, 3)]
)
def test_filter_count(f, n, expect):
    assert Arbiter(f=f).n_participants(n) == expect  # ceil((1 - f) N), at least one


@pytest.mark.parametrize("rule", ["random", "work-conserving"])
def test_round_invariants(rule):
    out = Arbiter(f=0.6, leftover=rule, seed=3).auction_round(CL, _states(), FREE, 50.0, 0)
    assert len(out.participants) == 3
    worst = [a for a, _ in out.ranking[:3]]
    assert out.participants == sorted(worst, key=lambda a: [a for a, _ in out.ranking].index(a))
    assert not set(out.leftover_given) & set(out.participants)  # leftovers only to non-participants
    given = [g for gs in out.allocation.values() for g in gs]
    assert len(given) == len(set(given)) and set(given) <= set(FREE)  # no GPU given twice
    assert set(given) | set(out.unallocated) == set(FREE)
    assert out.lease_expiry == 650.0
    assert set(out.tables) == set(out.participants)


def test_unserved_apps_rank_worst():
    out = Arbiter(f=0.8).auction_round(CL, _states(), FREE, 50.0, 0)
    assert all(math.isinf(r) for _, r in out.ranking[:4])  # apps holding nothing: rho = inf


def test_deterministic_with_seed():
    a = Arbiter(f=0.5, rounding="lottery", seed=11)
    o1 = a.auction_round(CL, _states(), FREE, 50.0, 4)
    o2 = a.auction_round(CL, _states(), FREE, 50.0, 4)
    assert o1.allocation == o2.allocation and o1.leftover_given == o2.leftover_given


def test_cached_table_updates_leftover_rho():
    arb = Arbiter(f=0.6, seed=1)
    first = arb.auction_round(CL, _states(), FREE, 50.0, 0)
    second = arb.auction_round(CL, _states(), FREE, 60.0, 1, cache=first.tables)
    assert set(second.rho_after) == set(second.leftover_given)
    assert all(r > 0 for r in second.rho_after.values())


def test_bad_options():
    for kw in ({"f": 1.0}, {"lease": 0}, {"leftover": "x"}):
        with pytest.raises(OptionError):
            Arbiter(**kw)
