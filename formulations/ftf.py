"""Finish-time fairness rho = T_sh / T_id (THEMIS §3.2, Eq. 1, Eq. 2, Figure 7) as pure functions.

Single job (Eq. 1)::

    T_sh(G)   = (t_now - t_start) + iter_left * t_iter_serial * S(G) / min(|G|, d_max)
    T_id      = W / min(R_C / N_avg, d_max)      (variant ``themis``: time with a 1/N share, §3.2)
    T_id      = W / min(R_C, d_max) * N_avg      (variant ``literal``: Eq. 1 / Eq. 2 taken literally)

The headline ``themis`` T_id is the paper's stated definition (the app alone on 1/N of the cluster);
with per-phase ``(work, demand)`` given it is ``sum_p W_p / min(R_C / N_avg, d_p)``. The literal form
is up to N times longer for apps with d_max < R_C (rho < 1 everywhere), so it is only a variant.

Successive halving (Eq. 2): phases p = current..P-1, each ``max_j T(G_j)`` over the phase's jobs
(the app scheduler's split of |G| GPUs among them), summed. Each phase has its own per-job demand
(``phases`` entries ``(n_jobs, iterations, d_job)``; the workload doubles it per phase) and each job
is charged the spread of *its own* GPUs: a job whose share fits in one machine
(``machine_gpus``) is assumed placed within one machine by the app scheduler.
Performance-curve stopping: one "phase" holding the running jobs, each with the most optimistic curve
that gives the latest forecast (``max`` of the forecasts). ``S(G) = L(spread) * max V``
(``fairplace.core.domain.slowdown``); a job with locality sensitivity s uses ``1 + s (L(spread) - 1)``.

How one phase's time is computed (the app scheduler's split of the GPUs among its jobs) is in
:mod:`fairplace.formulations.phase_times`; this module sums the phases and divides by T_id.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from fairplace.core.domain import slowdown, spread
from fairplace.core.errors import OptionError

from .hyperopt import (  # noqa: F401  (PerfCurve, model_job, forecast_iteration: re-exported)
    HyperOptimizer,
    JobInfo,
    PerfCurve,
    SuccessiveHalving,
    forecast_iteration,
    model_job,
)
from .phase_times import (  # noqa: F401  (the phase-time functions: re-exported, their old home)
    LOCALITY_BOOTSTRAP,
    even_phase_time,
    even_phase_times,
    identical_phase_time,
    job_locality,
    later_phase_times,
    phase_time,
    phase_works,
    works_phase_time,
)
from .variants import T_ID_VARIANTS


def locality_triple(values: Sequence[float], what: str = "locality") -> tuple[float, float, float]:
    """(L_machine, L_rack, L_cluster) as floats; an OptionError naming ``what`` unless 3 values."""
    if len(values) != 3:
        raise OptionError(what, f"need 3 values (machine, rack, cluster), got {list(values)}")
    a, b, c = values
    return (float(a), float(b), float(c))


def profiled_locality(t_iter_by_spread: Sequence[float]) -> tuple[float, float, float]:
    """L from profiled iteration times on a machine / rack / cluster placement:
    L(s) = t(s) / t(machine), made non-decreasing (a wider spread is never faster)."""
    t = np.asarray(t_iter_by_spread, dtype=float)
    if t.shape != (3,) or not np.all(t > 0):
        raise OptionError("locality", f"need 3 positive iteration times, got {list(t)}")
    return locality_triple(np.maximum.accumulate(t / t[0]).tolist(), "locality")


def model_locality(
    model: str | None,
    table: Mapping[str, Sequence[float]] | None = None,
    default: Sequence[float] = LOCALITY_BOOTSTRAP,
) -> tuple[float, float, float]:
    """L per model from a table {model: (L_machine, L_rack, L_cluster)} (a scalar entry x means
    (1, x, x)); the bootstrap constants (1, 1.1, 1.3) when the model is not in the table."""
    if model is None or not table or model not in table:
        return locality_triple(default, "locality")
    v = table[model]
    if isinstance(v, (int, float)):
        return (1.0, float(v), float(v))
    return locality_triple(v, f"locality[{model!r}]")


def single_job_t_shared(
    elapsed: float, iter_left: float, t_iter: float, S: float, n_gpus: int, d_max: int
) -> float:
    """Eq. 1: T_sh = elapsed + iter_left * t_iter * S / min(|G|, d_max) (inf with no GPU)."""
    if n_gpus <= 0:
        return math.inf
    return float(elapsed + iter_left * t_iter * S / min(n_gpus, d_max))


def t_shared(
    opt: HyperOptimizer,
    n_gpus: int,
    d_max: int,
    elapsed: float = 0.0,
    spread_level: int = 0,
    vmax: float = 1.0,
    locality: Sequence[float] = LOCALITY_BOOTSTRAP,
    split: str = "even",
    machine_gpus: int | None = None,
) -> float:
    """Eq. 2: T_sh = elapsed + sum_phases max_j T(G_j) (one phase for performance-curve stopping),
    each phase with its own per-job demand (``SuccessiveHalving.phase_demand``)."""
    alloc = range(n_gpus)
    total = float(elapsed)
    halving = opt if isinstance(opt, SuccessiveHalving) else None
    first = halving.current_phase if halving is not None else 0
    for p in range(first, opt.num_phases()):  # past phases: 0 s
        d = halving.phase_demand(p, d_max) if halving is not None else d_max
        if halving is not None and p > first and split == "even":  # k copies of the model job
            for x in later_phase_times(halving, n_gpus, d_max, spread_level, vmax, locality,
                                       machine_gpus):  # fmt: skip
                total += x  # phase by phase, in order
            break  # every later phase is one of them
        memo = getattr(opt, "phase_memo", None)
        key = (p, n_gpus, d, spread_level, vmax, tuple(locality), split, machine_gpus)
        if memo is None or key not in memo:
            jobs = opt.jobs_in_phase(p, alloc)
            works = phase_works(memo, p, jobs) if vmax == 1.0 else None
            x = phase_time(
                jobs, n_gpus, d, spread_level, vmax, locality, split, machine_gpus, works
            )
            if memo is None:
                total += x
                continue
            memo[key] = x
        total += memo[key]
    return total


@dataclass(frozen=True)
class IdealTime:
    """T_id variant (a named option; ARCHITECTURE.md):

    * ``themis`` (headline): W / min(R_C / N_avg, demand_max), the app alone on a 1/N_avg share,
      N_avg the time-weighted mean number of active apps; with ``phases`` = ((W_p, d_p), ...)
      sum_p W_p / min(R_C / N_avg, d_p) (each phase limited by its own demand);
    * ``literal``: T_cluster * N_avg = W / min(R_C, demand_max) * N_avg (Eq. 1 / Eq. 2 as printed);
    * ``static``: work_total / min(R_C / N_arrival, demand_max), the 1/N share fixed at arrival;
    * ``gavel``:  t_isolated + work_left / min(R_C / m, demand_max), m apps now and t_isolated the
      cumulative isolated-equivalent time of the work done so far (Gavel's FTF denominator).
    """

    variant: str = "themis"
    n_avg: float = 1.0
    n_arrival: int = 1
    n_active: int = 1
    t_isolated: float = 0.0
    cluster_gpus: int | None = None  # R_C override (default: the instance's cluster size)
    phases: tuple = ()  # ((W_p, d_p), ...) per phase for the headline variant

    def __post_init__(self):
        if self.variant not in T_ID_VARIANTS:
            raise OptionError(
                "t_id.variant", f"expected one of {T_ID_VARIANTS}, got {self.variant!r}"
            )

    @property
    def reads_work_left(self) -> bool:
        """Whether :meth:`value` reads ``work_left`` (Gavel's variant only)."""
        return self.variant == "gavel"

    def value(self, work_total: float, work_left: float, demand_max: int, r_c: int) -> float:
        """:func:`ideal_time` with this variant's fields."""
        return ideal_time(
            self.variant, work_total, work_left, demand_max, self.cluster_gpus or r_c, self.n_avg,
            self.phases, self.n_arrival, self.n_active, self.t_isolated,
        )  # fmt: skip


def ideal_time(
    variant: str, work_total: float, work_left: float, demand_max: int, r_c: int,
    n_avg: float = 1.0, phases: tuple = (), n_arrival: int = 1, n_active: int = 1,
    t_isolated: float = 0.0,
) -> float:  # fmt: skip
    """T_id of :class:`IdealTime` (its variants) for an app of ``work_total`` (W) serial
    GPU-seconds, ``work_left`` of them still to do (read by ``gavel`` only), demand cap d_max =
    ``demand_max`` on R_C = ``r_c`` GPUs: ``themis`` W / min(R_C / N_avg, d_max), or with
    ``phases`` ((W_p, d_p), ...) sum_p W_p / min(R_C / N_avg, d_p); ``literal`` W / min(R_C,
    d_max) x N_avg; ``static`` W / min(R_C / N_arrival, d_max); ``gavel`` t_isolated + work_left /
    min(R_C / m, d_max)."""
    if variant == "themis":
        share = r_c / max(n_avg, 1.0)
        if phases:
            return float(sum(float(w) / min(share, int(d)) for w, d in phases))
        return work_total / min(share, demand_max)
    if variant == "literal":
        return work_total / min(r_c, demand_max) * n_avg
    if variant == "static":
        return work_total / min(r_c / max(n_arrival, 1), demand_max)
    return t_isolated + work_left / min(r_c / max(n_active, 1), demand_max)


def n_avg(
    change_times: Sequence[float], counts: Sequence[int], t_start: float, t_now: float
) -> float:
    """Time-weighted average of a step function (``counts[k]`` from ``change_times[k]`` on) over
    [t_start, t_now]; the value at t_start when the window is empty."""
    t = np.asarray(change_times, float)
    c = np.asarray(counts, float)
    if t_now <= t_start or t.size == 0:
        k = max(int(np.searchsorted(t, t_start, side="right")) - 1, 0)
        return float(c[k]) if c.size else 1.0
    edges = np.clip(np.append(t, np.inf), t_start, t_now)
    w = np.diff(edges)
    return float((w * c).sum() / w.sum())


def gavel_isolated_update(
    t_isolated: float, iters_done: float, t_iter: float, r_c: int, m: int, d_max: int
) -> float:
    """t_isolated += iters_done * t_iter / min(R_C / m, d_max)."""
    return float(t_isolated + iters_done * t_iter / min(r_c / max(m, 1), d_max))


def remaining_work(opt: HyperOptimizer) -> float:
    """Serial GPU-seconds still to do (sum over the remaining phases / running jobs)."""
    if isinstance(opt, SuccessiveHalving) and opt.mode == "actual":  # later phases: model jobs
        tm = opt._future_job[0]
        later = opt.phases[opt.current_phase + 1 :]
        return float(
            sum(j.work for j in opt.jobs) + sum(JobInfo(i, tm).work * int(n) for n, i, *_ in later)
        )
    phases = (
        [opt.jobs_in_phase(p) for p in range(opt.num_phases())]
        if isinstance(opt, SuccessiveHalving)
        else [opt.jobs_remaining(())]
    )
    return float(sum(j.work for jobs in phases for j in jobs))


@dataclass(frozen=True)
class FTFModel:
    """What the AGENT needs to price a bundle: rho(n, spread, vmax) = T_sh / T_id.

    ``work_total`` is iter_total * t_iter (single job) or the budget B (successive halving; default
    ``optimizer.budget()``), ``demand_max`` the app's demand cap (default d_max * max jobs per phase).
    """

    optimizer: HyperOptimizer
    d_max: int
    elapsed: float = 0.0
    locality: tuple[float, float, float] = LOCALITY_BOOTSTRAP
    t_id: IdealTime = field(default_factory=IdealTime)
    work_total: float | None = None
    demand_max: int | None = None
    split: str = "even"
    machine_gpus: int | None = None  # GPUs per machine (per-job spread); None: the bundle's spread

    @property
    def app_demand_max(self) -> int:
        if self.demand_max is not None:
            return int(self.demand_max)
        if isinstance(self.optimizer, SuccessiveHalving):
            return self.optimizer.demand_gpus(self.d_max)
        return int(self.d_max) * max(int(self.optimizer.demand_jobs()), 1)

    def ideal(self, r_c: int) -> float:
        """T_id under the chosen variant (kept per model: every rho of a model divides by it)."""
        kept = self.__dict__.get("_ideal")
        if kept is not None and kept[0] == r_c:
            return kept[1]
        value = self._ideal(r_c)
        self.__dict__["_ideal"] = (r_c, value)  # not a field: equality, replace() ignore it
        return value

    def _ideal(self, r_c: int) -> float:
        opt = self.optimizer
        halving = isinstance(opt, SuccessiveHalving)
        needs_left = self.t_id.reads_work_left or (self.work_total is None and not halving)
        left = remaining_work(opt) if needs_left else 0.0
        total = self.work_total
        if total is None:
            total = opt.budget() if isinstance(opt, SuccessiveHalving) else left
        return self.t_id.value(total, left, self.app_demand_max, r_c)

    def t_shared(self, n_gpus: int, spread_level: int = 0, vmax: float = 1.0) -> float:
        return t_shared(
            self.optimizer,
            n_gpus,
            self.d_max,
            self.elapsed,
            spread_level,
            vmax,
            self.locality,
            self.split,
            self.machine_gpus,
        )

    def rho(self, n_gpus: int, r_c: int, spread_level: int = 0, vmax: float = 1.0) -> float:
        """rho(G) = T_sh(G) / T_id for |G| = n_gpus, spread(G) and max V over G."""
        ideal = self.ideal(r_c)
        if not ideal > 0:  # e.g. iters_left x t_iter underflows (the loaders reject that too)
            raise OptionError("t_id", f"the ideal time T_id is {ideal!r}: the app has no work")
        return self.t_shared(n_gpus, spread_level, vmax) / ideal


def running_t_shared(
    elapsed: float,
    works: Sequence[float],
    n_gpus: int,
    d_max: int,
    later: Sequence[float],
    spread_level: int = 0,
    vmax: float = 1.0,
    locality: Sequence[float] = LOCALITY_BOOTSTRAP,
    machine_gpus: int | None = None,
    sensitivity: float = 1.0,
) -> float:
    """T_sh (Eq. 2) of an app on n = ``n_gpus`` GPUs of spread s and max V = ``vmax`` under the
    ``even`` split, from numbers alone: T_sh = elapsed + T_run + sum_p T_p, T_run the running
    phase's time (:func:`~fairplace.formulations.phase_times.works_phase_time` of its jobs'
    ``works`` w_j = iters left x serial time per iteration, sorted longest first, at ``d_max``
    GPUs per job and one locality ``sensitivity``), T_p the later phases' times (``later``:
    :func:`~fairplace.formulations.phase_times.later_times`), summed in :func:`t_shared`'s order:
    the number :meth:`FTFModel.t_shared` gives for the same app."""
    if vmax != 1.0:
        works = sorted((w * vmax for w in works), reverse=True)
    total = float(elapsed)
    total += works_phase_time(
        works, n_gpus, d_max, sensitivity, spread_level, locality, machine_gpus
    )
    for x in later:  # phase by phase, in order
        total += x
    return total


def running_rho(
    elapsed: float,
    works: Sequence[float],
    n_gpus: int,
    d_max: int,
    later: Sequence[float],
    t_id: float,
    spread_level: int = 0,
    vmax: float = 1.0,
    locality: Sequence[float] = LOCALITY_BOOTSTRAP,
    machine_gpus: int | None = None,
    sensitivity: float = 1.0,
) -> float:
    """rho = T_sh / T_id (Eq. 2) of an app from numbers alone (:func:`running_t_shared`): the
    number :meth:`FTFModel.rho` gives for the same app."""
    if not t_id > 0:  # as FTFModel.rho
        raise OptionError("t_id", f"the ideal time T_id is {t_id!r}: the app has no work")
    total = running_t_shared(elapsed, works, n_gpus, d_max, later, spread_level, vmax, locality,
                             machine_gpus, sensitivity)  # fmt: skip
    return total / t_id


def bundle_rho(
    model: FTFModel, cluster, gpu_idx: np.ndarray, cls: str | None, r_c: int | None = None
) -> float:
    """rho of a concrete GPU bundle: S = L(spread) * max V via ``fairplace.core.domain``."""
    idx = np.asarray(gpu_idx, dtype=np.int64)
    s = spread(cluster.machine_index, cluster.rack_index, idx)
    vmax = slowdown((1.0, 1.0, 1.0), s, cluster.pm_vector(cls)[idx]) if idx.size else 1.0
    return model.rho(int(idx.size), r_c or len(cluster), s, vmax)
