"""Gavel-style finish-time fairness: min max rho over time fractions (what later papers call "Themis").

Jobs i = 1..n, configurations k = 1..K (a bundle, a GPU type x count, ...), resources r = 1..R:

    rate_i(X)  = sum_k throughput[i, k] * X[i, k]            (work units per second)
    rho_i(X)   = (elapsed_i + work_i / rate_i(X)) / t_id_i     (finite-time fairness with the allocation
                                                               held until completion; THEMIS Eq. 1)
    minimise   t
    s.t.       rho_i(X) <= t                     for every job i
               sum_k X[i, k] <= 1                for every job i        (time fractions)
               sum_{i,k} X[i, k] usage[k, r] <= capacity[r]    for every resource r
               X >= 0

For fixed t, ``rho_i <= t  <=>  rate_i >= work_i / (t * t_id_i - elapsed_i)`` (with t * t_id_i > elapsed_i),
a linear constraint: :meth:`GavelFTFProgram.feasibility_lp` is the LP whose optimum lambda* >= 1 iff t is
achievable, which the solver bisects on. Jointly in (X, t) it is the hyperbolic constraint
``rate_i * (t * t_id_i - elapsed_i) >= work_i``, i.e. the second-order cone
``|| (2 sqrt(work_i), rate_i - s_i) ||_2 <= rate_i + s_i`` with ``s_i = t t_id_i - elapsed_i``
(:meth:`GavelFTFProgram.to_cvxpy`). Jobs with ``work_i = 0`` are finished: rho_i = elapsed_i / t_id_i is a
lower bound on t and they need no rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from fairplace.core.errors import DataError

from .program import MILP


def _arr(name: str, v, ndim: int) -> np.ndarray:
    a = np.asarray(v, dtype=float)
    if a.ndim != ndim:
        raise DataError(name, f"expected a {ndim}-d array, got shape {a.shape}")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise DataError(name, "must be finite and >= 0")
    return a


@dataclass(frozen=True, eq=False)
class GavelFTFProgram:
    """The min-max-rho program on numpy inputs (shapes: n jobs, K configs, R resources)."""

    throughput: np.ndarray  # (n, K)
    usage: np.ndarray  # (K, R)
    capacity: np.ndarray  # (R,)
    work: np.ndarray  # (n,)
    elapsed: np.ndarray  # (n,)
    t_id: np.ndarray  # (n,)

    def __post_init__(self):
        for name, nd in (
            ("throughput", 2),
            ("usage", 2),
            ("capacity", 1),
            ("work", 1),
            ("elapsed", 1),
            ("t_id", 1),
        ):
            object.__setattr__(self, name, _arr(name, getattr(self, name), nd))
        n, K = self.throughput.shape
        if self.usage.shape[0] != K or self.usage.shape[1] != self.capacity.shape[0]:
            raise DataError("usage", f"expected shape ({K}, {self.capacity.shape[0]})")
        for name in ("work", "elapsed", "t_id"):
            if getattr(self, name).shape != (n,):
                raise DataError(name, f"expected shape ({n},)")
        if np.any(self.t_id <= 0):
            raise DataError("t_id", "must be > 0")
        need = self.work > 0
        if np.any(need & (self.throughput.max(axis=1, initial=0.0) <= 0)):
            k = int(np.flatnonzero(need & (self.throughput.max(axis=1, initial=0.0) <= 0))[0])
            raise DataError(f"throughput[{k}]", "a job with work left has no configuration")

    @property
    def n(self) -> int:
        return int(self.throughput.shape[0])

    @property
    def K(self) -> int:
        return int(self.throughput.shape[1])

    def rho(self, X: np.ndarray) -> np.ndarray:
        """rho_i(X) = (elapsed_i + work_i / rate_i) / t_id_i (inf when work is left and rate is 0)."""
        rate = np.sum(self.throughput * X, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            rem = np.where(self.work > 0, self.work / rate, 0.0)
        return (self.elapsed + rem) / self.t_id

    def lower_bound(self) -> float:
        """max_i elapsed_i / t_id_i: no allocation can do better."""
        return float(np.max(self.elapsed / self.t_id, initial=0.0))

    @property
    def support(self) -> np.ndarray:
        """Flat (row-major) indices of the (i, k) with throughput > 0: the only useful X entries."""
        return np.flatnonzero(self.throughput.ravel() > 0)

    def scatter(self, x: np.ndarray) -> np.ndarray:
        """X (n, K) from values on :attr:`support`."""
        X = np.zeros(self.throughput.size)
        X[self.support] = x
        return X.reshape(self.throughput.shape)

    def feasibility_lp(self, t: float) -> MILP:
        """max lambda s.t. rate_i >= lambda * need_i(t), X feasible; need_i = work_i/(t t_id_i - e_i).

        Requires ``t > lower_bound()``. Columns: X on :attr:`support`, then lambda. ``t`` is achievable
        iff the optimum lambda* >= 1 (lambda is capped at 2: only the comparison with 1 matters).
        """
        n, K = self.throughput.shape
        sup = self.support
        job, cfg = np.divmod(sup, K)
        m = sup.size
        slack = t * self.t_id - self.elapsed
        need = np.where(self.work > 0, self.work / np.maximum(slack, 1e-300), 0.0)
        cols = np.arange(m)
        per_job = sp.csr_matrix((np.ones(m), (job, cols)), shape=(n, m))
        per_res = sp.csr_matrix(self.usage[cfg].T)  # (R, m)
        rate = sp.csr_matrix((self.throughput.ravel()[sup], (job, cols)), shape=(n, m))
        R = per_res.shape[0]
        A = sp.vstack(
            [
                sp.hstack([per_job, sp.csr_matrix((n, 1))]),
                sp.hstack([per_res, sp.csr_matrix((R, 1))]),
                sp.hstack([rate, sp.csr_matrix(-need[:, None])]),
            ]
        ).tocsr()
        c = np.zeros(m + 1)
        c[-1] = 1.0
        return MILP(
            c=c,
            A=A,
            row_lb=np.concatenate([np.full(n + R, -np.inf), np.zeros(n)]),
            row_ub=np.concatenate([np.ones(n), self.capacity, np.full(n, np.inf)]),
            col_lb=np.zeros(m + 1),
            col_ub=np.append(np.full(m, np.inf), 2.0),
            integrality=np.zeros(m + 1, dtype=bool),
            sense="max",
        )

    def to_cvxpy(self):
        """(problem, x, t): minimise t under the SOC form of rate_i (t t_id_i - e_i) >= work_i;
        ``x`` holds X on :attr:`support` (use :meth:`scatter`)."""
        import cvxpy as cp  # heavy: imported on use

        n, K = self.throughput.shape
        sup = self.support
        job, cfg = np.divmod(sup, K)
        m = sup.size
        cols = np.arange(m)
        x = cp.Variable(m, nonneg=True)
        t = cp.Variable()
        per_job = sp.csr_matrix((np.ones(m), (job, cols)), shape=(n, m))
        rate = sp.csr_matrix((self.throughput.ravel()[sup], (job, cols)), shape=(n, m)) @ x
        cons = [per_job @ x <= 1, t >= self.lower_bound()]
        if self.usage.shape[1]:
            cons.append(sp.csr_matrix(self.usage[cfg].T) @ x <= self.capacity)
        for i in np.flatnonzero(self.work > 0):
            s = t * self.t_id[i] - self.elapsed[i]
            w = 2.0 * np.sqrt(self.work[i])
            cons.append(cp.SOC(rate[i] + s, cp.hstack([w, rate[i] - s])))
        return cp.Problem(cp.Minimize(t), cons), x, t
