"""An app as the compact PF arbiter (:mod:`.compact`) sees it: its rho table over the offer, its
class and the single machine / rack it holds, and its non-dominated cells (n, s, v): n offered
GPUs, union spread <= s, worst level <= v, worth w = -log rho(n, s, v)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from fairplace.core.domain import AgentApp, AuctionInstance, Cluster

from .agents import RhoTable, free_gpus, rho_table


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
    t = rho_table(app, cluster, offer, room=room, model=model)
    hm = hr = -1
    if app.held:
        idx = cluster.indices(app.held)
        ms, rs = set(cluster.machine_index[idx].tolist()), set(cluster.rack_index[idx].tolist())
        hm = ms.pop() if len(ms) == 1 else -1
        hr = rs.pop() if len(rs) == 1 else -1
    return CompactApp(t, app.cls, hm, hr)
