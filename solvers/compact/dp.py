"""Exact PF and every PF_{-i} of a compact auction on a *homogeneous* offer, by dynamic programming.

Homogeneous: every offered GPU has the same PM scores for every class in play
(``CompactProgram.types`` has one entry; THEMIS' workloads run on uniform clusters). Then app i's
value depends only on its GPU count n and its place type s (``formulations/compact.py``'s cells
(n, s, v), v >= the offer's level for i): one machine (s = 0; its held machine if it holds one),
one rack (s = 1; its held rack) or the whole offer (s = 2). Machines ⊂ racks ⊂ offer form a
laminar family, so a joint choice of (n_i, place_i) is feasible (distinct GPUs exist: Hall's
condition of ``compact/enumeration.py``) iff

    sum_{i on machine m} n_i <= |m|,   sum_{i in rack r} n_i <= |r|,   sum_i n_i <= |offer|

(for a laminar family every union of places is a disjoint union of maximal ones). The DP runs
over the apps with the residual capacities as state: G (offer), per rack its slack
sl_r = |r| - demand inside it, per machine its residual res_m. Exact reductions: res_m <= sl_r <=
G <= D_j (D_j = the most the apps still to come can take) are capped — a placement needs all
three >= n, and min commutes with the subtraction — and machines (racks) no remaining app
holds are interchangeable, so their residuals are sorted (canonical state). Options: "nothing"
(w_i0, or unserved when rho(nothing) is unbounded) and, per (n, s), the best cell; an (n, s)
option worth no more than one with fewer GPUs and a looser place is dropped. Values are
``PFValue``'s: (unbounded apps served, sum of -log rho), compared lexicographically.

Forward F_j(state) (apps before j) and backward V_j(state) (apps j on) give PF = V_0(start) and
PF_{-i} = max_state F_i(state) + V_{i+1}(state) (app i takes nothing, earns nothing): every
leave-one-out from the same two passes (the last app's V: its best option that fits each state,
no next states); c_i = ``pa.payment`` (others' value in PF, PF_{-i}) as
``compact.pa_payments``. An app's options: ``compact/dp_options.py``; states, moves and
placing: ``compact/dp_state.py``. The chosen places are replayed on the real machines and the GPUs taken
machine by machine (spread-0 apps on their machine, then spread-1 in their rack, then the rest),
which succeeds because the three inequalities hold.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from fairplace.formulations import pa
from fairplace.formulations.compact import CompactProgram
from fairplace.formulations.compact_milp import Choice
from fairplace.formulations.pf import PFValue
from fairplace.formulations.program import RawResult

from .dp_options import app_options
from .dp_state import Layout, Opt, moves, place

#: most edges (moves) of the DP's graph; above it :func:`solve_dp` gives up (None) and the caller
#: runs the compact route. Measured (2 shared cores, ``random_agent_auction`` on one rack, levels
#: equal, demands 2-16, 3 seeds; whole auctions): the DP beat the compact route (LP / MILP,
#: enumeration) up to 6 apps on 16 GPUs and 4-6 on 48-64 (2-24 ms against 2-53 ms) and lost
#: at 6-8 apps on 32-48 GPUs (44-160 ms against 27-55 ms); an edge costs ~3-6 us, so a refused
#: auction loses at most ~15-30 ms. Captured THEMIS auctions (W2 small x1/x2/x4, paper x4):
#: 2 of 4,285 have more
EDGE_LIMIT = 5_000
#: :func:`dp_suits`' size bound: most offered GPUs and most bidders (beyond them the graph is
#: practically always above :data:`EDGE_LIMIT`: no DP is started); two bidders: at most
#: :data:`MAX_GPUS_TWO` (captured W2 paper x1 auctions, 2 bidders on up to 145 GPUs: the DP
#: 0.8-1.8 ms against 1.4-2.3 ms for the enumeration, in every offer size)
MAX_GPUS, MAX_APPS, MAX_GPUS_TWO = 64, 12, 256


def dp_suits(prog: CompactProgram) -> bool:
    """Whether the DP route suits ``prog``: a homogeneous offer (one PM type of every class in
    play) of at most :data:`MAX_GPUS` GPUs (:data:`MAX_GPUS_TWO` for two bidders) and at most
    :data:`MAX_APPS` bidders, no fixed cells."""
    apps = len(prog.active)
    most = MAX_GPUS_TWO if apps <= 2 else MAX_GPUS
    if prog.fixed is not None or apps > MAX_APPS or len(prog.offer) > most:
        return False
    return len(prog.types) == 1


@dataclass(frozen=True)
class DPResult:
    """PF (``choice``, ``value``) and every served app's PF_{-i} (``loo``) of a compact program."""

    prog: CompactProgram
    choice: Choice
    value: PFValue
    loo: dict[int, PFValue]  # app -> PF_{-i}: the apps with a PF bundle (or all, ``every``)
    states: int  # canonical states of the forward pass
    seconds: float

    @cached_property
    def _terms(self) -> list[tuple[int, bool, float]]:
        """(app, unbounded and served, its term of the log-sum) of every active app that adds one:
        ``CompactProgram.value``'s terms, in its order (the same sums, the same floats)."""
        return self.prog.value_terms(self.choice)

    def pf_value(self) -> PFValue:
        """``prog.value(choice)``: the PF's (served, log-sum) summed as the program sums it."""
        served, log_sum = 0, 0.0
        for _, unb, w in self._terms:
            log_sum += w
            served += unb
        return PFValue(served, log_sum)

    def payments(self) -> dict[int, float]:
        """c_i = others' value in PF / PF_{-i} (``pa.payment``) of every app with a PF bundle."""
        # the others' value in PF = ``prog.value_without(choice, i)``: the same terms, same order
        terms = self._terms
        out = {}
        for i in self.choice:
            served, log_sum = 0, 0.0
            for j, unb, w in terms:
                if j != i:
                    log_sum += w
                    served += unb
            out[i] = pa.payment(PFValue(served, log_sum), self.loo[i])
        return out

    def result(self) -> RawResult:
        """The PF as a solver result (objective in the MILP's units: big_m * served + log-sum)."""
        served = self.value.n_unbounded_served
        obj = self.prog.big_m * served + self.value.log_sum if served else self.value.log_sum
        return RawResult("optimal", None, obj, obj, self.seconds)


def solve_dp(prog: CompactProgram, limit: int = EDGE_LIMIT, every: bool = False) -> DPResult | None:
    """PF and the PF_{-i} of every app with a PF bundle of ``prog`` (``every``: of every active
    app) on a homogeneous offer (check with :func:`dp_suits`), or None when its graph has more
    than ``limit`` edges.

    Values are gains over nothing (>= 0; the apps' values of nothing are added at the end). One
    forward pass builds the layered graph (layer j: the canonical states after the apps before
    j, the last layer raw; an edge per distinct move of app j) with F_j; one backward pass gives
    V_j. (A suffix bound with a greedy incumbent prunes next to nothing here: every PF_{-i}
    shares the graph, so only states below the least of them could go.)"""
    t0 = time.perf_counter()
    if len(prog.types) != 1:
        raise ValueError("solve_dp: the offer is not homogeneous (several PM types in play)")
    lay = Layout.of(prog)
    apps = prog.active
    k = len(apps)
    tup = any(prog.apps[i].w_empty is None for i in apps)
    zero: Any = (0, 0.0) if tup else 0.0
    memo: dict = {}
    table = [app_options(prog, lay, i, tup, memo) for i in apps]
    opts_of = [opts for _, opts in table]
    most = [max((o.n for o in opts), default=0) for opts in opts_of]
    cap = [sum(most[j:]) for j in range(k + 1)]
    canon = lay.canon
    s0 = canon(lay.start, cap[0])
    forward: list[dict] = [{s0: zero}]
    edges: list[dict] = []  # layer j: expanded state -> [(target, gain, option, position)]
    n_edges = 0
    for j in range(k - 1):  # the last app: its best move per state, below (no next states)
        opts, cn = opts_of[j], cap[j + 1]
        # the last layer stays raw (the moves applied to canonical states, uncapped): it only
        # feeds the last app, which checks every capacity (``_last``), and is canonicalised
        # once, on the PF's path (``place``); the others are canonical (merged states)
        raw = j == k - 2
        nxt: dict = {}
        out: dict = {}
        seen: dict = {}  # canonical form of each raw next state (the same one is met often)
        for c, v in forward[j].items():
            t = c if raw or c[0] <= cn else canon(c, cn)  # within the cap: canonical already
            ev: list[tuple[Any, Any, Opt | None, int]] = [(t, zero, None, 0)]
            old = nxt.get(t)
            if old is None or v > old:
                nxt[t] = v
            g, rest = c[0], c[1:]
            for o in opts:  # by GPUs, ascending
                n, s, _, w, places = o
                if n > g:
                    break
                nv = (v[0] + w[0], v[1] + w[1]) if tup else v + w
                for p, st in ((0, (g - n, *rest)),) if s == 2 else moves(lay, c, n, s, places):
                    if raw:
                        t = st
                    else:
                        t = seen.get(st)
                        if t is None:
                            t = seen[st] = canon(st, cn)
                    ev.append((t, w, o, p))
                    old = nxt.get(t)
                    if old is None or nv > old:
                        nxt[t] = nv
            out[c] = ev
            n_edges += len(ev)
            if n_edges > limit:
                return None
        edges.append(out)
        forward.append(nxt)
    back: list[dict] = [{} for _ in range(k)]
    best_edge: list[dict] = [{} for _ in range(k)]
    if k:
        back[k - 1], best_edge[k - 1] = _last(lay, opts_of[k - 1], forward[k - 1], zero)
    for j in range(k - 2, -1, -1):
        vj, bj, after = back[j], best_edge[j], back[j + 1]
        for c, ev in edges[j].items():
            arg = ev[0]  # nothing: no gain
            top = after[arg[0]]
            for e in ev[1:]:
                w, a = e[1], after[e[0]]
                nv = (w[0] + a[0], w[1] + a[1]) if tup else w + a
                if nv > top:
                    top, arg = nv, e
            vj[c], bj[c] = top, arg
    if not k:
        return DPResult(prog, {}, PFValue(0, 0.0), {}, 1, time.perf_counter() - t0)
    path, c = [], s0
    for j in range(k):  # the PF's option and canonical place per app
        e = best_edge[j][c]
        c = e[0]
        if j == k - 2:  # a raw state of the last layer: its canonical form for ``place``
            e = (canon(c, cap[j + 1]), *e[1:])
        path.append(e)
    base = [b for b, _ in table]
    loo: dict[int, PFValue] = {}
    for j in range(k):  # PF_{-i}: app i takes nothing and earns nothing
        if path[j][2] is None and not every:
            continue
        if j == k - 1:  # the apps before it, at their best: the best forward value
            loo[apps[j]] = _pf_value(max(forward[j].values()), sum(base) - base[j])
            continue
        top, after = None, back[j + 1]
        for c, ev in edges[j].items():
            a, v = after[ev[0][0]], forward[j][c]  # the "nothing" edge's target
            nv = (v[0] + a[0], v[1] + a[1]) if tup else v + a
            if top is None or nv > top:
                top = nv
        loo[apps[j]] = _pf_value(top, sum(base) - base[j])
    choice = place(prog, lay, apps, path, cap)
    states = sum(map(len, forward))
    value = _pf_value(back[0][s0], sum(base))
    return DPResult(prog, choice, value, loo, states, time.perf_counter() - t0)


def _last(lay: Layout, opts: list[Opt], states: dict, zero) -> tuple[dict, dict]:
    """V and the best edge of the last app in each of ``states``: its largest gain that fits (a
    place with n GPUs left: G for the offer, the slack of a rack, the residual of a machine and
    its rack's slack,     each checked: ``states`` may be raw); no next state (None)."""
    vals, edges = {}, {}
    block_of = lay.block_of
    none: tuple[None, Any, Opt | None, int] = (None, zero, None, 0)
    # best first (a stable sort: equal gains in their order, fewer GPUs first): the first option
    # that fits is the one the ascending scan keeps (the first of the largest gain)
    best_first = sorted(opts, key=lambda o: o.w, reverse=True)
    for c in states:
        top, arg, g = zero, none, c[0]
        for o in best_first:
            n, s, _, w, places = o
            if n > g or not w > top:
                continue
            if s == 2:
                top, arg = w, (None, w, o, 0)
                break
            if s == 1:
                for q in places:
                    if c[q] >= n:
                        top, arg = w, (None, w, o, q)
                        break
            else:  # the machine and its rack (a raw state: not capped by its rack's slack)
                for q in places:
                    if c[q] >= n and c[block_of[q]] >= n:
                        top, arg = w, (None, w, o, q)
                        break
            if arg is not none:
                break
        vals[c], edges[c] = top, arg
    return vals, edges


def _pf_value(v, base: float) -> PFValue:
    """(served, log-sum) of gains ``v`` over nothing on top of the apps' values of nothing."""
    return PFValue(v[0], base + v[1]) if type(v) is tuple else PFValue(0, base + v)
