"""The scheduler names: one :class:`~fairplace.core.registry.Registry` over the queue baselines
(:mod:`.queue`, :mod:`.gavel`), Optimus (:mod:`.optimus`) and THEMIS (:mod:`fairplace.sim.themis`).
It is built here, above both packages, so that it imports every scheduler directly and no scheduler
imports it back."""

from __future__ import annotations

from fairplace.core.registry import Entry, Registry
from fairplace.core.shared_params import THEMIS_F

from ..protocols import AllocatingScheduler, Scheduler
from ..themis import Themis
from ..themis.params import (
    THEMIS_APP_SPLIT,
    THEMIS_LEASE,
    THEMIS_LEASE_TICK,
    THEMIS_LEFTOVER,
    THEMIS_LIAR,
    THEMIS_PAYMENTS,
    THEMIS_PRICING,
    THEMIS_RENEWAL,
    THEMIS_RHO_ERROR,
    THEMIS_RHO_ERROR_KIND,
    THEMIS_RHO_VARIANT,
    THEMIS_ROUNDING,
    THEMIS_VALUATION,
)
from .gavel import GAVEL_TOL, GavelFTF
from .optimus import Optimus
from .queue import (
    DRF,
    FIFO,
    LAS,
    LAS_STARVE_FACTOR,
    LAS_THRESHOLD,
    SLAQ,
    SRTF,
    GandivaPacking,
    SRPTOracle,
)

__all__ = ["QUEUE_SCHEDULERS", "SCHEDULERS", "SCHEDULER_REGISTRY", "make_scheduler"]


#: every scheduler: name -> entry (factory, options, doc, capabilities), in the order the CLI help
#: lists them. Capabilities: ``allocates`` (places jobs itself: no placement policy; a user's object
#: says so by its attribute), ``placed_by`` (who places, a result's ``placed_by``; default the
#: placement policy, or the scheduler's name when it allocates), ``round_option`` (the option that is
#: its round and its default in s: simulate() runs its rounds at that option; THEMIS: a round is
#: the lease). Options: the class's keyword parameters less the run's ``seed`` (the context), each
#: with its spec (``params``: checked before the class is made); errors name
#: ``scheduler_options.<option>``.
SCHEDULER_REGISTRY = Registry(
    "scheduler",
    {
        "fifo": Entry(FIFO, doc="first-in first-out by arrival time"),
        "las": Entry(
            LAS,
            doc="Tiresias' two-queue least attained service",
            params=(LAS_THRESHOLD, LAS_STARVE_FACTOR),
        ),
        "srtf": Entry(SRTF, doc="shortest remaining (isolated) time first"),
        "drf": Entry(DRF, doc="DRF-style instantaneous fair share over apps"),
        "gandiva": Entry(GandivaPacking, doc="Gandiva-style greedy packing"),
        "srpt-oracle": Entry(SRPTOracle, doc="oracle shortest remaining GPU-time first"),
        "slaq": Entry(SLAQ, doc="SLAQ-style loss-reduction greedy"),
        "gavel-ftf": Entry(
            GavelFTF, doc="Gavel's finish-time fairness (min max rho)", params=(GAVEL_TOL,)
        ),
        "optimus": Entry(
            Optimus,
            doc="Optimus: greedy marginal-throughput scaling (places jobs itself)",
            capabilities={"allocates": True, "placed_by": "optimus"},
        ),
        "themis": Entry(
            Themis,
            doc="THEMIS: partial-allocation auctions round by round (its arbiter places)",
            params=(
                THEMIS_F,
                THEMIS_RHO_VARIANT,
                THEMIS_LEASE,
                THEMIS_ROUNDING,
                THEMIS_APP_SPLIT,
                THEMIS_RHO_ERROR,
                THEMIS_RHO_ERROR_KIND,
                THEMIS_VALUATION,
                THEMIS_LEFTOVER,
                THEMIS_PRICING,
                THEMIS_LEASE_TICK,
                THEMIS_PAYMENTS,
                THEMIS_LIAR,
                THEMIS_RENEWAL,
            ),
            capabilities={
                "allocates": True,
                "placed_by": "arbiter",
                "round_option": ("lease", THEMIS_LEASE.default),
            },
        ),
    },
    options_path="scheduler_options",
    context=("seed",),
    protocols=(Scheduler, AllocatingScheduler),
    shape="name, order() and next_change() (fairplace.sim.protocols.Scheduler)",
    fold_case=True,
    object_capabilities=("allocates",),
)
#: every scheduler name: the one list simulate(), the CLI help and the sweep schema read
SCHEDULERS = SCHEDULER_REGISTRY.names()
#: the schedulers that only order the queue (the placement policy places it): the entries of
#: :data:`SCHEDULER_REGISTRY` that do not allocate
QUEUE_SCHEDULERS = Registry(
    "queue scheduler",
    {n: e for n, e in SCHEDULER_REGISTRY.items() if not e.capabilities.get("allocates")},
    where="scheduler",
    options_path="scheduler_options",
    context=("seed",),
    protocols=(Scheduler,),
    shape="name, order() and next_change() (fairplace.sim.protocols.Scheduler)",
    fold_case=True,
)


def make_scheduler(name: str, *, seed: int = 0, **options):
    """Scheduler by name (:data:`SCHEDULERS`) with its keyword ``options`` (an unknown one, or a
    value outside its spec, raises :class:`OptionError` naming ``scheduler_options.<option>``);
    ``seed`` goes to the schedulers that draw."""
    return SCHEDULER_REGISTRY.make(name, options, seed=seed)
