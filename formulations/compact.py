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
dropped; they never change the optimum value.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from fairplace.domain import AgentApp, AuctionInstance, Cluster

from .agents import Group, RhoTable, free_gpus, groups, rho_table
from .pf import PFValue
from .program import MILP


@dataclass(frozen=True)
class CompactApp:
    """An app as the compact arbiter sees it: its rho table, class and held machine / rack."""

    table: RhoTable
    cls: str | None = None
    held_machine: int = -1  # the single held machine (-1: none or several)
    held_rack: int = -1  # the single held rack (-1: none or several)

    @property
    def w_empty(self) -> float | None:
        r = self.table.rho_empty
        return None if r is None else -float(np.log(r))

    @cached_property
    def cells(self) -> tuple[tuple[int, int, int], ...]:
        """Non-dominated (n, s, v-index) cells."""
        t = self.table
        w = -np.log(t.rho)
        s_min = t.held_spread if t.held_count else 0
        v_min = max(t.held_level, 0)
        we = self.w_empty
        out = []
        for s in range(s_min, 3):
            for v in range(v_min, t.levels.size):
                best = -np.inf if we is None else we
                for n in range(1, t.n_max + 1):
                    val = w[n, s, v]
                    if val <= best + 1e-12:
                        continue  # no better than fewer GPUs (or nothing)
                    best = val
                    looser = [w[n, s + 1, v]] if s < 2 else []
                    looser += [w[n, s, v + 1]] if v + 1 < t.levels.size else []
                    if any(lv >= val - 1e-12 for lv in looser):
                        continue  # a less restrictive cell is worth as much
                    out.append((n, s, v))
        return tuple(out)


def compact_apps(inst: AuctionInstance, offer: np.ndarray | None = None) -> tuple[CompactApp, ...]:
    """Rho tables of the agent-form apps of ``inst`` over ``offer`` (default: the free GPUs)."""
    cl = inst.cluster
    offer = free_gpus(inst) if offer is None else np.asarray(offer, np.int64)
    return tuple(compact_app(a, cl, offer) for a in inst.agents)


def compact_app(app: AgentApp, cluster: Cluster, offer: np.ndarray) -> CompactApp:
    t = rho_table(app, cluster, offer)
    hm = hr = -1
    if app.held:
        idx = cluster.indices(app.held)
        ms, rs = np.unique(cluster.machine_index[idx]), np.unique(cluster.rack_index[idx])
        hm = int(ms[0]) if ms.size == 1 else -1
        hr = int(rs[0]) if rs.size == 1 else -1
    return CompactApp(t, app.cls, hm, hr)


@dataclass(frozen=True)
class CompactProgram:
    """The compact PF MILP over ``apps`` (indices not in ``exclude``) and the ``offer`` GPU indices."""

    cluster: Cluster
    offer: tuple[int, ...]
    apps: tuple[CompactApp, ...]
    exclude: frozenset[int] = frozenset()

    @cached_property
    def active(self) -> tuple[int, ...]:
        return tuple(i for i in range(len(self.apps)) if i not in self.exclude)

    @cached_property
    def groups(self) -> tuple[Group, ...]:
        classes = tuple(dict.fromkeys(a.cls for a in self.apps))
        return groups(self.cluster, self.offer, classes)

    @cached_property
    def big_m(self) -> float:
        total = 1.0
        for i in self.active:
            w = -np.log(self.apps[i].table.rho[1:])
            w = w[np.isfinite(w)]
            if w.size:
                total += 2 * (np.abs(w).max() + w.max() - w.min())
            if self.apps[i].w_empty is not None:
                total += 2 * abs(self.apps[i].w_empty)
        return total

    @cached_property
    def capacity(self) -> tuple[dict[int, int], dict[int, int]]:
        """Free GPUs per machine and per rack in the offer."""
        cm: dict[int, int] = {}
        cr: dict[int, int] = {}
        for g in self.groups:
            cm[g.machine] = cm.get(g.machine, 0) + len(g.gpus)
            cr[g.rack] = cr.get(g.rack, 0) + len(g.gpus)
        return cm, cr

    def feasible_cells(self, i: int) -> tuple[tuple[int, int, int], ...]:
        """Cells of app i that fit the offer alone (spread 0 within a machine, 1 within a rack)."""
        a = self.apps[i]
        cm, cr = self.capacity
        m0 = cm.get(a.held_machine, 0) if a.held_machine >= 0 else max(cm.values(), default=0)
        r0 = cr.get(a.held_rack, 0) if a.held_rack >= 0 else max(cr.values(), default=0)
        return tuple(
            (n, s, v)
            for n, s, v in a.cells
            if (s != 0 or n <= m0) and (s != 1 or n <= r0) and n <= len(self.offer)
        )

    @cached_property
    def layout(self) -> tuple[int, list[dict]]:
        """Column blocks per active app: x (groups), z (cells), y (machines), r (racks), then
        continuous aggregates lam (level >= v, v = 1..), z1 (spread >= 1), z2 (spread 2)."""
        grps = self.groups
        machines = sorted({g.machine for g in grps})
        racks = sorted({g.rack for g in grps})
        classes = tuple(dict.fromkeys(a.cls for a in self.apps))
        col, meta = 0, []
        for i in self.active:
            a = self.apps[i]
            cells = self.feasible_cells(i)
            ci = classes.index(a.cls)
            lev = np.array([a.table.level(g.scores[ci]) for g in grps], dtype=int)
            any0 = any(s == 0 for _, s, _ in cells)
            any1 = any(s <= 1 for _, s, _ in cells)
            ms = machines if any0 and a.held_machine < 0 else []
            rs = racks if any1 and a.held_rack < 0 else []
            e = {"i": i, "x": col, "z": col + len(grps), "cells": cells, "lev": lev}
            e["any0"], e["any1"] = any0, any1
            e["y"] = e["z"] + len(cells)
            e["r"] = e["y"] + len(ms)
            e["ms"], e["rs"] = {m: k for k, m in enumerate(ms)}, {r: k for k, r in enumerate(rs)}
            e["lam"] = e["r"] + len(rs)
            e["n_lev"] = int(a.table.levels.size)
            e["z1"] = e["lam"] + max(e["n_lev"] - 1, 0)
            e["z2"] = e["z1"] + 1
            col = e["z2"] + 1
            meta.append(e)
        return col, meta

    def cell_gain(self, i: int, cell: tuple[int, int, int]) -> float:
        a = self.apps[i]
        w = -float(np.log(a.table.rho[cell]))
        return w - a.w_empty if a.w_empty is not None else w + self.big_m

    @cached_property
    def offset(self) -> float:
        return float(sum(self.apps[i].w_empty or 0.0 for i in self.active))

    def to_milp(self) -> MILP:
        n_cols, meta = self.layout
        grps = self.groups
        c, ub = np.zeros(n_cols), np.ones(n_cols)
        integer = np.ones(n_cols, dtype=bool)
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        rlb: list[float] = []
        rub: list[float] = []

        def add(entries, lo, hi):
            r = len(rlb)
            for col, v in entries:
                rows.append(r)
                cols.append(col)
                vals.append(v)
            rlb.append(lo)
            rub.append(hi)

        by_machine: dict[int, list[int]] = {}
        by_rack: dict[int, list[int]] = {}
        for q, g in enumerate(grps):
            by_machine.setdefault(g.machine, []).append(q)
            by_rack.setdefault(g.rack, []).append(q)
        for e in meta:
            i, a, cells = e["i"], self.apps[e["i"]], e["cells"]
            nmax = a.table.n_max
            zc = [e["z"] + k for k in range(len(cells))]
            for k, cell in enumerate(cells):
                c[zc[k]] = self.cell_gain(i, cell)
            add([(z, 1.0) for z in zc], -np.inf, 1.0)
            add(
                [(e["x"] + q, 1.0) for q in range(len(grps))]
                + [(zc[k], -float(n)) for k, (n, _, _) in enumerate(cells)],
                0.0,
                0.0,
            )
            aggregates = [(e["z1"], [z for z, (_, s, _) in zip(zc, cells, strict=True) if s >= 1])]
            aggregates.append(
                (e["z2"], [z for z, (_, s, _) in zip(zc, cells, strict=True) if s == 2])
            )
            for v in range(1, e["n_lev"]):
                ok = [z for z, (_, _, vc) in zip(zc, cells, strict=True) if vc >= v]
                aggregates.append((e["lam"] + v - 1, ok))
            for col, members in aggregates:
                integer[col] = False
                add([(col, 1.0)] + [(z, -1.0) for z in members], 0.0, 0.0)
            for q, g in enumerate(grps):
                u = float(min(len(g.gpus), nmax))
                ub[e["x"] + q] = u
                if e["lev"][q] >= 1:  # only GPUs at or below the cell's level
                    add([(e["x"] + q, 1.0), (e["lam"] + e["lev"][q] - 1, -u)], -np.inf, 0.0)
            for flag, sel, pos, held, members, zsel, loose in (
                ("any0", "y", e["ms"], a.held_machine, by_machine, 0, e["z1"]),
                ("any1", "r", e["rs"], a.held_rack, by_rack, 1, e["z2"]),
            ):
                if not e[flag]:
                    continue  # no cell restricts this spread level
                if pos:  # exactly one machine / rack when a tight cell is chosen
                    add(
                        [(e[sel] + t, 1.0) for t in pos.values()]
                        + [(z, -1.0) for z, (_, s, _) in zip(zc, cells, strict=True) if s <= zsel],
                        0.0,
                        0.0,
                    )
                for key, qs in members.items():
                    u = float(min(sum(len(grps[q].gpus) for q in qs), nmax))
                    if not pos and key == held:
                        continue  # the held machine / rack is always allowed
                    entry = [(e["x"] + q, 1.0) for q in qs] + [(loose, -u)]
                    if pos:
                        entry.append((e[sel] + pos[key], -u))
                    add(entry, -np.inf, 0.0)
        for q, g in enumerate(grps):
            add([(e["x"] + q, 1.0) for e in meta], -np.inf, float(len(g.gpus)))
        A = sp.csr_matrix((vals, (rows, cols)), shape=(len(rlb), n_cols))
        return MILP(
            c=c,
            A=A,
            row_lb=np.array(rlb),
            row_ub=np.array(rub),
            col_lb=np.zeros(n_cols),
            col_ub=ub,
            integrality=integer,
            sense="max",
            offset=self.offset,
        )

    # --- decoding ---------------------------------------------------------------------------------
    def decode(self, x: np.ndarray) -> dict[int, tuple[tuple[int, int, int], tuple[int, ...]]]:
        """{app index: (cell, GPU indices)} for apps that receive GPUs (groups handed out in order)."""
        _, meta = self.layout
        taken = [0] * len(self.groups)
        out = {}
        for e in meta:
            chosen = [k for k in range(len(e["cells"])) if x[e["z"] + k] > 0.5]
            if not chosen:
                continue
            gpus: list[int] = []
            for q, g in enumerate(self.groups):
                k = int(round(x[e["x"] + q]))
                gpus.extend(g.gpus[taken[q] : taken[q] + k])
                taken[q] += k
            out[e["i"]] = (e["cells"][chosen[0]], tuple(gpus))
        return out

    def start_vector(
        self, choice: dict[int, tuple[tuple[int, int, int], tuple[int, ...]]]
    ) -> np.ndarray:
        """A feasible point giving each app in ``choice`` its cell and GPUs (e.g. PF minus i)."""
        n_cols, meta = self.layout
        x = np.zeros(n_cols)
        gpos = {g: q for q, grp in enumerate(self.groups) for g in grp.gpus}
        for e in meta:
            if e["i"] not in choice:
                continue
            cell, gpus = choice[e["i"]]
            x[e["z"] + e["cells"].index(cell)] = 1.0
            for g in gpus:
                x[e["x"] + gpos[g]] += 1.0
            ms = {self.groups[gpos[g]].machine for g in gpus}
            rs = {self.groups[gpos[g]].rack for g in gpus}
            x[e["z1"]] = float(cell[1] >= 1)
            x[e["z2"]] = float(cell[1] == 2)
            for v in range(1, e["n_lev"]):
                x[e["lam"] + v - 1] = float(cell[2] >= v)
            if cell[1] == 0 and e["ms"]:
                x[e["y"] + e["ms"][ms.pop()]] = 1.0
            if cell[1] <= 1 and e["rs"]:
                x[e["r"] + e["rs"][rs.pop()]] = 1.0
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


def best_subbundle(
    app: CompactApp, cluster: Cluster, bundle: tuple[int, ...], cap: int
) -> tuple[tuple[int, int, int], tuple[int, ...]] | None:
    """PA ``floor`` rounding in the compact form: the best (lowest rho) cell reachable with at most
    ``cap`` GPUs of ``bundle`` (same machine / rack / level logic as the MILP), and those GPUs."""
    t = app.table
    if cap <= 0 or not bundle:
        return None
    idx = np.asarray(bundle, np.int64)
    lev = np.array([t.level(v) for v in cluster.pm_vector(app.cls)[idx]])
    mach, rack = cluster.machine_index[idx], cluster.rack_index[idx]
    best, best_rho = None, t.rho[0, t.held_spread, max(t.held_level, 0)]
    for cell in app.cells:
        n, s, v = cell
        if n > cap or t.rho[cell] >= best_rho:
            continue
        ok = lev <= v
        if s == 0:
            pools = [ok & (mach == m) for m in np.unique(mach[ok])]
            if app.held_machine >= 0:
                pools = [ok & (mach == app.held_machine)]
        elif s == 1:
            pools = [ok & (rack == r) for r in np.unique(rack[ok])]
            if app.held_rack >= 0:
                pools = [ok & (rack == app.held_rack)]
        else:
            pools = [ok]
        for pool in pools:
            if pool.sum() >= n:
                best, best_rho = (cell, tuple(int(g) for g in idx[pool][:n])), t.rho[cell]
                break
    return best
