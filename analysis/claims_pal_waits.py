"""PAL's wait-time claims (Fig. 12: Sia-Philly workloads 3 vs 5; Fig. 19: Synergy under LAS / SRTF /
FIFO) and GPUs in use (Fig. 15), read off the per-job frame ``jobs`` (``waiting`` = JCT - time
holding GPUs, seconds). The paper prints no number for Figs. 12 and 19, so their claims are
directions or shapes in words (judged on the side of no effect; Fig. 15's "all 256 GPUs" is a
number, 256 within half a GPU; docs/pal-setups.md):

* :func:`wait_gain` — 100 x ``stat`` over groups of 1 - W(policy) / W(baseline), W = the mean wait
  (means over seeds); two means equal to :data:`TIE` (relative) are equal: gain 0, not float noise.
* :func:`wait_ratio` — 100 x (W(more) / W(less) - 1) between two values of a column (W5 vs W3,
  LAS vs FIFO), the smallest over placements and over the ``more`` values.
* :func:`gain_gap` — gain (of the mean JCT or wait) where ``param`` is each ``more`` value (the
  smallest) minus where it is ``less``, percentage points.
* :func:`wait_trend` — Spearman rank correlation between a job's id (its arrival order) and the
  whole rounds it waited, floor(wait / round length): > 0 rising, < 0 falling; the part of a wait
  below one round is the wait for the next decision, not a queue. No job waiting a round: 0.
* :func:`busy_gpus` — Fig. 15's GPUs in use: the mean number of GPUs held from ``t_from`` to the
  last arrival, sum_j N_j x |[start_j, finish_j] & [t_from, T]| / (T - t_from), T = the last
  submit; exact when no job is preempted (FIFO), so a preempted job is a DataError.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fairplace.core.errors import DataError

from .claims_pal import _detail, _stat, measures, window_jobs

Frames = dict[str, pd.DataFrame]
#: two mean waits within this relative difference are equal (sums of the same floats in another order)
TIE = 1e-9


def _mean_per(df: pd.DataFrame, keys: list[str], metric: str) -> pd.Series:
    """Mean ``metric`` per ``keys`` cell and seed, then the mean over seeds."""
    cell = [k for k in dict.fromkeys([*keys, "seed"]) if k in df.columns]
    m = df.groupby(cell)[metric].mean()
    return m.groupby(level=keys).mean() if "seed" in cell else m


def _rel(a: float, b: float) -> float:
    """a / b - 1, exactly 0 when a and b are equal to :data:`TIE`; b = 0 < a is a DataError."""
    if math.isclose(a, b, rel_tol=TIE, abs_tol=0.0):
        return 0.0
    if b <= 0:
        raise DataError("waiting", "the reference never waits: no ratio")
    return a / b - 1.0


def wait_gain(
    res: Frames, policy: str, baseline: str, stat: str = "min", by=("trace",), where=None,
    ids=None, gpus_min: int = 1, metric: str = "waiting",
):  # fmt: skip
    """100 x ``stat`` over the ``by`` groups of 1 - mean ``metric``(policy) / mean(baseline) of
    the jobs ``where`` selects (``ids``: an inclusive id window, None every job)."""
    df = window_jobs(res, where, ids, gpus_min)
    keys = [*by, "placement"]
    m = _mean_per(df, keys, metric).unstack("placement")
    missing = [p for p in (policy, baseline) if p not in m]
    if missing:
        raise DataError("placement", f"no results for {', '.join(missing)}")
    g = pd.Series([-_rel(a, b) for a, b in zip(m[policy], m[baseline], strict=True)], m.index)
    return 100 * _stat(g, stat), _detail(g, stat) + f" (mean {metric})"


def wait_ratio(
    res: Frames, param: str, more, less, where=None, ids=None, metric: str = "waiting",
):  # fmt: skip
    """100 x min over placements and the ``more`` values of (W(param = more) / W(param = less) - 1),
    W = the mean ``metric`` over the selected jobs (> 0: longer where ``param`` is ``more``)."""
    more = more if isinstance(more, list) else [more]
    df = window_jobs(res, {**(where or {}), param: [*more, less]}, ids)
    m = _mean_per(df, ["placement", param], metric).unstack(param)
    vals, parts = [], []
    for pl, row in m.iterrows():
        for v in more:
            r = _rel(float(row[v]), float(row[less]))
            vals.append(r)
            parts.append(f"{pl}: {v} {row[v]:.0f} s vs {less} {row[less]:.0f} s ({100 * r:+.1f}%)")
    return 100 * min(vals), f"min over placements; mean {metric}: " + "; ".join(parts)


def gain_gap(
    res: Frames, policy: str, baseline: str, param: str, more, less, where=None, ids=None,
    metric: str = "jct",
):  # fmt: skip
    """PAL's gain (1 - mean ``metric`` / baseline's, %) where ``param`` is each of ``more`` (the
    smallest) minus where it is ``less``, percentage points (> 0: larger where ``more``)."""
    more = more if isinstance(more, list) else [more]
    gains = {
        v: wait_gain(res, policy, baseline, "min", (param,), {**(where or {}), param: v}, ids,
                     metric=metric)[0]
        for v in [*more, less]
    }  # fmt: skip
    top = min(gains[v] for v in more)
    det = ", ".join(f"{v}: {gains[v]:.1f}%" for v in gains)
    return top - gains[less], f"gain of {policy} over {baseline} in mean {metric}: {det}"


def wait_trend(
    res: Frames, round_length: float, stat: str = "min", where=None, ids=None,
):  # fmt: skip
    """``stat`` (min / max) over placements of the Spearman rank correlation between job id and
    whole rounds waited, floor(waiting / round_length) (mean over seeds; constant waits: 0)."""
    if not round_length > 0:
        raise DataError("round_length", f"expected seconds > 0, got {round_length!r}")
    df = window_jobs(res, where, ids)
    rounds = np.floor(df["waiting"].to_numpy(float) / round_length + 1e-9)
    df = df.assign(_id=pd.to_numeric(df["job_id"], errors="coerce"), _rounds=rounds)
    rho: dict[str, list[float]] = {}
    for (pl, _seed), g in df.groupby(["placement", df.get("seed", pd.Series(0, df.index))]):
        r = g["_id"].corr(g["_rounds"], method="spearman") if g["_rounds"].nunique() > 1 else 0.0
        rho.setdefault(pl, []).append(0.0 if pd.isna(r) else float(r))
    if not rho:
        raise DataError("placement", "no jobs")
    per = pd.Series({pl: float(np.mean(v)) for pl, v in rho.items()})
    if stat not in ("min", "max"):
        raise DataError("stat", f"expected 'min' or 'max', got {stat!r}")
    top = per.min() if stat == "min" else per.max()
    waited = int((rounds >= 1).sum())
    det = ", ".join(f"{pl}: {v:+.2f}" for pl, v in per.items())
    return float(top), (
        f"{stat} over placements of Spearman(job id, rounds waited): {det}; {waited} of "
        f"{len(df)} jobs waited a round or more"
    )


def busy_gpus(res: Frames, t_from: float, stat: str = "min", where=None):
    """``stat`` (min / max) over placements of the mean GPUs held from ``t_from`` (s) to the last
    arrival T (mean over seeds): sum_j N_j x |[start_j, finish_j] & [t_from, T]| / (T - t_from)."""
    if stat not in ("min", "max"):
        raise DataError("stat", f"expected 'min' or 'max', got {stat!r}")
    df = window_jobs(res, where, None)
    if (df["preemptions"] > 0).any():
        raise DataError("preemptions", "a job was preempted: [start, finish] is not its holding")
    per: dict[str, list[float]] = {}
    for (pl, _seed), g in df.groupby(["placement", df.get("seed", pd.Series(0, df.index))]):
        end = float(g["submit"].max())
        if not end > t_from:
            raise DataError("t_from", f"the trace's last arrival ({end:.0f} s) is not after {t_from:g} s")  # fmt: skip
        held = np.clip(g["finish"].to_numpy(float), t_from, end) - np.clip(
            g["start"].to_numpy(float), t_from, end
        )
        per.setdefault(pl, []).append(float(g["gpus"].to_numpy(float) @ held) / (end - t_from))
    mean = pd.Series({pl: float(np.mean(v)) for pl, v in per.items()})
    top = mean.min() if stat == "min" else mean.max()
    det = ", ".join(f"{pl}: {v:.1f}" for pl, v in mean.items())
    return float(top), f"{stat} over placements of the mean GPUs held after {t_from:g} s: {det}"


#: PAL's wait-time and GPUs-in-use measures (merged into ``claims.MEASURES``)
PAL_WAIT_MEASURES = measures(
    {
        "wait_gain": wait_gain,
        "wait_ratio": wait_ratio,
        "gain_gap": gain_gap,
        "wait_trend": wait_trend,
        "busy_gpus": busy_gpus,
    }
)
