"""Small compact auctions solved exactly by enumeration: PF, every PF_{-i} and the payments c_i
from one table of joint choices, with no LP or MILP (THEMIS simulations run thousands of 1-5
bidder auctions on a few machines, where building and starting HiGHS costs far more than this).

The enumerated model is the compact MILP's own (``formulations/compact.py``): app i takes nothing
(value w_i0 = -log rho_i(nothing), or unserved when that is unbounded) or one *option* (c, p): a
cell c = (n, s, v) of ``CompactProgram.feasible_cells(i)``, worth w_ic = -log rho_i[c], on a place
p — one machine (s = 0; its held machine if it holds one), one rack (s = 1; its held rack) or the
whole offer (s = 2) — i.e. n GPUs of the groups E_ic,p = {q in p: level_i(q) <= v}. A joint
choice is feasible iff distinct GPUs exist for every app, which for this bipartite supply
(transportation) problem is Hall's condition over the apps served:

    sum_{i in S} n_i  <=  sum_{q in U_{i in S} E_i} |q|        for every subset S of apps.

The rows are built app by app (each app's options x the rows so far, Hall checked for every
subset containing the new app), and ranked as ``CompactProgram.value`` / ``PFValue`` rank them:
most unbounded apps served, then the largest sum of -log rho; ties (within ``TIE``): fewest GPUs,
then the first row. PF_{-i} is the best row in which app i takes nothing (it then earns nothing),
and c_i = ``pa.payment`` (others' value in PF, PF_{-i}) exactly as ``compact.pa_payments.payments``.

Size guard: the rows are at most prod_i (1 + options_i); above ``limit`` (:data:`ENUM_LIMIT`),
or with more than :data:`SUBSET_LIMIT` (row, subset) unions to keep, the enumeration returns
None (before building the rest of the options) and the caller solves the MILP route.
Enumerating GPU counts per (machine, level) group instead would be far larger: two apps on 8
machines of 4 free GPUs have 15^8 ~ 2.6e9 joint count matrices, but ~10^3-10^4 joint options.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from fairplace.formulations import pa
from fairplace.formulations.compact import CompactProgram
from fairplace.formulations.compact_milp import Choice
from fairplace.formulations.pf import PFValue
from fairplace.formulations.program import RawResult

from .packing import place_options

#: most joint choices (prod_i (1 + options_i)) enumerated; above it the MILP route runs.
#: Measured (whole auctions, ``random_agent_auction`` with 2-6 apps on 1-8 machines, best of 2):
#: under 10^4 choices the enumeration takes 2-12 ms (median) where the LP / MILP route takes
#: 26-65 ms; at 1-3 x 10^4 20 ms vs 32 ms (2 of 11 slower); above 3 x 10^4 it is often slower
ENUM_LIMIT = 20_000
#: most (joint choice, subset of bidders) pairs: the rows x 2^(bidders - 1) unions kept for
#: Hall's condition (memory; only many bidders with few options each reach it before ENUM_LIMIT)
SUBSET_LIMIT = 1 << 21
#: two log-sums closer than TIE * (1 + |value|) are a tie
TIE = 1e-12


@dataclass(frozen=True)
class Options:
    """One app's choices: index 0 is "nothing"; k >= 1 is (cells[k], place) on groups masks[k]."""

    cells: tuple[tuple[int, int, int] | None, ...]
    masks: np.ndarray  # (options, bytes) uint8: eligible groups as bits
    n: np.ndarray  # GPUs taken
    w: np.ndarray  # log-sum contribution: w_c, or w_i0 (0 when unbounded) for nothing
    unbounded: bool


@dataclass(frozen=True)
class Enumeration:
    """PF (``choice``, ``value``) and every PF_{-i} value (``loo``) of a compact program."""

    prog: CompactProgram
    choice: Choice
    value: PFValue
    loo: dict[int, PFValue]  # every active app -> PF_{-i}
    rows: int  # feasible joint choices enumerated
    seconds: float

    def payments(self) -> dict[int, float]:
        """c_i = others' value in PF / PF_{-i} (``pa.payment``) of every app with a PF bundle."""
        prog, choice = self.prog, self.choice
        return {i: pa.payment(prog.value_without(choice, i), self.loo[i]) for i in choice}

    def result(self) -> RawResult:
        """The PF as a solver result (objective in the MILP's units: big_m * served + log-sum)."""
        served = self.value.n_unbounded_served  # big_m only where it counts (it reads every table)
        obj = self.prog.big_m * served + self.value.log_sum if served else self.value.log_sum
        return RawResult("optimal", None, obj, obj, self.seconds)


def enumerate_auction(prog: CompactProgram, limit: int = ENUM_LIMIT) -> Enumeration | None:
    """PF and every PF_{-i} of ``prog`` by enumeration, or None when the joint choices exceed
    ``limit`` (module docstring)."""
    t0 = time.perf_counter()
    tab = _Table.build(prog, limit)
    if tab is None:
        return None
    choice = tab.placed(tab.best(np.ones(len(tab.rows), bool)))
    pos = {i: a for a, i in enumerate(prog.active)}
    loo = {}
    for i in prog.active:  # PF_{-i}: the best row in which app i takes nothing
        loo[i] = tab.value(i, tab.best(tab.rows[:, pos[i]] == 0))
    return Enumeration(
        prog, choice, prog.value(choice), loo, len(tab.rows), time.perf_counter() - t0
    )


def leave_one_out(prog: CompactProgram, apps, limit: int = ENUM_LIMIT) -> dict[int, PFValue] | None:
    """PF_{-i} of each app i of ``apps`` by enumerating ``prog`` without i (one app fewer, so
    often within ``limit`` where ``prog`` is not), or None (before building any rows) when one
    has more than ``limit`` joint choices. The values are those :func:`enumerate_auction` would
    give (the same rows, ranking and ties: dropping a column of zeros keeps the rows' order), for
    the payments of a PF solved by the LP / MILP route."""
    if not apps:
        return {}
    low = {i: len(prog.feasible_cells(i)) + 1 for i in prog.active}  # each cell fits somewhere
    for i in apps:  # at least as many options as feasible cells: too large already?
        if not _within([low[j] for j in prog.active if j != i], limit):
            return None
    fits, size, most = {}, 1, 1
    for i in prog.active:  # counts first: no masks built for an auction that is too large
        fits[i] = f = _Fits.of(prog, i)
        size, most = size * f.count, max(most, f.count)
        if size // most > limit:  # a lower bound on every PF_{-i}'s joint choices
            return None
    counts = {i: f.count for i, f in fits.items()}
    for i in apps:
        if not _within([counts[j] for j in prog.active if j != i], limit):
            return None
    opts = {i: f.options() for i, f in fits.items()}
    out = {}
    for i in apps:
        sub = prog.excluding({i})
        tab = _Table.of(sub, [opts[j] for j in sub.active])
        out[i] = tab.value(i, tab.best(np.ones(len(tab.rows), bool)))
    return out


def best_within(
    prog: CompactProgram, allowed: dict[int, np.ndarray], limit: int = ENUM_LIMIT
) -> Choice | None:
    """The best joint choice of ``prog``'s active apps (PF's ranking and ties) when app j takes
    nothing or a cell c of ``prog.feasible_cells(j)`` with ``allowed[j][c]``, placed on GPUs; None
    (before any rows are built) above ``limit`` joint choices. Exact for a program whose optimum
    only uses allowed cells: those left by reduced-cost fixing (``compact.rc``)."""
    fits: list[_Fits] = []
    for j in prog.active:
        f = _Fits.of(prog, j)
        if len(allowed[j]) != len(f.cells):
            raise ValueError(
                f"best_within: app {j} has {len(f.cells)} cells, not {len(allowed[j])}"
            )
        keep = allowed[j][f.k]  # f.k: indices into feasible_cells(j), the columns' order
        fits.append(replace(f, k=f.k[keep], pg=f.pg[keep]))
        if not _within([f.count for f in fits], limit):
            return None
    tab = _Table.of(prog, [f.options() for f in fits])
    return tab.placed(tab.best(np.ones(len(tab.rows), bool)))


def _within(counts: list[int], limit: int) -> bool:
    """Whether apps with these option counts pass the size guard (module docstring)."""
    size, bidders = 1, 0
    for n in counts:
        size *= n
        bidders += n > 1
        if size > limit or size << max(bidders - 1, 0) > SUBSET_LIMIT:
            return False
    return True


@dataclass(frozen=True)
class _Table:
    """Every feasible joint choice of ``prog``'s active apps (``rows``: one option index per app)
    with its served count, log-sum and GPUs, in the order of :func:`_rows`."""

    prog: CompactProgram
    opts: list[Options]
    rows: np.ndarray
    served: np.ndarray
    log_sum: np.ndarray
    gpus: np.ndarray

    @classmethod
    def build(cls, prog: CompactProgram, limit: int) -> _Table | None:
        """The table, or None above ``limit`` joint choices (or ``SUBSET_LIMIT`` unions)."""
        # each feasible cell fits somewhere: a lower bound on the options, counted before any of
        # them is built, where the guard may refuse (W2 x4: half the cost of a refused auction;
        # two bidders are practically never refused, and the count costs 4% of a table)
        low = [len(prog.feasible_cells(i)) + 1 for i in prog.active] if len(prog.active) > 2 else []
        if not _within(low, limit):
            return None
        opts, size = [], 1
        for i in prog.active:  # stop building options as soon as the guard is passed
            o = _options(prog, i, limit // size)
            if o is None:
                return None
            opts.append(o)
            size *= o.n.size
            if not _within([o.n.size for o in opts], limit):
                return None
        return cls.of(prog, opts)

    @classmethod
    def of(cls, prog: CompactProgram, opts: list[Options]) -> _Table:
        """The table of the active apps' options ``opts`` (in ``prog.active`` order)."""
        table = prog.shared("byte caps", lambda: _byte_caps(prog.group_arrays[0]))
        rows = _rows(opts, table)
        zero = np.zeros(len(rows), np.int64)
        served = sum(((rows[:, a] > 0) for a, o in enumerate(opts) if o.unbounded), zero)
        log_sum = sum((o.w[rows[:, a]] for a, o in enumerate(opts)), zero.astype(float))
        gpus = sum((o.n[rows[:, a]] for a, o in enumerate(opts)), zero)
        return cls(prog, opts, rows, served, log_sum, gpus)

    def best(self, among: np.ndarray) -> int:
        """Index of the best row among ``among`` (:func:`_argbest`)."""
        return _argbest(self.served, self.log_sum, self.gpus, among)

    def picked(self, k: int) -> dict[int, int]:
        """{app: its option} of row k, apps that take nothing left out."""
        return {i: int(self.rows[k, a]) for a, i in enumerate(self.prog.active) if self.rows[k, a]}

    def placed(self, k: int) -> Choice:
        """Row k's options placed on distinct GPUs (:func:`~.packing.place_options`)."""
        opts, picked = dict(zip(self.prog.active, self.opts, strict=True)), self.picked(k)
        cells = {j: opts[j].cells[o] for j, o in picked.items()}
        return place_options(self.prog, cells, {j: opts[j].masks[o] for j, o in picked.items()})

    def value(self, i: int, k: int) -> PFValue:
        """Value of row k without app i (PF_{-i} when k is the best row in which i takes nothing)."""
        opts, picked = dict(zip(self.prog.active, self.opts, strict=True)), self.picked(k)
        return self.prog.value_without({j: (opts[j].cells[o], ()) for j, o in picked.items()}, i)


def _options(prog: CompactProgram, i: int, most: int) -> Options | None:
    """App i's options: nothing, then every feasible cell on every place where it fits alone
    (cells in ``feasible_cells`` order, places ascending); None when there are more than
    ``most`` (counted before any group mask is built)."""
    f = _Fits.of(prog, i)
    return None if f.count > most else f.options()


@dataclass(frozen=True)
class _Fits:
    """Where app i's feasible cells fit alone (``k``: cell index, ``pg``: place, as a row of the
    places of every spread stacked), found before its options' group masks are built
    (:meth:`options`); sorted by cell, then place."""

    prog: CompactProgram
    i: int
    cells: tuple
    c: np.ndarray  # the cells as (n, s, v) rows
    members: np.ndarray  # (places of every spread, groups) membership
    upto: np.ndarray  # (groups, levels v): the group's level <= v
    k: np.ndarray
    pg: np.ndarray

    @property
    def count(self) -> int:
        """Options, "nothing" included."""
        return int(self.k.size) + 1

    @classmethod
    def of(cls, prog: CompactProgram, i: int) -> _Fits:
        a = prog.apps[i]
        ci = prog.classes.index(a.cls)
        # what depends on the offer, the app's levels and held places alone: shared by the apps
        # and auctions with the same (W2 x1: most apps of a class hold no single machine)
        key = ("fits stacked", ci, a.table.levels.tobytes(), a.held_machine, a.held_rack)
        members, upto, have, spread_of, fit = prog.shared(key, lambda: _places(prog, a, ci))
        if prog.fixed is None:  # a cell is feasible where it fits some place: _fit's table
            cells, c = prog.feasible_given(i, fit)
        else:
            cells, c = prog.feasible_cells(i), prog.feasible_cell_array(i)
        # cell k fits place g of its spread: row-major nonzero, so sorted by cell, then place
        on = (have[:, c[:, 2]].T >= c[:, 0][:, None]) & (spread_of[None, :] == c[:, 1][:, None])
        k, pg = on.nonzero()
        return cls(prog, i, cells, c, members, upto, k, pg)

    def options(self) -> Options:
        a, c, k = self.prog.apps[self.i], self.c, self.k
        m = np.zeros((k.size + 1, self.upto.shape[0]), bool)
        m[1:] = self.members[self.pg] & self.upto[:, c[k, 2]].T
        w = -np.log(a.table.rho[c[k, 0], c[k, 1], c[k, 2]])
        return Options(
            (None, *(self.cells[j] for j in k.tolist())),
            np.packbits(m, axis=1, bitorder="little"),
            np.concatenate([[0], c[k, 0]]),
            np.concatenate([[a.w_empty or 0.0], w]),
            a.w_empty is None,
        )


def _places(prog: CompactProgram, a, ci: int) -> tuple:
    """(members, upto, have, spread_of, fit) of app ``a`` (class index ``ci``) on ``prog``'s
    offer, over its places of every spread stacked (one machine, one rack, the whole offer; the
    held machine / rack only when it holds one): members[place, group], upto[q, v] = group q's
    level <= v, have[place, v] = GPUs of level <= v in the place, spread_of[place] and
    fit[s, v] = the most in one place of spread s (``_fit``'s table)."""
    per_type = a.table.levels_at([t[ci] for t in prog.types]).astype(np.int64)
    lev = per_type[prog.group_types]  # the level of every group's scores
    caps, mach, rack = prog.group_arrays
    members = tuple(
        at[None, :] == np.array([h])[:, None] if h >= 0 else every
        for at, h, every in zip(
            (mach, rack), (a.held_machine, a.held_rack), prog.place_members, strict=True
        )
    ) + (np.ones((1, caps.size), bool),)
    upto = lev[:, None] <= np.arange(a.table.levels.size)[None, :]  # (groups, levels v)
    haves = tuple((members[s] * caps) @ upto for s in range(3))
    fit = np.stack([h.max(axis=0, initial=0) for h in haves])
    spread_of = np.repeat(np.arange(3), [len(m) for m in members])
    return np.concatenate(members), upto, np.concatenate(haves), spread_of, fit


def _byte_caps(caps: np.ndarray) -> np.ndarray:
    """table[j, b]: free GPUs in the groups whose bits are set in byte value b at byte j."""
    nbytes = -(-caps.size // 8)
    padded = np.zeros(nbytes * 8, np.int64)
    padded[: caps.size] = caps
    bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little")
    return padded.reshape(nbytes, 8) @ bits.T.astype(np.int64)


def _rows(opts: list[Options], table: np.ndarray) -> np.ndarray:
    """Every feasible joint choice (rows of option indices, one column per app): app by app,
    keeping per row and per subset S of the apps so far the union of their groups (a bit per
    group) and their demand; Hall's condition checked for each new subset S + {app}, S not empty
    (S empty: the option alone, which fits by construction, ``_Fits``; ``table``:
    :func:`_byte_caps` of the groups' free GPUs). The last app with options keeps no unions."""
    nbytes = table.shape[0]
    rows = np.zeros((1, 0), np.int64)
    union = np.zeros((1, 1, nbytes), np.uint8)  # (rows, subsets, bytes)
    demand = np.zeros((1, 1), np.int64)
    last = max((a for a, o in enumerate(opts) if o.n.size > 1), default=-1)
    for a, o in enumerate(opts):
        k, m = len(rows), o.n.size
        if m == 1:  # only "nothing": no GPUs, no new subsets
            rows = np.concatenate([rows, np.zeros((k, 1), np.int64)], axis=1)
            continue
        r = np.repeat(np.arange(k), m)  # old row of each candidate
        p = np.tile(np.arange(m), k)  # option of each candidate
        if union.shape[1] > 1:  # not the first app with options: Hall for S + {app}
            served = p > 0  # nothing: the same subsets as the old row, already checked
            rs, ps = r[served], p[served]
            u = union[rs, 1:] | o.masks[ps][:, None, :]
            have = sum(table[j][u[..., j]] for j in range(nbytes))
            ok = ~served
            ok[served] = (have >= demand[rs, 1:] + o.n[ps][:, None]).all(axis=1)
            r, p = r[ok], p[ok]
        rows = np.concatenate([rows[r], p[:, None]], axis=1)
        if a < last:  # the unions and demands of every subset with and without this app
            union = np.concatenate([union[r], union[r] | o.masks[p][:, None, :]], axis=1)
            demand = np.concatenate([demand[r], demand[r] + o.n[p][:, None]], axis=1)
    return rows


def _argbest(served, log_sum, gpus, among: np.ndarray) -> int:
    """Index of the best row among ``among``: most served, largest log-sum (ties within TIE),
    fewest GPUs, first."""
    idx = among.nonzero()[0]
    idx = idx[served[idx] == served[idx].max()]
    top = log_sum[idx].max()
    idx = idx[log_sum[idx] >= top - TIE * (1.0 + abs(top))]
    return int(idx[gpus[idx].argmin()])
