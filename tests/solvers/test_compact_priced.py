"""Leave-one-out PF_{-i} at an alike app's repriced LP duals (route ``priced``,
``solvers/compact/rc.py`` ``reprice``): the bound stays valid and tight, and the payments equal
those of each app's own leave-one-out LP (and so the full MILPs': ``test_compact_rc.py``)."""

from dataclasses import replace

import numpy as np
from test_compact_rc import _loo_lp, _pf

from fairplace.instances.generators import random_agent_auction
from fairplace.solvers.backends import highs
from fairplace.solvers.compact import pa_payments, rc, solve_compact_auction
from fairplace.solvers.compact.config import CompactAuctionOptions
from fairplace.solvers.options import SolveOptions


def test_block_owners_give_each_app_its_own_rows():
    prog = _pf(1, apps=12, machines=8)
    milp = prog.milp
    col, row = rc.block_owners(prog, milp)
    A = milp.A.tocsr()
    for r in np.flatnonzero(row >= 0)[:200]:  # every column of an app's row is that app's
        assert set(col[A.indices[A.indptr[r] : A.indptr[r + 1]]].tolist()) == {row[r]}
    assert (row == -1).any() and (row >= 0).any()  # shared capacity rows and per-app rows


def test_repriced_duals_bound_the_leave_one_out_lp_tightly():
    """Duals of PF_{-j}'s LP, repriced for PF_{-i}: UB >= PF_{-i}'s LP (weak duality) and far
    no looser than the duals as they are (j's own rows priced at j's absence)."""
    prog = _pf(2, apps=20, machines=12)
    milp = prog.milp
    _, meta = prog.layout
    i, j = meta[0]["i"], meta[1]["i"]
    hj, _ = _loo_lp(prog, milp, j)
    yj = np.asarray(hj.getSolution().row_dual, dtype=float)
    hi, lp_i = _loo_lp(prog, milp, i)
    v_i = highs.read(hi, lp_i, 0.0).objective
    e = meta[0]
    mine = np.arange(e["z"], e["z"] + len(e["cells"]))
    c = milp.c.copy()
    c[mine] = 0.0  # i's gains set to 0, as in the live leave-one-out LP
    ub0 = milp.col_ub.copy()
    ub0[mine] = 0.0
    loo = replace(milp.relaxed(), c=c, col_ub=ub0)  # PF_{-i} as compact.rc sees it
    y = rc.reprice(milp, yj, rc.block_owners(prog, milp), i, j, SolveOptions())
    ub, _ = rc.lagrangian_bound(loo, y)
    raw, _ = rc.lagrangian_bound(loo, yj)
    assert ub >= v_i - 1e-7
    assert ub - v_i <= raw - v_i + 1e-9


def test_priced_payments_equal_the_lp_route(monkeypatch):
    """Every c_i of the priced route equals that of each app's own leave-one-out LP."""
    inst = random_agent_auction(apps=48, machines=32, machines_per_rack=8, seed=1)
    cfg = CompactAuctionOptions(enum_limit=0)
    opts = SolveOptions(parallel=False)
    monkeypatch.setattr(pa_payments, "leave_max", lambda *a, **k: {})  # the per-app route only
    priced = solve_compact_auction(inst, opts, cfg)
    assert priced.extra["loo_routes"].get("priced", 0) >= 5
    with monkeypatch.context() as mp:  # every app by its own leave-one-out LP
        mp.setattr(pa_payments._LeaveOneOut, "_priced", lambda self, i, solved, duals: None)
        plain = solve_compact_auction(inst, opts, cfg)
    assert "priced" not in plain.extra["loo_routes"]
    for a, c in plain.payments.items():
        assert abs(priced.payments[a] - c) <= 1e-9, a
