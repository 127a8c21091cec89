"""A bidder's side of one THEMIS round (:mod:`.arbiter`): its compact app (the AGENT's rho table
over the offer, §4.3), the same under the lease valuation, and its rho on GPUs it may get.

An :class:`~.outcome.AppState` with a ``pricer``
(:class:`~fairplace.formulations.running_app.RunningApp`: the simulator's agents) is priced from
its numbers alone; any other from its agent description's FTF model
(:func:`~fairplace.formulations.agents.ftf_model`), the same numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from fairplace.core.domain import Cluster, spread
from fairplace.formulations.agents import RhoTable, ftf_model, levels_of
from fairplace.formulations.compact import CompactApp, compact_app
from fairplace.formulations.running_app import RunningApp
from fairplace.formulations.valuation import fair_share_gpus, lease_table, lease_table_of

from .outcome import AppState


def pricer_of(cluster: Cluster, s: AppState) -> RunningApp | None:
    """``s``'s pricer when it prices on ``cluster`` (its T_id is for R_C = len(cluster))."""
    p = s.pricer
    return p if p is not None and p.r_c == len(cluster) else None


def model_of(cluster: Cluster, s: AppState):
    """``s``'s FTF model (built from its agent description when the state has none)."""
    return s.model if s.model is not None else ftf_model(s.app, cluster)


def held_index(cluster: Cluster, s: AppState) -> np.ndarray:
    """The GPU indices ``s`` holds (an agent's state keeps them: ``held_on``)."""
    on = getattr(s, "held_on", None)
    idx = on(cluster) if on is not None else None
    if idx is not None:
        return idx
    return cluster.indices(s.held) if s.held else np.zeros(0, np.int64)


def bid(cluster: Cluster, s: AppState, offer: np.ndarray, model=None) -> CompactApp:
    """``s`` as the compact arbiter sees it on ``offer``
    (:func:`~fairplace.formulations.compact.compact_app` with its room and model)."""
    p = pricer_of(cluster, s)
    if p is None:
        return compact_app(s.app, cluster, offer, s.room, model_of(cluster, s) if model is None
                           else model)  # fmt: skip
    held = held_index(cluster, s)
    cls, offered = s.cls, np.asarray(offer, dtype=np.int64)
    every = cluster.pm_levels(cls)
    if every.size == 1 and offered.size + held.size:  # levels_of: the cluster's only level
        levels = every
    else:
        levels = levels_of(cluster, np.concatenate([offered, held]), cls)
    # offer_table(s.id, cls, held, cluster, offer, p.demand_max, s.room, p.table), the held
    # GPUs' machines and racks read once for its spread and compact_app's held machine / rack
    n_max = int(min(offered.size, max(p.demand_max - held.size, 0)))
    if s.room is not None:
        n_max = min(n_max, max(int(s.room), 0))
    rho = p.table(int(held.size), n_max + 1, levels)
    hm = hr = h_level = -1
    h_spread = 0
    if held.size:
        ms = set(cluster.machine_index[held].tolist())
        rs = set(cluster.rack_index[held].tolist())
        hm = ms.pop() if len(ms) == 1 else -1
        hr = rs.pop() if len(rs) == 1 else -1
        h_spread = 0 if hm >= 0 else 1 if hr >= 0 else 2  # spread(held)
        if every.size == 1:  # one value on the cluster: the first level
            h_level = 0
        else:
            v = np.round(cluster.pm_vector(cls)[held].max(), 12)
            h_level = int(np.searchsorted(levels, v))
    table = RhoTable(s.id, levels, rho, int(held.size), h_spread, h_level)
    return CompactApp(table, cls, hm, hr)


def lease_bid(
    cluster: Cluster, s: AppState, capp: CompactApp, lease: float, n_apps: int, kind: str,
    model=None,
) -> CompactApp:  # fmt: skip
    """``capp`` with its table under the ``kind`` lease valuation
    (:func:`~fairplace.formulations.valuation.lease_table`)."""
    r_c = len(cluster)
    p = pricer_of(cluster, s)
    if p is None:
        m = model_of(cluster, s) if model is None else model
        return replace(capp, table=lease_table(capp.table, m, r_c, lease, n_apps, kind))
    t_f = max(float(p.t_shared(fair_share_gpus(r_c, n_apps), 0, 1.0) - p.elapsed), 0.0)
    table = lease_table_of(capp.table, p.elapsed, p.ideal, lease, t_f, kind)
    return CompactApp(table, capp.cls, capp.held_machine, capp.held_rack)


def state_rho(cluster: Cluster, s: AppState, gpus: Sequence[int] | np.ndarray) -> float:
    """rho of ``s`` on the GPU indices ``gpus`` (Eq. 1 / 2; rho(empty) for none)."""
    p = pricer_of(cluster, s)
    if p is None:
        app = s.app
        if not len(gpus):
            return math.inf if app.rho_empty is None else float(app.rho_empty)
        model = model_of(cluster, s)
    elif not len(gpus):
        return math.inf  # a pricer's app has no rho(empty): unbounded
    idx = np.asarray(gpus, dtype=np.int64)
    sp = spread(cluster.machine_index, cluster.rack_index, idx)
    v = float(cluster.pm_vector(s.cls)[idx].max())
    if p is None:
        return model.rho(len(idx), len(cluster), sp, v)
    return p.rho(len(idx), sp, v)


def share_rho(cluster: Cluster, s: AppState, n: int) -> float:
    """rho of ``s`` from now on with ``n`` GPUs on one machine (spread 0, V = 1)."""
    p = pricer_of(cluster, s)
    if p is None:
        return float(model_of(cluster, s).rho(n, len(cluster), 0, 1.0))
    return float(p.rho(n, 0, 1.0))
