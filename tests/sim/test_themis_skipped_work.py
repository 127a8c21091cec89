"""Work the THEMIS round skips when its result is not read gives what doing it would give: the
filter's seeded draw (made only when two apps tie on (rho, share)), the lottery's generator (made at
its first uncertain draw, after the draws it skipped), and the app scheduler's arrays (a job left on
exactly its GPUs keeps the array it holds). Each is held to the literal rule."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.core.domain import AgentApp, AgentJob
from fairplace.formulations.pa import round_shares
from fairplace.instances.generators import grid_cluster
from fairplace.sim.running import HeldGPUs
from fairplace.sim.themis.apps import AppScheduler
from fairplace.sim.themis.arbiter import Arbiter
from fairplace.sim.themis.outcome import AppState

CL = grid_cluster(4, 4, 2)


def _literal_filter(arb: Arbiter, states, seed: int, n_active: int):
    """Steps 1-2 with the seeded draw always made (the rule as first written)."""
    now = [arb._rho_now(CL, s) for s in states]
    share = [
        arb._rho_share(CL, s, n_active) if now.count(now[i]) > 1 else 0.0
        for i, s in enumerate(states)
    ]
    draw = np.random.default_rng([seed, 1]).random(len(states))
    order = sorted(range(len(states)), key=lambda i: (-now[i], -share[i], draw[i]))
    return [(states[i].app.id, now[i]) for i in order]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([None, 1.5, 2.0, 2.0, 3.25]),  # None: no GPU held (rho = inf)
            st.sampled_from([100.0, 100.0, 400.0]),  # equal works: equal share rho
        ),
        min_size=1,
        max_size=9,
    ),
    st.integers(0, 2**16),
    st.floats(0.0, 0.95),
)
def test_filter_ranks_as_with_every_draw(apps, seed, f):
    states = [
        AppState(
            AgentApp(
                f"A{k}",
                (AgentJob(work, 1.0, 1.0),),
                t_start=0.0,
                t_now=50.0,
                d_max=2,
                t_id={"n_avg": 3},
            ),  # fmt: skip
            held=(CL.gpus[k].id,) if rho is not None else (),
            rho=rho,
        )
        for k, (rho, work) in enumerate(apps)
    ]
    arb = Arbiter(f=f)
    ranking, part, rest = arb._filter(CL, states, seed, len(states))
    assert ranking == _literal_filter(arb, states, seed, len(states))
    k = arb.n_participants(len(states))
    assert [s.app.id for s in part] == [s.app.id for s in states if s.app.id in
                                        {a for a, _ in ranking[:k]}]  # fmt: skip
    assert len(part) + len(rest) == len(states)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 1.0, 1.0, 0.25, 0.5, 0.999, 1e-9]), min_size=1, max_size=8),
    st.integers(0, 2**32 - 1),
)
def test_lottery_draws_as_one_per_bundle(c, seed):
    bundles = {3 * k + 1: (f"g{k}",) for k in range(len(c))}  # sorted keys, not 0..n-1
    shares = dict(zip(bundles, c, strict=True))
    rng = np.random.default_rng(seed)  # the rule: one draw per bundle, in sorted app order
    want = {i: b for i, b in sorted(bundles.items()) if rng.random() < shares[i]}
    got = round_shares(bundles, shares, "lottery", seed, lambda i, b, cap: None)
    assert got == want


def _split(alloc, gpus, run, demand):
    J = max(run) + 1
    view = SimpleNamespace(remaining=np.arange(J, 0, -1, dtype=float))
    w = SimpleNamespace(t_iter=np.ones(J), demand=np.asarray(demand, np.int64))
    machine_of = np.arange(16) // 4
    return AppScheduler(machine_of)._split_app(
        np.asarray(gpus, np.int64), np.asarray(run, np.int64), view, w, alloc
    )


def _held(lists: dict) -> HeldGPUs:
    arrays = {}
    for j, g in lists.items():
        a = np.asarray(g, np.int64)
        a.flags.writeable = False  # as the split hands them to the driver
        arrays[j] = a
    return HeldGPUs(arrays)


def test_a_job_on_exactly_its_gpus_keeps_its_array():
    held = _held({0: [0, 1], 1: [4, 5]})
    out = _split(held, [0, 1, 4, 5, 6, 7], [0, 1], [2, 4])  # job 1 grows, job 0 stays
    assert out[0] is held.arrays[0]
    assert out[1] is not held.arrays[1] and out[1].tolist() == [4, 5, 6, 7]
    assert not out[1].flags.writeable
    plain = _split({0: [0, 1], 1: [4, 5]}, [0, 1, 4, 5, 6, 7], [0, 1], [2, 4])
    assert {j: a.tolist() for j, a in out.items()} == {j: a.tolist() for j, a in plain.items()}


def test_a_writable_or_unsorted_array_is_not_kept():
    arrays = {0: np.array([1, 0], np.int64), 1: np.array([4, 5], np.int64)}
    arrays[0].flags.writeable = False  # read-only but not sorted
    held = HeldGPUs(arrays)  # job 1's array is writable: the driver did not get it from a split
    out = _split(held, [0, 1, 4, 5], [0, 1], [2, 2])
    assert out[0] is not arrays[0] and out[0].tolist() == [0, 1]
    assert out[1] is not arrays[1] and out[1].tolist() == [4, 5]
    assert not out[0].flags.writeable and not out[1].flags.writeable


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_split_with_kept_arrays_equals_the_split_of_lists(data):
    n_jobs = data.draw(st.integers(1, 5))
    demand = data.draw(st.lists(st.integers(1, 4), min_size=n_jobs, max_size=n_jobs))
    gpus = sorted(data.draw(st.sets(st.integers(0, 15), min_size=1, max_size=12)))
    pool, lists = list(gpus) + [g for g in range(16) if g not in gpus], {}
    for j in range(n_jobs):  # what each job held: some of the app's GPUs, some it lost
        k = data.draw(st.integers(0, demand[j]))
        lists[j], pool = sorted(pool[:k]), pool[k:]
        pool = data.draw(st.permutations(pool))
    lists = {j: g for j, g in lists.items() if g}
    held = _held(lists)
    out = _split(held, gpus, list(range(n_jobs)), demand)
    plain = _split(dict(lists), gpus, list(range(n_jobs)), demand)
    assert list(out) == list(plain)  # the same jobs, in the same order
    for j, a in out.items():
        assert a.tolist() == plain[j].tolist() and not a.flags.writeable
        if j in lists and lists[j] == a.tolist():
            assert a is held.arrays[j]


class _Enough(Exception):
    pass


def test_running_phase_works_kept_by_the_agents_are_the_jobs_works_sorted(monkeypatch):
    """The agents sort a running phase's works in NumPy for its optimiser (``keep_works``): the
    numbers ``phase_works`` would sort itself, bitwise (each a job's iters left x time per
    iteration), longest first."""
    from fairplace.instances.workloads import themis_workload
    from fairplace.sim import simulate
    from fairplace.sim.themis.agents import Agents

    real, checked = Agents.state, []

    def spy(self, a, *args, **kw):
        out = real(self, a, *args, **kw)
        app = out.app  # described when first read
        kept_jobs = self._jobs[a]  # the agent's record of the app's running jobs, by name
        assert kept_jobs.jobs == app.jobs and kept_jobs.d_max == app.d_max
        opt = kept_jobs.optimizer
        kept = opt.phase_memo.get(("works", getattr(opt, "current_phase", 0)))
        if kept is not None and len(opt.jobs) > 1:
            assert kept == sorted((j.work for j in opt.jobs), reverse=True)
            checked.append(len(kept))
        if len(checked) >= 400:
            raise _Enough
        return out

    monkeypatch.setattr(Agents, "state", spy)
    try:
        simulate(themis_workload(2, contention=2, seed=1, scale="small"), "themis", progress=False)
    except _Enough:
        pass
    assert len(checked) >= 400 and max(checked) > 8
