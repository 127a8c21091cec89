"""A round's allocation over its arrays (:class:`fairplace.solvers.placement.allocation.Allocation`):
the mapping job id -> sorted GPU tuple that a dict gives (items, order, equality, lookups), built
lazily, and resuming a kernel round from a Python round's dict and back (the same decisions)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from fairplace.core.domain import GPU, Cluster, Job
from fairplace.solvers.placement import round_kernel
from fairplace.solvers.placement.allocation import Allocation, of_dict
from fairplace.solvers.placement.cache import PlacementCache
from fairplace.solvers.placement.policies import ClusterState, make_policy

IDS = ("a", "b", "c", "d", "e")
TUPLES = (tuple(range(8)), tuple((g,) for g in range(8)))


def _alloc() -> Allocation:
    # a (pos 0): GPUs 1, 2; c (pos 2): GPU 5; e (pos 4): GPUs 0, 3, 7
    pos, ends = np.array([0, 2, 4]), np.array([2, 3, 6])
    return Allocation(IDS, pos, ends, np.array([1, 2, 5, 0, 3, 7]), TUPLES)


@pytest.mark.parametrize("built", [True, False])
def test_allocation_reads_as_its_dict(built, monkeypatch):
    if not built:  # the Python definition of the compiled build
        monkeypatch.setattr(round_kernel, "_ext", None)
    want = {"a": (1, 2), "c": (5,), "e": (0, 3, 7)}
    a = _alloc()
    assert len(a) == 3 and list(a) == ["a", "c", "e"]  # no dict built for these
    assert a._dict is None
    assert a == want and want == a and a != {"a": (1, 2)} and a == _alloc()
    assert list(a.items()) == list(want.items()) and list(a.values()) == list(want.values())
    assert a["c"] == (5,) and a.get("b") is None and "e" in a and "b" not in a
    assert a.sizes().tolist() == [2, 1, 3] and a.job_ids() == ("a", "c", "e")
    assert dict(a) == want and pickle.loads(pickle.dumps(a)) == want
    with pytest.raises(KeyError):
        a["b"]
    with pytest.raises(TypeError):
        a["b"] = (4,)  # type: ignore[index]  # read only
    with pytest.raises(TypeError):
        hash(a)


def test_of_dict_gives_the_arrays_of_a_prefix():
    pos, ends, flat = of_dict({"e": (0, 3, 7), "a": (1, 2), "c": (5,)}, IDS, 3)
    assert pos.tolist() == [0, 2] and ends.tolist() == [2, 3] and flat.tolist() == [1, 2, 5]


@pytest.mark.skipif(not round_kernel.available(), reason="the compiled round kernel is not built")
def test_resuming_across_paths_gives_the_same_decisions(monkeypatch):
    """A kernel round resumed from a Python round's dict, and a Python round resumed from a
    kernel round's arrays: the decisions of resuming on the same path."""
    cl = Cluster([GPU(f"m{g // 4}-{g % 4}", f"m{g // 4}") for g in range(32)])
    rng = np.random.default_rng(3)
    scores = {c: rng.choice([1.0, 1.1, 1.3], 32) for c in "AB"}
    jobs = [
        Job(f"j{k}", int(rng.choice([1, 1, 2, 3, 4, 6])), str(rng.choice(["A", "B"])))
        for k in range(30)
    ]
    later = jobs[:9] + [Job("new", 2, "A")] + jobs[9:]
    pol = make_policy("pal", backfill=True)
    state = ClusterState(cl, scores, {}, 0, PlacementCache())

    def place(path, queue, previous=None):
        monkeypatch.setenv(round_kernel.ENV, path)
        d = pol.place(state, queue, previous=previous)
        assert d.kernel == path
        return d

    py, c = place("python", jobs), place("c", jobs)
    assert isinstance(c.allocation, Allocation) and c.allocation == py.allocation
    for first, second in (("python", "c"), ("c", "python")):
        prev = py if first == "python" else c
        got = place(second, later, prev)
        want = place(first, later, prev)
        assert list(got.allocation.items()) == list(want.allocation.items())
        assert got.trail[:3] == want.trail[:3]
