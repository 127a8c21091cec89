"""The *who leaves* program of the compact PF: the largest leave-one-out gain over a set of apps.

PA's payment of app j is c_j = exp(-D_j), D_j = PF_{-j} - (PF - w_j(c_j)) >= 0 (``pa.payment``;
PF_{-j}: the others' log-sum without j, c_j: j's PF cell, w_jc = -log rho_j(c)). For a set S of
apps holding PF cells, add per j in S a binary l_j ("j leaves": no GPUs, it earns w_j(c_j)):

    maximise  PF objective + sum_{j in S} (w_j(c_j) - w_j0) l_j
    s.t.      PF rows;   sum_c z_jc + l_j <= 1  (j in S);   sum_{j in S} l_j <= 1.

With l_j = 1, j's selectors are 0 (so are its GPU counts, by its count row) and the value is
PF_{-j} + w_j(c_j); with every l = 0 it is a PF point (at most PF). So the optimum is
PF + max_{j in S} D_j, and a point with l_j = 1 is a PF_{-j} point of its value minus w_j(c_j).
Only for finite rho(nothing) everywhere (no big-M served count).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .compact import CompactProgram
from .compact_milp import Choice
from .program import MILP


def leave_program(prog: CompactProgram, choice: Choice, leavers: list[int]) -> MILP:
    """The who-leaves MILP (module docstring) of ``prog.milp`` over ``leavers`` (apps of
    ``choice``, the PF): l_j is column ``prog.milp.n_cols + k`` for ``leavers[k]``."""
    if any(prog.apps[i].w_empty is None for i in prog.active):
        raise ValueError("leave_program needs a finite rho(nothing) for every active app")
    milp = prog.milp
    n, m, k = milp.n_cols, milp.n_rows, len(leavers)
    _, meta = prog.layout
    by = {e["i"]: e for e in meta}
    rows, cols = [], []
    for r, j in enumerate(leavers):
        e = by[j]
        z = list(range(e["z"], e["z"] + len(e["cells"]))) + [n + r]
        rows += [r] * len(z) + [k]
        cols += z + [n + r]
    B = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(k + 1, n + k))
    A = sp.vstack([sp.hstack([milp.A, sp.csr_matrix((m, k))]), B], format="csr")
    gain = np.array([prog.cell_gain(j, choice[j][0]) for j in leavers], dtype=float)
    return MILP(
        c=np.concatenate([milp.c, gain]),
        A=A,
        row_lb=np.concatenate([milp.row_lb, np.full(k + 1, -np.inf)]),
        row_ub=np.concatenate([milp.row_ub, np.ones(k + 1)]),
        col_lb=np.concatenate([milp.col_lb, np.zeros(k)]),
        col_ub=np.concatenate([milp.col_ub, np.ones(k)]),
        integrality=np.concatenate([milp.integrality, np.ones(k, dtype=bool)]),
        sense=milp.sense,
        offset=milp.offset,
    )


def bundle_keys(prog: CompactProgram) -> dict[int, tuple | None]:
    """{active app: key}: apps with the same key (not None) see every bundle alike: they hold no
    GPUs and have the same level index per GPU type, so a bundle satisfies a cell (n, s, v) for
    one iff it does for the other, and either can take the other's bundle at its own value of
    that cell or better. None for an app holding GPUs (its spreads count its held GPUs)."""
    _, meta = prog.layout
    out: dict[int, tuple | None] = {}
    for e in meta:
        a = prog.apps[e["i"]]
        held = max(a.held_machine, a.held_rack) != -1 or a.table.held_count
        out[e["i"]] = None if held else tuple(e["lev"])
    return out
