"""Sweep cells on Dask: a loopback cluster (``workers > 1``) or an existing scheduler
(``scheduler_address``), with the sequential sweep's journal guarantees.

Each cell is one Dask task; this process journals each finished cell (its frames, then its row: the
commit point) as it arrives, so a crash, Ctrl-C or a lost cluster loses no finished cell. A worker
lost mid-cell: Dask runs the cell again on another worker (up to its ``allowed-failures``), then
gives up on it with ``KilledWorker``; that cell becomes an ``error`` row whose message starts with
the exception's name (:data:`fairplace.runs.batch.RETRY_ON_RESUME`), which ``--resume`` runs again.
With no worker at all for ``no_workers_timeout`` seconds the sweep stops with
:class:`~fairplace.core.errors.ClusterUnavailable` (finished cells kept)."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from fairplace.runs.dask_cluster import NoWorkersWatch, close_quietly, connect

log = logging.getLogger(__name__)


def lost_cell(cell: dict, cell_id: str, exc: BaseException) -> dict:
    """The row of a cell whose task failed outside the simulator (a worker died, the task was
    cancelled): ``status`` error, the exception in ``message``."""
    return dict(
        cell, cell_id=cell_id, status="error", message=f"{type(exc).__name__}: {exc}"[:500],
        wall_seconds=None,
    )  # fmt: skip


def run_on_dask(
    todo: list[dict],
    run_cell: Callable,
    args: tuple,
    record: Callable,
    bar,
    *,
    workers: int,
    scheduler_address: str | None,
    security=None,
    no_workers_timeout: float | None = 120.0,
    journal: Path | None = None,
    cell_id: Callable[[dict], str],
) -> None:
    """Run ``run_cell(cell, *args)`` for every cell of ``todo`` on Dask and ``record(row, frames)``
    each result in this process as it arrives (module docstring)."""
    from dask.distributed import as_completed  # heavy: imported on use

    t0 = time.perf_counter()
    client, cluster = connect(workers, scheduler_address, security)
    try:
        log.debug(
            "sweep: %d cell(s) on the Dask scheduler %s (%d worker(s), up in %.1f s)",
            len(todo), client.scheduler.address, len(client.nthreads()), time.perf_counter() - t0,
        )  # fmt: skip
        run_id = uuid.uuid4().hex[:8]
        cells, ac = {}, as_completed()
        for k, c in enumerate(todo):
            fut = client.submit(run_cell, c, *args, key=f"fairplace-cell-{run_id}-{k}", pure=False)
            cells[fut.key] = c
            ac.add(fut)
        watch = NoWorkersWatch(client, no_workers_timeout, journal or Path("sweep"), "sweep")
        while not ac.is_empty():
            if not ac.has_ready():
                watch.check()  # raises if the cluster has had no worker for too long
                time.sleep(0.01)
                continue
            for fut in ac.next_batch(block=False):
                c = cells.pop(fut.key)
                try:
                    row, got = fut.result()
                except Exception as exc:  # noqa: BLE001 - KilledWorker, cancelled, ...: a row
                    row, got = lost_cell(c, cell_id(c), exc), {}
                    log.warning("sweep: cell %s lost: %s", row["cell_id"], row["message"])
                record(row, got)
                fut.release()
                bar.advance()
    finally:
        close_quietly(client, cluster)
