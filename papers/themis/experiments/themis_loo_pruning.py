"""How far an exact count-knapsack bound prunes the leave-one-out problems of captured auctions.

For every captured auction (``papers/themis/experiments/themis_compact_oracle.py capture``) of 3 or more bidders whose PF
takes the LP route, and every PF_{-i}: an option o of app j is pruned when its value plus the best
the other apps (not i, not j) can add with the GPUs left, by count alone (max-plus dynamic
programming over GPU counts), is below PF minus i (feasible for PF_{-i}); apps whose rho(nothing) is
unbounded are weighted by the program's big-M, as in its MILP. "Nothing" is always kept. Prints the
joint choices before and after per problem, how many fit the enumeration's 60,000-choice limit and
what enumerating the pruned problems costs. docs/themis-results.md (Speed) has the numbers::

    python papers/themis/experiments/themis_compact_oracle.py capture x4.jsonl.gz --workloads 2 --contentions 4 \\
        --seeds 0 --skip 8000 --every 50 --max-rounds 12000
    python papers/themis/experiments/themis_loo_pruning.py x4.jsonl.gz
"""

from __future__ import annotations

import importlib.util
import math
import sys
import time
from pathlib import Path

import numpy as np

from fairplace.formulations.compact import CompactProgram
from fairplace.solvers.compact import CompactAuctionOptions, auction_on_offer
from fairplace.solvers.compact.enumeration import Options, _Fits, _Table
from fairplace.solvers.compact.pa_payments import _others

LIMIT = 60_000  # LOO_ENUM_LIMIT


def _oracle():
    path = Path(__file__).with_name("themis_compact_oracle.py")
    spec = importlib.util.spec_from_file_location("themis_compact_oracle", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def score(o: Options, big_m: float) -> np.ndarray:
    """An option's value in the MILP's units: -log rho, plus big-M for serving an unbounded app."""
    s = o.w.copy()
    if o.unbounded:
        s[1:] += big_m
    return s


def best_by_count(o: Options, gpus: int, big_m: float) -> np.ndarray:
    """v[g]: the app's best option with exactly g GPUs (-inf: none)."""
    v = np.full(gpus + 1, -np.inf)
    np.maximum.at(v, o.n, score(o, big_m))
    return v


def maxplus(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(a (+) b)[g] = max_{h <= g} a[h] + b[g - h]."""
    out = np.full(a.size, -np.inf)
    for h in range(a.size):
        np.maximum(out[h:], a[h] + b[: a.size - h], out=out[h:])
    return out


def pruned(plain: CompactProgram, opts: dict, i: int, floor: float) -> dict[int, Options]:
    """The options of every app but i that can reach ``floor`` in PF_{-i} by the count bound."""
    gpus, big_m = len(plain.offer), plain.big_m
    others = [j for j in plain.active if j != i]
    exact = {j: best_by_count(opts[j], gpus, big_m) for j in others}
    out = {}
    for j in others:
        rest = np.full(gpus + 1, -np.inf)
        rest[0] = 0.0
        for k in others:
            if k != j:
                rest = maxplus(rest, exact[k])
        rest = np.maximum.accumulate(rest)  # at most g GPUs
        o = opts[j]
        keep = score(o, big_m) + rest[gpus - np.minimum(o.n, gpus)] >= floor - 1e-9 * (
            1 + abs(floor)
        )
        keep[0] = True
        cells = tuple(c for c, k in zip(o.cells, keep, strict=True) if k)
        out[j] = Options(cells, o.masks[keep], o.n[keep], o.w[keep], o.unbounded)
    return out


def main(path: str) -> None:
    orc = _oracle()
    rows = []
    for doc in orc.read_cases(path):
        a = orc.from_doc(doc)
        cl, offer, apps, ids = a["cluster"], a["offer"], a["apps"], a["ids"]
        if len(apps) < 3:
            continue
        config = CompactAuctionOptions(a["rounding"], a["seed"], True)
        sol = auction_on_offer(cl, offer, apps, a["opts"], config).solution(cl, ids, "compact")
        if sol.extra["pf_route"] == "enumeration":
            continue
        plain = CompactProgram(
            cl, tuple(int(g) for g in offer), apps, reduced=False, aggregate=True
        )
        cells = sol.extra["cells"]
        choice = {
            k: (tuple(cells[x]), tuple(cl.indices(sol.pf_allocation[x])))
            for k, x in enumerate(ids)
            if x in cells and sol.pf_allocation.get(x)
        }
        opts = {j: _Fits.of(plain, j).options() for j in plain.active}
        for i in plain.active:
            v = _others(plain, choice, i)
            floor = plain.big_m * v.n_unbounded_served + v.log_sum
            kept = pruned(plain, opts, i, floor)
            before = math.prod(opts[j].n.size for j in kept)
            after = math.prod(o.n.size for o in kept.values())
            secs = None
            if after <= LIMIT:
                sub = plain.excluding({i})
                t0 = time.perf_counter()
                tab = _Table.of(sub, [kept[j] for j in sub.active])
                tab.best(np.ones(len(tab.rows), bool))
                secs = time.perf_counter() - t0
            rows.append((before, after, secs))
            print(f"{len(kept)} apps: {before:.2e} -> {after:.2e} joint choices", flush=True)
    before, after = (np.array([r[k] for r in rows], float) for k in (0, 1))
    secs = np.array([r[2] for r in rows if r[2] is not None])
    print(f"leave-one-out problems {len(rows)}: within {LIMIT:,} joint choices "
          f"{int((before <= LIMIT).sum())} before pruning, {int((after <= LIMIT).sum())} after")  # fmt: skip
    if secs.size:
        print(f"enumerating the pruned ones: median {1000 * np.median(secs):.2f} ms, "
              f"90th percentile {1000 * np.quantile(secs, 0.9):.2f} ms")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1])
