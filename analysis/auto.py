"""Pick the figures that apply to a results table, by its type (``tables.detect``) and columns."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from fairplace.core.errors import DataError

from . import plots
from .report import closing_failed_figures
from .tables import detect, ok_rows

#: table kind -> [(figure name, plot function of the table)]
FIGURES: dict[str, list[tuple[str, Callable]]] = {
    "batch": [
        ("heuristic-gap", plots.heuristic_gap),
        ("solve-time-vs-size", plots.solve_time_vs_size),
        ("integrality-gap", plots.integrality_gap),
    ],
    "strategyproofness": [("strategyproofness", plots.strategyproofness_curve)],
    "placement_time": [("placement-time", plots.placement_time)],
    "rounds": [("gpus-in-use", plots.gpus_in_use)],
    "apps": [("rho-cdf", plots.rho_cdf), ("placement-score", plots.placement_score)],
    "jobs": [("rho-cdf", plots.rho_cdf), ("placement-score", plots.placement_score)],
    "sweep": [
        ("jct-normalised", lambda d: plots.jct_normalised(d, by=_group_axis(d))),
        ("locality-sweep", plots.locality_sweep),
        ("jct-vs-load", lambda d: plots.jct_vs_load(d, x=load_axis(d))),
        ("max-rho-vs-contention", plots.max_rho_vs_contention),
        ("gpu-time", lambda d: plots.gpu_time(d, x=_bar_axis(d), hue=_hue_axis(d))),
        ("f-sensitivity", lambda d: plots.sensitivity(d, "scheduler_options.f")),
        ("lease-sensitivity", lambda d: plots.sensitivity(d, "round_length")),
    ],
}

#: columns a sweep may vary the load by, in order of preference: ``load`` (the THEMIS workloads'
#: offered load), ``jobs_per_hour`` (Synergy-style traces; PAL Figs. 14, 16, 17), ``rate``
LOAD_AXES = ("load", "jobs_per_hour", "rate")

#: sweep figures that need a grid axis with more than one value (a tuple: any one of them)
_AXIS = {
    "locality-sweep": "locality_penalty",
    "jct-vs-load": LOAD_AXES,
    "max-rho-vs-contention": "contention",
    "f-sensitivity": "scheduler_options.f",
    "lease-sensitivity": "round_length",
}


def _varied(df: pd.DataFrame, name: str) -> bool:
    return name in df and df[name].nunique() > 1


def load_axis(df: pd.DataFrame) -> str | None:
    """The first of :data:`LOAD_AXES` that the table varies (None if none does)."""
    return next((a for a in LOAD_AXES if _varied(df, a)), None)


def _group_axis(df: pd.DataFrame) -> str:
    """What the normalised-JCT bars are grouped by: the traces, or the load when a sweep varies
    the load of one trace (pooling the loads would hide the effect of load)."""
    axis = load_axis(df)
    return axis if axis is not None and not _varied(df, "trace") else "trace"


def _bar_axis(df: pd.DataFrame) -> str:
    """Bars per scheduler (THEMIS sweeps), or per placement when only the placement varies."""
    return "placement" if _varied(df, "placement") and not _varied(df, "scheduler") else "scheduler"


def _hue_axis(df: pd.DataFrame) -> str | None:
    return next((a for a in ("contention", *LOAD_AXES, "trace") if _varied(df, a)), None)


def figures_for(df: pd.DataFrame, kind: str | None = None):
    """``(kind, [(name, Axes)], [(name, reason skipped)])`` for every figure the table supports
    (each on a figure of its own; the caller saves and closes them, e.g. with ``report.png``)."""
    kind = kind or detect(df)
    data = ok_rows(df)
    made, skipped = [], []
    for name, fn in FIGURES.get(kind, []):
        axis = _AXIS.get(name)
        axes = (axis,) if isinstance(axis, str) else axis
        if axes is not None and not any(_varied(data, a) for a in axes):
            names = " or ".join(f"'{a}'" for a in axes)
            skipped.append((name, f"no {names} axis with >= 2 values"))
            continue
        try:
            with closing_failed_figures():
                made.append((name, fn(data)))
        except (DataError, KeyError, ValueError) as exc:
            skipped.append((name, str(exc)))
    return kind, made, skipped
