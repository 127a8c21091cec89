"""Placement-unaware fair-share baselines of THEMIS §3.1 (Theorem 3.1): instantaneous DRF and LAS.

Both decide only *how many* GPUs each app gets; where they go is left to a placement-unaware rule.

* ``drf_counts`` — with GPUs as the single resource, DRF's progressive filling hands one GPU at a time
  to the app with the smallest dominant share count_i / R (ties: app order), up to its demand.
* ``las_counts`` — Tiresias' least attained service: one GPU at a time to the app with the least
  attained GPU-time ``attained_i + count_i * lease`` (ties: app order), up to its demand.
* ``place`` — ``mode='task'``: GPUs are handed out in cluster order, one per step of the filling sequence
  (tasks of different apps interleave); ``mode='gang'``: apps in order each take the first
  ``count_i`` free GPUs in cluster order (first fit).
"""

from __future__ import annotations

from collections.abc import Sequence

from fairplace.core.domain import AuctionInstance
from fairplace.core.errors import OptionError


def _fill(demands: Sequence[int], capacity: int, key) -> tuple[list[int], list[int]]:
    counts = [0] * len(demands)
    sequence: list[int] = []
    for _ in range(capacity):
        open_ = [i for i in range(len(demands)) if counts[i] < demands[i]]
        if not open_:
            break
        i = min(open_, key=lambda i: (key(i, counts[i]), i))
        counts[i] += 1
        sequence.append(i)
    return counts, sequence


def drf_counts(demands: Sequence[int], capacity: int) -> tuple[list[int], list[int]]:
    """(counts, filling sequence) of DRF progressive filling over one resource."""
    return _fill(demands, capacity, lambda i, c: c / max(capacity, 1))


def las_counts(
    demands: Sequence[int], capacity: int, attained: Sequence[float], lease: float = 1.0
) -> tuple[list[int], list[int]]:
    """(counts, filling sequence) of least-attained-service filling."""
    return _fill(demands, capacity, lambda i, c: attained[i] + c * lease)


def place(
    inst: AuctionInstance, counts: Sequence[int], sequence: Sequence[int], mode: str = "task"
) -> dict[str, list[str]]:
    """Placement-unaware allocation {app id: gpu ids} for the given counts (see module docstring)."""
    ids = [g.id for g in inst.cluster.gpus]
    out: dict[str, list[str]] = {a.id: [] for a in inst.apps}
    if mode == "task":
        for g, i in zip(ids, sequence, strict=False):
            out[inst.apps[i].id].append(g)
    elif mode == "gang":
        k = 0
        for i, c in enumerate(counts):
            out[inst.apps[i].id] = ids[k : k + c]
            k += c
    else:
        raise OptionError("mode", f"expected 'task' or 'gang', got {mode!r}")
    return {a: gs for a, gs in out.items() if gs}
