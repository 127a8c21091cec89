"""The PAL L×V matrix: the paper's example as a golden test, and the closed form against the walk."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.formulations.lv import choose_cell, lv_cells, walk


def test_lv_order_golden_paper_example():
    # PAL §III-C1: V = 0.89, 0.94, 1.06, 2.55 and L_across = 1.5. The paper prints the traversal as
    # (1,0.89) (1,0.94) (1,1.06) (1.5,1.34) (1.5,1.41) (1.5,1.59) (1.5,3.88): it omits the cell
    # (1, 2.55), which the walk reaches before (1.5, 3.825), and it rounds 1.5 * 2.55 = 3.825 to 3.88
    # (and 1.335 to 1.34). The full order of all eight cells is:
    cells = lv_cells([0.89, 0.94, 1.06, 2.55, 0.94], 1.5)
    got = [(c.locality, round(c.lv_product, 6)) for c in cells]
    assert got == [
        (1.0, 0.89),
        (1.0, 0.94),
        (1.0, 1.06),
        (1.5, 1.335),
        (1.5, 1.41),
        (1.5, 1.59),
        (1.0, 2.55),
        (1.5, 3.825),
    ]
    assert [c.within for c in cells] == [True] * 3 + [False] * 3 + [True, False]


def test_lv_ties_put_within_first():
    # 1.5 * 1.0 == 1.5 * 1.0 and 1.0 * 1.5: the within cell (V = 1.5) comes before the across cell.
    cells = lv_cells([1.0, 1.5], 1.5)
    assert [(c.within, c.score) for c in cells] == [
        (True, 1.0),
        (True, 1.5),
        (False, 1.0),
        (False, 1.5),
    ]
    assert [c.within for c in lv_cells([1.0], 1.0)] == [True, False]


def test_lv_without_within_row():
    assert all(not c.within for c in lv_cells([1.0, 2.0], 1.7, within=False))


@settings(max_examples=200, deadline=None)
@given(
    levels=st.lists(
        st.sampled_from([0.9, 0.95, 1.0, 1.02, 1.1, 1.5, 2.5]), min_size=1, max_size=12
    ),
    L=st.sampled_from([1.0, 1.1, 1.5, 1.7, 3.0]),
    data=st.data(),
)
def test_closed_form_equals_walk(levels, L, data):
    """The first feasible cell of the walk is within iff w* <= L * a* (choose_cell)."""
    levels = np.array(levels)
    a_star = data.draw(st.sampled_from(sorted(set(levels))))
    has_within = data.draw(st.booleans())
    w_star = (
        data.draw(st.sampled_from([v for v in sorted(set(levels)) if v >= a_star]))
        if has_within
        else None
    )

    def feasible(cell):
        if cell.within:
            return w_star is not None and cell.score >= w_star
        return cell.score >= a_star

    first = walk(lv_cells(levels, L), feasible)
    assert first is not None
    assert first.within == choose_cell(w_star, a_star, L)
    expected = w_star if first.within else L * a_star
    assert first.lv_product == pytest.approx(expected)
