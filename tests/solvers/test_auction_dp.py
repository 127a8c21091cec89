"""The compact auction's DP route (``solvers/compact/dp.py``, homogeneous offers) = the full MILP
route on auctions captured from THEMIS runs (stored with the MILP's results by
``papers/themis/experiments/auction_exactness.py``), = the enumeration on random small homogeneous offers, and its
allocations are valid."""

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, note, settings
from hypothesis import strategies as st

from fairplace.benchmarks.auction_dp import load_captured, solve_captured
from fairplace.core.domain import spread
from fairplace.core.errors import OptionError
from fairplace.formulations import pa
from fairplace.formulations.agents import RhoTable
from fairplace.formulations.compact import CompactApp, CompactProgram
from fairplace.instances.generators import grid_cluster
from fairplace.solvers.compact import CompactAuctionOptions, auction_on_offer
from fairplace.solvers.compact.dp import dp_suits, solve_dp
from fairplace.solvers.compact.enumeration import enumerate_auction
from fairplace.solvers.options import SolveOptions

SAMPLE = Path(__file__).parents[1] / "data" / "auction_dp_sample.json.gz"
REL = 1e-9
OPTS = SolveOptions(parallel=False, mip_allow_restart=False)


def _on_offer(cl, offer, apps, **config):
    """The auction of compact ``apps`` on ``offer`` as a Solution, bidders named by their tables."""
    res = auction_on_offer(cl, offer, apps, OPTS, CompactAuctionOptions(**config))
    return res.solution(cl, [a.table.app_id for a in apps], "compact")


def _close(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= REL * (1.0 + abs(b))


AUCTIONS = load_captured(SAMPLE) if SAMPLE.exists() else []


def _check_valid(prog: CompactProgram, choice: dict, ids=None) -> None:
    """No GPU twice, only offered GPUs, the program's cells, n GPUs per cell, the cell's spread
    (and held place)."""
    cl, offer = prog.cluster, set(prog.offer)
    used = [g for _, gpus in choice.values() for g in gpus]
    assert len(used) == len(set(used)) and set(used) <= offer
    for i, ((n, s, v), gpus) in choice.items():
        assert (n, s, v) in prog.feasible_cells(i)  # one of the program's cells (MILP starts)
        idx = np.array(gpus, np.int64)
        assert len(gpus) == n
        assert spread(cl.machine_index, cl.rack_index, idx) <= s
        a = prog.apps[i]
        if s == 0 and a.held_machine >= 0:
            assert set(cl.machine_index[idx].tolist()) == {a.held_machine}
        if s <= 1 and a.held_rack >= 0:
            assert set(cl.rack_index[idx].tolist()) == {a.held_rack}


def test_the_sample_is_there_and_varied():
    assert len(AUCTIONS) >= 100
    assert {a["where"].split(":")[0] for a in AUCTIONS} == {
        "small",
        "paper",
    }  # W2 scales    assert len({len(a["apps"]) for a in AUCTIONS}) >= 3  # bidders per auction
    assert max(len(a["offer"]) for a in AUCTIONS) >= 16
    assert any(x.held_machine >= 0 for a in AUCTIONS for x in a["apps"])


@pytest.mark.parametrize("k", range(0, max(len(AUCTIONS), 1), 20))
def test_dp_equals_the_milp_route_on_captured_auctions(k):
    """PF objective and every c_i of the DP route = the full MILP route's (stored), to 1e-9;
    where the two PFs are tied optima giving some app another rho, the MILP's c_i = its PF's
    others' value over the DP's PF_{-i}."""
    for a in AUCTIONS[k : k + 20]:
        ref = a["ref"]
        sol = solve_captured(a)
        assert sol.extra["pf_route"] == "dp"
        assert _close(sol.objective, ref["objective"])
        assert len(sol.extra["unserved_unbounded"]) == ref["unserved"]
        prog = CompactProgram(a["cluster"], tuple(a["offer"]), a["apps"], reduced=False)
        dp = solve_dp(prog, limit=10**9, every=True)
        pos = {x: j for j, x in enumerate(a["ids"])}
        ref_choice = {pos[x]: (tuple(c), ()) for x, c in ref["cells"].items()}
        for x, c in sol.payments.items():
            assert 0.0 <= c <= 1.0
            r = ref["payments"][x]
            if not _close(c, r):  # tied PF optima only
                assert sol.extra["cells"] != ref["cells"]
                i = pos[x]
                assert _close(pa.payment(prog.value_without(ref_choice, i), dp.loo[i]), r)
        _check_valid(prog, dp.choice)


def test_the_stored_references_are_the_milp_routes():
    """A few stored references re-solved by the full MILP route (the rest: the same script)."""
    for a in AUCTIONS[:: max(1, len(AUCTIONS) // 4)][:4]:
        sol = solve_captured(a, route="compact", enum_limit=0)
        assert sol.extra["pf_route"] not in ("dp", "enumeration")
        assert _close(sol.objective, a["ref"]["objective"])


def random_homogeneous(seed: int, monotone: bool):
    """(cluster, offer, compact apps): 1-5 machines of 1-4 GPUs in racks of 1-3 machines, one PM
    score per class (a homogeneous offer), 1-5 apps with random rho tables, some holding GPUs
    (single machine, one rack or several), some with an unbounded rho(nothing)."""
    rng = np.random.default_rng(seed)
    M, per = int(rng.integers(1, 6)), int(rng.integers(1, 5))
    G = M * per
    pm = {"A": np.full(G, 1.25), "B": np.full(G, 0.9)}
    cl = grid_cluster(M, per, int(rng.integers(1, 4)), pm=pm)
    free = list(rng.permutation(G))
    held_by = []
    for _ in range(int(rng.integers(1, 6))):
        k = int(rng.integers(1, 3)) if rng.random() < 0.35 and len(free) > 2 else 0
        held_by.append(np.array(sorted(free[:k]), np.int64))
        free = free[k:]
    offer = np.array(sorted(free[: int(rng.integers(1, len(free) + 1))]), np.int64)
    apps = []
    for a, held in enumerate(held_by):
        cls = [None, "A", "B"][int(rng.integers(3))]
        levels = np.array([1.0 if cls is None else pm[cls][0]])
        n_max = int(rng.integers(1, offer.size + 1))
        shape = (n_max + 1, 3, 1)
        if monotone:
            base = np.cumprod(rng.uniform(0.5, 1.0, n_max + 1)) * rng.uniform(1, 5)
            loc = np.cumprod([1.0, *rng.uniform(1.0, 1.5, 2)])
            rho = base[:, None, None] * loc[None, :, None]
        else:
            rho = np.exp(rng.normal(0.0, 1.0, shape))
        if rng.random() < 0.2:  # equal values: ties between apps and between options
            rho = np.round(rho, 1) + 0.1
        if not held.size and rng.random() < 0.3:
            rho[0] = np.inf
        h_level, h_spread, hm, hr = -1, 0, -1, -1
        if held.size:
            h_level = 0
            h_spread = spread(cl.machine_index, cl.rack_index, held)
            ms, rs = np.unique(cl.machine_index[held]), np.unique(cl.rack_index[held])
            hm = int(ms[0]) if ms.size == 1 else -1
            hr = int(rs[0]) if rs.size == 1 else -1
        table = RhoTable(f"a{a}", levels, rho, int(held.size), h_spread, h_level)
        apps.append(CompactApp(table, cls, hm, hr))
    return cl, offer, tuple(apps)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_dp_equals_the_enumeration_on_random_homogeneous_offers(seed, monotone):
    """PF value, every PF_{-i} and c_i of the DP = the enumeration's (the exact small-auction
    route, itself checked against the brute force in test_compact_enum), valid allocations."""
    cl, offer, apps = random_homogeneous(seed, monotone)
    prog = CompactProgram(cl, tuple(offer.tolist()), apps, reduced=False)
    assert dp_suits(prog)
    e = enumerate_auction(prog, 10**9)
    assume(e is not None)  # too many (joint choice, subset) unions for the enumeration
    dp = solve_dp(prog, limit=10**9, every=True)
    note(f"dp {dp.value} enum {e.value}")
    assert dp.value.n_unbounded_served == e.value.n_unbounded_served
    assert _close(dp.value.log_sum, e.value.log_sum)
    assert _close(prog.value(dp.choice).log_sum, dp.value.log_sum)
    for i in prog.active:
        assert dp.loo[i].n_unbounded_served == e.loo[i].n_unbounded_served
        assert _close(dp.loo[i].log_sum, e.loo[i].log_sum)
    _check_valid(prog, dp.choice)
    sol = _on_offer(cl, offer, apps, rounding="partial")
    # the DP route unless its graph is above EDGE_LIMIT (then the compact route: same optima)
    assert sol.extra["pf_route"] == "dp" or solve_dp(prog) is None
    assert _close(sol.objective, e.value.log_sum)
    if sol.extra["pf_route"] != "dp":
        return
    ids = [a.table.app_id for a in apps]
    for i, x in enumerate(ids):
        c = sol.payments[x]
        assert 0.0 <= c <= 1.0
        if i in dp.choice:  # c_i of the DP's PF over the enumeration's PF_{-i}
            assert _close(c, pa.payment(prog.value_without(dp.choice, i), e.loo[i]))
    gpus = [g for b in sol.allocation.values() for g in b]
    assert len(gpus) == len(set(gpus))


def test_routes_and_where_the_dp_suits():
    cl = grid_cluster(4, 4, 2, pm={"A": np.array([1.0] * 15 + [1.5])})
    t = RhoTable(
        "a", np.array([1.0, 1.5]), np.linspace(3, 1, 9)[:, None, None] * np.ones((9, 3, 2))
    )
    apps = (CompactApp(t, "A"), CompactApp(RhoTable("b", t.levels, t.rho * 1.1), "A"))
    mixed = CompactProgram(cl, tuple(range(16)), apps, reduced=False)
    assert not dp_suits(mixed)  # two PM levels in the offer: the compact route
    with pytest.raises(ValueError, match="homogeneous"):
        solve_dp(mixed)
    sol = _on_offer(cl, np.arange(16), apps)
    assert sol.extra["pf_route"] != "dp"
    same = np.arange(15)
    sol = _on_offer(cl, same, apps)
    assert sol.extra["pf_route"] == "dp" and sol.extra["loo_routes"] == {"dp": 2}
    off = _on_offer(cl, same, apps, enum_limit=0)
    assert off.extra["pf_route"] not in ("dp", "enumeration")  # enum_limit=0: the LP / MILP route
    assert _close(off.objective, sol.objective)
    big = grid_cluster(25, 4, pm={"A": np.ones(100)})  # 100 GPUs: two bidders only
    t1 = RhoTable("c", np.array([1.0]), np.linspace(3, 1, 9)[:, None, None] * np.ones((9, 3, 1)))
    for n, want in ((2, True), (3, False)):
        prog = CompactProgram(big, tuple(range(100)), (CompactApp(t1, "A"),) * n, reduced=False)
        assert dp_suits(prog) is want
    with pytest.raises(OptionError, match="route"):
        _on_offer(cl, same, apps, route="x")
    assert math.isfinite(sol.objective)
