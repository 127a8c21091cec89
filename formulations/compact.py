"""Compact PF arbiter: no bid enumeration (THEMIS' PF step over the AGENTs' rho tables).

Groups q of interchangeable offered GPUs (one machine, one PM level per class in play; capacity
|q|). For app i, integer x_iq GPUs of group q and one binary selector z_ic per *cell*
c = (n, s, v): "n offered GPUs, union spread <= s, worst level <= v", worth w_ic = -log rho_i(n, s, v)
(precomputed by ``agents.rho_table``; w decreases in s and v, so "<=" is exact at an optimum):

    maximise  sum_i sum_c (w_ic - w_i0) z_ic + sum_i w_i0          (w_i0 = -log rho_i(nothing))
    s.t.      sum_c z_ic <= 1                                       one cell per app
              sum_q x_iq = sum_c n_c z_ic                           count
              x_iq <= u_iq * sum_{c: v_c >= V_i(q)} z_ic            worst level
              x_iq <= u_iq * (y_i,m(q) + sum_{c: s_c >= 1} z_ic),   sum_m y_im = sum_{c: s_c = 0} z_ic
              x_iq <= u_iq * (r_i,k(q) + sum_{c: s_c = 2} z_ic),    sum_k r_ik = sum_{c: s_c <= 1} z_ic
              sum_i x_iq <= |q|                                     no GPU used twice

Apps holding GPUs fix y / r to their held machine / rack (or lose the tighter spreads). Apps with
an unbounded rho(nothing) get the ``PFProgram`` big-M convention (serve as many as possible first).
Cells dominated by a cheaper cell (fewer GPUs or a looser spread/level with the same value) are
dropped; they never change the optimum value. ``reduced`` (default): y / r per (place, cell) instead
of the big-M rows, capacity knapsack rows, symmetry rows on interchangeable machines; same optima
(argument in ``compact_sym.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np

from fairplace.core.domain import AgentApp, AuctionInstance, Cluster

from .agents import Group, RhoTable, free_gpus, groups, rho_table
from .compact_agg import Aggregation, agg_decode, agg_rows, agg_start, agg_total_rows, aggregation
from .compact_sym import place_rows, relabel, symmetry_rows, total_rows
from .pf import PFValue
from .program import MILP, Rows


@dataclass(frozen=True)
class CompactApp:
    """An app as the compact arbiter sees it: its rho table, class and held machine / rack."""

    table: RhoTable
    cls: str | None = None
    held_machine: int = -1  # the single held machine (-1: none or several)
    held_rack: int = -1  # the single held rack (-1: none or several)

    @cached_property
    def w_empty(self) -> float | None:
        """w_i0 = -log rho_i(nothing) (None when unbounded); cached: read per app per value."""
        r = self.table.rho_empty
        return None if r is None else -float(np.log(r))

    @cached_property
    def cell_array(self) -> np.ndarray:
        """:attr:`cells` as an (cells, 3) int array (n, s, v)."""
        return np.array(self.cells, dtype=np.int64).reshape(-1, 3)

    @cached_property
    def cells(self) -> tuple[tuple[int, int, int], ...]:
        """Non-dominated (n, s, v-index) cells."""
        t = self.table
        w = (-np.log(t.rho)).tolist()  # nested lists: Python floats, the same values
        s_min = t.held_spread if t.held_count else 0
        v_min = max(t.held_level, 0)
        we = self.w_empty
        out = []
        n_lev, rows = t.levels.size, w[1:]
        for s in range(s_min, 3):
            for v in range(v_min, n_lev):
                best = -np.inf if we is None else we
                for n, row in enumerate(rows, 1):
                    val = row[s][v]
                    if val <= best + 1e-12:
                        continue  # no better than fewer GPUs (or nothing)
                    best = val
                    if s < 2 and row[s + 1][v] >= val - 1e-12:
                        continue  # a less restrictive cell is worth as much
                    if v + 1 < n_lev and row[s][v + 1] >= val - 1e-12:
                        continue
                    out.append((n, s, v))
        return tuple(out)


def compact_apps(inst: AuctionInstance, offer: np.ndarray | None = None) -> tuple[CompactApp, ...]:
    """Rho tables of the agent-form apps of ``inst`` over ``offer`` (default: the free GPUs)."""
    cl = inst.cluster
    offer = free_gpus(inst) if offer is None else np.asarray(offer, np.int64)
    return tuple(compact_app(a, cl, offer) for a in inst.agents)


def compact_app(
    app: AgentApp, cluster: Cluster, offer: np.ndarray, room: int | None = None, model=None
) -> CompactApp:
    """``app`` as the compact arbiter sees it on ``offer`` (``room`` / ``model``: as
    :func:`~fairplace.formulations.agents.rho_table`)."""
    # rho_table reads any int array (np.asarray); formulations/agents.py annotates a Sequence
    t = rho_table(app, cluster, offer, room=room, model=model)  # type: ignore[arg-type]
    hm = hr = -1
    if app.held:
        idx = cluster.indices(app.held)
        ms, rs = set(cluster.machine_index[idx].tolist()), set(cluster.rack_index[idx].tolist())
        hm = ms.pop() if len(ms) == 1 else -1
        hr = rs.pop() if len(rs) == 1 else -1
    return CompactApp(t, app.cls, hm, hr)


#: CompactProgram's cached properties that depend on the offer and on each app alone, not on which
#: apps are excluded, and that the offer's memo does not already share (handed on by
#: :meth:`CompactProgram.variant`)
_OFFER_CACHES = ("classes", "offer_memo", "_level_cache", "_feasible_cache")


class _per_offer(cached_property):
    """A cached property of :class:`CompactProgram` that depends on the cluster, the offer and the
    classes in play alone: computed once per (offer, classes) and shared, through
    :meth:`Cluster.memo <fairplace.core.domain.Cluster.memo>`, by every program on the same offer.
    THEMIS re-auctions the same free GPUs often (W2 x1 seed 0: 6,128 distinct offers in 28,594
    auctions of several bidders). Arrays in it are read-only: they are shared."""

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        v = obj.__dict__[self.attrname] = obj.shared(self.attrname, lambda: self.func(obj))
        return v


def _read_only(v):
    if isinstance(v, np.ndarray):
        v.flags.writeable = False
    elif isinstance(v, tuple):
        for x in v:
            _read_only(x)
    return v


@dataclass(frozen=True)
class CompactProgram:
    """The compact PF MILP over ``apps`` (indices not in ``exclude``) and the ``offer`` GPU indices."""

    cluster: Cluster
    offer: tuple[int, ...]
    apps: tuple[CompactApp, ...]
    exclude: frozenset[int] = frozenset()
    fixed: tuple[tuple[int, tuple[int, int, int]], ...] | None = None  # (app, cell): placement only
    reduced: bool = True  # per-(place, cell) selectors + symmetry rows (``compact_sym``)
    #: per-(rack, cell) selectors for spread-1 cells even when not ``reduced`` (few racks, and the
    #: LP then knows which racks can hold a cell; ``compact_sym`` item 1 with P = racks)
    rack_cells: bool = False
    #: spread-0 cells on machine kinds x patterns instead of per machine (``compact_agg``); falls
    #: back to per machine when a kind has too many patterns (``agg`` is None)
    aggregate: bool = False

    def excluding(self, apps) -> CompactProgram:
        """The same program without ``apps`` (a PF_{-i}), sharing what does not depend on who
        else bids: the offer's groups and counts, and the per-app level counts and feasible cells."""
        return self.variant(exclude=self.exclude | frozenset(apps))

    def variant(self, **changes) -> CompactProgram:
        """The same apps on the same offer with other settings (``exclude``, ``reduced``,
        ``rack_cells``, ``aggregate``), sharing what depends on the offer and each app alone."""
        if changes.keys() & {"cluster", "offer", "apps", "fixed"}:
            raise ValueError("a variant keeps the cluster, the offer, the apps and no fixed cells")
        sub = replace(self, **changes)
        for name in _OFFER_CACHES:
            if name in self.__dict__:
                sub.__dict__[name] = self.__dict__[name]
        return sub

    def per_cell(self, s: int) -> bool:
        """Whether spread-``s`` places have one selector per (place, cell) (else one per place)."""
        return self.reduced or (s == 1 and self.rack_cells)

    def fits(self, i: int, s: int, place: int, cell: tuple[int, int, int]) -> bool:
        """Whether ``cell`` of app i fits alone on machine (s = 0) / rack (s = 1) ``place``."""
        per, ids = self._level_counts(i)[s]
        row = int(np.searchsorted(ids, place))
        return bool(row < ids.size and ids[row] == place and per[row, cell[2]] >= cell[0])

    @cached_property
    def offer_memo(self) -> dict:
        """A dict shared by every program on this offer and classes (``Cluster.memo``): the
        :class:`_per_offer` properties, and what a solver derives from the offer alone (key it by
        whatever else the value depends on; arrays in it are shared, so not to be changed)."""
        offer = self.offer if type(self.offer) is tuple else tuple(np.asarray(self.offer).tolist())
        return self.cluster.memo(("compact offer", offer, self.classes))

    def shared(self, key, make):
        """``make()`` computed once per offer and classes and kept in :attr:`offer_memo` under
        ``key``; its arrays are made read-only (every program on the offer reads them)."""
        memo = self.offer_memo
        if key not in memo:
            memo[key] = _read_only(make())
        return memo[key]

    @cached_property
    def active(self) -> tuple[int, ...]:
        return tuple(i for i in range(len(self.apps)) if i not in self.exclude)

    @_per_offer
    def groups(self) -> tuple[Group, ...]:
        return groups(self.cluster, self.offer, self.classes)

    @cached_property
    def classes(self) -> tuple[str | None, ...]:
        """The apps' classes in play, in first-seen order (a group's ``scores`` follow it)."""
        return tuple(dict.fromkeys(a.cls for a in self.apps))

    @_per_offer
    def group_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(GPUs, machine, rack) of every group, as int arrays."""
        grps = self.groups
        return (
            np.array([len(g.gpus) for g in grps], dtype=np.int64),
            np.array([g.machine for g in grps], dtype=np.int64),
            np.array([g.rack for g in grps], dtype=np.int64),
        )

    @_per_offer
    def group_types(self) -> np.ndarray:
        """Index into :attr:`types` of every group's scores."""
        tpos = {t: k for k, t in enumerate(self.types)}
        return np.array([tpos[g.scores] for g in self.groups], dtype=np.int64)

    @_per_offer
    def place_members(self) -> tuple[np.ndarray, np.ndarray]:
        """(places, groups) membership of every machine and of every rack of the offer, places
        ascending: the places of an app that holds no single machine / rack."""
        _, mach, rack = self.group_arrays
        machines, racks = (at[None, :] == np.unique(at)[:, None] for at in (mach, rack))
        return machines, racks

    @cached_property
    def big_m(self) -> float:
        total = 1.0
        for i in self.active:
            w = -np.log(self.apps[i].table.rho[1:])
            w = w[np.isfinite(w)]
            if w.size:
                total += 2 * (np.abs(w).max() + w.max() - w.min())
            w_empty = self.apps[i].w_empty
            if w_empty is not None:
                total += 2 * abs(w_empty)
        return total

    @cached_property
    def log_sum_range(self) -> float:
        """S >= |log-sum| of any choice: sum over active apps of the largest |-log rho| they can get."""
        total = 0.0
        for i in self.active:
            w = np.abs(np.log(self.apps[i].table.rho[1:]))
            w = w[np.isfinite(w)]
            total += max(float(w.max()) if w.size else 0.0, abs(self.apps[i].w_empty or 0.0))
        return total

    @_per_offer
    def capacity(self) -> tuple[dict[int, int], dict[int, int]]:
        """Free GPUs per machine and per rack in the offer."""
        cm: dict[int, int] = {}
        cr: dict[int, int] = {}
        for g in self.groups:
            cm[g.machine] = cm.get(g.machine, 0) + len(g.gpus)
            cr[g.rack] = cr.get(g.rack, 0) + len(g.gpus)
        return cm, cr

    def feasible_cells(self, i: int) -> tuple[tuple[int, int, int], ...]:
        """Cells (n, s, v) of app i that fit the offer alone: n offered GPUs of app i's level <= v
        on one machine (s = 0; its held machine if any), in one rack (s = 1; its held rack if any)
        or anywhere (s = 2). A cell that does not fit alone is in no feasible integer point, so
        dropping it keeps every optimum (of PF and of any PF_{-i}) and tightens the LP."""
        if self.fixed is not None:
            return tuple(c for j, c in self.fixed if j == i)
        return self._feasible(i)[0]

    def feasible_cell_array(self, i: int) -> np.ndarray:
        """:meth:`feasible_cells` as a (cells, 3) int array (n, s, v)."""
        if self.fixed is not None:
            return np.array(self.feasible_cells(i), dtype=np.int64).reshape(-1, 3)
        return self._feasible(i)[1]

    def feasible_given(self, i: int, fit: np.ndarray) -> tuple[tuple, np.ndarray]:
        """(:meth:`feasible_cells`, :meth:`feasible_cell_array`) of app i from ``fit`` = its
        :meth:`_fit` table, which a caller that has counted the offer per place already holds."""
        return self._feasible(i, fit)

    def _feasible(self, i: int, fit: np.ndarray | None = None) -> tuple[tuple, np.ndarray]:
        cache = self._feasible_cache
        if i not in cache:
            a = self.apps[i]
            c = a.cell_array
            fit = self._fit(i) if fit is None else fit
            keep = np.flatnonzero(c[:, 0] <= fit[c[:, 1], c[:, 2]])
            cache[i] = (tuple(a.cells[k] for k in keep.tolist()), c[keep])
        return cache[i]

    @cached_property
    def _feasible_cache(self) -> dict:
        return {}

    def _fit(self, i: int) -> np.ndarray:
        """fit[s, v]: most offered GPUs of app i's level <= v on one machine (s = 0), in one rack
        (s = 1) and in the offer (s = 2), on the held machine / rack when app i holds one."""
        a = self.apps[i]
        (pm, machines), (pk, racks) = self._level_counts(i)
        if a.held_machine >= 0:
            pm = pm[machines == a.held_machine]
        if a.held_rack >= 0:
            pk = pk[racks == a.held_rack]
        out = np.zeros((3, a.table.levels.size), dtype=np.int64)
        out[0] = pm.max(0, initial=0)
        out[1] = pk.max(0, initial=0)
        out[2] = self._level_counts(i)[1][0].sum(0)
        return out

    def _level_counts(self, i: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """((per-machine, machine ids), (per-rack, rack ids)): offered GPUs of app i's level <= v
        (column v) per machine and per rack; cached per app."""
        cache = self._level_cache
        if i not in cache:
            a = self.apps[i]
            ci = self.classes.index(a.cls)
            lev = a.table.levels_at([t[ci] for t in self.types]).astype(np.int64)
            per_m, per_k, machines, racks = self._type_counts
            ok = (lev[:, None] <= np.arange(a.table.levels.size)[None, :]).astype(np.int64)
            cache[i] = ((per_m @ ok, machines), (per_k @ ok, racks))
        return cache[i]

    @cached_property
    def _level_cache(self) -> dict:
        return {}

    @_per_offer
    def _type_counts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Offered GPUs per (machine, type) and (rack, type), with the machine and rack ids."""
        machines = np.array(sorted({g.machine for g in self.groups}), dtype=np.int64)
        racks = np.array(sorted({g.rack for g in self.groups}), dtype=np.int64)
        tpos = {t: k for k, t in enumerate(self.types)}
        per_m = np.zeros((machines.size, len(self.types)), dtype=np.int64)
        per_k = np.zeros((racks.size, len(self.types)), dtype=np.int64)
        mpos = {m: k for k, m in enumerate(machines.tolist())}
        kpos = {r: k for k, r in enumerate(racks.tolist())}
        for g in self.groups:
            t = tpos[g.scores]
            per_m[mpos[g.machine], t] += len(g.gpus)
            per_k[kpos[g.rack], t] += len(g.gpus)
        return per_m, per_k, machines, racks

    @_per_offer
    def types(self) -> tuple[tuple[float, ...], ...]:
        """Distinct PM score tuples (one per class in play) of the offered GPUs."""
        return tuple(sorted({g.scores for g in self.groups}))

    @_per_offer
    def cap(self) -> dict[tuple, int]:
        """Free GPUs per ('m', machine, type), ('k', rack, type) and ('t', type)."""
        out: dict[tuple, int] = {}
        tpos = {t: k for k, t in enumerate(self.types)}
        for g in self.groups:
            t = tpos[g.scores]
            for key in (("m", g.machine, t), ("k", g.rack, t), ("t", t)):
                out[key] = out.get(key, 0) + len(g.gpus)
        return out

    @cached_property
    def layout(self) -> tuple[int, list[dict]]:
        """Per active app: z (cells); usage counts by type at the granularity its cell needs —
        f[m, t] (spread 0, one machine y_m), h[k, t] (spread 1, one rack r_k), g[t] (spread 2)."""
        machines = sorted({g.machine for g in self.groups})
        racks = sorted({g.rack for g in self.groups})
        T = range(len(self.types))
        agg = self.agg
        col, meta = 0, []
        for i in self.active:
            a = self.apps[i]
            cells = self.feasible_cells(i)
            e: dict[str, Any] = {"i": i, "cells": cells, "z": col, "lev": self._lev[i]}
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
                        if self.cap.get((kind, p, t), 0):
                            e[block][p, t], col = col, col + 1
                if held >= 0:
                    continue
                # selectors: one per (place, cell of spread s) if reduced, else one per place (-1)
                # (only where the cell fits alone: no integer point uses the others)
                if self.per_cell(s):
                    ks = [k for k, c in enumerate(cells) if c[1] == s]
                    for p in places:
                        for k in ks:
                            if self.fits(i, s, p, cells[k]):
                                e[sel][p, k], col = col, col + 1
                else:
                    for p in places:
                        e[sel][p, -1], col = col, col + 1
            if 2 in spreads:
                for t in T:
                    e["g"][(t,)], col = col, col + 1
            meta.append(e)
        return col + (len(agg.m_cols) if agg is not None else 0), meta

    @cached_property
    def _lev(self) -> dict[int, list[int]]:
        """Each active app's level index per type."""
        classes = self.classes
        out = {}
        for i in self.active:
            a = self.apps[i]
            ci = classes.index(a.cls)
            out[i] = [a.table.level(t[ci]) for t in self.types]
        return out

    @cached_property
    def agg(self) -> Aggregation | None:
        """The machine aggregation (``compact_agg``) when ``aggregate`` and it is small enough."""
        return aggregation(self, self._lev) if self.aggregate else None

    def cell_gain(self, i: int, cell: tuple[int, int, int]) -> float:
        a = self.apps[i]
        w = -float(np.log(a.table.rho[cell]))
        return w - a.w_empty if a.w_empty is not None else w + self.big_m

    @cached_property
    def offset(self) -> float:
        return float(sum(self.apps[i].w_empty or 0.0 for i in self.active))

    @cached_property
    def milp(self) -> MILP:
        """:meth:`to_milp` built once, shared by the solves of this program (the PF's LP and its
        leave-one-out payments). Not to be changed: :meth:`to_milp` builds a copy to extend."""
        return self.to_milp()

    def to_milp(self) -> MILP:
        """Rows: one cell; usage per granularity = its cells' counts; one machine / rack; level;
        and per type the laminar (machine within rack within cluster) capacities — by Hall's
        theorem on a laminar family they are exactly the condition for distinct GPUs to exist."""
        n_cols, meta = self.layout
        c, ub = np.zeros(n_cols), np.ones(n_cols)
        rows = Rows()
        add = rows.add
        usage: dict[tuple, list[tuple[int, float]]] = {}  # capacity key -> usage columns
        agg = self.agg
        for e in meta:
            i, a, cells = e["i"], self.apps[e["i"]], e["cells"]
            nmax = a.table.n_max
            zc = [e["z"] + k for k in range(len(cells))]
            for k, cell in enumerate(cells):
                c[zc[k]] = self.cell_gain(i, cell)
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
                        cap_keys = [("m", key[0], t), ("k", self._rack_of[key[0]], t), ("t", t)]
                    elif s == 1:
                        cap_keys = [("k", key[0], t), ("t", t)]
                    else:
                        cap_keys = [("t", t)]
                    ub[col] = float(min(self.cap[cap_keys[0]], nmax))
                    for ck in cap_keys:
                        usage.setdefault(ck, []).append((col, 1.0))
                    level_cols.setdefault(e["lev"][t], []).append(col)
            for sel, block, s in (("y", "f", 0), ("r", "h", 1)):
                if e[sel]:
                    place_rows(self, e, sel, block, s, ub, add)
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
            agg_rows(self, meta, n_cols - len(agg.m_cols), add, usage, ub)
        for key, use in usage.items():
            add(use, -np.inf, float(self.cap[key]))
        if self.reduced and agg is not None:
            agg_total_rows(self, meta, n_cols - len(agg.m_cols), add)
        elif self.reduced:
            total_rows(self, meta, add)
            symmetry_rows(self, meta, add)
        row_lb, row_ub = rows.bounds()
        return MILP(
            c=c,
            A=rows.matrix(n_cols),
            row_lb=row_lb,
            row_ub=row_ub,
            col_lb=np.zeros(n_cols),
            col_ub=ub,
            integrality=np.ones(n_cols, dtype=bool),
            sense="max",
            offset=self.offset,
        )

    @cached_property
    def _rack_of(self) -> dict[int, int]:
        return {g.machine: g.rack for g in self.groups}

    # --- decoding ---------------------------------------------------------------------------------
    def decode(self, x: np.ndarray) -> dict[int, tuple[tuple[int, int, int], tuple[int, ...]]]:
        """{app index: (cell, GPU indices)}: per type, machine demands first, then rack demands
        from what their rack has left, then cluster demands from what is left anywhere."""
        _, meta = self.layout
        tpos = {t: k for k, t in enumerate(self.types)}
        pool: dict[tuple[int, int], list[int]] = {}  # (machine, type) -> free GPU indices
        for g in self.groups:
            pool.setdefault((g.machine, tpos[g.scores]), []).extend(g.gpus)
        machines_in: dict[int, list[int]] = {}
        for m, k in self._rack_of.items():
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

        if self.agg is not None:
            agg_decode(self, x, meta, take, chosen)
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
                        places = sorted(self._rack_of)
                    take(e["i"], places, t, n)
        return {i: (chosen[i], tuple(sorted(out[i]))) for i in chosen}

    def start_vector(
        self, choice: dict[int, tuple[tuple[int, int, int], tuple[int, ...]]]
    ) -> np.ndarray:
        """A feasible point giving each app in ``choice`` its cell and GPUs (e.g. PF minus i)."""
        n_cols, meta = self.layout
        x = np.zeros(n_cols)
        tpos = {t: k for k, t in enumerate(self.types)}
        where = {
            g: (grp.machine, grp.rack, tpos[grp.scores]) for grp in self.groups for g in grp.gpus
        }
        perm: dict[int, int] = {}
        on0: dict[int, dict[int, dict[int, int]]] = {}  # aggregated: app -> {machine: {type: n}}
        if self.reduced and self.agg is None:  # the symmetry rows' canonical machine order
            on = {
                e["i"]: where[choice[e["i"]][1][0]][0] for e in meta if e["y"] and e["i"] in choice
            }
            on = {i: m for i, m in on.items() if choice[i][0][1] == 0}
            perm = relabel(self, meta, on)
        for e in meta:
            if e["i"] not in choice:
                continue
            cell, gpus = choice[e["i"]]
            kc = e["cells"].index(cell)
            x[e["z"] + kc] = 1.0
            kc = kc if self.per_cell(cell[1]) else -1
            for g in gpus:
                m, k, t = where[g]
                if cell[1] == 0 and self.agg is not None:
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
        if self.agg is not None:
            agg_start(self, x, meta, on0)
        return x

    def value(self, choice: dict) -> PFValue:
        """(#unbounded apps served, sum of -log rho over finite apps) of a decoded choice."""
        served, log_sum = 0, 0.0
        for i in self.active:
            a = self.apps[i]
            if i in choice:
                log_sum += -float(np.log(a.table.rho[choice[i][0]]))
                served += a.w_empty is None
            elif a.w_empty is not None:
                log_sum += a.w_empty
        return PFValue(served, log_sum)
