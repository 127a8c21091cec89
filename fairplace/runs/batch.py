"""Batch solving of instance suites on Dask: one task per (instance, solver), results journaled durably.

How tasks run (:mod:`fairplace.runs.batch_plan`): largest estimated effort first; tiny tasks (heuristics,
small instances) share one Dask task, a chunk; small suites (``--workers 1``, <= 4 tasks or a small
estimated effort) are solved in this process without a cluster. On a local cluster this process is one
of the ``workers`` solvers (:class:`DriverSlot`): it starts the largest task before the cluster is up
and takes the next group from the shared :class:`GroupSource` whenever it is idle, so the start-up
costs no solving time; each Dask worker holds :data:`PREFETCH` groups (its next one queued on the
worker), and the last groups (~:data:`CLOSE_RESERVE` s) are left to this process, which solves them
while the cluster closes. Local clusters' workers import the solver stack as they start
(:mod:`fairplace.runs.batch_worker`), and the in-process path does so before its first task, so no
row's ``seconds`` / ``wall_seconds`` includes one-time imports.

Storage (the durability contract): every finished result is appended as one JSON line to the *journal*
``<out>.jsonl`` (``out`` itself when it ends in ``.jsonl``) and flushed + fsync'ed before the next result
is handled, so a crash, a killed worker or Ctrl-C loses nothing that finished. At the end the journal is
converted to ``out`` by its extension (``.parquet`` or ``.csv``; ``.jsonl`` stays the journal).
``resume=True`` reads the journal (a torn last line from a crash is dropped) and skips every
(instance, solver) pair already in it, except error rows of the infrastructure (a worker killed
past Dask's retries, a cancelled future: :data:`RETRY_ON_RESUME`), which run again (the table keeps
the last row of a pair); without ``resume`` an existing journal is an error unless
``overwrite=True``.

One batch at a time per journal: ``<journal>.lock`` (pid, host, an ``flock``) makes a second batch on
the same ``out`` fail with :class:`~fairplace.core.errors.OptionError` naming the running one; the lock of a
dead process is taken over. Journal lines that are not UTF-8, not JSON objects or lack the
``instance`` / ``solver`` names are skipped and reported (one warning line on the
``fairplace.runs.batch`` logger). ``out`` must end in ``.parquet``, ``.csv`` or ``.jsonl``; without
``out`` the journal lives in a temporary folder removed when the batch ends. Ctrl-C closes the
cluster quietly (workers ignore SIGINT, see :mod:`fairplace.runs.dask_cluster`).

A task never raises: a solver exception becomes a row with status ``error`` and the message, a solver
that does not handle the instance's kind a row with status ``skipped``, and a task whose worker died
(Dask's ``KilledWorker`` after its retries) a row with status ``error`` (every task of a lost chunk).

Gap: for each instance the reference optimum is the stored optimum (``meta.optimum``, small suite) or
else the objective of an ``exact`` row with status ``optimal`` from the same run;
``gap = (objective worse than optimum) / max(1, |optimum|)`` (>= 0 up to tolerance; objective units are
sum -log rho for auctions, maximised, and the slowdown sum for placements, minimised). Both optima are
lexicographic (first serve every unbounded app / place as many jobs as fit, see the formulations): a row
worse on that first part (``unserved_unbounded`` / ``placed``) gets no gap; ``summarize`` counts them.
A relaxation row (status ``bound``) gets a gap <= 0: how far its bound lies beyond the optimum.
Time limits are the solvers' own (``SolveOptions.time_limit``, per MIP solve); a task is not killed
from outside, so a solver that ignores its limit holds its worker until it returns.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from fairplace.core.errors import OptionError, UnknownName
from fairplace.core.progress import ProgressBar, progress_bar
from fairplace.runs.batch_plan import (
    IN_PROCESS_MAX_TASKS,
    chunks,
    in_process_rule,
    largest_first,
    resolve_suite,
    task_efforts,
)
from fairplace.runs.batch_results import (
    JournalLock,
    append_rows,
    journal_path,
    read_journal,
    scan_journal,
    summarize,
    to_frame,
    write_table,
)
from fairplace.runs.batch_results import append_row as _append
from fairplace.runs.batch_results import repair_journal as _repair
from fairplace.runs.batch_worker import (
    DriverSlot,
    GroupSource,
    solve_chunk,
    solve_task,
    warm,
    warm_plugin,
)
from fairplace.runs.dask_cluster import NoWorkersWatch, close_quietly, connect, local_cluster
from fairplace.runs.params import BATCH_WORKERS, NO_WORKERS_TIMEOUT
from fairplace.solvers.options import TIME_LIMIT
from fairplace.solvers.registry import solver_table

#: results table formats by extension (``.jsonl``: the journal is the table).
OUT_SUFFIXES = (".parquet", ".csv", ".jsonl")
log = logging.getLogger(__name__)

#: groups a Dask worker holds at a time when this process solves too (one running, one queued: the
#: worker starts its next group at once instead of after a round trip through this process, 10-40
#: ms measured per group; the groups left to the driver at the end keep the tail balanced).
PREFETCH = 2
#: estimated seconds of the last groups a local batch leaves to the driver, which solves them while
#: the cluster closes (~0.2-0.25 s measured on 2 cores: the worker process exits, the nanny reaps it)
CLOSE_RESERVE = 0.25

#: error rows that say nothing about the instance (the infrastructure failed): ``resume`` runs them again.
RETRY_ON_RESUME = ("KilledWorker", "CancelledError", "CommClosedError", "FutureCancelledError")


# --- the driver -----------------------------------------------------------------------------------
def run_batch(
    suite,
    solvers: Sequence[str] = ("exact",),
    workers: int = 2,
    scheduler_address: str | None = None,
    time_limit: float | None = None,
    out: str | Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool | ProgressBar = True,
    max_in_flight: int | None = None,
    no_workers_timeout: float | None = 120.0,
    in_process: bool | None = None,
    driver_solves: bool = True,
    security=None,
) -> pd.DataFrame:
    """Solve every (instance, solver) pair of ``suite`` on Dask; return the results table.

    Tasks are submitted largest estimated effort first (:mod:`fairplace.runs.batch_plan`), so that
    a long instance does not start last and leave the other workers idle; tiny tasks share a Dask
    task. ``in_process``: solve the tasks one by one in this process instead (same rows, no
    cluster start-up); None: by :func:`~fairplace.runs.batch_plan.in_process_rule` (no
    ``scheduler_address`` and ``workers == 1``, at most :data:`IN_PROCESS_MAX_TASKS` tasks, or a
    small estimated effort). ``df.attrs["batch"]`` reports how the batch ran: ``mode``
    (``in-process`` / ``local`` / ``scheduler``), ``reason``, ``tasks``, ``estimated_effort`` and
    the seconds of ``startup`` (cluster start and worker imports, or the in-process warm-up),
    ``solve`` (first submission to last row journaled) and ``close``.

    ``suite``: a registered suite name, a folder of instance JSON files or a list of (name, payload).
    ``out``: the table (``.parquet`` / ``.csv`` / ``.jsonl``); its journal is ``<out>.jsonl``
    (see the module docstring). Without ``out`` the journal goes to a temporary file.
    ``driver_solves`` (local clusters): this process is one of the ``workers`` solvers, next to
    ``workers - 1`` Dask worker processes (:class:`DriverSlot`): it starts the largest task while
    the cluster starts, so the start-up is not idle time; False: ``workers`` Dask workers and this
    process only coordinates. A cluster at ``scheduler_address`` does all the solving
    (``security``: its TLS credentials, a ``distributed.security.Security``; default: the Dask
    configuration's). A local cluster talks TLS (:func:`~fairplace.runs.dask_cluster.local_cluster`);
    ``df.attrs["batch"]["scheduler"]`` is the scheduler's address.
    ``no_workers_timeout``: seconds without any Dask worker after which the batch stops with
    :class:`~fairplace.core.errors.ClusterUnavailable` (finished rows stay in the journal; None: wait).
    """

    known = solver_table()
    for s in solvers:
        if s not in known:
            raise UnknownName("--solvers", f"unknown solver {s!r}; known: {', '.join(known)}")
    # before the in-process rule: a bad value is an error even when unused
    BATCH_WORKERS.check(workers, BATCH_WORKERS.flag)
    NO_WORKERS_TIMEOUT.check(no_workers_timeout, NO_WORKERS_TIMEOUT.flag)
    TIME_LIMIT.check(time_limit, TIME_LIMIT.flag)
    items = resolve_suite(suite)
    names = [n for n, _ in items]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise OptionError("SUITE", f"instance name {dup!r} appears twice")

    tmp = out is None
    if out is None:
        out = Path(tempfile.mkdtemp(prefix="fairplace-batch-")) / "results.jsonl"
    elif Path(out).suffix not in OUT_SUFFIXES:
        raise OptionError("--out", f"unknown table extension {Path(out).suffix or '(none)'!r}; "
                          f"use {', '.join(OUT_SUFFIXES)}")  # fmt: skip
    try:
        with JournalLock(journal_path(out)):
            return _run_locked(
                items, solvers, workers, scheduler_address, time_limit, out, tmp, resume,
                overwrite, progress, max_in_flight, no_workers_timeout, in_process, driver_solves,
                security,
            )  # fmt: skip
    finally:
        if tmp:  # the temporary journal folder goes with the batch
            shutil.rmtree(Path(out).parent, ignore_errors=True)


def _run_locked(
    items, solvers, workers, scheduler_address, time_limit, out, tmp, resume, overwrite,
    progress, max_in_flight, no_workers_timeout, in_process, driver_solves, security=None,
) -> pd.DataFrame:  # fmt: skip
    """The batch proper, while this process holds the journal's lock."""
    jpath = journal_path(out)
    if jpath.exists() and not (resume or overwrite):
        raise OptionError(
            "--out", f"{jpath} exists: pass --resume to continue it or --overwrite to start again"
        )
    jpath.parent.mkdir(parents=True, exist_ok=True)
    if jpath.exists() and resume:
        _repair(jpath)
    elif jpath.exists():
        jpath.unlink()
    rows, problems = scan_journal(jpath)
    if problems:
        log.warning(
            "fairplace batch: skipped %d unreadable line(s) of %s (%s)",
            len(problems), jpath, "; ".join(problems[:3]) + ("; ..." if len(problems) > 3 else ""),
        )  # fmt: skip
    done = {
        (r["instance"], r["solver"])
        for r in rows
        if not str(r.get("message", "")).startswith(RETRY_ON_RESUME)
    }
    todo = [(n, s, p) for n, p in items for s in solvers if (n, s) not in done]  # key = position
    efforts = task_efforts(todo)
    order = largest_first(efforts)
    rule_in_process, reason = in_process_rule(len(todo), sum(efforts), workers, scheduler_address)
    if in_process is None:
        in_process = rule_in_process
    else:
        reason = f"{'in-process' if in_process else 'on Dask'}: in_process={in_process} given"
    report = {
        "mode": "in-process" if in_process else ("scheduler" if scheduler_address else "local"),
        "reason": reason, "tasks": len(todo), "estimated_effort": round(sum(efforts), 1),
        "startup_seconds": 0.0, "solve_seconds": 0.0, "close_seconds": 0.0,
    }  # fmt: skip
    log.debug("batch: %d task(s) (%d journaled before); %s", len(todo), len(done), reason)
    if in_process and todo:
        t0 = time.perf_counter()
        warm(solvers)  # one-time imports before any task's clock starts
        t1 = time.perf_counter()
        _solve_here([todo[k] for k in order], jpath, time_limit, progress)
        t2 = time.perf_counter()
        report |= {"workers": 1, "startup_seconds": t1 - t0, "solve_seconds": t2 - t1}
    elif todo:
        groups = [(g[0], [todo[k] for k in g]) for g in chunks(order, efforts)]
        source = GroupSource(
            groups, {(n, s): e for (n, s, _), e in zip(todo, efforts, strict=True)}
        )
        here = None
        if not scheduler_address and workers >= 2 and driver_solves:
            here = DriverSlot(solvers, time_limit)
            here.start(source)  # solving from now on, while the cluster starts
        t0 = time.perf_counter()
        client = cluster = None
        closed: list[float] = []  # when the close started and ended (it runs once)

        def close() -> None:
            if not closed:
                closed.append(time.perf_counter())
                close_quietly(client, cluster)
                closed.append(time.perf_counter())

        try:
            client, cluster = connect(workers - (here is not None), scheduler_address, security)
            client.register_plugin(warm_plugin(solvers))  # imports + first calls, every worker
            t1 = time.perf_counter()
            log.debug("batch: Dask scheduler %s up in %.1f s", client.scheduler.address, t1 - t0)
            report |= {
                "scheduler": client.scheduler.address,
                "dask_tasks": len(groups),
                "workers": len(client.nthreads()) + (here is not None),
                "driver_solves": here is not None,
            }
            if here is not None:
                report["reason"] = (
                    f"on a local Dask cluster: {workers - 1} worker process(es) and this process"
                )
            _drive(
                client, source, len(todo), jpath, time_limit, progress, max_in_flight,
                no_workers_timeout, here, on_dask_done=close if cluster is not None else None,
            )  # fmt: skip
            t2 = time.perf_counter()
        finally:
            if here is not None:  # rows the driver finished are journaled whatever happened
                here.stop()
                with open(jpath, "a") as f:
                    append_rows(f, here.drain())
            close()
        report |= {"startup_seconds": t1 - t0, "solve_seconds": t2 - t1}
        # a local cluster closes as soon as Dask has nothing left, under the driver's last group
        report["close_seconds"] = closed[1] - closed[0]
        report["close_overlapped"] = closed[1] <= t2
    df = to_frame(read_journal(jpath))
    if not tmp:
        write_table(df, out)
    df.attrs["batch"] = report
    return df


def _solve_here(todo, jpath: Path, time_limit, progress: bool | ProgressBar) -> None:
    """Solve the tasks in this process, one journaled row each (as a worker would)."""
    with progress_bar(len(todo), "solving", progress) as bar, open(jpath, "a") as f:
        for name, solver, payload in todo:
            _append(f, solve_task(name, solver, payload, time_limit))
            bar.advance()


def _drive(
    client, source, n_tasks: int, jpath: Path, time_limit, progress, max_in_flight,
    no_workers_timeout: float | None = 120.0, here: DriverSlot | None = None, on_dask_done=None,
):  # fmt: skip
    """Submit the groups ``source`` hands out (:class:`GroupSource`) at most ``limit`` at a time
    and journal each finished group's rows (one fsync per group) as it arrives. ``here``: this
    process solves too, taking groups from the same source whenever it is idle, and Dask gets :data:`PREFETCH` groups per worker at a time (one running,
    one queued on the worker, so it starts the next group without waiting for this process; a
    group queued on Dask is one the driver cannot take). ``on_dask_done`` (a local cluster's
    close): Dask leaves the last groups to ``here`` (estimated at :data:`CLOSE_RESERVE` seconds
    plus what Dask still holds, which runs first), and ``on_dask_done`` is called once when Dask
    has nothing left while ``here`` still solves."""
    from dask.distributed import as_completed  # heavy: imported on use

    n_workers = max(1, len(client.scheduler_info().get("workers", {})))
    limit = max_in_flight or (PREFETCH * n_workers if here else max(8, 4 * n_workers))
    reserve = CLOSE_RESERVE if here is not None and on_dask_done is not None else 0.0
    run_id = uuid.uuid4().hex[:8]
    meta: dict = {}

    def submit(ac) -> None:
        # the groups Dask still holds run before this one: the driver's share is the rest
        # a driver that has ended takes nothing more
        keep = reserve and here is not None and here.solving
        held = source.seconds([t for tasks in meta.values() for t in tasks]) if keep else 0.0
        nxt = source.take(reserve + held if keep else 0.0)
        if nxt is None:
            return
        k, tasks = nxt
        key = f"fairplace-solve-{run_id}-{k}"
        if len(tasks) == 1:
            fut = client.submit(solve_task, *tasks[0], time_limit, key=key, pure=False)
        else:
            fut = client.submit(solve_chunk, tasks, time_limit, key=key, pure=False)
        meta[fut.key] = tasks
        ac.add(fut)

    ac = as_completed()
    for _ in range(limit):
        submit(ac)
    watch = NoWorkersWatch(client, no_workers_timeout, jpath)
    with progress_bar(n_tasks, "solving", progress) as bar, open(jpath, "a") as f:
        while not ac.is_empty() or (here is not None and here.busy):
            if here is not None and (rows := here.drain()):
                append_rows(f, rows)
                source.observe(rows)
                bar.advance(len(rows))
                continue
            if ac.is_empty():  # only the driver's groups are left
                if on_dask_done is not None:
                    on_dask_done()
                    on_dask_done = None
                time.sleep(0.01)
                continue
            if not ac.has_ready():
                watch.check()  # raises if the cluster has had no worker for too long
                time.sleep(0.01)
                continue
            for fut in ac.next_batch(block=False):
                tasks = meta.pop(fut.key)
                try:
                    res = fut.result()
                    rows = res if isinstance(res, list) else [res]
                except Exception as exc:  # noqa: BLE001 - KilledWorker, cancelled, ...: a row, never abort
                    msg = f"{type(exc).__name__}: {exc}"
                    rows = [
                        {"instance": n, "solver": s, "status": "error", "message": msg}
                        for n, s, _ in tasks
                    ]
                append_rows(f, rows)
                source.observe(rows)
                fut.release()
                bar.advance(len(rows))
                submit(ac)


__all__ = [
    "IN_PROCESS_MAX_TASKS",
    "DriverSlot",
    "local_cluster",
    "run_batch",
    "solve_task",
    "read_journal",
    "resolve_suite",
    "journal_path",
    "to_frame",
    "summarize",
]
