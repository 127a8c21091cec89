"""The hyper-parameter optimiser's side of THEMIS' AGENT API (§4.2, Figure 7): what it tells the
AGENT about each job (:class:`JobInfo`) and its stopping rule, successive halving
(:class:`SuccessiveHalving`, Eq. 2's phases) or performance curves (:class:`PerfCurve`), with
the model job of a successive-halving app's unknown survivors (:func:`model_job`). The AGENT's
finish-time fairness over these is ``ftf.py``."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol, runtime_checkable

from fairplace.core.errors import OptionError

from .variants import FUTURE_JOBS, PHASE_MODELS


@dataclass(frozen=True)
class JobInfo:
    """Figure 7: what the hyper-parameter optimiser tells the AGENT about one job."""

    iters_remaining: float
    avg_time_per_iter: float
    locality_sensitivity: float = 1.0

    @property
    def work(self) -> float:
        """Serial GPU-seconds left: iters_remaining * avg_time_per_iter."""
        return float(self.iters_remaining) * float(self.avg_time_per_iter)


@runtime_checkable
class HyperOptimizer(Protocol):
    """Figure 7's AGENT <-> hyper-parameter optimiser API (``gpu_alloc``: the GPUs of the app)."""

    def jobs_in_phase(self, phase: int, gpu_alloc: Sequence) -> list[JobView]: ...

    def num_phases(self) -> int: ...

    def jobs_remaining(self, gpu_alloc: Sequence) -> list[JobView]: ...

    def demand_jobs(self) -> int: ...


class TimedJob(Protocol):
    """What :func:`model_job` reads of a job: a :class:`JobInfo` or an ``AgentJob``."""

    @property
    def avg_time_per_iter(self) -> float: ...

    @property
    def locality_sensitivity(self) -> float: ...


class JobView(TimedJob, Protocol):
    """What the AGENT reads of a job: a :class:`JobInfo` or an ``AgentJob`` held as it is."""

    @property
    def iters_remaining(self) -> float: ...

    @property
    def work(self) -> float: ...


def model_job(jobs: Sequence[TimedJob], future: str = "median") -> tuple[float, float]:
    """(time per iteration, locality sensitivity) of the job that models a successive-halving
    app's unknown survivors: the running jobs' median (``future='slowest'``: slowest) time per
    iteration and their median sensitivity."""
    times = [j.avg_time_per_iter for j in jobs]
    return model_job_of(times, [j.locality_sensitivity for j in jobs], future)


def model_job_of(
    times: Sequence[float], sensitivities: Sequence[float], future: str = "median"
) -> tuple[float, float]:
    """:func:`model_job` of jobs with these times per iteration and locality sensitivities:
    (t_m, s_m) = (median_j t_j (``future='slowest'``: max_j t_j), median_j s_j); (0, 1) without
    jobs."""
    t = list(times) or [0.0]
    s = list(sensitivities) or [1.0]
    tm = float(statistics.median(t)) if future == "median" else float(max(t))
    return tm, float(statistics.median(s))


@dataclass(frozen=True)
class SuccessiveHalving:
    """Successive halving: ``phases`` = ((n_jobs, iterations per job[, GPUs per job]), ...) for every
    phase (without the third entry a phase uses the app's ``d_max``), the running
    ``jobs`` of ``current_phase``. Future survivors are unknown, so later phases use the median job of
    the current phase (``future='slowest'`` uses the slowest one instead). ``mode='actual'`` uses the
    current phase's real jobs; ``mode='median'`` models every phase, the current one included, by the
    median job (the paper's quoted 0.5 / 0.34)."""

    jobs: tuple[JobView, ...]
    phases: tuple[tuple, ...]
    current_phase: int = 0
    mode: str = "actual"
    future: str = "median"
    #: a dict shared by the optimisers of one app (its jobs' progress moves, its later phases do
    #: not): the later phases' times per GPU count (``ftf_counts.t_shared_counts``); None: no memo
    future_memo: dict | None = field(default=None, compare=False, repr=False)
    #: :func:`model_job` of these jobs when the caller has it (it moves with the set of running
    #: jobs, not with their progress); None: computed here
    model_job: tuple[float, float] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.mode not in PHASE_MODELS:
            raise OptionError("phase_model", f"expected one of {PHASE_MODELS}, got {self.mode!r}")
        if self.future not in FUTURE_JOBS:
            raise OptionError("future", f"expected one of {FUTURE_JOBS}, got {self.future!r}")
        if not 0 <= self.current_phase < len(self.phases):
            raise OptionError("current_phase", f"must be in [0, {len(self.phases)})")

    @cached_property
    def _median_time(self) -> float:
        return float(statistics.median([j.avg_time_per_iter for j in self.jobs] or [0.0]))

    @cached_property
    def _future_job(self) -> tuple[float, float]:
        """(time per iteration, locality sensitivity) of the job that models unknown survivors."""
        if self.model_job is not None:
            return self.model_job
        return model_job(self.jobs, self.future)

    def _model_job(self, iters: float) -> JobInfo:
        return JobInfo(iters, *self._future_job)

    def num_phases(self) -> int:
        return len(self.phases)

    def jobs_in_phase(self, phase: int, gpu_alloc: Sequence = ()) -> list[JobView]:
        if phase < self.current_phase:
            return []
        if phase == self.current_phase:
            if self.mode == "actual":
                return list(self.jobs)
            tm = self._median_time
            return [JobInfo(j.iters_remaining, tm, j.locality_sensitivity) for j in self.jobs]
        n, iters = self.phases[phase][:2]
        return [self._model_job(iters)] * int(n)

    def phase_demand(self, phase: int, default: int) -> int:
        """GPUs per job in ``phase`` (the current phase: the running jobs' ``default``)."""
        p = self.phases[phase]
        if phase == self.current_phase or len(p) < 3:
            return int(default)
        return int(p[2])

    def jobs_remaining(self, gpu_alloc: Sequence = ()) -> list[JobView]:
        return self.jobs_in_phase(self.current_phase, gpu_alloc)

    def budget(self) -> float:
        """B in GPU-seconds: done + remaining phases at the model's job times."""
        return float(sum(p[0] * p[1] * self._median_time for p in self.phases))

    @cached_property
    def phase_memo(self) -> dict:
        """Phase times already computed for these jobs ({(phase, GPUs, ...): seconds}): an app
        whose jobs did not move is priced again at every round it waits through."""
        return {}

    def demand_jobs(self) -> int:
        return int(max(p[0] for p in self.phases[self.current_phase :]))

    def demand_gpus(self, d_max: int) -> int:
        """Largest total demand of a remaining phase: max_p n_p * d_p."""
        return int(
            max(
                p[0] * self.phase_demand(k, d_max)
                for k, p in enumerate(self.phases)
                if k >= self.current_phase
            )
        )


@dataclass(frozen=True)
class PerfCurve:
    """Performance-curve stopping: each running job with the forecast remaining iterations of its
    plausible convergence curves; the AGENT takes the latest forecast (``max``) per job."""

    jobs: tuple[JobView, ...]
    forecasts: tuple[tuple[float, ...], ...] = ()

    def num_phases(self) -> int:
        return 1

    @cached_property
    def phase_memo(self) -> dict:
        """As :attr:`SuccessiveHalving.phase_memo`."""
        return {}

    def jobs_remaining(self, gpu_alloc: Sequence = ()) -> list[JobView]:
        out: list[JobView] = []
        for k, j in enumerate(self.jobs):
            f = self.forecasts[k] if k < len(self.forecasts) and self.forecasts[k] else ()
            iters = max([j.iters_remaining, *f]) if f else j.iters_remaining
            out.append(JobInfo(float(iters), j.avg_time_per_iter, j.locality_sensitivity))
        return out

    def jobs_in_phase(self, phase: int, gpu_alloc: Sequence = ()) -> list[JobView]:
        return self.jobs_remaining(gpu_alloc) if phase == 0 else []

    def demand_jobs(self) -> int:
        return len(self.jobs)


def forecast_iteration(a: float, b: float, c: float, target: float) -> float:
    """Iteration t at which the power-law loss curve c + a t^-b reaches ``target`` (inf if never)."""
    if target <= c or a <= 0 or b <= 0:
        return math.inf
    return float((a / (target - c)) ** (1.0 / b))
