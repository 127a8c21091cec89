"""Placing chosen compact cells on concrete GPUs: PA ``floor`` rounding (``best_subbundle``), the
greedy placement of fixed cells (``pack``) the compact solver tries before a placement MILP, and
the enumeration's placement of its chosen options on their eligible groups (``place_options``:
a greedy, else a maximum flow, which exists by Hall's condition)."""

from __future__ import annotations

import bisect

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_flow

from fairplace.core.domain import Cluster
from fairplace.formulations.compact import CompactApp, CompactProgram
from fairplace.formulations.compact_milp import Choice


def best_subbundle(
    app: CompactApp, cluster: Cluster, bundle: tuple[int, ...], cap: int
) -> tuple[tuple[int, int, int], tuple[int, ...]] | None:
    """PA ``floor`` rounding in the compact form: the best (lowest rho) cell reachable with at most
    ``cap`` GPUs of ``bundle`` (same machine / rack / level logic as the MILP), and those GPUs."""
    t = app.table
    if cap <= 0 or not bundle:
        return None
    every = cluster.pm_levels(app.cls)
    if every.size == 1:  # one PM level on the whole cluster: every GPU of the bundle at one level
        return _best_one_level(app, cluster, bundle, cap, every.item())
    idx = np.asarray(bundle, np.int64)
    # RhoTable.level, vectorised over the bundle
    scores = np.round(cluster.pm_vector(app.cls)[idx], 12) - 1e-12
    lev = np.searchsorted(t.levels, scores)
    place = (cluster.machine_index[idx], cluster.rack_index[idx], np.zeros(idx.size, np.int64))
    held = (app.held_machine, app.held_rack, -1)
    best_rho = t.rho[0, t.held_spread, max(t.held_level, 0)]
    rho = t.rho
    # the first cell of the lowest rho < best_rho that fits: cells by (rho, their order), each
    # (spread, level)'s counts per machine / rack computed once
    order = sorted(
        (k for k, c in enumerate(app.cells) if c[0] <= cap and rho[c] < best_rho),
        key=lambda k: (rho[app.cells[k]], k),
    )
    counts_of: dict = {}
    for k in order:
        n, s, v = app.cells[k]
        got = counts_of.get((s, v))
        if got is None:
            ok = lev <= v
            where = place[s]  # spread 0: one machine, 1: one rack, 2: anywhere
            if held[s] >= 0:  # the union must stay on the held machine / rack
                ok &= where == held[s]
            got = counts_of[s, v] = (ok, np.bincount(where[ok]).tolist())
        ok, counts = got
        # the first machine / rack (ascending) that holds n
        fit = next((m for m, c in enumerate(counts) if c >= n), None)
        if fit is not None:
            pool = ok & (place[s] == fit)
            return app.cells[k], tuple(int(g) for g in idx[pool][:n])
    return None


def _best_one_level(
    app: CompactApp, cluster: Cluster, bundle: tuple[int, ...], cap: int, score: float
) -> tuple[tuple[int, int, int], tuple[int, ...]] | None:
    """:func:`best_subbundle` where every GPU has the PM ``score`` (rounded to 12 digits, as
    ``Cluster.pm_levels``): level L = ``RhoTable.level`` for all, so a cell (n, s, v) with v >= L
    takes the first n GPUs of the bundle (in its order) on the lowest machine / rack id that holds
    n of them (its held one, when it holds one), and v < L none. A cell fits iff n <= the most
    GPUs of the bundle on one place of its spread (m_s), so the first cell of the (rho, order)
    ranking that fits is the least (rho, order) among the cells with n <= min(cap, m_s)."""
    t = app.table
    lev = bisect.bisect_left(t.levels.tolist(), score - 1e-12)
    rho = t.rho
    best_rho = float(rho[0, t.held_spread, max(t.held_level, 0)])
    idx = np.asarray(bundle, np.int64)
    held = (app.held_machine, app.held_rack)
    counts: list[np.ndarray | None] = [None, None, None]  # per spread: GPUs per place
    room = [cap, cap, min(cap, idx.size)]  # per spread: the most GPUs a cell may take
    for s in (0, 1):
        per = np.bincount((cluster.machine_index if s == 0 else cluster.rack_index)[idx])
        if held[s] >= 0:  # the union must stay on the held machine / rack
            per = per[held[s]] * (np.arange(per.size) == held[s]) if held[s] < per.size else per[:0]
        counts[s] = per
        room[s] = min(cap, int(per.max(initial=0)))
    # a column's cells (one s and v, n ascending) have rho falling with n (``CompactApp.cells``:
    # each is worth more than the one before it), so its best that fits is its last one that fits
    # (NaN in the table: no such order, every cell that fits is a candidate)
    cells = app.cells
    fits = [k for k, (n, s, v) in enumerate(cells) if v >= lev and n <= room[s]]
    if not np.isnan(rho).any():
        last = {cells[k][1:]: k for k in fits}  # (s, v) -> its last cell that fits
        fits = sorted(last.values())
    top, arg = best_rho, -1
    for k in fits:  # the least (rho, k) that beats the held bundle
        r = float(rho[cells[k]])
        if r < top:
            top, arg = r, k
    if arg < 0:
        return None
    n, s, _ = cells[arg]
    if s == 2:
        return cells[arg], tuple(idx[:n].tolist())
    fit = int(np.argmax(counts[s] >= n))  # type: ignore[operator]  # the lowest place that holds n
    at = cluster.machine_index if s == 0 else cluster.rack_index
    return cells[arg], tuple(idx[at[idx] == fit][:n].tolist())


PACK_RULES = ("damage", "best-fit", "first-fit", "matching")


def pack(
    prog: CompactProgram,
    cells: dict[int, tuple[int, int, int]],
    rule: str = "damage",
    seed: int | None = None,
    why: list | None = None,
) -> dict | None:
    """Greedy placement of fixed cells {app index: (n, s, v)}: spread-0 apps first (best-fit
    machine), then spread-1 (rack), then spread-2; each app takes its worst acceptable GPUs first.
    ``rule``: ``damage`` (the place where the app uses the fewest better-type GPUs, then best fit),
    ``best-fit`` or ``first-fit`` (apps by size only), or ``matching``: when no two spread-0 apps
    fit on one machine together (every pair needs more GPUs than any machine offers, e.g. 3- and
    4-GPU cells on 4-GPU machines), their machines are one min-cost assignment (apps x machines,
    cost = the damage above) instead of one greedy pick each, so a large set of whole-machine
    cells is placed whenever a matching exists (else the rule fails like the others). ``seed`` perturbs the order of apps with
    the same spread (multi-start). Returns {i: (cell, GPU indices)} or None when the greedy finds no placement (which
    does not prove that none exists)."""
    _, meta = prog.layout
    room = _Room(prog)
    cnt = room.cnt
    by = {e["i"]: e for e in meta}
    tsum = [sum(t) for t in prog.types]

    def ok_types(i):  # acceptable types, worst first: own level, then scores for other classes
        v, lev = cells[i][2], by[i]["lev"]
        ok = [t for t in range(len(prog.types)) if lev[t] <= v]
        return sorted(ok, key=lambda t: (-lev[t], -tsum[t], t))

    oks = {i: ok_types(i) for i in cells}
    assigned: dict[int, int] = {}  # matching rule: app -> machine index
    if rule == "first-fit":
        order = sorted(cells, key=lambda i: (cells[i][1], -cells[i][0], i))
    else:
        order = sorted(cells, key=lambda i: (cells[i][1], len(oks[i]), -cells[i][0], i))
    if seed is not None:
        noise = np.random.default_rng(seed).random(len(order))
        rank = {i: k for k, i in enumerate(order)}
        order = sorted(order, key=lambda i: (cells[i][1], rank[i] + 8 * noise[rank[i]]))
    free0 = [i for i in order if cells[i][1] == 0 and prog.apps[i].held_machine < 0]
    if rule == "matching":  # held machines first, then the assignment of the other spread-0 apps
        if not _one_per_machine([cells[i][0] for i in free0], cnt.sum(1)):
            return None
        order = sorted(order, key=lambda i: (cells[i][1], i in free0))
    out = {}
    for i in order:
        n, s, v = cells[i]
        a, ok = prog.apps[i], oks[i]
        if rule == "matching" and i in free0 and not assigned:
            matched = _assign(free0, cells, oks, cnt)
            if matched is None:
                return None
            assigned = matched
        avail = cnt[:, ok]  # machines x acceptable types
        places, per = room.places(a, s, ok, avail)
        total = per.sum(1)
        fit = np.flatnonzero(total >= n)
        if not fit.size:
            if why is not None:  # diagnostics: the app that did not fit
                why.append((i, (n, s, v), [int(k) for k in cnt[:, ok].sum(0)]))
            return None
        # worst acceptable GPUs first: use_j = min(per_j, n - sum_{l<j} per_l)
        use = np.minimum(per, np.maximum(n - (np.cumsum(per, 1) - per), 0))[fit]
        if i in assigned:
            at = np.array([assigned[i]])
        elif rule == "damage":  # fewest better GPUs consumed first, then best fit (least room)
            keys = (fit, total[fit]) + tuple(use[:, j] for j in range(len(ok)))
            at = places[fit[np.lexsort(keys)[0]]]
        elif rule == "best-fit":
            at = places[fit[np.argmin(total[fit])]]
        else:
            at = places[fit[0]]
        if s == 2:  # spread-2: drain the emptiest machines first, keep full machines whole
            at = np.argsort(avail.sum(1), kind="stable")
        out[i] = ((n, s, v), tuple(sorted(room.take(ok, at, n))))
    return out


class _Room:
    """The free GPUs of a program's offer for :func:`pack`, machines by position (ascending id):
    per (position, type) the GPU indices (``pool``) and their count (``cnt``, machines x types);
    what depends on the offer alone (:func:`_room_base`) is built once per offer."""

    def __init__(self, prog: CompactProgram):
        base = prog.shared("pack room", lambda: _room_base(prog))
        self.machines, self.mpos, self.racks, self.at_rack, self.rack_sum, self.singles, pool = base
        self.pool = {k: list(v) for k, v in pool.items()}
        self.cnt = np.zeros(
            (len(self.machines), len(prog.types)), dtype=np.int64
        )  # free per (m, t)
        for (p, t), gpus in pool.items():
            self.cnt[p, t] = len(gpus)

    def places(self, a, s: int, ok: list[int], avail: np.ndarray):
        """(the places app ``a`` can take a spread-``s`` cell in: arrays of machine positions,
        their free GPUs per acceptable type): machines (or the held one), racks (or the held one),
        or the whole offer."""
        if s == 0:
            if a.held_machine >= 0:
                rows = [self.mpos[a.held_machine]] if a.held_machine in self.mpos else []
                return [np.array(rows, dtype=np.int64)], avail[rows].sum(0, keepdims=True)
            return self.singles, avail
        if s == 1:
            by_rack, starts = self.rack_sum  # free GPUs per (rack, acceptable type)
            per = np.add.reduceat(avail[by_rack], starts, axis=0)
            if a.held_rack >= 0:
                places = [self.at_rack.get(a.held_rack, np.zeros(0, dtype=np.int64))]
                per = per[[k for k, r in enumerate(self.racks) if r == a.held_rack]]
                per = per if len(per) else np.zeros((1, len(ok)), dtype=np.int64)
                return places, per
            return [self.at_rack[r] for r in self.racks], per
        return [np.arange(len(self.machines))], avail.sum(0, keepdims=True)

    def take(self, ok: list[int], at: np.ndarray, n: int) -> list[int]:
        """``n`` GPUs from the machines at positions ``at`` (in that order), worst acceptable type
        first (removed from the room)."""
        got: list[int] = []
        for t in ok:
            for p in at[self.cnt[at, t] > 0].tolist():
                gpus = self.pool[p, t]
                k = min(n - len(got), len(gpus))
                got += gpus[:k]
                del gpus[:k]
                self.cnt[p, t] -= k
                if len(got) == n:
                    return got
        return got


def _room_base(prog: CompactProgram) -> tuple:
    """(machines ascending, {machine: position}, racks ascending, {rack: positions of its
    machines}, (machine positions rack by rack, where each rack starts: a ``reduceat`` per rack),
    one position array per machine, {(position, type): GPU indices}) of the offer, for
    :class:`_Room`."""
    tpos = {t: k for k, t in enumerate(prog.types)}
    rack_of = prog._rack_of
    machines = tuple(sorted(rack_of))
    mpos = {m: k for k, m in enumerate(machines)}
    racks = tuple(sorted(set(rack_of.values())))
    kpos = {r: k for k, r in enumerate(racks)}
    rpos = np.array([kpos[rack_of[m]] for m in machines], dtype=np.int64)
    at_rack = {r: np.flatnonzero(rpos == k) for k, r in enumerate(racks)}
    by_rack = np.argsort(rpos, kind="stable")  # machine positions rack by rack
    rack_sum = (by_rack, np.searchsorted(rpos[by_rack], np.arange(len(racks))))
    singles = tuple(np.array([k], dtype=np.int64) for k in range(len(machines)))
    pool: dict[tuple[int, int], list[int]] = {}
    for g in prog.groups:
        pool.setdefault((mpos[g.machine], tpos[g.scores]), []).extend(g.gpus)
    return machines, mpos, racks, at_rack, rack_sum, singles, {k: tuple(v) for k, v in pool.items()}


def _one_per_machine(sizes: list[int], room: np.ndarray) -> bool:
    """Whether no two of these spread-0 cells fit on one machine together (then placing them is
    an assignment problem: each machine hosts at most one)."""
    if len(sizes) < 2:
        return bool(sizes)
    a, b = sorted(sizes)[:2]
    return a + b > int(room.max(initial=0))


def _assign(apps: list[int], cells: dict, oks: dict, cnt: np.ndarray) -> dict[int, int] | None:
    """{app: machine index}: a min-cost assignment of whole spread-0 cells to distinct machines
    with enough acceptable free GPUs; cost = GPUs of better-than-worst acceptable types used
    (taking the worst first), then the room left (best fit). None when no assignment exists."""
    from scipy.optimize import linear_sum_assignment  # heavy: imported on use

    big = 1e9
    cost = np.full((len(apps), cnt.shape[0]), big)
    for r, i in enumerate(apps):
        n, ok = cells[i][0], oks[i]
        per = cnt[:, ok]
        total = per.sum(1)
        use = np.minimum(per, np.maximum(n - (np.cumsum(per, 1) - per), 0))
        weight = np.arange(len(ok), dtype=float)  # 0 for the worst acceptable type
        fit = total >= n
        cost[r, fit] = (use[fit] @ weight) * (cnt.sum() + 1) + (total[fit] - n)
    if len(apps) > cost.shape[1]:
        return None
    rows, cols = linear_sum_assignment(cost)
    if (cost[rows, cols] >= big).any():
        return None
    return {apps[r]: int(c) for r, c in zip(rows, cols, strict=True)}


def place_options(prog: CompactProgram, cells: dict, masks: dict) -> Choice:
    """Distinct GPUs for the chosen options: apps with the fewest eligible GPUs first, each on the
    machine that best fits what it still needs (else the one with the most eligible GPUs), its
    worst acceptable level first; a maximum flow when that greedy gets stuck (Hall's condition
    holds, so one exists)."""
    grps = prog.groups
    eligible = {
        i: np.flatnonzero(np.unpackbits(m, bitorder="little")[: len(grps)])
        for i, m in masks.items()
    }
    free = [list(g.gpus) for g in grps]
    taken = _greedy(prog, cells, eligible, free)
    if taken is None:
        taken = _flow(prog, cells, eligible)
    return {i: (cells[i], tuple(sorted(taken[i]))) for i in sorted(cells)}


def _greedy(prog, cells, eligible, free) -> dict[int, list[int]] | None:
    """{app: GPUs} by the greedy of :func:`place_options` (``free``: GPUs per group, consumed), or None.

    Per app: while no machine holds what it still needs, it empties the fullest machine (most
    eligible free GPUs, then the lowest id), so the machines it empties come in one sorted order;
    once some machine holds the rest, the best fit (fewest such GPUs, then the lowest id) gives it."""
    grps = prog.groups
    machine = prog.group_arrays[1].tolist()
    classes = prog.classes
    order = sorted(cells, key=lambda i: (sum(len(free[q]) for q in eligible[i].tolist()), i))
    out: dict[int, list[int]] = {}
    for i in order:
        t = prog.apps[i].table
        ci = classes.index(prog.apps[i].cls)
        on_machine: dict[int, list[int]] = {}  # app i's eligible groups by machine, in order
        for q in eligible[i].tolist():
            on_machine.setdefault(machine[q], []).append(q)
        need = cells[i][0]
        out[i] = []
        on = {mm: sum(len(free[q]) for q in qs) for mm, qs in on_machine.items()}  # eligible free
        fullest = sorted((mm for mm in on if on[mm]), key=lambda mm: (-on[mm], mm))
        at = 0  # fullest[:at] are emptied
        while need:
            if at == len(fullest):
                return None
            if on[fullest[at]] >= need:  # best fit among the machines that hold the rest
                fit = [mm for mm in fullest[at:] if on[mm] >= need]  # a prefix: on descends
                m = min(fit, key=lambda mm: (on[mm], mm))
            else:
                m = fullest[at]
                at += 1
            qs = on_machine[m]
            if len(qs) > 1:  # its worst acceptable level first
                qs = sorted(qs, key=lambda q: -t.level(grps[q].scores[ci]))
            for q in qs:
                k = min(need, len(free[q]))
                out[i] += free[q][:k]
                del free[q][:k]
                need -= k
                on[m] -= k
    return out


def _flow(prog, cells, eligible) -> dict[int, list[int]]:
    """Apps -> groups maximum flow (source 0, apps, groups, sink)."""
    grps = prog.groups
    apps = sorted(cells)
    na, nq = len(apps), len(grps)
    src, sink = 0, 1 + na + nq
    rows, cols, cap = [], [], []
    for a, i in enumerate(apps):
        rows.append(src)
        cols.append(1 + a)
        cap.append(cells[i][0])
        for q in eligible[i]:
            rows.append(1 + a)
            cols.append(1 + na + q)
            cap.append(len(grps[q].gpus))
    for q, g in enumerate(grps):
        rows.append(1 + na + q)
        cols.append(sink)
        cap.append(len(g.gpus))
    n = sink + 1
    graph = csr_matrix((np.array(cap, np.int32), (rows, cols)), shape=(n, n))
    flow = maximum_flow(graph, src, sink).flow.toarray()
    free = [list(g.gpus) for g in grps]
    out: dict[int, list[int]] = {}
    for a, i in enumerate(apps):
        out[i] = []
        for q in range(nq):
            k = int(flow[1 + a, 1 + na + q])
            out[i] += free[q][:k]
            del free[q][:k]
    if any(len(out[i]) != cells[i][0] for i in apps):
        raise ValueError("compact enumeration: no placement although Hall's condition holds")
    return out
