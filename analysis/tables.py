"""Small read-only helpers over results tables: column lookup, table-type detection, normalisation,
gaps to a reference solver. They aggregate what the simulator / batch recorded, never recompute it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fairplace.core.errors import DataError

#: table kind -> columns that identify it (checked in this order)
SIGNATURES = (
    ("batch", ("instance", "solver", "objective")),
    ("strategyproofness", ("X",)),
    ("placement_time", ("gpus", "seconds", "policy")),
    ("rounds", ("gpus_busy",)),
    ("rounds", ("t", "busy", "queue")),
    ("sweep", ("scheduler", "placement", "cell_id")),
    ("jobs", ("job_id", "jct")),
    ("apps", ("app_id", "rho_themis")),
    ("apps", ("rho",)),
    ("sweep", ("scheduler", "placement")),
)


def col(df: pd.DataFrame, *candidates: str) -> str:
    """The first of ``candidates`` that is a column of ``df``."""
    for c in candidates:
        if c in df.columns:
            return c
    raise DataError(candidates[0], f"missing column (looked for {', '.join(candidates)})")


def detect(df: pd.DataFrame) -> str:
    """The kind of a results table, from its columns (see ``SIGNATURES``)."""
    cols = set(df.columns)
    if "x" in cols and "X" not in cols:
        cols.add("X")
    for kind, need in SIGNATURES:
        if set(need) <= cols:
            return kind
    raise DataError("columns", f"unrecognised results table (columns: {', '.join(map(str, df))})")


#: units of the metrics the simulator and the batch record (shown in report column headers)
UNITS = {
    **dict.fromkeys(
        "avg_jct median_jct p99_jct geomean_jct avg_waiting avg_app_jct makespan seconds "
        "mean_seconds median_seconds max_seconds wall_seconds round_length liar_completion "
        "others_avg_completion liar_jct truthful_avg_jct".split(),
        "s",
    ),
    **dict.fromkeys(("gap", "mean_gap", "median_gap", "max_gap", "rel_gap"), "relative"),
    "gpu_time": "GPU·s",
    "utilization": "fraction",
    "X": "%",
}


def fixed(value, digits: int = 4) -> str:
    """``value`` in fixed (never scientific) notation with ``digits`` significant digits, at most
    8 decimals; integers as they are, NaN as an empty string."""
    if value is None or isinstance(value, bool) or isinstance(value, str):
        return "" if value is None else str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    v = float(value)
    if math.isnan(v):
        return ""
    if math.isinf(v) or v == 0:
        return "∞" if v > 0 else "-∞" if v < 0 else "0"
    decimals = min(8, max(0, digits - 1 - math.floor(math.log10(abs(v)))))
    return f"{v:.{decimals}f}"


def with_units(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with numbers in fixed notation (strings) and ``(unit)`` after known metric columns."""
    out = df.copy()
    for c in out.columns:
        if pd.api.types.is_numeric_dtype(out[c]) and not pd.api.types.is_bool_dtype(out[c]):
            out[c] = out[c].map(fixed)
    return out.rename(columns={c: f"{c} ({UNITS[c]})" for c in out.columns if c in UNITS})


#: statuses of rows that carry no result (sweeps use ok | error; batches optimal | heuristic | ...)
FAILED = ("error", "skipped", "infeasible")


def ok_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows that carry a result (drops failed / skipped cells and solves)."""
    return df[~df["status"].isin(FAILED)] if "status" in df.columns else df


def normalise_to(
    df: pd.DataFrame, metric: str, baseline: str, by: list[str], key: str = "placement"
) -> pd.DataFrame:
    """Mean of ``metric`` over seeds per (by..., key), divided by the baseline's value in the same
    ``by`` group; adds ``<metric>_norm``."""
    if metric not in df.columns:
        raise DataError(metric, "missing column")
    m = ok_rows(df).groupby([*by, key], as_index=False)[metric].mean()
    base = m[m[key] == baseline].set_index(by)[metric]
    if base.empty:
        raise DataError(key, f"no rows for the baseline {baseline!r}")
    idx = pd.MultiIndex.from_frame(m[by]) if len(by) > 1 else m[by[0]]
    m[f"{metric}_norm"] = m[metric].to_numpy() / base.reindex(idx).to_numpy()
    return m


def improvement(
    df: pd.DataFrame, metric: str, policy: str, baseline: str, by: list[str], key: str = "placement"
) -> pd.Series:
    """Per group, 1 - metric(policy)/metric(baseline) (positive = policy better), indexed by ``by``."""
    n = normalise_to(df, metric, baseline, by, key)
    s = n[n[key] == policy].set_index(by)[f"{metric}_norm"]
    if s.empty:
        raise DataError(key, f"no rows for {policy!r}")
    return 1.0 - s


def geomean_improvement(ratios_improvement: pd.Series) -> float:
    """1 - geomean(1 - improvement): the papers' 'geomean improvement'."""
    r = 1.0 - ratios_improvement.to_numpy(dtype=float)
    return float(1.0 - np.exp(np.log(r).mean()))


def relative_gap(batch: pd.DataFrame, reference: str = "exact") -> pd.DataFrame:
    """Rows of ``batch`` with ``rel_gap``: how much worse than the reference solver's objective on the
    same instance, signed so that >= 0 means worse (auctions maximise, placements minimise)."""
    batch = ok_rows(batch).dropna(subset=["objective"])  # failed solves compare nothing
    ref = batch[batch["solver"] == reference].set_index("instance")["objective"]
    out = batch.copy()
    out = out[out["instance"].isin(ref.index)]
    r = ref.reindex(out["instance"]).to_numpy(dtype=float)
    sign = (
        np.where(out.get("kind", "auction").eq("placement"), 1.0, -1.0) if "kind" in out else -1.0
    )
    out["rel_gap"] = (
        sign * (out["objective"].to_numpy(dtype=float) - r) / np.maximum(np.abs(r), 1e-9)
    )
    return out


#: PAL's two packed baselines: Tiresias (sticky) and Gandiva (non-sticky)
PACKED_BASELINES = ("packed-sticky", "packed-non-sticky")


def paired_ratios(
    df: pd.DataFrame,
    metric: str = "avg_jct",
    baselines=PACKED_BASELINES,
    by=("trace",),
    key: str = "placement",
    draw: str = "seed",
) -> pd.DataFrame:
    """metric(policy) / metric(baseline) per cluster draw (same ``draw`` value = same sampled cluster):
    one row per (by..., draw, policy, baseline) with column ``ratio``; a baseline is compared with a
    later one only (Packed-Non-Sticky / Packed-Sticky, not also the inverse)."""
    d = ok_rows(df)
    for c in (metric, key, draw):
        if c not in d.columns:
            raise DataError(c, "missing column")
    by = [b for b in by if b in d.columns]
    piv = d.pivot_table(index=[*by, draw], columns=key, values=metric, aggfunc="mean")
    parts = []
    for k, b in enumerate(baselines):
        if b not in piv.columns:
            continue
        earlier = [x for x in baselines[:k] if x in piv.columns]  # shown once, against the first
        r = piv.div(piv[b], axis=0).drop(columns=[b, *earlier])
        long = r.stack().rename("ratio").reset_index()
        parts.append(long.assign(baseline=b))
    if not parts:
        raise DataError(key, f"no rows for any baseline of {list(baselines)}")
    return pd.concat(parts, ignore_index=True).dropna(subset=["ratio"])


def draw_gains(df: pd.DataFrame, metric: str = "avg_jct", **kw) -> pd.DataFrame:
    """Per (by..., policy, baseline) the reduction 1 - metric(policy)/metric(baseline) over cluster
    draws (paired by draw, see :func:`paired_ratios`), in %: median, interquartile range, draws."""
    r = paired_ratios(df, metric, **kw)
    keys = [c for c in r.columns if c not in ("ratio", kw.get("draw", "seed"))]
    g = (100 * (1 - r["ratio"])).groupby([r[k] for k in keys])
    out = pd.DataFrame(
        {
            "median_%": g.median(),
            "q25_%": g.quantile(0.25),
            "q75_%": g.quantile(0.75),
            "draws": g.size(),
        }
    )
    return out.reset_index().round(1)


def split_marked(df: pd.DataFrame, mark: dict | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows not matching ``mark``, rows matching every ``column: value`` of ``mark``); a column
    that is missing matches nothing (e.g. the sweep's ``[[extra]]`` cells, such as the PAL
    artifact's own cluster draw next to sampled ones)."""
    hit = pd.Series(bool(mark), index=df.index)
    for k, v in (mark or {}).items():
        hit &= df[k].eq(v) if k in df.columns else False
    return df[~hit], df[hit]


def draw_geomean_gains(
    df: pd.DataFrame,
    metric: str = "avg_jct",
    baselines=PACKED_BASELINES,
    by=("trace",),
    draw: str = "seed",
) -> pd.DataFrame:
    """Per (draw, placement, baseline) the geomean over ``by`` groups (workloads) of the reduction
    1 - metric(policy)/metric(baseline) on that cluster draw, % (column ``gain_%``): the papers'
    'geomean improvement' of one draw. Only draws with every ``by`` group are kept."""
    r = paired_ratios(df, metric, baselines, by=by, draw=draw)
    keys = [draw, "placement", "baseline"]
    g = r.groupby(keys)["ratio"].agg(["size", lambda x: float(np.exp(np.log(x).mean()))])
    g.columns = ["groups", "geomean_ratio"]
    g = g[g["groups"] == g["groups"].max()]
    out = g.reset_index()
    out["gain_%"] = 100.0 * (1.0 - out["geomean_ratio"])
    return out.drop(columns=["geomean_ratio"])


def share_at_or_above(values, threshold: float) -> tuple[int, int]:
    """(how many of ``values`` are >= ``threshold``, how many values)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return int(np.count_nonzero(v >= threshold)), int(v.size)


#: THEMIS' paper baselines (§6.1): Tiresias (LAS), SRTF, Gandiva, Optimus, SLAQ
THEMIS_BASELINES = ("las", "srtf", "gandiva", "optimus", "slaq")


def themis_table(summary: pd.DataFrame, baselines=THEMIS_BASELINES) -> pd.DataFrame:
    """Per (trace, grid parameters, scheduler): max rho mean ± sd over seeds, median rho, idle
    GPU-hours while jobs wait, max rho_solo, paid restarts per job and their share of GPU time,
    and for THEMIS the best paper baseline's max rho / THEMIS' per seed (mean, min..max) and its
    auction statistics (mean bidders per round, single-bidder share, fraction of the cluster
    re-auctioned per round)."""
    df = ok_rows(summary)
    grid = [k for k in ("trace", "base_gpus", "load", "contention", "network_fraction",
                        "scheduler_options.f", "round_length")
            if k in df and df[k].nunique() > 1]  # fmt: skip
    keys = [*grid, "scheduler"]
    g = df.groupby(keys)
    out = g["max_rho"].agg(["mean", "std"]).rename(columns={"mean": "max_rho", "std": "sd"})
    out["median_rho"] = g["median_rho"].mean()
    if "idle_gpu_hours_while_waiting" in df:
        out["idle_gpu_h_waiting"] = g["idle_gpu_hours_while_waiting"].mean()
    # rho with the simulated T_id (each app alone on its share), paid checkpoint-restarts
    for c in ("max_rho_solo", "restarts_per_job", "restart_gpu_share"):
        if c in df:
            out[c] = g[c].mean()
    out = out.reset_index()
    # the baselines of the frame; the ratio only on seeds where every one of them ran, so that
    # a partial grid cell is never judged against a subset of the baselines
    base = [b for b in baselines if b in set(df["scheduler"])]
    if base and "themis" in set(df["scheduler"]) and "seed" in df:
        per = df.pivot_table(index=[*grid, "seed"], columns="scheduler", values="max_rho")
        per = per[per[[*base, "themis"]].notna().all(axis=1)]
        r = (per[base].min(axis=1) / per["themis"]).rename("r").reset_index()
        ratio = r.groupby(grid or (lambda _: 0))["r"].agg(["mean", "min", "max"])
        ratio = ratio.reset_index(drop=not grid).assign(scheduler="themis")
        ratio["best_baseline_ratio"] = [
            f"{m:.2f} ({lo:.2f}..{hi:.2f})"
            for m, lo, hi in zip(ratio["mean"], ratio["min"], ratio["max"], strict=True)
        ]
        out = out.merge(ratio[[*grid, "scheduler", "best_baseline_ratio"]], how="left")
    stats = [c for c in ("mean_bidders", "single_bidder_share", "mean_offered_fraction") if c in df]
    if stats:
        th = df[df["scheduler"] == "themis"].groupby(grid or ["scheduler"])[stats].mean()
        out = out.merge(th.reset_index().assign(scheduler="themis"), how="left")
    return out.round(3)
