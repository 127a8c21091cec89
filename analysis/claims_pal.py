"""PAL's claim rules: the paper's own precision, "up to", per-workload extremes, the runs a claim
needs, and the tolerance of a claim over cluster draws (docs/pal-setups.md, "How a PAL claim is
judged").

* **Tolerance from the paper's precision.** A claim gives ``precision``, the unit of the last digit
  the paper prints ("43%": 1, "2.8 s": 0.1); the tolerance is half of it (:func:`precision_tolerance`,
  read by ``claims_schema.check_claim``). A number the paper implies from two printed ones (PAL over
  PM-First from 43% and 40%) is the interval those two span within their precision, tolerance 0.
  A claim in words only ("better than Gandiva on every workload") is the open side of no effect.
* **Over cluster draws** (``over_draws = true``: the experiment's seeds are sampled clusters, the
  paper's number is one cluster's): the tolerance is the larger of that and the standard deviation
  of the measure over the draws (:func:`draws_tolerance`); one draw cannot judge it.
* **Extremes.** :func:`gain` with ``stat = "min"`` / ``"max"``: the smallest / largest per-group
  gain ("21-59%" per workload is two claims: min 21, max 59); "up to X%" over a range is the max
  over that range, judged at X.
* **What a claim is over.** A list in ``where`` names every value the claim is over (the 8
  workloads, the loads 8-14 jobs/h); a run that lacks one cannot judge it: a ``DataError`` that the
  claims table reports as ``not run at this size``.
* **Synergy's window** (:func:`window_gain`): the average JCT of job ids 2000-3000 only (PAL §V-C,
  as the artifact measures), from the per-job frame; ``gpus_min = 2``: its multi-GPU jobs only.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from fairplace.core.errors import DataError
from fairplace.core.registry import Entry, Registry

from .tables import geomean_improvement, improvement, ok_rows

Frames = dict[str, pd.DataFrame]
STATS = ("geomean", "min", "max")


def _match(col: pd.Series, v) -> pd.Series:
    return np.isclose(col.astype(float), float(v)) if isinstance(v, float) else col == v


def rows_over(df: pd.DataFrame, where: dict | None) -> pd.DataFrame:
    """``df``'s ok rows matching ``where``; a list value names every value the claim is over, and a
    value that no row has is a DataError naming the column and the values not run."""
    df = ok_rows(df) if "status" in df else df
    for k, v in (where or {}).items():
        if k not in df.columns:
            raise DataError(k, "missing column for a filter")
        vals = v if isinstance(v, list) else [v]
        missing = [x for x in vals if not _match(df[k], x).any()]
        if missing:
            raise DataError(
                k, f"{len(missing)} of the {len(vals)} values the claim is over were not run "
                f"({', '.join(map(str, missing))})"
            )  # fmt: skip
        mask = np.zeros(len(df), bool)
        for x in vals:
            mask |= np.asarray(_match(df[k], x))
        df = df[mask]
    return df


def _stat(s: pd.Series, stat: str) -> float:
    if stat not in STATS:
        raise DataError("stat", f"expected one of {STATS}, got {stat!r}")
    if stat == "geomean":
        return float(geomean_improvement(s))
    return float(s.min() if stat == "min" else s.max())


def _detail(s: pd.Series, stat: str) -> str:
    per = ", ".join(f"{i}: {100 * v:.1f}%" for i, v in s.items())
    return f"{stat} over {len(s)} groups; per group {per}"


def gain(
    res: Frames, policy: str, baseline: str, stat: str = "geomean", by=("trace",), where=None,
    metric: str = "avg_jct", key: str = "placement",
):  # fmt: skip
    """100 x ``stat`` (geomean / min / max) over the ``by`` groups of the gain
    1 - metric(policy) / metric(baseline) (means over seeds), on the rows ``where`` selects."""
    s = improvement(rows_over(res["summary"], where), metric, policy, baseline, list(by), key)
    return 100 * _stat(s, stat), _detail(s, stat)


def gain_shift(
    res: Frames, policy: str, baseline: str, param: str, lo: float, hi: float, where=None,
    metric: str = "avg_jct",
):  # fmt: skip
    """Geomean gain at ``param = lo`` minus at ``param = hi``, percentage points (> 0: shrinks)."""
    g_lo, _ = gain(res, policy, baseline, where={**(where or {}), param: lo}, metric=metric)
    g_hi, _ = gain(res, policy, baseline, where={**(where or {}), param: hi}, metric=metric)
    return g_lo - g_hi, f"{g_lo:.1f}% at {param}={lo:g} -> {g_hi:.1f}% at {param}={hi:g}"


def window_jobs(res: Frames, where=None, ids=(2000, 3000), gpus_min: int = 1) -> pd.DataFrame:
    """The per-job frame's rows ``where`` selects whose id is in ``ids`` (inclusive; None: every
    job) and that asked for at least ``gpus_min`` GPUs (2: the multi-GPU jobs)."""
    if "jobs" not in res:
        raise DataError("jobs", "no per-job frame (the experiment keeps frames = ['jobs'])")
    df = rows_over(res["jobs"], where)
    if ids is not None:
        jid = pd.to_numeric(df["job_id"], errors="coerce")
        df = df[(jid >= ids[0]) & (jid <= ids[1])]
        if df.empty:
            raise DataError("job_id", f"no job with an id in {ids[0]}-{ids[1]}: the traces are shorter")  # fmt: skip
    if gpus_min > 1:
        df = df[df["gpus"] >= gpus_min]
        if df.empty:
            raise DataError("gpus", f"no job with {gpus_min} or more GPUs")
    return df


def window_gain(
    res: Frames, policy: str, baseline: str, stat: str = "max", ids=(2000, 3000),
    by=("jobs_per_hour",), where=None, metric: str = "jct", gpus_min: int = 1,
):  # fmt: skip
    """As :func:`gain` on the mean per-job ``metric`` (``jct``; ``waiting``: the wait) of the jobs
    whose id is in ``ids`` (inclusive; PAL's Synergy runs report job ids 2000-3000) and that asked
    for at least ``gpus_min`` GPUs (2: PAL §V-C's multi-GPU jobs), from the per-job frame ``jobs``."""
    df = window_jobs(res, where, ids, gpus_min)
    cell = [c for c in ("scheduler", "placement", "trace", "seed", *by) if c in df.columns]
    per = df.groupby(list(dict.fromkeys(cell)), as_index=False)[metric].mean()
    s = improvement(per.rename(columns={metric: "avg"}), "avg", policy, baseline, list(by))
    jobs = f"jobs {ids[0]}-{ids[1]}" if ids is not None else "every job"
    more = f", {gpus_min}+ GPUs" if gpus_min > 1 else ""
    return 100 * _stat(s, stat), _detail(s, stat) + f" ({jobs}{more}; mean {metric})"


ROUND_STATS = ("median", "max")


def round_seconds(res: Frames, policy: str, gpus: int, stat: str = "median", where=None):
    """The median or the worst (``stat = "max"``) of the placement seconds over every round of
    ``policy``'s runs on ``gpus`` GPUs (PAL Fig. 18: the distribution over all scheduling epochs;
    frame ``placement_time``, one row per round); a ``where`` list names every run it is over."""
    if stat not in ROUND_STATS:
        raise DataError("stat", f"expected one of {ROUND_STATS}, got {stat!r}")
    df = rows_over(res["placement_time"], {"policy": policy, "gpus": gpus, **(where or {})})
    s = df["seconds"]
    worst = df.loc[s.idxmax()]
    where_worst = f"round {worst.get('round', '?')}" + (
        f" of {worst['trace']}" if "trace" in df else ""
    )
    value = float(s.median() if stat == "median" else s.max())
    return value, (
        f"median {s.median():.4f} s, worst {s.max():.4f} s ({where_worst}) over {len(s)} rounds"
    )


def measures(table: Mapping[str, Callable], *more: Registry) -> Registry:
    """Claim measures as a Registry: a name's entry is its function ``f(frames, **args)``, its
    options the keyword parameters after ``frames`` (a claim's ``args``), its doc the first line
    of its docstring; ``more``: registries of measures merged in (a name in two is a ValueError)."""
    entries = {
        name: Entry(
            fn,
            tuple(inspect.signature(fn).parameters)[1:],
            (fn.__doc__ or "").strip().split("\n")[0],
        )
        for name, fn in table.items()
    }
    for reg in more:
        for name, entry in reg.items():
            if name in entries:
                raise ValueError(f"claim measure {name!r} is defined twice")
            entries[name] = entry
    return Registry("claim measure", entries, where="measure", options_path="args")


#: PAL's measures (merged into ``claims.MEASURES``)
PAL_MEASURES = measures(
    {
        "round_seconds": round_seconds,
        "gain": gain,
        "gain_shift": gain_shift,
        "window_gain": window_gain,
    }
)


def precision_tolerance(claim: dict) -> float | None:
    """Half a unit of the paper's last printed digit (``precision``), or None without one."""
    p = claim.get("precision")
    if p is None:
        return None
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not p > 0:
        raise DataError(
            f"{claim.get('id', '<claim>')}.precision", f"expected a number > 0, got {p!r}"
        )
    if "tolerance" in claim:
        raise DataError(f"{claim.get('id', '<claim>')}.tolerance",
                        "give the paper's precision or a tolerance, not both")  # fmt: skip
    return p / 2


def _per_seed(fn: Callable, frames: Frames, args: dict) -> list[float]:
    seeds: set = set()
    for df in frames.values():
        if isinstance(df, pd.DataFrame) and "seed" in df.columns:
            seeds |= set(df["seed"].dropna().unique().tolist())
    vals = []
    for s in sorted(seeds):
        part = {k: df[df["seed"] == s] if isinstance(df, pd.DataFrame) and "seed" in df else df
                for k, df in frames.items()}  # fmt: skip
        try:
            v = fn(part, **args)[0]
        except (DataError, KeyError, ValueError, TypeError, ZeroDivisionError):
            continue
        if v is not None and math.isfinite(v):
            vals.append(float(v))
    return vals


def draws_tolerance(claim: dict, fn: Callable, frames: Frames, args: dict) -> dict:
    """``claim`` as judged: with ``over_draws``, its tolerance widened to the standard deviation of
    the measure over the cluster draws (seeds) when that is larger; one draw is a DataError (the
    claim is over draws). Without ``over_draws``, ``claim`` unchanged."""
    if not claim.get("over_draws"):
        return claim
    vals = _per_seed(fn, frames, args)
    if len(vals) < 2:
        raise DataError("seed", f"{len(vals)} cluster draw: the claim is over draws")
    sd = float(np.std(vals, ddof=1))
    own = precision_tolerance(claim) or float(claim.get("tolerance", 0.0))
    out = {k: v for k, v in claim.items() if k != "precision"}
    return out | {"tolerance": round(max(own, sd), 2)}
