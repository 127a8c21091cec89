"""The state of one simulation run between the driver's steps (:class:`fairplace.sim.engine.Driver`):
the clock, the jobs' progress and rates, the release heap, the active set and the incremental
decision memory. The steps read and update it; nothing here decides anything."""

from __future__ import annotations

import heapq
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import compress
from operator import is_not

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
    jobs: dict  # the active jobs' Job objects (made at release, dropped at finish)
    t0: float
    t: float
    active: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    n_apps: int = 0  # apps with an active job
    n_done: int = 0  # tracked jobs finished
    n_tracked: int = 0  # the run ends when every tracked job has finished
    decisions: int = 0
    place_seconds: float = 0.0  # wall seconds in the placement policy since the last recorded row
    fixed: bool = False
    last_order: np.ndarray | None = None  # the previous queue (job indices)
    last_dec: object = None  # the previous decision, from which a resumable policy continues
    last_rec: tuple = (None, "{}")  # the previous recorded allocation and its JSON
    #: per job of the recorded allocations: its GPUs, its JSON item and its key's JSON, as last encoded
    json_vals: dict = field(default_factory=dict)
    json_texts: dict = field(default_factory=dict)
    json_keys: dict = field(default_factory=dict)
    #: GPU tuples (a placement policy's) -> their JSON text, and job keys -> their JSON text + ":"
    json_gpus: dict = field(default_factory=dict)
    json_heads: dict = field(default_factory=dict)
    #: the holdings by job id (job id -> sorted tuple) after a placement policy's decision
    held_ids: dict = field(default_factory=dict)
    #: what the view shows as ``waiting_since`` (:meth:`waiting_view`), kept up to date in place
    wait: np.ndarray = field(default_factory=lambda: np.zeros(0))
    wait_at: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # set to the clock

    def waiting_view(self) -> np.ndarray:
        """``np.where(running, t, np.minimum(waiting_since, release))`` over every job, updated in
        place for the jobs running now or at the previous view only (O(running), not O(jobs));
        read only. A job's release or ``waiting_since`` changes only while it is not running (a
        released phase, a preemption: the job ran at the previous view), and the driver keeps
        ``wait`` in step for releases (:meth:`Driver._finish`)."""
        w, at = self.wait, self.wait_at
        if at.size:
            w[at] = np.minimum(self.waiting_since[at], self.release[at])
        at = self.run.idx
        w[at] = self.t
        self.wait_at = at
        out = w.view()
        out.flags.writeable = False
        return out

    def allocation_json(self, record: Mapping) -> str:
        """``json.dumps(record, separators=(",", ":"), default=int)``, the same text, from each
        job's item kept while its GPUs stay the same object (a decision moves some of the running
        jobs); the items of the others encoded together, by one ``json.dumps`` of their GPU lists;
        the previous text again for the previous record (the driver never changes a record, nor a
        list in it, once recorded). Items of jobs that left are dropped when they outnumber the
        record's."""
        last = self.last_rec[0]
        if record is last or (record == last and list(record) == list(last)):  # keys, order
            return self.last_rec[1]
        text = self._tuples_json(record)
        if text is not None:
            self.last_rec = (record, text)
            return text
        vals, texts, keys = self.json_vals, self.json_texts, self.json_keys
        # C-level passes: the jobs whose GPUs are not the object encoded last time
        stale = list(compress(record, map(is_not, record.values(), map(vals.get, record))))
        if stale:
            new = list(map(record.__getitem__, stale))
            ktext = [keys.get(k) or _key_text(k) for k in stale]
            vals.update(zip(stale, new, strict=True))
            keys.update(zip(stale, ktext, strict=True))
            texts.update(zip(stale, _items(ktext, new), strict=True))
        if len(vals) > 2 * len(record) + 64:  # keep the running jobs' items only
            self.json_vals = {k: vals[k] for k in record}
            self.json_texts = {k: texts[k] for k in record}
            self.json_keys = {k: keys[k] for k in record}
        self.last_rec = (record, "{" + ",".join(map(texts.__getitem__, record)) + "}")
        return self.last_rec[1]

    def _tuples_json(self, record: Mapping) -> str | None:
        """The JSON of a record whose GPUs are tuples (a placement policy's): each job's key text
        and each GPU tuple's text looked up (a tuple's text is kept by value: a job placed again
        on the same GPUs, or any job on a GPU a single-GPU job held, encodes nothing), the
        missing ones encoded together (:func:`_items`); None when a job's GPUs are not a tuple
        (an allocating scheduler's lists). Both tables are trimmed when they outgrow the
        record."""
        gpus = list(record.values())
        if list(map(type, gpus)).count(tuple) != len(gpus):
            return None
        heads, texts = self.json_heads, self.json_gpus
        try:
            got = list(map(texts.get, gpus))
        except TypeError:  # a tuple holding a list: not a key
            return None
        if None in got:
            miss = list(dict.fromkeys(g for g, t in zip(gpus, got, strict=True) if t is None))
            texts.update(zip(miss, (t[1:] for t in _items([""] * len(miss), miss)), strict=True))
            got = list(map(texts.__getitem__, gpus))
        ks = list(map(heads.get, record))
        if None in ks:
            miss = [k for k, t in zip(record, ks, strict=True) if t is None]
            heads.update((k, _key_text(k) + ":") for k in miss)
            ks = list(map(heads.__getitem__, record))
        if len(heads) > 2 * len(record) + 4096:  # keep the running jobs' keys only
            self.json_heads = {k: heads[k] for k in record}
        if len(texts) > 4 * len(record) + 65536:
            self.json_gpus = dict(zip(gpus, got, strict=True))
        return "{" + ",".join(map(str.__add__, ks, got)) + "}"

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
            jobs={},
            t0=t0,
            t=t0,
        )
        s.n_tracked = int(s.tracked.sum())
        s.wait = np.minimum(s.waiting_since, release)
        return s

    def release_due(self, w: Workload) -> None:
        """Jobs released by now become active, each with its policy-facing ``Job`` object."""
        pending, t, app = self.pending, self.t, w.app
        if not (pending and pending[0][0] <= t):
            return
        new = []
        while pending and pending[0][0] <= t:
            j = heapq.heappop(pending)[1]
            new.append(j)
            self.is_active[j] = True
            a = app[j]
            self.n_apps += int(self.app_active[a] == 0)
            self.app_active[a] += 1
        if new:  # sorted, as np.flatnonzero(is_active), without reading every job
            self.jobs.update(zip(new, w.jobs(new), strict=True))
            self.active = np.sort(np.concatenate([self.active, np.asarray(new, np.int64)]))


#: ``json.dumps`` of a list of lists of integers (nothing else: no nesting, floats, strings)
_INT_LISTS = re.compile(r"\[\[[-0-9,]*\](?:,\[[-0-9,]*\])*\]")
_SEP = (",", ":")


def _key_text(k) -> str:
    """A record key as ``json.dumps`` writes it (a str of printable ASCII without ``"`` or ``\\``
    as it is, quoted; anything else through ``json.dumps``)."""
    if type(k) is str and k.isascii() and k.isprintable() and '"' not in k and "\\" not in k:
        return '"' + k + '"'
    return json.dumps({k: 0}, separators=_SEP)[1:-3]


def _items(keys: list[str], vals: list) -> list[str]:
    """The items ``key:gpus`` of the allocation's JSON (``keys`` already JSON text): the GPU lists
    of all jobs encoded by one ``json.dumps`` and split at ``],[`` when they are lists of integers
    (then no item holds a bracket), else one by one."""
    text = json.dumps(vals, separators=_SEP, default=int)
    if _INT_LISTS.fullmatch(text):
        return list(map("{}:[{}]".format, keys, text[2:-2].split("],[")))
    return [
        k + ":" + json.dumps(v, separators=_SEP, default=int)
        for k, v in zip(keys, vals, strict=True)
    ]
