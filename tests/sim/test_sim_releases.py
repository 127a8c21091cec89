"""The releases to come (:class:`fairplace.sim.run_state.Releases`) pop as a heap of (release, job)
would: the trace's own releases and the phases released during the run, ties by job index."""

from __future__ import annotations

import heapq
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.sim.run_state import Releases

_times = st.sampled_from([0.0, 1.0, 2.5, 3.0, 7.0, math.inf])


@settings(max_examples=80, deadline=None)
@given(
    st.lists(_times, max_size=12),
    st.lists(st.tuples(st.sampled_from([0.5, 2.5, 3.0, 9.0]), st.integers(0, 40)), max_size=6),
    st.lists(st.sampled_from([0.0, 1.0, 2.5, 3.0, 5.0, 8.0, 10.0]), min_size=1, max_size=6),
)
def test_releases_pop_as_the_heap_of_release_and_job(release, pushed, clock):
    rel = Releases(np.array(release, float))
    heap = [(r, j) for j, r in enumerate(release) if r < math.inf]
    heapq.heapify(heap)
    pushes = iter(pushed)
    for t in sorted(clock):
        push = next(pushes, None)
        if push is not None:
            rel.push(*push)
            heapq.heappush(heap, push)
        ahead = sorted(x for x in heap if x[0] < t + 1.0)
        at, jobs = rel.before(t + 1.0)  # read, not removed
        assert list(zip(at.tolist(), jobs.tolist(), strict=True)) == ahead
        assert rel.next() == (heap[0][0] if heap else math.inf)
        want = []
        while heap and heap[0][0] <= t:
            want.append(heapq.heappop(heap)[1])
        assert rel.pop_due(t).tolist() == want
        assert len(rel) == len(heap)
