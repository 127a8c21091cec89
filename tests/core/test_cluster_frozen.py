"""``Cluster`` is a frozen, hashable description: no mutable memo rides on it (callers own their
caches: the placement rounds' ``PlacementCache``, the compact programs' ``OfferCache``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fairplace.core.domain import GPU, Cluster
from fairplace.instances.generators import grid_cluster


def test_cluster_has_no_memo():
    cl = grid_cluster(2, 4)
    assert not hasattr(Cluster, "memo") and not hasattr(cl, "memo")
    assert not hasattr(cl, "_memo")


def test_cluster_is_immutable_and_hashable_by_its_gpus():
    gpus = tuple(GPU(f"g{k}", f"m{k // 2}", pm={"A": 1.0 + k}) for k in range(4))
    cl, same = Cluster(gpus), Cluster(tuple(gpus))
    assert cl == same and hash(cl) == hash(same) and len({cl, same}) == 1
    assert cl != Cluster(gpus[:3])
    with pytest.raises(dataclasses.FrozenInstanceError):
        cl.gpus = gpus[:2]  # type: ignore[misc]
    # the derived views are read-only and leave equality and the hash as they were
    h = hash(cl)
    for view in (cl.machine_slots, cl.pm_vector("A"), cl.pm_levels("A")):
        assert not view.flags.writeable
        with pytest.raises(ValueError):
            view[0] = 0
    assert np.array_equal(cl.pm_vector("A"), [1.0, 2.0, 3.0, 4.0])
    assert hash(cl) == h and cl == same
