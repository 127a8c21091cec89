"""Simulation sweeps: a grid of schedulers x placements x traces x parameters x seeds, run through
``fairplace.simulate`` into one results table (one row per cell, appended as cells finish).

A spec (TOML or dict)::

    name = "pal-sia-philly"
    schedulers = ["fifo"]
    placements = ["packed-sticky", "pal"]
    traces = ["workload-1", "workload-2"]      # names or CSV paths, passed to simulate(trace=...)
    seeds = [0, 1]
    frames = ["jobs"]                          # optional per-cell frames kept (jobs | apps | rounds)
    [params]                                   # grid axes: name -> list of values
    locality_penalty = [1.0, 2.0, 3.0]
    [fixed]                                    # constant keyword arguments of simulate
    gpus = 64
    [[extra]]                                  # optional: the grid once more, with these
    profile = "longhorn-artifact"              # simulate() arguments (over [fixed]) and
    seeds = [0]                                # its own seeds (default [0])

Rows hold the cell (``scheduler, placement, trace, seed`` and each param), ``status`` (``ok`` |
``error``), ``message``, ``wall_seconds`` and every scalar of the simulation's ``summary``. Finished
cells go to a JSONL journal (the batch's format), so ``resume`` continues an interrupted sweep.
An example spec: ``examples/sweep-pal-vs-load.toml``; reading and checking a spec: ``sweep_spec.py``.
Runs are sequential by default; ``workers > 1`` runs cells on a loopback Dask ``LocalCluster`` and
``scheduler_address`` on an existing Dask cluster, with the same journal (``sweep_dask.py``).
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from fairplace import sim
from fairplace.core.errors import naming
from fairplace.core.progress import ProgressBar, progress_bar
from fairplace.instances.trace_generators import (
    TRACE_GENERATORS,
    make_trace,
)
from fairplace.runs.batch_results import JournalLock, append_row, read_journal, repair_journal
from fairplace.runs.params import NO_WORKERS_TIMEOUT, WORKERS
from fairplace.runs.sweep_dask import run_on_dask
from fairplace.runs.sweep_inputs import per_run_cluster
from fairplace.runs.sweep_schema import FRAMES, SPEC_KEYS  # noqa: F401  (SPEC_KEYS re-exported)
from fairplace.runs.sweep_spec import (  # noqa: F401  (re-exported: the spec's old home)
    CELL_KEYS,
    SweepSpec,
    load_spec,
    validate_spec,
)

#: the field every line of a sweep journal (results and frames) has
SWEEP_KEYS = ("cell_id",)
#: error rows that say nothing about the cell (its worker died, its task was cancelled): ``resume``
#: runs them again (the batch's list)
RETRY_ON_RESUME = ("KilledWorker", "CancelledError", "CommClosedError", "FutureCancelledError")
log = logging.getLogger(__name__)


def cell_id(cell: dict[str, Any]) -> str:
    """A stable identifier of one grid cell (used by ``resume``)."""
    return "|".join(f"{k}={cell[k]}" for k in sorted(cell))


def fixed_key(fixed: dict[str, Any]) -> str:
    """A short fingerprint of a spec's ``[fixed]`` arguments (``progress`` aside), journaled with
    each cell: ``resume`` runs a cell again when it was journaled under other fixed arguments."""
    body = json.dumps(
        {k: v for k, v in fixed.items() if k != "progress"}, sort_keys=True, default=str
    )
    return hashlib.sha1(body.encode()).hexdigest()[:12]


def resumable_cells(rows: Iterable[dict], fixed: dict[str, Any]) -> tuple[set[str], int]:
    """(the cells ``resume`` keeps, the number it runs again for their other ``[fixed]``
    arguments) of a sweep's journal rows: the last row of a cell wins, as in :func:`journaled`;
    rows lost to the infrastructure (:data:`RETRY_ON_RESUME`) do not count, rows of journals older
    than :func:`fixed_key` carry no key and are kept."""
    key = fixed_key(fixed)
    last = {
        r["cell_id"]: r.get("fixed_key", key)
        for r in rows
        if not str(r.get("message", "")).startswith(RETRY_ON_RESUME)
    }
    done = {c for c, k in last.items() if k == key}
    return done, len(last) - len(done)


def _scalars(summary: dict) -> dict[str, Any]:
    out = {}
    for k, v in (summary or {}).items():
        if isinstance(v, (bool, int, float, str)) or v is None:
            out[k] = v
        elif hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
            out[k] = v.item()
    return out


def run_cell(cell: dict, fixed: dict, frames: Iterable[str] = (), simulate: Callable | None = None):
    """Simulate one cell; never raises: failures become ``status='error'`` rows.

    Returns ``(row, {frame name: DataFrame})``.
    """
    t0 = time.perf_counter()
    row = dict(cell, cell_id=cell_id(cell), fixed_key=fixed_key(fixed))
    got: dict[str, pd.DataFrame] = {}
    try:
        if simulate is None:
            simulate = sim.simulate
            fixed = {"progress": False, **fixed}  # no nested progress bars
        kw = {**fixed, **{k: v for k, v in cell.items() if k not in ("trace", "seed")}}
        opts = kw.pop("trace_options", None) or {}
        if cell["trace"] in TRACE_GENERATORS:  # simulate()'s trace_options, made here as the rest
            kw = {**opts, **kw}
        elif opts:
            kw["trace_options"] = opts  # simulate names the problem
        trace, gen_kw = make_trace(cell["trace"], cell["seed"], kw)
        kw = {k: v for k, v in kw.items() if k not in gen_kw or k == "gpus"}
        for k in [
            k for k in kw if "." in k
        ]:  # "scheduler_options.f" -> scheduler_options={"f": ..}
            outer, inner = k.split(".", 1)
            kw[outer] = {**kw.get(outer, {}), inner: kw.pop(k)}
        if kw.pop("per_run", False):
            kw = per_run_cluster(kw, cell["seed"])
        res = simulate(trace=trace, seed=cell["seed"], **kw)
        row.update(_scalars(getattr(res, "summary", {})))
        row.update(status="ok", message="")
        for f in frames:
            df = getattr(res, f, None)
            if isinstance(df, pd.DataFrame):
                df = df.drop(columns=["allocation"], errors="ignore")  # per-round GPU maps: bulky
                got[f] = df.assign(**{k: v for k, v in cell.items() if k not in df.columns})
    except Exception as exc:  # noqa: BLE001 - a failing cell is a row, never the end of the sweep
        row.update(status="error", message=f"{type(exc).__name__}: {exc}"[:500])
    row["wall_seconds"] = time.perf_counter() - t0
    return row, got


def interruptible(fn: Callable, *args):
    """``fn(*args)`` in a daemon thread while this (main) thread waits in short joins, so that a
    Ctrl-C ends a sequential sweep at once (KeyboardInterrupt here; the cell is not journaled),
    even while the cell is inside native code (HiGHS, numpy) that releases the GIL but would
    return to the main thread's signal check only when done. Off the main thread: a plain call."""
    if threading.current_thread() is not threading.main_thread():
        return fn(*args)
    out: dict[str, Any] = {}
    ctx = contextvars.copy_context()  # the caller's progress settings (core/progress.py)

    def target() -> None:
        try:
            out["value"] = ctx.run(fn, *args)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            out["error"] = exc

    thread = threading.Thread(target=target, daemon=True, name="fairplace-sweep-cell")
    thread.start()
    while thread.is_alive():
        thread.join(0.1)
    if "error" in out:
        raise out["error"]
    return out["value"]


def results_paths(out: str | Path) -> dict[str, Path]:
    """``{table: path}`` for a sweep written to ``out``: the journals (``jsonl``, ``<frame>.jsonl``)
    and the tables written from them at the end (``.parquet`` / ``.csv`` siblings)."""
    base = Path(out)
    stem = base.with_suffix("") if base.suffix in (".parquet", ".csv", ".jsonl") else base
    paths = {
        "parquet": stem.with_suffix(".parquet"),
        "csv": stem.with_suffix(".csv"),
        "jsonl": stem.with_suffix(".jsonl"),
    }
    for f in FRAMES:
        for ext in ("csv", "parquet", "jsonl"):
            paths[f"{f}.{ext}"] = stem.parent / f"{stem.name}.{f}.{ext}"
    return paths


def _write_table(rows: list[dict], csv: Path, parquet: Path) -> None:
    """The CSV table of ``rows`` and its parquet twin (typed as the CSV reads back)."""
    with naming(csv):
        pd.DataFrame(rows).to_csv(csv, index=False)
    with naming(parquet):
        pd.read_csv(csv).to_parquet(parquet, index=False)


def journaled(paths: dict[str, Path], frames: Iterable[str]) -> tuple[list[dict], dict[str, list]]:
    """The journaled rows (last one per cell wins) and each frame's rows: a frame keeps the rows of
    the last run of each journaled cell (a crash between a cell's frame and its row leaves an orphan
    frame line; a resumed run of that cell replaces it). Also of a sweep still running."""
    rows = {r["cell_id"]: r for r in read_journal(paths["jsonl"], SWEEP_KEYS) if "cell_id" in r}
    out = {}
    for f in frames:
        last = {e["cell_id"]: e["rows"] for e in read_journal(paths[f"{f}.jsonl"], SWEEP_KEYS)}
        out[f] = [r for cid in rows for r in last.get(cid, [])]
    return list(rows.values()), out


def _finish(paths: dict[str, Path], frames: Iterable[str]) -> list[dict]:
    """Write the tables from the journals (:func:`journaled`); returns the journaled rows."""
    rows, tables = journaled(paths, frames)
    if rows:
        _write_table(rows, paths["csv"], paths["parquet"])
    for f, got in tables.items():
        if got:
            _write_table(got, paths[f"{f}.csv"], paths[f"{f}.parquet"])
    return rows


def run_sweep(
    spec: SweepSpec | dict | str | Path,
    out: str | Path,
    *,
    resume: bool = False,
    workers: int = 1,
    progress: bool | ProgressBar = True,
    simulate: Callable | None = None,
    scheduler_address: str | None = None,
    security=None,
    no_workers_timeout: float | None = 120.0,
) -> pd.DataFrame:
    """Run every cell of ``spec``; journal each finished cell, then write the tables.

    Journal (the batch format, :mod:`fairplace.runs.batch_results`): one fsync'd JSON line per finished
    cell in ``<out>.jsonl`` (per-cell frames in ``<out>.<frame>.jsonl``, written before the cell's
    row); at the end ``<out>.csv`` and ``<out>.parquet`` (and ``<out>.<frame>.csv|parquet``).
    ``resume`` skips cells whose ``cell_id`` is already journaled (a torn last line from a crash is
    dropped), except cells lost to the infrastructure (:data:`RETRY_ON_RESUME`) and cells journaled
    under other ``[fixed]`` arguments (:func:`fixed_key`; rows of journals older than the key are
    trusted), which run again;
    without it earlier results are deleted. ``workers > 1``: cells on a loopback Dask cluster;
    ``scheduler_address``: on an existing one (``security``: its TLS credentials, default the Dask
    configuration's; ``no_workers_timeout``: see :mod:`fairplace.runs.sweep_dask`).
    ``simulate`` replaces ``fairplace.simulate`` (tests). ``progress``: see
    :func:`fairplace.core.progress.progress_bar`. Returns the whole results table.
    """
    if not isinstance(spec, SweepSpec):
        spec = load_spec(spec)
    WORKERS.check(workers, WORKERS.flag)
    NO_WORKERS_TIMEOUT.check(no_workers_timeout, NO_WORKERS_TIMEOUT.flag)
    paths = results_paths(out)
    paths["csv"].parent.mkdir(parents=True, exist_ok=True)
    dask = {
        "scheduler_address": scheduler_address,
        "security": security,
        "no_workers_timeout": no_workers_timeout,
    }
    with JournalLock(paths["csv"]):  # one sweep at a time per results table
        return _run_locked(spec, paths, resume, workers, progress, simulate, dask)


def _run_locked(spec, paths, resume, workers, progress, simulate, dask) -> pd.DataFrame:
    journals = [paths["jsonl"], *(paths[f"{f}.jsonl"] for f in spec.frames)]
    if resume:
        for j in journals:
            if j.exists():
                repair_journal(j)
        done, stale = resumable_cells(read_journal(paths["jsonl"], SWEEP_KEYS), spec.fixed)
        if stale:
            log.warning(
                "sweep %s: %d journaled cell(s) ran with other [fixed] arguments; running them again",
                spec.name, stale,
            )  # fmt: skip
    else:
        for p in paths.values():
            p.unlink(missing_ok=True)
        done = set()
    todo = [c for c in spec.cells() if cell_id(c) not in done]
    log.debug("sweep %s: %d of %d cell(s) to run", spec.name, len(todo), len(spec))

    def record(row, got):
        for f, df in got.items():
            with paths[f"{f}.jsonl"].open("a") as fh:
                entry = {"cell_id": row["cell_id"], "rows": df.to_dict(orient="records")}
                append_row(fh, entry)
        with paths["jsonl"].open("a") as fh:
            append_row(fh, row)  # the commit point of the cell

    remote = dask["scheduler_address"] is not None
    with progress_bar(len(todo), spec.name, progress) as bar:
        if not remote and (workers == 1 or len(todo) <= 1):
            for c in todo:
                record(*interruptible(run_cell, c, spec.fixed, spec.frames, simulate))
                bar.advance()
        elif todo:
            run_on_dask(
                todo, run_cell, (spec.fixed, spec.frames, simulate), record, bar,
                workers=workers, journal=paths["jsonl"], cell_id=cell_id, **dask,
            )  # fmt: skip
    if not _finish(paths, spec.frames):
        return pd.DataFrame(columns=[*CELL_KEYS, "status", "message"])
    return pd.read_parquet(paths["parquet"])
