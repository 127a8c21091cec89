"""Who holds which GPUs between decisions, and what a new decision changes.

A decision maps running jobs to GPU sets. Against the current holding it *preempts* the running jobs
it leaves out, *migrates* those it moves (same job, another set), *starts* the others; a moved job or
one resuming after a preemption pays ``checkpoint + restart`` seconds before it progresses again (a
first start is free). Kept in decision order (the order of the decision's allocation), which the
accounting's sums follow.
"""

from __future__ import annotations

import numpy as np

from fairplace.core.errors import FairplaceError


class InvariantError(FairplaceError, AssertionError):
    """A simulation invariant broke (debug mode)."""


class Running:
    """The running jobs: job -> GPU indices (``alloc``) and their sorted tuple (``key``, the identity
    of a placement), the job indices in decision order (``idx``), GPUs held per job (``k``, 0 when
    waiting), a running mask over all jobs and the busy GPU count."""

    def __init__(self, J: int):
        self.alloc: dict[int, np.ndarray] = {}
        self.key: dict[int, tuple] = {}
        self.idx = np.zeros(0, np.int64)
        self.k = np.zeros(J)
        self.mask = np.zeros(J, bool)
        self.busy = 0

    def __len__(self) -> int:
        return len(self.key)

    def apply(self, new: dict[int, np.ndarray], new_key: dict[int, tuple]):
        """Adopt a decision; returns (preempted jobs, changed jobs: started or moved, which of the
        changed ones were running before (bool array))."""
        key = self.key
        gone = [j for j in key if j not in new_key]
        changed = [j for j, g in new_key.items() if key.get(j) != g]
        was = np.fromiter((j in key for j in changed), bool, len(changed))
        self.alloc, self.key = new, new_key
        self.idx = np.fromiter(new_key, np.int64, len(new_key))
        if gone:
            g = np.asarray(gone, np.int64)
            self.k[g] = 0.0
            self.mask[g] = False
        if changed:
            c = np.asarray(changed, np.int64)
            self.k[c] = [new[j].size for j in changed]
            self.mask[c] = True
        self.busy = int(self.k[self.idx].sum()) if self.idx.size else 0
        return gone, changed, was

    def finish(self, fin: np.ndarray) -> list[int]:
        """Remove the jobs of ``idx`` flagged in ``fin`` (a mask over ``idx``); returns them."""
        out = self.idx[fin]
        for j in out.tolist():
            del self.alloc[j], self.key[j]
        self.busy -= int(self.k[out].sum())
        self.k[out] = 0.0
        self.mask[out] = False
        self.idx = self.idx[~fin]
        return out.tolist()


def check_decision(new, active, demand, ids, G: int, elastic: bool, debug: bool) -> None:
    """Decision sanity (always cheap checks; full invariants in debug mode): each job gets its demand
    (an elastic scheduler: between 1 and its demand); debug: disjoint GPUs inside the cluster, only
    active jobs placed."""
    js = np.fromiter(new, np.int64, len(new))
    size = np.fromiter((g.size for g in new.values()), np.int64, len(new))
    bad = (size != demand[js]) & ~(elastic & (size >= 1) & (size <= demand[js]))
    if bad.any():
        j, n = int(js[bad][0]), int(size[bad][0])
        raise InvariantError(f"job {ids[j]} got {n} GPUs, demand {demand[j]}")
    if not debug:
        return
    allg = np.concatenate(list(new.values())) if new else np.zeros(0, np.int64)
    if np.unique(allg).size != allg.size:
        raise InvariantError("a GPU is held by two jobs")
    if allg.size > G or (allg.size and (allg.min() < 0 or allg.max() >= G)):
        raise InvariantError("busy GPUs exceed the cluster")
    act = set(active.tolist())
    for j in new:
        if j not in act:
            raise InvariantError(f"job {ids[j]} placed but not active")
