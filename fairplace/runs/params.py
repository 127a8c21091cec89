"""The specs (:class:`~fairplace.core.params.Param`) of the run commands' own options: how many
Dask workers a batch, sweep or reproduction starts (``--workers``) and how long a batch waits
without any worker (``--no-workers-timeout``). The commands' flags take their check and help from
them (``fairplace.commands._args.param``) and the library functions check them again, naming the
flag. Light: the CLI reads it for ``--help``."""

from __future__ import annotations

from fairplace.core.limits import MAX_TIME, MAX_WORKERS
from fairplace.core.params import Interval, Param

#: Dask worker processes one run starts
_WORKERS = Interval(1, MAX_WORKERS, integer=True)

#: ``fairplace sweep`` / ``reproduce`` (``run_sweep``, ``run_reproduce``)
WORKERS = Param(
    "workers",
    1,
    _WORKERS,
    "1: cells one after another in this process; N > 1: on N local Dask worker processes",
    flag="--workers",
)

#: ``fairplace batch`` (``run_batch``): this process solves too
BATCH_WORKERS = Param(
    "workers",
    2,
    _WORKERS,
    "local solvers: this process and N-1 Dask worker processes",
    flag="--workers",
)

#: ``fairplace batch`` (``run_batch``; ``runs.dask_cluster.NoWorkersWatch``)
NO_WORKERS_TIMEOUT = Param(
    "no_workers_timeout",
    120.0,
    Interval(0.0, MAX_TIME, closed="right"),
    "stop (rows kept, rerun with --resume) after this many s without any Dask worker (None: wait)",
    flag="--no-workers-timeout",
    nullable=True,
)
