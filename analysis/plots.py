"""Seaborn figures of results tables (simulation sweeps, per-app / per-round frames, batch solves).

Every function takes DataFrames and an optional matplotlib ``ax=`` (drawn on a new figure when
omitted) and returns the ``Axes`` it drew on; none recomputes a simulation metric — they only select,
aggregate (mean over seeds) and normalise what the driver recorded. Importing this module leaves the
matplotlib backend alone (inline plots in Jupyter keep working); the CLI selects a non-interactive
backend when it draws, and closes the figures it makes.
THEMIS' figures are in :mod:`.plots_themis`, PAL's in :mod:`.plots_pal`, what they share (axes,
legend, palette, metric labels) in :mod:`.plot_style`; this module re-exports them all.
Column names follow the simulator's frames; where a name may vary, ``col(df, *candidates)`` picks the
first present one and raises :class:`~fairplace.core.errors.DataError` naming the candidates otherwise.
"""

from __future__ import annotations

import pandas as pd
import seaborn as sns

from fairplace.core.errors import DataError
from fairplace.core.palette import NAMED, PALETTE, colour, colours  # noqa: F401 - the one palette, re-exported

from .draws import draw_gain_distribution as draw_gain_distribution  # re-exported: spec figures
from .draws import draw_gain_predictor as draw_gain_predictor
from .plot_style import (  # noqa: F401 - re-exported: plots.<name> for every figure
    METRICS,
    _axes,
    _hue,
    _in_units,
    _legend_out,
    _name,
    _palette,
    label,
)
from .plots_pal import (  # noqa: F401 - re-exported: plots.<name> for every figure
    LOAD_LABELS,
    gpus_in_use,
    jct_draws,
    jct_normalised,
    jct_vs_load,
    locality_sweep,
    placement_time,
)
from .plots_themis import (  # noqa: F401 - re-exported: plots.<name> for every figure
    bidders_per_round,
    estimation_error,
    gpu_time,
    max_rho_ratio_vs_load,
    max_rho_vs_contention,
    overheads,
    placement_score,
    rho_cdf,
    sensitivity,
    strategyproofness_curve,
)
from .tables import col, relative_gap
from .waits import jct_box as jct_box  # re-exported: PAL Figs. 9, 10, 12, 19 (per-job frames)
from .waits import jct_cdf as jct_cdf
from .waits import wait_per_job as wait_per_job

# ---------------------------------------------------------------- solvers


def heuristic_gap(batch: pd.DataFrame, reference: str = "exact", *, ax=None):
    """Relative gap of each solver's objective to the exact optimum, per instance kind."""
    if "gap" in batch and reference == "exact" and batch["gap"].notna().any():
        g = batch.dropna(subset=["gap"]).assign(rel_gap=lambda d: d["gap"])  # the batch's own gap
    else:
        g = relative_gap(batch, reference)
    g = g[g["solver"] != reference]
    if g.empty:
        raise DataError("solver", f"no rows besides the reference solver {reference!r}")
    ax = _axes(ax)
    sns.boxplot(data=g, x="solver", y="rel_gap", hue=_hue(g, "kind"), ax=ax)
    ax.axhline(0.0, color="grey", lw=0.8, ls="--")
    ax.set(ylabel=f"relative gap to {reference} (≥ 0 = worse)", title="Heuristic gap to exact")
    ax.tick_params(axis="x", rotation=20)
    _legend_out(ax)
    return ax


def solve_time_vs_size(batch: pd.DataFrame, size: str | None = None, *, ax=None):
    """Solve seconds vs instance size on log-log axes, one series per solver."""
    s = size or col(batch, "size", "gpus", "n_gpus", "apps", "jobs")
    ax = _axes(ax)
    ok = batch[batch["seconds"] > 0]
    sns.lineplot(data=ok, x=s, y="seconds", hue="solver", marker="o", ax=ax, errorbar=None,
                 palette=_palette(ok, "solver"))  # fmt: skip
    ax.set(xscale="log", yscale="log", ylabel="solve time (s)", title="Solve time vs size")
    _legend_out(ax)
    return ax


def integrality_gap(
    batch: pd.DataFrame, bound_solver: str = "relaxation", exact: str = "exact", *, ax=None
):
    """(relaxation bound - exact optimum) / |exact| per instance (auctions maximise sum -log rho)."""
    piv = batch.pivot_table(index="instance", columns="solver", values="objective", aggfunc="first")
    if bound_solver not in piv or exact not in piv:
        raise DataError("solver", f"need both {bound_solver!r} and {exact!r} rows")
    gap = ((piv[bound_solver] - piv[exact]) / piv[exact].abs().clip(lower=1e-9)).dropna()
    ax = _axes(ax)
    sns.histplot(gap, ax=ax, bins=20)
    ax.set(xlabel="integrality gap (bound − exact) / |exact|", title="Integrality gap")
    _legend_out(ax)
    return ax
