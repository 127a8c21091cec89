"""What every figure of :mod:`.plots` shares: a new figure's axes, the legend outside them, the
hue and palette of a frame (one colour per name, :mod:`fairplace.core.palette`), and each metric's
label, unit and conversion from the recorded unit (:data:`METRICS`)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from fairplace.core.palette import NAMED, colours


def _axes(ax=None, w: float = 6.0, h: float = 4.0):
    """``ax``, or the axes of a new ``w`` x ``h`` inch figure."""
    if ax is not None:
        return ax
    _, ax = plt.subplots(figsize=(w, h), layout="constrained")
    return ax


def _legend_out(ax) -> None:
    """Put the legend (if any) to the right of the axes so it never hides data."""
    if ax.get_legend() is not None:
        sns.move_legend(ax, "upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)


def _hue(df: pd.DataFrame, *names: str) -> str | None:
    return next((n for n in names if n in df.columns and df[n].nunique() > 1), None)


def _palette(df: pd.DataFrame, hue: str | None) -> dict | None:
    """The palette of a ``hue`` of names (scheduler, placement, policy, solver): every name its
    colour of :data:`PALETTE`, the same in every figure; None for other hues (seaborn's)."""
    if hue is None or hue not in NAMED or hue not in df:
        return None
    return colours(df[hue].dropna().unique())


#: (label, unit, factor from the recorded unit) of the metrics figures plot
METRICS = {
    "avg_jct": ("average JCT", "h", 1 / 3600),
    "median_jct": ("median JCT", "h", 1 / 3600),
    "p99_jct": ("p99 JCT", "h", 1 / 3600),
    "geomean_jct": ("geomean JCT", "h", 1 / 3600),
    "avg_waiting": ("average wait", "h", 1 / 3600),
    "makespan": ("makespan", "h", 1 / 3600),
    "gpu_time": ("GPU time", "GPU-h", 1 / 3600),
    "utilization": ("utilization", "fraction", 1.0),
    "max_rho": ("max ρ", "", 1.0),
    "median_rho": ("median ρ", "", 1.0),
}


def label(metric: str) -> str:
    """``metric``'s axis label with its unit: ``avg_jct`` -> ``average JCT (h)``."""
    name, unit, _ = METRICS.get(metric, (metric, "", 1.0))
    return f"{name} ({unit})" if unit else name


def _in_units(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """``df`` with ``metric`` in the unit of :func:`label` (seconds -> hours)."""
    factor = METRICS.get(metric, ("", "", 1.0))[2]
    return df if factor == 1.0 else df.assign(**{metric: df[metric] * factor})


def _name(metric: str) -> str:
    return METRICS.get(metric, (metric,))[0]
