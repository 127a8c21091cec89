"""Claims: a paper's number next to ours, and whether it holds under a stated rule.

A claim (one ``[[claim]]`` of ``papers/<paper>/claims.toml``) names an experiment, a *measure* (a
function below that reads that experiment's result frames and returns ``(value, detail)``) and a
*rule* (``gt``/``ge``/``lt``/``le`` against ``threshold``, or ``between`` ``[lo, hi]``). Measures only
read what the simulator / solvers recorded; they aggregate (mean over seeds, geomean over workloads).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from fairplace.errors import DataError

from .tables import fixed, geomean_improvement, improvement, ok_rows, relative_gap

Frames = dict[str, pd.DataFrame]


def _where(df: pd.DataFrame, where: dict | None) -> pd.DataFrame:
    for k, v in (where or {}).items():
        if k not in df.columns:
            raise DataError(k, "missing column for a filter")
        if isinstance(v, list):
            df = df[df[k].isin(v)]
        else:
            df = df[np.isclose(df[k], v)] if isinstance(v, float) else df[df[k] == v]
    if df.empty:
        raise DataError("where", f"no rows match {where}")
    return df


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def geomean_gain(
    res: Frames,
    policy: str,
    baseline: str,
    metric: str = "avg_jct",
    by=("trace",),
    where=None,
    key="placement",
):
    """100 x geomean improvement of ``metric`` of ``policy`` over ``baseline`` across ``by`` groups."""
    s = improvement(_where(res["summary"], where), metric, policy, baseline, list(by), key)
    per = ", ".join(f"{i}: {_pct(v)}" for i, v in s.items())
    return 100 * geomean_improvement(s), f"per group {per}"


def min_gain(res: Frames, policy: str, baseline: str, metric="avg_jct", by=("trace",), where=None):
    """100 x the smallest per-group improvement (positive = better in every group)."""
    s = improvement(_where(res["summary"], where), metric, policy, baseline, list(by))
    return 100 * float(s.min()), f"range {_pct(s.min())} .. {_pct(s.max())} over {len(s)} groups"


def gain_change(
    res: Frames,
    policy: str,
    baseline: str,
    param: str,
    lo: float,
    hi: float,
    metric: str = "avg_jct",
):
    """Geomean gain at ``param=lo`` minus at ``param=hi``, in percentage points (> 0 = shrinks)."""
    g_lo, _ = geomean_gain(res, policy, baseline, metric, where={param: lo})
    g_hi, _ = geomean_gain(res, policy, baseline, metric, where={param: hi})
    return g_lo - g_hi, f"{g_lo:.1f}% at {param}={lo} -> {g_hi:.1f}% at {param}={hi}"


def gain_at(res: Frames, policy: str, baseline: str, param: str, at: float, metric="avg_jct"):
    """Geomean gain of ``policy`` over ``baseline`` at ``param=at``, in %."""
    return geomean_gain(res, policy, baseline, metric, where={param: at})


def max_rho_ratio(res: Frames, scheduler: str, baselines, by: str = "contention"):
    """min over ``by`` levels of (best baseline's max rho / ``scheduler``'s max rho); > 1 = fairer."""
    df = ok_rows(res["summary"])
    m = df.groupby([by, "scheduler"])["max_rho"].mean().unstack("scheduler")
    missing = [s for s in [scheduler, *baselines] if s not in m]
    if missing:
        raise DataError("scheduler", f"no results for {', '.join(missing)}")
    ratio = m[list(baselines)].min(axis=1) / m[scheduler]
    det = ", ".join(
        f"x{lvl}: {scheduler} {m.loc[lvl, scheduler]:.2f} vs best baseline "
        f"{m.loc[lvl, list(baselines)].min():.2f} ({m.loc[lvl, list(baselines)].idxmin()})"
        for lvl in m.index
    )
    return float(ratio.min()), det


def best_param(res: Frames, param: str, metric: str = "max_rho", where=None):
    """The value of ``param`` with the lowest mean ``metric``."""
    df = _where(ok_rows(res["summary"]), where)
    m = df.groupby(param)[metric].mean()
    det = ", ".join(f"{param}={k}: {v:.3g}" for k, v in m.items())
    return float(m.idxmin()), det


def _sp(res: Frames) -> pd.DataFrame:
    df = res["strategyproofness"].rename(columns={"x": "X"})
    from .tables import col

    liar = col(df, "liar_jct", "lying_jct", "liar_completion")
    return df.sort_values("X").assign(_liar=lambda d: d[liar])


def liar_gain(res: Frames):
    """Largest relative reduction (%) of the lying app's completion time over X > 0 vs X = 0."""
    df = _sp(res)
    base = float(df.loc[df["X"] == df["X"].min(), "_liar"].mean())
    rest = df[df["X"] > df["X"].min()].groupby("X")["_liar"].mean()
    gain = 100 * (base - rest) / base
    det = ", ".join(f"X={x:g}: {v:+.1f}%" for x, v in gain.items())
    return float(gain.max()), f"liar's time saved vs truthful: {det}"


def tipping_point(res: Frames, jump: float = 0.05):
    """Smallest X at which the lying app's completion time exceeds its X = 0 value by > ``jump``
    (relative); +inf if it never does."""
    df = _sp(res).groupby("X")["_liar"].mean()
    if len(df) < 2:
        raise DataError("X", "need at least two misreport levels")
    base = float(df.iloc[0])
    worse = df[df > base * (1 + jump)]
    curve = ", ".join(f"X={x:g}: {v / base:.2f}" for x, v in df.items())
    if worse.empty:
        return math.inf, f"no jump > {jump:.0%}; liar time / X=0: {curve}"
    return float(worse.index[0]), f"liar time / X=0: {curve}"


def order_fraction(res: Frames, better: str, worse: str, tol: float = 1e-6):
    """% of instances where ``better``'s objective is at least as good as ``worse``'s (batch table;
    auctions maximise sum -log rho, placements minimise the slowdown sum)."""
    b = res["batch"]
    g = relative_gap(b[b["solver"].isin([better, worse])], reference=better)
    g = g[g["solver"] == worse].dropna(subset=["rel_gap"])
    if g.empty:
        raise DataError("solver", f"no instance solved by both {better!r} and {worse!r}")
    ok = (g["rel_gap"] >= -tol).mean()
    return 100 * float(
        ok
    ), f"{int(round(ok * len(g)))}/{len(g)} instances; max rel gap {g['rel_gap'].max():.3g}"


def median_seconds(res: Frames, policy: str, gpus: int):
    """Median seconds of one placement round of ``policy`` on ``gpus`` GPUs."""
    df = _where(res["placement_time"], {"policy": policy, "gpus": gpus})
    s = df["seconds"]
    return float(s.median()), f"median {s.median():.4f} s, max {s.max():.4f} s over {len(s)} rounds"


MEASURES: dict[str, Callable] = {
    "median_seconds": median_seconds,
    "geomean_gain": geomean_gain,
    "min_gain": min_gain,
    "gain_change": gain_change,
    "gain_at": gain_at,
    "max_rho_ratio": max_rho_ratio,
    "best_param": best_param,
    "liar_gain": liar_gain,
    "tipping_point": tipping_point,
    "order_fraction": order_fraction,
}

RULES = {
    "gt": (lambda v, t: v > t, "> {t}"),
    "ge": (lambda v, t: v >= t, ">= {t}"),
    "lt": (lambda v, t: v < t, "< {t}"),
    "le": (lambda v, t: v <= t, "<= {t}"),
    "between": (lambda v, t: t[0] <= v <= t[1], "in [{t[0]}, {t[1]}]"),
}


def rule_text(rule: str, threshold) -> str:
    if rule not in RULES:
        raise DataError("rule", f"unknown rule {rule!r}; known: {', '.join(RULES)}")
    return "ours " + RULES[rule][1].format(t=threshold)


def evaluate(claim: dict, frames: Frames | None, not_run: str | None = None) -> dict:
    """One claims-table row: id, claim, figure, paper, ours, rule, holds (yes | no | not run), note."""
    row = {
        "id": claim["id"],
        "claim": claim["text"],
        "figure": claim.get("figure", ""),
        "paper": claim.get("paper", ""),
        "rule": rule_text(claim["rule"], claim["threshold"]),
    }
    unit = claim.get("unit", "")
    if not_run is not None or frames is None:
        return row | {"ours": "", "holds": "not run", "note": not_run or "not run"}
    try:
        fn = MEASURES[claim["measure"]]
        value, detail = fn(frames, **claim.get("args", {}))
    except KeyError as exc:
        return row | {"ours": "", "holds": "not run", "note": f"not run: missing {exc}"}
    except (DataError, ValueError, TypeError, ZeroDivisionError) as exc:
        return row | {"ours": "", "holds": "not run", "note": f"not run: {exc}"}
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        why = claim.get("caveat", "not analysed")
        return row | {"ours": "none", "holds": "no", "note": f"{detail}. Likely cause: {why}"}
    ok = RULES[claim["rule"]][0](value, claim["threshold"])
    note = detail if ok else f"{detail}. Likely cause: {claim.get('caveat', 'not analysed')}"
    return row | {"ours": f"{fixed(value, 3)}{unit}", "holds": "yes" if ok else "no", "note": note}
