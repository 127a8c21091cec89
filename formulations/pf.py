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
The pruning (:func:`dominance_keep`) is done once per app and shared by the leave-one-out programs
(:meth:`PFProgram.without`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from fairplace.core.domain import AuctionInstance

from .program import MILP

#: pairs (dominator candidate, bid) checked per vectorised step of :func:`dominance_keep`; ``stop``
#: is asked between steps
PAIRS_PER_STEP = 1 << 20


@dataclass(frozen=True)
class PFValue:
    """The lexicographic value of an allocation: (#apps with finite rho among the unbounded ones, log-sum)."""

    n_unbounded_served: int
    log_sum: float  # sum over apps with finite rho of -log rho


def _bitsets(inc: sp.csr_matrix) -> np.ndarray:
    """Rows of a 0/1 (bids x GPUs) matrix as bitsets over the GPUs it uses: (bids, words) uint64."""
    used = np.unique(inc.indices)
    local = np.searchsorted(used, inc.indices)
    words = max(1, -(-used.size // 64))
    bits = np.zeros((inc.shape[0], words), dtype=np.uint64)
    rows = np.repeat(np.arange(inc.shape[0]), np.diff(inc.indptr))
    np.bitwise_or.at(
        bits, (rows, local // 64), np.left_shift(np.uint64(1), (local % 64).astype(np.uint64))
    )
    return bits


def dominance_keep(
    incidence: sp.csr_matrix,
    rhos: np.ndarray,
    rho_empty: float | None,
    stop: Callable[[], bool] | None = None,
) -> np.ndarray:
    """Indices (ascending) of the bids worth keeping: rho < rho_empty, and no bid k with bundle
    B_k ⊆ B_b and rho_k <= rho_b that comes first in the order (|B|, rho, index).

    The same set as checking every bid against every kept one (O(bids²) subset tests), computed
    per bundle size: identical bundles keep their first bid; a bid of size s is tested, as bitset
    pairs in numpy, only against the kept bids of smaller size with rho_k <= rho_b (a sorted
    prefix; a dominator that is itself dominated has a kept dominator of its own). ``stop``, asked
    between steps of :data:`PAIRS_PER_STEP` pairs, cuts the pruning short: the bids not tested yet
    are kept (pruning never changes the optimum, only the program's size)."""
    rhos = np.asarray(rhos, dtype=float)
    n = rhos.size
    cand = np.arange(n) if rho_empty is None else np.flatnonzero(rhos < rho_empty)
    if cand.size == 0:
        return cand
    inc = sp.csr_matrix(incidence, copy=True)
    inc.sum_duplicates()
    inc = inc[cand]
    bits, sizes = _bitsets(inc), np.diff(inc.indptr)
    rho = rhos[cand]
    # identical bundles: the first in (rho, index) order represents them
    order = np.lexsort((cand, rho, *bits.T[::-1]))
    same = np.zeros(order.size, dtype=bool)
    same[1:] = (bits[order[1:]] == bits[order[:-1]]).all(axis=1)
    rep = np.sort(order[~same])
    kept: list[np.ndarray] = []
    pool_rho = np.zeros(0)
    pool_bits = np.zeros((0, bits.shape[1]), dtype=np.uint64)
    rep_sizes = sizes[rep]
    for s in np.unique(rep_sizes):
        block = rep[rep_sizes == s]
        if stop is not None and stop():
            kept.append(rep[rep_sizes >= s])
            break
        counts = np.searchsorted(pool_rho, rho[block], side="right")
        dominated = np.zeros(block.size, dtype=bool)
        ends = np.cumsum(counts)
        lo = 0
        while lo < block.size:
            hi = int(np.searchsorted(ends, (ends[lo - 1] if lo else 0) + PAIRS_PER_STEP, "right"))
            hi = max(hi, lo + 1)
            c = counts[lo:hi]
            r = np.repeat(np.arange(lo, hi), c)
            k = np.arange(r.size) - np.repeat(np.cumsum(c) - c, c)
            inside = ~(pool_bits[k] & ~bits[block[r]]).any(axis=1)
            dominated[np.unique(r[inside])] = True
            lo = hi
            if lo < block.size and stop is not None and stop():
                kept.append(block[:lo][~dominated[:lo]])
                kept.append(rep[rep_sizes > s])
                kept.append(block[lo:])
                return np.sort(cand[np.concatenate(kept)])
        survivors = block[~dominated]
        kept.append(survivors)
        pool_rho = np.concatenate([pool_rho, rho[survivors]])
        pool_bits = np.concatenate([pool_bits, bits[survivors]])
        by_rho = np.argsort(pool_rho, kind="stable")
        pool_rho, pool_bits = pool_rho[by_rho], pool_bits[by_rho]
    return np.sort(cand[np.concatenate(kept)]) if kept else np.zeros(0, dtype=np.int64)


def _drop_dominated(
    bundles: Sequence[frozenset], rhos: np.ndarray, rho_empty: float | None
) -> list[int]:
    """:func:`dominance_keep` on bundles given as sets of GPU ids."""
    ids = {g: k for k, g in enumerate(sorted({g for b in bundles for g in b}, key=str))}
    return dominance_keep(_incidence(bundles, ids), rhos, rho_empty).tolist()


def _incidence(bundles: Sequence, ids: dict[str, int]) -> sp.csr_matrix:
    """0/1 (bundles x len(ids)) matrix of bundles given as GPU ids."""
    lengths = np.fromiter((len(b) for b in bundles), dtype=np.int64, count=len(bundles))
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.fromiter((ids[g] for b in bundles for g in b), dtype=np.int64, count=indptr[-1])
    data = np.ones(indices.size)
    m = sp.csr_matrix((data, indices, indptr), shape=(len(bundles), max(len(ids), 1)))
    m.sum_duplicates()
    m.data[:] = 1.0
    return m


@dataclass(frozen=True)
class _AppBids:
    """One app's kept bids: bid indices, their GPU incidence (kept x G) and w = -log rho; and the
    app's terms of :attr:`PFProgram.big_m` and :attr:`PFProgram.log_sum_range` (over all its bids)."""

    bids: np.ndarray
    gpus: sp.csr_matrix
    w: np.ndarray
    spread: float
    log_range: float


def app_bids(
    instance: AuctionInstance, i: int, prune: bool = True, stop: Callable[[], bool] | None = None
) -> _AppBids:
    """The bids of app ``i`` the program keeps (:func:`dominance_keep` when ``prune``)."""
    app, cl = instance.apps[i], instance.cluster
    inc = _incidence([b.gpus for b in app.bids], cl.index)
    rhos = np.fromiter((b.rho for b in app.bids), dtype=float, count=len(app.bids))
    keep = dominance_keep(inc, rhos, app.rho_empty, stop) if prune else np.arange(len(app.bids))
    w = -np.log(rhos)
    empty = None if app.rho_empty is None else -np.log(app.rho_empty)
    ws = w if empty is None else np.append(w, empty)
    hi, lo = (float(ws.max()), float(ws.min())) if ws.size else (0.0, 0.0)
    spread = hi - lo + abs(hi) + abs(lo) if ws.size else 0.0
    log_range = max(float(np.abs(w).max()) if w.size else 0.0, abs(empty or 0.0))
    return _AppBids(keep.astype(np.int64), inc[keep], w[keep], spread, log_range)


@dataclass(frozen=True)
class PFProgram:
    """PF over explicit bids for the apps of ``instance`` not in ``exclude`` (app indices).

    ``stop`` (asked while pruning, e.g. "is the time budget spent?") cuts the pruning short; the
    program is then larger, with the same optimum. ``parts``: the per-app kept bids of a program
    this one is derived from (:meth:`without`), so they are pruned once."""

    instance: AuctionInstance
    exclude: frozenset[int] = frozenset()
    prune: bool = True
    stop: Callable[[], bool] | None = field(default=None, compare=False, repr=False)
    parts: dict[int, _AppBids] | None = field(default=None, compare=False, repr=False)

    def without(self, i: int) -> PFProgram:
        """The leave-one-out program PF_{-i}: this program without app ``i``, sharing its pruning."""
        return PFProgram(
            self.instance, self.exclude | {i}, self.prune, self.stop, parts=self.app_parts
        )

    @cached_property
    def apps(self) -> tuple[int, ...]:
        return tuple(i for i in range(len(self.instance.apps)) if i not in self.exclude)

    @cached_property
    def app_parts(self) -> dict[int, _AppBids]:
        """{app index: its kept bids} for the apps of this program (and those of ``parts``)."""
        out = dict(self.parts or {})
        for i in self.apps:
            if i not in out:
                out[i] = app_bids(self.instance, i, self.prune, self.stop)
        return out

    @cached_property
    def columns(self) -> tuple[tuple[int, int], ...]:
        """(app index, bid index) per binary column."""
        parts = self.app_parts
        return tuple((i, int(b)) for i in self.apps for b in parts[i].bids)

    @cached_property
    def big_m(self) -> float:
        """Weight of one more unbounded app served: exceeds the range of any log-sum
        (1 + sum over apps of max w - min w + |max w| + |min w|, w = -log rho over the app's bids
        and rho_empty)."""
        return 1.0 + sum(self.app_parts[i].spread for i in self.apps)

    @cached_property
    def log_sum_range(self) -> float:
        """S >= |log-sum| of any allocation: sum over apps of the largest |-log rho| they can get."""
        return float(sum(self.app_parts[i].log_range for i in self.apps))

    def gains(self) -> np.ndarray:
        """Objective coefficient per column (see module docstring)."""
        parts, out = self.app_parts, []
        for i in self.apps:
            empty = self.instance.apps[i].rho_empty
            shift = np.log(empty) if empty is not None else self.big_m
            out.append(parts[i].w + shift)
        return np.concatenate(out) if out else np.zeros(0)

    @cached_property
    def offset(self) -> float:
        return float(
            sum(-np.log(r) for i in self.apps if (r := self.instance.apps[i].rho_empty) is not None)
        )

    def incidence(self) -> sp.csr_matrix:
        """Rows: one per app ('at most one bid'), then one per GPU ('used at most once')."""
        parts = self.app_parts
        n_apps, G = len(self.apps), len(self.instance.cluster)
        sizes = [parts[i].bids.size for i in self.apps]
        app_rows = sp.csr_matrix(
            (np.ones(sum(sizes)), (np.repeat(np.arange(n_apps), sizes), np.arange(sum(sizes)))),
            shape=(n_apps, sum(sizes)),
        )
        blocks = [parts[i].gpus for i in self.apps]
        gpu_rows = sp.vstack(blocks, format="csr").T if blocks else sp.csr_matrix((G, 0))
        return sp.vstack([app_rows, sp.csr_matrix(gpu_rows)], format="csr")

    def to_milp(self) -> MILP:
        return self.milp

    @cached_property
    def milp(self) -> MILP:
        """The program in matrix form (built once; ``to_milp`` returns it)."""
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
