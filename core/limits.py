"""Sane ranges of user inputs, shared by the JSON Schemas (``instances/schema.py``), the loaders, the
sweep spec schema and the CLI: every number a user gives is finite and inside one of these ranges,
so a typo (``1e400``, ``4000000000`` GPUs) is a one-line error instead of an overflow or a MemoryError.

Sizes of generated inputs (instances, traces, sweeps) have upper bounds too, so that a typo
(``--apps 100000000``) is an error, not minutes of work: :data:`MAX_GENERATED_APPS`,
:data:`MAX_GENERATED_BIDS`, :data:`MAX_TRACE_JOBS`, :data:`MAX_TRACE_APPS`,
:data:`MAX_SWEEP_CELLS` (docs/instances.md, "Limits").

:func:`check_value` checks one value against a JSON Schema (the same schemas the files are checked
with), :func:`annotation_schema` makes one from a parameter annotation: the one validator of
options given as Python values and as JSON / TOML.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from fairplace.core.errors import OptionError

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


def check_workers(workers) -> int:
    """``workers`` as an int in [1, :data:`MAX_WORKERS`], else an :class:`OptionError` naming it."""
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise OptionError("--workers", f"must be an integer in [1, {MAX_WORKERS}], got {workers!r}")
    return workers


def check_count(value, name: str, hi: int, lo: int = 1) -> int:
    """``value`` as an int in [lo, hi], else an :class:`OptionError` naming ``name``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or not lo <= int(value) <= hi
    ):
        raise OptionError(name, f"must be an integer in [{lo}, {hi:,}], got {value!r}")
    return int(value)


def check_sizes(apps=None, machines=None, gpus_per_machine=None, seed=None, apps_name="apps"):
    """The size arguments of an instance generator (``instances/generators.py``): ``apps`` in
    [1, :data:`MAX_GENERATED_APPS`], ``machines`` x ``gpus_per_machine`` GPUs in [1,
    :data:`MAX_GPUS`], ``seed`` a seed; an :class:`OptionError` names the first bad one."""
    if apps is not None:
        check_count(apps, apps_name, MAX_GENERATED_APPS)
    if machines is not None:
        check_count(machines, "machines", MAX_GPUS)
    if gpus_per_machine is not None:
        check_count(gpus_per_machine, "gpus_per_machine", MAX_GPUS)
    if (
        machines is not None
        and gpus_per_machine is not None
        and machines * gpus_per_machine > MAX_GPUS
    ):
        raise OptionError(
            "machines",
            f"{machines} machines x {gpus_per_machine} GPUs = {machines * gpus_per_machine:,} "
            f"GPUs exceed the limit of {MAX_GPUS:,}",
        )
    if seed is not None:
        check_seed(seed)


def check_seed(seed, name: str = "seed") -> int:
    """A seed: an integer in [0, :data:`MAX_SEED`] (not a bool, not a float)."""
    if (
        isinstance(seed, bool)
        or not isinstance(seed, numbers.Integral)
        or not 0 <= int(seed) <= MAX_SEED
    ):
        raise OptionError(name, f"must be an integer in [0, 2^63 - 1], got {seed!r}")
    return int(seed)


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


def check_value(name: str, value: Any, schema: dict) -> None:
    """Raise :class:`OptionError` naming ``name`` when ``value`` breaks the JSON Schema ``schema``
    (NaN and infinities are never valid numbers)."""
    if not schema:
        return
    import jsonschema  # heavy: imported on use (keeps `fairplace --help` light)

    v = plain(value)
    if isinstance(v, float) and not math.isfinite(v):
        raise OptionError(name, f"must be finite, got {value!r}")
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(v))
    if errors:
        err = max(errors, key=lambda e: len(e.absolute_path))
        while err.context:  # anyOf: the alternative that got furthest
            err = max(err.context, key=lambda e: len(e.absolute_path))
        msg = err.message
        if err.validator == "enum":
            known = ", ".join(str(x) for x in err.validator_value)
            msg = f"expected one of {known}, got {err.instance!r}"
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
        raise OptionError(f"{name}{where}", " ".join(msg.split())[:200])
