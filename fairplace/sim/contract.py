"""The contract of every scheduler and placement decision, checked at each decision, and the bound on
decisions without progress (:class:`Contract`).

The rules (the same for built-in and user objects, :mod:`fairplace.sim.protocols`):

* ``order(view)``: a 1-D array (or sequence) of integer job indices, each of an active job
  (``view.active``), none twice;
* ``place(state, queue)``: an object whose ``allocation`` maps ids of jobs in ``queue`` to sorted
  tuples of distinct GPU indices (ints in 0..G-1), as many as the job's demand, no GPU given to two
  jobs (a :class:`~fairplace.solvers.placement.policies.Decision`);
* ``allocate(...)`` (a scheduler that ``allocates``): a mapping from indices of active jobs to GPU
  indices (ints in 0..G-1), between 1 and the job's demand, no GPU given twice;
* ``next_change(view)``: a number; ``next_event(t)``: a number > t.

A broken rule raises :class:`~fairplace.core.errors.ExtensionError` naming the object and the rule
(``placement policy 'mine' gave GPU 7 to jobs 3 and 5``); its ``path`` is the parameter of
:func:`fairplace.simulate` that took the object (``scheduler`` / ``placement``). The checks are numpy
over the queue and the GPUs placed, O(queue + placed GPUs) per decision (about 2% of the 10,000-job
benchmark); ``DriverConfig.debug`` adds the expensive ones (the driver's).

The bound on decisions without progress (``Contract.step``) is :class:`.stall.StallBound`'s.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from functools import cached_property
from itertools import chain

import numpy as np

from fairplace.core.errors import ExtensionError
from fairplace.solvers.placement import round_kernel
from fairplace.solvers.placement.allocation import Allocation

from .stall import MAX_STALLED, StallBound  # noqa: F401 - MAX_STALLED: re-exported, the old path


def label(obj, kind: str) -> str:
    """``placement policy 'name'``: the object as the messages name it."""
    return f"{kind} {str(getattr(obj, 'name', type(obj).__name__))!r}"


def _what(x) -> str:
    """A short description of a returned value of the wrong type."""
    text = repr(x)
    return f"{type(x).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def _is_index_type(t: type) -> bool:
    return t is int or (issubclass(t, (int, np.integer)) and not issubclass(t, (bool, np.bool_)))


class Contract(StallBound):
    """The checks of one simulation: ``ids`` / ``demand`` of its jobs, ``G`` GPUs, the scheduler and
    the placement policy (unused when the scheduler ``allocates``)."""

    def __init__(
        self,
        ids,
        demand,
        G: int,
        scheduler,
        policy,
        allocates: bool,
        max_stalled: int,
        grace: float,
    ):
        self.ids, self.demand, self.G, self.J = ids, demand, int(G), len(demand)
        #: job id -> index of the jobs in the last order (kept as the queue changes: a decision's
        #: ids are looked up in it, not in a table of every job)
        self.live: dict = {}
        self.sched = label(scheduler, "scheduler")
        self.policy = label(policy, "placement policy")
        self.allocates = allocates
        self.in_queue = np.zeros(self.J, bool)  # the last order, as a mask over jobs
        self.slot = np.zeros(self.J, np.int64)  # each job's position in the last order
        self.queue = np.zeros(0, np.int64)
        self.max_stalled, self.grace = max_stalled, grace
        self.stalled, self.stall_since = 0, 0.0
        #: per job, the read-only array ``allocate`` returned at the previous decision, with its
        #: sorted tuple and list (:meth:`allocation` converts only arrays it has not seen)
        self.seen: dict[int, tuple[np.ndarray, tuple, list]] = {}
        #: the previous decision of ``allocate``: (its jobs, its arrays, job indices, result)
        self.last: tuple | None = None
        #: the last :meth:`placement`'s arrays in decision order: (job indices, GPUs per job, every
        #: job's GPUs one after the other), read by the driver instead of the tuples again
        self.placed: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @cached_property
    def pos(self) -> dict:
        """Job id -> index of every job (made when an error names a job by its id)."""
        return {i: k for k, i in enumerate(self.ids)}

    def _sched_error(self, rule: str) -> ExtensionError:
        return ExtensionError("scheduler", f"{self.sched} {rule}")

    def _policy_error(self, rule: str) -> ExtensionError:
        return ExtensionError("placement", f"{self.policy} {rule}")

    def job(self, j) -> str:
        return f"job {self.ids[int(j)]}"

    # -- scheduler -----------------------------------------------------------------------------
    def order(self, order, is_active: np.ndarray) -> np.ndarray:
        """``order(view)``'s result checked: distinct indices of active jobs (int64)."""
        try:
            o = np.asarray(order)
        except (TypeError, ValueError):
            o = np.asarray(None)
        if o.ndim != 1:
            raise self._sched_error(
                f"order() returned {_what(order)}: expected a 1-D array of job indices "
                "(of view.active)"
            )
        if o.dtype.kind not in "iu" and o.size:
            raise self._sched_error(
                f"order() returned {o.dtype} values ({o[0].item()!r}, ...): expected integer job "
                "indices (of view.active)"
            )
        J = self.J
        o = o.astype(np.int64, copy=False)  # (np.asarray([]) is float)
        if np.count_nonzero(o.view(np.uint64) >= J):  # (negatives: >= 2**63 unsigned)
            j = o[(o < 0) | (o >= J)][0]
            raise self._sched_error(f"order() returned job index {j}, outside 0..{J - 1}")
        act = is_active[o]
        if np.count_nonzero(act) != o.size:  # (count_nonzero: no Python frame, unlike .all())
            j = o[~act][0]
            raise self._sched_error(
                f"ordered {self.job(j)} (index {j}), which is not active (not arrived yet, "
                "waiting for its app's previous phase, or finished): order only view.active"
            )
        mask, slot, old = self.in_queue, self.slot, self.queue
        added = o[~mask[o]]
        mask[old] = False
        mask[o] = True
        self.queue = o
        at = np.arange(o.size)
        slot[o] = at  # a job ordered twice keeps only its last position
        if np.count_nonzero(slot[o] != at):  # O(queue), not O(jobs)
            u, c = np.unique(o, return_counts=True)
            raise self._sched_error(f"ordered {self.job(u[c > 1][0])} twice")
        live, ids = self.live, self.ids
        for j in old[~mask[old]].tolist():  # left the queue
            del live[ids[j]]
        added = added.tolist()
        live.update(zip(map(ids.__getitem__, added), added, strict=True))
        return o

    def time(self, value, call: str, after: float | None = None) -> float:
        """A time returned by ``next_change`` / ``next_event`` (which must be > ``after``)."""
        try:
            x = float(value)
        except (TypeError, ValueError):
            raise self._sched_error(
                f"{call} returned {_what(value)}: expected a time in seconds (np.inf: never)"
            ) from None
        if after is not None and not x > after:
            raise self._sched_error(f"{call} returned {x!r} at t = {after!r}: expected a time > t")
        return x

    def allocation(self, new, is_active: np.ndarray):
        """``allocate(...)``'s result checked: (job -> int64 GPU array, job -> sorted tuple, the
        allocation to record by job id). The same jobs on the same read-only arrays as at the
        previous decision (a THEMIS decision that moved no job) need only be active still: the
        previous result again (its record the same object, its dicts copies: the driver changes
        them)."""
        last = self.last
        if (
            last is not None
            and type(new) is dict
            and len(new) == len(last[0])
            and all(map(operator.is_, new.values(), last[1]))
            and list(new) == last[0]
            and not any(g.flags.writeable for g in last[1])
            and np.count_nonzero(is_active[last[2]]) == last[2].size
        ):
            alloc, key, record = last[3]
            return dict(alloc), dict(key), record
        self.last = None
        out = self._allocation(new, is_active)
        if type(new) is dict and len(self.seen) == len(new):  # every job on a read-only array
            self.last = (list(new), list(new.values()), np.fromiter(new, np.int64, len(new)), out)
            out = (dict(out[0]), dict(out[1]), out[2])
        return out

    def _allocation(self, new, is_active: np.ndarray):
        if not isinstance(new, Mapping):
            raise self._sched_error(
                f"allocate() returned {_what(new)}: expected a dict job index -> GPU indices"
            )
        for t in set(map(type, new)):
            if not _is_index_type(t):
                k = next(k for k in new if type(k) is t)
                raise self._sched_error(
                    f"allocate() returned the key {k!r}: expected job indices (ints), not ids"
                )
        J = self.J
        js = list(map(int, new))
        idx = np.fromiter(js, np.int64, len(js))
        inside = (idx >= 0) & (idx < J)
        bad = ~inside
        bad[inside] = ~is_active[idx[inside]]
        if bad.any():  # the first job that breaks a rule, named
            j = js[int(np.argmax(bad))]
            if not 0 <= j < J:
                raise self._sched_error(
                    f"allocate() gave GPUs to job index {j}, outside 0..{J - 1}"
                )
            raise self._sched_error(f"allocated GPUs to {self.job(j)}, which is not active")
        arrays, seen, keys, lists = [], self.seen, [], []
        kept = {}  # the next ``seen``: read-only arrays, converted once
        for j, g in zip(js, new.values(), strict=True):
            last = seen.get(j)
            if last is not None and last[0] is g and not g.flags.writeable:
                arrays.append(g)  # the same read-only array as before: checked and converted
                keys.append(last[1])
                lists.append(last[2])
                kept[j] = last
                continue
            try:
                a = np.asarray(g)
            except (TypeError, ValueError):
                a = np.asarray(None)
            if a.ndim != 1 or a.dtype.kind not in "iu":
                raise self._sched_error(
                    f"allocate() gave {self.job(j)} {_what(g)}: expected an array of GPU indices "
                    f"(ints in 0..{self.G - 1})"
                )
            a = a.astype(np.int64, copy=False)
            arrays.append(a)
            lists.append(a.tolist())
            keys.append(tuple(sorted(lists[-1])))
            if not a.flags.writeable:
                kept[j] = (a, keys[-1], lists[-1])
        sizes = np.fromiter(map(len, arrays), np.int64, len(arrays))
        bad = (sizes < 1) | (sizes > self.demand[idx])
        if bad.any():
            k = int(np.argmax(bad))
            raise self._sched_error(
                f"gave {self.job(js[k])} {sizes[k]} GPUs, expected 1..{self.demand[js[k]]} "
                "(its demand)"
            )
        flat = np.concatenate(arrays) if arrays else np.zeros(0, np.int64)
        self._gpus(flat, idx, sizes, self._sched_error)
        alloc = dict(zip(js, arrays, strict=True))
        key = dict(zip(js, keys, strict=True))
        record = dict(zip(map(self.ids.__getitem__, js), lists, strict=True))
        self.seen = kept
        return alloc, key, record

    # -- placement policy ----------------------------------------------------------------------
    def placement(self, dec):
        """``place(state, queue)``'s result checked against the last :meth:`order`: (job -> sorted
        tuple, the holdings: job -> its GPUs (the same tuples, in a dict of their own: the driver
        reads a placement's GPUs as tuples), the allocation to record by job id); its arrays in
        :attr:`placed`. O(placed) in C-level passes (no Python step per job when the GPUs are
        tuples of ints)."""
        a = getattr(dec, "allocation", None)
        if not isinstance(a, Mapping):
            raise self._policy_error(
                f"returned {_what(dec)}: expected a Decision (fairplace.solvers.placement.policies.Decision) "
                "whose allocation maps job ids to GPU indices"
            )
        # the compiled kernel's allocation: its dict, and its GPUs from its arrays
        arrays = a if isinstance(a, Allocation) else None
        d = a if arrays is None else arrays.dict
        keyed = round_kernel.rekey(d, self.live)  # (one compiled pass where it applies)
        try:  # ids of queued jobs (the last order's: ``live``)
            if keyed is None:
                new_key = dict(zip(map(self.live.__getitem__, d), d.values(), strict=True))
            else:
                new_key, js = keyed
        except (KeyError, TypeError):
            pos = self.pos
            bad = next((i for i in a if not _known(i, pos)), _NONE)
            if bad is not _NONE:
                raise self._policy_error(f"placed {bad!r}, which is not the id of a job") from None
            j = pos[next(i for i in a if i not in self.live)]
            raise self._policy_error(f"placed {self.job(j)}, which is not in its queue") from None
        vals = list(new_key.values())
        n = len(vals)
        if keyed is None:
            js = np.fromiter(new_key, np.int64, n)
        record = a
        # tuples of ints (a built-in policy's): flat and sizes in one compiled pass
        if arrays is not None:
            got: tuple | None = (arrays.flat, arrays.sizes())
        else:
            got = round_kernel.flatten(vals) if type(a) is dict else None
        if got is not None:
            arr, sizes = got
        else:
            if type(a) is not dict or list(map(type, vals)).count(tuple) != n:
                vals = self._tuples(vals, js)  # lists, arrays, ...: tuples of Python ints
                new_key = dict(zip(js.tolist(), vals, strict=True))
                record = {self.ids[j]: g for j, g in new_key.items()}
            sizes = np.fromiter(map(len, vals), np.int64, n)
        bad = sizes != self.demand[js]
        if np.count_nonzero(bad):
            k = int(np.argmax(bad))
            raise self._policy_error(
                f"gave {self.job(js[k])} {sizes[k]} GPUs, its demand is {self.demand[js[k]]}"
            )
        if got is None:
            flat = list(chain.from_iterable(vals))
            try:  # ints: int64; a float, a string, a huge int: another dtype
                ints: np.ndarray | None = np.array(flat)
            except (TypeError, ValueError):  # ragged: a tuple inside a job's GPUs
                ints = None
            if ints is None or ints.dtype != np.int64:  # named, or numpy ints (accepted)
                ints = self._indices(flat, js, sizes)
            arr = ints
        self._gpus(arr, js, sizes, self._policy_error)
        ends = sizes.cumsum()
        if arr.size > 1:  # sorted within each job (the key of a placement)
            down = arr[1:] <= arr[:-1]
            down[ends[:-1] - 1] = False  # between two jobs: any order
            if np.count_nonzero(down):
                k = int(np.searchsorted(ends, int(np.argmax(down)), side="right"))
                raise self._policy_error(
                    f"gave {self.job(js[k])} GPUs {tuple(vals[k])}: expected sorted, distinct "
                    "GPU indices"
                )
        self.placed = (js, sizes, arr)
        return new_key, dict(new_key), record

    def _tuples(self, vals: list, js: np.ndarray) -> list[tuple]:
        """Each job's GPUs (a tuple, a list, a range or a 1-D array) as a tuple of Python ints, or
        the error naming the first job whose GPUs are not integers."""
        out = []
        for k, v in enumerate(vals):
            if isinstance(v, np.ndarray) and v.ndim == 1:
                v = v.tolist()
            if not isinstance(v, (tuple, list, range)):
                raise self._policy_error(
                    f"gave {self.job(js[k])} {_what(v)}: expected a tuple of GPU indices"
                )
            self._indices(list(v), js[k : k + 1], np.array([len(v)]))
            out.append(tuple(int(g) for g in v))
        return out

    def _indices(self, flat: list, js: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """``flat`` as int64 if every entry is an integer (numpy or not) that int64 holds, else the
        error naming the first other one."""
        ends = np.cumsum(sizes)
        for k, g in enumerate(flat):
            if not _is_index_type(type(g)) or not -(2**63) <= g < 2**63:
                job = self.job(js[np.searchsorted(ends, k, side="right")])
                if _is_index_type(type(g)):
                    rule = f"outside the cluster's GPUs 0..{self.G - 1}"
                else:
                    rule = f"expected GPU indices (ints in 0..{self.G - 1})"
                    rule += ", not GPU ids" if isinstance(g, str) else ""
                raise self._policy_error(f"gave {job} GPU {g!r}: {rule}")
        return np.array(flat, np.int64)

    def _gpus(self, flat: np.ndarray, js: np.ndarray, sizes: np.ndarray, error) -> None:
        """GPU indices (int64) in 0..G-1, none given twice (``flat``: every job's GPUs, job after
        job; ``sizes``: how many each of ``js`` has)."""
        G = self.G
        if not flat.size:
            return
        if np.count_nonzero(flat.view(np.uint64) >= G):  # (negatives: >= 2**63 unsigned)
            owner = np.repeat(js, sizes)
            k = int(np.flatnonzero((flat < 0) | (flat >= G))[0])
            raise error(
                f"gave {self.job(owner[k])} GPU {flat[k]}, outside the cluster's GPUs 0..{G - 1}"
            )
        used = np.zeros(G, bool)
        used[flat] = True
        if np.count_nonzero(used) != flat.size:
            owner = np.repeat(js, sizes)
            o = np.argsort(flat, kind="stable")
            k = int(np.flatnonzero(np.diff(flat[o]) == 0)[0])
            a, b = int(owner[o[k]]), int(owner[o[k + 1]])
            g = int(flat[o[k]])
            if a == b:
                raise error(f"gave {self.job(a)} GPU {g} twice")
            raise error(f"gave GPU {g} to jobs {self.ids[a]} and {self.ids[b]}")


_NONE = object()  # no such id


def _known(i, pos: dict) -> bool:
    try:
        return i in pos
    except TypeError:  # unhashable
        return False
