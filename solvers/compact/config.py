"""The compact auction's settings (:class:`CompactAuctionOptions`), one
:class:`~fairplace.core.params.Param` per field: the registry's ``rounding`` / ``seed`` /
``payments`` are the auction solvers' specs (``solvers/options.py``); the others are the
compact solver's own (Python only: ``fairplace.solve`` does not take them)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from fairplace.core.params import Boolean, InstanceOf, Interval, Options, Param

from ..options import PAYMENTS, ROUNDING, SEED
from .enumeration import ENUM_LIMIT

#: ``route``: ``auto`` (the DP where it suits), ``dp``, ``compact``
ROUTES = ("auto", "dp", "compact")

#: the formulation of full-MILP fallbacks (None: by offer size; same optima)
REDUCED = Param(
    "reduced",
    None,
    Boolean(),
    "full-MILP fallbacks on the tightened formulation (None: by offer size)",
    nullable=True,
)
#: spread-0 cells over machine kinds and patterns (``formulations/compact_agg.py``; same optima)
AGGREGATE = Param("aggregate", True, Boolean(), "spread-0 cells over machine kinds and patterns")
#: auctions with at most this many joint choices are enumerated (0: the LP / MILP route)
ENUM = Param(
    "enum_limit",
    ENUM_LIMIT,
    Interval(0, None, integer=True),
    "most joint choices of an auction solved by enumeration (0: LP / MILP route, no DP)",
)
#: False with the ``lottery`` rounding: each PF_{-i} solved only as far as app i's draw needs
EXACT_PAYMENTS = Param(
    "exact_payments", True, Boolean(), "every c_i exact (False: as far as the lottery reads it)"
)
#: which exact route settles the PF and every PF_{-i}
ROUTE = Param("route", "auto", Options(ROUTES), "auto: the DP where it suits; dp; compact")
#: ``Solution.solver``
NAME = Param("name", "compact", InstanceOf((str,), "a solver name"), "the solution's solver name")

#: the specs of :class:`CompactAuctionOptions`' fields, in their order
CONFIG_PARAMS = (ROUNDING, SEED, PAYMENTS, REDUCED, AGGREGATE, ENUM, EXACT_PAYMENTS, ROUTE, NAME)


@dataclass(frozen=True)
class CompactAuctionOptions:
    """How :func:`~fairplace.solvers.compact.auction_on_offer` solves: PA's ``rounding`` and its
    ``seed``; ``payments`` (False: c_i = 1, no leave-one-out solve); ``reduced`` (full-MILP
    fallbacks: None by offer size, True / False the tightened / plain formulation, same optima);
    ``aggregate`` (spread-0 cells over machine kinds and patterns, same optima); ``enum_limit``
    (auctions of at most that many joint choices are enumerated; 0: the LP / MILP route, no DP);
    ``exact_payments`` (False with ``lottery``: a PF_{-i} only as far as app i's draw needs, its
    c_i NaN where left open; every other rule reads every c_i exact); ``route`` (``auto``: the DP
    where ``dp_suits`` and ``enum_limit`` > 0; ``dp``: the DP on any homogeneous offer;
    ``compact``: enumeration or LP / MILP); ``name`` (``Solution.solver``). Each field is checked
    by its spec (:data:`CONFIG_PARAMS`; an ``OptionError`` naming it)."""

    rounding: str = ROUNDING.default
    seed: int = SEED.default
    payments: bool = PAYMENTS.default
    reduced: bool | None = REDUCED.default
    aggregate: bool = AGGREGATE.default
    enum_limit: int = ENUM.default
    exact_payments: bool = EXACT_PAYMENTS.default
    route: str = ROUTE.default
    name: str = NAME.default

    def __post_init__(self):
        for spec in CONFIG_PARAMS:
            value = getattr(self, spec.name)
            if value is not spec.default:  # a default is valid (its spec's check returns it)
                object.__setattr__(self, spec.name, spec.check(value))

    def with_(self, **changes) -> CompactAuctionOptions:
        """A copy with ``changes`` (checked as at construction)."""
        return replace(self, **changes)
