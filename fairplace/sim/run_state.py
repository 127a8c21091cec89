"""The state of one simulation run between the driver's steps (:class:`fairplace.sim.engine.Driver`):
the clock, the jobs' progress and rates, the release heap, the active set and the incremental
decision memory. The steps read and update it; nothing here decides anything."""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .accounting import Timeline
from .running import Running
from .workload import Workload


@dataclass(eq=False)
class RunState:
    """Arrays over the workload's jobs (``rem``: iterations left; ``rate``: iterations per second;
    ``inv_s``: 1 / slowdown; ``ready``: when a job's checkpoint + restart is paid; ``attained``:
    GPU-seconds; ``waiting_since``: when a job last stopped holding GPUs), the release heap
    ``pending`` of (release, job), the active jobs (``is_active``, ``active``, per app
    ``app_active``, ``n_apps``), the phase groups of successive halving (``gid``, ``left``,
    ``nxt``), the previous queue / decision / recorded allocation and whether the last decision
    changed nothing (``fixed``)."""

    tr: Timeline
    run: Running
    release: np.ndarray
    rem: np.ndarray
    rate: np.ndarray
    inv_s: np.ndarray
    ready: np.ndarray
    attained: np.ndarray
    started: np.ndarray
    waiting_since: np.ndarray
    app_dmax: np.ndarray
    gid: np.ndarray
    left: np.ndarray
    nxt: dict
    pending: list
    is_active: np.ndarray
    app_active: np.ndarray
    tracked: np.ndarray
    jobs: list
    t0: float
    t: float
    active: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    n_apps: int = 0  # apps with an active job
    n_done: int = 0  # tracked jobs finished
    n_tracked: int = 0  # the run ends when every tracked job has finished
    decisions: int = 0
    fixed: bool = False
    last_order: np.ndarray | None = None  # the previous queue (job indices)
    last_dec: object = None  # the previous decision, from which a resumable policy continues
    last_rec: tuple = (None, "{}")  # the previous recorded allocation and its JSON
    #: per job of the last recorded allocation: (its GPUs, its JSON item)
    json_items: dict = field(default_factory=dict)

    def allocation_json(self, record: Mapping) -> str:
        """``json.dumps(record, separators=(",", ":"), default=int)``, the same text, from each
        job's item encoded once while its GPUs stay the same (a decision moves a few of the
        running jobs); the previous text again for the previous record (the driver never changes a
        record it has recorded)."""
        last = self.last_rec[0]
        if record is last or (record == last and list(record) == list(last)):  # keys, order
            return self.last_rec[1]
        items, kept, out = self.json_items, {}, []
        for k, v in record.items():
            gpus = tuple(v)  # by value: a list changed in place is encoded again
            have = items.get(k)
            if have is None or have[0] != gpus:
                have = (gpus, json.dumps({k: v}, separators=(",", ":"), default=int)[1:-1])
            kept[k] = have
            out.append(have[1])
        self.json_items = kept  # the running jobs' items only
        self.last_rec = (record, "{" + ",".join(out) + "}")
        return self.last_rec[1]

    @classmethod
    def start(cls, w: Workload, groups, grid_origin: str) -> RunState:
        """The state before the first decision: nothing released, nothing running; ``groups`` =
        (gid, left, nxt, blocked) of the driver's phase groups (a blocked job waits for its
        previous phase)."""
        gid, left, nxt, blocked = groups
        J = len(w)
        release = np.where(blocked, np.inf, w.submit)
        pending = [(float(r), j) for j, r in enumerate(release.tolist()) if r < math.inf]
        heapq.heapify(pending)
        t0 = 0.0 if grid_origin == "zero" else float(np.min(release))
        tr = Timeline.empty(release, len(w.app_ids))
        tr.t0 = t0
        s = cls(
            tr=tr,
            run=Running(J),
            release=release,
            rem=w.iters.astype(float).copy(),
            rate=np.zeros(J),
            inv_s=np.zeros(J),
            ready=np.zeros(J),
            attained=np.zeros(J),
            started=np.zeros(J, bool),
            waiting_since=release.copy(),
            app_dmax=w.app_demand_max().astype(float),
            gid=gid,
            left=left,
            nxt=nxt,
            pending=pending,
            is_active=np.zeros(J, bool),
            app_active=np.zeros(len(w.app_ids), np.int64),
            tracked=np.ones(J, bool) if w.tracked is None else np.asarray(w.tracked, bool),
            jobs=w.jobs(),
            t0=t0,
            t=t0,
        )
        s.n_tracked = int(s.tracked.sum())
        return s

    def release_due(self, app: np.ndarray) -> None:
        """Jobs released by now become active (``app``: each job's app index)."""
        pending, t = self.pending, self.t
        if not (pending and pending[0][0] <= t):
            return
        while pending and pending[0][0] <= t:
            j = heapq.heappop(pending)[1]
            self.is_active[j] = True
            a = app[j]
            self.n_apps += int(self.app_active[a] == 0)
            self.app_active[a] += 1
        self.active = np.flatnonzero(self.is_active)
