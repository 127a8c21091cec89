"""Resuming a round from a previous decision (:meth:`.policy_round.PolicyBase.place` with
``previous``): the jobs that head both processing orders get the same GPUs as then (a job's pick
depends only on the picks before it), copied as a dict (the Python path) or as a prefix of the
previous round's arrays (the compiled kernel's form, :mod:`.allocation`); only the rest is placed
again.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from . import round_kernel
from .allocation import Allocation, of_dict

if TYPE_CHECKING:
    from .policy_round import Decision


def replay(previous: Decision, ids: tuple[str, ...], alloc: dict, free: np.ndarray):
    """Copy into ``alloc`` the picks of ``previous`` for the jobs heading both processing orders and
    mark their GPUs busy in ``free``; returns (index of the last job decided, whether the round is
    over: the previous round stopped at a misfit inside the common head)."""
    assert previous.trail is not None  # the caller resumes only from a decision with a trail
    old_ids, decided, stopped, _ = previous.trail
    p = _common_head(old_ids, ids, min(decided, len(ids)))
    prev, head = previous.allocation, ids[:p]
    got = list(map(prev.get, head))
    if None in got:  # a job of the head left unplaced (backfill)
        alloc.update((j, g) for j, g in zip(head, got, strict=True) if g is not None)
    else:
        alloc.update(zip(head, got, strict=True))
    if alloc:
        flat = round_kernel.flatten(list(alloc.values()))  # (one compiled pass)
        if flat is None:
            free[np.fromiter(itertools.chain.from_iterable(alloc.values()), np.int64)] = False
        else:
            free[flat[0]] = False
    return p - 1, stopped and p == decided


NO_PICKS = (np.zeros(0, np.int64),) * 3


def replay_arrays(previous: Decision, ids: tuple[str, ...], free: np.ndarray):
    """:func:`replay` for the compiled kernel: (index of the last job decided, whether the round
    is over, the head's picks as (pos, ends, flat), :mod:`.allocation`): a prefix of the previous
    decision's arrays (the head's positions are the same in both orders), or from its dict."""
    assert previous.trail is not None  # the caller resumes only from a decision with a trail
    old_ids, decided, stopped, _ = previous.trail
    p = _common_head(old_ids, ids, min(decided, len(ids)))
    prev = previous.allocation
    if isinstance(prev, Allocation) and prev.ids is old_ids:
        cut = int(prev.pos.searchsorted(p))  # the jobs placed at positions < p
        nf = int(prev.ends[cut - 1]) if cut else 0
        picks = (prev.pos[:cut], prev.ends[:cut], prev.flat[:nf])
    else:
        picks = of_dict(prev, ids, p)
    free[picks[2]] = False
    return p - 1, stopped and p == decided, picks


def join(head: tuple, tail: tuple) -> tuple:
    """The picks (pos, ends, flat) of ``head`` then ``tail`` (:mod:`.allocation`)."""
    base = head[1][-1] if head[1].size else 0
    return (
        np.concatenate((head[0], tail[0])),
        np.concatenate((head[1], tail[1] + base)),
        np.concatenate((head[2], tail[2])),
    )


def _common_head(a: tuple, b: tuple, n: int) -> int:
    """The largest p <= n with a[:p] == b[:p], by halving (tuple slices compared in C: O(n), no
    Python step per job)."""
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo
