"""THEMIS in the simulator (Mahajan et al., NSDI'20), one module per part:

* :mod:`.scheduler`: :class:`Themis`, the scheduler the driver runs (leases, rounds, GPU renewal);
* :mod:`.arbiter`: the ARBITER, one auction round (ranking, filter, PA auction, leftover, fill);
* :mod:`.agents`: THEMIS' AGENTs (:class:`Agents`), every wanting app described per decision;
* :mod:`.apps`: the app side, the app scheduler that splits an app's GPUs among its jobs
  (:class:`AppScheduler`);
* :mod:`.machine_pool`: GPUs taken machine by machine by best fit (:func:`best_fit`), also Optimus';
* :mod:`.renewal`: which GPUs an auction winner gets among those its bundle leaves open;
* :mod:`.estimate_error`: errors in the AGENTs' rho estimates (§6.3, Fig. 17);
* :mod:`.params`: its scheduler options as specs.

The scheduler registry (:mod:`fairplace.sim.schedulers.registry`) names it ``themis``."""

from .agents import Agents
from .apps import AppScheduler, StepAverage, even_split
from .arbiter import Arbiter
from .estimate_error import ERROR_KINDS, RhoError
from .machine_pool import best_fit
from .outcome import AppState, RoundOutcome
from .params import LEFTOVER_RULES, PRICING, RENEWAL
from .renewal import back_to_held
from .scheduler import OVERHEAD_KEYS, Themis, binned_cluster

__all__ = [
    "ERROR_KINDS",
    "LEFTOVER_RULES",
    "OVERHEAD_KEYS",
    "PRICING",
    "RENEWAL",
    "Agents",
    "AppScheduler",
    "AppState",
    "Arbiter",
    "RhoError",
    "RoundOutcome",
    "StepAverage",
    "Themis",
    "back_to_held",
    "best_fit",
    "binned_cluster",
    "even_split",
]
