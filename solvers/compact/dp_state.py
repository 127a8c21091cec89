"""The states of the compact auction's DP (``compact/dp.py``): their layout over an offer's
racks and machines, the canonical form, an option's moves, and the PF's options replayed on the
real machines and placed on GPUs.

A state is a tuple: 0 = G (the offer's GPUs left), then per rack a block (sl = its slack, the
residual of each of its machines). Canonical (``Layout.canon``): res_m <= sl_r <= G <= D (the
most the apps still to come can take) capped, and the residuals of machines no app holds sorted
within their rack, the blocks of racks no app holds sorted: interchangeable places once.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from fairplace.formulations.compact import CompactProgram
from fairplace.formulations.compact_milp import Choice


def offer_view(prog: CompactProgram) -> tuple[dict, dict, dict, dict]:
    """(offered GPUs per machine, machine -> rack, machine -> its offered GPUs ascending, rack ->
    its offered machines ascending), machines and racks ascending: what the DP reads of the
    offer, straight from the cluster's arrays (no groups: the offer is homogeneous); computed
    once per offer (``CompactProgram.shared``)."""

    def make():
        ml, rl = _index_lists(prog.cluster)
        on: dict[int, list[int]] = {}
        for g in sorted(prog.offer):  # each machine's GPUs ascending
            got = on.get(ml[g])
            if got is None:
                on[ml[g]] = [g]
            else:
                got.append(g)
        gpus = {m: tuple(on[m]) for m in sorted(on)}
        rack = {m: rl[g[0]] for m, g in gpus.items()}
        by_rack: dict[int, list[int]] = {}
        for m, r in rack.items():  # machines ascending
            got = by_rack.get(r)
            if got is None:
                by_rack[r] = [m]
            else:
                got.append(m)
        if len(by_rack) > 1:
            by_rack = {r: by_rack[r] for r in sorted(by_rack)}
        return {m: len(g) for m, g in gpus.items()}, rack, gpus, by_rack

    return prog.shared("dp offer", make)


_LISTS: list = [None, None, None]  # the last cluster, its machine and rack index as lists


def _index_lists(cluster) -> tuple[list[int], list[int]]:
    """``cluster``'s machine_index and rack_index as Python lists (kept for the last cluster:
    one cluster per simulation; read per offered GPU)."""
    if _LISTS[0] is not cluster:
        _LISTS[:] = [cluster, cluster.machine_index.tolist(), cluster.rack_index.tolist()]
    return _LISTS[1], _LISTS[2]


class Layout:
    """Positions of a state tuple: 0 = G; per rack a block (sl, machine residuals...). Blocks of
    *named* racks (held by some app, or holding a held machine) first, in rack order, their named
    machines first; the other racks' blocks all of one width (machines padded with zeros),
    sorted in a canonical state. Residuals of unnamed machines of a block are sorted descending."""

    @classmethod
    def of(cls, prog: CompactProgram) -> Layout:
        """The layout of ``prog``'s offer with its apps' held machines and racks named; shared by
        the programs on the same offer with the same named places (``CompactProgram.shared``:
        THEMIS re-auctions the same free GPUs often). Not to be changed."""
        view = offer_view(prog)
        cm, rack_of, _, by_rack = view
        apps = prog.apps
        held_m = {apps[i].held_machine for i in prog.active} & cm.keys()
        held_r = {apps[i].held_rack for i in prog.active} & by_rack.keys()  # those offered
        held_r |= {rack_of[m] for m in held_m}
        key = ("dp layout 3", frozenset(held_m), frozenset(held_r))
        return prog.shared(key, lambda: cls(view, held_m, held_r))

    def __init__(self, view: tuple, held_m: set[int], held_r: set[int]):
        cm, rack_of, self.gpus, by_rack = view  # ``offer_view``
        self.rack_of = rack_of  # offered machine -> rack
        self.by_rack = by_rack  # rack -> its offered machines, ascending
        named = [r for r in by_rack if r in held_r]
        anon = [r for r in by_rack if r not in held_r]
        width = max((len(by_rack[r]) for r in anon), default=0)
        self.machine_pos: dict[int, int] = {}
        self.rack_pos: dict[int, int] = {}
        self.rack_size: dict[int, int] = {}  # sl position -> the rack's machines
        self.block_of: dict[int, int] = {}  # machine position -> its rack's sl position
        self.sorted_from: dict[int, int] = {}  # machine position -> its sorted part's first
        st = [sum(cm.values())]  # the start: real capacities (padding zeros)
        self.named_blocks = []  # (sl position, named machine positions, anon machine positions)
        for r in named:  # held machines first, then the others, each ascending
            ms = [m for m in by_rack[r] if m in held_m] + [m for m in by_rack[r] if m not in held_m]
            pos = len(st)
            lo = pos + 1 + sum(m in held_m for m in ms)
            self.rack_pos[r], self.rack_size[pos] = pos, len(ms)
            st.append(sum(cm[m] for m in ms))
            for m in ms:
                p = len(st)
                self.machine_pos[m], self.block_of[p] = p, pos
                if p >= lo:
                    self.sorted_from[p] = lo
                st.append(cm[m])
            self.named_blocks.append((pos, pos + 1, lo, pos + 1 + len(ms)))
        self.anon_start, self.width, self.w1 = len(st), width, 1 + width
        for r in anon:  # blocks of one width; every slot, padding too, is of the block (sorting
            ms = by_rack[r]  # moves residuals between racks)
            pos = len(st)
            self.rack_pos[r], self.rack_size[pos] = pos, len(ms)
            st.append(sum(cm[m] for m in ms))
            for j in range(width):
                p = pos + 1 + j
                self.block_of[p], self.sorted_from[p] = pos, pos + 1
                if j < len(ms):
                    self.machine_pos[ms[j]] = p
                st.append(cm[ms[j]] if j < len(ms) else 0)
        self.size = len(st)
        self.start = tuple(st)
        # one rack in the offer: its slack sl >= G always (every placement takes from G as much
        # as from sl or more, and they start equal), so capped it is G
        self.one_rack = len(by_rack) == 1
        self.sorted_lo = self.named_blocks[0][2] if named else self.anon_start + 1
        self.n_anon = len(anon)
        self.pos_machine = {p: m for m, p in self.machine_pos.items()}
        self.pos_rack = {p: r for r, p in self.rack_pos.items()}
        self.most = (max(cm.values(), default=0), max(st[p] for p in self.rack_pos.values()))
        # positions the DP may place on per spread, before dedup: all machines, all racks
        self.machines = sorted(self.block_of)
        self.racks = sorted(self.rack_pos.values())

    def canon(self, st, cap: int) -> tuple:
        """The canonical state of ``st`` when the apps still to come take at most ``cap`` GPUs.
        (A part is sorted before it is capped: capping, x -> min(x, c), keeps the order.)"""
        if self.one_rack:  # the rack's slack is G (module docstring): only machines to sort
            g = st[0] if st[0] < cap else cap
            lo = self.sorted_lo
            head = st[2:lo]
            if head and max(head) > g:
                head = [x if x < g else g for x in head]
            tail = st[lo:]
            if len(tail) > 1:
                tail = sorted(tail, reverse=True)
            if tail and tail[0] > g:
                tail = [x if x < g else g for x in tail]
            return (g, g, *head, *tail)
        g = st[0] if st[0] < cap else cap
        out = [g]
        for sl_p, nm_lo, an_lo, hi in self.named_blocks:
            sl = st[sl_p] if st[sl_p] < g else g
            out.append(sl)
            out += [x if x < sl else sl for x in st[nm_lo:an_lo]]
            if hi - an_lo > 1:
                part = sorted(st[an_lo:hi], reverse=True)
                out += [x if x < sl else sl for x in part] if part[0] > sl else part
            elif hi > an_lo:
                out.append(st[an_lo] if st[an_lo] < sl else sl)
        if self.n_anon:
            w1 = 1 + self.width
            blocks = []
            zero = (0,) * w1
            for p in range(self.anon_start, self.size, w1):
                sl = st[p] if st[p] < g else g
                if sl <= 0:
                    blocks.append(zero)
                else:
                    ms = sorted(st[p + 1 : p + w1], reverse=True)
                    if ms and ms[0] > sl:
                        ms = [x if x < sl else sl for x in ms]
                    blocks.append((sl, *ms))
            if len(blocks) > 1:
                blocks.sort(reverse=True)
            for blk in blocks:
                out += blk
        return tuple(out)


class Opt(NamedTuple):
    """One (n, s) option of an app: its best cell, value and the state positions it may use."""

    n: int
    s: int
    cell: tuple[int, int, int]
    w: Any  # gain over nothing: float, or (served, log-sum) when some rho(nothing) is unbounded
    places: tuple[int, ...]


def moves(lay: Layout, c: tuple, n: int, s: int, places: tuple[int, ...]):
    """(position, next state before canonicalisation) of every distinct place of an option of
    ``n`` GPUs on place type ``s`` in (0, 1) at ``places`` in canonical state ``c`` (G >= n):
    equal residuals of a sorted part, and equal unnamed racks, once."""
    anon, w1, block_of, sorted_from = lay.anon_start, lay.w1, lay.block_of, lay.sorted_from
    out = []
    for p in places:
        if c[p] < n:
            continue
        b = p if s == 1 else block_of[p]
        if b > anon and c[b - w1 : b] == c[b : b + w1]:
            continue  # the same as the unnamed rack before it
        if s == 0:
            if p > sorted_from.get(p, p) and c[p - 1] == c[p]:
                continue  # the same as the machine before it in a sorted part
            st = list(c)
            st[0] -= n
            st[b] -= n
            st[p] -= n
        else:
            st = list(c)
            st[0] -= n
            st[b] -= n
        out.append((p, tuple(st)))
    return out


def place(prog: CompactProgram, lay: Layout, apps, path, cap) -> Choice:
    """The PF's options on real places (each canonical move replayed on the real residuals), then
    on GPUs: spread-0 apps on their machine, spread-1 apps in their rack, the rest anywhere; each
    takes the machine that best fits what it still needs, else empties the fullest first."""
    st = list(lay.start)
    where: dict[int, tuple[int, int]] = {}  # app -> (option's spread, real position)
    cells = {}
    for j, (nxt, _, o, _) in enumerate(path):
        if o is None:
            continue
        real = None
        for q in o.places:
            trial = list(st)
            trial[0] -= o.n
            if o.s <= 1:
                trial[q] -= o.n
            if o.s == 0:
                trial[lay.block_of[q]] -= o.n
            if min(trial[0], trial[q], trial[lay.block_of.get(q, q)]) < 0:
                continue
            if nxt is not None and len(o.places) > 1 and lay.canon(trial, cap[j + 1]) != nxt:
                continue  # (the last app, or one place: the DP's, kept where canon moves none)
            real, st = q, trial
            break
        if real is None:
            raise RuntimeError("compact DP: a chosen place has no real counterpart")
        where[apps[j]] = (o.s, real)
        cells[apps[j]] = o.cell
    gpus = lay.gpus
    left = {m: len(g) for m, g in gpus.items()}  # GPUs left per machine, taken from the front
    taken: dict[int, list[int]] = {}
    for s in (0, 1, 2):
        for i, (si, q) in where.items():
            if si != s:
                continue
            need = cells[i][0]
            if s == 0:
                ms = [lay.pos_machine[q]]
            elif s == 1:
                ms = lay.by_rack[lay.pos_rack[q]]
            else:
                ms = gpus
            taken[i] = _take(ms, left, gpus, need)
    return {i: (cells[i], tuple(sorted(taken[i]))) for i in sorted(taken)}


def _take(ms, left: dict[int, int], gpus: dict, need: int) -> list[int]:
    """``need`` GPUs from the machines ``ms`` (``left``: GPUs left on each, taken from the front of
    ``gpus[m]``; changed in place): the machine that best fits what is still needed (fewest GPUs
    left that hold it, the first of ``ms`` among equals), else the fullest one emptied (the first
    among equals), repeated. Emptying the fullest changes no other machine, so the machines
    sorted fullest first (stable: ``ms`` order among equals) give every step."""
    order = sorted((m for m in ms if left[m]), key=left.__getitem__, reverse=True)
    # reverse=True keeps equal keys in their order (a stable sort of the reversed comparison)
    got: list[int] = []
    for pos, m in enumerate(order):
        f = left[m]
        if f < need:  # nothing holds what is left: empty the fullest
            at = len(gpus[m]) - f
            got += gpus[m][at:]
            left[m] = 0
            need -= f
            continue
        # best fit: the least f >= need among the rest (fullest first), its first machine
        fit = pos
        for p in range(pos + 1, len(order)):
            g = left[order[p]]
            if g < need:
                break
            if g < left[order[fit]]:
                fit = p
        m = order[fit]
        f = left[m]
        at = len(gpus[m]) - f
        got += gpus[m][at : at + need]
        left[m] = f - need
        return got
    if need:
        raise RuntimeError("compact DP: no GPUs left for a chosen place")
    return got
