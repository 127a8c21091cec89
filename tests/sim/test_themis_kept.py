"""What THEMIS' agents and arbiter keep or compute in one pass per decision equals the per-app
reference it replaces, on random inputs: T_id's themis sum (``phases_ideal``), an app's held
bundle kept while its GPUs are the same (``Agents._bundle``), the lease delay in fewer NumPy calls
and the rho table at one level V = 1."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.core.domain import GPU, Cluster, spread
from fairplace.formulations.ftf import ideal_time
from fairplace.formulations.ftf_counts import rho_of_times
from fairplace.formulations.valuation import lease_delay
from fairplace.sim.themis.agents import Agents, phases_ideal
from fairplace.sim.themis.apps import StepAverage


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.floats(1e-3, 1e7), st.integers(1, 64)), min_size=1, max_size=8),
    st.integers(1, 512),
    st.floats(0.0, 300.0),
)
def test_phases_ideal_is_ideal_time_bitwise(phases, r_c, n_avg):
    got = phases_ideal(phases, r_c, n_avg)
    assert got == ideal_time("themis", 1.0, 0.0, 1, r_c, n_avg, tuple(phases))


def _cluster(machines: int, per_machine: int, racks: int, seed: int) -> Cluster:
    rng = np.random.default_rng(seed)
    return Cluster(
        tuple(
            GPU(f"m{m}/{g}", f"m{m}", f"r{m % racks}", {"a": float(rng.choice([0.9, 1.0, 1.4]))})
            for m in range(machines)
            for g in range(per_machine)
        )
    )


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10_000), st.lists(st.integers(1, 12), min_size=1, max_size=12))
def test_kept_bundles_equal_spread_and_max_score(seed, sizes):
    """Each app's (n, spread, max V) of the GPUs it held, kept while they stay the same, equals
    ``spread`` and the max PM-score read afresh, whatever sets come in turn."""
    cluster = _cluster(6, 4, 2, seed)
    agents = Agents("themis", StepAverage())
    rng = np.random.default_rng(seed)
    last: dict = {}
    for k, n in enumerate(sizes):
        a = int(rng.integers(0, 3))
        if a in last and rng.random() < 0.5:  # the same GPUs again (the kept entry)
            had = last[a]
        else:
            had = np.sort(rng.choice(len(cluster), size=n, replace=False)).astype(np.int64)
        last[a] = had
        cls = "a" if a % 2 else None  # an app's class is fixed
        want = (
            len(had),
            spread(cluster.machine_index, cluster.rack_index, had),
            float(cluster.pm_vector(cls)[had].max()),
        )
        got = agents._bundle(a, had.copy(), cluster, cls)
        assert got == want and type(got[2]) is float, k


def _lease_delay_reference(rho, elapsed, t_id, lease, t_fair):
    """The D(G) of every entry as first written (``np.divide`` where T(G) > L)."""
    t = np.maximum(np.asarray(rho, dtype=float) * t_id - elapsed, 0.0)
    within = t <= lease
    frac = np.divide(lease, t, out=np.ones_like(t), where=~within)
    return np.where(within, t, lease + (1.0 - frac) * t_fair)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(st.floats(0.0, 1e4), st.just(math.inf)), min_size=1, max_size=30),
    st.floats(0.0, 1e5),
    st.floats(1.0, 1e5),
    st.floats(1.0, 3600.0),
    st.floats(0.0, 1e5),
)
def test_lease_delay_equals_the_reference_bitwise(rho, e, t_id, lease, t_f):
    got = lease_delay(np.asarray(rho), e, t_id, lease, t_f)
    np.testing.assert_array_equal(got, _lease_delay_reference(np.asarray(rho), e, t_id, lease, t_f))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(st.floats(0.0, 1e6), st.just(math.inf)), min_size=3, max_size=30),
    st.floats(0.0, 1e5),
    st.floats(1e-3, 1e6),
)
def test_rho_of_times_at_one_level_is_the_broadcast(values, e, ideal):
    """At the one level V = 1 the table is (e + (T - e)) / T_id: the broadcast's 1 x (T - e)
    changes no bit."""
    n = len(values) // 3
    x = np.asarray(values[: 3 * n], float).reshape(3, n)
    x[:, : n // 2] = np.maximum(x[:, : n // 2], x[0, : n // 2])  # some spreads tied
    got = rho_of_times(e, x.copy(), ideal, np.ones(1))
    y = x.copy()
    y[1] = np.where(y[0] == y[2], y[0], y[1])
    want = (e + np.ones(1)[None, None, :] * (y.T - e)[:, :, None]) / ideal
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
