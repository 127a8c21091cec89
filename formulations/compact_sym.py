"""Tightening of the compact PF MILP (``CompactProgram(reduced=True)``); no optimum changes.

1. Per-(place, cell) selectors. Unreduced, a spread-s app (s = 0: machine m, s = 1: rack k) has
   one selector y_iP per place P and the big-M row  sum_t x_iPt <= u * y_iP  (u = min(cap, n_max));
   the LP may then put n GPUs on P with y_iP = n / u. Reduced, y_iPc per place P and cell c:

       sum_P y_iPc = z_ic,   sum_t x_iPt = sum_c n_c y_iPc,
       sum_{t: lev_i(t) >= v} x_iPt <= sum_{c: v_c >= v} n_c y_iPc        (v >= 1).

   Integer points correspond one to one: an app with cell c on place P has y_iPc = 1, uses n_c
   GPUs on P, none elsewhere, all of level <= v_c; exactly the unreduced point with y_iP = 1.
   Capacity totals per machine / rack over these binaries (sum over types of the per-type capacity
   rows, so implied) are added as knapsack rows for HiGHS' clique and cover cuts.

2. Symmetry. Machines of one rack with the same free-GPU count per PM type and held by no active
   app are interchangeable: swapping two of them (their x_i.mt and y_imc for every app) maps the
   feasible set onto itself, objective unchanged, since every row refers to them only through
   identical capacities (machine rows, and the same rack / type rows). Order such a class
   m_1 < ... < m_L and let first(m) be the smallest app index (in the program's order) with a
   spread-0 cell on m (+inf if none). Each app sits on at most one machine, so the first()s of used
   machines differ, and some permutation of the class makes them increasing (unused machines
   last). Hence every solution, of PF or of any PF_{-i} (a subset of the apps, same argument), has
   an equally good image satisfying

       sum_c y_i,m_l,c <= sum_{j < i} sum_c y_j,m_{l-1},c          (l = 2..L, every app i)

   (if i is on m_l then first(m_{l-1}) < first(m_l) <= i). Optima are therefore unchanged;
   ``relabel`` maps any placement to that canonical image (used for warm starts).
"""

from __future__ import annotations

import numpy as np

from .compact_view import CompactView


def place_rows(prog: CompactView, e: dict, sel: str, block: str, s: int, ub, add) -> None:
    """Rows linking app ``e``'s spread-``s`` usage ``e[block]`` to its place selectors ``e[sel]``."""
    cells = e["cells"]
    zc = {k: e["z"] + k for k, c in enumerate(cells) if c[1] == s}
    by_place: dict[int, list[tuple[int, int]]] = {}  # place -> [(col, type)]
    for key, col in e[block].items():
        by_place.setdefault(key[0], []).append((col, key[-1]))
    if not prog.per_cell(s):  # one selector per place, big-M usage bound
        add([(col, 1.0) for col in e[sel].values()] + [(z, -1.0) for z in zc.values()], 0.0, 0.0)
        nmax = prog.apps[e["i"]].table.n_max
        for place, cs in by_place.items():
            u = float(min(sum(ub[col] for col, _ in cs), nmax))
            add([(col, 1.0) for col, _ in cs] + [(e[sel][place, -1], -u)], -np.inf, 0.0)
        return
    for k, z in zc.items():  # one place per chosen cell
        add([(col, 1.0) for (_, kk), col in e[sel].items() if kk == k] + [(z, -1.0)], 0.0, 0.0)
    n_lev = int(prog.apps[e["i"]].table.levels.size)
    for place, cs in by_place.items():
        ys = [
            (e[sel][place, k], float(cells[k][0]), cells[k][2]) for k in zc if (place, k) in e[sel]
        ]
        add([(col, 1.0) for col, _ in cs] + [(y, -n) for y, n, _ in ys], 0.0, 0.0)
        for v in range(1, n_lev):
            hi = [(col, 1.0) for col, t in cs if e["lev"][t] >= v]
            if hi:
                add(hi + [(y, -n) for y, n, vc in ys if vc >= v], -np.inf, 0.0)


def _machine_entries(e: dict, m: int) -> list[tuple[int, float]]:
    if e["y"]:
        return [(col, float(e["cells"][k][0])) for (p, k), col in e["y"].items() if p == m]
    return [(col, 1.0) for (p, _), col in e["f"].items() if p == m]


def total_rows(prog: CompactView, meta: list[dict], add) -> None:
    """Knapsack rows: all GPUs used on a machine / in a rack <= its free GPUs."""
    cm, cr = prog.capacity
    for m, cap in cm.items():
        ent = [x for e in meta for x in _machine_entries(e, m)]
        if ent:
            add(ent, -np.inf, float(cap))
    for r, cap in cr.items():
        ms = [m for m, k in prog._rack_of.items() if k == r]
        ent = [x for e in meta for m in ms for x in _machine_entries(e, m)]
        for e in meta:
            if e["r"]:
                ent += [(col, float(e["cells"][k][0])) for (p, k), col in e["r"].items() if p == r]
            else:
                ent += [(col, 1.0) for (p, _), col in e["h"].items() if p == r]
        if ent:
            add(ent, -np.inf, float(cap))


def machine_classes(prog: CompactView) -> list[list[int]]:
    """Classes (>= 2 machines, ascending) of interchangeable machines: same rack, same free GPUs
    per PM type, not the held machine of an active app."""
    held = {prog.apps[i].held_machine for i in prog.active}
    T = range(len(prog.types))
    out: dict[tuple, list[int]] = {}
    for m, r in sorted(prog._rack_of.items()):
        if m not in held:
            out.setdefault((r, tuple(prog.cap.get(("m", m, t), 0) for t in T)), []).append(m)
    return [ms for ms in out.values() if len(ms) > 1]


def symmetry_rows(prog: CompactView, meta: list[dict], add) -> None:
    """sum_c y_i,m_l,c <= sum_{j < i} sum_c y_j,m_{l-1},c over each class (module docstring)."""
    for ms in machine_classes(prog):
        for a, b in zip(ms, ms[1:], strict=False):
            prev: list[int] = []
            for e in meta:
                if not e["y"]:
                    continue
                mine = [col for (p, _), col in e["y"].items() if p == b]
                if mine:
                    add([(c, 1.0) for c in mine] + [(c, -1.0) for c in prev], -np.inf, 0.0)
                prev += [col for (p, _), col in e["y"].items() if p == a]


def relabel(prog: CompactView, meta: list[dict], machine_of: dict[int, int]) -> dict[int, int]:
    """{machine: machine} permuting each class so that first() increases (module docstring).
    ``machine_of``: {app index: machine} of the apps holding a spread-0 cell with selectors."""
    pos = {e["i"]: k for k, e in enumerate(meta)}
    perm: dict[int, int] = {}
    for ms in machine_classes(prog):
        first = {
            m: min((pos[i] for i, mm in machine_of.items() if mm == m), default=len(meta))
            for m in ms
        }
        for src, dst in zip(sorted(ms, key=lambda m: (first[m], m)), ms, strict=True):
            perm[src] = dst
    return perm
