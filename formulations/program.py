"""A solver-neutral mixed-integer linear program in matrix form.

Formulations compile to :class:`MILP`; solver back ends (``fairplace.solvers``) read it. Nothing here
imports a solver.

    maximise (or minimise)  c @ x + offset
    subject to              row_lb <= A @ x <= row_ub,  col_lb <= x <= col_ub,  x_k integer where integrality[k]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp


class Rows:
    """Constraint rows collected one at a time: ``add([(col, coef), ...], lo, hi)`` appends
    lo <= sum coef * x_col <= hi; :meth:`matrix` gives A (CSR) and :meth:`bounds` the row bounds."""

    def __init__(self):
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.lb: list[float] = []
        self.ub: list[float] = []

    def add(self, entries, lo: float, hi: float) -> None:
        r = len(self.lb)
        for col, v in entries:
            self.rows.append(r)
            self.cols.append(col)
            self.vals.append(v)
        self.lb.append(lo)
        self.ub.append(hi)

    def matrix(self, n_cols: int) -> sp.csr_matrix:
        return sp.csr_matrix((self.vals, (self.rows, self.cols)), shape=(len(self.lb), n_cols))

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return np.array(self.lb, dtype=float), np.array(self.ub, dtype=float)

    def integer_program(
        self, c: np.ndarray, col_lb: np.ndarray, col_ub: np.ndarray, sense: str, offset: float = 0.0
    ) -> MILP:
        """The all-integer :class:`MILP` of these rows: ``sense`` c x + offset over
        col_lb <= x <= col_ub."""
        row_lb, row_ub = self.bounds()
        n_cols = len(c)
        return MILP(
            c=c, A=self.matrix(n_cols), row_lb=row_lb, row_ub=row_ub, col_lb=col_lb, col_ub=col_ub,
            integrality=np.ones(n_cols, dtype=bool), sense=sense, offset=offset,
        )  # fmt: skip


@dataclass(frozen=True)
class MILP:
    c: np.ndarray
    A: sp.csr_matrix
    row_lb: np.ndarray
    row_ub: np.ndarray
    col_lb: np.ndarray
    col_ub: np.ndarray
    integrality: np.ndarray
    sense: str = "max"
    offset: float = 0.0
    col_names: tuple[str, ...] = field(default=(), repr=False)
    row_names: tuple[str, ...] = field(default=(), repr=False)

    def __post_init__(self):
        if self.sense not in ("max", "min"):
            raise ValueError(f"sense must be 'max' or 'min', got {self.sense!r}")
        n = self.c.shape[0]
        if self.A.shape[1] != n or self.col_lb.shape[0] != n or self.col_ub.shape[0] != n:
            raise ValueError("inconsistent MILP dimensions")

    @property
    def n_cols(self) -> int:
        return int(self.c.shape[0])

    @property
    def n_rows(self) -> int:
        return int(self.A.shape[0])

    def value(self, x: np.ndarray) -> float:
        """Objective value c @ x + offset (einsum: a threaded BLAS dot is slow on a busy host)."""
        return float(np.einsum("i,i->", self.c, np.asarray(x, dtype=float)) + self.offset)

    def is_feasible(self, x: np.ndarray, tol: float = 1e-6) -> bool:
        """Whether x satisfies every row, bound and integrality requirement."""
        x = np.asarray(x)
        ax = self.A @ x
        if not ((ax >= self.row_lb - tol).all() and (ax <= self.row_ub + tol).all()):
            return False
        if not ((x >= self.col_lb - tol).all() and (x <= self.col_ub + tol).all()):
            return False
        xi = x[self.integrality]
        return bool((np.abs(xi - np.round(xi)) <= tol).all())

    def relaxed(self) -> MILP:
        """The LP relaxation (all integrality dropped)."""
        return MILP(
            self.c,
            self.A,
            self.row_lb,
            self.row_ub,
            self.col_lb,
            self.col_ub,
            np.zeros_like(self.integrality),
            self.sense,
            self.offset,
            self.col_names,
            self.row_names,
        )


@dataclass(frozen=True)
class RawResult:
    """What a back end returns for a :class:`MILP`: status, point, objective and proven bound."""

    status: str  # optimal | time_limit | infeasible | error
    x: np.ndarray | None
    objective: float | None
    bound: float | None
    seconds: float
    message: str = ""

    @property
    def has_solution(self) -> bool:
        return self.x is not None


def lexicographic_bound(
    bound: float, weight: float, count: int, spread: float
) -> tuple[float | None, int]:
    """Read a proven ``bound`` on  max  weight * n + v  (n an integer first level, e.g. apps or jobs
    served; |v| <= ``spread``) in the units of v, for an incumbent with n = ``count``.

    Every solution with n' items is worth at least weight * n' - spread, so n' <= (bound + spread) /
    weight for the optimum: that is the second value returned. Only when it equals ``count`` (the
    incumbent's first level is proven optimal) is bound - weight * count a bound on v; otherwise the
    bound cannot be stated in v's units and the first value is None. A minimising program
    (min v - weight * n) is read by negating: ``-lexicographic_bound(-bound, ...)[0]``."""
    n_max = int(np.floor((bound + spread) / weight + 1e-9))
    if n_max <= count:
        return bound - weight * count, count
    return None, n_max
