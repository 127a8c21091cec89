"""THEMIS' ARBITER: round-by-round auctions (Pseudocode 1, ``ROUNDBYROUNDAUCTIONS``) — the API a
simulator drives. "Arbiter" names this module and its :class:`Arbiter` only; the exact auction it
runs in step 3 is :mod:`fairplace.solvers.compact` (the compact formulation's PF + PA solver).

On a resource-available event (lease expiry, arrival, completion) the driver calls
:meth:`Arbiter.auction_round` with the apps' state and the free GPUs; the arbiter

1. ranks apps by their current rho (worst first; an app with no GPU has rho = inf), ties broken by
   the rho the app would have from now on with a 1/N share (worst first; it grows while the app
   waits), then by a seeded random draw — never by app id,
2. lets the ceil((1 - f) N) worst (at least one) bid on the free GPUs (the AGENT's rho tables),
3. runs the partial-allocation auction (exact compact PF + PA, ``fairplace.solvers.compact``) on
   the bidders' finite lease valuations (``valuation``, default ``lease``,
   docs/themis-valuation.md),
   each bidder keeping its c_i share of its PF bundle (``rounding``, default ``partial``: ``pa.py``),
4. hands every offered GPU the auction did not keep (hidden payments and GPUs no participant wanted)
   to the non-participants: ``leftover='random'`` (seeded: non-participants in random order, each
   taking what it can still use) or ``'work-conserving'`` (greedy: the non-participant whose rho
   improves most takes a packed chunk, repeated),
5. ``fill=True`` (default): GPUs still left go to any app that can use more (participants included),
   worst current rho first — so that no offered GPU stays idle while an app could run on it. The
   paper's PA leaves them idle (hidden payments are "not work-conserving", §3.3.1) and makes rounds
   work-conserving through the leftover rule alone; when every non-participant is already served,
   that rule has no taker,
6. returns the decisions with lease expiries (t_now + lease, rounded up to a multiple of
   ``lease_tick``, default 60 s: leases ending within one minute are re-auctioned together) — time
   advancement stays with the driver.

What an app "can use" is ``AppState.room`` when the driver knows it (THEMIS in the simulator: the
demand of the app's running jobs minus what it holds), else its demand cap minus what it holds.
``n_active`` (default: the number of states) is the N of the filter: the driver may pass only the apps
that can use more GPUs while ceil((1 - f) N) still counts every active app.

Rho tables are cached per app from its last auction (Theorem 3.3): :class:`RoundOutcome` returns
them, the driver passes them back as ``cache``; a leftover recipient's new rho estimate is read from
its cached table when it has one.

:meth:`Arbiter.auction_round` names GPUs by id; :meth:`Arbiter.round_on_offer` is the same round on
GPU indices (the offer in, every decision out), what THEMIS' scheduler calls: the auction
(:func:`fairplace.solvers.compact.auction_on_offer`) works on indices too, so ids are made only for
:meth:`auction_round`'s outcome.

Example driver loop::

    arbiter = Arbiter(f=0.8, lease=600, leftover="random", seed=0)
    cache, k = {}, 0
    while events:
        t_now, free = next_event()                      # the simulator's clock and free GPU ids
        states = [AppState(app, held=holdings[app.id]) for app in active_apps]
        out = arbiter.auction_round(cluster, states, free, t_now, k, cache=cache)
        for app_id, gpus in out.allocation.items():     # grants, each until out.lease_expiry
            holdings[app_id] += tuple(gpus)
        cache = {**cache, **out.tables}
        k += 1
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from fairplace.core.domain import Cluster, spread
from fairplace.core.errors import OptionError
from fairplace.core.shared_params import THEMIS_F
from fairplace.formulations.agents import RhoTable, ftf_model
from fairplace.formulations.compact_cache import OfferCache
from fairplace.solvers.options import SolveOptions

from .agent_state import filled_in
from .bids import bid, held_index, lease_bid, model_of, pricer_of, share_rho, state_rho
from .estimate_error import RhoError
from .outcome import AppState, RoundOutcome
from .params import (
    THEMIS_LEASE,
    THEMIS_LEASE_TICK,
    THEMIS_LEFTOVER,
    THEMIS_PAYMENTS,
    THEMIS_ROUNDING,
    THEMIS_VALUATION,
)

#: ``SeedSequence.generate_state`` without its ``np.errstate(over="ignore")`` wrapper (a context
#: entered per call; the state is computed on uint32 arrays, which never warn): the same words
_generate_state = getattr(
    np.random.SeedSequence.generate_state, "__wrapped__", np.random.SeedSequence.generate_state
)


@dataclass(frozen=True)
class Arbiter:
    """THEMIS ARBITER: filter fraction ``f``, lease seconds, leftover rule, PA rounding, seed."""

    f: float = 0.8
    lease: float = 600.0
    leftover: str = "random"
    rounding: str = "partial"  # the paper's c_i share of the PF bundle (formulations/pa.py)
    seed: int = 0
    # one thread: a round's leave-one-out solves are small, a thread pool costs more than it saves;
    # no MIP restarts, as ``solve_compact_auction`` would set anyway (once here, not per round)
    options: SolveOptions = SolveOptions(parallel=False, mip_allow_restart=False)
    fill: bool = True
    lease_tick: float | None = None  # None: 60 s, or the lease if shorter
    #: False: every bidder keeps its whole PF bundle (c_i = 1, no hidden payments): a control for
    #: the docs' mechanism checks, not THEMIS' PA
    payments: bool = True
    #: False: c_i of the LP route's auctions only as far as the lottery needs it (``partial``
    #: reads every c_i: exact whatever this says; the same
    #: allocation; ``RoundOutcome.payments`` NaN where left open): for a simulator that reads only
    #: the allocation (``solve_compact_auction(exact_payments=...)``)
    exact_payments: bool = True
    #: what bidders are valued by in the auction (formulations/valuation.py; the argument in
    #: docs/themis-valuation.md): the app holds the bundle for this lease, then its fair share;
    #: ``lease`` = one lease plus the time the bundle saves (1 + its speed in fair shares),
    #: ``lease-rho`` = the app's rho under that model — both finite for an app holding nothing, so
    #: a served starving bidder's c_i stays well above 0; ``held`` = Eq. 1 / 2 as the AGENT prices
    #: it (rho(empty) = inf). The filter ranks by rho whatever this says
    valuation: str = "lease"
    #: errors in the AGENTs' rho estimates (Fig. 17, ``fairplace.sim.themis.estimate_error``): the ranking
    #: and the bids read the reported values; None: the truth
    rho_error: RhoError | None = None
    #: what the auctions' programs on the same offer share, kept for this arbiter's run (a memo:
    #: no outcome depends on it)
    offers: OfferCache = field(default_factory=OfferCache, compare=False, repr=False)

    _config: ClassVar[Any] = (
        None  # the auctions' CompactAuctionOptions but their seed, built once (_auction)
    )

    @property
    def tick(self) -> float:
        return min(60.0, self.lease) if self.lease_tick is None else float(self.lease_tick)

    def lease_end(self, t_now: float) -> float:
        """When a lease granted at ``t_now`` ends: t_now + lease, rounded up to a multiple of
        ``lease_tick`` (0: not rounded). Leases ending within the same tick are re-auctioned in one
        round; per-allocation expiries would otherwise give every round its own expiry time and the
        rounds multiply (~190 rounds per hour, each with a few GPUs, on the paper-scale W2)."""
        end = float(t_now) + self.lease
        if self.tick > 0:
            end = math.ceil(end / self.tick - 1e-9) * self.tick
        return end

    def __post_init__(self):
        specs = (THEMIS_F, THEMIS_LEASE, THEMIS_LEASE_TICK, THEMIS_PAYMENTS, THEMIS_ROUNDING)
        for spec in (*specs, THEMIS_VALUATION, THEMIS_LEFTOVER):
            spec.check(getattr(self, spec.name))  # an error naming scheduler_options.<name>
        if self.lease_tick is not None and self.lease_tick > self.lease:
            raise OptionError(
                THEMIS_LEASE_TICK.where,
                f"must be in [0, lease = {self.lease:g}] seconds, got {self.lease_tick!r}",
            )

    def n_participants(self, n_apps: int) -> int:
        """ceil((1 - f) N), at least one (and at most N)."""
        if n_apps == 0:
            return 0
        return min(n_apps, max(1, math.ceil((1.0 - self.f) * n_apps - 1e-12)))

    def auction_round(
        self,
        cluster: Cluster,
        apps: Sequence[AppState],
        free_gpus: Sequence[str],
        t_now: float,
        round_index: int = 0,
        cache: Mapping[str, RhoTable] | None = None,
        n_active: int | None = None,
    ) -> RoundOutcome[str]:
        """Run one round on the ``free_gpus`` ids; pure apart from the solver (same inputs and
        seed -> same outcome)."""
        offer = cluster.indices(free_gpus)
        out = self.round_on_offer(cluster, apps, offer, t_now, round_index, cache, n_active)
        return out.named(cluster)

    def round_on_offer(
        self,
        cluster: Cluster,
        apps: Sequence[AppState],
        offer: np.ndarray,
        t_now: float,
        round_index: int = 0,
        cache: Mapping[str, RhoTable] | None = None,
        n_active: int | None = None,
    ) -> RoundOutcome[int]:
        """:meth:`auction_round` on the ``offer`` GPU indices of ``cluster``: every decision in
        GPU indices."""
        t0 = time.perf_counter()
        cache = {} if cache is None else cache  # read only
        states = [
            s
            if s.described_at(t_now)
            else replace(s, app=replace(s.app, t_now=float(t_now), held=tuple(s.held)), model=None)
            for s in apps
        ]
        seed = int(_generate_state(np.random.SeedSequence([self.seed, round_index]), 1)[0])
        if self.rho_error is not None:  # the current rho each AGENT reports (Fig. 17)
            states = self.rho_error.reported(cluster, states, seed, self._rho_now)
        ranking, part, rest = self._filter(cluster, states, seed, n_active)
        offer = np.asarray(offer, dtype=np.int64)
        if not (offer[1:] > offer[:-1]).all():  # in cluster order, once each
            offer = np.unique(offer)
        n_all = len(states) if n_active is None else n_active
        auction, pf, pay, tables, status, bid_s = self._auction(cluster, part, offer, seed, n_all)
        used = {g for gs in auction.values() for g in gs}
        left = [g for g in offer.tolist() if g not in used]
        given, rho_after = self._leftover(cluster, rest, left, seed, cache)
        allocation = {a: list(g) for a, g in auction.items() if g}
        for a, g in given.items():
            allocation.setdefault(a, []).extend(g)
        taken = {g for gs in given.values() for g in gs}
        unallocated = [g for g in left if g not in taken]
        filled: dict[str, list[int]] = {}
        if self.fill and unallocated:
            filled, unallocated = self._fill(states, ranking, allocation, unallocated)
        return filled_in(  # RoundOutcome(**fields), its frozen __init__'s setattr calls skipped
            RoundOutcome,
            allocation=allocation,
            auction={a: list(g) for a, g in auction.items()},
            pf_allocation=pf,
            payments=pay,
            leftover_given=given,
            unallocated=unallocated,
            participants=[s.id for s in part],
            ranking=ranking,
            lease_expiry=self.lease_end(t_now),
            tables=tables,
            rho_after=rho_after,
            status=status,
            filled=filled,
            bid_seconds=bid_s,
            arbiter_seconds=max(time.perf_counter() - t0 - bid_s, 0.0),
        )

    # --- steps ------------------------------------------------------------------------------------
    def _filter(self, cluster: Cluster, states: list[AppState], seed: int, n_active: int | None):
        """Steps 1-2: the ranking worst first ((app id, current rho), ...) and the ceil((1 - f) N)
        worst as participants; (ranking, participants, the others)."""
        now = [float(s.rho) if s.rho is not None else self._rho_now(cluster, s) for s in states]
        n_all = len(states) if n_active is None else n_active
        if len(set(now)) < len(now):  # the share tie-break matters only among equal current rho
            tied = Counter(now)
            share = [
                self._rho_share(cluster, s, n_all) if tied[now[i]] > 1 else 0.0
                for i, s in enumerate(states)
            ]
        else:
            share = [0.0] * len(states)
        keys: list[tuple[float, ...]] = [(-now[i], -share[i]) for i in range(len(states))]
        if len(set(keys)) < len(keys):  # the seeded draw decides only among equal keys
            draw = np.random.default_rng([seed, 1]).random(len(states))
            keys = [(*k, draw[i]) for i, k in enumerate(keys)]
        order = sorted(range(len(states)), key=keys.__getitem__)
        ranking = [(states[i].id, now[i]) for i in order]
        k = min(self.n_participants(n_all), len(states))
        chosen = set(order[:k])  # the states' ids are distinct: by position
        part = [s for i, s in enumerate(states) if i in chosen]
        rest = [s for i, s in enumerate(states) if i not in chosen]
        return ranking, part, rest

    def _auction(
        self, cluster: Cluster, part: list[AppState], offer: np.ndarray, seed: int, n_all: int = 0
    ):
        """Step 3: the PA auction of ``part`` on ``offer``; (allocation, PF allocation, payments,
        rho tables, status) by app id, GPU indices (one bidder: its best bundle at c = 1, no MILP),
        and the seconds the bids took."""
        # the modules, not their names: quicker per round (``auction_on_offer`` is read from its
        # module at each call, papers/themis/experiments/auction_exactness.py replaces it there)
        import fairplace.solvers.compact as compact
        import fairplace.solvers.compact.packing as packing

        if not part or not offer.size:
            return {}, {}, {}, {}, "optimal", 0.0
        t0 = time.perf_counter()
        if len(part) > 1:  # PF optima tied between bidders: a seeded order decides, not the app id
            part = [part[k] for k in np.random.default_rng([seed, 2]).permutation(len(part))]
        models = [None if pricer_of(cluster, s) is not None else model_of(cluster, s) for s in part]
        capps = tuple(bid(cluster, s, offer, m) for s, m in zip(part, models, strict=True))
        if self.rho_error is not None:  # the tables as the AGENTs report them (Fig. 17)
            capps = self.rho_error.bids(cluster, part, capps, seed)
        bid_s = time.perf_counter() - t0
        ids = [s.id for s in part]
        tables = {s.id: a.table for s, a in zip(part, capps, strict=True)}  # rho: the cache
        if len(part) == 1:  # PF = the bidder's best bundle; PA: c = 1 (no one else to pay)
            best = packing.best_subbundle(capps[0], cluster, tuple(offer.tolist()), offer.size)
            auction = {ids[0]: list(best[1]) if best else []}
            return auction, dict(auction), {ids[0]: 1.0}, tables, "optimal", bid_s
        if self.valuation != "held":  # the same order of bundles per app, rho(empty) finite
            n, kind = n_all or len(part), self.valuation
            capps = tuple(
                lease_bid(cluster, s, a, self.lease, n, kind, m)
                for s, a, m in zip(part, capps, models, strict=True)
            )
        base = self._config
        if base is None or type(base) is not compact.CompactAuctionOptions:
            base = compact.CompactAuctionOptions(
                self.rounding, 0, self.payments, exact_payments=self.exact_payments
            )  # checked once per arbiter (a cached field, out of its comparisons)
            self.__dict__["_config"] = base
        # the round's: the same fields, its seed (a uint32 word: SeedSequence's, as checked)
        config = filled_in(type(base), **{**base.__dict__, "seed": seed})
        res = compact.auction_on_offer(
            cluster, offer, capps, self.options, config, cache=self.offers
        )
        auction = {ids[i]: g.tolist() for i, g in res.allocation.items()}
        pf = {ids[i]: g.tolist() for i, g in (res.pf_allocation or {}).items()}
        pay = {ids[i]: c for i, c in (res.payments or {}).items()}
        return auction, pf, pay, tables, res.status, bid_s

    def _fill(self, states, ranking, allocation: dict, unallocated: list):
        """Step 5: GPUs nobody took to the apps that can use more, worst rho first; (what each
        got, what is still left); ``allocation`` gains the fills."""
        filled: dict[str, list[str]] = {}
        by_id = {s.id: s for s in states}
        for a, _ in ranking:
            s = by_id[a]
            room = self._room(s) - len(allocation.get(a, ()))
            if room > 0 and unallocated:
                filled[a], unallocated = unallocated[:room], unallocated[room:]
                allocation.setdefault(a, []).extend(filled[a])
        return filled, unallocated

    # --- helpers ----------------------------------------------------------------------------------
    @staticmethod
    def _rho_share(cluster: Cluster, s: AppState, n_apps: int) -> float:
        """rho from now on with a 1/N share (floor(R_C / N) GPUs on one machine): the tie-break among
        equal current rho (it grows while the app waits)."""
        return share_rho(cluster, s, max(1, len(cluster) // max(n_apps, 1)))

    def _rho_now(self, cluster: Cluster, s: AppState) -> float:
        if s.rho is not None:
            return float(s.rho)
        return state_rho(cluster, s, held_index(cluster, s))

    @staticmethod
    def _room(s: AppState) -> int:
        """GPUs ``s`` can use beyond what it holds (:attr:`AppState.room`, else its demand cap)."""
        if s.room is not None:
            return max(int(s.room), 0)
        return max(ftf_model(s.app).app_demand_max - len(s.held), 0)

    def _leftover(self, cluster, rest, left: list[int], seed, cache):
        """Hand ``left`` GPU indices to the non-participants ``rest``; ({id: GPU indices},
        {id: new rho})."""
        given: dict[str, list[int]] = {}
        rho_after: dict[str, float] = {}
        pool = list(left)
        if not pool or not rest:
            return given, rho_after
        if self.leftover == "random":
            takers = [k for k, s in enumerate(rest) if self._room(s)]
            if not takers:  # nobody can take one: the order is moot
                return given, rho_after
            if len(takers) > 1:  # one taker: it takes the same GPUs in any order
                takers = np.random.default_rng(seed).permutation(len(rest)).tolist()
            for k in takers:
                s = rest[k]
                take = pool[: self._room(s)]
                if take:
                    given[s.id] = take
                    pool = pool[len(take) :]
        else:  # work-conserving: greedy on the largest -log rho improvement
            held = {s.id: held_index(cluster, s).tolist() for s in rest}
            while pool:
                best = None
                for s in rest:
                    room = self._room(s) - len(held[s.id]) + len(s.held)
                    take = pool[:room]
                    if not take:
                        continue
                    before = state_rho(cluster, s, held[s.id])
                    after = state_rho(cluster, s, held[s.id] + take)
                    gain = (math.inf if math.isinf(before) else math.log(before)) - math.log(after)
                    if gain > 1e-12 and (best is None or gain > best[0]):
                        best = (gain, s.id, take)
                if best is None:
                    break
                _, a, take = best
                held[a] += take
                given.setdefault(a, []).extend(take)
                pool = [g for g in pool if g not in set(take)]
        for s in rest:
            if s.id not in given:
                continue
            t = cache.get(s.id)
            n = len(given[s.id])
            idx = np.concatenate([held_index(cluster, s), np.asarray(given[s.id], np.int64)])
            if t is not None and n <= t.n_max:  # Theorem 3.3: update from the cached table
                sp_ = spread(cluster.machine_index, cluster.rack_index, idx)
                v = float(cluster.pm_vector(s.cls)[idx].max())
                rho_after[s.id] = float(t.rho[n, sp_, min(t.level(v), t.levels.size - 1)])
            else:
                rho_after[s.id] = state_rho(cluster, s, idx)
        return given, rho_after
