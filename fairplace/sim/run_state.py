"""The state of one simulation run between the driver's steps (:class:`fairplace.sim.engine.Driver`):
the clock, the jobs' progress and rates, the releases to come, the active set and the incremental
decision memory. The steps read and update it; nothing here decides anything."""

from __future__ import annotations

import heapq
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import compress
from operator import is_not, not_

import numpy as np

from fairplace.solvers.placement import round_kernel

from .accounting import Timeline
from .running import Running
from .workload import Workload


@dataclass(eq=False)
class RunState:
    """Arrays over the workload's jobs (``rem``: iterations left; ``rate``: iterations per second;
    ``inv_s``: 1 / slowdown; ``ready``: when a job's checkpoint + restart is paid; ``attained``:
    GPU-seconds; ``waiting_since``: when a job last stopped holding GPUs), the releases to
    come ``pending`` (:class:`Releases`), the active jobs (``is_active``, ``active``, per app
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
    pending: Releases
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
    last_placed: tuple | None = None  # its arrays (:attr:`.contract.Contract.placed`)
    last_rec: tuple = (None, "{}")  # the previous recorded allocation and its JSON
    #: per job of the recorded allocations: its GPUs, its JSON item and its key's JSON, as last encoded
    json_vals: dict = field(default_factory=dict)
    json_texts: dict = field(default_factory=dict)
    json_keys: dict = field(default_factory=dict)
    #: GPU tuples (a placement policy's) -> their JSON text, and job keys -> their JSON text + ":"
    json_gpus: dict = field(default_factory=dict)
    json_heads: dict = field(default_factory=dict)
    #: the holdings by job id (job id -> sorted tuple) after a placement policy's decision, and
    #: whether the driver may change that dict (not the record, nor a dict a policy was shown)
    held_ids: dict = field(default_factory=dict)
    held_own: bool = True
    #: what the view shows as ``waiting_since`` (:meth:`waiting_view`), kept up to date in place
    wait: np.ndarray = field(default_factory=lambda: np.zeros(0))
    wait_at: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # set to the clock
    #: per job while it is active, its JSON head ``,"id":[`` (None otherwise); per GPU ``g,`` and
    #: ``g]``: the pieces an allocation's JSON is joined from (:meth:`_arrays_json`)
    head_txt: np.ndarray = field(default_factory=lambda: np.empty(0, object))  # set at the start
    gpu_txt: tuple[np.ndarray, np.ndarray] | None = None

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

    def allocation_json(self, record: Mapping, placed: tuple | None = None) -> str:
        """``json.dumps(record, separators=(",", ":"), default=int)``, the same text: from the
        placement's arrays when given (``placed``: the record's job indices, GPUs per job and GPUs
        in its order, :attr:`.contract.Contract.placed`; :meth:`_arrays_json`), else from each
        job's item kept while its GPUs stay the same object (a decision moves some of the running
        jobs); the items of the others encoded together, by one ``json.dumps`` of their GPU lists;
        the previous text again for the previous record (the driver never changes a record, nor a
        list in it, once recorded). Items of jobs that left are dropped when they outnumber the
        record's."""
        last = self.last_rec[0]
        if record is last:
            return self.last_rec[1]
        if placed is not None and self.gpu_txt is not None:
            self.last_rec = (record, self._arrays_json(*placed))
            return self.last_rec[1]
        if record == last and list(record) == list(last):  # keys, order
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

    def gpu_texts(self, G: int) -> None:
        """Make the GPUs' JSON pieces (``g,`` and ``g]`` for g < ``G``), once per run."""
        self.gpu_txt = (
            np.array([f"{g}," for g in range(G)], object),
            np.array([f"{g}]" for g in range(G)], object),
        )

    def _arrays_json(self, js: np.ndarray, sizes: np.ndarray, flat: np.ndarray) -> str:
        """The allocation's JSON from its arrays: each job's head (:attr:`head_txt`) and its GPUs'
        pieces (the last one closing the list), put in place by numpy and joined once (no Python
        step per job)."""
        n = js.size
        if not n:
            return "{}"
        heads = self.head_txt[js].tolist()
        text = round_kernel.int_lists_json(heads, flat, sizes)  # (one compiled pass)
        if text is not None:
            return text
        assert self.gpu_txt is not None  # made by :meth:`gpu_texts` (the caller checks)
        comma, close = self.gpu_txt
        ends = np.cumsum(sizes)
        out = np.empty(n + flat.size, object)
        if n == flat.size:  # one GPU each: head, GPU, head, GPU, ...
            out[0::2] = heads
            out[1::2] = close[flat]
        else:
            gp = comma[flat]
            last = ends - 1
            gp[last] = close[flat[last]]
            hp = ends - sizes + np.arange(n)  # job k's head follows k heads and its GPUs before
            out[hp] = heads
            at = np.ones(n + flat.size, bool)
            at[hp] = False
            out[at] = gp
        parts = out.tolist()
        parts[0] = "{" + parts[0][1:]
        parts.append("}")
        return "".join(parts)

    def _tuples_json(self, record: Mapping) -> str | None:
        """The JSON of a record whose GPUs are tuples (a placement policy's, as the contract
        returns it): each GPU tuple's text looked up by value (a job placed again on the same
        GPUs, or any job on a single GPU seen before, encodes nothing) and each job's
        ``,"id":`` text, the missing ones encoded together (:func:`_items`), the pieces joined
        once; None for other GPU containers (an allocating scheduler's lists). Both tables are
        trimmed when they outgrow the record."""
        gpus = list(record.values())
        if not gpus or type(gpus[0]) is not tuple:
            return None
        heads, texts = self.json_heads, self.json_gpus
        try:
            got = list(map(texts.get, gpus))
        except TypeError:  # a list, or a tuple holding one: not a key
            return None
        if None in got:  # (compress/not_: C-level passes; every text is a non-empty str)
            miss = list(dict.fromkeys(compress(gpus, map(not_, got))))
            texts.update(zip(miss, (t[1:] for t in _items([""] * len(miss), miss)), strict=True))
            got = list(map(texts.__getitem__, gpus))
        ks = list(map(heads.get, record))
        if None in ks:
            miss = list(compress(record, map(not_, ks)))
            heads.update((k, "," + _key_text(k) + ":") for k in miss)
            ks = list(map(heads.__getitem__, record))
        if len(heads) > 2 * len(record) + 4096:  # keep the running jobs' keys only
            self.json_heads = {k: heads[k] for k in record}
        if len(texts) > 4 * len(record) + 65536:
            self.json_gpus = dict(zip(gpus, got, strict=True))
        parts: list = [""] * (2 * len(ks))  # ,"id":[gpus] job after job, joined at once
        parts[0::2], parts[1::2] = ks, got
        parts[0] = "{" + parts[0][1:]
        return "".join(parts) + "}"

    @classmethod
    def start(cls, w: Workload, groups, grid_origin: str) -> RunState:
        """The state before the first decision: nothing released, nothing running; ``groups`` =
        (gid, left, nxt, blocked) of the driver's phase groups (a blocked job waits for its
        previous phase)."""
        gid, left, nxt, blocked = groups
        J = len(w)
        release = np.where(blocked, np.inf, w.submit)
        pending = Releases(release)
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
        s.head_txt = np.empty(J, object)
        return s

    def release_due(self, w: Workload) -> None:
        """Jobs released by now become active, each with its policy-facing ``Job`` object."""
        if not self.pending.next() <= self.t:
            return
        new = self.pending.pop_due(self.t)
        self.is_active[new] = True
        apps = w.app[new]
        idle = apps[self.app_active[apps] == 0]  # apps with no active job yet (distinct: a set)
        if idle.size:
            self.n_apps += len(set(idle.tolist()))
        np.add.at(self.app_active, apps, 1)
        # sorted, as np.flatnonzero(is_active), without reading every job
        js = new.tolist()
        self.jobs.update(zip(js, w.jobs(js), strict=True))
        self.head_txt[new] = [f",{_key_text(i)}:[" for i in map(w.ids.__getitem__, js)]
        self.active = np.sort(np.concatenate([self.active, new]))


class Releases:
    """The releases to come, popped in (release time, job) order: the jobs' own release times as
    one sorted array read from a cursor (no Python object per job), and the phases released
    during the run (``push``) on a heap."""

    def __init__(self, release: np.ndarray):
        ok = np.flatnonzero(release < math.inf)
        o = np.argsort(release[ok], kind="stable")  # ties: by job index, as the heap's tuples
        self.jobs, self.times = ok[o], np.ascontiguousarray(release[ok][o], dtype=float)
        self.i = 0
        self.heap: list[tuple[float, int]] = []

    def __len__(self) -> int:
        return self.jobs.size - self.i + len(self.heap)

    def next(self) -> float:
        """The earliest release to come (inf: none)."""
        a = float(self.times[self.i]) if self.i < self.times.size else math.inf
        return min(a, self.heap[0][0]) if self.heap else a

    def push(self, release: float, j: int) -> None:
        heapq.heappush(self.heap, (float(release), int(j)))

    def pop_due(self, t: float) -> np.ndarray:
        """Remove and return the jobs released at or before ``t``, in (release, job) order."""
        e = self.i + int(np.searchsorted(self.times[self.i :], t, side="right"))
        jobs = self.jobs[self.i : e]
        self.i = e
        if self.heap and self.heap[0][0] <= t:
            more = []
            while self.heap and self.heap[0][0] <= t:
                more.append(heapq.heappop(self.heap))
            items = sorted(
                [*zip(self.times[e - jobs.size : e].tolist(), jobs.tolist(), strict=True), *more]
            )
            jobs = np.fromiter((j for _, j in items), np.int64, len(items))
        return jobs

    def before(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(release times, jobs) of the releases to come before ``t`` (none removed), in
        (release, job) order."""
        e = self.i + int(np.searchsorted(self.times[self.i :], t, side="left"))
        times, jobs = self.times[self.i : e], self.jobs[self.i : e]
        if self.heap and self.heap[0][0] < t:
            items = sorted(
                [
                    *zip(times.tolist(), jobs.tolist(), strict=True),
                    *(x for x in self.heap if x[0] < t),
                ]
            )
            times = np.array([r for r, _ in items], float)
            jobs = np.array([j for _, j in items], np.int64)
        return times, jobs


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
