"""Machine aggregation of the compact PF (``CompactProgram(aggregate=True)``); no optimum changes.

The plain program has, per app with spread-0 cells, one usage column x_imt per (machine, type) and
one selector per machine: ~4/5 of its columns on 1,024 GPUs x 256 apps, and an LP that splits a
whole-machine cell over several machines (its integral cells then need more whole machines of a
level than exist). Here machines are grouped into *kinds*: same free GPUs per PM type (the
*profile* P) and held by no active app (a held machine is a kind of its own). Then

* a *slot* u is a vector of GPUs per type (0 < u <= P) that some app's spread-0 cell can use:
  |u| = n_c, worst level of u <= v_c; Y_iKu (binary) = app i takes a u-slot on a kind-K machine,
  with the best spread-0 cell c(i, u) it satisfies (n_c = |u|, least v_c >= its level of u);
* a *pattern* p is a multiset of slots with sum <= P (all of them, not only maximal ones);
  M_rKp (integer) = machines of kind K in rack r cut into pattern p:

      sum_p M_rKp <= N_rK                              machines of the kind in the rack
      sum_i Y_iKu <= sum_{r,p} mult_p(u) M_rKp         slots used <= slots cut
      z_ic = sum_{(K,u): c(i,u) = c} Y_iKu             spread-0 cells
      per type t: sum_{K,p} used_t(p) M_rKp + rack / cluster usage <= capacity (laminar rows).

Exactness: a placement of the plain program cuts each machine into the slots of its spread-0 apps
(a pattern) and gives each such app a slot whose cell is at least as good: a point here of equal or
larger value. Conversely patterns are assigned to the machines of their (rack, kind), apps to the
slots (spread-0 apps need no rack), and slot GPUs never exceed a machine's: a placement of the
plain program of the same value. So both optima (of PF and of every PF_{-i}) are equal; the
aggregation also removes the machine symmetry. Used when every kind has at most
:data:`MAX_PATTERNS` patterns (4-GPU machines, two types: at most 25).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .compact_view import CompactView

#: largest number of patterns of one kind for which the aggregation is built
MAX_PATTERNS = 2000


@dataclass(frozen=True)
class Kind:
    """Interchangeable machines: ``profile`` free GPUs per type; ``racks``: {rack: machines}."""

    key: tuple
    profile: tuple[int, ...]
    racks: dict[int, tuple[int, ...]]
    slots: tuple[tuple[int, ...], ...]  # usable slot vectors
    patterns: tuple[tuple[int, ...], ...]  # multisets of slot indices (sorted), non-empty

    def used(self, p: int) -> np.ndarray:
        """GPUs per type of pattern ``p``."""
        out = np.zeros(len(self.profile), dtype=np.int64)
        for s in self.patterns[p]:
            out += np.asarray(self.slots[s], dtype=np.int64)
        return out


@dataclass(frozen=True)
class Aggregation:
    """Kinds, each app's {kind: {slot index: cell index}}, the pattern columns (rack, kind, p)."""

    kinds: tuple[Kind, ...]
    kind_of: dict[int, int]  # machine -> kind index
    app_slots: dict[int, dict[int, dict[int, int]]]
    m_cols: tuple[tuple[int, int, int], ...]


def aggregation(prog: CompactView, lev: dict[int, list[int]]) -> Aggregation | None:
    """The kinds, slots and patterns of ``prog`` (``lev``: each active app's level per type), or
    None when a kind would have more than :data:`MAX_PATTERNS` patterns."""
    T = range(len(prog.types))
    held = {prog.apps[i].held_machine for i in prog.active} - {-1}
    by_key: dict[tuple, dict[int, list[int]]] = {}
    prof: dict[tuple, tuple[int, ...]] = {}
    for m, r in sorted(prog._rack_of.items()):
        p = tuple(prog.cap.get(("m", m, t), 0) for t in T)
        key = ("m", m) if m in held else ("p", p)
        by_key.setdefault(key, {}).setdefault(r, []).append(m)
        prof[key] = p
    keys = sorted(by_key)
    kpos = {k: j for j, k in enumerate(keys)}
    per_app: dict[int, dict[int, dict[tuple, int]]] = {}
    cache: dict[tuple, dict[tuple, int]] = {}
    for i in prog.active:
        cells = prog.feasible_cells(i)
        s0 = tuple((k, c) for k, c in enumerate(cells) if c[1] == 0)
        if not s0:
            continue
        hm = prog.apps[i].held_machine
        allowed = [("m", hm)] if hm >= 0 else keys
        per_app[i] = {}
        for key in allowed:
            if key not in kpos:
                continue
            ck = (tuple(lev[i]), s0, prof[key])
            if ck not in cache:
                cache[ck] = _slots(prof[key], lev[i], s0)
            if cache[ck]:
                per_app[i][kpos[key]] = cache[ck]
    kinds = []
    for j, key in enumerate(keys):
        used = sorted({u for sl in per_app.values() for u in sl.get(j, {})})
        pats = _patterns(prof[key], used, MAX_PATTERNS) if used else []
        if pats is None:
            return None
        racks = {r: tuple(ms) for r, ms in sorted(by_key[key].items())}
        kinds.append(Kind(key, prof[key], racks, tuple(used), tuple(pats)))
    spos = [{u: s for s, u in enumerate(k.slots)} for k in kinds]
    app_slots = {
        i: {j: {spos[j][u]: c for u, c in sl.items()} for j, sl in d.items()}
        for i, d in per_app.items()
    }
    kind_of = {m: j for j, k in enumerate(kinds) for ms in k.racks.values() for m in ms}
    m_cols = tuple(
        (r, j, p) for j, k in enumerate(kinds) for r in k.racks for p in range(len(k.patterns))
    )
    return Aggregation(tuple(kinds), kind_of, app_slots, m_cols)


def _slots(profile: tuple[int, ...], lev: list[int], s0: tuple) -> dict[tuple, int]:
    """{slot vector u <= profile: index of the best spread-0 cell it satisfies}: |u| = n_c and the
    worst level of u <= v_c, least such v_c (rho is monotone in the level)."""
    sizes = {c[0] for _, c in s0}
    out = {}
    for u in itertools.product(*(range(c + 1) for c in profile)):
        n = sum(u)
        if n not in sizes:
            continue
        worst = max(lev[t] for t, k in enumerate(u) if k)
        fit = [(c[2], k) for k, c in s0 if c[0] == n and c[2] >= worst]
        if fit:
            out[u] = min(fit)[1]
    return out


def _patterns(profile: tuple[int, ...], slots: list, cap: int) -> list | None:
    """Non-empty multisets of slot indices (non-decreasing) with sum <= profile; None over ``cap``."""
    out: list[tuple[int, ...]] = []
    vecs = [np.asarray(s, dtype=np.int64) for s in slots]

    def rec(start: int, left: np.ndarray, cur: list[int]) -> bool:
        for k in range(start, len(vecs)):
            if (vecs[k] <= left).all():
                cur.append(k)
                out.append(tuple(cur))
                if len(out) > cap or not rec(k, left - vecs[k], cur):
                    return False
                cur.pop()
        return True

    return out if rec(0, np.asarray(profile, dtype=np.int64), []) else None


def agg_rows(prog: CompactView, meta: list[dict], start: int, add, usage: dict, ub) -> None:
    """Rows of the aggregation: machines per (rack, kind), slots used <= slots cut, spread-0 cells
    = their slots; pattern usage into the rack / cluster capacity ``usage`` lists; ``ub`` of M."""
    agg = prog.agg
    per_rk: dict[tuple[int, int], list[int]] = {}
    supply: dict[tuple[int, int], list[tuple[int, float]]] = {}
    for q, (r, j, p) in enumerate(agg.m_cols):
        col = start + q
        k = agg.kinds[j]
        ub[col] = float(len(k.racks[r]))
        per_rk.setdefault((r, j), []).append(col)
        for s in set(k.patterns[p]):
            supply.setdefault((j, s), []).append((col, -float(k.patterns[p].count(s))))
        used = k.used(p)
        for t in np.flatnonzero(used):
            for key in (("k", r, int(t)), ("t", int(t))):
                usage.setdefault(key, []).append((col, float(used[t])))
    for (r, j), cols in per_rk.items():
        add([(c, 1.0) for c in cols], -np.inf, float(len(agg.kinds[j].racks[r])))
    demand: dict[tuple[int, int], list[tuple[int, float]]] = {}
    for e in meta:
        by_cell: dict[int, list[int]] = {}
        for (j, s), col in e["a"].items():
            demand.setdefault((j, s), []).append((col, 1.0))
            by_cell.setdefault(e["acell"][j, s], []).append(col)
        for k, (_, sc, _) in enumerate(e["cells"]):
            if sc == 0:
                add([(c, 1.0) for c in by_cell.get(k, [])] + [(e["z"] + k, -1.0)], 0.0, 0.0)
    for slot, ent in demand.items():
        add(ent + supply.get(slot, []), -np.inf, 0.0)


def agg_decode(prog: CompactView, x: np.ndarray, meta: list[dict], take, chosen) -> None:
    """Spread-0 apps of an integral point onto concrete machines: patterns to the machines of
    their (rack, kind) in order, then each app to a cut slot of its kind (``take(i, m, t, n)``)."""
    agg = prog.agg
    start = prog.layout[0] - len(agg.m_cols)
    nxt: dict[tuple[int, int], int] = {}
    free: dict[tuple[int, int], list[int]] = {}  # (kind, slot) -> machines with that slot cut
    for q, (r, j, p) in enumerate(agg.m_cols):
        k = agg.kinds[j]
        for _ in range(int(round(x[start + q]))):
            pos = nxt.get((r, j), 0)
            nxt[r, j] = pos + 1
            for s in k.patterns[p]:
                free.setdefault((j, s), []).append(k.racks[r][pos])
    for e in meta:
        if e["i"] not in chosen:
            continue
        for (j, s), col in e["a"].items():
            if x[col] > 0.5:
                m = free[j, s].pop(0)
                for t, n in enumerate(agg.kinds[j].slots[s]):
                    if n:
                        take(e["i"], [m], t, n)


def agg_start(prog: CompactView, x: np.ndarray, meta: list[dict], on: dict) -> None:
    """Set Y, z and M of ``x`` from spread-0 placements ``on`` = {app: {machine: {type: n}}}."""
    agg = prog.agg
    start = prog.layout[0] - len(agg.m_cols)
    spos = [{u: s for s, u in enumerate(k.slots)} for k in agg.kinds]
    ppos = [{p: q for q, p in enumerate(k.patterns)} for k in agg.kinds]
    mpos = {c: q for q, c in enumerate(agg.m_cols)}
    cut: dict[int, list[int]] = {}
    T = len(prog.types)
    for e in meta:
        if e["i"] not in on:
            continue
        ((m, per_t),) = on[e["i"]].items()
        j = agg.kind_of[m]
        s = spos[j][tuple(per_t.get(t, 0) for t in range(T))]
        x[e["a"][j, s]] = 1.0
        x[e["z"] : e["z"] + len(e["cells"])] = 0.0
        x[e["z"] + e["acell"][j, s]] = 1.0
        cut.setdefault(m, []).append(s)
    for m, ss in cut.items():
        j = agg.kind_of[m]
        x[start + mpos[prog._rack_of[m], j, ppos[j][tuple(sorted(ss))]]] += 1.0


def agg_total_rows(prog: CompactView, meta: list[dict], start: int, add) -> None:
    """Knapsack rows per rack: GPUs cut into patterns + spread-1 use <= the rack's free GPUs."""
    agg = prog.agg
    _, cr = prog.capacity
    ent: dict[int, list[tuple[int, float]]] = {}
    for q, (r, j, p) in enumerate(agg.m_cols):
        ent.setdefault(r, []).append((start + q, float(agg.kinds[j].used(p).sum())))
    for e in meta:
        if e["r"] and prog.per_cell(1):
            for (r, k), col in e["r"].items():
                ent.setdefault(r, []).append((col, float(e["cells"][k][0])))
        else:
            for (r, _), col in e["h"].items():
                ent.setdefault(r, []).append((col, 1.0))
    for r, cap in cr.items():
        if ent.get(r):
            add(ent[r], -np.inf, float(cap))
