"""Gavel's finish-time fairness as a queue scheduler (``gavel-ftf``): min max rho over time fractions
at every decision, then jobs ordered by their share over the share of their life they held GPUs."""

from __future__ import annotations

import numpy as np

from fairplace.core.params import Interval, scheduler_option
from fairplace.formulations.ftf import IdealTime
from fairplace.formulations.gavel import GavelFTFProgram as Program
from fairplace.solvers.relaxation import solve_gavel

from ..protocols import SchedView

__all__ = ["GAVEL_TOL", "GavelFTF"]


#: the bisection's tolerance on max rho (for a program the water-filling does not solve)
GAVEL_TOL = scheduler_option(
    "tol",
    1e-4,
    Interval(0.0, 1.0, closed="right"),
    "Gavel: the bisection's tolerance on max rho",
)


class GavelFTF:
    """Gavel-style finish-time fairness: each decision solves min max rho over time fractions
    (:class:`fairplace.formulations.gavel.GavelFTFProgram`, one gang configuration per active job using N_j
    GPUs of ``gpus``) exactly, with rho_i = (elapsed_i + remaining_i / rate_i) / T_id,i and T_id under
    the ``gavel`` variant of :class:`~fairplace.formulations.ftf.IdealTime`; the program is separable,
    so it is solved in closed form with the water-filling X (:mod:`fairplace.solvers.waterfill`; ``tol``
    is the bisection's, for a program that is not); then, as Gavel's round mechanism does, jobs are
    ordered by X_i / (share of their life they held GPUs). ``last_shares``: (active job indices,
    their X) of the latest decision (``papers/themis/experiments/gavel_shares.py`` records them)."""

    name = "gavel-ftf"

    def __init__(self, tol: float = GAVEL_TOL.default):
        self.tol = GAVEL_TOL.check(tol)
        self.last_shares: tuple[np.ndarray, np.ndarray] | None = None

    def order(self, view: SchedView) -> np.ndarray:

        idx = view.active
        n = idx.size
        d = view.demand[idx].astype(float)
        serial = view.t_iter[idx] * d  # GPU-seconds per iteration
        m = int(np.unique(view.app[idx]).size)
        iso = view.t_isolated[idx] if view.t_isolated is not None else np.zeros(n)
        t_id = np.array(
            [
                IdealTime("gavel", n_active=m, t_isolated=float(iso[k])).value(
                    float(view.total[j] * serial[k]),
                    float(view.remaining[j] * serial[k]),
                    int(d[k]),
                    view.gpus,
                )
                for k, j in enumerate(idx)
            ]
        )
        prog = Program(
            throughput=np.diag(1.0 / view.t_iter[idx]),
            usage=d[:, None],
            capacity=np.array([float(view.gpus)]),
            work=view.remaining[idx],
            elapsed=np.maximum(view.t - view.arrival[idx], 0.0),
            t_id=np.maximum(t_id, 1e-9),
        )
        X = np.diag(solve_gavel(prog, tol=self.tol).X)
        self.last_shares = (idx, X)  # the time shares of this decision, for inspection
        life = np.maximum(view.t - view.arrival[idx], 1e-9)
        held = view.held[idx] if view.held is not None else np.zeros(n)
        prio = X / np.maximum(held / life, 1e-3)
        return idx[np.lexsort((idx, view.arrival[idx], -np.round(prio, 9)))]

    def next_change(self, view: SchedView) -> float:
        return view.t
