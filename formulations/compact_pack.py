"""Placing chosen compact cells on concrete GPUs: PA ``floor`` rounding (``best_subbundle``) and
the greedy placement of fixed cells (``pack``) the compact solver tries before a placement MILP."""

from __future__ import annotations

import numpy as np

from fairplace.domain import Cluster

from .compact import CompactApp, CompactProgram


def best_subbundle(
    app: CompactApp, cluster: Cluster, bundle: tuple[int, ...], cap: int
) -> tuple[tuple[int, int, int], tuple[int, ...]] | None:
    """PA ``floor`` rounding in the compact form: the best (lowest rho) cell reachable with at most
    ``cap`` GPUs of ``bundle`` (same machine / rack / level logic as the MILP), and those GPUs."""
    t = app.table
    if cap <= 0 or not bundle:
        return None
    idx = np.asarray(bundle, np.int64)
    lev = np.array([t.level(v) for v in cluster.pm_vector(app.cls)[idx]])
    mach, rack = cluster.machine_index[idx], cluster.rack_index[idx]
    best, best_rho = None, t.rho[0, t.held_spread, max(t.held_level, 0)]
    for cell in app.cells:
        n, s, v = cell
        if n > cap or t.rho[cell] >= best_rho:
            continue
        ok = lev <= v
        if s == 0:
            pools = [ok & (mach == m) for m in np.unique(mach[ok])]
            if app.held_machine >= 0:
                pools = [ok & (mach == app.held_machine)]
        elif s == 1:
            pools = [ok & (rack == r) for r in np.unique(rack[ok])]
            if app.held_rack >= 0:
                pools = [ok & (rack == app.held_rack)]
        else:
            pools = [ok]
        for pool in pools:
            if pool.sum() >= n:
                best, best_rho = (cell, tuple(int(g) for g in idx[pool][:n])), t.rho[cell]
                break
    return best


PACK_RULES = ("damage", "best-fit", "first-fit")


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
    ``best-fit`` or ``first-fit`` (apps by size only). ``seed`` perturbs the order of apps with
    the same spread (multi-start). Returns {i: (cell, GPU indices)} or None when the greedy finds no placement (which
    does not prove that none exists)."""
    _, meta = prog.layout
    tpos = {t: k for k, t in enumerate(prog.types)}
    pool: dict[tuple[int, int], list[int]] = {}
    for g in prog.groups:
        pool.setdefault((g.machine, tpos[g.scores]), []).extend(g.gpus)
    rack_of = prog._rack_of
    by = {e["i"]: e for e in meta}

    def ok_types(i):  # acceptable types, worst first: own level, then scores for other classes
        v, lev = cells[i][2], by[i]["lev"]
        ok = [t for t in range(len(prog.types)) if lev[t] <= v]
        return sorted(ok, key=lambda t: (-lev[t], -sum(prog.types[t]), t))

    if rule == "first-fit":
        order = sorted(cells, key=lambda i: (cells[i][1], -cells[i][0], i))
    else:
        order = sorted(cells, key=lambda i: (cells[i][1], len(ok_types(i)), -cells[i][0], i))
    if seed is not None:
        noise = np.random.default_rng(seed).random(len(order))
        rank = {i: k for k, i in enumerate(order)}
        order = sorted(order, key=lambda i: (cells[i][1], rank[i] + 8 * noise[rank[i]]))
    out = {}
    for i in order:
        n, s, v = cells[i]
        a, ok = prog.apps[i], ok_types(i)
        if s == 0:
            places = [[m] for m in ([a.held_machine] if a.held_machine >= 0 else sorted(rack_of))]
        elif s == 1:
            racks = [a.held_rack] if a.held_rack >= 0 else sorted(set(rack_of.values()))
            places = [sorted(m for m in rack_of if rack_of[m] == k) for k in racks]
        else:
            places = [sorted(rack_of)]
        fits = []
        for ms in places:
            per_type = [sum(len(pool.get((m, t), ())) for m in ms) for t in ok]
            if sum(per_type) < n:
                continue
            need, use = n, []
            for k in per_type:  # worst acceptable GPUs first
                use.append(min(k, need))
                need -= use[-1]
            # fewest better GPUs consumed first, then best fit (least room left)
            fits.append((tuple(reversed(use)), sum(per_type), ms))
        if not fits:
            if why is not None:  # diagnostics: the app that did not fit
                why.append(
                    (
                        i,
                        (n, s, v),
                        [sum(len(p) for (m, t), p in pool.items() if t == u) for u in ok],
                    )
                )
            return None
        if rule == "damage":
            *_, ms = min(fits, key=lambda p: p[:2])
        elif rule == "best-fit":
            *_, ms = min(fits, key=lambda p: p[1])
        else:
            ms = fits[0][2]
        if s == 2:  # spread-2: drain the emptiest machines first, keep full machines whole
            ms = sorted(ms, key=lambda m: sum(len(pool.get((m, t), ())) for t in ok))
        got: list[int] = []
        for t in ok:
            for m in ms:
                while len(got) < n and pool.get((m, t)):
                    got.append(pool[(m, t)].pop(0))
        out[i] = ((n, s, v), tuple(sorted(got)))
    return out
