"""THEMIS' auction valuations over one lease (docs/themis-valuation.md: the rule and its argument).

Eq. 1 / Eq. 2 price a bundle G as if the app held it until it ends, so an app holding nothing has
rho(empty) = inf, and PA's c_i = prod_{j != i} rho_j(PF_-i) / rho_j(PF) degenerates to 0 for a
served starving bidder whenever another starving bidder could take its GPUs. The lease forms use
one model of the app's future: it holds G for this lease L, then runs on its fair share. With
e = t_now - t_start, T(G) = rho(G) T_id - e its remaining time on G and T_f its remaining time on
its fair share (floor(R_C / N) GPUs on one machine), its remaining time from now is

    D(G) = T(G)                          if T(G) <= L   (done within the lease)
    D(G) = L + (1 - L / T(G)) T_f        otherwise      (G for L, then T_f for the rest)
    D(empty) = L + T_f                                  (nothing now: delayed by one lease)

``valuation`` (``Arbiter.valuation``; each a rho table the compact arbiter reads, value 1 / rho):

* ``lease`` (default) — v(G) = (L + D(empty) - D(G)) / L: one lease plus the time G saves, in
  leases; = 1 + T_f / T(G) when T(G) > L, i.e. 1 + the app's speed on G in units of its fair
  share, so PF is Nash welfare over that speed with a floor of 1 (the same weight for every app);
* ``lease-rho`` — rho_L(G) = (e + D(G)) / T_id, the app's rho under the same model;
* ``held`` — the AGENT's table unchanged (Eq. 1 / 2; rho(empty) = inf).

Both lease forms are finite, non-decreasing in T(G) (the app's own order of bundles is kept),
continuous at T(G) = L, and worth no less than nothing.
"""

from __future__ import annotations

import math

import numpy as np

from fairplace.core.errors import OptionError

from .agents import RhoTable
from .ftf import FTFModel

#: the auction's valuations (``Arbiter.valuation``; module docstring)
VALUATIONS = ("lease", "lease-rho", "held")


def _check(t_id: float, lease: float, t_fair: float) -> None:
    if not (t_id > 0 and lease > 0 and math.isfinite(t_fair) and t_fair >= 0):
        raise OptionError(
            "valuation",
            f"needs T_id > 0, lease > 0, finite T_f >= 0; got {t_id}, {lease}, {t_fair}",
        )


def lease_delay(rho, elapsed: float, t_id: float, lease: float, t_fair: float) -> np.ndarray:
    """D(G) of every entry of ``rho`` (inf: nothing held): the app's remaining time if it holds G
    for the lease, then its fair share (module docstring; ``t_fair`` = T_f)."""
    _check(t_id, lease, t_fair)
    t = np.maximum(np.asarray(rho, dtype=float) * t_id - elapsed, 0.0)  # T(G); T_sh >= e
    # L / T(G) where T(G) > L (L / inf = 0); max(T, L) = T there, and no division by 0 elsewhere
    frac = lease / np.maximum(t, lease)
    return np.where(t <= lease, t, lease + (1.0 - frac) * t_fair)


def lease_rho(rho, elapsed: float, t_id: float, lease: float, t_fair: float) -> np.ndarray:
    """``lease-rho``: rho_L(G) = (e + D(G)) / T_id."""
    return (elapsed + lease_delay(rho, elapsed, t_id, lease, t_fair)) / t_id


def lease_gain_rho(rho, elapsed: float, t_id: float, lease: float, t_fair: float) -> np.ndarray:
    """``lease``: 1 / v(G), v(G) = (L + D(empty) - D(G)) / L = one lease plus the time G saves, in
    leases (v(empty) = 1; v(G) = 1 + T_f / T(G) when T(G) > L)."""
    d = lease_delay(rho, elapsed, t_id, lease, t_fair)
    return lease / (2.0 * lease + t_fair - d)


def fair_share_gpus(r_c: int, n_apps: int) -> int:
    """floor(R_C / N) GPUs, at least one: the fair share ``Arbiter._rho_share`` prices."""
    return max(1, int(r_c) // max(int(n_apps), 1))


def fair_share_time(model: FTFModel, r_c: int, n_apps: int) -> float:
    """T_f: the app's remaining time on floor(R_C / N) GPUs on one machine (spread 0, V = 1)."""
    return float(model.t_shared(fair_share_gpus(r_c, n_apps), 0, 1.0) - model.elapsed)


def lease_table(
    table: RhoTable, model: FTFModel, r_c: int, lease: float, n_apps: int, kind: str = "lease"
) -> RhoTable:
    """``table`` (an AGENT rho table, row 0 = nothing offered) under the ``kind`` valuation."""
    t_f = max(fair_share_time(model, r_c, n_apps), 0.0)
    return lease_table_of(table, model.elapsed, model.ideal(r_c), lease, t_f, kind)


def lease_table_of(
    table: RhoTable, elapsed: float, t_id: float, lease: float, t_fair: float, kind: str = "lease"
) -> RhoTable:
    """:func:`lease_table` from the app's numbers: e = ``elapsed``, T_id, L = ``lease`` and
    T_f = ``t_fair`` (its remaining time on its fair share, at least 0)."""
    f = lease_gain_rho if kind == "lease" else lease_rho
    t = table  # its fields but rho (``dataclasses.replace`` without its per-call overhead)
    return RhoTable(t.app_id, t.levels, f(t.rho, elapsed, t_id, lease, t_fair), t.held_count,
                    t.held_spread, t.held_level)  # fmt: skip
