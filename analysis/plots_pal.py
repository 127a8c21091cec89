"""PAL's figures (:mod:`.plots` re-exports them): JCT normalised to a baseline placement, over
cluster draws, over the locality penalty and offered load, GPUs in use and placement time. Same
conventions as :mod:`.plots`: frames in, ``ax=`` optional, the ``Axes`` returned."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from fairplace.core.errors import DataError

from .plot_style import _axes, _hue, _in_units, _legend_out, _name, _palette, label
from .tables import PACKED_BASELINES, col, normalise_to, paired_ratios


def jct_normalised(
    summary: pd.DataFrame,
    baseline: str = "packed-sticky",
    metric: str = "avg_jct",
    by: str = "trace",
    hue: str = "placement",
    *,
    ax=None,
):
    """Average JCT per workload normalised to the baseline placement (PAL Fig. 11)."""
    norm = normalise_to(summary, metric, baseline, by=[by], key=hue)
    ax = _axes(ax, 8, 4)
    order = [baseline, *sorted(set(norm[hue]) - {baseline})]
    sns.barplot(data=norm, x=by, y=f"{metric}_norm", hue=hue, hue_order=order, ax=ax,
                palette=_palette(norm, hue), saturation=1)  # fmt: skip
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set(ylabel=f"{_name(metric)} / {baseline}'s (ratio)",
           title=f"{_name(metric)} normalised to {baseline}")  # fmt: skip
    ax.tick_params(axis="x", rotation=20)
    _legend_out(ax)
    return ax


def jct_draws(
    summary: pd.DataFrame,
    baselines=PACKED_BASELINES,
    metric: str = "avg_jct",
    by: str = "trace",
    hue: str = "placement",
    ax=None,
):
    """Per workload, the distribution over cluster draws of ``metric`` normalised to each packed
    baseline on the same draw (PAL Fig. 11 with its spread): one box panel per baseline.

    ``ax``: one Axes per baseline present (default: a new figure); returns that array of Axes."""
    r = paired_ratios(summary, metric, baselines, by=(by,), key=hue)
    panels = [b for b in baselines if b in set(r["baseline"])]
    if ax is None:
        _, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), squeeze=False)
        axes = axes[0]
    else:
        axes = np.ravel(ax)
        if len(axes) != len(panels):
            raise DataError(
                "ax", f"expected {len(panels)} Axes (one per baseline), got {len(axes)}"
            )
    order = sorted(set(r[hue]))
    n = r.groupby("baseline")["seed"].nunique() if "seed" in r else None
    for ax, b in zip(axes, panels, strict=True):
        sub = r[r["baseline"] == b]
        sns.boxplot(data=sub, x=by, y="ratio", hue=hue, hue_order=order, ax=ax, whis=(0, 100),
                    palette=_palette(r, hue), saturation=1)  # fmt: skip
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        draws = f", {n[b]} draws" if n is not None else ""
        ax.set(ylabel=f"{_name(metric)} / {b}'s, same draw (ratio)",
               title=f"normalised to {b}{draws}")  # fmt: skip
        ax.tick_params(axis="x", rotation=20)
    _legend_out(axes[-1])
    for ax in axes[:-1]:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    return axes


def locality_sweep(
    summary: pd.DataFrame,
    baseline: str | None = "packed-sticky",
    metric: str = "avg_jct",
    x: str = "locality_penalty",
    hue: str = "placement",
    *,
    ax=None,
):
    """Average JCT vs inter-node locality penalty 1.0-3.0 (PAL Figs. 13 and 20), geomean over
    workloads of the per-workload JCT normalised to ``baseline`` (raw mean if ``baseline`` is None)."""
    ax = _axes(ax)
    pal = _palette(summary, hue)
    if baseline is None:
        sns.lineplot(data=_in_units(summary, metric), x=x, y=metric, hue=hue, marker="o", ax=ax,
                     palette=pal)  # fmt: skip
        ax.set(ylabel=label(metric))
    else:
        norm = normalise_to(summary, metric, baseline, by=["trace", x], key=hue)
        g = norm.groupby([x, hue])[f"{metric}_norm"].apply(
            lambda s: float(np.exp(np.log(s).mean()))
        )
        sns.lineplot(data=g.reset_index(), x=x, y=f"{metric}_norm", hue=hue, marker="o", ax=ax,
                     palette=pal)  # fmt: skip
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set(ylabel=f"geomean {_name(metric)} / {baseline}'s (ratio)")
    ax.set(xlabel="locality penalty L", title="Locality-penalty sweep")
    _legend_out(ax)
    return ax


#: x-axis labels of the load columns
LOAD_LABELS = {
    "load": "offered load",
    "jobs_per_hour": "load (jobs/hour)",
    "rate": "arrival rate (jobs/hour)",
}


def jct_vs_load(
    summary: pd.DataFrame,
    metric: str = "avg_jct",
    hue: str = "placement",
    x: str | None = None,
    *,
    ax=None,
):
    """Average JCT vs load: jobs/hour (PAL Figs. 14, 16, 17) or offered load; mean over seeds.
    ``x``: the load column (default the first of ``load``, ``jobs_per_hour``, ``rate``); one load
    value is a DataError (a report says the figure is not drawn at this size)."""
    x = x or col(summary, "load", "jobs_per_hour", "rate")
    loads = summary[x].dropna().unique()
    if len(loads) < 2:  # a curve over load from one load is a column of dots
        raise DataError(x, f"one {x} value ({', '.join(map(str, loads))}): not run at this size")
    ax = _axes(ax)
    sns.lineplot(
        data=_in_units(summary, metric), x=x, y=metric, hue=hue, style=_hue(summary, "scheduler"),
        marker="o", ax=ax, palette=_palette(summary, hue),
    )  # fmt: skip
    ax.set(xlabel=LOAD_LABELS.get(x, x), ylabel=label(metric), title=f"{_name(metric)} vs load")
    _legend_out(ax)
    return ax


def gpus_in_use(rounds: pd.DataFrame, hue: str = "placement", *, ax=None):
    """GPUs busy at every scheduling round (PAL Fig. 15)."""
    t = col(rounds, "time", "t", "start")
    y = col(rounds, "gpus_busy", "busy", "gpus_in_use")
    ax = _axes(ax, 7, 3.5)
    sns.lineplot(
        data=rounds,
        x=t,
        y=y,
        hue=hue if hue in rounds else None,
        palette=_palette(rounds, hue if hue in rounds else None),
        ax=ax,
        lw=0.9,
        drawstyle="steps-post",
        errorbar=None,
    )
    ax.set(xlabel="time (s)", ylabel="GPUs in use", title="GPUs in use over time")
    _legend_out(ax)
    return ax


def placement_time(df: pd.DataFrame, hue: str | None = None, *, ax=None):
    """Per-round placement computation time vs cluster size (PAL Fig. 18), log scale."""
    x = col(df, "gpus", "cluster_size")
    y = col(df, "seconds", "placement_seconds", "place_seconds")
    ax = _axes(ax)
    h = hue or _hue(df, "policy", "placement")
    sns.boxplot(data=df, x=x, y=y, hue=h, palette=_palette(df, h), saturation=1, ax=ax)
    ax.set_yscale("log")
    ax.set(xlabel="cluster size (GPUs)", ylabel="seconds per round", title="Placement time")
    _legend_out(ax)
    return ax
