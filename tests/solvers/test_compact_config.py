"""The compact auction's one calling convention: ``CompactAuctionOptions`` (each field checked by
its spec), ``auction_on_offer`` on GPU indices and bidder positions, named only by
``CompactAuctionResult.solution``; the per-offer cache the caller owns (``OfferCache``)."""

from dataclasses import fields

import numpy as np
import pytest

from fairplace.core.errors import OptionError
from fairplace.formulations.agents import free_gpus
from fairplace.formulations.compact import CompactProgram, compact_apps
from fairplace.formulations.compact_cache import OfferCache
from fairplace.instances.generators import random_agent_auction
from fairplace.solvers.compact import (
    CompactAuctionOptions,
    auction_on_offer,
    solve_compact_auction,
)
from fairplace.solvers.compact.config import CONFIG_PARAMS


def test_each_field_is_a_spec_and_an_invalid_value_names_it():
    assert [f.name for f in fields(CompactAuctionOptions)] == [p.name for p in CONFIG_PARAMS]
    default = CompactAuctionOptions()
    for spec in CONFIG_PARAMS:
        assert getattr(default, spec.name) == spec.default
        # a field at its default is not re-checked: its spec's check must give it back as is
        assert spec.check(spec.default) is spec.default
        for value in spec.invalid_values():
            with pytest.raises(OptionError) as exc:
                CompactAuctionOptions(**{spec.name: value})
            assert exc.value.path == spec.name, (spec.name, value)
    with pytest.raises(OptionError, match="route"):
        default.with_(route="x")


def test_the_index_result_names_bidders_and_gpus_only_at_the_solution():
    inst = random_agent_auction(apps=4, machines=3, gpus_per_machine=4, seed=5)
    offer, cl = free_gpus(inst), inst.cluster
    config = CompactAuctionOptions(rounding="partial", enum_limit=0)  # the LP / MILP route
    res = auction_on_offer(cl, offer, compact_apps(inst, offer), config=config)
    sol = solve_compact_auction(inst, config=config)
    ids = [a.id for a in inst.agents]
    assert all(g.dtype == np.int64 for g in res.allocation.values())
    assert set(np.concatenate([*res.pf_allocation.values(), []]).tolist()) <= set(offer.tolist())
    named = res.solution(cl, ids, "compact")
    assert named.allocation == sol.allocation and named.pf_allocation == sol.pf_allocation
    assert named.payments == sol.payments and named.leftover == sol.leftover
    assert named.extra == sol.extra and named.objective == sol.objective


def test_programs_share_an_offer_through_the_callers_cache_only():
    inst = random_agent_auction(apps=3, machines=3, gpus_per_machine=4, seed=1)
    offer, cl = tuple(free_gpus(inst).tolist()), inst.cluster
    apps = compact_apps(inst)
    cache = OfferCache(size=2)
    a = CompactProgram(cl, offer, apps, cache=cache)
    b = CompactProgram(cl, offer, apps, cache=cache)
    assert a == b and a.groups is b.groups  # computed once, shared
    alone = CompactProgram(cl, offer, apps)
    assert alone.groups is not a.groups and alone.groups == a.groups
    for k in range(3):  # bounded: the oldest offer goes first
        assert CompactProgram(cl, offer[k:], apps, cache=cache).groups is not None
    assert len(cache) == 2
    other = random_agent_auction(apps=2, machines=2, gpus_per_machine=2, seed=2).cluster
    cache.memo(other, (0,), (None,))  # another cluster: the cache starts again
    assert len(cache) == 1
    with pytest.raises(ValueError, match="size"):
        OfferCache(0)
