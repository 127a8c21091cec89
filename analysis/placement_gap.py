"""Sequential PAL (or any placement heuristic) against the exact joint placement, from Solutions only.

For each instance, gap = (heuristic slowdown sum - exact slowdown sum) / exact slowdown sum, both over
the weighted objective the exact program minimises (``extra['weighted_objective']``, falling back to
``objective``). The gap is only comparable when both placed the same number of jobs (the exact program
places as many jobs as possible first); other rows are kept with ``comparable = False``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from fairplace.core.solution import Solution

COLUMNS = [
    "instance",
    "heuristic",
    "heuristic_objective",
    "exact_objective",
    "heuristic_placed",
    "exact_placed",
    "exact_status",
    "comparable",
    "gap",
]


def _weighted(sol: Solution) -> float | None:
    v = sol.extra.get("weighted_objective", sol.objective)
    return None if v is None else float(v)


def _placed(sol: Solution) -> int:
    return int(sol.extra.get("placed", len(sol.allocation)))


def placement_gap(results: Iterable[tuple[str, Solution, Solution]]) -> pd.DataFrame:
    """One row per (instance name, heuristic Solution, exact Solution)."""
    rows = []
    for name, heur, exact in results:
        h, e = _weighted(heur), _weighted(exact)
        hp, ep = _placed(heur), _placed(exact)
        ok = False
        gap = np.nan
        if exact.status == "optimal" and h is not None and e is not None and hp == ep:
            ok, gap = True, (h - e) / e if e > 0 else 0.0
        rows.append(
            {
                "instance": name,
                "heuristic": heur.solver,
                "heuristic_objective": h,
                "exact_objective": e,
                "heuristic_placed": hp,
                "exact_placed": ep,
                "exact_status": exact.status,
                "comparable": ok,
                "gap": gap,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def summarize_gap(table: pd.DataFrame) -> dict[str, float]:
    """Count, share optimal (gap <= 1e-9), mean / max / 95th-percentile gap over comparable rows."""
    g = table.loc[table["comparable"], "gap"].to_numpy(float)
    if g.size == 0:
        return {"instances": int(len(table)), "comparable": 0}
    return {
        "instances": int(len(table)),
        "comparable": int(g.size),
        "share_optimal": float(np.mean(g <= 1e-9)),
        "mean_gap": float(g.mean()),
        "p95_gap": float(np.quantile(g, 0.95)),
        "max_gap": float(g.max()),
    }
