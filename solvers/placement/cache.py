"""What placement rounds on the same cluster share (:class:`PlacementCache`), owned by the caller.

A PAL / PM-First round sorts each class's scores, derives the cluster's machine layout and (the
compiled kernel) the tuples it builds allocations from; none of these depend on the queue, so a
caller that runs many rounds on one cluster (the simulator's run, a benchmark) keeps one cache and
hands it to every round (``ClusterState(cache=...)``). A round without one builds a throw-away
cache. The cache holds one cluster at a time (by identity, as
:class:`~fairplace.formulations.compact_cache.OfferCache` does): a new cluster empties it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from fairplace.core.domain import Cluster

from .pool_index import contiguous
from .round_kernel import same_array


class PlacementCache:
    """Per cluster: its layout, its GPU tuples and each class's score order (for the scores they
    were sorted from); mutable, kept by the caller across rounds."""

    __slots__ = ("_cluster", "_layout", "_tuples", "_seen", "_sorted", "_frozen", "_base")

    def __init__(self) -> None:
        self._cluster: Cluster | None = None
        self._clear()

    def _clear(self) -> None:
        self._layout: tuple[int, bool] | None = None
        self._tuples: tuple[tuple[int, ...], tuple[tuple[int], ...]] | None = None
        self._seen: dict[object, np.ndarray] | None = None
        self._sorted: dict = {}
        #: (the scores mapping, its arrays) when they were read only and owned their data: the
        #: same objects, still read only, hold the same scores (no O(G) comparison)
        self._frozen: tuple | None = None
        #: (a copy of the one table every class's scores are columns of, their places in it)
        #: when they were: one comparison of its bytes checks them all
        self._base: tuple[np.ndarray, tuple] | None = None

    def _on(self, cluster: Cluster) -> None:
        if cluster is not self._cluster:
            self._cluster = cluster
            self._clear()

    def layout(self, cluster: Cluster) -> tuple[int, bool]:
        """(P = max_m |{g : m(g) = m}|, the most GPUs on one machine; whether GPU indices are
        grouped by machine, :func:`.pool_index.contiguous`)."""
        self._on(cluster)
        if self._layout is None:
            mi, M = cluster.machine_index, len(cluster.machines)
            P = int(np.bincount(mi, minlength=M).max()) if len(cluster) else 0
            self._layout = (P, contiguous(mi))
        return self._layout

    def gpu_tuples(self, cluster: Cluster) -> tuple[tuple[int, ...], tuple[tuple[int], ...]]:
        """(0, .., G-1) and ((0,), .., (G-1,)): the compiled kernel builds every allocation tuple
        from them instead of new int objects."""
        self._on(cluster)
        if self._tuples is None:
            ints = tuple(range(len(cluster)))
            self._tuples = (ints, tuple((g,) for g in ints))
        return self._tuples

    def sorted_for(self, cluster: Cluster, scores: Mapping[str, np.ndarray]) -> dict:
        """:class:`.free_pool.FreePool`'s per-class dict (score orders, cells) for ``scores``:
        the same dict while every class's scores equal those it was built from (an O(G)
        comparison per class, of bytes where it can be: :func:`.round_kernel.same_array`; one of
        the whole table where they are its columns, :func:`_shared_table`; none when the same
        read-only arrays come again), else a new one."""
        self._on(cluster)
        fr = self._frozen
        if (
            fr is not None
            and fr[0] is scores
            and len(scores) == len(fr[1])
            and all(map(_same_frozen, scores.values(), fr[1]))
        ):
            return self._sorted
        shared = _shared_table(scores)
        if shared is not None:  # columns of one table: its bytes compared once
            kept = self._base
            if kept is None or kept[1] != shared[1] or not same_array(kept[0], shared[0]):
                self._base = (np.array(shared[0], copy=True), shared[1])
                self._seen, self._sorted = None, {}
        else:
            seen, self._base = self._seen, None
            if (
                seen is None
                or seen.keys() != scores.keys()
                or not all(same_array(seen[c], v) for c, v in scores.items())
            ):
                self._seen = {c: np.array(v, copy=True) for c, v in scores.items()}
                self._sorted = {}
        vals = list(scores.values())
        ro = all(isinstance(v, np.ndarray) and _read_only(v) for v in vals)
        self._frozen = (scores, vals) if ro else None
        return self._sorted


def _shared_table(scores: Mapping) -> tuple[np.ndarray, tuple] | None:
    """(t, the classes' places in it: (class, dtype, shape, strides, byte offset)) when every class's
    scores are a 1-D view of one C-contiguous array ``t`` (``.base``, the columns of a table) lying
    inside it and together at least a quarter of it, else None: then ``t``'s bytes unchanged and
    the same places are the same scores."""
    vals = list(scores.values())
    t = vals[0].base if vals and isinstance(vals[0], np.ndarray) else None
    if not isinstance(t, np.ndarray) or not t.flags.c_contiguous or t.dtype.hasobject:
        return None
    if not all(isinstance(v, np.ndarray) and v.base is t and v.ndim == 1 for v in vals):
        return None
    if 4 * sum(v.nbytes for v in vals) < t.nbytes:
        return None
    start, places = t.__array_interface__["data"][0], []
    for c, v in scores.items():
        off, (n,), (st,) = v.__array_interface__["data"][0] - start, v.shape, v.strides
        lo, hi = off + min(0, (n - 1) * st), off + max(0, (n - 1) * st) + v.itemsize
        if n and (lo < 0 or hi > t.nbytes):
            return None
        places.append((c, v.dtype.str, v.shape, v.strides, off))
    return t, tuple(places)


def _read_only(v: np.ndarray) -> bool:
    """Not writeable and owning its data (no other array can write it)."""
    return not v.flags.writeable and v.base is None


def _same_frozen(v, kept: np.ndarray) -> bool:
    return v is kept and not kept.flags.writeable
