"""Partial allocation (PA) — THEMIS Pseudocode 1 (Cole, Gkatzelis & Goel's mechanism).

    c_i = prod_{j != i} v_j(PF) / prod_{j != i} v_j(PF_{-i}),    v = 1 / rho
    log c_i = sum_{j != i} -log rho_j(PF)  -  sum_{j != i} -log rho_j(PF_{-i})

clamped to [0, 1] (solver tolerances can push the ratio a hair above 1). With unbounded ``rho_empty``
the valuations are compared lexicographically (PFValue): if removing i lets more of the other
unbounded apps be served, some v_j(PF) = 0 and c_i = 0.

Indivisible GPUs need a rounding rule for "app i keeps a c_i share of its PF bundle":

* ``partial`` — the paper's G_i = c_i G_i,pf (§3.3, Pseudocode 1) in whole GPUs, by largest
  remainders over the round: quotas q_i = c_i |G_i,pf| over the round's bidders; the round keeps
  K = floor(sum_i q_i + 1/2) GPUs in all (round half up); each bidder gets floor(q_i), and the
  K - sum_i floor(q_i) GPUs left go one each to the largest remainders q_i - floor(q_i) (remainders
  equal to 9 decimals: a seeded draw decides, never the app id); no bidder gets more than
  |G_i,pf|. App i keeps its best sub-bundle of at most that many GPUs inside its PF bundle (the
  ``floor_pick`` of :func:`round_shares`: fewer only where fewer serve it as well), its whole PF
  bundle at c_i = 1. It keeps: floor(q_i) <= k_i <= ceil(q_i), |sum_i k_i - sum_i q_i| <= 1/2,
  every kept GPU inside the app's own PF bundle (none given twice), and the same outcome for the
  same c and seed. It reads every c_i, so they must be exact (no NaN).
* ``lottery`` — the app keeps its whole PF bundle with probability c_i (seeded), else nothing.
* ``floor``   — the app keeps its best bid B' ⊆ B_pf with |B'| <= floor(c_i |B_pf|) (nothing if none fits).
* ``fractional`` — no rounding: the share c_i is reported and the whole bundle is kept (for analysis).

GPUs of a PF bundle that the final allocation does not use are the leftover (handed to non-bidders by
the round driver).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from fairplace.core.domain import AuctionInstance
from fairplace.core.registry import Entry, Registry

from .pf import PFValue, pf_value


def others_value(instance: AuctionInstance, choice: dict[int, int], apps, i: int) -> PFValue:
    """PF value of ``choice`` restricted to apps j != i."""
    return pf_value(instance, choice, [j for j in apps if j != i])


def payment(with_i: PFValue, without_i: PFValue) -> float:
    """c_i from the others' value in PF (with i) and in PF_{-i} (without i), clamped to [0, 1]."""
    if with_i.n_unbounded_served < without_i.n_unbounded_served:
        return 0.0
    if with_i.n_unbounded_served > without_i.n_unbounded_served:  # cannot happen at an optimum
        return 1.0
    return float(min(1.0, max(0.0, math.exp(with_i.log_sum - without_i.log_sum))))


def round_shares(
    bundles: Mapping[int, tuple],
    c: Mapping[int, float],
    rule: str,
    seed: int,
    floor_pick: Callable[[int, tuple, int], tuple | None],
) -> dict[int, tuple]:
    """Apply a named rounding rule (:data:`ROUNDING_RULES`) to PF bundles {app: GPUs} and shares
    c_i (module docstring).

    ``floor_pick(i, bundle, cap)`` returns app i's best sub-bundle of at most ``cap`` GPUs (or None);
    it is the only part that depends on how the app's valuations are represented.
    """
    return ROUNDING_RULES.get(rule).factory(bundles, c, seed, floor_pick)


def _partial(bundles, c, seed, floor_pick) -> dict[int, tuple]:
    """``partial``: k_i = :func:`partial_counts` GPUs, app i's best inside its bundle."""
    counts = partial_counts({i: len(b) for i, b in bundles.items()}, c, seed)
    out: dict[int, tuple] = {}
    for i in sorted(bundles):
        k, bundle = counts[i], bundles[i]
        sub = bundle if k >= len(bundle) else floor_pick(i, bundle, k) if k > 0 else None
        if sub is not None:
            out[i] = sub
    return out


def _lottery(bundles, c, seed, floor_pick) -> dict[int, tuple]:
    """``lottery``: app i keeps its bundle iff draw k < c_i (draw k of the seeded stream for the
    k-th app in sorted order; made only from the first c_i strictly inside (0, 1))."""
    rng, skipped = None, 0  # the generator, made at its first uncertain draw
    out: dict[int, tuple] = {}
    for i in sorted(bundles):
        bundle, ci = bundles[i], c.get(i, 1.0)
        if rng is None and (ci >= 1.0 or ci <= 0.0):  # a draw in [0, 1) decides nothing
            skipped += 1
            if ci >= 1.0:
                out[i] = bundle
            continue
        if rng is None:
            rng = np.random.default_rng(seed)
            rng.random(skipped)
        if rng.random() < ci:
            out[i] = bundle
    return out


def _floor(bundles, c, seed, floor_pick) -> dict[int, tuple]:
    """``floor``: app i keeps its best sub-bundle of at most floor(c_i |B_pf|) GPUs."""
    out: dict[int, tuple] = {}
    for i in sorted(bundles):
        bundle = bundles[i]
        sub = floor_pick(i, bundle, math.floor(c.get(i, 1.0) * len(bundle) + 1e-9))
        if sub is not None:
            out[i] = sub
    return out


def _fractional(bundles, c, seed, floor_pick) -> dict[int, tuple]:
    """``fractional``: every bundle kept whole (the shares are only reported)."""
    return {i: bundles[i] for i in sorted(bundles)}


#: the rounding rules (module docstring): name -> ``f(bundles, c, seed, floor_pick) -> {app: GPUs}``
ROUNDING_RULES = Registry(
    "rounding rule",
    {
        "lottery": Entry(_lottery, (), "keep the whole PF bundle with probability c_i"),
        "floor": Entry(_floor, (), "keep the best bid of at most floor(c_i |B_pf|) GPUs"),
        "fractional": Entry(_fractional, (), "no rounding: report c_i, keep the bundle"),
        "partial": Entry(_partial, (), "c_i |G_i,pf| GPUs by largest remainders (the paper)"),
    },
    where="rounding",
)


def partial_counts(sizes: Mapping[int, int], c: Mapping[int, float], seed: int) -> dict[int, int]:
    """{i: GPUs app i keeps} under ``partial`` (module docstring): largest remainders of the quotas
    q_i = c_i ``sizes[i]`` (c_i default 1), K = floor(sum q + 1/2) in all, ties of remainders (to
    9 decimals) by draw k of ``default_rng(seed)`` for the k-th app in sorted order."""
    apps = sorted(sizes)
    if all(c.get(i, 1.0) == 1.0 for i in apps):  # q_i = |G_i|: every app keeps its bundle
        return {i: sizes[i] for i in apps}
    q: dict[int, float] = {}
    for i in apps:
        ci = float(c.get(i, 1.0))
        if not 0.0 <= ci <= 1.0:  # NaN too: a c_i left open (``exact_payments=False``)
            raise ValueError(f"partial rounding needs every c_i exact in [0, 1]; app {i}: {ci}")
        q[i] = ci * sizes[i]
    total = math.floor(sum(q.values()) + 0.5 + 1e-9)
    k = {i: min(sizes[i], math.floor(q[i] + 1e-9)) for i in apps}
    rem = {i: round(q[i] - k[i], 9) for i in apps}
    todo = [i for i in apps if rem[i] > 0 and k[i] < sizes[i]]
    extra = max(0, min(total - sum(k.values()), len(todo)))
    if 0 < extra < len(todo):  # who gets one more: the largest remainders, ties by the draw
        todo.sort(key=lambda i: -rem[i])  # stable: the draw is read only for a tie at the cut
        if rem[todo[extra - 1]] == rem[todo[extra]]:
            rng = np.random.default_rng(seed)
            draw = dict(zip(apps, rng.random(len(apps)).tolist(), strict=True))
            todo.sort(key=lambda i: (-rem[i], draw[i]))
    for i in todo[:extra]:
        k[i] += 1
    return k


def lottery_draws(apps, seed: int) -> dict[int, float]:
    """{i: app i's draw} of the ``lottery`` rule for the apps with a PF bundle: draw k of
    ``default_rng(seed)`` is the k-th app's in sorted order, and app i keeps its bundle iff its
    draw < c_i (:func:`round_shares`; for a caller that needs only the outcome)."""
    order = sorted(apps)
    return dict(zip(order, np.random.default_rng(seed).random(len(order)).tolist(), strict=True))


def round_allocation(
    instance: AuctionInstance,
    pf_choice: dict[int, int],
    c: dict[int, float],
    rule: str = "floor",
    seed: int = 0,
) -> dict[int, tuple[str, ...]]:
    """Final bundles {app index: gpu ids} from the PF choice and payments under a named rule."""

    def best_bid_inside(i: int, bundle: tuple[str, ...], cap: int) -> tuple[str, ...] | None:
        inside = set(bundle)
        fits = [b for b in instance.apps[i].bids if len(b.gpus) <= cap and set(b.gpus) <= inside]
        return min(fits, key=lambda b: (b.rho, len(b.gpus))).gpus if fits else None

    bundles = {i: instance.apps[i].bids[b].gpus for i, b in pf_choice.items()}
    return round_shares(bundles, c, rule, seed, best_bid_inside)


def leftover(
    instance: AuctionInstance, pf_choice: dict[int, int], final: dict[int, tuple[str, ...]]
) -> list[str]:
    """GPUs of PF bundles not used by the final allocation, in cluster order."""
    used_pf = {g for i, b in pf_choice.items() for g in instance.apps[i].bids[b].gpus}
    used_final = {g for gs in final.values() for g in gs}
    return [g.id for g in instance.cluster.gpus if g.id in used_pf and g.id not in used_final]
