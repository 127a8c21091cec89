"""Two parts of the compact enumeration against their literal definitions: the joint choices
(``enumeration._rows``: every choice that passes Hall's condition, in lexicographic order, since
the first feasible row wins ties) and the greedy placement of chosen options
(``packing._greedy``: fullest machine while none holds the rest, then the best fit)."""

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.formulations.agents import RhoTable
from fairplace.formulations.compact import CompactApp, CompactProgram
from fairplace.instances.generators import grid_cluster
from fairplace.solvers.compact import enumeration as compact_enum
from fairplace.solvers.compact import packing as compact_packing


def _random_options(rng, caps: np.ndarray) -> list:
    """1-4 apps; each option (after "nothing") a random set of groups and a count it fits alone;
    some apps with "nothing" only."""
    out = []
    for _ in range(int(rng.integers(1, 5))):
        masks, n = [np.zeros(caps.size, bool)], [0]
        if rng.random() < 0.85:
            for _ in range(int(rng.integers(1, 7))):
                m = rng.random(caps.size) < 0.4
                if caps[m].sum():
                    masks.append(m)
                    n.append(int(rng.integers(1, caps[m].sum() + 1)))
        k = len(n)
        out.append(
            compact_enum.Options(
                (None,) * k,
                np.packbits(np.array(masks), axis=1, bitorder="little"),
                np.array(n, np.int64),
                np.zeros(k),
                False,
            )
        )
    return out


def _hall_rows(opts: list, caps: np.ndarray) -> list[tuple[int, ...]]:
    """Every joint choice, in lexicographic order, whose served apps pass Hall's condition for
    every subset: sum of counts <= free GPUs of the union of their groups."""
    G = caps.size
    masks = [np.unpackbits(o.masks, axis=1, bitorder="little")[:, :G].astype(bool) for o in opts]
    out = []
    for row in itertools.product(*(range(o.n.size) for o in opts)):
        served = [a for a, k in enumerate(row) if k]
        ok = all(
            sum(int(opts[a].n[row[a]]) for a in sub)
            <= caps[np.logical_or.reduce([masks[a][row[a]] for a in sub])].sum()
            for r in range(1, len(served) + 1)
            for sub in itertools.combinations(served, r)
        )
        if ok:
            out.append(row)
    return out


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_rows_are_the_hall_feasible_joint_choices_in_order(seed):
    rng = np.random.default_rng(seed)
    caps = rng.integers(0, 5, int(rng.integers(1, 20)))
    opts = _random_options(rng, caps)
    rows = compact_enum._rows(opts, compact_enum._byte_caps(caps))
    assert rows.shape[1] == len(opts)
    assert [tuple(r) for r in rows.tolist()] == _hall_rows(opts, caps)


def _greedy_literal(prog, cells, eligible, free):
    """The greedy as its rule reads, one machine at a time over every machine: the best fit if
    some machine holds what the app still needs, else the fullest machine."""
    grps, machine = prog.groups, prog.group_arrays[1].tolist()
    order = sorted(cells, key=lambda i: (sum(len(free[q]) for q in eligible[i]), i))
    out = {}
    for i in order:
        t, ci = prog.apps[i].table, prog.classes.index(prog.apps[i].cls)
        on_machine = {}
        for q in eligible[i].tolist():
            on_machine.setdefault(machine[q], []).append(q)
        need, out[i] = cells[i][0], []
        on = {mm: sum(len(free[q]) for q in qs) for mm, qs in on_machine.items()}
        while need:
            fit = [mm for mm in on if on[mm] >= need]
            m = min(fit, key=lambda mm: (on[mm], mm)) if fit else None
            if m is None:
                m = min((mm for mm in on if on[mm]), key=lambda mm: (-on[mm], mm), default=None)
            if m is None:
                return None
            for q in sorted(on_machine[m], key=lambda q: -t.level(grps[q].scores[ci])):
                got = free[q][:need]  # worst acceptable level first
                free[q] = free[q][len(got) :]
                out[i].extend(got)
                need, on[m] = need - len(got), on[m] - len(got)
    return out


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_greedy_placement_is_its_rule(seed):
    rng = np.random.default_rng(seed)
    M, per = int(rng.integers(1, 9)), int(rng.integers(1, 5))
    pm = {"A": rng.choice([1.0, 1.2, 1.5], M * per)}
    cl = grid_cluster(M, per, int(rng.integers(1, 3)), pm=pm)
    offer = tuple(sorted(rng.choice(M * per, int(rng.integers(1, M * per + 1)), replace=False)))
    levels = np.array([1.0, 1.2, 1.5])
    apps = tuple(
        CompactApp(RhoTable(f"a{k}", levels, np.ones((2, 3, 3))), "A")
        for k in range(int(rng.integers(1, 5)))
    )
    prog = CompactProgram(cl, tuple(int(g) for g in offer), apps)
    G = len(prog.groups)
    free = [list(g.gpus) for g in prog.groups]
    for q in range(G):  # some GPUs already taken
        del free[q][: int(rng.integers(0, len(free[q]) + 1))]
    eligible = {i: np.flatnonzero(rng.random(G) < 0.6) for i in range(len(apps))}
    cells = {
        i: (int(rng.integers(1, max(2, sum(len(free[q]) for q in e) + 2))), 2, 2)
        for i, e in eligible.items()
        if rng.random() < 0.8
    }
    want = _greedy_literal(prog, cells, eligible, [list(f) for f in free])
    assert compact_packing._greedy(prog, cells, eligible, [list(f) for f in free]) == want
