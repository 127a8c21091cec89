"""An app's AGENT pricing from its numbers alone (the THEMIS simulator's bidders): its running
phase's works (w_j = iters left x serial seconds per iteration, longest first), its later
successive-halving phases (k_p copies of the model job), T_id and the clock — no agent
description, optimiser or FTF model per decision.

It gives the numbers the object path gives for the same app under the ``even`` split with one
locality sensitivity (s_j = 1) and the model job's sensitivity:

* :meth:`RunningApp.table` — the rho table of ``agents.rho_table`` (``ftf_counts.rho_grid``):
  T_sh(n, s) at V = 1 = elapsed + T_run(n, s) + sum_p T_p(n, s), added phase by phase in
  ``spread_times``' order (the running
  phase's row by ``_lpt_makespans`` / ``_even_times3``, the later phases' (kept per app: they do
  not move with its progress) by ``identical_phase_times``: the functions ``spread_times``
  reads);
* :meth:`RunningApp.t_shared` / :meth:`RunningApp.rho` — ``FTFModel.t_shared`` / ``FTFModel.rho``
  (:func:`~fairplace.formulations.ftf.running_t_shared`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from fairplace.core.errors import OptionError

from .ftf import running_t_shared
from .ftf_counts import _even_times3, _lpt_makespans, identical_phase_times, rho_of_times
from .phase_times import even_phase_times, later_times


def later_spec(phases: tuple, current: int, d_max: int) -> tuple[tuple[int, float, int], ...]:
    """(k_p, I_p, d_p) of every phase after ``current`` (``ftf_counts._plan``'s later phases:
    d_p the phase's GPUs per job, else ``d_max``)."""
    return tuple(
        (int(p[0]), float(p[1]), int(p[2]) if len(p) >= 3 else int(d_max))
        for p in phases[current + 1 :]
    )


def running_rows(
    works: list[float], counts: range, d_max: int, locality: tuple, machine_gpus: int | None,
    lpt: dict | None = None,
) -> np.ndarray:  # fmt: skip
    """(3, len(counts)): the running phase's time at V = 1 per spread and GPU count (``counts``:
    a range of step 1): inf on no GPU, the LPT makespan of 0 < n < J GPUs (one GPU per job: every
    spread; kept in ``lpt`` by count while the works do not move), the even split of n >= J GPUs
    at most max(1, d_max) GPUs per job (``ftf_counts._even_times3``); 0 without jobs
    (``phase_time``). The counts fall in three runs, each filled as a slice."""
    size = len(counts)
    out = np.empty((3, size))
    if not works:
        out[:] = 0.0
        return out
    J, lo = len(works), counts.start
    a = min(max(1 - lo, 0), size)  # counts[:a] <= 0
    b = min(max(J - lo, a), size)  # counts[a:b] in 1..J - 1, counts[b:] >= J
    cap = max(1, int(d_max))
    if not b:  # every count >= J (a bidder holding a GPU per job): the even split alone
        return np.array(_even_times3(works, counts, cap, 1.0, locality, machine_gpus))
    out[:, :a] = math.inf
    if b > a:
        lpt = {} if lpt is None else lpt
        few = range(lo + a, lo + b)
        miss = [n for n in few if n not in lpt]
        if miss:
            lpt.update(zip(miss, _lpt_makespans(works, miss).tolist(), strict=True))
        out[:, a:b] = [lpt[n] for n in few]
    if size > b:
        out[:, b:] = _even_times3(works, range(lo + b, lo + size), cap, 1.0, locality, machine_gpus)
    return out


def later_grid(
    later: tuple, model_job: tuple[float, float], counts: range, locality: tuple,
    machine_gpus: int | None,
) -> np.ndarray:  # fmt: skip
    """(phases, 3, len(counts)): :func:`~fairplace.formulations.ftf_counts.identical_phase_times`
    of each later phase (k_p copies of the model job (t_m, s_m), work I_p x t_m) per spread."""
    tm, sens = model_job
    ks, iters, ds = (np.array(c) for c in zip(*later, strict=True))
    return np.stack(
        [identical_phase_times(ks, iters * tm, sens, counts, ds, s, locality, machine_gpus)
         for s in range(3)],
        axis=1,
    )  # fmt: skip


def _grown(memo: dict, key, hi: int, make) -> np.ndarray:
    """``memo[key]``, a grid over counts 0..width - 1 on its last axis, grown to cover ``hi``
    (``make(range)``: the grid's columns over a range of counts, each count alone)."""
    have = memo.get(key)
    if have is None or have.shape[-1] <= hi:
        start = 0 if have is None else have.shape[-1]
        new = make(range(start, max(hi + 1, 2 * start)))
        have = memo[key] = new if have is None else np.concatenate([have, new], axis=-1)
    return have


class RunningApp(NamedTuple):
    """An app as its AGENT prices it from numbers (module docstring)."""

    elapsed: float  # t_now - t_start
    works: list[float]  # the running phase's works, longest first
    d_max: int  # GPUs per job of the running phase
    phases: tuple  # every phase ((k, iterations, GPUs per job), ...); () for one phase
    current: int  # the running phase's index in ``phases``
    model_job: tuple[float, float]  # (t_m, s_m) of the later phases' jobs
    ideal: float  # T_id
    r_c: int  # R_C of T_id: the cluster's GPUs
    locality: tuple[float, float, float]
    machine_gpus: int | None
    demand_max: int  # the app's demand cap (its rho table's n_max)
    lpt: dict  # LPT makespans of the running phase by count (kept while its works do not move)
    future: dict | None  # the app's later-phase memo (one per app: its phases, locality fixed)

    def times(self, lo: int, n: int) -> np.ndarray:
        """(3, n): T_sh at V = 1 for counts lo..lo + n - 1 at spreads 0, 1, 2 (``spread_times``)."""
        hi = lo + n - 1
        loc, mg = self.locality, self.machine_gpus
        run = running_rows(self.works, range(lo, lo + n), self.d_max, loc, mg, self.lpt)
        x = self.elapsed + run
        if self.phases:
            memo = self.future if self.future is not None else {}
            # the app's memo: its phases and locality are fixed, so the running phase and d_max
            # name its later phases (``later_spec``)
            key = ("grid", self.current, self.d_max, self.model_job, mg)
            grid = memo.get(key)
            if grid is None or grid.shape[-1] <= hi:
                later = later_spec(self.phases, self.current, self.d_max)
                if not later:
                    return x
                mj = self.model_job
                grid = _grown(memo, key, hi, lambda ns: later_grid(later, mj, ns, loc, mg))
            for row in grid[:, :, lo : lo + n]:  # phase by phase, in t_shared's order
                x += row
        return x

    def table(self, lo: int, n: int, levels: np.ndarray) -> np.ndarray:
        """rho[a, s, v] for lo + a GPUs, spread s, max V ``levels[v]``: ``rho_grid`` of the
        app's FTF model over counts lo..lo + n - 1."""
        return rho_of_times(self.elapsed, self.times(lo, n), self.ideal, levels)

    def later(self, n: int, spread_level: int, vmax: float) -> list[float]:
        """:func:`~fairplace.formulations.phase_times.later_times` of n GPUs (spread, max V), kept
        in the app's ``future`` memo under a key without its phases and locality (fixed per app)."""
        memo = self.future
        if memo is None:
            return later_times(self.phases, self.current, self.model_job, n, self.d_max,
                               spread_level, vmax, self.locality, self.machine_gpus)  # fmt: skip
        key = ("later-n", self.current, self.model_job, n, self.d_max, spread_level, vmax,
               self.machine_gpus)  # fmt: skip
        out = memo.get(key)
        if out is None:
            out = memo[key] = later_times(self.phases, self.current, self.model_job, n,
                                          self.d_max, spread_level, vmax, self.locality,
                                          self.machine_gpus, memo)  # fmt: skip
        return out

    def t_shared(self, n: int, spread_level: int = 0, vmax: float = 1.0) -> float:
        """``FTFModel.t_shared`` (n GPUs, spread, max V): at V = 1 the running phase's LPT makespan
        of 0 < n < J GPUs read from (or kept in) ``lpt``, else its even split of n >= J
        (``even_phase_times``), the numbers
        :func:`~fairplace.formulations.ftf.running_t_shared` sums, summed as it sums them."""
        later = self.later(n, spread_level, vmax) if self.phases else ()
        works = self.works
        if vmax == 1.0 and 0 < n and works:
            if n < len(works):  # one GPU per job: no spread, no locality
                run = self.lpt.get(n)
                if run is None:
                    run = self.lpt[n] = _lpt_makespans(works, [n]).tolist()[0]
            else:  # works_phase_time's even split
                run = even_phase_times(works, [n], max(1, int(self.d_max)), 1.0, spread_level,
                                       self.locality, self.machine_gpus)[0]  # fmt: skip
            total = float(self.elapsed)
            total += float(run)
            for x in later:  # phase by phase, in order
                total += x
            return total
        return running_t_shared(self.elapsed, works, n, self.d_max, later, spread_level,
                                vmax, self.locality, self.machine_gpus)  # fmt: skip

    def rho(self, n: int, spread_level: int = 0, vmax: float = 1.0) -> float:
        """``FTFModel.rho`` (n GPUs, spread, max V) = T_sh / T_id."""
        if not self.ideal > 0:  # as FTFModel.rho
            raise OptionError("t_id", f"the ideal time T_id is {self.ideal!r}: no work")
        return self.t_shared(n, spread_level, vmax) / self.ideal
