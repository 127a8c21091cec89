"""Per-job figures of PAL's evaluation from the per-job frame ``jobs`` (one row per job and cell):
wait time per job or per arrival epoch (Fig. 12: Sia-Philly workloads 3 vs 5; Fig. 19: Synergy under
LAS / SRTF / FIFO), the CDF and box plots of JCT (Figs. 9, 10, simulated). Each draws one panel per value of
``panel`` (a trace, a scheduler) with one line per ``hue`` value in the package's palette, and
returns the axes; none recomputes a metric: waits and JCTs are the simulator's, in hours.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from fairplace.core.errors import DataError
from fairplace.core.palette import colours


def _panels(df: pd.DataFrame, panel: str | None, w: float = 5.0, h: float = 3.6):
    """[(value, rows, axes)] one per value of ``panel`` (one panel of every row without it)."""
    if panel is not None and panel not in df:
        raise DataError(panel, "missing column for the panels")
    groups = list(df.groupby(panel, sort=False)) if panel else [("", df)]  # in the run's order
    if not groups:
        raise DataError("jobs", "no rows to draw")
    _, axes = plt.subplots(
        1, len(groups), figsize=(w * len(groups), h), squeeze=False, layout="constrained"
    )
    return [(v, g, ax) for (v, g), ax in zip(groups, axes[0], strict=True)]


def _finish(panels, hue: str) -> np.ndarray:
    """One legend, beside the last panel; the axes as an array."""
    axes = [ax for _, _, ax in panels]
    for ax in axes[:-1]:
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    last = axes[-1]
    if last.get_legend() is not None:
        sns.move_legend(last, "upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, title=hue)
    return np.asarray(axes)


def wait_per_job(
    jobs: pd.DataFrame, x: str = "job_id", panel: str | None = None, hue: str = "placement",
    round_length: float | None = None,
):  # fmt: skip
    """Wait (h) of every job against its id (``x = "job_id"``, Fig. 12) or its arrival epoch
    floor(arrival / ``round_length``) (``x = "epoch"``, Fig. 19), mean over seeds; a panel per
    ``panel`` value, a line per ``hue`` value."""
    df = jobs.copy()
    if x == "epoch":
        if not (round_length or 0) > 0:
            raise DataError("round_length", "x = 'epoch' needs the round length in seconds")
        df["epoch"] = np.floor(df["arrival"].astype(float) / round_length)
    elif x == "job_id":
        df["job_id"] = pd.to_numeric(df["job_id"], errors="coerce")
    else:
        raise DataError("x", f"expected 'job_id' or 'epoch', got {x!r}")
    df["wait (h)"] = df["waiting"].astype(float) / 3600.0
    panels = _panels(df, panel)
    for v, g, ax in panels:
        sns.lineplot(data=g, x=x, y="wait (h)", hue=hue, palette=colours(g[hue].unique()),
                     errorbar=None, lw=0.8, ax=ax)  # fmt: skip
        ax.set(xlabel="job id" if x == "job_id" else "arrival epoch", ylabel="wait (h)",
               title=f"{panel} {v}" if panel else "wait per job")  # fmt: skip
    return _finish(panels, hue)


def jct_cdf(jobs: pd.DataFrame, panel: str | None = None, hue: str = "placement"):
    """Empirical CDF of the JCT (h) of every job (PAL Fig. 9, simulated), a panel per ``panel``
    value, a line per ``hue`` value (seeds pooled)."""
    df = jobs.assign(**{"JCT (h)": jobs["jct"].astype(float) / 3600.0})
    panels = _panels(df, panel)
    for v, g, ax in panels:
        sns.ecdfplot(data=g, x="JCT (h)", hue=hue, palette=colours(g[hue].unique()), ax=ax)
        ax.set(ylabel="fraction of jobs", title=f"{panel} {v}" if panel else "CDF of JCT")
    return _finish(panels, hue)


def jct_box(jobs: pd.DataFrame, x: str = "trace", hue: str = "placement"):
    """Box plot of the JCT (h) of every job per ``x`` value and ``hue`` value (PAL Fig. 10,
    simulated half; seeds pooled)."""
    df = jobs.assign(**{"JCT (h)": jobs["jct"].astype(float) / 3600.0})
    panels = _panels(df, None, w=2.2 * max(1, df[x].nunique()) + 1.5)
    _, g, ax = panels[0]
    sns.boxplot(data=g, x=x, y="JCT (h)", hue=hue, palette=colours(g[hue].unique()),
                saturation=1, ax=ax)  # fmt: skip
    ax.set(title="JCT per job")
    return _finish(panels, hue)
