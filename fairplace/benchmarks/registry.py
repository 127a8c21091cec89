"""Every bench case of ``fairplace bench``: the modules' ``CASES`` merged into one Registry, built
once at import (the modules are imported here, so the bench command imports this module when it
runs, never at CLI start-up)."""

from __future__ import annotations

from . import (
    auction,
    auction_dp,
    auction_explicit,
    batch,
    merged,
    placement,
    simulate,
    themis_bounds,
    time_budget,
)

#: name -> entry of every bench case, module by module in alphabetical order
BENCH_REGISTRY = merged(
    auction.CASES,
    auction_dp.CASES,
    auction_explicit.CASES,
    batch.CASES,
    placement.CASES,
    simulate.CASES,
    themis_bounds.CASES,
    time_budget.CASES,
)
