"""Claims: a paper's number next to ours, judged by one of three outcomes.

A claim (one ``[[claim]]`` of ``papers/<paper>/claims.toml``) names an experiment, a *measure* (a
function of :data:`MEASURES`, in :mod:`.claims_metrics`, :mod:`.claims_themis` or PAL's modules,
that reads that experiment's result frames and returns ``(value, detail)``) and the
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

from .claims_metrics import (
    _where,
    best_param,
    gain_at,
    gain_change,
    geomean_gain,
    max_of,
    min_gain,
    order_fraction,
)
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
from .claims_themis import (
    liar_gain,
    liar_gain_bound,
    max_rho_ratio,
    max_rho_ratio_vs_load,
    sharing_incentive_only,
    tipping_point,
)
from .tables import fixed, ok_rows

Frames = dict[str, pd.DataFrame]


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
