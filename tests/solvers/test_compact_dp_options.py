"""The compact DP's options (``solvers/compact/dp_options.py``: ``app_options``) = the program's
cells (``CompactApp.cells`` that fit, ``CompactProgram.feasible_cells``), best per (n, place type),
without the dominated ones: by either way of taking the logs (Python's for small tables, numpy's
above)."""

import math

import numpy as np
import pytest

from fairplace.formulations.agents import RhoTable
from fairplace.formulations.compact import CompactApp, CompactProgram
from fairplace.instances.generators import grid_cluster
from fairplace.solvers.compact import dp, dp_options
from fairplace.solvers.compact.dp_state import Layout


def _program(seed: int) -> CompactProgram:
    """1-3 racks of 1-3 machines of 1-4 GPUs, one PM score (homogeneous), 1-4 apps with random
    rho tables of 1-2 levels, some holding a machine / rack, some unbounded, some with ties."""
    rng = np.random.default_rng(seed)
    M, per = int(rng.integers(1, 7)), int(rng.integers(1, 5))
    cl = grid_cluster(M, per, int(rng.integers(1, 4)), pm={"A": np.full(M * per, 1.25)})
    offer = tuple(sorted(rng.choice(M * per, int(rng.integers(1, M * per + 1)), False).tolist()))
    apps = []
    for a in range(int(rng.integers(1, 5))):
        n_lev = int(rng.integers(1, 3))
        levels = np.array([1.0, 1.25][:n_lev]) if n_lev == 2 else np.array([1.25])
        shape = (int(rng.integers(1, len(offer) + 2)) + 1, 3, n_lev)
        rho = np.exp(rng.normal(0.0, 1.0, shape))
        if rng.random() < 0.3:  # equal values: ties between cells
            rho = np.round(rho, 1) + 0.1
        held = rng.random() < 0.3
        if not held and rng.random() < 0.3:
            rho[0] = np.inf
        table = RhoTable(f"a{a}", levels, rho, int(held), int(rng.integers(0, 3)) if held else 0,
                         0 if held else -1)  # fmt: skip
        m = int(cl.machine_index[offer[0]])
        hm = m if held and rng.random() < 0.5 else -1
        hr = int(cl.rack_index[offer[0]]) if held and rng.random() < 0.7 else -1
        apps.append(CompactApp(table, "A", hm, hr if hm < 0 else int(cl.rack_index[offer[0]])))
    return CompactProgram(cl, offer, tuple(apps), reduced=False)


def _reference(prog: CompactProgram, lay: Layout, i: int) -> list[tuple]:
    """(n, type, cell, w) of app i's options from its feasible cells: per (n, effective type)
    the best cell, then without the ones no better than one of fewer GPUs and a looser type."""
    places, eff, _ = dp_options.place_types(lay, prog.apps[i].held_machine, prog.apps[i].held_rack)
    rho = prog.apps[i].table.rho
    best: dict = {}
    for cell in prog.feasible_cells(i):
        w = -math.log(rho[cell])
        key = (cell[0], eff[cell[1]])
        if key not in best or w > best[key][0]:
            best[key] = (w, cell)
    out, top = [], [-math.inf] * 3
    for n, s in sorted(best, key=lambda k: (k[0], -k[1])):
        w, cell = best[(n, s)]
        if w > max(top[s:]):
            top[s] = w
            if places[s]:
                out.append((n, s, cell, w))
    return out


@pytest.mark.parametrize("small", [0, 10**9])
def test_options_are_the_best_feasible_cells(monkeypatch, small):
    monkeypatch.setattr(dp_options, "SMALL_TABLE", small)  # 0: numpy's logs only; 10**9: Python's
    checked = 0
    for seed in range(150):
        prog = _program(seed)
        if not dp.dp_suits(prog):
            continue
        lay = Layout.of(prog)
        for i in prog.active:
            base, opts = dp_options.app_options(prog, lay, i, False, {})
            ref = _reference(prog, lay, i)
            assert [(o.n, o.s, o.cell) for o in opts] == [r[:3] for r in ref]
            gains = [w - (prog.apps[i].w_empty or 0.0) for *_, w in ref]
            assert all(math.isclose(o.w, g, rel_tol=1e-12, abs_tol=1e-12)
                       for o, g in zip(opts, gains, strict=True))  # fmt: skip
            assert all(o.cell in prog.feasible_cells(i) for o in opts)
            checked += 1
    assert checked > 100


def test_dp_values_do_not_depend_on_the_log_path(monkeypatch):
    """PF and every PF_{-i} of the DP with Python's and with numpy's logs (the same to 1e-12)."""
    for seed in range(40):
        prog = _program(seed)
        if not dp.dp_suits(prog):
            continue
        got = []
        for small in (0, 10**9):
            monkeypatch.setattr(dp_options, "SMALL_TABLE", small)
            res = dp.solve_dp(prog, limit=10**9, every=True)
            assert res is not None
            got.append(res)
        a, b = got
        assert a.value.n_unbounded_served == b.value.n_unbounded_served
        assert math.isclose(a.value.log_sum, b.value.log_sum, rel_tol=1e-12, abs_tol=1e-12)
        for i in prog.active:
            assert math.isclose(a.loo[i].log_sum, b.loo[i].log_sum, rel_tol=1e-12, abs_tol=1e-12)
