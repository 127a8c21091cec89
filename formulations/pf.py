"""Proportional-fair (PF) auction over explicit bid tables — THEMIS Pseudocode 1, first line.

Binary x_ib for app i taking bid b.  With w_ib = -log rho_ib (a constant per bid, so the program is an
exact linear MILP):

    maximise   sum_i [ sum_b (w_ib + log rho_empty_i) x_ib  - log rho_empty_i ]      (apps with finite rho_empty)
             + sum_i   sum_b (w_ib + M) x_ib                                             (apps with rho_empty = null)
    s.t.       sum_b x_ib <= 1                      for every app i          (at most one bundle)
               sum_{(i,b): g in B_ib} x_ib <= 1     for every GPU g           (no GPU used twice)

The ``M`` term implements the max-Nash-welfare convention for unbounded ``rho_empty``: first maximise
the number of apps with finite rho, then the log-sum (M exceeds any possible log-sum difference).
Bids that are no better than receiving nothing (rho >= rho_empty) and bids dominated by a smaller bundle
with a better rho are dropped: they can never be part of a unique optimum and only slow solvers down.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from fairplace.core.domain import AuctionInstance

from .program import MILP


@dataclass(frozen=True)
class PFValue:
    """The lexicographic value of an allocation: (#apps with finite rho among the unbounded ones, log-sum)."""

    n_unbounded_served: int
    log_sum: float  # sum over apps with finite rho of -log rho


def _drop_dominated(
    bundles: list[frozenset], rhos: np.ndarray, rho_empty: float | None
) -> list[int]:
    """Indices of bids worth keeping (better than nothing, not dominated by a subset with rho <=)."""
    order = sorted(range(len(bundles)), key=lambda b: (len(bundles[b]), rhos[b], b))
    kept: list[int] = []
    for b in order:
        if rho_empty is not None and rhos[b] >= rho_empty:
            continue
        if any(bundles[k] <= bundles[b] and rhos[k] <= rhos[b] for k in kept):
            continue
        kept.append(b)
    return sorted(kept)


@dataclass(frozen=True)
class PFProgram:
    """PF over explicit bids for the apps of ``instance`` not in ``exclude`` (app indices)."""

    instance: AuctionInstance
    exclude: frozenset[int] = frozenset()
    prune: bool = True

    @cached_property
    def apps(self) -> tuple[int, ...]:
        return tuple(i for i in range(len(self.instance.apps)) if i not in self.exclude)

    @cached_property
    def columns(self) -> tuple[tuple[int, int], ...]:
        """(app index, bid index) per binary column."""
        cols = []
        for i in self.apps:
            app = self.instance.apps[i]
            bundles = [frozenset(b.gpus) for b in app.bids]
            rhos = np.array([b.rho for b in app.bids], dtype=float)
            keep = (
                _drop_dominated(bundles, rhos, app.rho_empty)
                if self.prune
                else range(len(app.bids))
            )
            cols.extend((i, b) for b in keep)
        return tuple(cols)

    @cached_property
    def big_m(self) -> float:
        """Weight of one more unbounded app served: exceeds the range of any log-sum."""
        spread = 0.0
        for i in self.apps:
            app = self.instance.apps[i]
            w = [-np.log(b.rho) for b in app.bids]
            if app.rho_empty is not None:
                w.append(-np.log(app.rho_empty))
            if w:
                spread += max(w) - min(w) + abs(max(w)) + abs(min(w))
        return 1.0 + spread

    @cached_property
    def log_sum_range(self) -> float:
        """S >= |log-sum| of any allocation: sum over apps of the largest |-log rho| they can get."""
        total = 0.0
        for i in self.apps:
            app = self.instance.apps[i]
            w = [abs(np.log(b.rho)) for b in app.bids]
            w.append(abs(np.log(app.rho_empty)) if app.rho_empty is not None else 0.0)
            total += max(w)
        return float(total)

    def gains(self) -> np.ndarray:
        """Objective coefficient per column (see module docstring)."""
        out = np.empty(len(self.columns))
        for k, (i, b) in enumerate(self.columns):
            app = self.instance.apps[i]
            w = -np.log(app.bids[b].rho)
            out[k] = w + np.log(app.rho_empty) if app.rho_empty is not None else w + self.big_m
        return out

    @cached_property
    def offset(self) -> float:
        return float(
            sum(
                -np.log(self.instance.apps[i].rho_empty)
                for i in self.apps
                if self.instance.apps[i].rho_empty is not None
            )
        )

    def incidence(self) -> sp.csr_matrix:
        """Rows: one per app ('at most one bid'), then one per GPU ('used at most once')."""
        cl = self.instance.cluster
        app_pos = {i: r for r, i in enumerate(self.apps)}
        n_apps = len(self.apps)
        rows, cols = [], []
        for k, (i, b) in enumerate(self.columns):
            rows.append(app_pos[i])
            cols.append(k)
            for gid in self.instance.apps[i].bids[b].gpus:
                rows.append(n_apps + cl.index[gid])
                cols.append(k)
        shape = (n_apps + len(cl), len(self.columns))
        return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=shape)

    def to_milp(self) -> MILP:
        n = len(self.columns)
        A = self.incidence()
        names = tuple(f"x[{self.instance.apps[i].id},{b}]" for i, b in self.columns)
        return MILP(
            c=self.gains(),
            A=A,
            row_lb=np.full(A.shape[0], -np.inf),
            row_ub=np.ones(A.shape[0]),
            col_lb=np.zeros(n),
            col_ub=np.ones(n),
            integrality=np.ones(n, dtype=bool),
            sense="max",
            offset=self.offset,
            col_names=names,
        )

    def tie_break_costs(self) -> np.ndarray:
        """Secondary objective (minimised among PF optima): fewest GPUs used, then earliest app/bid."""
        n = len(self.columns)
        size = np.array(
            [len(self.instance.apps[i].bids[b].gpus) for i, b in self.columns], dtype=float
        )
        return size + np.arange(n) / (n + 1.0)

    # --- decoding ---------------------------------------------------------------------------------
    def decode(self, x: np.ndarray) -> dict[int, int]:
        """Chosen bid per app index (apps without a bundle are absent)."""
        return {i: b for (i, b), v in zip(self.columns, x, strict=True) if v > 0.5}

    def value(self, choice: dict[int, int]) -> PFValue:
        """Lexicographic PF value of a choice {app index: bid index} over this program's apps."""
        return pf_value(self.instance, choice, self.apps)

    # --- algebraic models for users who want to add a constraint ------------------------------------
    def to_pyomo(self):
        """The same program as a named Pyomo ConcreteModel (x[app, bid], one_bid[app], gpu_once[gpu])."""
        import pyomo.environ as pyo  # heavy: imported on use

        inst, cl = self.instance, self.instance.cluster
        m = pyo.ConcreteModel(name="pf_auction")
        keys = [(inst.apps[i].id, b) for i, b in self.columns]
        gain = dict(zip(keys, self.gains(), strict=True))
        m.COLS = pyo.Set(initialize=keys, dimen=2, ordered=True)
        m.x = pyo.Var(m.COLS, domain=pyo.Binary)
        m.obj = pyo.Objective(
            expr=sum(gain[k] * m.x[k] for k in keys) + self.offset, sense=pyo.maximize
        )
        by_app: dict[str, list] = {}
        by_gpu: dict[str, list] = {}
        for (i, b), key in zip(self.columns, keys, strict=True):
            by_app.setdefault(inst.apps[i].id, []).append(key)
            for g in inst.apps[i].bids[b].gpus:
                by_gpu.setdefault(g, []).append(key)
        m.APPS = pyo.Set(initialize=list(by_app), ordered=True)
        m.GPUS = pyo.Set(initialize=[g.id for g in cl.gpus if g.id in by_gpu], ordered=True)
        m.one_bid = pyo.Constraint(m.APPS, rule=lambda m, a: sum(m.x[k] for k in by_app[a]) <= 1)
        m.gpu_once = pyo.Constraint(m.GPUS, rule=lambda m, g: sum(m.x[k] for k in by_gpu[g]) <= 1)
        return m

    def from_pyomo(self, model) -> np.ndarray:
        keys = [(self.instance.apps[i].id, b) for i, b in self.columns]
        return np.array([model.x[k].value or 0.0 for k in keys], dtype=float)

    def to_cvxpy(self):
        """(problem, x) as a CVXPY mixed-boolean LP."""
        import cvxpy as cp  # heavy: imported on use

        x = cp.Variable(len(self.columns), boolean=True)
        A = self.incidence()
        cons = [A @ x <= 1] if len(self.columns) else []
        prob = cp.Problem(cp.Maximize(self.gains() @ x + self.offset), cons)
        return prob, x


def pf_value(instance: AuctionInstance, choice: dict[int, int], apps) -> PFValue:
    """(#unbounded apps served, sum of -log rho over apps with finite rho) for a choice of bids."""
    served, log_sum = 0, 0.0
    for i in apps:
        app = instance.apps[i]
        if i in choice:
            log_sum += -float(np.log(app.bids[choice[i]].rho))
            served += app.rho_empty is None
        elif app.rho_empty is not None:
            log_sum += -float(np.log(app.rho_empty))
    return PFValue(served, log_sum)
