"""Leave-one-out values by search (``solvers/compact/search.py``) = the enumeration's, bit for bit (the
same row, the same sums), on random auctions small enough to enumerate, and the payments they give
= the LP route's."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_compact_enum import _close, random_compact

from fairplace.core.domain import AuctionInstance
from fairplace.formulations.agents import RhoTable, levels_of
from fairplace.formulations.compact import CompactApp, CompactProgram
from fairplace.instances.generators import grid_cluster
from fairplace.solvers import compact
from fairplace.solvers.compact import enumeration as compact_enum
from fairplace.solvers.compact import search as compact_search
from fairplace.solvers.compact import solve_compact_auction
from fairplace.solvers.compact.enumeration import _Fits, _Table


def wide_compact(seed: int):
    """(cluster, offer, apps): 2-4 machines of 4 GPUs in one or two racks, 4-7 apps with falling
    rho tables (n_max 1-6) and some unbounded rho(nothing): the 5-8 bidder auctions of THEMIS at
    x4, shrunk until the enumeration can still list them."""
    rng = np.random.default_rng(seed)
    M = int(rng.integers(2, 5))
    cl = grid_cluster(M, 4, int(rng.integers(1, 3)))
    offer = np.array(sorted(rng.choice(M * 4, int(rng.integers(3, M * 4 + 1)), replace=False)))
    apps = []
    for a in range(int(rng.integers(4, 8))):
        levels = levels_of(cl, offer, None)
        n_max = int(rng.integers(1, min(6, offer.size) + 1))
        base = np.cumprod(rng.uniform(0.5, 1.0, n_max + 1)) * rng.uniform(1, 5)
        if rng.random() < 0.3:  # equal values over counts: ties the ranking breaks
            base = np.round(base, 1)
        loc = np.cumprod([1.0, *rng.uniform(1.0, 1.5, 2)])
        rho = base[:, None, None] * loc[None, :, None] * np.ones((1, 1, levels.size))
        if rng.random() < 0.3:
            rho[0] = np.inf
        apps.append(CompactApp(RhoTable(f"a{a}", levels, rho, 0, 0, -1), None, -1, -1))
    return cl, offer, tuple(apps)


def _same(a, b) -> bool:
    return set(a) == set(b) and all(
        a[i].n_unbounded_served == b[i].n_unbounded_served and a[i].log_sum == b[i].log_sum
        for i in a
    )


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 100_000), st.booleans())
def test_search_equals_the_enumeration_bit_for_bit(seed, monotone):
    cl, offer, apps, _ = random_compact(seed, monotone)
    prog = CompactProgram(cl, tuple(int(g) for g in offer), apps, reduced=False)
    listed = compact_enum.leave_one_out(prog, prog.active, 10**7)
    assert listed is not None
    assert _same(compact_search.leave_one_out(prog, prog.active, 10**7), listed)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 100_000))
def test_search_equals_the_enumeration_on_many_bidders(seed):
    cl, offer, apps = wide_compact(seed)
    prog = CompactProgram(cl, tuple(int(g) for g in offer), apps, reduced=False)
    listed = compact_enum.leave_one_out(prog, prog.active, 300_000)
    assume(listed is not None)
    assert _same(compact_search.leave_one_out(prog, prog.active, 10**7), listed)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 100_000))
def test_best_row_is_the_enumerations_first_best_row(seed):
    """The row itself (ties broken by fewest GPUs, then the first in option order), not only its
    value: PF on the whole auction."""
    cl, offer, apps = wide_compact(seed)
    prog = CompactProgram(cl, tuple(int(g) for g in offer), apps, reduced=False)
    opts = [_Fits.of(prog, i).options() for i in prog.active]
    assume(np.prod([o.n.size for o in opts], dtype=float) <= 300_000)
    tab = _Table.of(prog, opts)
    k = tab.best(np.ones(len(tab.rows), bool))
    assert compact_search.best_row(prog, opts, 10**7) == tab.rows[k].tolist()


def test_node_limit_declines():
    """None (the caller's LP route then runs) once a problem needs more nodes than allowed."""
    cl, offer, apps = wide_compact(3)
    prog = CompactProgram(cl, tuple(int(g) for g in offer), apps, reduced=False)
    assert compact_search.leave_one_out(prog, prog.active, 1) is None
    assert compact_search.leave_one_out(prog, prog.active, 10**7) is not None


@pytest.mark.parametrize("seed", [0, 1, 2, 5, 8, 13])
def test_payments_by_search_equal_the_lp_routes(seed, monkeypatch):
    """An LP-route PF whose leave-one-out problems are too large to list (the limit forced to 1
    here) gets them by search: routes say so, and c_i equal the LP chains' (``enum_limit=0``)."""
    cl, offer, apps = wide_compact(seed)
    ids = [a.table.app_id for a in apps]
    kw = {"offer": offer, "apps": apps, "ids": ids, "aggregate": False}
    inst = AuctionInstance(cl, ())
    lp = solve_compact_auction(inst, **kw, enum_limit=0)
    monkeypatch.setattr(compact, "LOO_ENUM_LIMIT", 1)
    found = solve_compact_auction(inst, **kw, enum_limit=1)
    assert lp.status == found.status == "optimal"
    assert found.pf_allocation == lp.pf_allocation
    routes = found.extra["loo_routes"]
    assert set(routes) <= {"search", "best_values"}
    assert sum(routes.values()) == len(found.pf_allocation)
    for a, c in found.payments.items():
        assert 0.0 <= c <= 1.0 and _close(c, lp.payments[a])
