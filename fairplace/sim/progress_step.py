"""The driver's step between two decisions: progress from one decision to the next with exact
completions, finished jobs leave the active set (a finished phase releases the next one), idle GPUs
while released jobs wait are accounted (:mod:`.accounting` holds the arithmetic)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fairplace.solvers.placement.allocation import Allocation

from . import accounting as acc
from .contract import Contract
from .driver_config import DriverConfig
from .run_state import RunState
from .workload import Workload

__all__ = ["ProgressStep"]


class ProgressStep:
    """:meth:`_advance` of :class:`.engine.Driver` (a base class of it), with what it calls."""

    w: Workload
    cfg: DriverConfig
    G: int
    R: float
    contract: Contract
    progress: Callable[[int], None] | None

    def _advance(self, s: RunState, t_next: float) -> None:
        """Progress from ``s.t`` to ``t_next`` with exact completions; finished jobs leave (a
        finished phase releases the next one), idle GPUs while jobs wait are accounted."""
        w, cfg, tr, run, t = self.w, self.cfg, s.tr, s.run, s.t
        j_run = run.idx
        k_run, busy0 = run.k[j_run], run.busy
        unmet0 = float(w.demand[s.active].sum() - busy0)  # released jobs' demand not held
        fin, prog, stop = acc.advance(
            j_run, k_run, t, t_next, s.rem, s.rate, s.inv_s, s.ready, s.attained, tr,
            cfg.stamping, self.R,
        )  # fmt: skip
        acc.isolated(tr, w, self.G, max(s.n_apps, 1), s.app_dmax, j_run, prog)
        self.contract.step(
            bool(np.count_nonzero(fin) or np.count_nonzero(prog)), t, t_next, int(s.active.size)
        )
        if fin.any():
            s.fixed = False
            self._finish(s, run.finish(fin))
        tr.idle_waiting_gpu_seconds += self._idle_waiting(
            t, t_next, busy0, unmet0, j_run, k_run, fin, stop, s.pending
        )

    def _finish(self, s: RunState, finished: list[int]) -> None:
        """Jobs ``finished`` leave the active set; the last job of a phase to finish releases the
        next (in finishing order: several may finish between two decisions)."""
        w, tr = self.w, s.tr
        f = np.asarray(finished, np.int64)
        if f.size > 1:  # in finishing order (time, then index)
            f = f[np.lexsort((f, tr.finish[f]))]
        finished = f.tolist()
        if not s.held_own:  # (the record, or what a policy was shown: change a copy)
            held = s.held_ids  # (a kernel's allocation: its dict, copied in one pass)
            s.held_ids, s.held_own = dict(held.dict if type(held) is Allocation else held), True
        held = s.held_ids
        for i in map(w.ids.__getitem__, finished):
            held.pop(i, None)
        for j in finished:
            del s.jobs[j]
        s.head_txt[f] = None
        s.is_active[f] = False
        apps = w.app[f]
        np.subtract.at(s.app_active, apps, 1)
        gone = apps[s.app_active[apps] == 0]  # apps left without an active job (distinct: a set)
        if gone.size:
            s.n_apps -= len(set(gone.tolist()))
        groups = s.gid[f]
        np.subtract.at(s.left, groups, 1)
        if s.nxt:  # the last job of a phase to finish releases the next phase
            last = dict(zip(groups.tolist(), finished, strict=True))
            for g, j in last.items():
                if s.left[g] == 0 and g in s.nxt:
                    for k in s.nxt[g]:
                        s.release[k] = max(w.submit[k], tr.finish[j])
                        s.wait[k] = min(s.waiting_since[k], s.release[k])
                        s.pending.push(float(s.release[k]), int(k))
        n_fin = int(s.tracked[f].sum())
        s.n_done += n_fin
        s.active = s.active[s.is_active[s.active]]  # (sorted, as np.flatnonzero(is_active))
        if self.progress is not None and n_fin:
            self.progress(n_fin)

    def _idle_waiting(self, t, t1, busy0, unmet0, j_run, k_run, fin, stop, pending) -> float:
        """GPU-seconds in [t, t1] of idle GPUs while released jobs want more
        (:func:`accounting.idle_while_waiting`); the releases before t1 are read, not removed
        (completions inside [t, t1] may have released a next phase)."""
        at, early = pending.before(t1)
        dem = self.w.demand[early].astype(float)
        kf = k_run[fin].astype(float)
        return acc.idle_while_waiting(
            t, t1, float(self.G - busy0), unmet0, stop[fin], kf,
            self.w.demand[j_run[fin]] - kf, at, dem,
        )  # fmt: skip
