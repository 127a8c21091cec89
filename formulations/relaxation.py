"""Upper bounds on the PF optimum: the LP relaxation and the Eisenberg-Gale (EG) relaxation.

Both relax the PF program of :mod:`fairplace.formulations.pf` over the same explicit bid columns
(app i, bid b) with fractional x_ib in [0, 1] ("divisible GPUs": an app may hold a fraction of a bundle):

    sum_b x_ib <= 1  (every app),   sum_{(i,b): g in B_ib} x_ib <= 1  (every GPU g),
    sum_{i unbounded} sum_b x_ib >= n_min                                                  (*)

* LP  :  maximise  sum_i [ sum_b (w_ib - w0_i) x_ib + w0_i ]          w_ib = -log rho_ib, w0_i = -log rho_empty_i
* EG  :  maximise  sum_{i finite} log( sum_b x_ib / rho_ib + (1 - sum_b x_ib) / rho_empty_i )
                 + sum_{i unbounded} sum_b w_ib x_ib
  (Eisenberg-Gale with the linear "rate" utility v_i = 1/rho; ``cp.log`` of an affine expression is an
  exponential-cone constraint, solved by Clarabel.)

At every integral point both objectives equal the PF log-sum of :func:`~fairplace.formulations.pf.pf_value`
(an app with unbounded ``rho_empty`` left without a bundle contributes 0, i.e. it is not counted, exactly
as in ``Solution.objective``), so both optima are upper bounds on the exact PF log-sum. By concavity of
log, EG >= LP at every fractional point: the LP bound is the tighter one and is the default on explicit
bid tables; EG is the bound that also makes sense for divisible resources.

Max-Nash-welfare convention (pf.py): the exact optimum first serves the largest possible number n* of
unbounded apps. Row (*) with any ``n_min <= n*`` keeps the exact optimum feasible, so the bound stays
valid; ``n_min = n*`` (when known) makes it tighter. Without unbounded apps and with ``n_min = 0`` the
LP is ``PFProgram(inst).to_milp().relaxed()`` exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from fairplace.core.domain import AuctionInstance

from .pf import PFProgram
from .program import MILP


@dataclass(frozen=True)
class PFRelaxation:
    """LP / EG relaxations of the PF program of ``instance`` (see module docstring)."""

    instance: AuctionInstance
    n_min: int = 0

    @cached_property
    def program(self) -> PFProgram:
        return PFProgram(self.instance)

    @cached_property
    def columns(self) -> tuple[tuple[int, int], ...]:
        return self.program.columns

    @cached_property
    def unbounded_cols(self) -> np.ndarray:
        apps = self.instance.apps
        return np.array([apps[i].rho_empty is None for i, _ in self.columns], dtype=bool)

    def weights(self) -> np.ndarray:
        """LP coefficient per column: w_ib - w0_i (finite rho_empty) or w_ib (unbounded)."""
        apps = self.instance.apps
        out = np.empty(len(self.columns))
        for k, (i, b) in enumerate(self.columns):
            w = -np.log(apps[i].bids[b].rho)
            empty = apps[i].rho_empty
            out[k] = w + np.log(empty) if empty is not None else w
        return out

    def incidence(self) -> sp.csr_matrix:
        return self.program.incidence()

    def to_lp(self) -> MILP:
        """The LP relaxation (an integrality-free :class:`MILP`) with row (*) appended."""
        A = self.incidence()
        n = len(self.columns)
        row_lb = np.full(A.shape[0], -np.inf)
        row_ub = np.ones(A.shape[0])
        if self.unbounded_cols.any() and self.n_min > 0:
            A = sp.vstack([A, sp.csr_matrix(self.unbounded_cols.astype(float)[None, :])]).tocsr()
            row_lb = np.append(row_lb, float(self.n_min))
            row_ub = np.append(row_ub, np.inf)
        return MILP(
            c=self.weights(),
            A=A,
            row_lb=row_lb,
            row_ub=row_ub,
            col_lb=np.zeros(n),
            col_ub=np.ones(n),
            integrality=np.zeros(n, dtype=bool),
            sense="max",
            offset=self.program.offset,
        )

    def to_cvxpy(self):
        """(problem, x) of the Eisenberg-Gale relaxation as a CVXPY exponential-cone program."""
        import cvxpy as cp  # heavy: imported on use

        apps = self.instance.apps
        n = len(self.columns)
        x = cp.Variable(n, nonneg=True)
        terms, cons = [], [x <= 1]
        if n:
            cons.append(self.incidence() @ x <= 1)
        const = 0.0
        for i in self.program.apps:
            app = apps[i]
            ks = [k for k, (j, _) in enumerate(self.columns) if j == i]
            if app.rho_empty is None:
                if ks:
                    w = np.array([-np.log(app.bids[self.columns[k][1]].rho) for k in ks])
                    terms.append(w @ x[ks])
                continue
            if not ks:
                const += -np.log(app.rho_empty)
                continue
            v = np.array([1.0 / app.bids[self.columns[k][1]].rho for k in ks])
            v0 = 1.0 / app.rho_empty
            terms.append(cp.log((v - v0) @ x[ks] + v0))
        if self.unbounded_cols.any() and self.n_min > 0:
            cons.append(cp.sum(x[np.flatnonzero(self.unbounded_cols)]) >= self.n_min)
        obj = cp.sum(cp.hstack(terms)) + const if terms else cp.Constant(const)
        return cp.Problem(cp.Maximize(obj), cons), x
