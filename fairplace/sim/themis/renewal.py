"""THEMIS lease renewal: which GPUs an auction winner gets among those its bundle's value
leaves open. The ARBITER prices a bundle by its count, spread and decision scores only, so a winner's
bundle may move machine for machine (same rack, same scores) onto machines it held just before: a
lease renewal at the same count then moves no job, and the auction's outcome is unchanged."""

from __future__ import annotations

from collections import Counter

import numpy as np

__all__ = ["back_to_held"]


def back_to_held(
    won: dict,
    pool: np.ndarray,
    before: np.ndarray,
    machine: np.ndarray,
    rack: np.ndarray,
    label: np.ndarray,
    takers=None,
    passes: int = 3,
) -> dict:
    """Each winner's bundle moved machine for machine onto machines it held just before (a lease
    renewal at the same count moves no job). ``won``: {app: GPU indices the auction gave it};
    ``pool``: GPUs offered and granted to no winner; ``before``: per GPU the app that held it (-1);
    ``label``: per GPU its decision scores as one int (GPUs of equal label price the same);
    ``takers``: every app given GPUs this round (default: the winners).

    The block a winner won on machine m may move to a machine m' of the same rack that has as many
    GPUs of each label free (in ``pool`` or its own won GPUs), each machine taking at most one
    block: the count per machine, the machines and racks (hence the spread) and the score
    multiset of every bundle stay, so does the value the auction priced; only GPU identities
    change. The blocks go where they give back most GPUs the winner held, less GPUs another
    recipient of this round held (an assignment problem per winner; ties keep the auction's).
    Winners go in app order, then pairwise swaps (:func:`_swap_pairs`), ``passes`` times (until
    nothing changes): GPUs a winner's remap releases join the pool of the others (never a GPU
    twice); no winner's count of GPUs it held, less others', ever falls."""
    from scipy.optimize import linear_sum_assignment

    n_m, n_l = int(machine.max()) + 1, int(label.max()) + 1
    rack_of = np.zeros(n_m, np.int64)
    rack_of[machine] = rack  # per machine its rack
    free = np.zeros(before.size, bool)
    free[np.asarray(pool, np.int64)] = True
    takers = set(won) | set(takers or ())
    out = {a: np.sort(np.asarray(g, np.int64)) for a, g in won.items()}
    offer = np.concatenate([np.flatnonzero(free), *out.values()])
    in_offer = Counter(before[offer].tolist())  # per app: GPUs of the offer it held
    for _ in range(passes):
        changed = False
        best = [a for a in out if _at_best(out[a], in_offer, before, a, takers)]
        if len(best) == len(out):  # every winner has all it held of the offer, none of others'
            break
        for a in sorted(set(out) - set(best)):
            own = out[a]
            free[own] = True
            cat = _cats(before, a, takers)
            f = np.flatnonzero(free)
            cell = (machine[f] * n_l + label[f]) * 3 + cat[f]
            cnt = np.bincount(cell, minlength=n_m * n_l * 3).reshape(n_m, n_l, 3)
            blocks = np.unique(machine[own])
            gain = np.full((blocks.size, n_m), -1e9)
            for i, m in enumerate(blocks.tolist()):
                need = np.bincount(label[own[machine[own] == m]], minlength=n_l)
                mine = np.minimum(need, cnt[:, :, 0])
                oth = np.maximum(need - mine - cnt[:, :, 1], 0)
                ok = (oth <= cnt[:, :, 2]).all(1) & (rack_of == rack_of[m])
                g = mine.sum(1) - oth.sum(1) + 1e-3 * (np.arange(n_m) == m)
                gain[i, ok] = g[ok]
            rows, cols = linear_sum_assignment(gain, maximize=True)
            pick = []
            for i, t in zip(rows.tolist(), cols.tolist(), strict=True):
                need = np.bincount(label[own[machine[own] == blocks[i]]], minlength=n_l)
                on_t = f[machine[f] == t]
                for lab in np.flatnonzero(need).tolist():
                    c = on_t[label[on_t] == lab]
                    pick.append(c[np.lexsort((c, cat[c]))][: need[lab]])
            mine_now = np.sort(np.concatenate(pick))
            changed |= not np.array_equal(mine_now, own)
            out[a] = mine_now
            free[mine_now] = False
        changed |= _swap_pairs(out, free, before, machine, rack_of, label, takers)
        if not changed:
            break
    return out


def _at_best(own: np.ndarray, in_offer: Counter, before: np.ndarray, a, takers: set) -> bool:
    """``own`` holds every GPU of the offer ``a`` held (``in_offer[a]``: how many) and none
    another recipient held."""
    mine = before[own].tolist()
    return mine.count(a) == in_offer[a] and not any(b != a and b in takers for b in mine)


def _cats(before: np.ndarray, a, takers: set) -> np.ndarray:
    """Per GPU for app ``a``: 0 it held, 1 nobody's of this round, 2 another recipient's."""
    lut = np.ones(max(int(before.max()), a, *takers) + 2, np.int64)  # by before + 1 (-1: free)
    lut[[b + 1 for b in takers]] = 2
    lut[a + 1] = 0
    return lut[before + 1]


def _take(cands: np.ndarray, like: np.ndarray, label: np.ndarray, cat: np.ndarray):
    """GPUs of ``cands`` with the labels of ``like`` (best ``cat`` first, then lowest index);
    None when too few."""
    need = Counter(label[like].tolist())
    by_label: dict = {}
    for g, lab, c in zip(cands.tolist(), label[cands].tolist(), cat[cands].tolist(), strict=True):
        if lab in need:
            by_label.setdefault(lab, []).append((c, g))
    pick = []
    for lab in sorted(need):
        c = by_label.get(lab, [])
        if len(c) < need[lab]:
            return None
        pick += [g for _, g in sorted(c)[: need[lab]]]
    return np.array(pick, np.int64)


def _swap_pairs(out: dict, free, before, machine, rack_of, label, takers: set) -> bool:
    """Pairwise swaps between winners: a's block on machine m and b's on machine t (same rack,
    neither holding the other machine) trade machines when each fits there (with the machine's
    free GPUs), neither winner's GPUs held back less others' falls and one's rises; whether any.

    A pair is tried only when it can gain: a's net on t is at most the GPUs of t it held, so
    (held_a(t) - net(a, block m)) + (held_b(m) - net(b, block t)) <= 0 rules the swap out before
    any candidate GPUs are drawn (the outcome is that of trying every pair)."""
    cats = {a: _cats(before, a, takers) for a in out}
    score = {a: (1 - c).tolist() for a, c in cats.items()}  # per GPU: +1 held, -1 another's
    n_m = rack_of.size
    held = {a: np.bincount(machine[before == a], minlength=n_m).tolist() for a in out}
    rack_l = rack_of.tolist()

    def net(a, g) -> int:
        sc = score[a]
        return sum(sc[x] for x in g)

    def blocks(a) -> dict:  # machine -> a's GPUs on it (in order)
        by: dict = {}
        for g, m in zip(out[a].tolist(), machine[out[a]].tolist(), strict=True):
            by.setdefault(m, []).append(g)
        return by

    on = {a: blocks(a) for a in out}  # kept up to date with ``out``
    changed = False
    apps = sorted(out)
    for x, a in enumerate(apps):
        for b in apps[x + 1 :]:
            for m in sorted(on[a]):
                for t in sorted(on[b]):
                    if m == t or rack_l[m] != rack_l[t]:
                        continue
                    on_a, on_b = on[a], on[b]
                    if m not in on_a or t not in on_b or t in on_a or m in on_b:
                        continue
                    if held[a][t] - net(a, on_a[m]) + held[b][m] - net(b, on_b[t]) <= 0:
                        continue  # neither can gain: da <= held_a(t) - net(a, ga), likewise b
                    A, B = out[a], out[b]
                    ga, gb = np.array(on_a[m], np.int64), np.array(on_b[t], np.int64)
                    na = _take(
                        np.union1d(gb, np.flatnonzero(free & (machine == t))), ga, label, cats[a]
                    )
                    nb = _take(
                        np.union1d(ga, np.flatnonzero(free & (machine == m))), gb, label, cats[b]
                    )
                    if na is None or nb is None:
                        continue
                    na_l, nb_l = na.tolist(), nb.tolist()
                    da, db = net(a, na_l) - net(a, on_a[m]), net(b, nb_l) - net(b, on_b[t])
                    if min(da, db) < 0 or da + db <= 0:
                        continue
                    free[ga] = free[gb] = True
                    free[na] = free[nb] = False
                    out[a] = np.sort(np.concatenate([A[machine[A] != m], na]))
                    out[b] = np.sort(np.concatenate([B[machine[B] != t], nb]))
                    on[a], on[b] = blocks(a), blocks(b)
                    changed = True
    return changed
