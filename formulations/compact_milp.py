"""The compact PF as a MILP (:class:`~fairplace.formulations.compact.CompactProgram`'s
``layout`` / ``to_milp`` / ``decode`` / ``start_vector``): the column layout per active app, the
rows of the program in ``compact.py``'s module docstring, a solution point decoded to cells and
concrete GPUs, and a feasible point built from such a choice (a MIP start). The machine aggregation
(``compact_agg``) and the reduced form's rows (``compact_sym``) add their parts; like them this
module reads the program through :class:`~fairplace.formulations.compact_view.CompactView`
(``compact.py`` imports it: no import circle)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .compact_agg import agg_decode, agg_rows, agg_start, agg_total_rows
from .compact_sym import place_rows, relabel, symmetry_rows, total_rows
from .compact_view import CompactView
from .program import MILP, Rows

#: a decoded PF point: {app index: (cell (n, s, v), sorted GPU indices)}
Choice = dict[int, tuple[tuple[int, int, int], tuple[int, ...]]]


def milp_layout(prog: CompactView) -> tuple[int, list[dict]]:
    """Per active app: z (cells); usage counts by type at the granularity its cell needs —
    f[m, t] (spread 0, one machine y_m), h[k, t] (spread 1, one rack r_k), g[t] (spread 2)."""
    machines = sorted({g.machine for g in prog.groups})
    racks = sorted({g.rack for g in prog.groups})
    T = range(len(prog.types))
    agg = prog.agg
    col, meta = 0, []
    for i in prog.active:
        a = prog.apps[i]
        cells = prog.feasible_cells(i)
        e: dict[str, Any] = {"i": i, "cells": cells, "z": col, "lev": prog._lev[i]}
        col += len(cells)
        spreads = {s for _, s, _ in cells}
        ms = [a.held_machine] if a.held_machine >= 0 else machines
        rs = [a.held_rack] if a.held_rack >= 0 else racks
        e["f"], e["h"], e["g"], e["y"], e["r"], e["a"], e["acell"] = {}, {}, {}, {}, {}, {}, {}
        if agg is not None:  # spread 0: one selector per (kind, slot)
            for j, sl in agg.app_slots.get(i, {}).items():
                for s, k in sl.items():
                    e["a"][j, s], e["acell"][j, s], col = col, k, col + 1
        for s, sel, block, places, held, kind in (
            (0, "y", "f", ms, a.held_machine, "m"),
            (1, "r", "h", rs, a.held_rack, "k"),
        ):
            if s not in spreads or (s == 0 and agg is not None):
                continue
            for p in places:
                for t in T:
                    if prog.cap.get((kind, p, t), 0):
                        e[block][p, t], col = col, col + 1
            if held >= 0:
                continue
            # selectors: one per (place, cell of spread s) if reduced, else one per place (-1)
            # (only where the cell fits alone: no integer point uses the others)
            if prog.per_cell(s):
                ks = [k for k, c in enumerate(cells) if c[1] == s]
                for p in places:
                    for k in ks:
                        if prog.fits(i, s, p, cells[k]):
                            e[sel][p, k], col = col, col + 1
            else:
                for p in places:
                    e[sel][p, -1], col = col, col + 1
        if 2 in spreads:
            for t in T:
                e["g"][(t,)], col = col, col + 1
        meta.append(e)
    return col + (len(agg.m_cols) if agg is not None else 0), meta


def to_milp(prog: CompactView) -> MILP:
    """Rows: one cell; usage per granularity = its cells' counts; one machine / rack; level;
    and per type the laminar (machine within rack within cluster) capacities — by Hall's
    theorem on a laminar family they are exactly the condition for distinct GPUs to exist."""
    n_cols, meta = prog.layout
    c, ub = np.zeros(n_cols), np.ones(n_cols)
    rows = Rows()
    add = rows.add
    usage: dict[tuple, list[tuple[int, float]]] = {}  # capacity key -> usage columns
    agg = prog.agg
    for e in meta:
        i, a, cells = e["i"], prog.apps[e["i"]], e["cells"]
        nmax = a.table.n_max
        zc = [e["z"] + k for k in range(len(cells))]
        for k, cell in enumerate(cells):
            c[zc[k]] = prog.cell_gain(i, cell)
        add([(z, 1.0) for z in zc], -np.inf, 1.0)
        level_cols: dict[int, list[int]] = {}
        for s, block in ((0, e["f"]), (1, e["h"]), (2, e["g"])):
            cz = [(z, -float(n)) for z, (n, sc, _) in zip(zc, cells, strict=True) if sc == s]
            if not cz or (s == 0 and agg is not None):  # aggregated: rows in agg_rows
                continue
            add([(col, 1.0) for col in block.values()] + cz, 0.0, 0.0)
            for key, col in block.items():
                t = key[-1]
                if s == 0:
                    cap_keys = [("m", key[0], t), ("k", prog._rack_of[key[0]], t), ("t", t)]
                elif s == 1:
                    cap_keys = [("k", key[0], t), ("t", t)]
                else:
                    cap_keys = [("t", t)]
                ub[col] = float(min(prog.cap[cap_keys[0]], nmax))
                for ck in cap_keys:
                    usage.setdefault(ck, []).append((col, 1.0))
                level_cols.setdefault(e["lev"][t], []).append(col)
        for sel, block, s in (("y", "f", 0), ("r", "h", 1)):
            if e[sel]:
                place_rows(prog, e, sel, block, s, ub, add)
        n_lev = int(a.table.levels.size)
        for v in range(1, n_lev):  # GPUs at level >= v only for cells allowing level >= v
            cs = [col for lv, cl in level_cols.items() if lv >= v for col in cl]
            if cs:
                cz = [
                    (z, -float(n))
                    for z, (n, sc, vc) in zip(zc, cells, strict=True)
                    if vc >= v and (sc or agg is None)  # aggregated spread 0: exact slots
                ]
                add([(col, 1.0) for col in cs] + cz, -np.inf, 0.0)
    if agg is not None:
        agg_rows(prog, meta, n_cols - len(agg.m_cols), add, usage, ub)
    for key, use in usage.items():
        add(use, -np.inf, float(prog.cap[key]))
    if prog.reduced and agg is not None:
        agg_total_rows(prog, meta, n_cols - len(agg.m_cols), add)
    elif prog.reduced:
        total_rows(prog, meta, add)
        symmetry_rows(prog, meta, add)
    return rows.integer_program(c, np.zeros(n_cols), ub, "max", prog.offset)


def decode(prog: CompactView, x: np.ndarray) -> Choice:
    """{app index: (cell, GPU indices)}: per type, machine demands first, then rack demands
    from what their rack has left, then cluster demands from what is left anywhere."""
    _, meta = prog.layout
    tpos = {t: k for k, t in enumerate(prog.types)}
    pool: dict[tuple[int, int], list[int]] = {}  # (machine, type) -> free GPU indices
    for g in prog.groups:
        pool.setdefault((g.machine, tpos[g.scores]), []).extend(g.gpus)
    machines_in: dict[int, list[int]] = {}
    for m, k in prog._rack_of.items():
        machines_in.setdefault(k, []).append(m)
    out: dict[int, list] = {}
    chosen = {}
    for e in meta:
        ks = [k for k in range(len(e["cells"])) if x[e["z"] + k] > 0.5]
        if ks:
            chosen[e["i"]] = e["cells"][ks[0]]
            out[e["i"]] = []

    def take(i, places, t, n):
        for m in places:
            while n and pool.get((m, t)):
                out[i].append(pool[(m, t)].pop(0))
                n -= 1
        if n:
            raise ValueError("compact decode: capacity rows violated")

    if prog.agg is not None:
        agg_decode(prog, x, meta, take, chosen)
    for block in ("f", "h", "g"):
        for e in meta:
            if e["i"] not in chosen:
                continue
            for key, col in e[block].items():
                n = int(round(x[col]))
                if not n:
                    continue
                t = key[-1]
                if block == "f":
                    places = [key[0]]
                elif block == "h":
                    places = machines_in[key[0]]
                else:
                    places = sorted(prog._rack_of)
                take(e["i"], places, t, n)
    return {i: (chosen[i], tuple(sorted(out[i]))) for i in chosen}


def start_vector(prog: CompactView, choice: Choice) -> np.ndarray:
    """A feasible point giving each app in ``choice`` its cell and GPUs (e.g. PF minus i)."""
    n_cols, meta = prog.layout
    x = np.zeros(n_cols)
    where = prog.gpu_places
    perm: dict[int, int] = {}
    on0: dict[int, dict[int, dict[int, int]]] = {}  # aggregated: app -> {machine: {type: n}}
    if prog.reduced and prog.agg is None:  # the symmetry rows' canonical machine order
        on = {e["i"]: where[choice[e["i"]][1][0]][0] for e in meta if e["y"] and e["i"] in choice}
        on = {i: m for i, m in on.items() if choice[i][0][1] == 0}
        perm = relabel(prog, meta, on)
    for e in meta:
        if e["i"] not in choice:
            continue
        cell, gpus = choice[e["i"]]
        kc = e["cells"].index(cell)
        x[e["z"] + kc] = 1.0
        kc = kc if prog.per_cell(cell[1]) else -1
        for g in gpus:
            m, k, t = where[g]
            if cell[1] == 0 and prog.agg is not None:
                per_t = on0.setdefault(e["i"], {}).setdefault(m, {})
                per_t[t] = per_t.get(t, 0) + 1
            elif cell[1] == 0:
                m = perm.get(m, m)
                x[e["f"][m, t]] += 1.0
                if e["y"]:
                    x[e["y"][m, kc]] = 1.0
            elif cell[1] == 1:
                x[e["h"][k, t]] += 1.0
                if e["r"]:
                    x[e["r"][k, kc]] = 1.0
            else:
                x[e["g"][(t,)]] += 1.0
    if prog.agg is not None:
        agg_start(prog, x, meta, on0)
    return x
