"""THEMIS' claim measures (:mod:`.claims` names them in ``MEASURES``): fairness as max rho against
the baselines (per contention level, over offered load, sharing incentive only for THEMIS) and
truth-telling (§6.3: what the lying app gains, the bound over seeds, the tipping point). Each
returns ``(value, detail)``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fairplace.core.errors import DataError

from .claims_metrics import _where
from .tables import col, ok_rows

Frames = dict[str, pd.DataFrame]


def max_rho_ratio(
    res: Frames, scheduler: str, baselines, by: str = "contention", where: dict | None = None
):
    """min over ``by`` groups of (best baseline's max rho / ``scheduler``'s max rho), means over
    the seeds where ``scheduler`` and every baseline ran; > 1 = fairer (``where`` first selects
    rows, e.g. one contention level). A group where some baseline ran on no common seed is not
    compared (a partial grid is never judged against a subset of the baselines)."""
    df = _where(ok_rows(res["summary"]), where)
    names = [scheduler, *baselines]
    seed = ["seed"] if "seed" in df else []
    m = df.groupby([by, *seed, "scheduler"])["max_rho"].mean().unstack("scheduler")
    missing = [s for s in names if s not in m]
    if missing:
        raise DataError("scheduler", f"no results for {', '.join(missing)}")
    complete = m[names].notna().all(axis=1)  # rows (level, seed) where all of them ran
    levels = m.index.get_level_values(by)
    skipped = sorted({str(v) for v in levels[~complete]} - {str(v) for v in levels[complete]})
    m = m[complete].groupby(level=by).mean()
    if m.empty:
        raise DataError(by, f"no {by} level has results for {scheduler} and every baseline")
    ratio = m[list(baselines)].min(axis=1) / m[scheduler]
    det = ", ".join(
        f"{by} {lvl}: {scheduler} {m.loc[lvl, scheduler]:.2f} vs best baseline "
        f"{m.loc[lvl, list(baselines)].min():.2f} ({m.loc[lvl, list(baselines)].idxmin()})"
        for lvl in m.index
    )
    if skipped:
        det += f" ({by} {', '.join(skipped)}: not all run, not compared)"
    return float(ratio.min()), det


def max_rho_ratio_vs_load(
    res: Frames, scheduler: str, baselines, load="load", setup="base_gpus", judged=64, where=None
):
    """The x1 headline over offered load (Figs. 9-10 in the testbed set-up): best baseline's max rho /
    ``scheduler``'s (means over seeds) per (set-up, load, trace). Value: the min over every load and
    workload of the ``judged`` set-up (the paper's 64-GPU testbed, where Figs. 9-10 come from: §6,
    §6.2); no load is picked to match the paper; the detail gives every set-up's whole curve."""
    df = _where(ok_rows(res["summary"]), where)
    m = df.groupby([setup, load, "trace", "scheduler"])["max_rho"].mean().unstack("scheduler")
    missing = [s for s in [scheduler, *baselines] if s not in m]
    if missing:
        raise DataError("scheduler", f"no results for {', '.join(missing)}")
    ratio = (m[list(baselines)].min(axis=1) / m[scheduler]).dropna()
    if judged not in set(ratio.index.get_level_values(setup)):
        raise DataError(setup, f"no {setup} = {judged} runs (the set-up judged)")
    parts = []
    for s, g in ratio.groupby(level=setup):
        curve = "; ".join(
            f"load {lv:g}: " + ", ".join(f"{t} {v:.2f}" for (_, _, t), v in gl.items())
            for lv, gl in g.groupby(level=load)
        )
        parts.append(f"{'testbed' if s == judged else 'simulator'} ({setup} {s}): {curve}")
    value = float(ratio.xs(judged, level=setup).min())
    head = (
        f"min over loads and workloads on the testbed ({setup} {judged}); the paper states no load"
    )
    return value, " | ".join([head, *parts])


def sharing_incentive_only(
    res: Frames, scheduler: str, baselines, by=("trace", "contention"), where: dict | None = None
):
    """% of ``by`` groups (e.g. each trace at each contention level; max rho as means over seeds)
    where ``scheduler``'s max rho is <= 1 (sharing incentive, §3.1) *and* every baseline's is > 1:
    "the only scheme that maintains sharing incentive" (Fig. 14). 100 = both sides hold everywhere."""
    df = _where(ok_rows(res["summary"]), where)
    by = [by] if isinstance(by, str) else list(by)
    m = df.groupby([*by, "scheduler"])["max_rho"].mean().unstack("scheduler")
    missing = [s for s in [scheduler, *baselines] if s not in m]
    if missing:
        raise DataError("scheduler", f"no results for {', '.join(missing)}")
    full = m[[scheduler, *baselines]].notna().all(axis=1)
    if not full.any():
        raise DataError(by[0], f"no group has results for {scheduler} and every baseline")
    parts, held = [], []
    for lvl, r in m[full].iterrows():
        own, base = float(r[scheduler]), r[list(baselines)].astype(float)
        ok = own <= 1.0 and bool((base > 1.0).all())
        held.append(ok)
        name = " ".join(map(str, lvl if isinstance(lvl, tuple) else (lvl,)))
        parts.append(
            f"{name}: {scheduler} {own:.2f} ({'<=' if own <= 1.0 else '>'} 1), baselines "
            f"{base.min():.2f} ({base.idxmin()})..{base.max():.2f} "
            f"({'all > 1' if (base > 1.0).all() else 'not all > 1'}): {'holds' if ok else 'no'}"
        )
    det = "; ".join(parts)
    skipped = [str(lvl) for lvl in m.index[~full]]
    absent = [f"{k} {v}" for k, vs in (where or {}).items() if k in by and isinstance(vs, list)
              for v in vs if not np.isclose(df[k].astype(float), v).any()]  # fmt: skip
    if skipped:
        det += f" (not every scheduler ran at {', '.join(skipped)}: not judged)"
    if absent:
        det += f" ({', '.join(absent)} not run)"
    return 100.0 * float(np.mean(held)), det


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


def liar_gain_bound(res: Frames):
    """The rule for "lying does not help" (Fig. 18): the liar's time saved (%) at each X > 0,
    against its own truthful run (X = min) of the same seed, as a mean over seeds less one standard
    error (sd / sqrt(n), ddof 1; 0 with one seed); the largest over X. > 0 = at some X lying helps
    by more than its spread over seeds (its mean gain exceeds 0 by more than its standard error)."""
    df = _sp(res)
    seed = df["seed"] if "seed" in df else pd.Series(0, index=df.index)
    liar = df.assign(_seed=seed).groupby(["_seed", "X"])["_liar"].mean().unstack("X")
    x0 = liar.columns.min()
    if len(liar.columns) < 2:
        raise DataError("X", "need at least two misreport levels")
    gain = 100 * (liar[[x0]].to_numpy() - liar.drop(columns=x0)) / liar[[x0]].to_numpy()
    n = gain.notna().sum()
    mean, sd = gain.mean(), gain.std(ddof=1).fillna(0.0)
    se = (sd / np.sqrt(n)).where(n > 1, 0.0)
    bound = mean - se
    det = ", ".join(
        f"X={x:g}: {mean[x]:+.2f}% (sd {sd[x]:.2f}, se {se[x]:.2f})" for x in mean.index
    )
    worst = bound.idxmax()
    return float(bound.max()), (
        f"liar's time saved vs its truthful run, mean over {int(n.max())} seeds: {det}; largest "
        f"mean - se at X={worst:g}"
    )


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
