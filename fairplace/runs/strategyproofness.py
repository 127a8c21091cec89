"""THEMIS §6.3 truth-telling experiment: one app misreports its slowdowns by X%; completion times vs X.

Set-up (the paper's, with the details it leaves open stated here):

* 64 GPUs: one 8-GPU machine and 28 2-GPU machines, one rack. 8 identical single-job apps, all
  arriving at t = 0, each with serial work W GPU-seconds and demand cap d_max = 24 — three times the
  1/N share of 8 GPUs — and filter f = 0.5 (4 bidders x 24 > 64 GPUs), so bidders compete for GPU
  counts and pay hidden payments c < 1 (with f = 0.8 and d_max = 16 the 2 bidders never contend:
  c = 1 in every round and no misreport can matter); slowdown S = 1
  on one machine and ``s_spread`` across machines (network-intensive apps, so the 8-GPU machine is the
  most preferred allocation). rho(G) = (t_now + R * S(G) / min(|G|, d_max)) / T_id with the headline
  T_id = W / min(R_C / N, d_max) (N = 8, R = remaining serial work).
* The liar is drawn at random per seed (``liar_of(seed)``), so it wins no tie by its position or id.
* Leases are synchronous (a documented simplification): every ``lease`` seconds all GPUs are released
  and one auction round runs. The ceil((1 - f) N_active) apps with the worst current rho (rho of the
  allocation they held; unbounded if none) bid; the PA auction (exact PF + leave-one-out payments,
  ``rounding`` ``floor`` here: deterministic, unlike the simulator's default ``lottery``)
  allocates; every GPU it leaves free (leftover and unbid GPUs) is
  handed at random (seeded) to the non-participants, up to d_max each.
* ``engine='arbiter'`` (default) drives :class:`fairplace.sim.rounds.Arbiter`: agent-form apps, the compact
  PA (every count per machine is a possible bundle), rho tables cached between rounds.
  ``engine='explicit'`` is a minimal loop on :func:`~fairplace.solvers.auction.solve_auction` with
  explicit bids: dense bundles of 1..8 GPUs on the 8-GPU machine (two placements per size) and
  bundles of 2, 4, 6, 8 GPUs made of whole 2-GPU machines (disjoint groups); app order is shuffled
  every round so that tie-breaking favours nobody.
* The liar reports ``S * (1 + X)`` for every multi-machine bundle (``lie='over-spread'``) or
  ``S * (1 - X)`` for single-machine bundles (``lie='under-dense'``), in its bids and in its current
  rho (its reported locality penalties, for the arbiter). Progress always uses the true slowdowns.

``strategyproofness(quick=...)`` returns a DataFrame with one row per X and seed:
``X, liar_completion, others_avg_completion`` (seconds) plus ``liar_mean_payment`` (mean c of the liar
over the rounds it bid in) and ``liar_dense_share`` (fraction of its lease-rounds spent on the 8-GPU
machine). :func:`tipping_point` reports the first X at which the liar's completion time jumps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairplace.core.domain import (
    GPU,
    SPREAD_MACHINE,
    SPREAD_RACK,
    AgentApp,
    AgentJob,
    App,
    AuctionInstance,
    Bid,
    Cluster,
    slowdown,
)
from fairplace.core.errors import OptionError
from fairplace.formulations.agents import ftf_model
from fairplace.formulations.ftf import bundle_rho
from fairplace.sim.rounds import AppState, Arbiter
from fairplace.solvers.auction import solve_auction
from fairplace.solvers.options import SolveOptions

LIES = ("over-spread", "under-dense")


@dataclass(frozen=True)
class Setup:
    """Parameters of one run (defaults: the paper's cluster and apps)."""

    n_apps: int = 8
    big: int = 8
    small_machines: int = 28
    d_max: int = 24
    work: float = 8 * 2 * 3600.0  # GPU-seconds: 2 h on 8 GPUs
    s_spread: float = 1.5
    lease: float = 600.0
    f: float = 0.5
    lie: str = "over-spread"
    rounding: str = "floor"
    engine: str = (
        "arbiter"  # "arbiter" (fairplace.sim.rounds, compact PA) | "explicit" (bid tables)
    )

    def cluster(self) -> Cluster:
        gpus = [GPU(f"big/{g}", "big") for g in range(self.big)]
        gpus += [GPU(f"s{m}/{g}", f"s{m}") for m in range(self.small_machines) for g in range(2)]
        return Cluster(tuple(gpus))


def _bundles(setup: Setup) -> list[tuple[str, ...]]:
    out = []
    for n in range(1, setup.big + 1):
        for start in sorted({0, setup.big - n}):
            out.append(tuple(f"big/{g}" for g in range(start, start + n)))
    for n in range(2, setup.d_max + 1, 2):
        k = n // 2
        for start in range(0, setup.small_machines - k + 1, k):
            out.append(tuple(f"s{m}/{g}" for m in range(start, start + k) for g in range(2)))
    return out


def _slowdown(setup: Setup, machines: int, liar: bool, x: float) -> float:
    """S on ``machines`` machines of the one rack (max V = 1: identical GPUs), with the liar's
    misreport applied to the reported value."""
    s = slowdown(
        (1.0, setup.s_spread, setup.s_spread), SPREAD_RACK if machines > 1 else SPREAD_MACHINE, ()
    )
    if liar and setup.lie == "over-spread" and machines > 1:
        s *= 1.0 + x
    if liar and setup.lie == "under-dense" and machines <= 1:
        s *= max(1.0 - x, 1e-3)
    return s


def liar_of(setup: Setup, seed: int) -> int:
    """The lying app of a run: a seeded uniform draw over the apps."""
    return int(np.random.default_rng([int(seed), 99]).integers(setup.n_apps))


def _rho(setup, now, remaining, gpus, machine_of, liar=False, x=0.0) -> float:
    if not gpus:
        return math.inf
    S = _slowdown(setup, len({machine_of[g] for g in gpus}), liar, x)
    r_c = setup.big + 2 * setup.small_machines
    t_id = setup.work / min(r_c / setup.n_apps, setup.d_max)
    return (now + remaining * S / min(len(gpus), setup.d_max)) / t_id


def _locality(setup: Setup, liar: bool, x: float) -> tuple[float, float, float]:
    return tuple(_slowdown(setup, m, liar, x) for m in (1, 2, 2))


def _progress(setup, now, remaining, done, i, gs, machine_of) -> None:
    """Advance app i by one lease on GPUs ``gs`` at its true slowdown (in place)."""
    S = _slowdown(setup, len({machine_of[g] for g in gs}), False, 0.0)
    rate = min(len(gs), setup.d_max) / S
    if remaining[i] <= rate * setup.lease:
        done[i] = now + remaining[i] / rate
        remaining[i] = 0.0
    else:
        remaining[i] -= rate * setup.lease


def _apply(setup, now, remaining, done, held, active, alloc, machine_of, liar) -> tuple[int, int]:
    """Hand out one round's bundles {app: GPUs} and advance progress; returns (1 if the liar
    holds GPUs, 1 if they are dense: all on the big machine)."""
    liar_held = liar_dense = 0
    for i in active:
        gs = tuple(alloc.get(i, ()))
        held[i] = gs
        if not gs:
            continue
        if i == liar:
            liar_held = 1
            liar_dense = int(all(machine_of[g] == "big" for g in gs) and len(gs) > 1)
        _progress(setup, now, remaining, done, i, gs, machine_of)
    return liar_held, liar_dense


def _simulate_arbiter(setup: Setup, x: float, seed: int, max_rounds: int) -> dict:
    """The round loop on :class:`fairplace.sim.rounds.Arbiter` (agent-form apps, compact PA). The liar is
    an agent whose *reported* locality penalties are scaled by the lie."""
    liar = liar_of(setup, seed)
    arb = Arbiter(
        f=setup.f, lease=setup.lease, leftover="random", rounding=setup.rounding, seed=seed
    )
    cl = setup.cluster()
    machine_of = {g.id: g.machine for g in cl.gpus}
    N = setup.n_apps
    remaining = np.full(N, float(setup.work))
    done = np.full(N, np.nan)
    held: list[tuple[str, ...]] = [()] * N
    payments, dense_rounds, rounds_held = [], 0, 0
    cache: dict = {}
    for k in range(max_rounds):
        now = k * setup.lease
        active = [i for i in range(N) if remaining[i] > 0]
        if not active:
            break
        states = []
        for i in active:
            app = AgentApp(
                id=f"a{i}",
                jobs=(AgentJob(float(remaining[i]), 1.0),),
                t_now=now,
                d_max=setup.d_max,
                locality=_locality(setup, i == liar, x),
                work_total=float(setup.work),
                t_id={"variant": "themis", "n_avg": float(N)},
            )
            cur = bundle_rho(ftf_model(app), cl, cl.indices(held[i]), None) if held[i] else math.inf
            states.append(AppState(app, held=(), rho=cur))
        out = arb.auction_round(cl, states, [g.id for g in cl.gpus], now, k, cache=cache)
        cache = {**cache, **out.tables}
        if f"a{liar}" in out.participants:
            payments.append(out.payments.get(f"a{liar}", 1.0))
        alloc = {i: tuple(out.allocation.get(f"a{i}", ())) for i in active}
        h, d = _apply(setup, now, remaining, done, held, active, alloc, machine_of, liar)
        rounds_held, dense_rounds = rounds_held + h, dense_rounds + d
    return _summary(done, payments, dense_rounds, rounds_held, liar)


def _summary(done, payments, dense_rounds, rounds_held, liar) -> dict:
    return {
        "liar_completion": float(done[liar]),
        "others_avg_completion": float(np.nanmean(np.delete(done, liar))),
        "liar_mean_payment": float(np.mean(payments)) if payments else float("nan"),
        "liar_dense_share": dense_rounds / rounds_held if rounds_held else 0.0,
    }


def simulate(setup: Setup, x: float, seed: int = 0, max_rounds: int = 500) -> dict:
    """One run with the liar lying by ``x`` (a fraction); completion times and the liar's payments."""
    if setup.lie not in LIES:
        raise OptionError("lie", f"expected one of {LIES}, got {setup.lie!r}")
    if setup.engine == "arbiter":
        return _simulate_arbiter(setup, x, seed, max_rounds)
    if setup.engine != "explicit":
        raise OptionError("engine", f"expected 'arbiter' or 'explicit', got {setup.engine!r}")
    rng = np.random.default_rng(seed)
    liar = liar_of(setup, seed)
    cl = setup.cluster()
    machine_of = {g.id: g.machine for g in cl.gpus}
    bundles = _bundles(setup)
    N = setup.n_apps
    remaining = np.full(N, float(setup.work))
    done = np.full(N, np.nan)
    held: list[tuple[str, ...]] = [()] * N
    opts = SolveOptions(threads=1, parallel=False)
    payments, dense_rounds, rounds_held = [], 0, 0
    for k in range(max_rounds):
        now = k * setup.lease
        active = [i for i in range(N) if remaining[i] > 0]
        if not active:
            break
        cur = {i: _rho(setup, now, remaining[i], held[i], machine_of, i == liar, x) for i in active}
        n_bid = max(1, math.ceil((1.0 - setup.f) * len(active)))
        tie = rng.permutation(N)
        bidders = sorted(active, key=lambda i: (-cur[i], tie[i]))[:n_bid]
        order = [i for i in rng.permutation(N) if i in bidders]
        apps = []
        for i in order:
            bids = tuple(
                Bid(b, _rho(setup, now, remaining[i], b, machine_of, i == liar, x)) for b in bundles
            )
            apps.append(App(f"a{i}", bids, None))
        sol = solve_auction(
            AuctionInstance(cl, tuple(apps)),
            opts=opts,
            rounding=setup.rounding,
            seed=seed * 100_003 + k,
        )
        alloc = {int(a[1:]): tuple(g) for a, g in sol.allocation.items()}
        if liar in bidders:
            payments.append(sol.payments[f"a{liar}"])
        used = {g for gs in alloc.values() for g in gs}
        free = [g.id for g in cl.gpus if g.id not in used]
        for i in rng.permutation(N):
            if i in active and i not in bidders and free:
                take = rng.choice(len(free), size=min(setup.d_max, len(free)), replace=False)
                alloc[int(i)] = tuple(free[t] for t in sorted(take))
                free = [g for t, g in enumerate(free) if t not in set(take.tolist())]
        h, d = _apply(setup, now, remaining, done, held, active, alloc, machine_of, liar)
        rounds_held, dense_rounds = rounds_held + h, dense_rounds + d
    return _summary(done, payments, dense_rounds, rounds_held, liar)


def strategyproofness(
    xs=None, seeds=None, quick: bool = False, setup: Setup = Setup()
) -> pd.DataFrame:
    """Completion times vs the liar's misreport X in percent (module docstring)."""
    if xs is None:
        xs = range(0, 101, 20) if quick else range(0, 101, 5)
    if seeds is None:
        seeds = range(5)
    rows = []
    for X in xs:
        for s in seeds:
            rows.append({"X": X, "seed": int(s), **simulate(setup, X / 100.0, seed=s)})
    return pd.DataFrame(rows)


def tipping_point(df: pd.DataFrame, jump: float = 0.05) -> float | None:
    """Smallest X whose liar completion exceeds the X = 0 value by more than ``jump`` (relative);
    None if there is none."""
    m = df.groupby("X")["liar_completion"].mean()
    worse = m[m > float(m.iloc[0]) * (1.0 + jump)]
    return None if worse.empty else float(worse.index.min())
