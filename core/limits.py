"""Sane ranges of user inputs, shared by the JSON Schemas (``instances/schema.py``), the loaders, the
sweep spec schema and the CLI: every number a user gives is finite and inside one of these ranges,
so a typo (``1e400``, ``4000000000`` GPUs) is a one-line error instead of an overflow or a MemoryError.

Sizes of generated inputs (instances, traces, sweeps) have upper bounds too, so that a typo
(``--apps 100000000``) is an error, not minutes of work: :data:`MAX_GENERATED_APPS`,
:data:`MAX_GENERATED_BIDS`, :data:`MAX_TRACE_JOBS`, :data:`MAX_TRACE_APPS`,
:data:`MAX_SWEEP_CELLS` (docs/instances.md, "Limits").

Sizes of inputs read (:class:`SizeLimit`: file bytes, apps, bids per app, jobs, CSV rows) are
checked before the work they would blow up: a file's size before it is parsed, a CSV's rows by
counting lines before pandas reads it, an instance's arrays before the schema walks them. Each one
is raised (or lowered) with its environment variable (``FAIRPLACE_MAX_JSON_BYTES=100000000``),
never by an edit; the error names it.

:func:`annotation_schema` makes a JSON Schema from a parameter annotation (the sweep schema of an
argument without a spec; options with one are checked by it, ``core/params.py``).
"""

from __future__ import annotations

import contextlib
import csv
import math
import os
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairplace.core.errors import DataError, OptionError

#: GPUs in one cluster / instance / simulation (the largest published clusters have ~10^5).
MAX_GPUS = 100_000
#: counts of apps, jobs, phases, machines, per-job GPU demands (d_max, demand_max, ...).
MAX_COUNT = 1_000_000
#: ratios: PM-scores, locality penalties, job weights, locality sensitivities.
MAX_RATIO = 1e6
#: finish-time fairness rho (T_shared / T_ideal).
MAX_RHO = 1e12
#: seconds (clocks, per-iteration times, work) and iteration counts: ~3 x 10^4 years in seconds.
MAX_TIME = 1e12
#: seeds (numpy accepts any non-negative integer; 2^63 - 1 keeps them int64-safe in tables).
MAX_SEED = 2**63 - 1
#: any integer literal in an instance document beyond this is out of range (I-JSON, RFC 7493).
MAX_SAFE_INT = 2**53
#: Dask worker processes started by one batch / sweep.
MAX_WORKERS = 256
#: a job's work iters_left x t_iter (GPU-seconds) is at least this: a smaller product underflows
#: the finish-time formulas (T_id = 0)
MIN_WORK = 1e-9
#: apps / jobs of one generated instance (``fairplace instances generate``, ``random_*``)
MAX_GENERATED_APPS = 100_000
#: bids of one generated explicit auction (apps x bids per app; ~15 s to draw on one core)
MAX_GENERATED_BIDS = 100_000
#: jobs of one generated trace (``synergy``: ``n_jobs``)
MAX_TRACE_JOBS = 1_000_000
#: apps of one generated THEMIS workload (``themis-1`` / ``themis-2``: ``n_apps``)
MAX_TRACE_APPS = 100_000
#: simulations (cells) of one sweep
MAX_SWEEP_CELLS = 100_000


_INT = {"type": "integer", "minimum": -MAX_SAFE_INT, "maximum": MAX_SAFE_INT}
_NUM = {"type": "number", "minimum": -MAX_TIME, "maximum": MAX_TIME}


def annotation_schema(annotation: Any) -> dict:
    """A value schema from a parameter annotation (a string under ``from __future__ import
    annotations``): ``int``, ``float``, ``bool``, ``str``, sequences, mappings, ``| None``; ``{}``
    (anything) when it says nothing usable."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    out: list[dict] = []
    for part in (p.strip() for p in str(text).split("|")):
        head = part.split("[")[0]
        if head == "bool":
            out.append({"type": "boolean"})
        elif head == "int":
            out.append(_INT)
        elif head == "float":
            out.append(_NUM)
        elif head == "str":
            out.append({"type": "string"})
        elif head in ("tuple", "list", "Sequence"):
            out.append({"type": "array"})
        elif head in ("dict", "Mapping"):
            out.append({"type": "object"})
        elif head == "None":
            out.append({"type": "null"})
        else:
            return {}
    return out[0] if len(out) == 1 else {"anyOf": out} if out else {}


def plain(value: Any) -> Any:
    """``value`` with numpy scalars as Python numbers and tuples as lists (what JSON would hold)."""
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        return value.item()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


#: limits raised for a block of code (:func:`size_limit`): name -> value
_RAISED: ContextVar[Mapping[str, int] | None] = ContextVar("fairplace_size_limits", default=None)


@dataclass(frozen=True)
class SizeLimit:
    """An upper bound on the size of an input read: ``default``, or the integer in the environment
    variable :attr:`env` (``FAIRPLACE_MAX_<NAME>``) when it is set."""

    name: str
    default: int
    unit: str
    what: str

    @property
    def env(self) -> str:
        return f"FAIRPLACE_MAX_{self.name.upper()}"

    def value(self) -> int:
        """The limit in force: :attr:`env` when set (an integer >= 1: ``64000000``, ``64_000_000``,
        ``6.4e7``), else :attr:`default`; at least what :func:`size_limit` raised it to."""
        return max(self._value(), (_RAISED.get() or {}).get(self.name, 0))

    def _value(self) -> int:
        raw = os.environ.get(self.env, "").strip()
        if not raw:
            return self.default
        try:
            value = float(raw.replace("_", ""))
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value >= 1 and value == int(value)):
            raise OptionError(self.env, f"must be an integer >= 1, got {raw!r}")
        return int(value)

    def check(self, n: int, where: str, error: type[DataError] = DataError) -> None:
        """Raise ``error(where, ...)`` naming the limit and how to raise it when ``n`` exceeds it."""
        limit = self.value()
        if n > limit:
            raise error(
                where,
                f"{n:,} {self.unit} exceed the limit of {limit:,} {self.unit} {self.what} "
                f"(set the environment variable {self.env} to raise it)",
            )


@contextlib.contextmanager
def size_limit(limit: SizeLimit, at_least: int) -> Iterator[None]:
    """``limit`` is at least ``at_least`` while the block runs (this thread / context only): a
    command reading back its own output (``fairplace instances generate``)."""
    token = _RAISED.set({**(_RAISED.get() or {}), limit.name: int(at_least)})
    try:
        yield
    finally:
        _RAISED.reset(token)


#: bytes of a JSON / TOML document read (an instance, a sweep spec, a suite's instance): ~2x the
#: largest generated instance (MAX_GENERATED_BIDS bids, ~17 MB); parsing 50 MB takes ~5 s
JSON_BYTES = SizeLimit("json_bytes", 32 * 2**20, "bytes", "per JSON / TOML file")
#: bytes of a CSV read (a trace, a variability profile); a trace's rows are bounded by TRACE_ROWS
CSV_BYTES = SizeLimit("csv_bytes", 256 * 2**20, "bytes", "per CSV file")
#: jobs (data rows) of a trace read from a CSV or given as a frame: what a generated one may have
TRACE_ROWS = SizeLimit("trace_rows", MAX_TRACE_JOBS, "rows", "per trace")
#: apps of one instance read (what a generated one may have)
APPS = SizeLimit("apps", MAX_GENERATED_APPS, "apps", "per instance")
#: bids of one app of an instance read (a generated auction has at most MAX_GENERATED_BIDS in all)
BIDS_PER_APP = SizeLimit("bids_per_app", MAX_GENERATED_BIDS, "bids", "per app")
#: jobs of one instance read (a placement's jobs; an auction's agent-form jobs, all apps together)
JOBS = SizeLimit("jobs", MAX_GENERATED_APPS, "jobs", "per instance")
#: every size limit of inputs read (docs/instances.md, "Limits")
SIZE_LIMITS = (JSON_BYTES, CSV_BYTES, TRACE_ROWS, APPS, BIDS_PER_APP, JOBS)


def check_file_bytes(
    path: str | Path, limit: SizeLimit, where: str, error: type[DataError] = DataError
) -> None:
    """The file's size against ``limit`` before it is read (a file that cannot be stat'ed is left
    to the read that follows, which reports it)."""
    try:
        size = os.stat(path).st_size
    except (OSError, ValueError):
        return
    limit.check(size, where, error)


def check_csv_rows(
    path: str | Path, where: str, error: type[DataError] = DataError, limit: SizeLimit = TRACE_ROWS
) -> None:
    """The CSV's bytes (:data:`CSV_BYTES`) and data rows (``limit``) before it is parsed: the
    non-blank lines are counted in 1 MiB blocks, less the header (exact unless a field is quoted;
    then the records are counted with :mod:`csv`, stopping past the limit)."""
    check_file_bytes(path, CSV_BYTES, where, error)
    cap = limit.value()
    lines, carry, quoted = 0, b"", False
    try:
        with open(path, "rb") as fh:
            while block := fh.read(2**20):
                parts = (carry + block).split(b"\n")
                carry = parts.pop()
                lines += sum(1 for part in parts if part.strip())
                quoted = quoted or b'"' in block
    except OSError:  # unreadable: left to the parser, which reports it
        return
    rows = lines + bool(carry.strip()) - 1  # the header is a line
    if rows <= cap:
        return
    if quoted:  # a quoted field may hold newlines: count records
        rows = -1
        with open(path, newline="", encoding="utf-8", errors="replace") as fh:
            for record in csv.reader(fh):
                rows += bool(record)
                if rows > cap:
                    break
        if rows <= cap:
            return
        raise error(
            where,
            f"more than {cap:,} rows, the limit {limit.what} "
            f"(set the environment variable {limit.env} to raise it)",
        )
    limit.check(rows, where, error)


def check_instance_sizes(doc: Any, error: type[DataError] = DataError) -> None:
    """The arrays of an instance document before the schema walks them: GPUs (the contract's
    range :data:`MAX_GPUS`), apps (:data:`APPS`), bids per app (:data:`BIDS_PER_APP`), jobs
    (:data:`JOBS`). Wrong types are left to the schema."""
    if not isinstance(doc, Mapping):
        return
    gpus = doc.get("gpus")
    if isinstance(gpus, list) and len(gpus) > MAX_GPUS:
        raise error(
            "$.gpus", f"{len(gpus):,} GPUs exceed the contract's range of {MAX_GPUS:,} (MAX_GPUS)"
        )
    jobs = doc.get("jobs")
    n_jobs = len(jobs) if isinstance(jobs, list) else 0
    apps = doc.get("apps")
    if isinstance(apps, list):
        APPS.check(len(apps), "$.apps", error)
        for i, app in enumerate(apps):
            if not isinstance(app, Mapping):
                continue
            bids = app.get("bids")
            if isinstance(bids, list):
                BIDS_PER_APP.check(len(bids), f"$.apps[{i}].bids", error)
            agent_jobs = app.get("jobs")
            n_jobs += len(agent_jobs) if isinstance(agent_jobs, list) else 0
    JOBS.check(n_jobs, "$.jobs" if isinstance(jobs, list) else "$.apps[*].jobs", error)
