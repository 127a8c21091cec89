"""A queue of jobs with their fields as arrays, checked once: what a placement round reads instead of
visiting every job in Python.

A :class:`JobTable` holds the jobs a queue is drawn from (a trace, a workload) as arrays: ids, GPU
demands and class codes, checked when it is made (ids distinct, demands positive integers). A
:class:`JobQueue` is a tuple of jobs (any policy takes it as a queue) that also carries its rows of a
table; a PM-First / PAL round given one orders it and places it with numpy and the compiled kernel,
without reading an attribute of each job.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np

from fairplace.core.domain import Job
from fairplace.core.errors import DataError

from . import round_kernel


def class_key(c) -> tuple[bool, str]:
    """PM-First's class order: A first, None last (``sorted(classes, key=class_key)``)."""
    return (c is None, c or "")


def check_jobs(jobs: Sequence[Job], where: str = "queue") -> None:
    """A DataError naming the first duplicate id or GPU demand that is not a positive integer."""
    seen: set = set()
    for k, j in enumerate(jobs):
        if j.id in seen:
            raise DataError(f"{where}[{k}].id", f"duplicate job id {j.id!r}")
        seen.add(j.id)
        if isinstance(j.gpus, bool) or not isinstance(j.gpus, (int, np.integer)) or j.gpus < 1:
            raise DataError(f"{where}[{k}].gpus", f"must be a positive integer, got {j.gpus!r}")


class JobTable:
    """Jobs' ids, GPU demands (int64) and classes (``code``: the index in :attr:`classes`, which are
    sorted by :func:`class_key`), checked once; rows are positions in the given sequences.
    Optionally (``models`` and ``localities``, each one entry per job, or None) the jobs' models and
    own L_across (``Job.locality``, None where the policy's table decides): :meth:`JobQueue.localities`."""

    def __init__(
        self,
        ids: Sequence,
        gpus,
        classes: Sequence,
        models: Sequence | None = None,
        localities: Sequence | None = None,
    ):
        self.ids = np.empty(len(ids), dtype=object)
        self.ids[:] = list(ids)
        raw = np.asarray(gpus)
        if raw.shape != (len(ids),) or len(classes) != len(ids):
            raise DataError("jobs", "ids, gpus and classes must have one entry per job")
        if raw.size and (raw.dtype.kind not in "iu" or raw.min() < 1):
            k = next(k for k, g in enumerate(raw.tolist()) if type(g) is not int or g < 1)
            raise DataError(f"jobs[{k}].gpus", f"must be a positive integer, got {raw[k]!r}")
        if len(set(self.ids.tolist())) != len(ids):
            seen: set = set()
            for k, i in enumerate(self.ids.tolist()):
                if i in seen:
                    raise DataError(f"jobs[{k}].id", f"duplicate job id {i!r}")
                seen.add(i)
        self.gpus = raw.astype(np.int64)
        self.classes = tuple(sorted(dict.fromkeys(classes), key=class_key))
        rank = {c: r for r, c in enumerate(self.classes)}
        self.code = np.fromiter(map(rank.__getitem__, classes), np.int64, len(ids))
        #: (each job's own L_across, NaN: none; its model's index in the models; the models) or
        #: None (not given, or not all floats and hashable models)
        self.locality: tuple[np.ndarray, np.ndarray, tuple] | None = None
        if models is not None and localities is not None:
            self.locality = _locality_arrays(models, localities, len(ids))

    @classmethod
    def of(cls, jobs: Sequence[Job], where: str = "queue") -> JobTable:
        """The table of ``jobs`` (a DataError naming ``where[k]``'s bad field)."""
        check_jobs(jobs, where)
        return cls(
            [j.id for j in jobs],
            [int(j.gpus) for j in jobs],
            [j.cls for j in jobs],
            [j.model for j in jobs],
            [j.locality for j in jobs],
        )

    def __len__(self) -> int:
        return self.ids.size

    @cached_property
    def id_tuple(self) -> tuple:
        """The ids as a tuple (made once: a round takes its ids from it, :meth:`JobQueue.ids_at`)."""
        return tuple(self.ids.tolist())

    def queue(self, jobs: Sequence[Job], rows, checked: bool = False) -> JobQueue:
        """The queue ``jobs``, whose k-th job is the table's row ``rows[k]`` (the caller's word:
        not checked job by job); rows must be distinct rows of the table (``checked``: the caller
        has checked that, as the simulator's contract checks a scheduler's order)."""
        return JobQueue(jobs, self, rows, checked)


class JobQueue(tuple):
    """An ordered queue of jobs (a tuple) with its rows of a :class:`JobTable`: job ``k`` is row
    ``rows[k]``. Make one with :meth:`of` (a list of jobs: checked and tabled) or
    :meth:`JobTable.queue`."""

    table: JobTable
    rows: np.ndarray

    def __new__(cls, jobs: Sequence[Job], table: JobTable, rows, checked: bool = False) -> JobQueue:
        self = super().__new__(cls, jobs)
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        if rows.shape != (len(self),):
            raise DataError("queue", f"expected {len(self)} table rows, got shape {rows.shape}")
        if rows.size and not checked:
            if rows.min() < 0 or rows.max() >= len(table):
                raise DataError("queue", f"table row out of range 0..{len(table) - 1}")
            mark = np.zeros(len(table), dtype=bool)  # O(rows) marks, not a sort
            mark[rows] = True
            if np.count_nonzero(mark) != rows.size:
                raise DataError("queue", "a job appears twice")
        self.table, self.rows = table, rows
        return self

    @classmethod
    def of(cls, jobs: Sequence[Job]) -> JobQueue:
        """``jobs`` as a queue of their own table (checked as ``place`` checks a queue)."""
        return cls(jobs, JobTable.of(jobs), np.arange(len(jobs)))

    def __reduce__(self):
        return (JobQueue, (tuple(self), self.table, self.rows))

    def memo(self, key, make):
        """``make()``, made once per ``key`` for this queue (a queue does not change: what
        depends only on it and ``key``, e.g. a policy's processing order for a cluster size), and
        read only where it is an array."""
        memo = self.__dict__.setdefault("_memo", {})
        got = memo.get(key)
        if got is None:
            got = memo[key] = make()
            if isinstance(got, np.ndarray):
                got.flags.writeable = False
        return got

    def ids_for(self, rows: np.ndarray) -> tuple:
        """:meth:`ids_at`, kept for the last ``rows`` asked when they are a read-only array that
        owns its data (:meth:`memo`'s): the same array again gives the same tuple."""
        last = self.__dict__.get("_ids_for")
        if last is not None and last[0] is rows:
            return last[1]
        ids = self.ids_at(rows)
        if isinstance(rows, np.ndarray) and not rows.flags.writeable and rows.base is None:
            self.__dict__["_ids_for"] = (rows, ids)
        return ids

    def ids_at(self, pos: np.ndarray) -> tuple:
        """The ids of the jobs at queue positions ``pos``, as a tuple: one pass over the chosen
        ids (no intermediate arrays or lists)."""
        return round_kernel.gather(self.table.id_tuple, self.rows[pos])

    def localities(self) -> tuple[np.ndarray, np.ndarray, tuple] | None:
        """Per job of the queue: (own L_across, NaN where none; model index), and the models, from
        the table (made once); None where the table has none (:class:`JobTable`)."""
        loc = self.table.locality
        if loc is None:
            return None
        out = self.__dict__.get("_localities")
        if out is None:
            r = self.rows
            out = self.__dict__["_localities"] = (loc[0][r], loc[1][r], loc[2])
        return out

    def fields(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per job of the queue: (ids as an object array, GPU demands, class codes), made once."""
        out = self.__dict__.get("_fields")
        if out is None:
            t, r = self.table, self.rows
            out = self.__dict__["_fields"] = (t.ids[r], t.gpus[r], t.code[r])
        return out


def _locality_arrays(models: Sequence, localities: Sequence, n: int):
    """(own L_across as float64, NaN for None; model index, int64; the distinct models in order of
    first appearance), or None where an own L is NaN or not a real number, a model is unhashable,
    or the lengths differ (a round then reads each job)."""
    if len(models) != n or len(localities) != n:
        return None
    if not all(v is None or isinstance(v, _REAL) for v in localities):
        return None  # (a round reads such a job's L itself, and fails as it would)
    try:
        index: dict = {}
        code = np.fromiter((index.setdefault(m, len(index)) for m in models), np.int64, n)
        own = np.fromiter((np.nan if v is None else float(v) for v in localities), np.float64, n)
    except (TypeError, OverflowError):
        return None
    if np.isnan(own).sum() != sum(v is None for v in localities):
        return None  # an own L that is NaN itself: not told from None here
    return own, code, tuple(index)


_REAL = (float, int, np.floating, np.integer)
