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
* ``not run`` — the experiment or a frame is missing, or this size's data cannot judge the claim.

A ``not run`` reason starts with one of a few fixed phrases (:data:`NOT_RUN_PHRASES`, detail after
a colon): ``not run at this size`` (the run's data cannot judge the claim: a filter matches no
rows, one value of a compared parameter, one load point of a claim across loads — a ``by`` column
other than ``trace`` / ``seed`` —, one cluster draw of a claim over draws), ``needs the full size``
(the experiment is not part of this size), ``needs <name> cells`` (a scheduler or placement the
claim compares with was not in the grid), ``the experiment failed`` (its error follows).

Every claim has a ``kind`` (:data:`KINDS`): ``"paper"`` is the paper's own claim, with the paper's
words in ``paper`` and where it says so in ``section`` / ``figure``; ``"check"`` is the package's
own check (solver optimality, work conservation, a comparison the paper does not make), judged by
the same rule but reported as ``passes`` / ``fails`` (:data:`CHECK_OUTCOMES`) and counted apart
(:func:`check_claims` validates a claims file; ``fairplace.analysis.report.headline`` counts).

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

from .claims_pal import PAL_MEASURES, draws_tolerance, measures
from .claims_pal_waits import PAL_WAIT_MEASURES
from .claims_schema import (  # noqa: F401 - the schema's names are also claims' own
    AT_THIS_SIZE,
    CHECK_OUTCOMES,
    CLAIM_KEYS,
    DIRECTIONS,
    FAILED,
    KINDS,
    NEEDS_FULL,
    NOT_RUN_PHRASES,
    OUTCOMES,
    check_claim,
    check_claims,
    check_kind,
    not_run_reason,
    outcome,
    range_text,
)
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


#: every measure a claim may name (``measure``): name -> ``f(frames, **args) -> (value, detail)``,
#: PAL's merged in when it is built
MEASURES = measures(
    {
        "geomean_gain": geomean_gain,
        "min_gain": min_gain,
        "gain_change": gain_change,
        "gain_at": gain_at,
        "max_rho_ratio": max_rho_ratio,
        "max_rho_ratio_vs_load": max_rho_ratio_vs_load,
        "sharing_incentive_only": sharing_incentive_only,
        "max_of": max_of,
        "best_param": best_param,
        "liar_gain": liar_gain,
        "liar_gain_bound": liar_gain_bound,
        "tipping_point": tipping_point,
        "order_fraction": order_fraction,
    },
    PAL_MEASURES,  # PAL's rules: precision, extremes, the runs a claim is over (claims_pal)
    PAL_WAIT_MEASURES,  # PAL's wait times and per-job shapes (Figs. 12, 19: claims_pal_waits)
)


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
        return f"{AT_THIS_SIZE}: {len(vals)} cluster draw"
    a = np.asarray(vals)
    k = int(np.count_nonzero(a >= paper))
    q10, med, q90 = np.percentile(a, [10, 50, 90])
    return (
        f"paper {paper:g}{unit}: {k} of {a.size} draws at or above it (percentile "
        f"{100 * np.mean(a < paper):.0f}); draws median {med:.1f}{unit}, 10-90% "
        f"{q10:.1f}..{q90:.1f}{unit}"
    )


#: ``by`` columns a claim may aggregate over with one value (replicates, not the claim's axis)
_ONE_VALUE_OK = ("trace", "seed")


def one_point(claim: dict, frames: Frames) -> str | None:
    """Why ``frames`` cannot judge ``claim`` although the measure could compute a number, or None:
    a claim across a ``by`` column other than trace / seed (e.g. across loads) with one value of
    it, or a claim over cluster draws (its experiment is its ``draws``) with one draw."""
    args = claim.get("args", {})
    df = frames.get(args.get("frame", "summary")) if isinstance(frames, dict) else None
    if not isinstance(df, pd.DataFrame) or df.empty:
        return None
    try:
        df = _where(ok_rows(df) if "status" in df else df, args.get("where"))
    except DataError:
        return None  # the measure says why
    by = args.get("by", ())
    for c in [by] if isinstance(by, str) else list(by):
        if c not in _ONE_VALUE_OK and c in df and df[c].nunique() < 2:
            return f"{AT_THIS_SIZE}: one {c} value ({df[c].iloc[0]}), the claim is across {c}"
    if claim.get("draws") == claim["experiment"] and "seed" in df and df["seed"].nunique() < 2:
        return f"{AT_THIS_SIZE}: one cluster draw, the claim is over draws"
    return None


def evaluate(
    claim: dict, frames: Frames | None, not_run: str | None = None, draws: Frames | None = None
) -> dict:
    """One claims-table row: id, kind, claim, figure, section, paper (the paper's words),
    paper_range, ours, spread, outcome (a check: passes / fails), reason,
    and with ``draws`` (the frames of the claim's ``draws`` experiment) where the paper's number
    (the low end of its range) sits among those cluster draws."""
    check_claim(claim)
    kind = check_kind(claim, required=False)
    row = {
        "id": claim["id"],
        "kind": kind,
        "claim": claim["text"],
        "figure": claim.get("figure", ""),
        "section": claim.get("section", ""),
        "paper": claim.get("paper", ""),
        "paper_range": range_text(claim),
        "ours": "",
        "spread": "",
    }
    unit = claim.get("unit", "")
    args = claim.get("args", {})
    if "draws" in claim:
        known = claim["measure"] in MEASURES
        fn = MEASURES.get(claim["measure"]).factory if known else None
        row["draws"] = (
            f"{AT_THIS_SIZE}: no draws from {claim['draws']!r}"
            if draws is None or fn is None
            else in_draws(fn, draws, args, check_claim(claim)[0], unit)
        )
    if not_run is not None or frames is None:
        return row | {"outcome": "not run", "reason": not_run_reason(not_run or "")}
    try:
        fn = MEASURES.get(claim["measure"]).factory
        value, detail = fn(frames, **MEASURES.check(claim["measure"], args))
        claim = draws_tolerance(claim, fn, frames, args)  # over cluster draws: their spread
        row["paper_range"] = range_text(claim)
    except (KeyError, DataError, ValueError, TypeError, ZeroDivisionError) as exc:
        return row | {"outcome": "not run", "reason": not_run_reason(exc)}
    cannot = one_point(claim, frames)
    if cannot is not None:  # a number, but not one that can judge the claim
        return row | {"outcome": "not run", "reason": f"{cannot} (it gave {detail})"}
    value = math.nan if value is None else float(value)
    out = outcome(value, claim)
    ours = f"{fixed(value, 3)}{unit}" if math.isfinite(value) else "none"
    if kind == "check":
        out = "passes" if out == "reproduces" else "fails"
        why = (f"inside its range; {detail}" if out == "passes"
               else f"outside its range: {claim.get('caveat', 'not analysed')} ({detail})")  # fmt: skip
    elif out == "reproduces":
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


#: the ``full_size`` column of a claim the stored full-size results cannot judge
NOT_JUDGED_FULL = "not judged at full size"


def against_full(row: dict, claim: dict, full: Frames | None, note: str, source: str) -> dict:
    """A claims row of a reduced size (quick, tiny) next to the same claim judged on the stored
    full-size results ``full`` (``source``: the file, e.g. ``papers/<paper>/full-size.csv``):
    columns ``full_size`` ("<outcome> (<ours>)", or :data:`NOT_JUDGED_FULL` when nothing stored
    judges it), ``full_outcome`` and ``full_ours`` (the bare outcome and value, "" when not
    judged); where the two outcomes
    differ, one sentence appended to ``reason`` says why (the size's ``note``: how it differs)."""
    ref = evaluate(claim, full) if full is not None else None
    if ref is None or ref["outcome"].startswith("not run"):
        return row | {"full_size": NOT_JUDGED_FULL, "full_outcome": "", "full_ours": ""}
    text = f"{ref['outcome']} ({ref['ours']}{', ' + ref['spread'] if ref['spread'] else ''})"
    out = row | {"full_size": text, "full_outcome": ref["outcome"], "full_ours": ref["ours"]}
    ran = not str(row.get("outcome", "")).startswith("not run")
    if ran and ref["outcome"] != row.get("outcome"):
        why = note or "a smaller set-up than the paper's"
        out["reason"] = (
            f"{row.get('reason', '')}. Full size ({source}): {text}; this size differs: {why}"
        )
    return out
