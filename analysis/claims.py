"""Claims: a paper's number next to ours, judged by one of three outcomes.

A claim (one ``[[claim]]`` of ``papers/<paper>/claims.toml``) names an experiment, a *measure* (a
function below that reads that experiment's result frames and returns ``(value, detail)``) and the
paper's own range ``paper_range = [lo, hi]`` (a single number is ``[v, v]``) in the claim's ``unit``,
optionally widened by an absolute ``tolerance``, and the direction of the effect
(``direction = "higher"`` or ``"lower"`` than ``null_value``, e.g. a gain above 0 or a ratio above 1).
The outcome (:func:`outcome`):

* ``reproduces`` — ours (the mean over seeds) is inside [lo - tolerance, hi + tolerance];
* ``direction only`` — outside it, but on the paper's side of ``null_value``;
* ``does not reproduce`` — otherwise (or no direction is stated);
* ``not run`` — the experiment or a frame is missing.

Each row carries a one-line ``reason`` (the claim's ``caveat`` when it does not reproduce). When the
frames have a ``seed`` column with several seeds the measure is also taken per seed and ``spread``
reports min..max and the standard deviation over seeds. A claim with ``draws = "<experiment>"``
also says where the paper's number sits among that experiment's cluster draws (``draws`` column:
the measure per seed = per draw; :func:`in_draws`). Measures only read what the simulator /
solvers recorded; they aggregate (mean over seeds, geomean over workloads).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from fairplace.core.errors import DataError

from .tables import col, fixed, geomean_improvement, improvement, ok_rows, relative_gap

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


def max_rho_ratio(
    res: Frames, scheduler: str, baselines, by: str = "contention", where: dict | None = None
):
    """min over ``by`` groups of (best baseline's max rho / ``scheduler``'s max rho), means over
    seeds; > 1 = fairer (``where`` first selects rows, e.g. one contention level)."""
    df = _where(ok_rows(res["summary"]), where)
    m = df.groupby([by, "scheduler"])["max_rho"].mean().unstack("scheduler")
    missing = [s for s in [scheduler, *baselines] if s not in m]
    if missing:
        raise DataError("scheduler", f"no results for {', '.join(missing)}")
    both = m[scheduler].notna() & m[list(baselines)].notna().any(axis=1)
    if not both.any():
        raise DataError(by, f"no {by} level has results for both {scheduler} and a baseline")
    skipped = [str(lvl) for lvl in m.index[~both]]  # e.g. a partial grid: compare where both ran
    m = m[both]
    ratio = m[list(baselines)].min(axis=1) / m[scheduler]
    det = ", ".join(
        f"{by} {lvl}: {scheduler} {m.loc[lvl, scheduler]:.2f} vs best baseline "
        f"{m.loc[lvl, list(baselines)].min():.2f} ({m.loc[lvl, list(baselines)].idxmin()})"
        for lvl in m.index
    )
    if skipped:
        det += f" ({by} {', '.join(skipped)}: not both run, not compared)"
    return float(ratio.min()), det


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


def _sp(res: Frames) -> pd.DataFrame:
    df = res["strategyproofness"].rename(columns={"x": "X"})
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
    "max_of": max_of,
    "best_param": best_param,
    "liar_gain": liar_gain,
    "tipping_point": tipping_point,
    "order_fraction": order_fraction,
}

OUTCOMES = ("reproduces", "direction only", "does not reproduce", "not run")
DIRECTIONS = ("higher", "lower")
#: keys a claim may have (anything else is a typo and raises DataError naming it)
CLAIM_KEYS = {
    "id", "text", "figure", "paper", "paper_range", "tolerance", "direction", "null_value",
    "experiment", "measure", "args", "unit", "caveat", "draws",
}  # fmt: skip


def check_claim(claim: dict) -> tuple[float, float, float]:
    """Validate a claim's schema; returns (lo, hi, tolerance)."""
    cid = claim.get("id", "<claim>")
    unknown = set(claim) - CLAIM_KEYS
    if unknown:
        raise DataError(f"{cid}.{sorted(unknown)[0]}", "unknown claim key")
    for k in ("id", "text", "experiment", "measure", "paper_range"):
        if k not in claim:
            raise DataError(f"{cid}.{k}", "missing")
    r = claim["paper_range"]
    if isinstance(r, (int, float)):
        r = [r, r]
    if (
        not isinstance(r, list)
        or len(r) != 2
        or not all(isinstance(v, (int, float)) for v in r)
        or r[0] > r[1]
    ):
        raise DataError(f"{cid}.paper_range", f"expected [lo, hi] with lo <= hi, got {r!r}")
    tol = claim.get("tolerance", 0.0)
    if not isinstance(tol, (int, float)) or tol < 0:
        raise DataError(f"{cid}.tolerance", f"expected a number >= 0, got {tol!r}")
    d = claim.get("direction")
    if d is not None and d not in DIRECTIONS:
        raise DataError(f"{cid}.direction", f"expected one of {DIRECTIONS}, got {d!r}")
    if d is not None and not isinstance(claim.get("null_value"), (int, float)):
        raise DataError(f"{cid}.null_value", "a direction needs the null value it is measured from")
    return float(r[0]), float(r[1]), float(tol)


def outcome(value: float, claim: dict) -> str:
    """``reproduces`` / ``direction only`` / ``does not reproduce`` for ``value`` (module doc)."""
    lo, hi, tol = check_claim(claim)
    if math.isfinite(value) and lo - tol <= value <= hi + tol:
        return "reproduces"
    d, null = claim.get("direction"), claim.get("null_value")
    if d == "higher" and value > null or d == "lower" and value < null:
        return "direction only"
    return "does not reproduce"


def range_text(claim: dict) -> str:
    lo, hi, tol = check_claim(claim)
    unit = claim.get("unit", "")
    r = f"{lo:g}{unit}" if lo == hi else f"[{lo:g}, {hi:g}]{unit}"
    return r + (f" ± {tol:g}" if tol else "")


def _seed_frames(frames: Frames) -> dict:
    """{seed: frames restricted to that seed} when some frame has several seeds, else {}."""
    seeds = set()
    for df in frames.values():
        if isinstance(df, pd.DataFrame) and "seed" in df.columns:
            seeds |= set(df["seed"].dropna().unique().tolist())
    if len(seeds) < 2:
        return {}
    return {
        s: {
            k: df[df["seed"] == s] if isinstance(df, pd.DataFrame) and "seed" in df else df
            for k, df in frames.items()
        }
        for s in sorted(seeds)
    }


def spread(fn: Callable, frames: Frames, args: dict) -> str:
    """min..max (sd) of the measure over seeds, '' with one seed or when a seed cannot be measured."""
    vals = []
    for f in _seed_frames(frames).values():
        try:
            v = fn(f, **args)[0]
        except (DataError, KeyError, ValueError, TypeError, ZeroDivisionError):
            return ""
        if v is None or not math.isfinite(v):
            return ""
        vals.append(float(v))
    if len(vals) < 2:
        return ""
    a = np.asarray(vals)
    return f"{a.min():.3g}..{a.max():.3g} (sd {a.std(ddof=1):.2g}, {a.size} seeds)"


def in_draws(fn: Callable, frames: Frames, args: dict, paper: float, unit: str = "") -> str:
    """One line: how many cluster draws (seeds of ``frames``) reach the paper's number with the
    measure ``fn``, its percentile among them, and the draws' median and 10-90% range."""
    vals = []
    for f in _seed_frames(frames).values():
        try:
            v = fn(f, **args)[0]
        except (DataError, KeyError, ValueError, TypeError, ZeroDivisionError):
            continue
        if v is not None and math.isfinite(v):
            vals.append(float(v))
    if len(vals) < 2:
        return "not enough cluster draws"
    a = np.asarray(vals)
    k = int(np.count_nonzero(a >= paper))
    q10, med, q90 = np.percentile(a, [10, 50, 90])
    return (
        f"paper {paper:g}{unit}: {k} of {a.size} draws at or above it (percentile "
        f"{100 * np.mean(a < paper):.0f}); draws median {med:.1f}{unit}, 10-90% "
        f"{q10:.1f}..{q90:.1f}{unit}"
    )


def evaluate(
    claim: dict, frames: Frames | None, not_run: str | None = None, draws: Frames | None = None
) -> dict:
    """One claims-table row: id, claim, figure, paper, paper_range, ours, spread, outcome, reason,
    and with ``draws`` (the frames of the claim's ``draws`` experiment) where the paper's number
    (the low end of its range) sits among those cluster draws."""
    check_claim(claim)
    row = {
        "id": claim["id"],
        "claim": claim["text"],
        "figure": claim.get("figure", ""),
        "paper": claim.get("paper", ""),
        "paper_range": range_text(claim),
        "ours": "",
        "spread": "",
    }
    unit = claim.get("unit", "")
    args = claim.get("args", {})
    if "draws" in claim:
        fn = MEASURES.get(claim["measure"])
        row["draws"] = (
            f"not run: no draws from {claim['draws']!r}"
            if draws is None or fn is None
            else in_draws(fn, draws, args, check_claim(claim)[0], unit)
        )
    if not_run is not None or frames is None:
        return row | {"outcome": "not run", "reason": not_run or "not run"}
    try:
        fn = MEASURES[claim["measure"]]
        value, detail = fn(frames, **args)
    except KeyError as exc:
        return row | {"outcome": "not run", "reason": f"not run: missing {exc}"}
    except (DataError, ValueError, TypeError, ZeroDivisionError) as exc:
        return row | {"outcome": "not run", "reason": f"not run: {exc}"}
    value = math.nan if value is None else float(value)
    out = outcome(value, claim)
    ours = f"{fixed(value, 3)}{unit}" if math.isfinite(value) else "none"
    if out == "reproduces":
        why = f"inside the paper's range; {detail}"
    else:
        side = "right direction" if out == "direction only" else "not even the direction"
        why = f"{side}: {claim.get('caveat', 'not analysed')} ({detail})"
    return row | {
        "ours": ours,
        "spread": spread(fn, frames, args),
        "outcome": out,
        "reason": why,
    }


def against_full(row: dict, claim: dict, full: Frames | None, note: str, source: str) -> dict:
    """A claims row of a reduced size (quick, tiny) next to the same claim judged on the stored
    full-size results ``full`` (``source``: the file, e.g. ``papers/<paper>/full-size.csv``):
    column ``full_size`` ("<outcome> (<ours>)"), and, where the two outcomes differ, one line
    appended to ``reason`` that says why (the size's ``note``: how it differs from the full one)."""
    if full is None:
        return row
    ref = evaluate(claim, full)
    if ref["outcome"].startswith("not run"):
        return row
    text = f"{ref['outcome']} ({ref['ours']}{', ' + ref['spread'] if ref['spread'] else ''})"
    out = row | {"full_size": text}
    ran = not str(row.get("outcome", "")).startswith("not run")
    if ran and ref["outcome"] != row.get("outcome"):
        why = note or "a smaller set-up than the paper's"
        out["reason"] = (
            f"{row.get('reason', '')}. Full size ({source}): {text}; this size differs: {why}"
        )
    return out
