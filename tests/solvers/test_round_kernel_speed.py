"""The round kernel's cheaper paths give the same answers: scores compared as strided columns
(:func:`.round_kernel.same_array`), and PAL's lazily refreshed trees (n = P, the artifact's ties)
on a cluster large enough that they are queried many times with stale leaves."""

from __future__ import annotations

import os

import numpy as np
import pytest

from fairplace.solvers.placement import round_kernel
from fairplace.solvers.placement.policies import ClusterState, make_policy

needs_kernel = pytest.mark.skipif(
    not round_kernel.available() and not os.environ.get("CI"),
    reason="the compiled round kernel is not built",
)


def test_same_array_reads_strided_columns():
    table = np.array([[1.0, 5.0], [2.0, 6.0], [np.nan, 7.0]])
    kept = np.ascontiguousarray(table[:, 0])
    assert round_kernel.same_array(kept, table[:, 0])  # a column: strided, the same bytes
    assert not round_kernel.same_array(kept, table[:, 1])
    assert not round_kernel.same_array(kept, table[::-1, 0])  # negative strides, other order
    assert round_kernel.same_array(kept[::-1].copy(), table[::-1, 0])
    assert not round_kernel.same_array(kept, table[:2, 0])  # another shape
    assert round_kernel.same_array(np.zeros((2, 2)), np.zeros((2, 2)))  # 2-D: contiguous ones


@needs_kernel
@pytest.mark.parametrize("ties", ["fewest-machines", "artifact"])
def test_lazy_trees_equal_python_path(monkeypatch, ties):
    """Jobs of 2..P GPUs between runs of single-GPU jobs: every tree is asked with many machines
    taken since its last query."""
    from fairplace.benchmarks.placement import _state, philly_queue

    state = _state(256, "synthetic")
    rng = np.random.default_rng(3)
    queue = philly_queue(len(state.cluster), seed=3, load=2.0)
    queue = [j for j in queue if j.gpus <= 4]
    rng.shuffle(queue)
    pol = make_policy("pal", ties=ties, backfill=True)
    got = {}
    for path in ("python", "c"):
        monkeypatch.setenv(round_kernel.ENV, path)
        d = pol.place(ClusterState(state.cluster, state.scores, {}), queue)
        assert d.kernel == path
        got[path] = list(d.allocation.items())
    assert got["python"] == got["c"]


def test_cache_compares_a_shared_table_of_scores():
    """Scores that are the columns of one table are compared through the table: a change in
    place (or another column) gives new sorted orders, the same bytes the same dict."""
    from fairplace.core.domain import GPU, Cluster
    from fairplace.solvers.placement.cache import PlacementCache

    cl = Cluster(tuple(GPU(f"g{g}", f"m{g // 2}", pm={"A": 1.0}) for g in range(8)))
    table = np.arange(24, dtype=float).reshape(8, 3)
    cache = PlacementCache()
    scores = {"A": table[:, 0], "B": table[:, 1]}
    first = cache.sorted_for(cl, scores)
    first["A"] = "sorted"
    assert cache.sorted_for(cl, {"A": table[:, 0], "B": table[:, 1]}) is first  # new views
    table[3, 2] = -1.0  # not a score column, but in the table: compared as a whole
    assert cache.sorted_for(cl, scores) is not first
    kept = cache.sorted_for(cl, scores)
    table[5, 1] = 99.0
    assert cache.sorted_for(cl, scores) is not kept
    kept = cache.sorted_for(cl, scores)
    assert cache.sorted_for(cl, {"A": table[:, 1], "B": table[:, 0]}) is not kept  # swapped
    kept = cache.sorted_for(cl, {"A": table[:, 0].copy(), "B": table[:, 1].copy()})
    assert cache.sorted_for(cl, {"A": table[:, 0].copy(), "B": table[:, 1].copy()}) is kept
    assert cache.sorted_for(cl, scores) is not kept  # (from copies back to the table: rebuilt)
    assert cache.sorted_for(cl, {"A": table[::2, 0], "B": table[1::2, 0]}) is not None
