"""One phase's time in THEMIS Eq. 2 (``max_j T(G_j)`` over the phase's jobs), the part of finish-time
fairness that :mod:`fairplace.formulations.ftf` sums over phases.

T(G_j) = work_j * L_j(spread) * max V / n_j for job j with n_j GPUs; one GPU alone is machine-local
(L = 1), a job whose share fits in one machine (``machine_gpus``) and is not the whole bundle runs
within one machine, otherwise it has the bundle's spread.

Split of n GPUs among J jobs (our reading of §4.3.3):
* n < J: jobs run one per GPU, serialised (longest-processing-time first; the paper's 2-GPU example
  puts 120+80 and 100+100 on the two GPUs);
* n >= J: ``split='even'`` (default; the paper's 16-GPU arithmetic, 4 GPUs per job) gives each job
  n // J GPUs and the remainder to the slowest jobs; ``split='balanced'`` gives each GPU to the job that
  currently finishes last (optimal for min-max). At most d_max GPUs per job either way.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from fairplace.core.errors import OptionError

from .hyperopt import JobView, SuccessiveHalving
from .variants import SPLITS

#: THEMIS' bootstrap locality constants: one machine, across machines (one rack), across racks.
LOCALITY_BOOTSTRAP = (1.0, 1.1, 1.3)


def job_locality(locality: Sequence[float], spread_level: int, sensitivity: float = 1.0) -> float:
    """L_j(spread) = 1 + s_j (L(spread) - 1)."""
    return 1.0 + float(sensitivity) * (float(locality[spread_level]) - 1.0)


def phase_works(memo: dict | None, phase: int, jobs: Sequence[JobView]) -> list[float] | None:
    """The works of a phase's jobs sorted longest first, kept in the optimiser's phase ``memo``
    (its jobs never change; the AGENT's rho and every spread of its rho table sort them once);
    None without a memo."""
    if memo is None:
        return None
    key = ("works", phase)
    out = memo.get(key)
    if out is None:
        out = memo[key] = sorted((j.work for j in jobs), reverse=True)
    return out


def keep_works(memo: dict, phase: int, works: list[float]) -> None:
    """Keep ``works`` as :func:`phase_works` of ``phase`` in the optimiser's ``memo``, for a
    caller that has the phase's works sorted longest first already (each iters left x time per
    iteration, the numbers of ``JobInfo.work``): the simulator sorts a running phase's works in
    NumPy, where a phase of tens of jobs costs a property call per job."""
    memo[("works", phase)] = works


def phase_time(
    jobs: Sequence[JobView],
    n_gpus: int,
    d_max: int,
    spread_level: int = 0,
    vmax: float = 1.0,
    locality: Sequence[float] = LOCALITY_BOOTSTRAP,
    split: str = "even",
    machine_gpus: int | None = None,
    works: list[float] | None = None,
) -> float:
    """max_j T(G_j) of one phase under the app scheduler's split of ``n_gpus`` (module docstring).
    A job whose share n_j fits in one machine (n_j <= ``machine_gpus``) and is not the whole bundle
    runs within one machine (spread 0: optimistic, the count bundle does not say how the GPUs sit
    on machines); otherwise it has the bundle's spread (``None``: every job the bundle's spread).
    ``works``: the jobs' works sorted longest first (:func:`phase_works`), used at ``vmax`` = 1."""
    if works is not None and vmax != 1.0:
        works = None
    if not jobs:
        return 0.0
    if n_gpus <= 0:
        return math.inf
    # serialised one GPU per job (n < J: machine-local, only V counts), or the even split of jobs
    # of one locality sensitivity: from the works alone (works_phase_time)
    if n_gpus < len(jobs) or (split == "even" and len({j.locality_sensitivity for j in jobs}) == 1):
        if works is None:
            works = sorted((j.work * vmax for j in jobs), reverse=True)
        return works_phase_time(
            works, n_gpus, d_max, jobs[0].locality_sensitivity, spread_level, locality,
            machine_gpus,
        )  # fmt: skip
    cap = max(1, int(d_max))
    if split == "even":  # n // J each, the remainder to the slowest jobs
        n = [min(n_gpus // len(jobs), cap)] * len(jobs)
        for k in sorted(range(len(jobs)), key=lambda k: -jobs[k].work)[: n_gpus % len(jobs)]:
            n[k] = min(n[k] + 1, cap)
    elif split == "balanced":  # each GPU to the current bottleneck job: minimises the phase time
        n = [1] * len(jobs)
    else:
        raise OptionError("split", f"expected one of {SPLITS}, got {split!r}")

    def t(k: int) -> float:  # T(G_j) = work * S_j / n_j; one GPU alone is machine-local
        fits = machine_gpus is not None and n[k] <= machine_gpus and n[k] < n_gpus
        own = 0 if fits else spread_level  # a job holding the whole bundle has its spread
        L = job_locality(locality, own, jobs[k].locality_sensitivity) if n[k] > 1 else 1.0
        return jobs[k].work * vmax * L / n[k]

    if split == "balanced":
        heap = [(-t(k), k) for k in range(len(jobs))]
        heapq.heapify(heap)
        left = n_gpus - len(jobs)
        while left > 0 and heap:
            _, k = heapq.heappop(heap)
            if n[k] >= cap:
                continue  # the bottleneck cannot use more GPUs: extra GPUs stay idle
            n[k] += 1
            left -= 1
            heapq.heappush(heap, (-t(k), k))
    return float(max(t(k) for k in range(len(jobs))))


def works_phase_time(
    works: Sequence[float],
    n_gpus: int,
    d_max: int,
    sensitivity: float = 1.0,
    spread_level: int = 0,
    locality: Sequence[float] = LOCALITY_BOOTSTRAP,
    machine_gpus: int | None = None,
) -> float:
    """:func:`phase_time` of jobs of one locality ``sensitivity`` under the ``even`` split, from
    their ``works`` alone (each w_j x max V, sorted longest first): 0 without jobs, inf without a
    GPU; n < J GPUs: the LPT makespan max_g sum_{j on g} w_j (one GPU per job, machine-local);
    n >= J: :func:`even_phase_time` (at most ``d_max`` GPUs per job)."""
    if not works:
        return 0.0
    if n_gpus <= 0:
        return math.inf
    if n_gpus < len(works):
        loads = [0.0] * n_gpus
        for w in works:
            heapq.heapreplace(loads, loads[0] + w)
        return float(max(loads))
    cap = max(1, int(d_max))
    return float(
        even_phase_time(works, n_gpus, cap, sensitivity, spread_level, locality, machine_gpus)
    )


def even_phase_time(
    works: Sequence[float],
    n_gpus: int,
    cap: int,
    sensitivity: float,
    spread_level: int = 0,
    locality: Sequence[float] = LOCALITY_BOOTSTRAP,
    machine_gpus: int | None = None,
) -> float:
    """:func:`phase_time` under the ``even`` split of ``n_gpus`` >= len(works) GPUs over jobs of one
    locality sensitivity, from their ``works`` sorted longest first (:func:`even_phase_times` at
    one count)."""
    return even_phase_times(works, [n_gpus], cap, sensitivity, spread_level, locality,
                            machine_gpus)[0]  # fmt: skip


def even_phase_times(
    works: Sequence[float],
    counts: Sequence[int],
    cap: int,
    sensitivity: float,
    spread_level: int = 0,
    locality: Sequence[float] = LOCALITY_BOOTSTRAP,
    machine_gpus: int | None = None,
) -> list[float]:
    """:func:`even_phase_time` for every n in ``counts`` (each >= len(works)), in O(1) per count:
    n // J each (at most ``cap``), a GPU more for the n % J longest, so the slowest job is the
    longest with the base share or the longest with a GPU more. T(G_j) = w L / n_j, with L = 1 for
    one GPU, the job's own-machine locality for a share that fits a machine (``machine_gpus``) and
    is not the whole bundle, else the bundle's spread (a rho table's row in one loop: the two
    localities once, no call per count)."""
    J, mg = len(works), machine_gpus
    L0 = job_locality(locality, 0, sensitivity)
    Ls = job_locality(locality, spread_level, sensitivity)
    out = []
    for n in counts:
        base, r = min(n // J, cap), n % J
        nj, w = base, works[r]
        v = w * ((L0 if mg is not None and nj <= mg and nj < n else Ls) if nj > 1 else 1.0) / nj
        if r:
            nj, w = min(base + 1, cap), works[0]
            x = w * ((L0 if mg is not None and nj <= mg and nj < n else Ls) if nj > 1 else 1.0) / nj
            v = max(v, x)
        out.append(v)
    return out


def identical_phase_time(
    k: int,
    work: float,
    sensitivity: float,
    n_gpus: int,
    d_max: int,
    spread_level: int = 0,
    vmax: float = 1.0,
    locality: Sequence[float] = LOCALITY_BOOTSTRAP,
    machine_gpus: int | None = None,
) -> float:
    """:func:`phase_time` of ``k`` identical jobs under the ``even`` split, in closed form (later
    successive-halving phases are modelled by k copies of one job): n < k serialises ceil(k / n) jobs
    on the busiest GPU; otherwise the slowest job is one with the base share min(n // k, d_max) or,
    when a remainder exists, one with a GPU more (it may cross a machine)."""
    if k <= 0:
        return 0.0
    if n_gpus <= 0:
        return math.inf
    w = work * vmax
    if n_gpus < k:
        return float(-(-k // n_gpus) * w)
    cap = max(1, int(d_max))

    def t(nj: int) -> float:
        fits = machine_gpus is not None and nj <= machine_gpus and nj < n_gpus
        L = job_locality(locality, 0 if fits else spread_level, sensitivity)
        return w * (L if nj > 1 else 1.0) / nj

    base = min(n_gpus // k, cap)
    out = t(base)
    if n_gpus % k and base + 1 <= cap:
        out = max(out, t(base + 1))
    return float(out)


def later_phase_times(
    opt: SuccessiveHalving, n_gpus: int, d_max: int, spread_level: int, vmax: float,
    locality: Sequence[float], machine_gpus: int | None,
) -> list[float]:  # fmt: skip
    """:func:`later_times` of the optimiser's phases after its current one, with its model job,
    kept in its ``future_memo``."""
    return later_times(opt.phases, opt.current_phase, opt._future_job, n_gpus, d_max,
                       spread_level, vmax, locality, machine_gpus, opt.future_memo)  # fmt: skip


def later_times(
    phases: tuple, current: int, future_job: tuple[float, float], n_gpus: int, d_max: int,
    spread_level: int, vmax: float, locality: Sequence[float], machine_gpus: int | None,
    memo: dict | None = None,
) -> list[float]:  # fmt: skip
    """:func:`identical_phase_time` of every successive-halving phase after ``current`` (k_p copies
    of the model job ``future_job`` = (t_m, s_m) with I_p iterations each: work I_p x t_m, d_p GPUs
    per job, the ``even`` split), in phase order; kept in ``memo`` (an app's optimisers'
    ``future_memo``: they do not move with the running jobs' progress, so an app's current rho at
    each decision reads them instead of recomputing them)."""
    tm, sens = future_job
    key = ("later", phases, current, tm, sens, n_gpus, d_max, spread_level, vmax,
           tuple(locality), machine_gpus)  # fmt: skip
    out = memo.get(key) if memo is not None else None
    if out is None:
        out = []
        for p in range(current + 1, len(phases)):
            k, iters = phases[p][:2]
            d = int(phases[p][2]) if len(phases[p]) >= 3 else int(d_max)  # phase_demand
            out.append(identical_phase_time(int(k), float(iters) * tm, sens, n_gpus, d,
                                            spread_level, vmax, locality, machine_gpus))  # fmt: skip
        if memo is not None:
            memo[key] = out
    return out
