"""The PAL L×V matrix (PAL §III-C1, Algorithm 2): cells (L, V) walked by increasing LV-product.

A cell pairs a locality level L (``L_within = 1``, ``L_across``) with a PM-score level V of the job's
class; its entry is the LV-product ``L * V`` (PAL Eq. 1: t_iter = L * max_g V_g * t_orig). PAL walks the
cells in increasing ``L * V``; on ties the within-machine cell comes first, then the lower V.

Because the first *feasible* cell is the minimum-product feasible cell, the walk has a closed form
(:func:`choose_cell`): with ``w*`` the best packed (one-machine) max-V and ``a*`` the best spread max-V,
PAL takes the within cell iff ``w* <= L_across * a*``. The policies use the closed form; the tests check
it against the explicit walk.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: products are compared after rounding to this many decimals so that 1.5 * 0.94 ties 1.41 exactly
_DECIMALS = 12


@dataclass(frozen=True)
class LVCell:
    """One cell of the L×V matrix: locality ``L``, score level ``V`` and whether L is ``L_within``."""

    locality: float
    score: float
    within: bool

    @property
    def lv_product(self) -> float:
        """L * V, the combined slowdown of an allocation in this cell."""
        return self.locality * self.score

    def key(self) -> tuple[float, int, float]:
        """Walk order: LV-product, then within (0) before across (1), then the lower V."""
        return (round(self.lv_product, _DECIMALS), 0 if self.within else 1, self.score)


def lv_cells(scores, locality_across: float, within: bool = True) -> tuple[LVCell, ...]:
    """All cells of the L×V matrix of one class, in PAL's traversal order.

    ``scores``: the class's (binned) PM-scores; each distinct value is one V level.
    ``within=False`` drops the within-machine row (jobs larger than a machine).
    """
    levels = np.unique(np.asarray(scores, dtype=float))
    cells = [LVCell(float(locality_across), float(v), False) for v in levels]
    if within:
        cells += [LVCell(1.0, float(v), True) for v in levels]
    return tuple(sorted(cells, key=LVCell.key))


def choose_cell(best_within: float | None, best_across: float, locality_across: float) -> bool:
    """True iff PAL's walk stops at a within-machine cell (closed form of Algorithm 2, lines 3-18).

    ``best_within``: min over machines of the N-th smallest free score there (None: no machine fits);
    ``best_across``: the N-th smallest free score in the cluster. The first feasible within cell has
    product ``best_within``, the first feasible across cell ``locality_across * best_across``.
    """
    if best_within is None or not np.isfinite(best_within):
        return False
    w = round(float(best_within), _DECIMALS)
    return w <= round(float(locality_across) * float(best_across), _DECIMALS)


def walk(cells, feasible) -> LVCell | None:
    """Reference walk: the first cell for which ``feasible(cell)`` holds (None if none does)."""
    for cell in cells:
        if feasible(cell):
            return cell
    return None
