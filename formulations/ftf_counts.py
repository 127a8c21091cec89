"""Finish-time fairness for every GPU count at once: the AGENT's rho table (``agents.rho_table``)
prices n = 0..n_max offered GPUs per spread and PM level, so the phase times of THEMIS Eq. 2 are
computed over a whole row of counts (the same numbers as :func:`ftf.t_shared` one count at a time,
tested against it): later successive-halving phases in closed form, vectorised over phases and
counts; the running phase's LPT makespans from one sort of its works; times memoised on the
optimiser, whose jobs do not change while an app waits."""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

import numpy as np

from .ftf import FTFModel
from .hyperopt import HyperOptimizer, JobInfo, SuccessiveHalving
from .phase_times import (
    LOCALITY_BOOTSTRAP,
    even_phase_times,
    job_locality,
    phase_time,
    phase_works,
)


def identical_phase_times(
    k,
    work,
    sensitivity: float,
    counts: Sequence[int] | np.ndarray,
    d_max,
    spread_level: int = 0,
    locality: Sequence[float] = LOCALITY_BOOTSTRAP,
    machine_gpus: int | None = None,
) -> np.ndarray:
    """:func:`identical_phase_time` at max V = 1 for every GPU count in ``counts`` (vectorised);
    ``k``, ``work`` and ``d_max`` may be arrays of P phases: the result is then (P, len(counts))."""
    scalar = np.ndim(k) == 0
    n = np.asarray(counts, np.int64)[None, :]
    k = np.atleast_1d(np.asarray(k, np.int64))[:, None]
    work = np.atleast_1d(np.asarray(work, float))[:, None]
    cap = np.maximum(1, np.atleast_1d(np.asarray(d_max, np.int64)))[:, None]
    pos = np.maximum(n, 1)
    kk = np.maximum(k, 1)
    base = np.minimum(pos // kk, cap)
    L0 = job_locality(locality, 0, sensitivity)
    Ls = job_locality(locality, spread_level, sensitivity)

    def t(nj: np.ndarray) -> np.ndarray:
        fits = (nj <= machine_gpus) & (nj < n) if machine_gpus is not None else False
        return work * np.where(nj > 1, np.where(fits, L0, Ls), 1.0) / np.maximum(nj, 1)

    out = t(base)
    more = (pos % kk > 0) & (base + 1 <= cap)
    out = np.where(more, np.maximum(out, t(base + 1)), out)
    out = np.where(n < k, -(-k // pos) * work, out)
    out = np.where(n <= 0, np.inf, out)
    out = np.where(k <= 0, 0.0, out)
    return out[0] if scalar else out


def _lpt_makespans(works: Sequence[float], counts: Sequence[int]) -> np.ndarray:
    """LPT makespans of ``works`` (sorted, longest first) on n >= 1 GPUs for every n in ``counts``:
    the heap of :func:`phase_time`, started with the first n jobs one per GPU (0 + w = w), so only
    the J - n jobs after them are placed one by one (a count just below J: a few heap steps).
    Equal loads are interchangeable, so which of them takes a job changes no load: the same sums
    in the same order as :func:`phase_time`."""
    works = list(works)
    out = np.empty(len(counts))
    for a, n in enumerate(counts):
        loads = works[:n] + [0.0] * (n - len(works))
        heapq.heapify(loads)
        for w in works[n:]:
            heapq.heapreplace(loads, loads[0] + w)
        out[a] = max(loads)
    return out


def phase_time_counts(
    jobs: Sequence[JobInfo],
    counts: Sequence[int],
    d_max: int,
    spread_level: int = 0,
    locality: Sequence[float] = LOCALITY_BOOTSTRAP,
    split: str = "even",
    machine_gpus: int | None = None,
    lpt: dict | None = None,
    works: list[float] | None = None,
) -> np.ndarray:
    """:func:`phase_time` at max V = 1 for every GPU count in ``counts`` (a rho table's row of
    counts): the jobs are sorted once; under the ``even`` split with one locality sensitivity the
    slowest job of n >= J GPUs is read off the sorted works (the remainder goes to the jobs with
    most work: the slowest job is the first of them or the first without), in O(1) per count.
    ``lpt``: {n: LPT makespan} of these jobs for n < J, kept by the caller (it does not depend on
    the spread: one GPU per job is machine-local); ``works``: their works sorted longest first
    (:func:`~fairplace.formulations.phase_times.phase_works`) when the caller has them."""
    counts = [int(n) for n in counts]
    kinds = {j.locality_sensitivity for j in jobs}
    if not jobs or split != "even" or len(kinds) != 1:
        return np.array(
            [phase_time(jobs, n, d_max, spread_level, 1.0, locality, split, machine_gpus, works)
             for n in counts], float,
        )  # fmt: skip
    (sens,) = kinds
    J, cap = len(jobs), max(1, int(d_max))
    if works is None:
        works = sorted((j.work for j in jobs), reverse=True)
    out = np.empty(len(counts))
    lpt = {} if lpt is None else lpt
    few = [n for n in counts if 0 < n < J and n not in lpt]
    if few:
        lpt.update(zip(few, _lpt_makespans(works, few).tolist(), strict=True))
    big = iter(even_phase_times(works, [n for n in counts if n >= J], cap, sens, spread_level,
                                locality, machine_gpus))  # fmt: skip
    for a, n in enumerate(counts):
        if n <= 0:
            out[a] = math.inf
        elif n < J:
            out[a] = lpt[n]
        else:
            out[a] = next(big)
    return out


def t_shared_counts(
    opt: HyperOptimizer,
    counts: Sequence[int],
    d_max: int,
    elapsed: float = 0.0,
    spread_level: int = 0,
    locality: Sequence[float] = LOCALITY_BOOTSTRAP,
    split: str = "even",
    machine_gpus: int | None = None,
) -> np.ndarray:
    """:func:`t_shared` at max V = 1 for every GPU count in ``counts`` (phase by phase)."""
    total = np.full(len(counts), float(elapsed))
    at = np.asarray(counts, np.int64)  # the counts as indices of the phase memo's arrays
    hi = int(max(counts, default=0))
    memo = getattr(opt, "phase_memo", None) if min(counts, default=0) >= 0 else None
    halving = opt if isinstance(opt, SuccessiveHalving) else None
    later = []  # later successive-halving phases: k copies of the model job, all phases at once
    first = halving.current_phase if halving is not None else 0  # past phases: no jobs, 0 s
    for p in range(first, opt.num_phases()):
        d = halving.phase_demand(p, d_max) if halving is not None else d_max
        if halving is not None and p > halving.current_phase and split == "even":
            later.append((int(halving.phases[p][0]), float(halving.phases[p][1]), d))
            continue
        key = (p, d, spread_level, tuple(locality), split, machine_gpus)
        have = memo.get(key) if memo is not None else None  # by GPU count, NaN: not yet known
        if have is not None and have.size > hi and not np.isnan(known := have[at]).any():
            total += known
            continue
        jobs = opt.jobs_in_phase(p, range(0))
        lpt = memo.setdefault(("lpt", p), {}) if memo is not None else None
        works = phase_works(memo, p, jobs)
        new = phase_time_counts(
            jobs, counts, d, spread_level, locality, split, machine_gpus, lpt, works
        )
        if memo is not None:
            if have is None or have.size <= hi:
                grown = np.full(hi + 1, np.nan)
                if have is not None:
                    grown[: have.size] = have
                have = memo[key] = grown
            have[at] = new
        total += new
    if later and halving is not None:
        tm, sens = halving._future_job
        shared = halving.future_memo  # across optimisers: later phases do not move with progress

        def later_times(ns) -> np.ndarray:  # (later phases, counts)
            ks, iters, ds = (np.array(c) for c in zip(*later, strict=True))
            return identical_phase_times(ks, iters * tm, sens, ns, ds, spread_level, locality,
                                         machine_gpus)  # fmt: skip

        if shared is None:
            rows = later_times(counts)
        else:  # every count 0..hi at once, kept: a later table reads its counts off it
            fkey = (tuple(later), tm, sens, spread_level, tuple(locality), machine_gpus)
            grid = shared.get(fkey)
            if grid is None or grid.shape[1] <= hi:
                grid = shared[fkey] = later_times(range(hi + 1))
            rows = grid[:, at]  # the counts as an index array (a list is converted per call)
        for row in rows:  # phase by phase: the sums of t_shared, in its order
            total += row
    return total


def rho_grid(
    model: FTFModel, counts: Sequence[int], r_c: int, levels: Sequence[float]
) -> np.ndarray:
    """rho[a, s, v] for ``counts[a]`` GPUs, spread s = 0, 1, 2 and max V = ``levels[v]``: T_id
    once, and T_sh = elapsed + V x (the phases' time at V = 1), since every job time is linear
    in max V (Eq. 1 / Eq. 2)."""
    ideal = model.ideal(r_c)
    lv = np.asarray(levels, float)
    counts = [int(n) for n in counts]

    def times(ns: list[int], s: int) -> np.ndarray:
        return t_shared_counts(
            model.optimizer, ns, model.d_max, model.elapsed, s, model.locality, model.split,
            model.machine_gpus,
        )  # fmt: skip

    x0, x2 = times(counts, 0), times(counts, 2)
    x1 = x0.copy()  # times are monotone in the spread: equal at 0 and 2 -> equal at 1 too
    differ = (x0 != x2).nonzero()[0]
    if differ.size:
        x1[differ] = times([counts[k] for k in differ], 1)
    x = np.empty((len(counts), 3))  # (counts, spread)
    x[:, 0], x[:, 1], x[:, 2] = x0, x1, x2
    with np.errstate(invalid="ignore"):  # inf - elapsed stays inf
        return (model.elapsed + lv[None, None, :] * (x - model.elapsed)[:, :, None]) / ideal
