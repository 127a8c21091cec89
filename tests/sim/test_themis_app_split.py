"""THEMIS' restart-aware app scheduler (``app_split="restart-aware"``, the default): a lease
renewal at the same GPUs moves no job, won GPUs go to waiting jobs first, a running job grows only
when the time it saves exceeds checkpoint + restart, an app that loses GPUs sheds whole jobs; the even
split (``app_split="even"``) stays as the control and restarts jobs more often."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairplace
from fairplace.core.errors import OptionError
from fairplace.instances.workloads import themis_workload
from fairplace.sim.running import HeldGPUs
from fairplace.sim.themis.apps import AppScheduler

MACHINE_OF = np.arange(16) // 4  # 4 machines of 4 GPUs
COST = 45.0  # the driver's default checkpoint + restart


def _split(held, gpus, demand, work, attained=None, how="restart-aware", cost=COST):
    """One app holding ``gpus`` (all its jobs 0..J-1 running its phase, t_iter = 1 s): {job: GPUs}.
    ``held``: {job: GPUs it holds now}; ``work``: iterations left per job (serial W = work x N_j)."""
    J = len(demand)
    view = SimpleNamespace(
        remaining=np.asarray(work, float),
        attained=np.asarray(attained if attained is not None else [0.0] * J, float),
    )
    w = SimpleNamespace(t_iter=np.ones(J), demand=np.asarray(demand, np.int64))
    owner = np.full(16, -1, np.int64)
    owner[list(gpus)] = 0
    arrays = {}
    for j, g in held.items():
        a = np.asarray(sorted(g), np.int64)
        a.flags.writeable = False
        arrays[j] = a
    sched = AppScheduler(MACHINE_OF, how, cost)
    out = sched.split(owner, view, w, HeldGPUs(arrays), {0: np.arange(J, dtype=np.int64)})
    return {j: a.tolist() for j, a in out.items()}


def test_a_lease_renewal_at_the_same_gpus_moves_no_job():
    """Two 4-GPU jobs holding 3 + 1 of the app's 4 GPUs: renewed, both stay where they are (the even
    split re-targets them to 2 + 2: two restarts)."""
    held = {0: [0, 1, 2], 1: [3]}
    assert _split(held, range(4), [4, 4], [1e4, 1e4]) == held
    assert _split(held, range(4), [4, 4], [1e4, 1e4], how="even") == {0: [0, 1], 1: [2, 3]}


def test_a_short_job_near_its_end_is_never_grown_while_a_long_one_is():
    """Both 4-GPU jobs hold 2 and the app holds 4 spare GPUs. Growing 2 -> 4 saves W/2 - W/4 = W/4:
    the short job (W = 100 s: saves 25 s < 45 s) stays, the long one (W = 40,000 s) grows, on its
    own machine first."""
    gpus = [0, 1, 2, 3, 4, 5, 6, 7]
    held = {0: [0, 1], 1: [4, 5]}
    out = _split(held, gpus, [4, 4], [25.0, 1e4])
    assert out == {0: [0, 1], 1: [4, 5, 6, 7]}
    alone = _split({0: [0, 1]}, gpus, [4], [25.0])  # spare GPUs do not change it
    assert alone == {0: [0, 1]}
    assert _split({0: [0, 1]}, gpus, [4], [25.0], cost=0.0) == {0: [0, 1, 2, 3]}  # moves free
    assert _split({0: [0, 1]}, gpus, [4], [1e4]) == {0: [0, 1, 2, 3]}


def test_waiting_jobs_get_new_gpus_before_running_jobs_grow():
    """The app wins 2 GPUs: its waiting 2-GPU job gets both, its running job (half its demand,
    plenty of work left: growing would pay) keeps its 2."""
    out = _split({0: [0, 1]}, [0, 1, 4, 5], [4, 2], [1e5, 10.0])
    assert out == {0: [0, 1], 1: [4, 5]}
    even = _split({0: [0, 1]}, [0, 1, 4, 5], [4, 2], [1e5, 10.0], how="even")
    assert even == {0: [0, 1], 1: [4, 5]}  # the same here (2 + 2)
    more = _split({0: [0, 1]}, [0, 1, 2, 3, 4, 5, 6, 7], [4, 2], [1e5, 10.0])
    assert len(more[1]) == 2 and more[0][:2] == [0, 1] and len(more[0]) == 4  # then it grows


def test_shrinking_sheds_whole_jobs():
    """The app loses GPUs 3 and 7 with a lease (jobs 1 and 2 hit): job 0 keeps exactly its GPUs, the
    hit job with most attained service is restored whole, the other stops (the even split shrinks
    every job to 2)."""
    held = {0: [0, 1], 1: [2, 3], 2: [4, 5, 6, 7]}
    now = [0, 1, 2, 4, 5, 6]
    out = _split(held, now, [2, 2, 4], [1e4] * 3, attained=[0.0, 10.0, 500.0])
    assert out[0] == [0, 1] and 1 not in out and sorted(out[2]) == [2, 4, 5, 6]
    even = _split(held, now, [2, 2, 4], [1e4] * 3, attained=[0.0, 10.0, 500.0], how="even")
    assert sorted(len(g) for g in even.values()) == [2, 2, 2]
    # job 1 has more at stake: it comes back whole (its GPU 2 and one more); job 2 cannot, and
    # only it takes what no whole job can (2 of its 4)
    out = _split(held, now, [2, 2, 4], [1e4] * 3, attained=[0.0, 500.0, 10.0])
    assert out[0] == [0, 1] and len(out[1]) == 2 and 2 in out[1] and len(out[2]) == 2
    assert sorted(g for gs in out.values() for g in gs) == now


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_no_gpu_given_twice_no_job_over_its_demand(data):
    n_jobs = data.draw(st.integers(1, 6))
    demand = data.draw(st.lists(st.integers(1, 4), min_size=n_jobs, max_size=n_jobs))
    gpus = sorted(data.draw(st.sets(st.integers(0, 15), min_size=1, max_size=12)))
    pool, held = data.draw(st.permutations(list(range(16)))), {}
    for j in range(n_jobs):  # what each job held: some of the app's GPUs, some it lost
        k = data.draw(st.integers(0, demand[j]))
        held[j], pool = sorted(pool[:k]), pool[k:]
    held = {j: g for j, g in held.items() if g}
    work = data.draw(st.lists(st.sampled_from([1.0, 30.0, 1e3, 1e5]), min_size=n_jobs,
                              max_size=n_jobs))  # fmt: skip
    attained = data.draw(st.lists(st.floats(0, 1e4), min_size=n_jobs, max_size=n_jobs))
    cost = data.draw(st.sampled_from([0.0, COST, 1e12]))
    out = _split(held, gpus, demand, work, attained, cost=cost)
    given_ = [g for gs in out.values() for g in gs]
    assert len(given_) == len(set(given_)) and set(given_) <= set(gpus)  # none twice, all the app's
    assert all(1 <= len(gs) <= demand[j] for j, gs in out.items())
    for j, gs in held.items():
        if set(gs) <= set(gpus):  # rule 1: a job the app still holds all the GPUs of stays
            assert set(gs) <= set(out[j])
            if cost == 1e12:  # a move that never pays: it keeps exactly its GPUs
                assert out[j] == gs
    if any(j not in out for j in range(n_jobs)):  # a job waits only when no GPU is left
        assert len(given_) == len(gpus)


def _frame(jobs, gpus):
    """Single-phase 1-app jobs (num_gpus, iterations at 1 s each), all at 0, on ``gpus`` GPUs."""
    f = pd.DataFrame(
        [
            {"job_id": f"j{k}", "num_gpus": d, "submit_time": 0.0, "duration": float(it),
             "model": "m", "app_id": "a0", "phase": 0, "t_iter": 1.0, "cls": "A",
             "locality": 1.1, "locality_rack": 1.1, "category": "cv"}
            for k, (d, it) in enumerate(jobs)
        ]
    )  # fmt: skip
    f.attrs.update(gpus=gpus, profile="uniform")
    return f


def test_waiting_jobs_start_together_and_grow_when_moves_are_free():
    """Three 2-GPU jobs on 4 GPUs, moves free: both splits start 2 + 1 + 1 (rule 2 water-fills the
    waiting jobs: a phase starts together, not in waves of whole jobs) and grow the two halves when
    the whole job ends (rule 3: any saving beats a free move), so both reach rho 1; nothing is
    preempted."""
    kw = dict(progress=False, restart=0.0, checkpoint=0.0)
    ra = fairplace.simulate(_frame([(2, 3600)] * 3, 4), "themis", "packed-sticky", **kw)
    ev = fairplace.simulate(
        _frame([(2, 3600)] * 3, 4), "themis", "packed-sticky", **kw,
        scheduler_options={"app_split": "even"},
    )  # fmt: skip
    assert ra.jobs["preemptions"].sum() == 0 and ra.jobs["migrations"].sum() > 0
    assert ra.summary["max_rho"] == pytest.approx(1.0, rel=1e-9)
    assert ev.summary["max_rho"] == pytest.approx(1.0, rel=1e-9)


def test_the_move_cost_is_the_runs_checkpoint_plus_restart(monkeypatch):
    made = []
    real = AppScheduler.__init__

    def spy(self, *args, **kw):
        real(self, *args, **kw)
        made.append((self.app_split, self.move_cost))

    monkeypatch.setattr(AppScheduler, "__init__", spy)
    fairplace.simulate(
        _frame([(1, 60)], 4), "themis", "packed-sticky", progress=False, checkpoint=3.0,
        restart=4.5,
    )  # fmt: skip
    fairplace.simulate(
        _frame([(1, 60)], 4), "themis", "packed-sticky", progress=False,
        scheduler_options={"app_split": "even"},
    )  # fmt: skip
    assert made == [("restart-aware", 7.5), ("even", COST)]


def test_bad_app_split_names_its_field():
    with pytest.raises(OptionError, match="app_split"):
        fairplace.simulate(
            _frame([(1, 60)], 4), "themis", "packed-sticky", progress=False,
            scheduler_options={"app_split": "uneven"},
        )  # fmt: skip


@pytest.fixture(scope="module")
def small_runs():
    """8 apps of the small W2 variant on 32 GPUs (tests/sim/test_sim_themis.py's instance), both splits."""
    w = themis_workload(2, scale="small", n_apps=8, base_gpus=64, contention=2, seed=0)
    return {
        how: fairplace.simulate(
            w, "themis", "packed-sticky", progress=False, scheduler_options={"app_split": how}
        )
        for how in ("restart-aware", "even")
    }


def _restarts_per_job(res) -> float:
    j = res.jobs
    return float((j["preemptions"].sum() + j["migrations"].sum()) / len(j))


def test_restart_aware_preempts_and_migrates_less_than_the_even_split(small_runs):
    ra, ev = (_restarts_per_job(small_runs[h]) for h in ("restart-aware", "even"))
    assert ra < ev
    assert small_runs["restart-aware"].jobs["finish"].notna().all()


def test_no_free_gpu_while_a_job_waits(monkeypatch):
    """Work conservation with the restart-aware split: after every decision, a GPU no app holds or
    an app's GPU none of its jobs runs on means none of that app's (any app's, for free GPUs)
    running-phase jobs is waiting (a job below N_j may stay there: rule 3)."""
    from fairplace.sim.themis import Themis

    real, seen = Themis.allocate, []

    def spy(self, view, w, *args):
        out = real(self, view, w, *args)
        run = np.concatenate([np.zeros(0, np.int64), *self.splitter._last_running.values()])
        waiting = [j for j in run.tolist() if j not in out]
        used = {g for a in out.values() for g in a.tolist()}
        if (self.owner < 0).any():
            assert not waiting
        for a in np.unique(self.owner[self.owner >= 0]).tolist():
            mine = set(np.flatnonzero(self.owner == a).tolist())
            if mine - used:
                assert not [j for j in waiting if w.app[j] == a]
        seen.append(len(waiting))
        return out

    real_split = AppScheduler.split

    def keep(self, owner, view, w, alloc, running=None):
        self._last_running = running
        return real_split(self, owner, view, w, alloc, running)

    monkeypatch.setattr(Themis, "allocate", spy)
    monkeypatch.setattr(AppScheduler, "split", keep)
    w = themis_workload(2, scale="small", n_apps=8, base_gpus=64, contention=2, seed=1)
    fairplace.simulate(w, "themis", "packed-sticky", progress=False)
    assert len(seen) > 100 and max(seen) > 0  # decisions with jobs waiting, none beside a free GPU
