"""Compact PF from its LP relaxation: when the LP's cell selectors are integral, place those
cells on GPUs (greedy ``compact.packing.pack``, else a placement-only MILP); a placement that reaches
the LP bound is an optimum of the MILP (used by the PF solve and by the leave-one-out payments)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from fairplace.formulations.compact import CompactProgram
from fairplace.formulations.program import RawResult

from ..backends import get_backend, highs  # highs: live-model LP re-solves, no back-end equivalent
from ..options import SolveOptions
from .packing import PACK_RULES, pack


def rerun(h, lp_model) -> RawResult:
    """Re-solve the live LP model ``h`` of ``lp_model`` (warm, from its basis) and read it. When
    HiGHS ends without a usable answer (status ``error``: e.g. "Optimal" whose unscaled point misses
    a count row by 1.9e-7 after tens of warm dual simplex re-solves on one model, a W2 x2 THEMIS
    round), solve once more from scratch (``clearSolver``: a fresh basis and factorisation; that
    node's cold solve is feasible to 1e-15 at the same value). The caller handles what is then
    still not optimal (its fallback is the full MILP)."""
    h.run()
    lp = highs.read(h, lp_model, 0.0)
    if lp.status == "error":
        h.clearSolver()
        h.run()
        lp = highs.read(h, lp_model, 0.0)
    return lp


def has_rack_selectors(prog: CompactProgram) -> bool:
    """Whether some active app has spread-1 cells and no held rack (``rack_cells`` changes it)."""
    return any(
        prog.apps[i].held_rack < 0 and any(c[1] == 1 for c in prog.feasible_cells(i))
        for i in prog.active
    )


def selectors(prog: CompactProgram, x: np.ndarray, skip: int | None = None):
    """(app index, its cells, its cell selectors z_ic in ``x``) of every app but ``skip``."""
    _, meta = prog.layout
    for e in meta:
        if e["i"] != skip:
            yield e["i"], e["cells"], x[e["z"] : e["z"] + len(e["cells"])]


def selector_columns(
    prog: CompactProgram, skip: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(cell-selector columns of every app but ``skip``, those of ``skip``), as int32 arrays."""
    _, meta = prog.layout
    parts: tuple[list, list] = ([], [])
    for e in meta:
        parts[e["i"] == skip].append(np.arange(e["z"], e["z"] + len(e["cells"])))
    return tuple(np.concatenate(p or [[]]).astype(np.int32) for p in parts)  # type: ignore[return-value]


def lp_cells(prog: CompactProgram, x: np.ndarray, skip: int | None = None) -> dict | None:
    """{app index: cell} when every cell selector of the LP point (apps other than ``skip``) is
    integral, else None."""
    cols, owner, cells_of = prog.selector_index
    z = x[cols]
    mine = owner == skip
    if (np.abs(z - np.round(z)) > 1e-7)[~mine].any():
        return None
    cells: dict[int, object] = {}
    for k in np.flatnonzero((z > 0.5) & ~mine).tolist():  # the first cell on, per app
        cells.setdefault(int(owner[k]), cells_of[k])
    return cells


def from_lp(
    prog: CompactProgram,
    milp,
    lp,
    opts: SolveOptions,
    skip: int | None = None,
    placement_milp: bool = True,
    budget=None,
):
    """(RawResult, choice) if the LP's integral cells can be placed at the LP bound, else None.
    ``skip``: an app whose gains were 0 in ``lp`` (leave-one-out on the full program); its cells are
    ignored (dropping them frees capacity and keeps the value). ``placement_milp``: when the greedy
    fails, place the cells exactly (:func:`fixed_cells`)."""
    cells = lp_cells(prog, lp.x, skip)
    if cells is None:
        return None
    tol = max(opts.mip_abs_gap, opts.mip_rel_gap * abs(lp.objective), 1e-9) + 1e-9
    for rule in PACK_RULES:  # cheap greedy placements first
        choice = pack(prog, cells, rule)
        if choice is None:
            continue
        x = prog.start_vector(choice)
        if milp.is_feasible(x) and milp.value(x) >= lp.objective - tol:
            res = RawResult("optimal", x, milp.value(x), lp.objective, 0.0, "optimal (LP cells)")
            return res, choice
    if not placement_milp:
        return None
    o = budget.options(opts) if budget is not None else opts
    if o is None:  # the budget is spent: no placement MILP
        return None
    fixed = fixed_cells(prog, milp, lp, o, skip)
    if fixed is None:
        return None
    return fixed, prog.decode(fixed.x)


def fixed_cells(prog: CompactProgram, milp, lp, opts: SolveOptions, skip: int | None = None):
    """Place the LP's integral cells exactly: the program restricted to those cells (placement
    variables only) is solved; a RawResult of the full program if it is feasible."""
    cells = lp_cells(prog, lp.x, skip) or {}
    sub = replace(prog, fixed=tuple(sorted(cells.items())))
    res = get_backend("highs").solve(sub.to_milp(), opts)
    if res.x is None:
        return None
    choice = sub.decode(res.x)
    x = prog.start_vector(choice)
    tol = max(opts.mip_abs_gap, opts.mip_rel_gap * abs(lp.objective), 1e-9) + 1e-9
    if not milp.is_feasible(x) or milp.value(x) < lp.objective - tol:
        return None
    return RawResult("optimal", x, milp.value(x), lp.objective, res.seconds, "optimal (LP cells)")
