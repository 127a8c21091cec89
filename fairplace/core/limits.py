"""Sane ranges of user inputs, shared by the JSON Schemas (``instances/schema.py``), the loaders, the
sweep spec schema and the CLI: every number a user gives is finite and inside one of these ranges,
so a typo (``1e400``, ``4000000000`` GPUs) is a one-line error instead of an overflow or a MemoryError.
"""

from __future__ import annotations

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


def check_workers(workers) -> int:
    """``workers`` as an int in [1, :data:`MAX_WORKERS`], else an :class:`OptionError` naming it."""
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise OptionError("--workers", f"must be an integer in [1, {MAX_WORKERS}], got {workers!r}")
    return workers
