"""The compiled pick loop of a PM-First / PAL round (``_round_kernel.c``), with the Python path
(:meth:`.policy_round.PolicyBase.place` over :class:`.free_pool.FreePool`) as the
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
from collections.abc import Mapping

import numpy as np

from fairplace.core.errors import OptionError
from fairplace.formulations.lv import choose_cell

try:  # optional: built by setup.py when a C compiler is present
    from . import _round_kernel as _ext  # type: ignore[attr-defined]  # C extension, no stub
except ImportError:  # pragma: no cover - depends on the install
    _ext = None

#: the environment variable choosing the path, and its values
ENV = "FAIRPLACE_KERNEL"
CHOICES = ("auto", "python", "c")
#: whether rounds start each class's state from its template, kept in the pool's cache with its
#: cells (the state and PAL's segment trees when every GPU is free, made once, then brought to the
#: round's free GPUs, where few are taken); False: built from the free GPUs every round; ``2``:
#: from the template however many are taken (the same state every way; tests compare)
TEMPLATES: bool | int = True
#: mode codes of the C kernel
PM_FIRST, PAL_FEWEST, PAL_ARTIFACT = 0, 1, 2
_COUNT = {"machine": 0, "level": 1}


def available() -> bool:
    """True if the compiled kernel was built and imports."""
    return _ext is not None


def wanted() -> bool:
    """Whether rounds the kernel covers should use it, from ``FAIRPLACE_KERNEL``."""
    choice = os.environ.get(ENV)
    if choice is None:  # (the default, without the string work: asked at every round)
        return _ext is not None
    choice = choice.strip().lower() or "auto"
    if choice not in CHOICES:
        raise OptionError(ENV, f"expected one of {CHOICES}, got {choice!r}")
    if choice == "c" and _ext is None:
        raise OptionError(ENV, "set to 'c' but the compiled kernel is not built")
    return choice != "python" and _ext is not None


def run(pool, order, start, spec, backfill, policy, ids, fields=None) -> tuple[int, bool, tuple]:
    """Place ``order[start:]`` with the kernel, taking the GPUs from ``pool`` (whose counts are
    stale afterwards: the round is over); ``spec`` = (mode, PM-First multi-GPU count, singles
    count) (:meth:`.policy_round.PolicyBase._kernel_spec`); ``policy.locality(job)`` gives L_across
    (the kernel asks it). ``fields``: the jobs' (GPU demands, class codes, classes, processing
    order, localities or None) as :meth:`.job_queue.JobQueue.fields` and
    :meth:`~.job_queue.JobQueue.localities` give them, ``order`` then the queue and ``ids`` by
    processing position; None: read from the jobs of ``order`` (the processing order). Returns
    (the index of the last job decided, whether a misfit stopped the round, as the Python loop
    leaves them, and the picks (pos, ends, flat): the processing position of each job placed, the
    GPUs placed up to and including it, every job's sorted GPUs; :mod:`.allocation`)."""
    mode, ties, singles = spec
    loc = None
    if fields is None:
        gb, cb, classes = _ext.scan(order)
        gpus, codes, perm = np.frombuffer(gb, np.int64), np.frombuffer(cb, np.int64), None
    else:
        gpus, codes, classes, perm, *more = fields
        if more and more[0] is not None:  # each job's own L and model index: no job read
            own, model, models = more[0]
            loc = (own, model, len(models))
    mi, M, P = (
        np.ascontiguousarray(pool.mi, dtype=np.int64),
        len(pool.cluster.machines),
        max(pool.P, 1),
    )

    art = mode == PAL_ARTIFACT

    def class_data(cls):  # a class's score order, cells and template, made once (the pool's cache)
        key = ("__kernel cells__", cls)
        got = pool._cache.get(key)
        if got is None:
            order_ = np.ascontiguousarray(pool._order(cls), dtype=np.int64)
            srt = np.ascontiguousarray(pool._sorted_scores(cls), dtype=np.float64)
            got = pool._cache[key] = (order_, _ext.cells(mi, M, P, order_, srt))
        if not TEMPLATES:
            return got
        always = TEMPLATES == 2
        tkey = ("__kernel template__", cls, art, always)
        tmpl = pool._cache.get(tkey)
        if tmpl is None:
            tmpl = pool._cache[tkey] = _ext.template(got[1], M, P, art, always)
        return (*got, tmpl)

    J = len(ids)
    pos, ends, flat = np.empty(J, np.int64), np.empty(J, np.int64), np.empty(pool.G, np.int64)
    more = () if loc is None else (loc,)
    k, stopped, n = _ext.place(
        mi,
        M,
        P,
        pool.free[: pool.G].view(np.uint8),
        order if isinstance(order, (list, tuple)) else list(order),
        gpus,
        codes,
        perm,
        classes,
        ids,
        start,
        mode,
        _COUNT[ties],
        _COUNT[singles],
        bool(backfill),
        class_data,
        policy.locality,
        _choose_cell,
        pos,
        ends,
        flat,
        *more,
    )
    nf = int(ends[n - 1]) if n else 0
    return int(k), bool(stopped), (pos[:n], ends[:n], flat[:nf])


def build(ids: tuple, pos, ends, flat, ints: tuple, ones: tuple) -> dict:
    """``{ids[pos[i]]: tuple(flat[ends[i-1]:ends[i]])}``, each tuple made of ``ints`` (the ints
    0..G-1) or, for one GPU, taken from ``ones`` (their 1-tuples): a round's allocation from its
    arrays, in one compiled pass when built."""
    fn = getattr(_ext, "build", None)
    if fn is not None:
        return fn(ids, pos, ends, flat, ints, ones)
    g, e = np.asarray(flat).tolist(), np.asarray(ends).tolist()
    starts = [0, *e[:-1]]
    return {
        ids[p]: tuple(g[a:b]) for p, a, b in zip(np.asarray(pos).tolist(), starts, e, strict=True)
    }


def gather(seq, idx) -> tuple:
    """``tuple(seq[i] for i in idx)`` for a list or tuple ``seq`` and integer positions ``idx``:
    one pass in the compiled kernel when built."""
    if _ext is not None:
        return _ext.gather(seq, np.ascontiguousarray(idx, dtype=np.int64))
    return tuple(map(seq.__getitem__, np.asarray(idx).tolist()))


def flatten(vals: list) -> tuple[np.ndarray, np.ndarray] | None:
    """(every tuple's ints one after the other, each tuple's length), int64, for a list of tuples of
    ints, in one compiled pass; None where an entry is anything else, or without the kernel (the
    caller's own checks then name it)."""
    fn = getattr(_ext, "flatten", None)  # (an older build has none)
    got = None if fn is None else fn(vals)
    if got is None:
        return None
    return np.frombuffer(got[0], np.int64), np.frombuffer(got[1], np.int64)


def rekey(d: Mapping, table: dict) -> tuple[dict, np.ndarray] | None:
    """(``{table[k]: v for k, v in d.items()}``, those ``table[k]`` as int64 in order), in one
    compiled pass, for dicts ``d`` and ``table`` (another mapping: None) (ints that int64 holds); None where a key is not
    in ``table``, its value is not such an int, or without the kernel (the caller's own checks
    then name it)."""
    fn = getattr(_ext, "rekey", None)
    got = None if fn is None or type(d) is not dict or type(table) is not dict else fn(d, table)
    return None if got is None else (got[0], np.frombuffer(got[1], np.int64))


def int_lists_json(heads: list, flat: np.ndarray, sizes: np.ndarray) -> str | None:
    """The JSON object whose i-th item is ``heads[i]`` (ASCII ``,<key text>:[``) then the
    ``sizes[i]`` next non-negative ints of ``flat`` (int64) as a list, in one compiled pass; None
    where it does not apply (a non-ASCII head, a negative int) or without the kernel."""
    fn = getattr(_ext, "int_lists_json", None)
    if fn is None:
        return None
    return fn(heads, np.ascontiguousarray(flat, np.int64), np.ascontiguousarray(sizes, np.int64))


def differs(new: dict, old: dict) -> np.ndarray | None:
    """Per item of ``new`` in order: whether ``old`` lacks its key or holds a value ``!=`` to it
    (bool), in one compiled pass; None without the kernel."""
    fn = getattr(_ext, "differs", None)
    if fn is None or type(new) is not dict or type(old) is not dict:
        return None
    return np.frombuffer(fn(new, old), bool)


def same_array(a: np.ndarray, b) -> bool:
    """Whether ``b`` equals the array ``a`` (a kept C-contiguous copy): byte for byte in one
    compiled pass where ``b`` is an array of ``a``'s dtype and shape, C-contiguous or 1-D strided
    (a column of a table) (equal bytes, equal values: what a sort of them gives is the same), else
    :func:`numpy.array_equal`."""
    fn = getattr(_ext, "same_bytes", None)
    if (
        fn is not None
        and isinstance(b, np.ndarray)
        and b.dtype == a.dtype
        and b.shape == a.shape
        and a.flags.c_contiguous
    ):
        got = fn(a, b)
        if got is not None:
            return bool(got)
    return bool(np.array_equal(a, b))


def covers(pool) -> bool:
    """True if the kernel can place on ``pool``'s cluster: GPUs grouped by machine, sizes in range."""
    return fits(pool.G, pool.grouped, len(pool.cluster.machines))


def fits(G: int, grouped: bool, M: int) -> bool:
    """:func:`covers` from the cluster's size, whether its GPUs are grouped by machine and its
    machine count."""
    return 0 < G < 2**23 and grouped and M < 2**24


def _choose_cell(w: float, a: float, L: float) -> bool:
    """PAL's walk decision (:func:`~fairplace.formulations.lv.choose_cell`), for the kernel's
    near-equal cases (it decides clear ones itself: rounding to 12 decimals is monotone)."""
    return bool(choose_cell(w, a, L))
