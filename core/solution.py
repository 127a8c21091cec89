"""The result object of :func:`fairplace.solve`."""

from __future__ import annotations

import html
import math
from dataclasses import asdict, dataclass, field
from typing import Any

STATUSES = ("optimal", "time_limit", "infeasible", "error", "heuristic", "bound")

#: ``Solution.extra`` keys of the exact auction solvers (``exact``/``highs``/``pyomo``/``cvxpy`` on
#: explicit bids; ``compact`` adds ``cells``), always present, also without a solution (docs/solutions.md)
AUCTION_EXTRA = frozenset(
    {
        "rounding",
        "unserved_unbounded",
        "rho",
        "pf_status",
        "unbounded_served_bound",
        "loo_solves",
        "milp_solves",
        "payments_inexact",
    }
)
COMPACT_EXTRA = AUCTION_EXTRA | {"cells", "loo_routes", "pf_route"}
#: keys ``fairplace.solve`` adds to every auction solution, whatever the solver: ``route`` (``bids``,
#: ``subset-bids`` or ``compact``) and ``subset_bids`` (agent-form apps: how many subset bids the
#: AGENT would list; None for bid tables) — ``fairplace.solvers.dispatch``
ROUTE_EXTRA = frozenset({"route", "subset_bids"})
#: ``Solution.extra`` keys of the exact placement solvers (docs/solutions.md)
PLACEMENT_EXTRA = frozenset(
    {
        "placed",
        "unplaced",
        "weighted_objective",
        "weighted_bound",
        "placed_bound",
        "milp_status",
        "incumbent",
    }
)


@dataclass(frozen=True)
class Solution:
    """One solved auction or placement instance.

    ``objective`` is sum_i -log rho_i of the PF allocation (auctions; apps with an unbounded ``rho_empty``
    that receive nothing are counted in ``extra['unserved_unbounded']`` instead of adding -inf) or the sum
    of the placed jobs' slowdowns L*maxV (placements). ``bound`` is a proven bound on the same quantity
    when the back end gives one and it can be stated in the objective's units (a time-limited solve
    that has not proven its number of served apps / placed jobs optimal has none); ``gap`` is the
    distance to it: auctions ``bound - objective`` in log units (exp(gap) - 1 is the relative gap of
    the PF product prod 1/rho), placements ``(objective - bound) / objective``; heuristics given the
    exact optimum report the distance to that optimum instead. ``status`` is ``optimal``,
    ``time_limit`` (a time or work limit stopped a solve: the best incumbent, or no solution at all
    when ``objective`` is None), ``infeasible``, ``error``, ``heuristic`` (no optimality claim) or
    ``bound`` (a relaxation value). ``seconds`` (from ``fairplace.solve``) is everything the solve
    did after the instance was loaded; ``setup_seconds`` the one-time set-up before that clock
    started (imports, building a back end). ``extra`` keys by solver: :data:`AUCTION_EXTRA`,
    :data:`COMPACT_EXTRA`, :data:`PLACEMENT_EXTRA`, plus :data:`ROUTE_EXTRA` from ``fairplace.solve``
    (docs/solutions.md).
    """

    kind: str
    status: str
    solver: str
    seconds: float
    objective: float | None
    allocation: dict[str, list[str]]
    bound: float | None = None
    pf_allocation: dict[str, list[str]] | None = None
    payments: dict[str, float] | None = None
    leftover: list[str] | None = None
    slowdown: dict[str, float] | None = None
    gap: float | None = None
    message: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: one-time set-up before the clock of ``seconds`` started (imports, building a back end)
    setup_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return (
            self.status in ("optimal", "time_limit", "heuristic", "bound")
            and self.objective is not None
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``fairplace solve --json`` object (the contract keys of docs/solutions.md, plus extras)."""
        d = asdict(self)
        for k in ("objective", "bound", "gap"):
            v = d[k]
            if isinstance(v, float) and not math.isfinite(v):
                d[k] = None
        if self.kind == "auction":
            d.pop("slowdown")
        else:
            for k in ("pf_allocation", "payments", "leftover"):
                d.pop(k)
        return d

    def to_frame(self):
        """One row per app (auction) or job (placement) with its bundle, payment / slowdown."""
        import pandas as pd  # heavy: imported on use

        rows = []
        if self.kind == "auction":
            apps = dict.fromkeys(
                [*(self.pf_allocation or {}), *self.allocation, *(self.payments or {})]
            )
            for a in apps:
                rows.append(
                    {
                        "app": a,
                        "pf_gpus": len((self.pf_allocation or {}).get(a, [])),
                        "c": (self.payments or {}).get(a),
                        "gpus": len(self.allocation.get(a, [])),
                        "allocation": ",".join(self.allocation.get(a, [])),
                    }
                )
            return pd.DataFrame(rows, columns=["app", "pf_gpus", "c", "gpus", "allocation"])
        for j, ids in self.allocation.items():
            rows.append(
                {
                    "job": j,
                    "gpus": len(ids),
                    "slowdown": (self.slowdown or {}).get(j),
                    "allocation": ",".join(ids),
                }
            )
        return pd.DataFrame(rows, columns=["job", "gpus", "slowdown", "allocation"])

    def __repr__(self) -> str:
        obj = "n/a" if self.objective is None else f"{self.objective:.6g}"
        head = f"Solution({self.kind}, solver={self.solver!r}, status={self.status!r}, objective={obj}, {self.seconds:.3f}s)"
        lines = [head]
        for k, ids in list(self.allocation.items())[:12]:
            extra = ""
            if self.payments and k in self.payments:
                extra = f"  c={self.payments[k]:.4f}"
            if self.slowdown and k in self.slowdown:
                extra = f"  S={self.slowdown[k]:.4f}"
            lines.append(
                f"  {k}: {len(ids)} GPUs [{', '.join(ids[:6])}{', ...' if len(ids) > 6 else ''}]{extra}"
            )
        if len(self.allocation) > 12:
            lines.append(f"  ... {len(self.allocation) - 12} more")
        if self.leftover:
            lines.append(f"  leftover: {len(self.leftover)} GPUs")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        obj = "n/a" if self.objective is None else f"{self.objective:.6g}"
        table = self.to_frame().to_html(index=False)
        return (
            f"<b>{html.escape(self.kind)}</b> solved by <code>{html.escape(self.solver)}</code>: "
            f"status <b>{html.escape(self.status)}</b>, objective {obj}, {self.seconds:.3f}s{table}"
        )
