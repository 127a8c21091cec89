"""Generated traces by name: the THEMIS workloads (``themis-1``, ``themis-2``; THEMIS §6, Fig. 8)
and the Synergy-style trace (``synergy``). ``fairplace.simulate`` and sweeps accept these names next
to the bundled Sia-Philly traces; a sweep's grid may vary the generators' keyword arguments."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd

from fairplace.core.errors import TraceError

from .models import MODELS
from .traces import SIA_PHILLY, synergy_trace
from .workloads import themis_workload


def _themis(workload: int) -> Callable[..., pd.DataFrame]:
    def gen(**kw):
        return themis_workload(workload, **kw)

    return gen


def _synergy(**kw) -> pd.DataFrame:
    t_iter = {n: m.iter_seconds for n, m in MODELS.items()}
    return synergy_trace(t_iter=t_iter, **kw)


#: generated trace name -> (frame maker, the public generator whose keyword arguments it takes)
_TABLE: Mapping[str, tuple[Callable[..., pd.DataFrame], Callable]] = MappingProxyType(
    {
        "themis-1": (_themis(1), themis_workload),
        "themis-2": (_themis(2), themis_workload),
        "synergy": (_synergy, synergy_trace),
    }
)
#: generated workloads usable as trace names; their keyword arguments (e.g. ``contention``,
#: ``n_apps``, ``jobs_per_hour``) may appear in a sweep's [params] / [fixed] and go to the generator.
TRACE_GENERATORS: Mapping[str, Callable[..., pd.DataFrame]] = MappingProxyType(
    {name: make for name, (make, _) in _TABLE.items()}
)
#: keyword names the caller may not set (the name fixes the workload, the cell / simulation the seed)
_RESERVED = frozenset({"workload", "t_iter", "seed"})


def trace_names() -> tuple[str, ...]:
    """Every trace name ``simulate`` and sweeps accept besides CSV paths: bundled, then generated."""
    return (*SIA_PHILLY, *TRACE_GENERATORS)


def check_trace_name(trace) -> None:
    """A string that is neither a trace name nor a CSV path (existing, or ending in ``.csv``):
    :class:`TraceError` listing every name."""
    if not isinstance(trace, str) or trace in TRACE_GENERATORS or trace in SIA_PHILLY:
        return
    if Path(trace).suffix.lower() != ".csv" and not Path(trace).exists():
        raise TraceError(
            "trace", f"unknown trace {trace!r}: use {', '.join(trace_names())} or a .csv file"
        )


def generator_function(trace: str) -> Callable | None:
    """The generator function behind ``trace`` (None for bundled names and CSV files)."""
    entry = _TABLE.get(trace) if isinstance(trace, str) else None
    return entry[1] if entry else None


def generator_params(trace: str) -> set[str]:
    """Keyword names of the generator behind ``trace`` (empty for bundled names and CSV files)."""
    f = generator_function(trace)
    if f is None:
        return set()
    return set(inspect.signature(f).parameters) - _RESERVED


def make_trace(trace, seed: int, kw: Mapping[str, Any]):
    """``trace`` itself, or the frame its generator makes from ``kw`` (seeded with ``seed``); a
    generator with ``max_gpus`` gets ``kw["gpus"]`` unless given. Returns (trace, generator kwargs)."""
    if not isinstance(trace, str) or trace not in TRACE_GENERATORS:
        return trace, {}
    names = generator_params(trace)
    gen_kw = {k: v for k, v in kw.items() if k in names}
    if "max_gpus" in names and "max_gpus" not in gen_kw and "gpus" in kw:
        gen_kw["max_gpus"] = kw["gpus"]
    return TRACE_GENERATORS[trace](seed=seed, **gen_kw), gen_kw
