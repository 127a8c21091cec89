"""Who holds which GPUs between decisions, and what a new decision changes.

A decision maps running jobs to GPU sets. Against the current holding it *preempts* the running jobs
it leaves out, *migrates* those it moves (same job, another set), *starts* the others; a moved job or
one resuming after a preemption pays ``checkpoint + restart`` seconds before it progresses again (a
first start is free). Kept in decision order (the order of the decision's allocation), which the
accounting's sums follow.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from itertools import compress
from operator import ne
from types import MappingProxyType

import numpy as np

from fairplace.core.errors import FairplaceError
from fairplace.solvers.placement import round_kernel


class InvariantError(FairplaceError, AssertionError):
    """A simulation invariant broke (debug mode)."""


class Running:
    """The running jobs: job -> GPU indices (``alloc``: int64 arrays from an allocating
    scheduler, the sorted tuples themselves from a placement policy) and their sorted tuple
    (``key``, the identity of a placement), the job indices in decision order (``idx``), GPUs held per job (``k``, 0 when
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

    def apply(self, new: dict[int, np.ndarray], new_key: dict[int, tuple], placed=None):
        """Adopt a decision; returns (preempted jobs, changed jobs: started or moved, which of the
        changed ones were running before (bool array), the changed ones as a mask over the
        decision's jobs or None). ``placed``: the decision's (job indices, GPUs per job, GPUs) in
        its order (:attr:`.contract.Contract.placed`), read instead of the dicts."""
        if placed is None:
            return self._apply_dicts(new, new_key)
        js, sizes, _ = placed
        key, mask, old = self.key, self.mask, self.idx
        # in decision order: new jobs and those whose GPUs differ (identical tuples compare at once)
        chg = round_kernel.differs(new_key, key)  # (one compiled pass where built)
        if chg is None:
            chg = np.fromiter(map(ne, new_key.values(), map(key.get, new_key)), bool, js.size)
        c = js[chg]
        was = mask[c]  # (the mask still holds the previous decision's jobs)
        mask[old] = False
        mask[js] = True
        gone = old[~mask[old]]
        self.alloc, self.key, self.idx = new, new_key, js
        self.k[gone] = 0.0
        self.k[c] = sizes[chg]
        self.busy = int(np.add.reduce(sizes)) if sizes.size else 0
        return gone, c, was, chg

    def _apply_dicts(self, new, new_key):
        """:meth:`apply` from the dicts alone (an allocating scheduler's decision)."""
        key = self.key  # (C-level passes over the dicts: no Python step per running job)
        gone = list(key.keys() - new_key.keys()) if len(key) else []
        # in decision order: new jobs and those whose GPUs differ (identical tuples compare at once)
        changed = list(compress(new_key, map(ne, new_key.values(), map(key.get, new_key))))
        was = np.fromiter(map(key.__contains__, changed), bool, len(changed))
        self.alloc, self.key = new, new_key
        self.idx = np.fromiter(new_key, np.int64, len(new_key))
        g = np.asarray(gone, np.int64)
        c = np.asarray(changed, np.int64)
        if gone:
            self.k[g] = 0.0
            self.mask[g] = False
        if changed:
            self.k[c] = np.fromiter(map(len, map(new.__getitem__, changed)), float, c.size)
            self.mask[c] = True
        self.busy = int(self.k[self.idx].sum()) if self.idx.size else 0
        return g, c, was, None

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


class HeldGPUs(Mapping):
    """What an allocating scheduler is shown of the holdings: job -> list of its GPU indices, read
    only, each list made when it is read (a fresh one per read, so a scheduler may change it). A
    THEMIS decision reads the lists of the few apps that changed, not of every running job."""

    def __init__(self, alloc: dict[int, np.ndarray]):
        self._alloc = alloc

    @property
    def arrays(self) -> Mapping[int, np.ndarray]:
        """The driver's arrays themselves (read them, never write: identity tells a scheduler
        that a job still holds the array it was given)."""
        return MappingProxyType(self._alloc)

    def __getitem__(self, j: int) -> list[int]:
        return self._alloc[j].tolist()

    def __iter__(self) -> Iterator[int]:
        return iter(self._alloc)

    def __len__(self) -> int:
        return len(self._alloc)

    def __contains__(self, j: object) -> bool:
        return j in self._alloc

    def get(self, j, default=None):
        a = self._alloc.get(j)
        return default if a is None else a.tolist()

    def copy(self) -> dict[int, list[int]]:
        return {j: g.tolist() for j, g in self._alloc.items()}


def check_holdings(run: Running, G: int) -> None:
    """Debug: the holdings agree with themselves (O(jobs) per decision): the running jobs are the same
    in ``alloc``, ``key``, ``idx`` and ``mask``, each holds ``k`` GPUs (its key sorted), no GPU is
    held twice, ``busy`` GPUs <= G. (The decision itself is checked at every decision:
    :mod:`.contract`.)"""
    jobs = set(run.key)
    if set(run.alloc) != jobs or set(run.idx.tolist()) != jobs or len(run.idx) != len(jobs):
        raise InvariantError("the running jobs differ between alloc, key and idx")
    if np.count_nonzero(run.mask) != len(jobs) or not run.mask[run.idx].all():
        raise InvariantError("the running mask differs from the running jobs")
    for j, g in run.alloc.items():
        g = np.asarray(g, np.int64)
        if run.k[j] != g.size or run.key[j] != tuple(sorted(g.tolist())):
            raise InvariantError(f"job {j}: holdings out of step ({run.k[j]} GPUs, {run.key[j]})")
    allg = (
        np.concatenate([np.asarray(g, np.int64) for g in run.alloc.values()])
        if run.alloc
        else np.zeros(0, np.int64)
    )
    if np.unique(allg).size != allg.size:
        raise InvariantError("a GPU is held by two jobs")
    if (
        run.busy != allg.size
        or allg.size > G
        or (allg.size and (allg.min() < 0 or allg.max() >= G))
    ):
        raise InvariantError(f"busy GPUs {run.busy} differ from those held or exceed the cluster")
