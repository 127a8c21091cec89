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
    sorted by :func:`class_key`), checked once; rows are positions in the given sequences."""

    def __init__(self, ids: Sequence, gpus, classes: Sequence):
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

    @classmethod
    def of(cls, jobs: Sequence[Job], where: str = "queue") -> JobTable:
        """The table of ``jobs`` (a DataError naming ``where[k]``'s bad field)."""
        check_jobs(jobs, where)
        return cls([j.id for j in jobs], [int(j.gpus) for j in jobs], [j.cls for j in jobs])

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

    def ids_at(self, pos: np.ndarray) -> tuple:
        """The ids of the jobs at queue positions ``pos``, as a tuple: one pass over the chosen
        ids (no intermediate arrays or lists)."""
        return round_kernel.gather(self.table.id_tuple, self.rows[pos])

    def fields(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per job of the queue: (ids as an object array, GPU demands, class codes), made once."""
        out = self.__dict__.get("_fields")
        if out is None:
            t, r = self.table, self.rows
            out = self.__dict__["_fields"] = (t.ids[r], t.gpus[r], t.code[r])
        return out
