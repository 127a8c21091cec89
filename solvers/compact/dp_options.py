"""An app's options in the compact auction's DP (``compact/dp.py``): per GPU count n and place
type s (one machine, one rack, the offer) its best cell that fits the offer and beats nothing,
the dominated ones dropped; valued by their gain over nothing, w_i(n, s, v) - w_i0.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from fairplace.formulations.agents import RhoTable
from fairplace.formulations.compact import CompactProgram

from .dp_state import Layout, Opt

#: most table entries whose -log an app's options take by ``math.log`` (numpy's ufunc above)
SMALL_TABLE = 48


def place_types(lay: Layout, hm: int, hr: int) -> tuple[tuple, tuple[int, int, int], tuple]:
    """(positions per place type, effective type per type, most GPUs per type) of an app that
    holds machine ``hm`` / rack ``hr`` (-1: none): one machine (its held one), one rack (its held
    one), the offer; a place type whose only place holds the whole of the next wider one counts
    as that one (one rack in the offer: spread 1 = spread 2)."""
    if hm >= 0:
        m0: tuple[int, ...] = (lay.machine_pos[hm],) if hm in lay.machine_pos else ()
    else:
        m0 = tuple(lay.machines)
    if hr >= 0:
        r1: tuple[int, ...] = (lay.rack_pos[hr],) if hr in lay.rack_pos else ()
    else:
        r1 = tuple(lay.racks)
    st = lay.start
    # a place type equal to the next wider one: its only place holds all the wider one holds
    e1 = 2 if len(r1) == 1 and st[r1[0]] == st[0] else 1
    one_machine = len(r1) == 1 and lay.rack_size[r1[0]] == 1
    e0 = e1 if len(m0) == 1 and one_machine and lay.block_of[m0[0]] == r1[0] else 0
    fit = (
        lay.most[0] if hm < 0 else max((st[p] for p in m0), default=0),
        lay.most[1] if hr < 0 else max((st[p] for p in r1), default=0),
        st[0],
    )
    return (m0, r1, (0,)), (e0, e1, 2), fit


def app_options(
    prog: CompactProgram, lay: Layout, i: int, tup: bool, memo: dict | None = None
) -> tuple[float, list[Opt]]:
    """(value of nothing: w_i0, or 0 when unbounded; options, valued by their gain over nothing) of
    app i: per (n, effective place type, :func:`place_types`) its best cell that fits the offer and
    beats nothing, without the options worth no more than one with fewer GPUs and a looser place
    type (``memo``: :func:`place_types` per held machine and rack, shared by one DP's apps)."""
    a = prog.apps[i]
    key = (a.held_machine, a.held_rack)
    got = None if memo is None else memo.get(key)
    if got is None:
        got = place_types(lay, *key)
        if memo is not None:
            memo[key] = got
    places, eff, fit = got
    t = a.table
    we = a.w_empty
    base = 0.0 if we is None else we  # values: gains over nothing, base + gain
    # the program's cells (``CompactApp.cells``: better than nothing, not dominated) that fit
    # (``CompactProgram.feasible_cells``: level v at least the offer's, n GPUs in a place), by
    # CompactApp.cells' rule on the columns v >= lev and rows n <= fit[s] only (a cell's test
    # reads fewer GPUs of its column, a looser spread or level of its row): the same cells
    lv = memo.get(a.cls) if memo is not None else None
    if lv is None:  # RhoTable.level's key of the offer's score for the class
        lv = RhoTable._key(prog.types[0][prog.classes.index(a.cls)])
        if memo is not None:
            memo[a.cls] = lv
    rho = t.rho
    top_n, n_lev = min(max(fit), rho.shape[0] - 1), rho.shape[2]
    lev = bisect.bisect_left(t.levels.tolist(), lv) if n_lev > 1 else int(t.levels.item(0) < lv)
    size = 3 * n_lev
    part = rho[: top_n + 1]
    wf = None
    if top_n * size <= SMALL_TABLE:  # a few cells: Python's log is quicker than numpy's calls
        try:
            wf = [-math.log(x) for x in part.ravel().tolist()]
        except ValueError:  # a zero or negative rho: numpy's -inf / nan, as CompactApp.cells
            pass
    if wf is None:
        wf = (-np.log(part)).ravel().tolist()  # w[n, s, v] at (n * 3 + s) * n_lev + v
    best: dict[tuple[int, int], tuple[float, tuple[int, int, int]]] = {}
    # one level and three distinct place types: each (n, type) is met once, listed as met
    items: list | None = [] if n_lev == 1 and eff == (0, 1, 2) else None
    v_lo = max(t.held_level, 0, lev)
    low0 = -math.inf if we is None else we
    s_lo = t.held_spread if t.held_count else 0
    if n_lev == 1:  # one level (a one-level cluster): the loop below, w[n, s] at 3 n + s
        for s in range(s_lo, 3) if v_lo == 0 else ():
            e, hi = -eff[s], min(fit[s], top_n) + 1
            thr = low0 + 1e-12
            col = wf[3 + s : 3 * hi : 3]  # w[n, s], n = 1, 2, ...
            looser = wf[4 + s : 3 * hi : 3] if s < 2 else None  # w[n, s + 1]
            for n, val in enumerate(col, 1):
                if val <= thr:
                    continue
                thr = val + 1e-12
                if looser is not None and looser[n - 1] >= val - 1e-12:
                    continue
                if items is not None:
                    items.append((n, e, val, (n, s, 0)))
                    continue
                old = best.get((n, e))
                if old is None or val > old[0]:
                    best[(n, e)] = (val, (n, s, 0))
    for s in range(s_lo, 3) if n_lev > 1 else ():
        e, hi = -eff[s], min(fit[s], top_n) + 1  # key (n, -type): sorted, looser types first
        for v in range(v_lo, n_lev):
            low, loose_v = low0, v + 1 < n_lev
            for x in range((size + s * n_lev + v), hi * size, size):  # n = 1, 2, ...
                val = wf[x]
                if val <= low + 1e-12:
                    continue  # no better than fewer GPUs (or nothing)
                low = val
                if s < 2 and wf[x + n_lev] >= val - 1e-12:
                    continue  # a less restrictive cell is worth as much
                if loose_v and wf[x + 1] >= val - 1e-12:
                    continue
                n = x // size
                old = best.get((n, e))
                if old is None or val > old[0]:
                    best[(n, e)] = (val, (n, s, v))
    opts: list[Opt] = []
    unb, new_opt = int(we is None), tuple.__new__
    t0 = t1 = t2 = -math.inf  # t[s]: best w kept of fewer GPUs (or as many, looser) and type s
    if items is None:
        items = [(n, e, *best[(n, e)]) for n, e in sorted(best)]
    else:
        items.sort()  # by (n, type): distinct, the values never compared
    for n, e, w, cell in items:
        if e == -2:
            if not w > t2:
                continue
            t2 = w
        elif e == -1:
            if not (w > t1 and w > t2):
                continue
            t1 = w
        else:
            if not (w > t0 and w > t1 and w > t2):
                continue
            t0 = w
        if places[-e]:
            gain = (unb, w - base) if tup else w - base
            opts.append(new_opt(Opt, (n, -e, cell, gain, places[-e])))  # Opt(...), quicker
    return base, opts
