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
An example spec: ``examples/sweep-pal-vs-load.toml``.
Runs are sequential by default; ``workers > 1`` runs cells on a loopback Dask ``LocalCluster`` and
``scheduler_address`` on an existing Dask cluster, with the same journal (``sweep_dask.py``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import time
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from fairplace import sim
from fairplace.core.errors import DataError, OptionError, naming
from fairplace.core.limits import MAX_SWEEP_CELLS, check_workers
from fairplace.core.progress import ProgressBar, progress_bar
from fairplace.instances.trace_generators import (
    TRACE_GENERATORS,
    check_trace_name,
    generator_function,
    generator_params,
    make_trace,
)
from fairplace.instances.traces import SIA_PHILLY, load_trace
from fairplace.runs import sweep_schema
from fairplace.runs.batch_results import JournalLock, append_row, read_journal, repair_journal
from fairplace.runs.sweep_dask import run_on_dask
from fairplace.runs.sweep_inputs import SWEEP_OPTIONS, per_run_cluster
from fairplace.runs.sweep_schema import FRAMES, SPEC_KEYS
from fairplace.sim.config import field_names
from fairplace.solvers.placement.policies import POLICY_NAMES

#: the field every line of a sweep journal (results and frames) has
SWEEP_KEYS = ("cell_id",)
CELL_KEYS = ("scheduler", "placement", "trace", "seed")
#: error rows that say nothing about the cell (its worker died, its task was cancelled): ``resume``
#: runs them again (the batch's list)
RETRY_ON_RESUME = ("KilledWorker", "CancelledError", "CommClosedError", "FutureCancelledError")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep grid (see module docstring)."""

    name: str
    schedulers: tuple[str, ...]
    placements: tuple[str, ...]
    traces: tuple[str, ...]
    seeds: tuple[int, ...] = (0,)
    params: dict[str, tuple] = field(default_factory=dict)
    fixed: dict[str, Any] = field(default_factory=dict)
    frames: tuple[str, ...] = ()
    #: further copies of the grid: (their seeds, simulate() arguments that are cell coordinates
    #: and win over ``fixed``), e.g. one run of a fixed cluster draw next to many sampled ones
    extra: tuple[tuple[tuple[int, ...], dict[str, Any]], ...] = ()

    def cells(self) -> list[dict[str, Any]]:
        """The grid in a fixed order, then each ``extra`` copy: one dict of cell coordinates per
        simulation."""
        axes = list(self.params)
        out = []
        for seeds, over in ((self.seeds, {}), *self.extra):
            for sch, pl, tr in itertools.product(self.schedulers, self.placements, self.traces):
                for values in itertools.product(*(self.params[a] for a in axes)):
                    for seed in seeds:
                        cell = {"scheduler": sch, "placement": pl, "trace": tr, "seed": seed}
                        cell.update(dict(zip(axes, values, strict=True)))
                        out.append({**cell, **over})
        return out

    def __len__(self) -> int:
        n = len(self.schedulers) * len(self.placements) * len(self.traces)
        n *= math.prod(len(v) for v in self.params.values())
        return n * (len(self.seeds) + sum(len(s) for s, _ in self.extra))


def _simulate_params() -> set[str]:
    """Keyword names ``fairplace.simulate`` accepts: the scheduler, the placement and the
    :class:`~fairplace.sim.SimulationConfig` fields."""
    return {"scheduler", "placement", *field_names()}


def _names(spec: dict, key: str, known: tuple[str, ...] | None) -> tuple[str, ...]:
    v = spec.get(key)
    if isinstance(v, str):
        raise OptionError(key, f"must be a list of names, e.g. [{v!r}], got the string {v!r}")
    if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
        raise OptionError(key, "must be a non-empty list of names")
    if known is not None:
        for x in v:
            if x not in known:
                raise OptionError(key, f"unknown value {x!r}; known: {', '.join(known)}")
    return tuple(v)


def validate_spec(spec: dict, *, check_names: bool = True) -> SweepSpec:
    """Check a spec dict and return a :class:`SweepSpec`; raises :class:`OptionError` naming the key."""
    if not isinstance(spec, dict):
        raise OptionError("spec", "must be a TOML table")
    for k in spec:
        if k not in SPEC_KEYS:
            raise OptionError(k, f"unknown key; allowed: {', '.join(SPEC_KEYS)}")
    traces = spec.get("traces")
    named = traces if isinstance(traces, list) else [traces]
    gens = [
        generator_function(t) for t in named if isinstance(t, str)
    ]  # the schema checks the rest
    sweep_schema.check(spec, [sim.SimulationConfig, *(g for g in gens if g)], check_names)
    name = spec.get("name", "sweep")
    if not isinstance(name, str):
        raise OptionError("name", "must be a string")
    scheds = _names(spec, "schedulers", sim.SCHEDULERS if check_names else None)
    places = _names(spec, "placements", POLICY_NAMES if check_names else None)
    traces = _names(spec, "traces", None)
    seeds = spec.get("seeds", [0])
    if isinstance(seeds, int):
        seeds = [seeds]
    if not isinstance(seeds, list) or not seeds or not all(type(s) is int for s in seeds):
        raise OptionError("seeds", "must be a non-empty list of integers")
    allowed = _simulate_params() if check_names else None
    if allowed is not None:
        for tr in traces:
            allowed |= generator_params(tr)
    reserved = set(CELL_KEYS)
    params: dict[str, tuple] = {}
    for table in ("params", "fixed"):
        t = spec.get(table, {})
        if not isinstance(t, dict):
            raise OptionError(table, "must be a table of simulate() keyword arguments")
        for k, v in t.items():
            if k in reserved:
                raise OptionError(f"{table}.{k}", f"{k!r} is a grid axis of its own")
            if allowed is not None and k.split(".")[0] not in allowed | set(SWEEP_OPTIONS):
                raise OptionError(f"{table}.{k}", "unknown simulate() parameter")
            if table == "params" and (not isinstance(v, list) or not v):
                raise OptionError(f"params.{k}", "must be a non-empty list of values")
    params = {k: tuple(v) for k, v in spec.get("params", {}).items()}
    fixed = dict(spec.get("fixed", {}))
    for k in set(params) & set(fixed):
        raise OptionError(f"fixed.{k}", "is also a grid axis in [params]")
    frames = spec.get("frames", [])
    if not isinstance(frames, list) or any(f not in FRAMES for f in frames):
        raise OptionError("frames", f"must be a list drawn from {', '.join(FRAMES)}")
    extra = _extra(spec.get("extra", []), allowed, reserved | set(params))
    out = SweepSpec(name, scheds, places, traces, tuple(seeds), params, fixed, tuple(frames), extra)
    if len(out) > MAX_SWEEP_CELLS:
        axes = " x ".join(
            f"{len(v)} {k}" for k, v in (("schedulers", scheds), ("placements", places),
                                         ("traces", traces), ("seeds", seeds), *params.items())
        )  # fmt: skip
        raise OptionError(
            "params", f"{len(out):,} cells ({axes}) exceed the limit of {MAX_SWEEP_CELLS:,}"
        )
    if check_names:
        _check_inputs(traces, params, fixed)
        for _, over in extra:
            _check_inputs(traces, params, {**fixed, **over})
    return out


def _extra(tables, allowed: set | None, reserved: set) -> tuple:
    """``[[extra]]`` tables -> ((seeds, simulate() arguments), ...)."""
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise OptionError("extra", "must be a list of tables ([[extra]])")
    out = []
    for i, t in enumerate(tables):
        over = {k: v for k, v in t.items() if k != "seeds"}
        for k in over:
            if k in reserved:
                raise OptionError(f"extra[{i}].{k}", f"{k!r} is a grid axis of its own")
            if allowed is not None and k.split(".")[0] not in allowed | set(SWEEP_OPTIONS):
                raise OptionError(f"extra[{i}].{k}", "unknown simulate() parameter")
        seeds = t.get("seeds", [0])
        if not isinstance(seeds, list) or not seeds or not all(type(s) is int for s in seeds):
            raise OptionError(f"extra[{i}].seeds", "must be a non-empty list of integers")
        out.append((tuple(seeds), over))
    return tuple(out)


def _check_inputs(traces, params: dict, fixed: dict) -> None:
    """What the schema cannot see: every trace exists and is valid, every cluster size splits into
    whole machines."""
    for k, tr in enumerate(traces):
        if tr in SIA_PHILLY or tr in TRACE_GENERATORS:
            continue
        try:
            check_trace_name(tr)
            load_trace(tr)
        except DataError as exc:
            raise OptionError(f"traces[{k}]", str(exc)) from None
    where = {k: ("params" if k in params else "fixed") for k in ("gpus", "gpus_per_machine")}
    for g in params.get("gpus", [fixed.get("gpus")]):
        for m in params.get("gpus_per_machine", [fixed.get("gpus_per_machine", 4)]):
            if g is not None and g % m:
                raise OptionError(
                    f"{where['gpus']}.gpus",
                    f"{g} GPUs is not a multiple of {m} GPUs per machine",
                )


def load_spec(path: str | Path | dict, *, check_names: bool = True) -> SweepSpec:
    """Read a TOML spec file (or take a dict) and validate it."""
    if isinstance(path, dict):
        return validate_spec(path, check_names=check_names)
    p = Path(path)
    try:
        with p.open("rb") as fh:
            raw = tomllib.load(fh)
    except FileNotFoundError as exc:
        raise OptionError(str(p), "no such spec file") from exc
    except OSError as exc:  # a folder, no permission, a name too long, ...
        raise OptionError(str(p), f"cannot read the spec: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise OptionError(str(p), f"not UTF-8 text ({exc.reason})") from None
    except tomllib.TOMLDecodeError as exc:
        raise OptionError(str(p), f"not valid TOML: {exc}") from exc
    return validate_spec(raw, check_names=check_names)


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
    check_workers(workers)
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
                record(*run_cell(c, spec.fixed, spec.frames, simulate))
                bar.advance()
        elif todo:
            run_on_dask(
                todo, run_cell, (spec.fixed, spec.frames, simulate), record, bar,
                workers=workers, journal=paths["jsonl"], cell_id=cell_id, **dask,
            )  # fmt: skip
    if not _finish(paths, spec.frames):
        return pd.DataFrame(columns=[*CELL_KEYS, "status", "message"])
    return pd.read_parquet(paths["parquet"])
