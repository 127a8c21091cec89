"""THEMIS lease renewal: which GPUs an auction winner gets among those its bundle's value
leaves open. The ARBITER prices a bundle by its count, spread and decision scores only, so a winner's
bundle may move machine for machine (same rack, same scores) onto machines it held just before: a
lease renewal at the same count then moves no job, and the auction's outcome is unchanged."""

from __future__ import annotations

from collections import Counter

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["Renewal", "back_to_held"]


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
    Winners go in app order, then pairwise swaps (:meth:`Renewal._swap_pairs`), ``passes`` times
    (until nothing changes): GPUs a winner's remap releases join the pool of the others (never a
    GPU twice); no winner's count of GPUs it held, less others', ever falls."""
    return Renewal(machine, rack, label)(won, pool, before, takers, passes)


class Renewal:
    """:func:`back_to_held` on one cluster: what does not change between rounds (per machine its
    rack and GPUs, per GPU its machine and label) computed once."""

    def __init__(self, machine: np.ndarray, rack: np.ndarray, label: np.ndarray):
        self.machine, self.label = np.asarray(machine, np.int64), np.asarray(label, np.int64)
        self.n_m, self.n_l = int(self.machine.max()) + 1, int(self.label.max()) + 1
        self.rack_of = np.zeros(self.n_m, np.int64)
        self.rack_of[self.machine] = rack  # per machine its rack
        self.cell = self.machine * self.n_l + self.label  # per GPU its (machine, label) cell
        self.same_rack = self.rack_of[:, None] == self.rack_of  # per machine pair
        self.stay = 1e-3 * np.eye(self.n_m)  # the gain of staying put, per machine pair
        self.mach_l, self.label_l = self.machine.tolist(), self.label.tolist()
        self.rack_l = self.rack_of.tolist()
        self.on_machine: dict[int, list[int]] = {}  # machine -> its GPUs (in order)
        for g, m in enumerate(self.mach_l):
            self.on_machine.setdefault(m, []).append(g)

    def __call__(self, won: dict, pool, before: np.ndarray, takers=None, passes: int = 3) -> dict:
        """:func:`back_to_held` (``won``, ``pool``, ``before``, ``takers``, ``passes``).

        A winner's remap depends on its GPUs and the free ones only, and gives back the GPUs it
        is given (its blocks stay: the +1e-3 of staying breaks the tie with the assignment that
        put them there), so it is not redone while no GPU has moved since; nor are the swaps
        after a pass of them that found none."""
        out = {a: np.sort(np.asarray(g, np.int64)) for a, g in won.items()}
        if not out:
            return out
        free = np.zeros(before.size, bool)
        free[np.asarray(pool, np.int64)] = True
        takers = set(won) | set(takers or ())
        offer = np.concatenate([np.flatnonzero(free), *out.values()])
        held = np.bincount(before[offer] + 1, minlength=max(out) + 2)  # offer GPUs per app + 1
        in_offer = {a: int(held[a + 1]) for a in out}  # GPUs of the offer each winner held
        cats: dict = {}  # per winner, per GPU: 0 it held it, 1 nobody's, 2 another recipient's
        version = 0  # GPU moves so far
        stamp: dict = {}  # per winner (-1: the swaps): the moves it last saw
        for _ in range(passes):
            changed = False
            best = [a for a in out if _at_best(before[out[a]].tolist(), a, takers, in_offer[a])]
            if len(best) == len(out):  # every winner has all it held of the offer, none of others'
                break
            if not cats:
                base = _takers_lut(before, takers)[before + 1]  # 1 nobody's, 2 a recipient's
                for a in out:
                    cats[a] = c = base.copy()
                    c[before == a] = 0
            for a in sorted(set(out) - set(best)):
                if stamp.get(a) == version:  # nothing moved since its remap: the same again
                    continue
                own = out[a]
                free[own] = True
                f = np.flatnonzero(free)
                mine_now = self._remap(own, f, cats[a][f])
                if not np.array_equal(mine_now, own):
                    changed, version = True, version + 1
                out[a] = mine_now
                free[mine_now] = False
                stamp[a] = version
            if len(out) > 1 and stamp.get(-1) != version:  # pairwise swaps need two winners
                if self._swap_pairs(out, free, cats, offer):
                    changed, version = True, version + 1
                else:  # none found: none again until a GPU moves
                    stamp[-1] = version
            if not changed:
                break
        return out

    def _remap(self, own: np.ndarray, f: np.ndarray, cf: np.ndarray) -> np.ndarray:
        """Winner ``own``'s blocks (its GPUs per machine) assigned to machines of the same rack
        with as many free (``f``, sorted) GPUs of each label: gain per (block, machine) = GPUs it
        held there - GPUs another recipient held (``cf``, per GPU of ``f``: 0 the winner held it,
        1 nobody's of this round, 2 another recipient's), + 1e-3 to stay put (one assignment
        problem); the GPUs picked per label best ``cf`` first, then lowest index."""
        n_m, n_l = self.n_m, self.n_l
        ml = self.cell[f]  # per free GPU its (machine, label) cell
        key = ml * 3 + cf
        cnt = np.bincount(key, minlength=n_m * n_l * 3).reshape(n_m, n_l, 3)
        per = np.bincount(self.cell[own], minlength=n_m * n_l).reshape(n_m, n_l)
        at = np.flatnonzero(per.any(1))  # the blocks: own's machines, ascending
        need = per[at][:, None, :]  # (block, 1, label)
        mine = np.minimum(need, cnt[:, :, 0])  # (block, machine, label)
        oth = np.maximum(need - mine - cnt[:, :, 1], 0)
        ok = (oth <= cnt[:, :, 2]).all(2) & self.same_rack[at]
        g = mine.sum(2) - oth.sum(2) + self.stay[at]
        rows, cols = linear_sum_assignment(np.where(ok, g, -1e9), maximize=True)
        want = np.zeros(n_m * n_l, np.int64)  # per (machine, label): GPUs the block there takes
        want.reshape(n_m, n_l)[cols] = per[at[rows]]
        # per (machine, label) cell, its free GPUs best cf first, then lowest index (f sorted):
        # the first ``want`` of each cell
        order = key.argsort(kind="stable")
        cell = ml[order]
        rank = np.arange(cell.size) - np.searchsorted(cell, cell)
        return np.sort(f[order[rank < want[cell]]])

    def _swap_pairs(self, out: dict, free: np.ndarray, cats: dict, offer) -> bool:
        """Pairwise swaps between winners: a's block on machine m and b's on machine t (same
        rack, neither holding the other machine) trade machines when each fits there (with the
        machine's free GPUs), neither winner's GPUs held back less others' falls and one's rises;
        whether any (``free`` updated; ``cats``: per winner, per GPU 0 it held, 1 nobody's of
        this round, 2 another recipient's).

        A pair is tried only when it can gain: a's net on t is at most the GPUs of the ``offer``
        (the round's free and won GPUs) on t it held, so a pair where held_a(t) - net(a, block m)
        < 0, or likewise for b, or their sum <= 0, is ruled out before any GPUs are drawn, and so
        is a pair whose blocks do not fit (too few GPUs of a label); the net a pair would get is
        counted (per label: the best categories first, as :func:`take` draws) before it is drawn:
        the outcome is that of trying every pair."""
        mach_l, label_l, rack_l, on_machine = (
            self.mach_l,
            self.label_l,
            self.rack_l,
            self.on_machine,
        )
        n_l = self.n_l
        free_l = free.tolist()
        cat = {a: c.tolist() for a, c in cats.items()}
        held: dict = {}  # per winner: per machine the GPUs of the offer it held there
        for a in out:
            mine = offer[cats[a][offer] == 0]
            held[a] = np.bincount(self.machine[mine], minlength=self.n_m).tolist()
        cell = self.machine * n_l + self.label  # (machine, label) -> free GPUs there
        n_free = np.bincount(cell[free], minlength=self.n_m * n_l).tolist()

        def net(a, gs) -> int:  # GPUs a held less GPUs another recipient held
            c = cat[a]
            return sum(1 - c[g] for g in gs)

        def fits(ga, gb, t) -> bool:  # ga's labels among gb's and t's free GPUs (what take draws)
            if n_l == 1:
                return len(ga) <= len(gb) + n_free[t]
            have = Counter([label_l[g] for g in gb])
            need = Counter([label_l[g] for g in ga])
            return all(k <= have[lab] + n_free[t * n_l + lab] for lab, k in need.items())

        def best_net(a, cands: list, like: list) -> int:  # net(a, take(a, cands, like))
            c = cat[a]
            by, got = Counter([(label_l[g], c[g]) for g in cands]), 0
            for lab, k in Counter([label_l[g] for g in like]).items():
                n0 = min(k, by[lab, 0])
                n2 = max(k - n0 - by[lab, 1], 0)  # fits: enough GPUs of each label
                got += n0 - n2
            return got

        def take(a, cands: list, like: list) -> list:  # like's labels, best cat, lowest index
            c, need = cat[a], Counter([label_l[g] for g in like])
            by_label: dict = {}
            for g in cands:
                if label_l[g] in need:
                    by_label.setdefault(label_l[g], []).append((c[g], g))
            return [g for lab in sorted(need) for _, g in sorted(by_label[lab])[: need[lab]]]

        def blocks(a) -> dict:  # machine -> a's GPUs on it (in order)
            by: dict = {}
            for g in out[a].tolist():
                by.setdefault(mach_l[g], []).append(g)
            return by

        on = {a: blocks(a) for a in out}  # kept up to date with ``out``
        nets = {a: {m: net(a, gs) for m, gs in on[a].items()} for a in out}  # per block
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
                        ga, gb = on_a[m], on_b[t]
                        ua, ub = held[a][t] - nets[a][m], held[b][m] - nets[b][t]
                        if ua < 0 or ub < 0 or ua + ub <= 0 or not fits(ga, gb, t):
                            continue  # da <= held_a(t) - net(a, ga), likewise b: neither gains
                        if not fits(gb, ga, m):
                            continue
                        ca = gb + [g for g in on_machine[t] if free_l[g]]
                        cb = ga + [g for g in on_machine[m] if free_l[g]]
                        da = best_net(a, ca, ga) - nets[a][m]
                        db = best_net(b, cb, gb) - nets[b][t]
                        if min(da, db) < 0 or da + db <= 0:
                            continue
                        na, nb = take(a, ca, ga), take(b, cb, gb)
                        for g in ga + gb:
                            free_l[g] = True
                            n_free[mach_l[g] * n_l + label_l[g]] += 1
                        for g in na + nb:
                            free_l[g] = False
                            n_free[mach_l[g] * n_l + label_l[g]] -= 1
                        A, B = out[a], out[b]
                        out[a] = np.sort(np.concatenate([A[self.machine[A] != m], na]))
                        out[b] = np.sort(np.concatenate([B[self.machine[B] != t], nb]))
                        on[a], on[b] = blocks(a), blocks(b)
                        for c in (a, b):
                            nets[c] = {k: net(c, gs) for k, gs in on[c].items()}
                        changed = True
        free[:] = free_l
        return changed


def _at_best(held_by: list, a: int, takers: set, in_offer: int) -> bool:
    """Winner ``a``'s GPUs (``held_by``: the app that held each, -1 none) hold every GPU of the
    offer it held (``in_offer``: how many) and none another recipient (of ``takers``) held."""
    return held_by.count(a) == in_offer and not any(b != a and b in takers for b in held_by)


def _takers_lut(before: np.ndarray, takers: set) -> np.ndarray:
    """Per app index + 1 (0: free, ``before`` = -1) a GPU's category for a winner that did not
    hold it: 2 another recipient of this round held it, else 1 (nobody's of this round); the
    winner's own GPUs are category 0."""
    lut = np.ones(max([int(before.max()), *takers]) + 2, np.int64)
    lut[[b + 1 for b in takers]] = 2
    return lut
