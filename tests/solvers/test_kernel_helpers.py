"""The compiled kernel's one-pass helpers (``flatten``, ``rekey``, ``int_lists_json``, ``differs`` of
:mod:`fairplace.solvers.placement.round_kernel`) against their Python definitions, and None where
they do not apply (the caller's own checks then run)."""

from __future__ import annotations

import json
from itertools import chain
from types import MappingProxyType

import numpy as np
import pytest

from fairplace.solvers.placement import round_kernel

pytestmark = pytest.mark.skipif(
    not hasattr(round_kernel._ext, "differs"), reason="kernel helpers not built"
)


def _lists(rng, n):
    sizes = rng.integers(0, 5, n)
    flat = rng.integers(0, 10 ** int(rng.integers(1, 12)), int(sizes.sum()))
    ends = np.cumsum(sizes)
    return [tuple(flat[e - s : e].tolist()) for s, e in zip(sizes, ends, strict=True)]


def test_flatten_is_chain_and_lengths():
    rng = np.random.default_rng(0)
    for _ in range(200):
        vals = _lists(rng, int(rng.integers(0, 30)))
        flat, sizes = round_kernel.flatten(vals)
        assert flat.dtype == sizes.dtype == np.int64
        assert flat.tolist() == list(chain.from_iterable(vals))
        assert sizes.tolist() == [len(v) for v in vals]


@pytest.mark.parametrize(
    "vals", [[(1, 2.0)], [[1, 2]], [(True,)], [(2**70,)], [(np.int64(3),)], [(1,), "ab"]]
)
def test_flatten_declines_anything_but_tuples_of_ints(vals):
    assert round_kernel.flatten(vals) is None


def test_rekey_is_the_dict_keyed_by_the_table():
    table = {f"j{k}": k for k in range(50)}
    d = {f"j{k}": (k,) for k in (7, 3, 41, 0)}
    out, idx = round_kernel.rekey(d, table)
    assert out == {table[k]: v for k, v in d.items()} and list(out) == [7, 3, 41, 0]
    assert idx.tolist() == [7, 3, 41, 0]
    assert round_kernel.rekey({"x": (1,)}, table) is None  # not in the table
    assert round_kernel.rekey(MappingProxyType(d), table) is None  # not a dict
    assert round_kernel.rekey({"j1": 1}, {"j1": 1.0}) is None  # not an int


def test_differs_is_ne_per_item():
    rng = np.random.default_rng(2)
    for _ in range(100):
        old = {int(k): tuple(rng.integers(0, 4, 2).tolist()) for k in rng.integers(0, 30, 20)}
        new = {int(k): tuple(rng.integers(0, 4, 2).tolist()) for k in rng.integers(0, 30, 20)}
        new.update({k: old[k] for k in list(old)[:5]})  # the same objects too
        want = [k not in old or v != old[k] for k, v in new.items()]
        assert round_kernel.differs(new, old).tolist() == want


def test_int_lists_json_is_json_dumps():
    rng = np.random.default_rng(1)
    for _ in range(300):
        n = int(rng.integers(0, 20))
        vals = _lists(rng, n)
        keys = [f"job {k}" for k in range(n)]
        want = json.dumps(dict(zip(keys, map(list, vals), strict=True)), separators=(",", ":"))
        heads = ["," + json.dumps(k) + ":[" for k in keys]
        flat = np.array(list(chain.from_iterable(vals)), np.int64)
        sizes = np.array([len(v) for v in vals], np.int64)
        assert round_kernel.int_lists_json(heads, flat, sizes) == want
    assert round_kernel.int_lists_json([',"é":['], np.array([1]), np.array([1])) is None
    assert round_kernel.int_lists_json([',"a":['], np.array([-1]), np.array([1])) is None
    assert round_kernel.int_lists_json([',"a":['], np.array([1, 2]), np.array([1])) is None
