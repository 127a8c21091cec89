"""What the driver records, and progress accounting between two decisions (pure numpy over the running
jobs, in the order they were placed: sums and ``np.add.at`` follow that order, so results are exact).

Over [t, t1] a running job j holding k_j GPUs, ready (checkpoint/restart paid) at r_j, progresses
from b_j = max(r_j, t) at ``rate_j`` iterations per second; it completes at b_j + rem_j / rate_j if
that is <= t1. Gavel's isolated-equivalent time grows by iters x t_iter x N_j / min(R_C / m, d_max).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

ROUND_COLUMNS = (
    "t",
    "span",
    "busy",
    "queue",
    "running",
    "started",
    "preempted",
    "migrated",
    "place_seconds",
    "allocation",
)


class TextLog:
    """Texts appended one by one (the rounds' allocation JSON: one per decision, ~20 KB each at
    16,384 GPUs), kept as one UTF-8 byte buffer and each text's end offset instead of a str
    object each; reads as a sequence of str. :meth:`arrow` hands the buffer to an Arrow string
    array without a copy (the texts are then never held twice)."""

    def __init__(self, texts=()):
        self._buf = bytearray()
        self._ends = array("q")
        for t in texts:
            self.append(t)

    def append(self, text: str) -> None:
        self._buf += text.encode()
        self._ends.append(len(self._buf))

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        n = len(self._ends)
        if not -n <= k < n:
            raise IndexError("TextLog index out of range")
        k %= n
        start = self._ends[k - 1] if k else 0
        return self._buf[start : self._ends[k]].decode()

    def __iter__(self):
        return (self[k] for k in range(len(self)))

    def __eq__(self, other) -> bool:
        return list(self) == list(other)

    def arrow(self):
        """The texts as a ``pyarrow.LargeStringArray`` over this log's buffer (no copy; the log
        cannot grow afterwards)."""
        import pyarrow as pa  # heavy: imported on use

        offsets = np.zeros(len(self._ends) + 1, np.int64)
        offsets[1:] = np.frombuffer(self._ends, np.int64) if len(self._ends) else []
        return pa.LargeStringArray.from_buffers(
            len(self._ends), pa.py_buffer(offsets), pa.py_buffer(self._buf)
        )


@dataclass
class Timeline:
    """What the driver records (arrays over jobs, lists over decisions)."""

    release: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    held: np.ndarray  # seconds holding GPUs
    gpu_seconds: np.ndarray  # GPU-seconds held
    run: np.ndarray  # seconds making progress
    score_time: np.ndarray  # integral of 1/S over progress time
    migrations: np.ndarray
    preemptions: np.ndarray
    overhead: np.ndarray  # seconds of checkpoint/restart paid
    restart_gpu_seconds: np.ndarray  # GPU-seconds held while paying checkpoint/restart
    done_iters: np.ndarray
    t_isolated: np.ndarray  # per app: Gavel's isolated-equivalent time of the work done
    t_isolated_job: np.ndarray  # the same per job (the job as its own app)
    rounds: dict[str, Any] = field(default_factory=dict)  # lists; "allocation" a TextLog
    busy_gpu_seconds: float = 0.0
    idle_waiting_gpu_seconds: float = 0.0  # integral of min(idle GPUs, unmet demand)
    t0: float = 0.0
    t_end: float = 0.0

    @classmethod
    def empty(cls, release: np.ndarray, apps: int) -> Timeline:
        J = release.size
        return cls(
            release=release,
            start=np.full(J, np.nan),
            finish=np.full(J, np.nan),
            held=np.zeros(J),
            gpu_seconds=np.zeros(J),
            run=np.zeros(J),
            score_time=np.zeros(J),
            migrations=np.zeros(J, np.int64),
            preemptions=np.zeros(J, np.int64),
            overhead=np.zeros(J),
            restart_gpu_seconds=np.zeros(J),
            done_iters=np.zeros(J),
            t_isolated=np.zeros(apps),
            t_isolated_job=np.zeros(J),
            rounds={k: TextLog() if k == "allocation" else [] for k in ROUND_COLUMNS},
        )

    def take(self, jobs: np.ndarray, apps: np.ndarray) -> Timeline:
        """The record of jobs ``jobs`` and apps ``apps`` only (the rounds and GPU time stay whole)."""
        per_job = (
            "release start finish held gpu_seconds run score_time migrations preemptions "
            "overhead restart_gpu_seconds done_iters t_isolated_job"
        ).split()
        out = replace(self, **{k: getattr(self, k)[jobs] for k in per_job})
        out.t_isolated = self.t_isolated[apps]
        return out


def grid(t0: float, ev: float, t: float, R: float) -> float:
    """First decision time t0 + k R >= ``ev`` (and > t)."""
    k = np.ceil((ev - t0) / R - 1e-12)
    return max(t0 + k * R, t + R)


def next_completion(j: np.ndarray, t: float, rem, rate, ready) -> float:
    """Earliest completion of the running jobs ``j`` if nothing changes (inf if none run)."""
    if not j.size:
        return np.inf
    return float(np.min(np.maximum(ready[j], t) + rem[j] / rate[j]))


def stamp(at: np.ndarray, t0: float, R: float, stamping: str) -> np.ndarray:
    """Completion stamps: exact, or the first grid point t0 + k R >= the exact time."""
    if stamping == "exact":
        return at
    return t0 + np.ceil((at - t0) / R - 1e-9) * R


def advance(j, k, t, t1, rem, rate, inv_s, ready, attained, tr: Timeline, stamping, R):
    """Progress the running jobs ``j`` (holding ``k`` GPUs each) over [t, t1]; completions stamped at
    their exact times. Returns (mask of ``j`` that finished, iterations done by each of ``j``, when
    each of ``j`` stopped holding its GPUs in [t, t1]: its exact completion, else t1)."""
    rem_j, rate_j = rem[j], rate[j]  # (j: distinct jobs, each array read once)
    begin = np.maximum(ready[j], t)
    finish_at = begin + rem_j / rate_j
    fin = finish_at <= t1 * (1 + 1e-15)
    stop = np.where(fin, finish_at, t1)
    prog_t = np.maximum(stop - begin, 0.0)
    prog = np.where(fin, rem_j, rate_j * prog_t)
    held = np.maximum(stop - t, 0.0)
    rem[j] = rem_j - prog
    rem[j[fin]] = 0.0
    tr.done_iters[j] += prog
    tr.held[j] += held
    tr.run[j] += prog_t
    tr.score_time[j] += prog_t * inv_s[j]
    gpu_s = held * k
    attained[j] += gpu_s
    tr.gpu_seconds[j] += gpu_s
    tr.restart_gpu_seconds[j] += (held - prog_t) * k  # held before ready: the restart paid
    tr.busy_gpu_seconds += float(np.add.reduce(gpu_s))  # (np.sum's reduction, no wrapper)
    tr.finish[j[fin]] = stamp(finish_at[fin], tr.t0, R, stamping)
    return fin, prog, stop


def idle_while_waiting(t, t1, idle, unmet, freed_at, freed, unmet_gone, arrive_at, arrive) -> float:
    """GPU-seconds over [t, t1] of min(idle GPUs, unmet demand): GPUs that no job holds while released
    jobs want more than they hold (a queued job: its whole demand; an elastic job: N_j - k_j).
    Piecewise constant between events: completions at ``freed_at`` free ``freed`` GPUs and end
    ``unmet_gone`` of unmet demand; arrivals at ``arrive_at`` add ``arrive`` of demand."""
    times = np.concatenate([freed_at, arrive_at])
    if not times.size:
        return max(min(idle, unmet), 0.0) * (t1 - t)
    if times.size <= _FEW_EVENTS:
        return _idle_few(t, t1, idle, unmet, times, freed, unmet_gone, arrive)
    d_idle = np.concatenate([freed, np.zeros(arrive_at.size)])
    d_unmet = np.concatenate([-unmet_gone, arrive])
    order = np.argsort(times, kind="stable")
    edges = np.concatenate([[t], np.minimum(np.maximum(times[order], t), t1), [t1]])
    level_idle = idle + np.concatenate([[0.0], np.cumsum(d_idle[order])])
    level_unmet = unmet + np.concatenate([[0.0], np.cumsum(d_unmet[order])])
    level = np.maximum(np.minimum(level_idle, level_unmet), 0.0)
    return float(np.add.reduce(level * (edges[1:] - edges[:-1])))


#: up to this many events in an interval, :func:`idle_while_waiting` steps through them in Python
#: floats (a few numpy calls instead of a dozen; the same numbers, summed by the same reduction)
_FEW_EVENTS = 64


def _idle_few(t, t1, idle, unmet, times, freed, unmet_gone, arrive) -> float:
    """:func:`idle_while_waiting`'s integral over few events: the same operations on the same
    values in the same order (a stable sort by time; running sums from the first change; the
    products summed by ``np.add.reduce``, the reduction ``np.sum`` makes)."""
    n_freed = freed.size
    d_idle = freed.tolist() + [0.0] * (times.size - n_freed)
    d_unmet = (-unmet_gone).tolist() + arrive.tolist()
    at = times.tolist()
    order = sorted(range(len(at)), key=at.__getitem__)  # stable, as argsort(kind="stable")
    prev, li, lu, c_idle, c_unmet = t, idle + 0.0, unmet + 0.0, 0.0, 0.0
    terms = []
    for i, k in enumerate(order):
        e = min(max(at[k], t), t1)
        terms.append(max(min(li, lu), 0.0) * (e - prev))
        c_idle = d_idle[k] if i == 0 else c_idle + d_idle[k]
        c_unmet = d_unmet[k] if i == 0 else c_unmet + d_unmet[k]
        prev, li, lu = e, idle + c_idle, unmet + c_unmet
    terms.append(max(min(li, lu), 0.0) * (t1 - prev))
    return float(np.add.reduce(np.array(terms)))


def isolated(tr: Timeline, w, G: int, m: int, app_dmax, j, prog) -> None:
    """Gavel's t_isolated += iters_done x t_iter_serial / min(R_C / m, d_max), per app and per job
    (t_iter_serial = t_iter x N_j: the trace's t_iter is per iteration on the job's N_j GPUs)."""
    if j.size:
        serial = prog * w.t_iter[j] * w.demand[j]
        np.add.at(tr.t_isolated, w.app[j], serial / np.minimum(G / m, app_dmax[w.app[j]]))
        tr.t_isolated_job[j] += serial / np.minimum(G / m, w.demand[j])
