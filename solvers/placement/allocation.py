"""A round's allocation as arrays, read as the mapping job id -> sorted GPU tuple (:class:`Allocation`).

The compiled kernel (:mod:`.round_kernel`) writes a round's picks into three int64 arrays: ``pos``, the
processing position of each job placed (ascending), ``ends``, the GPUs placed up to and including
it, and ``flat``, every job's GPUs (sorted within a job). :class:`Allocation` is the read-only
mapping ``{ids[pos[i]]: tuple(flat[ends[i-1]:ends[i]])}`` over them, in that order (the order of the
decisions), whose dict is built on first use (one compiled pass): a caller that reads only its size
or its arrays (a benchmark, the simulator's checks) never pays for thousands of tuples.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np

from . import round_kernel


class Allocation(Mapping):
    """Job id -> sorted tuple of GPU indices, read only, from the round's arrays: ``ids`` (a tuple:
    the job ids by processing position), ``pos``, ``ends``, ``flat`` (int64, module docstring) and
    ``tuples`` = ((0, .., G-1), ((0,), .., (G-1,))) the tuples are built from. Equal to a dict with
    the same items."""

    __slots__ = ("ids", "pos", "ends", "flat", "_tuples", "_dict", "_keys")

    def __init__(self, ids: tuple, pos, ends, flat, tuples) -> None:
        self.ids, self._tuples = ids, tuples
        self.pos, self.ends, self.flat = pos, ends, flat
        self._dict: dict[str, tuple[int, ...]] | None = None
        self._keys: tuple | None = None

    @property
    def dict(self) -> dict[str, tuple[int, ...]]:
        """The mapping as a dict (built once; read it, never change it)."""
        d = self._dict
        if d is None:
            d = self._dict = round_kernel.build(
                self.ids, self.pos, self.ends, self.flat, *self._tuples
            )
        return d

    def sizes(self) -> np.ndarray:
        """GPUs per job, in order (int64)."""
        return np.diff(self.ends, prepend=0)

    def job_ids(self) -> tuple:
        """The job ids, in order (a tuple; no dict built)."""
        if self._keys is None:
            self._keys = round_kernel.gather(self.ids, self.pos)
        return self._keys

    def __getitem__(self, key) -> tuple[int, ...]:
        return self.dict[key]

    def __iter__(self) -> Iterator:
        return iter(self._dict if self._dict is not None else self.job_ids())

    def __len__(self) -> int:
        return self.pos.size

    def __contains__(self, key) -> bool:
        return key in self.dict

    def get(self, key, default=None):
        return self.dict.get(key, default)

    def keys(self):
        return self.dict.keys()

    def values(self):
        return self.dict.values()

    def items(self):
        return self.dict.items()

    def __eq__(self, other) -> bool:
        if isinstance(other, Allocation):
            other = other.dict
        elif isinstance(other, Mapping) and not isinstance(other, dict):
            other = dict(other.items())
        elif not isinstance(other, dict):
            return NotImplemented
        return self.dict == other

    __hash__ = None  # type: ignore[assignment]  # a mapping: unhashable, as a dict

    def __repr__(self) -> str:
        return f"Allocation({self.dict!r})"

    def __reduce__(self):  # pickled as its dict (the arrays' tuples are the cache's)
        return (dict, (self.dict,))


def of_dict(alloc: Mapping, ids: tuple, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pos, ends, flat) of the jobs of ``ids[:n]`` that ``alloc`` places (a previous decision's
    allocation, a plain mapping), in that order."""
    pos, gpus = [], []
    for k, j in enumerate(ids[:n]):
        g = alloc.get(j)
        if g is not None:
            pos.append(k)
            gpus.append(g)
    sizes = np.fromiter(map(len, gpus), np.int64, len(gpus))
    flat = np.fromiter((x for g in gpus for x in g), np.int64, int(sizes.sum()))
    return np.asarray(pos, np.int64), np.cumsum(sizes), flat
