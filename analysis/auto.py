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
        ("jct-normalised", plots.jct_normalised),
        ("locality-sweep", plots.locality_sweep),
        ("jct-vs-load", plots.jct_vs_load),
        ("max-rho-vs-contention", plots.max_rho_vs_contention),
        ("gpu-time", plots.gpu_time),
        ("f-sensitivity", lambda d: plots.sensitivity(d, "scheduler_options.f")),
        ("lease-sensitivity", lambda d: plots.sensitivity(d, "round_length")),
    ],
}

#: sweep figures that need a grid axis with more than one value
_AXIS = {
    "locality-sweep": "locality_penalty",
    "jct-vs-load": "load",
    "max-rho-vs-contention": "contention",
    "f-sensitivity": "scheduler_options.f",
    "lease-sensitivity": "round_length",
}


def figures_for(df: pd.DataFrame, kind: str | None = None):
    """``(kind, [(name, Axes)], [(name, reason skipped)])`` for every figure the table supports
    (each on a figure of its own; the caller saves and closes them, e.g. with ``report.png``)."""
    kind = kind or detect(df)
    data = ok_rows(df)
    made, skipped = [], []
    for name, fn in FIGURES.get(kind, []):
        axis = _AXIS.get(name)
        if axis is not None and (axis not in data or data[axis].nunique() < 2):
            skipped.append((name, f"no '{axis}' axis with >= 2 values"))
            continue
        try:
            with closing_failed_figures():
                made.append((name, fn(data)))
        except (DataError, KeyError, ValueError) as exc:
            skipped.append((name, str(exc)))
    return kind, made, skipped
