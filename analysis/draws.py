"""PAL's gain over cluster draws: the distribution of the per-draw geomean gain (one draw = one
seed's sampled cluster), where a paper's number and a marked draw (the artifact's own cluster) sit in
it, and which property of a draw predicts it. Reads sweep summaries only (one row per simulation,
with the cluster descriptors ``draw_slow_<class>`` / ``draw_max_<class>`` the simulator records).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from fairplace.core.errors import DataError
from fairplace.core.palette import colours

from .tables import PACKED_BASELINES, draw_geomean_gains, share_at_or_above, split_marked


def _gains(summary, mark, baselines, policies, metric, draw="seed"):
    """(per-draw gains of the unmarked rows, of the marked rows, the policies shown)."""
    rest, marked = split_marked(summary, mark)
    g = draw_geomean_gains(rest, metric, baselines, draw=draw)
    if policies is None:
        policies = sorted(p for p in set(g["placement"]) if p not in baselines)
    g = g[g["placement"].isin(policies)]
    if g.empty:
        raise DataError("placement", f"no per-draw gains for {list(policies)}")
    gm = draw_geomean_gains(marked, metric, baselines, draw=draw) if len(marked) else g.iloc[:0]
    return g, gm[gm["placement"].isin(policies)], list(policies)


def _panels(baselines, g, ax):
    panels = [b for b in baselines if b in set(g["baseline"])]
    if ax is None:
        _, axes = plt.subplots(
            1, len(panels), figsize=(6 * len(panels), 5), squeeze=False, layout="constrained"
        )
        return panels, axes[0]
    axes = np.ravel(ax)
    if len(axes) != len(panels):
        raise DataError("ax", f"expected {len(panels)} Axes (one per baseline), got {len(axes)}")
    return panels, axes


def draw_gain_distribution(
    summary: pd.DataFrame,
    paper: dict | None = None,
    mark: dict | None = None,
    mark_label: str = "the artifact's draw",
    baselines=PACKED_BASELINES,
    policies=None,
    metric: str = "avg_jct",
    ax=None,
):
    """Histogram over cluster draws of each policy's geomean gain (%) over the workloads, one panel
    per packed baseline; a dashed line at the paper's number ``paper[policy]`` (the legend says how
    many draws reach it) and a dotted one at the draw ``mark`` selects (rows matching every
    ``column: value``, e.g. ``{"profile": "longhorn-artifact"}``). Returns the Axes."""
    g, gm, policies = _gains(summary, mark, baselines, policies, metric)
    panels, axes = _panels(baselines, g, ax)
    colors = colours(policies)  # one colour per placement in every figure
    bins = np.histogram_bin_edges(g["gain_%"], bins=min(30, max(8, len(g) // 8)))
    for a, b in zip(axes, panels, strict=True):
        sub = g[g["baseline"] == b]
        n = int(sub["seed"].nunique())
        for p in policies:
            v = sub.loc[sub["placement"] == p, "gain_%"]
            a.hist(v, bins=bins, histtype="step", lw=1.6, color=colors[p], label=f"{p}")
            if paper and p in paper:
                k, m = share_at_or_above(v, float(paper[p]))
                a.axvline(
                    float(paper[p]),
                    color=colors[p],
                    ls="--",
                    lw=1.2,
                    label=f"{p}: paper {paper[p]:g}%, {k}/{m} draws at or above",
                )
            got = gm.loc[(gm["baseline"] == b) & (gm["placement"] == p), "gain_%"]
            if len(got):
                x = float(got.iloc[0])
                k, m = share_at_or_above(v, x)
                a.axvline(
                    x,
                    color=colors[p],
                    ls=":",
                    lw=1.6,
                    label=f"{p}: {mark_label} {x:.1f}%, {k}/{m} draws at or above",
                )
        a.set(
            xlabel=f"geomean {metric} reduction over workloads (%), one draw",
            ylabel="cluster draws",
            title=f"vs {b}, {n} draws",
        )
        a.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    return axes


def draw_gain_predictor(
    summary: pd.DataFrame,
    prop: str = "draw_slow_A",
    mark: dict | None = None,
    mark_label: str = "the artifact's draw",
    baselines=PACKED_BASELINES,
    policies=None,
    metric: str = "avg_jct",
    ax=None,
):
    """Per cluster draw, the policy's geomean gain (%) against a property of the draw (a summary
    column, e.g. ``draw_slow_A``: class-A GPUs at least 1.5x slower than the median), one panel per
    packed baseline, with the median gain per property value and Spearman's rank correlation in the
    legend; the draw ``mark`` selects is a star. Returns the Axes."""
    if prop not in summary.columns:
        raise DataError(prop, "missing column (a property of the cluster draw)")
    g, gm, policies = _gains(summary, mark, baselines, policies, metric)
    rest, marked = split_marked(summary, mark)
    per_draw = rest.groupby("seed")[prop].first()
    g = g.assign(**{prop: g["seed"].map(per_draw)})
    panels, axes = _panels(baselines, g, ax)
    colors = colours(policies)  # one colour per placement in every figure
    for a, b in zip(axes, panels, strict=True):
        sub = g[g["baseline"] == b]
        for p in policies:
            d = sub[sub["placement"] == p]
            rho = d[[prop, "gain_%"]].corr(method="spearman").iloc[0, 1]
            a.scatter(
                d[prop],
                d["gain_%"],
                s=14,
                alpha=0.5,
                color=colors[p],
                label=f"{p} (Spearman {rho:+.2f})",
            )
            med = d.groupby(prop)["gain_%"].median()
            a.plot(med.index, med.to_numpy(), color=colors[p], lw=1.2)
            got = gm[(gm["baseline"] == b) & (gm["placement"] == p)]
            if len(got) and prop in marked.columns:
                a.scatter(
                    [marked[prop].iloc[0]],
                    [got["gain_%"].iloc[0]],
                    marker="*",
                    s=160,
                    color=colors[p],
                    edgecolor="black",
                    label=f"{p}: {mark_label}",
                )
        a.axhline(0.0, color="grey", lw=0.8, ls="--")
        a.set(xlabel=prop, ylabel=f"geomean {metric} reduction (%), one draw", title=f"vs {b}")
        a.legend(fontsize=7, frameon=False)
    return axes
