"""The compiled pick loop of a PM-First / PAL round (``_round_kernel.c``), with the Python path
(:meth:`.policy_round.PlacementPolicy.place` over :class:`.placement_engine.FreePool`) as the
reference and fallback.

The kernel covers non-sticky, ``migrate="always"`` rounds of :class:`.policies.PMFirstPolicy`
(``ties`` ``machine`` / ``level``) and :class:`.policies.PALPolicy` (``fewest-machines`` /
``artifact``), backfill on or off, resumed after a previous decision's common head, on clusters whose
GPU indices are grouped by machine; its picks are the Python path's, GPU for GPU. Anything else runs in
Python. ``FAIRPLACE_KERNEL`` chooses: ``auto`` (default: the kernel when built and applicable),
``python`` (never), ``c`` (the kernel wherever applicable; an error if it was not built).
"""

from __future__ import annotations

import os

import numpy as np

from fairplace.core.errors import OptionError
from fairplace.formulations.lv import choose_cell

from .pool_index import contiguous

try:  # optional: built by setup.py when a C compiler is present
    from . import _round_kernel as _ext
except ImportError:  # pragma: no cover - depends on the install
    _ext = None

#: the environment variable choosing the path, and its values
ENV = "FAIRPLACE_KERNEL"
CHOICES = ("auto", "python", "c")
#: mode codes of the C kernel
PM_FIRST, PAL_FEWEST, PAL_ARTIFACT = 0, 1, 2
_COUNT = {"machine": 0, "level": 1}


def available() -> bool:
    """True if the compiled kernel was built and imports."""
    return _ext is not None


def wanted() -> bool:
    """Whether rounds the kernel covers should use it, from ``FAIRPLACE_KERNEL``."""
    choice = os.environ.get(ENV, "auto").strip().lower() or "auto"
    if choice not in CHOICES:
        raise OptionError(ENV, f"expected one of {CHOICES}, got {choice!r}")
    if choice == "c" and _ext is None:
        raise OptionError(ENV, "FAIRPLACE_KERNEL=c but the compiled kernel is not built")
    return choice != "python" and _ext is not None


def run(pool, order, start, spec, backfill, locality, ids, alloc) -> tuple[int, bool]:
    """Place ``order[start:]`` with the kernel into ``alloc`` (job id -> sorted GPU tuple), taking the
    GPUs from ``pool``; ``spec`` = (mode, PM-First multi-GPU count, singles count) as names
    (:meth:`.policies.PMFirstPolicy._kernel_spec`); ``locality(job)`` gives L_across (PAL only).
    Returns (the index of the last job decided, whether a misfit stopped the round), as the Python
    loop leaves them."""
    mode, ties, singles = spec
    index: dict = {}
    cls = [index.setdefault(j.cls, len(index)) for j in order]
    orders, srts = [], []
    for c in index:
        orders.append(np.ascontiguousarray(pool._order(c), dtype=np.int64))
        srts.append(np.ascontiguousarray(pool._sorted_scores(c), dtype=np.float64))
    gpus = [j.gpus for j in order]
    if mode == PM_FIRST:
        L = [0.0] * len(order)
    else:
        memo: dict = {}
        L = [
            memo[j.model] if j.model in memo else memo.setdefault(j.model, locality(j))
            for j in order
        ]
    free = pool.free[: pool.G].view(np.uint8)
    mi = np.ascontiguousarray(pool.mi, dtype=np.int64)
    k, stopped = _ext.place(
        mi,
        len(pool.cluster.machines),
        max(pool.P, 1),
        free,
        tuple(orders),
        tuple(srts),
        gpus,
        cls,
        L,
        ids,
        start,
        mode,
        _COUNT[ties],
        _COUNT[singles],
        backfill,
        _choose_cell,
        alloc,
    )
    return int(k), bool(stopped)


def covers(pool) -> bool:
    """True if the kernel can place on ``pool``'s cluster: GPUs grouped by machine, sizes in range."""
    return 0 < pool.G < 2**23 and contiguous(pool.mi) and len(pool.cluster.machines) < 2**24


def _choose_cell(w: float, a: float, L: float) -> bool:
    """PAL's walk decision (:func:`~fairplace.formulations.lv.choose_cell`), for the kernel's
    near-equal cases (it decides clear ones itself: rounding to 12 decimals is monotone)."""
    return bool(choose_cell(w, a, L))
