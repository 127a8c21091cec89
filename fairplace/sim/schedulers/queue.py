"""Job-ordering schedulers: which active jobs come first in the queue handed to the placement policy.

A scheduler sees a :class:`SchedView` (numpy arrays over all jobs of the workload) and returns the
active jobs in priority order (highest first); the placement policy then decides who runs and where.
``next_change(view)`` is the earliest time at which the order can change *without* an arrival or a
completion (``inf`` when only events change it); the driver uses it to jump over quiet rounds.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from fairplace.core.errors import OptionError
from fairplace.core.limits import MAX_TIME
from fairplace.core.params import THEMIS_F, Interval, Options, Param
from fairplace.core.registry import Entry, Lazy, Registry
from fairplace.formulations.ftf import IdealTime
from fairplace.formulations.gavel import GavelFTFProgram as Program
from fairplace.formulations.pa import ROUNDING_RULES
from fairplace.formulations.valuation import VALUATIONS
from fairplace.formulations.variants import AGENT_T_ID_VARIANTS
from fairplace.solvers.relaxation import solve_gavel

from .estimate_error import ERROR_KINDS
from .protocols import AllocatingScheduler, Scheduler


@dataclass(frozen=True)
class SchedView:
    """What a scheduler may look at, at time ``t`` (arrays have one entry per workload job)."""

    t: float
    active: np.ndarray  # indices of released, unfinished jobs
    arrival: np.ndarray  # release time of each job (s)
    demand: np.ndarray  # GPUs per job
    remaining: np.ndarray  # iterations left
    total: np.ndarray  # iterations in all
    t_iter: np.ndarray  # seconds per iteration on median GPUs, within a machine
    attained: np.ndarray  # GPU-seconds held so far (Tiresias' attained service)
    running: np.ndarray  # bool: holds GPUs now
    app: np.ndarray  # app index of each job
    gpus: int  # cluster size
    round_length: float
    held: np.ndarray | None = None  # seconds each job has held GPUs
    t_isolated: np.ndarray | None = None  # Gavel's isolated-equivalent time of each job's work done
    waiting_since: np.ndarray | None = None  # when each job last stopped holding GPUs (or arrived)


def _fifo_key(view: SchedView, idx: np.ndarray) -> np.ndarray:
    """Stable order by release time, then job index."""
    return idx[np.lexsort((idx, view.arrival[idx]))]


class FIFO:
    """First-in first-out by release (arrival) time."""

    name = "fifo"

    def order(self, view: SchedView) -> np.ndarray:
        return _fifo_key(view, view.active)

    def next_change(self, view: SchedView) -> float:
        return np.inf


class LAS:
    """Tiresias' discretised two-queue LAS: queue 0 holds jobs whose attained service (GPU-seconds)
    is below ``threshold``, queue 1 the rest; queue 0 first, FIFO within a queue.

    ``starve_factor`` (Tiresias' starvation guard, off by default): a waiting job of queue 1 whose
    current wait reaches ``starve_factor`` x its run time so far is promoted to queue 0 until it runs.
    """

    name = "las"

    def __init__(self, threshold: float = 3200.0, starve_factor: float | None = None):
        if not threshold > 0:
            raise OptionError("scheduler_options.threshold", f"must be > 0, got {threshold!r}")
        if starve_factor is not None and not starve_factor > 0:
            raise OptionError(
                "scheduler_options.starve_factor", f"must be > 0, got {starve_factor!r}"
            )
        self.threshold = float(threshold)
        self.starve_factor = None if starve_factor is None else float(starve_factor)

    def _promote_at(self, view: SchedView, idx: np.ndarray) -> np.ndarray:
        """Time at which each waiting job of ``idx`` is promoted (inf: never / not applicable)."""
        if self.starve_factor is None or view.waiting_since is None or view.held is None:
            return np.full(idx.size, np.inf)
        held = view.held[idx]
        at = view.waiting_since[idx] + self.starve_factor * held
        return np.where((held > 0) & ~view.running[idx], at, np.inf)

    def order(self, view: SchedView) -> np.ndarray:
        idx = view.active
        q = (view.attained[idx] >= self.threshold).astype(np.int64)
        q[self._promote_at(view, idx) <= view.t] = 0
        return idx[np.lexsort((idx, view.arrival[idx], q))]

    def next_change(self, view: SchedView) -> float:
        idx = view.active
        promote = self._promote_at(view, idx)
        nxt = float(np.min(promote[promote > view.t], initial=np.inf))
        run = idx[view.running[idx]]
        gap = self.threshold - view.attained[run]
        keep = gap > 0
        if keep.any():
            nxt = min(nxt, view.t + float(np.min(gap[keep] / view.demand[run][keep])))
        return nxt


class SRTF:
    """Shortest remaining (isolated) time first: remaining iterations x t_iter, ties by arrival."""

    name = "srtf"

    def order(self, view: SchedView) -> np.ndarray:
        idx = view.active
        rem = view.remaining[idx] * view.t_iter[idx]
        return idx[np.lexsort((idx, view.arrival[idx], rem))]

    def next_change(self, view: SchedView) -> float:
        return view.t  # remaining times of running jobs move continuously


class DRF:
    """DRF-style instantaneous fair share over apps (one resource: GPUs): water-filling, each next
    queue slot goes to the app with the smallest GPU share so far; FIFO within an app."""

    name = "drf"

    def order(self, view: SchedView) -> np.ndarray:
        idx = _fifo_key(view, view.active)
        per_app: dict[int, list[int]] = {}
        for j in idx.tolist():
            per_app.setdefault(int(view.app[j]), []).append(j)
        heap = [(0, view.arrival[jobs[0]], a, 0) for a, jobs in per_app.items()]
        heapq.heapify(heap)
        out = []
        while heap:
            share, arr, a, k = heapq.heappop(heap)
            j = per_app[a][k]
            out.append(j)
            if k + 1 < len(per_app[a]):
                heapq.heappush(heap, (share + int(view.demand[j]), arr, a, k + 1))
        return np.asarray(out, dtype=np.int64)

    def next_change(self, view: SchedView) -> float:
        return np.inf


class GandivaPacking:
    """Gandiva-style greedy packing (without time-slicing): walk the FIFO queue and move every job that
    still fits in the cluster ahead of those that do not (greedy backfilling for utilisation)."""

    name = "gandiva"

    def order(self, view: SchedView) -> np.ndarray:
        idx = _fifo_key(view, view.active)
        d = view.demand[idx]
        fits = np.zeros(idx.size, dtype=bool)
        free = view.gpus
        for k, dk in enumerate(d.tolist()):  # sequential by nature: capacity left depends on order
            if dk <= free:
                fits[k] = True
                free -= dk
        return np.concatenate([idx[fits], idx[~fits]])

    def next_change(self, view: SchedView) -> float:
        return np.inf


class SRPTOracle:
    """Oracle shortest-remaining-GPU-time first (formerly mislabelled "optimus"): it knows every job's
    remaining work; gain 1 / (remaining x t_iter x N_j), highest first."""

    name = "srpt-oracle"

    def order(self, view: SchedView) -> np.ndarray:
        idx = view.active
        gain = 1.0 / (view.remaining[idx] * view.t_iter[idx] * view.demand[idx])
        return idx[np.lexsort((idx, view.arrival[idx], -gain))]

    def next_change(self, view: SchedView) -> float:
        return view.t


class SLAQ:
    """SLAQ-style loss-reduction greedy on synthetic loss curves
    loss_j(x) = l_inf + (l0 - l_inf) exp(-k_j x), x = fraction of iterations done, k_j ~ U(2, 8)
    (seeded per job); priority = predicted loss drop over the next round per GPU."""

    name = "slaq"

    def __init__(self, seed: int = 0):
        self.seed = int(seed)

    def _k(self, n: int) -> np.ndarray:
        return np.random.default_rng([self.seed, 7]).uniform(2.0, 8.0, size=n)

    def order(self, view: SchedView) -> np.ndarray:
        idx = view.active
        k = self._k(view.total.size)[idx]
        x = 1.0 - view.remaining[idx] / view.total[idx]
        dx = view.round_length / (view.total[idx] * view.t_iter[idx])
        drop = np.exp(-k * x) - np.exp(-k * np.minimum(1.0, x + dx))  # (l0 - l_inf) = 1
        return idx[np.lexsort((idx, view.arrival[idx], -drop / view.demand[idx]))]

    def next_change(self, view: SchedView) -> float:
        return view.t


class GavelFTF:
    """Gavel-style finish-time fairness: each decision solves min max rho over time fractions
    (:class:`fairplace.formulations.gavel.GavelFTFProgram`, one gang configuration per active job using N_j
    GPUs of ``gpus``) exactly, with rho_i = (elapsed_i + remaining_i / rate_i) / T_id,i and T_id under
    the ``gavel`` variant of :class:`~fairplace.formulations.ftf.IdealTime`; the program is separable,
    so it is solved in closed form with the water-filling X (:mod:`fairplace.solvers.waterfill`; ``tol``
    is the bisection's, for a program that is not); then, as Gavel's round mechanism does, jobs are
    ordered by X_i / (share of their life they held GPUs). ``last_shares``: (active job indices,
    their X) of the latest decision (``docs/gavel_shares.py`` records them)."""

    name = "gavel-ftf"

    def __init__(self, tol: float = 1e-4):
        self.tol = float(tol)
        self.last_shares: tuple[np.ndarray, np.ndarray] | None = None

    def order(self, view: SchedView) -> np.ndarray:

        idx = view.active
        n = idx.size
        d = view.demand[idx].astype(float)
        serial = view.t_iter[idx] * d  # GPU-seconds per iteration
        m = int(np.unique(view.app[idx]).size)
        iso = view.t_isolated[idx] if view.t_isolated is not None else np.zeros(n)
        t_id = np.array(
            [
                IdealTime("gavel", n_active=m, t_isolated=float(iso[k])).value(
                    float(view.total[j] * serial[k]),
                    float(view.remaining[j] * serial[k]),
                    int(d[k]),
                    view.gpus,
                )
                for k, j in enumerate(idx)
            ]
        )
        prog = Program(
            throughput=np.diag(1.0 / view.t_iter[idx]),
            usage=d[:, None],
            capacity=np.array([float(view.gpus)]),
            work=view.remaining[idx],
            elapsed=np.maximum(view.t - view.arrival[idx], 0.0),
            t_id=np.maximum(t_id, 1e-9),
        )
        X = np.diag(solve_gavel(prog, tol=self.tol).X)
        self.last_shares = (idx, X)  # the time shares of this decision, for inspection
        life = np.maximum(view.t - view.arrival[idx], 1e-9)
        held = view.held[idx] if view.held is not None else np.zeros(n)
        prio = X / np.maximum(held / life, 1e-3)
        return idx[np.lexsort((idx, view.arrival[idx], -np.round(prio, 9)))]

    def next_change(self, view: SchedView) -> float:
        return view.t


#: the T_id THEMIS' apps bid with (rho = T_sh / T_id): the T_id choice has one name, ``rho_variant``,
#: here as in ``SimulationConfig`` (what the metrics report); only the agent-form variants
THEMIS_RHO_VARIANT = Param(
    "rho_variant",
    "themis",
    Options(AGENT_T_ID_VARIANTS),
    "the T_id THEMIS' apps bid with (rho = T_sh / T_id)",
    flag="--scheduler-option rho_variant",
    path="scheduler_options.rho_variant",
)

#: THEMIS' lease (§6.2: 10 minutes): how long a won GPU stays with its app; a round is a lease
THEMIS_LEASE = Param(
    "lease",
    600.0,
    Interval(0.0, MAX_TIME, closed="right"),
    "THEMIS lease in s: how long a won GPU stays with its app (a round)",
    flag="--scheduler-option lease",
    path="scheduler_options.lease",
)

#: errors of ±X in the AGENTs' rho estimates (§6.3, Fig. 17; ``fairplace.sim.estimate_error``):
#: the ranking and the bids read them, the metrics the truth
THEMIS_RHO_ERROR = Param(
    "rho_error",
    0.0,
    Interval(0.0, 1.0, closed="left"),
    "THEMIS: size X of the AGENTs' errors in their remaining time (0.2: within 0.8x..1.2x)",
    flag="--scheduler-option rho_error",
    path="scheduler_options.rho_error",
)

#: how the AGENTs' estimates err: per app (the paper), per app and auction, or all apps
#: exaggerating their placement preference by X (Fig. 18's lie, told by every app)
THEMIS_RHO_ERROR_KIND = Param(
    "rho_error_kind",
    "random",
    Options(ERROR_KINDS),
    "THEMIS: how the AGENTs' rho estimates err (with rho_error > 0)",
    flag="--scheduler-option rho_error_kind",
    path="scheduler_options.rho_error_kind",
)

#: THEMIS' app scheduler (§4.2.2 step 5): ``restart-aware`` moves as few jobs as it can (a job grows
#: only when that saves more than the move costs), ``even`` re-splits every running job evenly
THEMIS_APP_SPLIT = Param(
    "app_split",
    "restart-aware",
    Options(("restart-aware", "even")),
    "how a THEMIS app splits its GPUs among its jobs",
    flag="--scheduler-option app_split",
    path="scheduler_options.app_split",
)

#: THEMIS' PA rounding (``formulations/pa.py``): ``partial`` keeps c_i |G_i,pf| GPUs of each PF
#: bundle (the paper's G_i = c_i G_i,pf); ``lottery`` the whole bundle with probability c_i
THEMIS_ROUNDING = Param(
    "rounding",
    "partial",
    Options(ROUNDING_RULES),
    "THEMIS' PA rounding of each bidder's c_i share of its PF bundle",
    flag="--scheduler-option rounding",
    path="scheduler_options.rounding",
)

#: what THEMIS' bidders are valued by in the auction (formulations/valuation.py,
#: docs/themis-valuation.md): the bundle for this lease, then the fair share — ``lease`` = one lease
#: plus the time it saves, ``lease-rho`` = rho under that model (both finite when the app holds
#: nothing); ``held`` = Eq. 1 / 2, held until the app ends (rho(empty) = inf)
THEMIS_VALUATION = Param(
    "valuation",
    "lease",
    Options(VALUATIONS),
    "what THEMIS' auction values a bundle by (this lease, then the fair share; held: Eq. 1)",
    flag="--scheduler-option valuation",
    path="scheduler_options.valuation",
)

#: every scheduler: name -> entry (factory, options, doc, capabilities), in the order the CLI help
#: lists them. Capabilities: ``allocates`` (places jobs itself: no placement policy; a user's object
#: says so by its attribute), ``placed_by`` (who places, a result's ``placed_by``; default the
#: placement policy, or the scheduler's name when it allocates), ``round_option`` (the option that is
#: its round and its default in s: simulate() runs its rounds at that option; THEMIS: a round is
#: the lease). Options: the class's keyword parameters less the run's ``seed`` (the context); errors
#: name ``scheduler_options.<option>``. The allocating ones are imported when made (their modules
#: import this one's SchedView).
SCHEDULER_REGISTRY = Registry(
    "scheduler",
    {
        "fifo": Entry(FIFO, doc="first-in first-out by arrival time"),
        "las": Entry(LAS, doc="Tiresias' two-queue least attained service"),
        "srtf": Entry(SRTF, doc="shortest remaining (isolated) time first"),
        "drf": Entry(DRF, doc="DRF-style instantaneous fair share over apps"),
        "gandiva": Entry(GandivaPacking, doc="Gandiva-style greedy packing"),
        "srpt-oracle": Entry(SRPTOracle, doc="oracle shortest remaining GPU-time first"),
        "slaq": Entry(SLAQ, doc="SLAQ-style loss-reduction greedy"),
        "gavel-ftf": Entry(GavelFTF, doc="Gavel's finish-time fairness (min max rho)"),
        "optimus": Entry(
            Lazy("fairplace.sim.optimus:Optimus"),
            doc="Optimus: greedy marginal-throughput scaling (places jobs itself)",
            capabilities={"allocates": True, "placed_by": "optimus"},
        ),
        "themis": Entry(
            Lazy("fairplace.sim.themis:Themis"),
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
#: schedulers that only order the queue (the placement policy places it): name -> class
QUEUE_SCHEDULERS = MappingProxyType(
    {n: e.factory for n, e in SCHEDULER_REGISTRY.items() if not e.capabilities.get("allocates")}
)


def make_scheduler(name: str, *, seed: int = 0, **options):
    """Scheduler by name (:data:`SCHEDULERS`) with its keyword ``options`` (an unknown one, or a
    value outside its spec, raises :class:`OptionError` naming ``scheduler_options.<option>``);
    ``seed`` goes to the schedulers that draw."""
    return SCHEDULER_REGISTRY.make(name, options, seed=seed)
