"""What compact programs on the same offer share (:class:`OfferCache`), owned by the caller.

THEMIS re-auctions the same free GPUs often (W2 x1 seed 0: 6,128 distinct offers in 28,594
auctions of several bidders); a program's groups, counts and the enumeration's per-app places
depend only on the cluster, the offer and the classes in play, so a caller that runs many
auctions (the simulator's arbiter, a benchmark) keeps one cache for its run and hands it to every
program (``CompactProgram(cache=...)``). The cache holds one cluster at a time (by identity) and at
most ``size`` offers, the oldest dropped first: bounded memory over a long simulation.
"""

from __future__ import annotations

from fairplace.core.domain import Cluster

#: offers an :class:`OfferCache` keeps by default
OFFER_CACHE_SIZE = 1024


class OfferCache:
    """Per (offer, classes) of one cluster, a dict of what the programs on it derive from the offer
    alone (``CompactProgram.offer_memo``); its arrays are read-only, shared by every program."""

    __slots__ = ("_cluster", "_offers", "size")

    def __init__(self, size: int = OFFER_CACHE_SIZE):
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"size must be a positive integer, got {size!r}")
        self.size = size
        self._cluster: Cluster | None = None
        self._offers: dict[tuple, dict] = {}

    def __len__(self) -> int:
        return len(self._offers)

    def memo(self, cluster: Cluster, offer: tuple[int, ...], classes: tuple) -> dict:
        """The dict of ``offer`` (GPU indices of ``cluster``) under ``classes``: the same dict for
        the same key while it is among the last :attr:`size` keys; a new cluster empties the cache."""
        if cluster is not self._cluster:
            self._cluster, self._offers = cluster, {}
        key = (offer, classes)
        out = self._offers.get(key)
        if out is None:
            out = self._offers[key] = {}
            if len(self._offers) > self.size:
                del self._offers[next(iter(self._offers))]
        return out
