"""Finish-time fairness for every GPU count at once: the AGENT's rho table (``agents.rho_table``)
prices n = 0..n_max offered GPUs per spread and PM level, so the phase times of THEMIS Eq. 2 are
computed over a whole row of counts (the same numbers as :func:`ftf.t_shared` one count at a time,
tested against it): later successive-halving phases in closed form, vectorised over phases and
counts; the running phase's LPT makespans from one sort of its works; times memoised on the
optimiser, whose jobs do not change while an app waits. A table (:func:`rho_grid`) walks the
phases once for the three spreads (:func:`spread_times`), on Python floats: a table has a few
counts, where NumPy's cost per call would exceed the arithmetic."""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

import numpy as np

from .ftf import FTFModel
from .hyperopt import HyperOptimizer, JobView, SuccessiveHalving
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
    jobs: Sequence[JobView],
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


def _plan(model: FTFModel, memo: dict | None) -> tuple[tuple, tuple]:
    """The optimiser's remaining phases as t_shared sums them: (phases priced from their jobs, as
    (phase, GPUs per job)), then (later successive-halving phases under the ``even`` split, as
    (jobs, iterations, GPUs per job): k copies of the model job); kept in the phase ``memo``."""
    key = ("plan", model.d_max, model.split)
    out = memo.get(key) if memo is not None else None
    if out is None:
        opt, d_max = model.optimizer, model.d_max
        halving = opt if isinstance(opt, SuccessiveHalving) else None
        priced, later = [], []
        for p in range(halving.current_phase if halving is not None else 0, opt.num_phases()):
            d = halving.phase_demand(p, d_max) if halving is not None else d_max
            if halving is not None and p > halving.current_phase and model.split == "even":
                later.append((int(halving.phases[p][0]), float(halving.phases[p][1]), d))
            else:
                priced.append((p, d))
        out = (tuple(priced), tuple(later))
        if memo is not None:
            memo[key] = out
    return out


def _priced_rows(
    opt: HyperOptimizer, memo: dict | None, p: int, counts: list[int], d_max: int,
    locality: tuple, split: str, machine_gpus: int | None,
) -> list[list[float]]:  # fmt: skip
    """:func:`phase_time_counts` of phase ``p`` at spreads 0, 1, 2 ([spread][count]): the LPT
    makespans of n < J GPUs (one GPU per job: no spread) once for the three spreads, n >= J under
    the ``even`` split by :func:`even_phase_times` per spread, on Python floats (a table's few
    counts: NumPy's per-call cost would exceed the arithmetic)."""
    jobs = opt.jobs_in_phase(p, range(0))
    kinds = memo.get(("kinds", p)) if memo is not None else None
    if kinds is None:
        kinds = {j.locality_sensitivity for j in jobs}
        if memo is not None:
            memo[("kinds", p)] = kinds
    works = phase_works(memo, p, jobs)
    if not jobs or split != "even" or len(kinds) != 1:
        return [[phase_time(jobs, n, d_max, s, 1.0, locality, split, machine_gpus, works)
                 for n in counts] for s in range(3)]  # fmt: skip
    (sens,) = kinds
    J, cap = len(jobs), max(1, int(d_max))
    if works is None:
        works = sorted((j.work for j in jobs), reverse=True)
    few = [n for n in counts if 0 < n < J]
    lpt: dict = {}
    if few:
        lpt = memo.setdefault(("lpt", p), {}) if memo is not None else {}
        miss = [n for n in few if n not in lpt]
        if miss:
            lpt.update(zip(miss, _lpt_makespans(works, miss).tolist(), strict=True))
    big = _even_times3(works, [n for n in counts if n >= J], cap, sens, locality, machine_gpus)
    out = []
    for s in range(3):
        even = iter(big[s])
        out.append([math.inf if n <= 0 else lpt[n] if n < J else next(even) for n in counts])
    return out


def _even_times3(
    works: list[float], counts, cap: int, sens: float, locality: tuple, mg: int | None
) -> list[list[float]]:
    """:func:`~fairplace.formulations.phase_times.even_phase_times` at spreads 0, 1, 2 in one
    pass over ``counts`` (each >= J = len(works); [spread][count]), the same expressions: n_j =
    min(n // J, cap) for the job of work w_{n mod J}, a GPU more (at most cap) for the longest w_0
    when n mod J > 0, the slower of the two; T = w x L / n_j with L = 1 for one GPU (w x 1 = w),
    the job's own-machine locality L_0 for a share that fits a machine and is not the whole
    bundle (the same at every spread), else the spread's."""
    J, sens = len(works), float(sens)
    # job_locality(locality, s, sens) of the three spreads, its expression inline
    L0 = 1.0 + sens * (float(locality[0]) - 1.0)
    L1, L2 = 1.0 + sens * (float(locality[1]) - 1.0), 1.0 + sens * (float(locality[2]) - 1.0)
    o0: list[float] = []
    o1: list[float] = []
    o2: list[float] = []
    w0 = works[0] if works else 0.0
    for n in counts:
        nj, r = n // J, n % J
        if nj > cap:
            nj = cap
        w = works[r]
        if nj <= 1:
            a = b = c = w / nj
        elif mg is not None and nj <= mg and nj < n:
            a = b = c = w * L0 / nj
        else:
            a, b, c = w * L0 / nj, w * L1 / nj, w * L2 / nj  # L_0 is spread 0's
        if r:
            nj = nj + 1 if nj < cap else cap
            if nj <= 1:
                x = y = z = w0 / nj
            elif mg is not None and nj <= mg and nj < n:
                x = y = z = w0 * L0 / nj
            else:
                x, y, z = w0 * L0 / nj, w0 * L1 / nj, w0 * L2 / nj
            a, b, c = x if x > a else a, y if y > b else b, z if z > c else c  # max(v, x)
        o0.append(a)
        o1.append(b)
        o2.append(c)
    return [o0, o1, o2]


def _later_rows(
    opt: SuccessiveHalving, model: FTFModel, later: tuple, hi: int
) -> list[list[list[float]]]:
    """[spread][later phase][count 0..hi or more]: :func:`identical_phase_times` of each later
    phase, from the grids the app's optimisers share (``future_memo``; :func:`t_shared_counts`'
    keys), kept there as Python lists too (one entry for the three spreads)."""
    tm, sens = opt._future_job
    loc, mg = tuple(model.locality), model.machine_gpus

    def grid(s: int, ns) -> np.ndarray:
        ks, iters, ds = (np.array(c) for c in zip(*later, strict=True))
        return identical_phase_times(ks, iters * tm, sens, ns, ds, s, loc, mg)

    shared = opt.future_memo
    if shared is None:
        return [grid(s, range(hi + 1)).tolist() for s in range(3)]
    key = ("lists", later, tm, sens, loc, mg)
    out = shared.get(key)
    if out is None or len(out[0][0]) <= hi:
        grids = []
        for s in range(3):
            fkey = (later, tm, sens, s, loc, mg)
            have = shared.get(fkey)
            if have is None or have.shape[1] <= hi:
                have = shared[fkey] = grid(s, range(hi + 1))
            grids.append(have)
        width = min(g.shape[1] for g in grids)
        out = shared[key] = [g[:, :width].tolist() for g in grids]
    return out


def spread_times(model: FTFModel, counts: list[int]) -> list[list[float]]:
    """T_sh at max V = 1 for each GPU count of ``counts`` (>= 0) at spread 0, 1, 2
    ([spread][count]): elapsed + every remaining phase's time, phase by phase in the order
    :func:`~fairplace.formulations.ftf.t_shared` sums them (the numbers of
    :func:`t_shared_counts` at each spread), the three spreads in one pass over the phases."""
    opt = model.optimizer
    memo = getattr(opt, "phase_memo", None)
    loc, split, mg = tuple(model.locality), model.split, model.machine_gpus
    priced, later = _plan(model, memo)
    e = float(model.elapsed)
    out = [[e] * len(counts) for _ in range(3)]
    for p, d in priced:  # phase by phase, in t_shared's order
        rows = _priced_rows(opt, memo, p, counts, d, loc, split, mg)
        out = [
            [a + x for a, x in zip(total, row, strict=True)]
            for total, row in zip(out, rows, strict=True)
        ]
    if later and isinstance(opt, SuccessiveHalving):  # later phases: successive halving's
        hi = max(counts, default=0)
        lo = counts[0] if counts else 0
        run = counts == list(range(lo, lo + len(counts)))  # a row's counts: a slice
        for s, rows in enumerate(_later_rows(opt, model, later, hi)):
            total = out[s]
            for row in rows:
                at = row[lo : lo + len(counts)] if run else [row[n] for n in counts]
                total = [a + x for a, x in zip(total, at, strict=True)]
            out[s] = total
    return out


def rho_grid(
    model: FTFModel, counts: Sequence[int], r_c: int, levels: Sequence[float] | np.ndarray
) -> np.ndarray:
    """rho[a, s, v] for ``counts[a]`` GPUs, spread s = 0, 1, 2 and max V = ``levels[v]``: T_id
    once, and T_sh = elapsed + V x (the phases' time at V = 1), since every job time is linear
    in max V (Eq. 1 / Eq. 2); the times at V = 1 from :func:`spread_times`."""
    ideal = model.ideal(r_c)
    x0, x1, x2 = spread_times(model, [max(int(n), 0) for n in counts])  # n <= 0: the same times
    return rho_of_times(model.elapsed, np.array([x0, x1, x2]), ideal, levels)


def rho_of_times(
    elapsed: float, x: np.ndarray, ideal: float, levels: Sequence[float] | np.ndarray
) -> np.ndarray:
    """rho[a, s, v] from T_sh at V = 1 per spread and count (``x``: (3, counts); its spread 1 row
    is replaced where spreads 0 and 2 agree, so pass a copy to keep it): T_sh = elapsed + V x
    (T_sh(V = 1) - elapsed), divided by T_id = ``ideal``."""
    lv = np.asarray(levels, float)
    # times are monotone in the spread: equal at 0 and 2 -> taken equal at 1 too
    np.copyto(x[1], x[0], where=x[0] == x[2])
    x = x.T
    if math.isfinite(elapsed) and math.isfinite(ideal):
        if lv.size == 1 and lv[0] == 1.0:  # one level V = 1: 1 x (T_sh - e) = T_sh - e, bitwise
            return ((elapsed + (x - elapsed)) / ideal)[:, :, None]
        if lv.size and lv.min() > 0:
            return (elapsed + lv[None, None, :] * (x - elapsed)[:, :, None]) / ideal
    with np.errstate(invalid="ignore"):  # a level 0 or an infinite elapsed or T_id: inf x 0, ...
        return (elapsed + lv[None, None, :] * (x - elapsed)[:, :, None]) / ideal
