"""Seaborn figures of results tables (simulation sweeps, per-app / per-round frames, batch solves).

Every function takes DataFrames and an optional matplotlib ``ax=`` (drawn on a new figure when
omitted) and returns the ``Axes`` it drew on; none recomputes a simulation metric — they only select,
aggregate (mean over seeds) and normalise what the driver recorded. Importing this module leaves the
matplotlib backend alone (inline plots in Jupyter keep working); the CLI selects a non-interactive
backend when it draws, and closes the figures it makes.
Column names follow the simulator's frames; where a name may vary, ``col(df, *candidates)`` picks the
first present one and raises :class:`~fairplace.core.errors.DataError` naming the candidates otherwise.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from fairplace.core.errors import DataError
from fairplace.core.palette import NAMED, PALETTE, colour, colours  # noqa: F401 - the one palette, re-exported

from .draws import draw_gain_distribution as draw_gain_distribution  # re-exported: spec figures
from .draws import draw_gain_predictor as draw_gain_predictor
from .tables import PACKED_BASELINES, col, normalise_to, paired_ratios, relative_gap
from .waits import jct_box as jct_box  # re-exported: PAL Figs. 9, 10, 12, 19 (per-job frames)
from .waits import jct_cdf as jct_cdf
from .waits import wait_per_job as wait_per_job


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


# ---------------------------------------------------------------- THEMIS


def rho_cdf(apps: pd.DataFrame, hue: str = "scheduler", rho: str | None = None, *, ax=None):
    """Empirical CDF of finish-time fairness rho = T_sh / T_id per app (THEMIS Figs. 9-10), on a
    log x-axis (one baseline's tail at ~100 leaves the others readable); apps with no finite
    positive rho are left out and counted in the title."""
    r = rho or col(apps, "rho", "rho_themis", "rho_gavel", "rho_static")
    v = pd.to_numeric(apps[r], errors="coerce")
    ok = np.isfinite(v) & (v > 0)
    h = hue if hue in apps else None
    ax = _axes(ax)
    sns.ecdfplot(data=apps[ok], x=r, hue=h, palette=_palette(apps, h), ax=ax)
    ax.set_xscale("log")
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    left = int((~ok).sum())
    title = "CDF of ρ" + (f" ({left} apps without a finite ρ left out)" if left else "")
    ax.set(xlabel="finish-time fairness ρ (log scale)", ylabel="fraction of apps", title=title)
    _legend_out(ax)
    return ax


def max_rho_vs_contention(
    summary: pd.DataFrame, x: str | None = None, hue: str = "scheduler", *, ax=None
):
    """Max rho across apps vs contention (THEMIS Fig. 14); mean over seeds with CI."""
    xc = x or col(summary, "contention", "gpus")
    ax = _axes(ax)
    sns.pointplot(data=summary, x=xc, y=col(summary, "max_rho"), hue=hue, ax=ax, dodge=0.2,
                  palette=_palette(summary, hue))  # fmt: skip
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set(ylabel="max ρ (lower is fairer)", title="Max ρ vs contention")
    _legend_out(ax)
    return ax


def max_rho_ratio_vs_load(
    summary: pd.DataFrame,
    scheduler: str = "themis",
    baselines=("las", "srtf", "gandiva", "optimus", "slaq"),
    x: str = "load",
    hue: str = "base_gpus",
    *,
    ax=None,
):
    """Best baseline's max rho / ``scheduler``'s, per seed (> 1: ``scheduler`` fairer), vs the
    offered load ``x``, one line per set-up ``hue`` (GPUs: the 64-GPU testbed, the 256-GPU
    simulator) and workload; mean over seeds with CI (THEMIS Figs. 9-10 over load)."""
    keys = [k for k in (x, hue, "trace", "seed") if k in summary]
    per = summary.pivot_table(index=keys, columns="scheduler", values=col(summary, "max_rho"))
    base = [b for b in baselines if b in per]
    if scheduler not in per or not base:
        raise DataError("scheduler", f"needs {scheduler} and one of {', '.join(baselines)}")
    r = (per[base].min(axis=1) / per[scheduler]).rename("ratio").reset_index()
    h = hue if hue in r and r[hue].nunique() > 1 else None
    if h is not None:
        r[h] = r[h].map(lambda v: f"{v} GPUs" if h == "base_gpus" else str(v))
    style = "trace" if "trace" in r and r["trace"].nunique() > 1 else None
    ax = _axes(ax)
    sns.lineplot(data=r, x=x, y="ratio", hue=h, style=style, marker="o", ax=ax)
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set(xscale="log", xlabel=f"offered load ({x})", title="Best baseline / THEMIS max ρ vs load",
           ylabel=f"best baseline max ρ / {scheduler}'s (> 1: {scheduler} fairer)")  # fmt: skip
    _legend_out(ax)
    return ax


def bidders_per_round(summary: pd.DataFrame, x: str | None = None, *, ax=None):
    """THEMIS' mean bidders per auction round vs contention (per workload), with the share of
    single-bidder rounds (a lone bidder pays nothing: PA degenerates) as text on each bar."""
    df = summary[summary["scheduler"] == "themis"] if "scheduler" in summary else summary
    xc = x or col(df, "contention", "gpus")
    ax = _axes(ax)
    sns.barplot(data=df, x=xc, y="mean_bidders", hue=_hue(df, "trace"), ax=ax, errorbar="sd")
    one = df.groupby(xc)["single_bidder_share"].mean()
    for k, (_, v) in enumerate(one.items()):
        ax.annotate(f"{v:.0%} alone", (k, 0), textcoords="offset points", xytext=(0, 3),
                    ha="center", fontsize=8)  # fmt: skip
    ax.set(ylabel="bidders per auction (mean)", title="THEMIS bidders per round")
    _legend_out(ax)
    return ax


def gpu_time(summary: pd.DataFrame, x: str = "scheduler", hue: str | None = None, *, ax=None):
    """Aggregate GPU time per scheduler (THEMIS Figs. 11-12): lower is more efficient."""
    y = col(summary, "gpu_time", "total_gpu_time", "gpu_seconds")
    ax = _axes(ax)
    h = hue or _hue(summary, "contention", "trace")
    pal = _palette(summary, h) if h is not None else _palette(summary, x)
    df = summary.assign(**{y: summary[y] / 3600})  # GPU-seconds -> GPU-hours
    sns.barplot(data=df, x=x, y=y, hue=h if h is not None else (x if pal else None),
                palette=pal, saturation=1, legend=h is not None, ax=ax)  # fmt: skip
    ax.set(ylabel="GPU time (GPU-h)", title="Aggregate GPU time")
    _legend_out(ax)
    return ax


def placement_score(apps: pd.DataFrame, hue: str = "scheduler", *, ax=None):
    """Distribution of placement scores 1/S per app (THEMIS Fig. 13); 1.0 is best."""
    s = col(apps, "placement_score", "score")
    ax = _axes(ax)
    h = hue if hue in apps else None
    sns.ecdfplot(data=apps, x=s, hue=h, palette=_palette(apps, h), ax=ax)
    ax.set(xlabel="placement score (1/S)", ylabel="fraction of apps", title="Placement score")
    _legend_out(ax)
    return ax


def strategyproofness_curve(df: pd.DataFrame, *, ax=None):
    """The lying app's completion time and the truthful apps' average vs misreport X (THEMIS Fig. 18)."""
    x = col(df, "X", "x", "misreport")
    long = df.melt(
        id_vars=[x],
        value_vars=[
            col(df, "liar_jct", "lying_jct", "liar_completion"),
            col(df, "truthful_avg_jct", "others_avg_completion", "truthful_completion"),
        ],
        var_name="app",
        value_name="completion time",
    )
    ax = _axes(ax)
    sns.lineplot(data=long, x=x, y="completion time", hue="app", marker="o", ax=ax)
    ax.set(xlabel="misreport X (%)", ylabel="completion time (s)",
           title="Strategy-proofness: lying app vs truthful apps")  # fmt: skip
    _legend_out(ax)
    return ax


def sensitivity(summary: pd.DataFrame, param: str = "f", metric: str = "max_rho", *, ax=None):
    """Max rho (or GPU time) vs the filter fraction f or the lease (THEMIS Fig. 19)."""
    ax = _axes(ax)
    hue = _hue(
        summary.drop(columns=[param], errors="ignore"),
        "scheduler_options.rounding", "round_length", "lease", "scheduler",
    )  # fmt: skip
    y = col(summary, metric)
    sns.pointplot(data=_in_units(summary, y), x=param, y=y, hue=hue, palette=_palette(summary, hue),
                  ax=ax)  # fmt: skip
    ax.set(ylabel=label(y), title=f"Sensitivity of {_name(y)} to {param}")
    _legend_out(ax)
    return ax


def estimation_error(
    summary: pd.DataFrame,
    param: str = "scheduler_options.rho_error",
    kind: str = "scheduler_options.rho_error_kind",
    metric: str = "max_rho",
    *,
    ax=None,
):
    """Change of ``metric`` (%) against the same seed and workload without errors vs the error size
    X of the AGENTs' rho estimates, per kind of error (THEMIS Fig. 17); mean over seeds with CI."""
    keys = [k for k in ("trace", "contention", "seed", kind) if k in summary]
    base = summary[np.isclose(summary[param], 0.0)].groupby(keys)[metric].mean().rename("base")
    df = summary.join(base, on=keys)
    df = df.assign(x=100 * df[param], change=100 * (df[metric] / df["base"] - 1.0))
    ax = _axes(ax)
    sns.pointplot(data=df, x="x", y="change", hue=kind if kind in df else None, ax=ax, dodge=0.2)
    ax.axhline(0.0, color="grey", lw=0.8, ls="--")
    ax.set(xlabel="error X (± %)", ylabel=f"change of {_name(metric)} vs X = 0 (%)",
           title=f"{_name(metric)} under errors in the ρ estimates")  # fmt: skip
    _legend_out(ax)
    return ax


def overheads(summary: pd.DataFrame, x: str = "mean_bidders", *, ax=None):
    """THEMIS' bid time (per bidder) and arbiter time per auction, p50 and p95 (ms, log scale),
    one point per run, against ``x`` (mean bidders or GPUs offered per auction; §6.2.3)."""
    cols = ["bid_ms_p50", "bid_ms_p95", "arbiter_ms_p50", "arbiter_ms_p95"]
    df = summary[summary["scheduler"] == "themis"] if "scheduler" in summary else summary
    long = df.melt(id_vars=[x, *[c for c in ("trace",) if c in df]], value_vars=cols,
                   var_name="time", value_name="ms")  # fmt: skip
    ax = _axes(ax)
    style = "trace" if "trace" in long and long["trace"].nunique() > 1 else None
    sns.scatterplot(data=long, x=x, y="ms", hue="time", style=style, ax=ax, s=40)
    ax.set(yscale="log", ylabel="ms per auction", title=f"THEMIS overheads vs {x}")
    _legend_out(ax)
    return ax


# ---------------------------------------------------------------- PAL


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
