"""Claim measures over one metric of a results frame (:mod:`.claims` names them in ``MEASURES``):
one policy's gain over another (geomean, smallest, its change and value at a parameter), the
largest value of a metric, the parameter value that minimises it, and how often one solver's
objective is at least another's. Each returns ``(value, detail)``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairplace.core.errors import DataError

from .tables import geomean_improvement, improvement, ok_rows, relative_gap

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


def max_of(res: Frames, metric: str, where: dict | None = None, frame: str = "summary"):
    """The largest ``metric`` over the selected rows (e.g. idle GPU-hours of every THEMIS run)."""
    df = _where(ok_rows(res[frame]), where)
    v = df[metric].astype(float)
    return float(v.max()), f"max over {len(v)} runs; mean {v.mean():.3g}"


def best_param(res: Frames, param: str, metric: str = "max_rho", where=None):
    """The value of ``param`` with the lowest mean ``metric``."""
    df = _where(ok_rows(res["summary"]), where)
    m = df.groupby(param)[metric].mean()
    if m.size < 2:
        raise DataError(param, f"only {m.size} value of {param} was run: nothing to compare")
    det = ", ".join(f"{param}={k}: {v:.3g}" for k, v in m.items())
    ties = m.index[np.isclose(m, m.min(), rtol=1e-9)].tolist()
    if len(ties) > 1:
        det += f" (tie between {ties}: the first is reported)"
    return float(m.idxmin()), det


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
