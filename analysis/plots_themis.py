"""THEMIS' figures (:mod:`.plots` re-exports them): rho's CDF, max rho against contention and
offered load, bidders per round, GPU time, placement score, the truth-telling curve, sensitivity
to f, estimation errors and the arbiter's overheads. Same conventions as :mod:`.plots`: frames in,
``ax=`` optional, the ``Axes`` returned."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns

from fairplace.core.errors import DataError

from .plot_style import _axes, _hue, _in_units, _legend_out, _name, _palette, label
from .tables import col


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
