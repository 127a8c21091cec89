"""The app side of THEMIS in the driver (:mod:`fairplace.sim.themis`): how an app's GPUs are split
among its jobs (:class:`AppScheduler`: the hyper-parameter app scheduler's even split, §4.3.3),
with the pieces it shares with the AGENTs (:mod:`.agents`: how an app describes itself to the
ARBITER): the running jobs of a decision, N_avg (:class:`StepAverage`).
"""

from __future__ import annotations

import bisect
from itertools import repeat
from operator import is_

import numpy as np

from ..protocols import SchedView
from .machine_pool import MachinePool
from .params import THEMIS_APP_SPLIT


def _groups_of(keys: np.ndarray, values: np.ndarray) -> dict[int, np.ndarray]:
    """{key: the values with that key, in their order} (one stable sort)."""
    if not keys.size:
        return {}
    order = keys.argsort(kind="stable")
    k, v = keys[order], values[order]
    starts = [0, *((k[1:] != k[:-1]).nonzero()[0] + 1).tolist()]
    ends = starts[1:] + [k.size]
    first = k[starts].tolist()
    return {g: v[a:b] for g, a, b in zip(first, starts, ends, strict=True)}


_NO_PHASE = np.iinfo(np.int64).max  # above every phase: the minimum of no job


def running_jobs(view: SchedView, w) -> dict[int, np.ndarray]:
    """{app index: its active jobs of its current (lowest active) phase, in ``view.active``
    order}: the jobs an app runs now, for the agents and the app scheduler of one decision."""
    act = view.active
    app = w.app[act]
    cur = np.full(len(w.app_ids), _NO_PHASE)
    np.minimum.at(cur, app, w.phase[act])
    now = w.phase[act] == cur[app]
    return _groups_of(app[now], act[now])


def even_split(n: int, caps: np.ndarray, order: np.ndarray) -> np.ndarray:
    """THEMIS' even split of ``n`` GPUs over jobs with demands ``caps``, water-filled: every job gets
    the same count up to its demand, what a capped job cannot take goes to the others, and a
    remainder of one GPU each goes to the jobs first in ``order`` (most work left). Uses
    min(n, sum(caps)) GPUs."""
    cap = caps.tolist()  # a few tens of jobs: Python ints beat NumPy calls per round
    target = [0] * len(cap)
    left = int(n)
    open_ = [k for k, c in enumerate(cap) if c > 0]  # jobs that can take more, in job order
    while left > 0 and open_:
        share = left // len(open_)
        if share == 0:
            can = set(open_)
            for k in [k for k in order.tolist() if k in can][:left]:
                target[k] += 1
            break
        for k in open_:
            add = min(share, cap[k] - target[k])
            target[k] += add
            left -= add
        open_ = [k for k in open_ if target[k] < cap[k]]
    return np.array(target, np.int64)


class StepAverage:
    """N_avg bookkeeping: the number of active apps as a step function of time, with its running
    integral, so that the time-weighted mean over [t_start, t_now] (``ftf.n_avg``) costs two
    binary searches instead of a pass over every past decision."""

    def __init__(self):
        self.t: list[float] = []
        self.n: list[int] = []
        self.area: list[float] = []
        self._now: tuple | None = None  # ((t_now, points, last count), integral up to t_now)
        self._before: dict[float, float] = {}  # integral up to x < the last point (fixed)

    def append(self, t: float, n: int) -> None:
        if self.t and t == self.t[-1]:  # a later count at the same time replaces the earlier one
            self.n[-1] = n
            return
        a = self.area[-1] + self.n[-1] * (t - self.t[-1]) if self.t else 0.0
        self.t.append(t)
        self.n.append(n)
        self.area.append(a)

    def _integral(self, x: float) -> float:
        k = max(bisect.bisect_right(self.t, x) - 1, 0)
        return self.area[k] + self.n[k] * (x - self.t[k])

    def mean(self, t_start: float, t_now: float) -> float:
        """Time-weighted mean over [t_start, t_now] (the value at t_start for an empty window)."""
        if not self.t:
            return 1.0
        lo = max(t_start, self.t[0])
        if t_now <= lo:
            return float(self.n[max(bisect.bisect_right(self.t, t_start) - 1, 0)])
        key = (t_now, len(self.t), self.n[-1])  # every app of a decision asks at the same t_now
        memo = self._now
        if memo is None or memo[0] != key:
            memo = self._now = (key, self._integral(t_now))
        start = self._before.get(lo)
        if start is None:
            start = self._integral(lo)
            if lo < self.t[-1]:  # later points cannot move it: kept (an app's t_start)
                self._before[lo] = start
        return (memo[1] - start) / (t_now - lo)


class AppScheduler:
    """THEMIS' app scheduler (§4.2.2 step 5, Fig. 7's API: the app splits the GPUs it holds among its
    running jobs), ``app_split``:

    * ``restart-aware`` (default): a move or a resume costs ``move_cost`` s (the run's checkpoint +
      restart), so the split moves as few jobs as it can:

      1. every running job keeps the GPUs it holds when the app still holds all of them (a lease
         renewal at the same GPUs moves no job);
      2. the app's other GPUs go first to its running jobs that lost GPUs with a lease (they restart
         anyway), each back to its width, then to its waiting jobs, water-filled as the even split
         does (:func:`even_split`: the same count each up to its demand N_j, the remainder to the
         jobs with most work left; best-fit by machine as :class:`~.machine_pool.MachinePool`), so that a
         phase's jobs start together rather than in waves of whole jobs;
      3. a running job below N_j grows k -> k' only when the time it saves over its remaining
         serial work W (iterations left x t_iter x N_j), W / k - W / k', exceeds the move cost
         (0 for a job that restarts at this decision anyway): a short job near its end is never
         grown. The locality slowdown is not priced (the app bids for what this rule would use:
         :meth:`usable`); a growing job takes GPUs on its own machines first;
      4. an app that lost GPUs sheds whole jobs: the jobs that lost GPUs are restored whole, most
         attained service (GPU-seconds) first, and those that no longer fit stop (the least
         attained: the least progress at stake) rather than every job shrinking; a shed job is a
         waiting job for rule 2, so only GPUs no whole job can take shrink one job.

      GPUs no rule gives a job stay with the app (the driver's ``_reclaim`` gives back what exceeds
      :meth:`usable`).
    * ``even``: the even split of each app's GPUs among its running jobs (:func:`even_split`,
      recomputed for all running jobs whenever the app's GPUs or jobs change), the control.
    """

    def __init__(
        self, machine_of: np.ndarray, app_split: str = "restart-aware", move_cost: float = 45.0
    ):
        self.machine_of = machine_of.tolist()  # per-GPU look-ups of best_fit, without NumPy
        #: per app: (its GPUs, their bytes, its running jobs, their bytes, the split they got)
        self.memo: dict = {}
        self.owned: tuple = (None, {})  # the last owner array and its GPUs per app
        self.last: tuple = (None, None, {})  # the last split's GPUs per app, running jobs, output
        self.kept_running: tuple = (None, b"", {})  # (workload, active jobs' bytes, running_jobs)
        #: (running dict, workload, its jobs: array, list, their apps, N_j, t_iter)
        self.kept_jobs: tuple = (None, None)
        self.app_split = THEMIS_APP_SPLIT.check(app_split)
        self.move_cost = float(move_cost)

    def running(self, view: SchedView, w) -> dict:
        """:func:`running_jobs` of the decision, the same dict (read only) while the active jobs
        are those of the previous decision (the running jobs depend on them alone)."""
        key = view.active.tobytes()
        last_w, last_key, last = self.kept_running
        if last_w is w and last_key == key:
            return last
        by_app = running_jobs(view, w)
        for jobs in by_app.values():
            jobs.flags.writeable = False
        self.kept_running = (w, key, by_app)
        return by_app

    def _jobs(self, running: dict, w) -> tuple:
        """The jobs of ``running`` in one array (app after app), as a list, their apps, N_j and
        t_iter: kept while ``running`` is the same dict (:meth:`running`)."""
        kept = self.kept_jobs
        if kept[0] is running and kept[1] is w:
            return kept[2:]
        jobs = np.concatenate(list(running.values()))
        kept = (running, w, jobs, jobs.tolist(), w.app[jobs], w.demand[jobs], w.t_iter[jobs])
        self.kept_jobs = kept
        return kept[2:]

    def usable(self, running: dict, view: SchedView, w, alloc) -> np.ndarray:
        """GPUs each app (by index) can use now: the demand of its running phase's jobs (even), or
        (restart-aware) N_j for a waiting job or one that rule 3 would grow to N_j, else the k_j
        a running job holds."""
        out = np.zeros(len(w.app_ids), np.int64)
        if not running:
            return out
        jobs, jobs_l, app, cap, t_iter = self._jobs(running, w)
        if self.app_split == "even":
            use = cap
        else:
            arrays = getattr(alloc, "arrays", alloc)
            n = len(jobs_l)
            k = np.fromiter(map(len, map(arrays.get, jobs_l, repeat((), n))), np.int64, n)
            work = view.remaining[jobs] * t_iter * cap
            grows = work / np.maximum(k, 1) - work / cap > self.move_cost
            use = np.where((k == 0) | grows, cap, np.minimum(k, cap))
        return np.bincount(app, use, out.size).astype(np.int64)  # sums of small ints

    def split(self, owner: np.ndarray, view: SchedView, w, alloc, running=None) -> dict:
        """Each app's GPUs split among its running jobs (``app_split``: class doc). An app whose
        GPUs and running jobs are those of the previous decision, each job still on what the split
        gave it, keeps that split (the split of the same input is the same: the remainder stays
        where it is), so only apps that changed are split again. ``running``: the decision's
        :func:`running_jobs`."""
        out: dict[int, np.ndarray] = {}
        by_app = self.running(view, w) if running is None else running
        last_owner, gpus_of = self.owned
        if last_owner is None or not np.array_equal(last_owner, owner):
            owned = (owner >= 0).nonzero()[0]
            gpus_of = _groups_of(owner[owned], owned)
            self.owned = (owner.copy(), gpus_of)
        held = getattr(alloc, "arrays", None)
        last_gpus, last_run, last_out = self.last
        if last_gpus is gpus_of and last_run is by_app and held is not None:
            if all(map(is_, map(held.get, last_out), last_out.values())):
                return dict(last_out)  # no app's GPUs, jobs or holdings changed: every split kept
        how = self._split_kept if self.app_split != "even" else self._split_app
        memo, before = {}, self.memo
        for a, gpus in gpus_of.items():
            run = by_app.get(a)
            if run is None:
                run = np.zeros(0, np.int64)
            last = before.get(a)
            if last is None:
                gb, rb = gpus.tobytes(), run.tobytes()
            else:  # the same arrays (kept GPUs per app, kept running jobs): the same bytes
                gb = last[1] if last[0] is gpus else gpus.tobytes()
                rb = last[3] if last[2] is run else run.tobytes()
            if last and last[1] == gb and last[3] == rb and _kept(held, alloc, last[4]):
                split = last[4]
            else:
                split = how(gpus, run, view, w, alloc)
            memo[a] = (gpus, gb, run, rb, split)
            out.update(split)
        self.memo, self.last = memo, (gpus_of, by_app, out)
        return dict(out)

    def _split_app(self, gpus: np.ndarray, run: np.ndarray, view: SchedView, w, alloc) -> dict:
        """One app's even split: {job: sorted GPU indices} for its jobs that get GPUs."""
        out = {}
        n = gpus.size
        work = view.remaining[run] * w.t_iter[run]
        mine = set(gpus.tolist())
        run_l = run.tolist()
        had = [alloc.get(j, ()) for j in run_l]
        cur = np.array([len(mine.intersection(h)) for h in had], np.int64)  # distinct GPUs
        # the remainder stays with the jobs holding it (a lease renewal moves no job), then
        # goes to the jobs with most work left
        target = even_split(n, w.demand[run], np.lexsort((run, -work, -cur)))
        want = target.tolist()
        pool = set(mine)
        for k, j in enumerate(run_l):
            keep = [g for g in had[k] if g in pool][: want[k]]
            out[j] = keep
            pool.difference_update(keep)
        free = MachinePool(pool, self.machine_of)  # best_fit on what the jobs kept left
        for k in np.argsort(-(target - [len(out[j]) for j in run_l]), kind="stable").tolist():
            j = run_l[k]
            need = want[k] - len(out[j])
            if need > 0:
                out[j] = out[j] + free.take(need)
        return _arrays(run_l, [out[j] for j in run_l], had, alloc)

    def _split_kept(self, gpus: np.ndarray, run: np.ndarray, view: SchedView, w, alloc) -> dict:
        """One app's restart-aware split (rules 1-4 of the class doc): {job: sorted GPU indices}."""
        mine = set(gpus.tolist())
        run_l, cap = run.tolist(), w.demand[run].tolist()
        had = _held_lists(alloc, run_l)
        width = list(map(min, map(len, had), cap))
        out: list[list[int]] = [[] for _ in run_l]
        pool, hit, waiting, moved = set(mine), [], [], set()
        for k, h in enumerate(had):  # rule 1: a job the app still holds all the GPUs of stays
            if not h:
                waiting.append(k)
            elif mine.issuperset(h):
                out[k] = list(h)
                pool.difference_update(h)
            else:
                hit.append(k)
        left = len(pool)
        if hit:
            att = view.attained[run].tolist()
            for k in sorted(hit, key=lambda k: (-att[k], run_l[k])):  # rule 4: whole, most attained
                if width[k] <= left:
                    out[k] = [g for g in had[k] if g in pool][: width[k]]
                    pool.difference_update(out[k])
                    left -= width[k]
                    moved.add(k)
                else:
                    waiting.append(k)  # shed: it waits (rule 2 may give it what no whole job takes)
        if not pool:  # every GPU on a job (restored jobs hold their width): rules 2, 3 give none
            return _arrays(run_l, out, had, alloc)
        free = MachinePool(pool, self.machine_of)
        for k in sorted(moved):  # restored jobs back to their width
            if len(out[k]) < width[k]:
                out[k] += free.take_near(width[k] - len(out[k]), self._machines(out[k]))
        if left:  # rules 2 and 3 place what is left
            self._place_left(left, out, waiting, moved, free, run, run_l, cap, view, w)
        return _arrays(run_l, out, had, alloc)

    def _place_left(self, left, out, waiting, moved, free, run, run_l, cap, view, w) -> None:
        """Rules 2 (the waiting jobs, water-filled) and 3 (growing running jobs) on the ``left``
        GPUs of ``free`` (``out``, ``moved``: changed in place)."""
        work = (view.remaining[run] * w.t_iter[run]).tolist()
        if waiting:
            wl = sorted(waiting, key=lambda k: (-work[k], run_l[k]))  # rule 2: water-filled
            share = even_split(left, np.array([cap[k] for k in wl], np.int64), np.arange(len(wl)))
            for k, n in zip(wl, share.tolist(), strict=True):
                if n:
                    out[k] = free.take(n)
                    left -= n
                    moved.add(k)
        if not left:
            return
        serial = [x * c for x, c in zip(work, cap, strict=True)]  # W: iters left x t_iter x N_j
        grow = [k for k in range(len(run_l)) if 0 < len(out[k]) < cap[k]]
        for k in sorted(grow, key=lambda k: (-serial[k], run_l[k])):  # rule 3
            if not left:
                break
            n0 = len(out[k])
            n1 = min(cap[k], n0 + left)
            if serial[k] / n0 - serial[k] / n1 > (0.0 if k in moved else self.move_cost):
                out[k] += free.take_near(n1 - n0, self._machines(out[k]))
                left -= n1 - n0

    def _machines(self, gs: list) -> set:
        return {self.machine_of[g] for g in gs}


def _arrays(run_l: list, out: list, had: list, alloc) -> dict:
    """{job: read-only sorted GPU array} of the jobs given GPUs (``out``, by position); a job that
    keeps exactly its GPUs keeps the driver's array."""
    arrays = getattr(alloc, "arrays", {})
    split = {}
    for k, j in enumerate(run_l):
        g = out[k]
        if not g:
            continue
        a = arrays.get(j)
        if a is None or a.flags.writeable or g != had[k] or g != sorted(g):
            a = np.asarray(sorted(g), np.int64)
            a.flags.writeable = False  # read-only: the driver's contract converts it once
        split[j] = a
    return split


def _kept(held, alloc, split: dict) -> bool:
    """Whether every job of a previous ``split`` still holds what it gave. The driver's holdings
    (``HeldGPUs``; ``held``: its arrays) keep the arrays the split returned, so the same array
    object answers without a copy; otherwise the GPUs are compared (the split's arrays are read
    only: they still hold what it gave)."""
    if held is not None and all(map(is_, map(held.get, split), split.values())):
        return True
    return all(tuple(alloc.get(j, ())) == tuple(g.tolist()) for j, g in split.items())


def _held_lists(alloc, jobs: list) -> list:
    """[GPUs job j holds, as a list (empty: none) for j in ``jobs``], from the driver's arrays
    where it has them."""
    arrays = getattr(alloc, "arrays", None)
    if arrays is None:
        return [alloc.get(j, []) for j in jobs]
    get = arrays.get
    return [[] if (a := get(j)) is None else a.tolist() for j in jobs]
