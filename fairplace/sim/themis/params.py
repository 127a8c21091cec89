"""THEMIS' scheduler options as specs (:class:`~fairplace.core.params.Param`): what the scheduler
registry declares for ``themis`` and what :class:`~fairplace.sim.themis.scheduler.Themis` and its
:class:`~fairplace.sim.themis.arbiter.Arbiter` check their options by. Their own module, importing
neither, so that the registry and THEMIS both import them and neither imports the other back. The filter fraction f is ``fairplace.core.shared_params.THEMIS_F``."""

from __future__ import annotations

from fairplace.core.limits import MAX_TIME
from fairplace.core.params import Boolean, InstanceOf, Interval, Options, scheduler_option
from fairplace.formulations.pa import ROUNDING_RULES
from fairplace.formulations.valuation import VALUATIONS
from fairplace.formulations.variants import AGENT_T_ID_VARIANTS

from .estimate_error import ERROR_KINDS

__all__ = [
    "LEFTOVER_RULES",
    "PRICING",
    "RENEWAL",
    "THEMIS_APP_SPLIT",
    "THEMIS_LEASE",
    "THEMIS_LEASE_TICK",
    "THEMIS_LEFTOVER",
    "THEMIS_LIAR",
    "THEMIS_PAYMENTS",
    "THEMIS_PRICING",
    "THEMIS_RENEWAL",
    "THEMIS_RHO_ERROR",
    "THEMIS_RHO_ERROR_KIND",
    "THEMIS_RHO_VARIANT",
    "THEMIS_ROUNDING",
    "THEMIS_VALUATION",
]

#: the T_id THEMIS' apps bid with (rho = T_sh / T_id): the T_id choice has one name, ``rho_variant``,
#: here as in ``SimulationConfig`` (what the metrics report); only the agent-form variants
THEMIS_RHO_VARIANT = scheduler_option(
    "rho_variant",
    "themis",
    Options(AGENT_T_ID_VARIANTS),
    "the T_id THEMIS' apps bid with (rho = T_sh / T_id)",
)

#: THEMIS' lease (§6.2: 10 minutes): how long a won GPU stays with its app; a round is a lease
THEMIS_LEASE = scheduler_option(
    "lease",
    600.0,
    Interval(0.0, MAX_TIME, closed="right"),
    "THEMIS lease in s: how long a won GPU stays with its app (a round)",
)

#: errors of ±X in the AGENTs' rho estimates (§6.3, Fig. 17; ``fairplace.sim.themis.estimate_error``):
#: the ranking and the bids read them, the metrics the truth
THEMIS_RHO_ERROR = scheduler_option(
    "rho_error",
    0.0,
    Interval(0.0, 1.0, closed="left"),
    "THEMIS: size X of the AGENTs' errors in their remaining time (0.2: within 0.8x..1.2x)",
)

#: how the AGENTs' estimates err: per app (the paper), per app and auction, or all apps
#: exaggerating their placement preference by X (Fig. 18's lie, told by every app)
THEMIS_RHO_ERROR_KIND = scheduler_option(
    "rho_error_kind",
    "random",
    Options(ERROR_KINDS),
    "THEMIS: how the AGENTs' rho estimates err (with rho_error > 0)",
)

#: THEMIS' app scheduler (§4.2.2 step 5): ``restart-aware`` moves as few jobs as it can (a job grows
#: only when that saves more than the move costs), ``even`` re-splits every running job evenly
THEMIS_APP_SPLIT = scheduler_option(
    "app_split",
    "restart-aware",
    Options(("restart-aware", "even")),
    "how a THEMIS app splits its GPUs among its jobs",
)

#: THEMIS' PA rounding (``formulations/pa.py``): ``partial`` keeps c_i |G_i,pf| GPUs of each PF
#: bundle (the paper's G_i = c_i G_i,pf); ``lottery`` the whole bundle with probability c_i
THEMIS_ROUNDING = scheduler_option(
    "rounding",
    "partial",
    Options(ROUNDING_RULES),
    "THEMIS' PA rounding of each bidder's c_i share of its PF bundle",
)

#: what THEMIS' bidders are valued by in the auction (formulations/valuation.py,
#: docs/themis-valuation.md): the bundle for this lease, then the fair share — ``lease`` = one lease
#: plus the time it saves, ``lease-rho`` = rho under that model (both finite when the app holds
#: nothing); ``held`` = Eq. 1 / 2, held until the app ends (rho(empty) = inf)
THEMIS_VALUATION = scheduler_option(
    "valuation",
    "lease",
    Options(VALUATIONS),
    "what THEMIS' auction values a bundle by (this lease, then the fair share; held: Eq. 1)",
)

#: How the ARBITER's AGENTs price bundles: ``locality`` (THEMIS as published, S = L(spread)) or
#: ``pm-score`` (S = L(spread) x max binned PM-score: a variability-aware THEMIS).
PRICING = ("locality", "pm-score")
THEMIS_PRICING = scheduler_option(
    "pricing",
    "locality",
    Options(PRICING),
    "how THEMIS' AGENTs price a bundle: by locality (the paper) or also its binned PM-scores",
)

#: Which GPUs an auction winner gets among those the ARBITER's bundle leaves open:
#: ``held-machines`` (its bundle moved machine for machine onto machines it held, same rack and
#: scores: ``renewal.back_to_held``), ``within-machine`` (swaps within one machine only, the control).
RENEWAL = ("held-machines", "within-machine")
THEMIS_RENEWAL = scheduler_option(
    "renewal",
    "held-machines",
    Options(RENEWAL),
    "which open GPUs a THEMIS winner gets: its bundle moved onto machines it held, or within one",
)

#: who gets the GPUs the auction leaves: the non-participants in seeded random order, or
#: work-conserving
LEFTOVER_RULES = ("random", "work-conserving")
THEMIS_LEFTOVER = scheduler_option(
    "leftover",
    "random",
    Options(LEFTOVER_RULES),
    "how THEMIS gives the GPUs its auction leaves to the non-participants",
)

#: leases ending within one tick are re-auctioned together (None: 60 s, or the lease if shorter;
#: 0: not rounded); at most the lease (``Arbiter`` checks that)
THEMIS_LEASE_TICK = scheduler_option(
    "lease_tick",
    None,
    Interval(0.0, MAX_TIME),
    "THEMIS: s to which lease ends are rounded up (None: min(60, lease); 0: not rounded)",
    nullable=True,
)

#: False: every bidder keeps its whole PF bundle (c_i = 1): a control, not THEMIS' PA
THEMIS_PAYMENTS = scheduler_option(
    "payments",
    True,
    Boolean(),
    "THEMIS' PA payments (False: every bidder keeps its PF bundle, a control)",
)

#: §6.3's liar: the only app whose estimates err (None: every app, Fig. 17)
THEMIS_LIAR = scheduler_option(
    "liar",
    None,
    InstanceOf((str,), "an app id"),
    "THEMIS: the only app whose rho estimates err (None: every app)",
    nullable=True,
)
