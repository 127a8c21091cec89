"""The decision contract (fairplace/sim/contract.py): every scheduler / placement decision is checked,
a broken rule raises ExtensionError naming the object and the rule, a simulation without progress
stops (SimulationStalled) instead of hanging; random valid decisions pass, and one broken rule in
an otherwise valid decision is always caught."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fairplace
from fairplace.core.errors import ExtensionError, OptionError, SimulationStalled
from fairplace.sim import DriverConfig
from fairplace.sim.contract import Contract
from fairplace.solvers.placement.policies import Decision

#: 6 jobs of 1-4 GPUs on 8 GPUs (2 machines x 4): a simulation takes milliseconds
TRACE = pd.DataFrame(
    {
        "job_id": [f"j{k}" for k in range(6)],
        "num_gpus": [1, 2, 4, 1, 2, 1],
        "submit_time": [0.0, 0.0, 100.0, 400.0, 900.0, 900.0],
        "duration": [3000, 2000, 1500, 4000, 1000, 2500],
        "model": ["resnet50", "bert", "vgg19", "resnet50", "bert", "vgg19"],
    }
)
SMALL = {"gpus": 8, "seed": 0, "progress": False}


def sim(scheduler="fifo", placement="pal", **kw):
    return fairplace.simulate(TRACE, scheduler, placement, **{**SMALL, **kw})


class LowestIndex:
    """A valid policy (docs/extending.md): lowest free indices, queue order, stop at a misfit."""

    name = "lowest-index"

    def place(self, state, queue):
        free = np.ones(len(state.cluster), dtype=bool)
        alloc = {}
        for job in queue:
            gpus = np.flatnonzero(free)[: job.gpus]
            if gpus.size < job.gpus:
                break
            free[gpus] = False
            alloc[job.id] = tuple(int(g) for g in gpus)
        return Decision(alloc, tuple(j for j in state.allocation if j not in alloc))


class Broken(LowestIndex):
    """LowestIndex with its decision passed through ``mutate(decision, state, queue)``."""

    def __init__(self, name, mutate):
        self.name, self.mutate = name, mutate

    def place(self, state, queue):
        return self.mutate(super().place(state, queue), state, queue)


class Fifo:
    name = "my-fifo"

    def order(self, view):
        idx = view.active
        return idx[np.lexsort((idx, view.arrival[idx]))]

    def next_change(self, view):
        return np.inf


class BadOrder(Fifo):
    def __init__(self, name, order):
        self.name, self._order = name, order

    def order(self, view):
        return self._order(view)


def same_gpus(dec, state, queue):  # the issue's reproducer: two jobs on GPUs 0..k
    return Decision({j.id: tuple(range(j.gpus)) for j in queue}, ())


REPRODUCERS = {  # name: (scheduler, policy, error, words the message must contain)
    "duplicate GPU": (
        "fifo",
        Broken("dup", same_gpus),
        ExtensionError,
        ["placement policy 'dup'", "gave GPU 0 to jobs j0 and j1"],
    ),
    "inactive job ordered": (
        BadOrder("all-jobs", lambda v: np.arange(len(v.arrival))),
        "pal",
        ExtensionError,
        ["scheduler 'all-jobs'", "which is not active"],
    ),
    "dict returned": (
        "fifo",
        Broken("dict", lambda d, s, q: dict(d.allocation)),
        ExtensionError,
        ["placement policy 'dict'", "returned dict", "expected a Decision"],
    ),
    "GPU ids instead of indices": (
        "fifo",
        Broken(
            "ids",
            lambda d, s, q: Decision(
                {j: tuple(s.cluster.gpus[g].id for g in gs) for j, gs in d.allocation.items()}, ()
            ),
        ),
        ExtensionError,
        ["placement policy 'ids'", "GPU 'm0/0'", "not GPU ids"],
    ),
    "float orders": (
        BadOrder("floats", lambda v: v.active.astype(float)),
        "pal",
        ExtensionError,
        ["scheduler 'floats'", "float64", "expected integer job indices"],
    ),
    "no progress": (
        "fifo",
        Broken("idle", lambda d, s, q: Decision({}, tuple(s.allocation))),
        SimulationStalled,
        ["placement policy 'idle'", "scheduler 'fifo'", "no job started, finished or advanced"],
    ),
}


@pytest.mark.parametrize("case", REPRODUCERS)
def test_issue_reproducers_give_the_named_error(case):
    scheduler, policy, error, words = REPRODUCERS[case]
    with pytest.raises(error) as info:
        sim(scheduler, policy)
    msg = str(info.value)
    assert all(w in msg for w in words), msg
    again = pickle.loads(pickle.dumps(info.value))  # crosses Dask workers in a sweep
    assert type(again) is error and str(again) == msg
    assert info.value.path == ("scheduler" if isinstance(scheduler, Fifo) else "placement")


def test_valid_user_objects_run_and_built_ins_pass_the_checks():
    res = sim(Fifo(), LowestIndex())
    assert np.isfinite(res.jobs["finish"]).all()
    for placement in ("pal", "pm-first", "packed-sticky", "random-non-sticky"):
        for scheduler in ("fifo", "las", "srtf", "themis", "optimus"):
            assert sim(scheduler, placement).summary["jobs"] == len(TRACE)


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (
            lambda d, s, q: Decision({**d.allocation, "nope": (7,)}, ()),
            "placed 'nope', which is not",
        ),
        (
            lambda d, s, q: Decision({k: (99,) * len(v) for k, v in d.allocation.items()}, ()),
            "outside the cluster's GPUs 0..7",
        ),
        (
            lambda d, s, q: Decision({k: v[:-1] for k, v in d.allocation.items()}, ()),
            "its demand is",
        ),
        (
            lambda d, s, q: Decision({k: v[::-1] for k, v in d.allocation.items()}, ()),
            "expected sorted, distinct GPU indices",
        ),
        (
            lambda d, s, q: Decision({k: (v[0],) * len(v) for k, v in d.allocation.items()}, ()),
            "twice",
        ),
        (
            lambda d, s, q: Decision(
                {k: tuple(g + 0.5 for g in v) for k, v in d.allocation.items()}, ()
            ),
            "GPU 0.5",
        ),
        (lambda d, s, q: Decision({k: 3 for k in d.allocation}, ()), "expected a tuple"),
        (lambda d, s, q: None, "returned NoneType"),
    ],
)
def test_each_placement_rule_is_named(mutate, words):
    with pytest.raises(ExtensionError, match="placement policy 'bad'") as info:
        sim("fifo", Broken("bad", mutate))
    assert words in str(info.value)


def test_lists_arrays_and_numpy_ints_are_accepted_as_the_same_decision():
    ref = sim("fifo", LowestIndex())
    for convert in (list, np.asarray, lambda g: tuple(np.int64(x) for x in g)):

        def mutate(d, s, q, convert=convert):
            return Decision({k: convert(v) for k, v in d.allocation.items()}, d.preempted)

        res = sim("fifo", Broken("converted", mutate))
        pd.testing.assert_frame_equal(res.jobs, ref.jobs)
        wall = ["place_seconds"]  # the policy's wall clock
        pd.testing.assert_frame_equal(res.rounds.drop(columns=wall), ref.rounds.drop(columns=wall))


def test_a_job_not_in_the_queue_is_named():
    class SkipFirst(Fifo):  # the scheduler withholds the first job; the policy places it anyway
        def order(self, view):
            return super().order(view)[1:]

    class PlaceAll(LowestIndex):
        def place(self, state, queue):
            return Decision({"j0": (0,)}, ())

    with pytest.raises(ExtensionError, match="placed job j0, which is not in its queue"):
        sim(SkipFirst(), PlaceAll())


@pytest.mark.parametrize(
    ("order", "words"),
    [
        (lambda v: np.concatenate([v.active, v.active[:1]]), "twice"),
        (lambda v: np.append(v.active, 10**6), "outside 0..5"),
        (lambda v: np.append(v.active, -1), "outside 0..5"),
        (lambda v: v.active.reshape(1, -1), "expected a 1-D array"),
        (lambda v: None, "expected a 1-D array"),
        (lambda v: v.active > 0, "bool"),
    ],
)
def test_each_order_rule_is_named(order, words):
    with pytest.raises(ExtensionError, match="scheduler 'bad'") as info:
        sim(BadOrder("bad", order), "pal")
    assert words in str(info.value)


def test_next_change_must_be_a_time():
    class NoTime(Fifo):
        def next_change(self, view):
            return None

    one = TRACE.iloc[:1].assign(duration=100_000)  # quiet rounds: the driver asks next_change
    with pytest.raises(ExtensionError, match=r"next_change\(view\) returned NoneType"):
        fairplace.simulate(one, NoTime(), "pal", **SMALL)


class Alloc:
    """An allocating scheduler: every active job gets its demand of the lowest free GPUs, if free;
    ``mutate`` breaks the result."""

    name, allocates = "my-alloc", True

    def __init__(self, mutate=lambda out, view: out, next_event=None):
        self.mutate = mutate
        if next_event is not None:
            self.next_event = next_event

    def allocate(self, view, w, cluster, scores, alloc, grid):
        free, out = np.ones(len(cluster), bool), {}
        for j in view.active.tolist():
            g = np.flatnonzero(free)[: w.demand[j]]
            if g.size == w.demand[j]:
                free[g] = False
                out[j] = g
        return self.mutate(out, view)

    def next_change(self, view):
        return np.inf


def test_allocating_schedulers_are_checked():
    assert sim(Alloc(), "pal").summary["jobs"] == len(TRACE)
    cases = [
        (lambda o, v: [o], "returned list"),
        (lambda o, v: {**o, 5: np.array([7])}, "not active"),
        (lambda o, v: {k: np.zeros(len(g), np.int64) for k, g in o.items()}, "GPU 0"),
        (lambda o, v: {k: g.astype(float) for k, g in o.items()}, "expected an array of GPU"),
        (lambda o, v: {f"j{k}": g for k, g in o.items()}, "expected job indices"),
        (lambda o, v: {k: g[:0] for k, g in o.items()}, "expected 1.."),
    ]
    for mutate, words in cases:
        with pytest.raises(ExtensionError, match="scheduler 'my-alloc'") as info:
            sim(Alloc(mutate), "pal")
        assert words in str(info.value) and info.value.path == "scheduler"
    with pytest.raises(ExtensionError, match=r"next_event\(t\) returned .* expected a time > t"):
        sim(Alloc(next_event=lambda t: t), "pal")


def test_read_only_arrays_seen_before_are_reused_and_still_checked():
    """An allocating scheduler that hands back the read-only array of the previous decision (THEMIS'
    app scheduler for an app that did not change) is converted once; a GPU given twice across
    reused arrays, an inactive job or a changed writeable array is still caught, also when the
    whole decision is the previous one again."""
    ck = Contract(
        [f"j{k}" for k in range(4)], np.array([2, 2, 2, 2]), 8, Alloc(), None, True, 3, 1.0
    )
    active = np.ones(4, bool)
    a, b = np.array([0, 1]), np.array([3, 2])
    for x in (a, b):
        x.flags.writeable = False
    first = ck.allocation({0: a, 1: b}, active)
    again = ck.allocation({0: a, 1: b}, active)
    assert again[1] == first[1] == {0: (0, 1), 1: (2, 3)}
    assert again[2] == first[2] == {"j0": [0, 1], "j1": [3, 2]}
    assert again[0][0] is a and again[2]["j0"] is first[2]["j0"]  # reused, not converted again
    with pytest.raises(ExtensionError, match="gave GPU 2 to jobs j1 and j2"):
        ck.allocation({0: a, 1: b, 2: np.array([2])}, active)
    ck.allocation({0: a, 1: b}, active)
    with pytest.raises(ExtensionError, match="not active"):
        ck.allocation({0: a, 1: b}, np.array([True, False, True, True]))
    # the same decision again (no job moved): the previous result, its dicts the caller's own
    for _ in range(2):  # (the first one after the error checks it in full)
        same = ck.allocation({0: a, 1: b}, active)
        del same[0][1], same[1][1]  # the driver drops finished jobs from what it holds
    assert ck.allocation({0: a, 1: b}, active)[1] == {0: (0, 1), 1: (2, 3)}
    b.flags.writeable = True  # writeable again and changed: checked again
    b[0] = 0
    with pytest.raises(ExtensionError, match="gave GPU 0 to jobs j0 and j1"):
        ck.allocation({0: a, 1: b}, active)
    w = np.array([4, 5])  # writeable: converted at every decision, changes are seen
    ck.allocation({2: w}, active)
    w[1] = 4
    with pytest.raises(ExtensionError, match="GPU 4 twice"):
        ck.allocation({2: w}, active)


def test_stall_bound_counts_decisions_and_time_and_resets_on_progress():
    ck = Contract(["a"], np.array([1]), 4, Fifo(), LowestIndex(), False, 3, 100.0)
    for t in (0.0, 10.0, 20.0, 30.0, 40.0):  # 5 decisions, 50 s <= 100 s: a long restart
        ck.step(False, t, t + 10.0, 1)
    with pytest.raises(SimulationStalled, match="no job started, finished or advanced in 11"):
        for t in range(50, 200, 10):
            ck.step(False, float(t), t + 10.0, 1)
    ck.step(True, 200.0, 210.0, 1)
    for t in range(210, 400, 10):  # progress at 200 restarted the count
        if t + 10 - 210 > 100:
            with pytest.raises(SimulationStalled):
                ck.step(False, float(t), t + 10.0, 1)
            break
        ck.step(False, float(t), t + 10.0, 1)


def test_a_long_restart_is_not_a_stall():
    """One GPU: a short job preempts a long one (SRTF), which then resumes paying checkpoint +
    restart = 2,000 s; with 1 s rounds (SRTF skips none) that is ~2,000 decisions without any
    progress, more than MAX_STALLED = 1,000, yet no stall: the bound also needs more than
    checkpoint + restart seconds without progress."""
    trace = pd.DataFrame(
        {
            "job_id": ["long", "short"],
            "num_gpus": [1, 1],
            "submit_time": [0.0, 10.0],
            "duration": [5000, 100],
            "model": ["resnet50", "resnet50"],
        }
    )
    kw = {"gpus": 1, "gpus_per_machine": 1, "round_length": 1.0, "progress": False}
    res = fairplace.simulate(trace, "srtf", "pal", checkpoint=1000.0, restart=1000.0, **kw)
    assert res.jobs["preemptions"].tolist() == [1, 0]
    assert res.summary["decisions"] > 2000


def test_max_stalled_is_an_option_of_the_driver():
    with pytest.raises(OptionError, match="max_stalled"):
        DriverConfig(max_stalled=0)


def test_debug_checks_that_a_resumable_policy_depends_on_the_queue_only():
    class Drifting:  # claims resumable, yet on odd rounds it takes the highest free GPUs
        name, resumable = "drifting", True

        def place(self, state, queue, previous=None):
            G, alloc, top = len(state.cluster), {}, state.round % 2
            free = list(range(G))
            for job in queue:
                if job.gpus > len(free):
                    break
                take = free[-job.gpus :] if top else free[: job.gpus]
                alloc[job.id] = tuple(take)
                free = [g for g in free if g not in take]
            return Decision(alloc, ())

    one = TRACE.iloc[:1].assign(duration=100_000)  # one job, the same queue at every decision
    assert fairplace.simulate(one, "fifo", Drifting(), **SMALL).summary["jobs"] == 1
    with pytest.raises(ExtensionError, match="placement policy 'drifting' returned another"):
        fairplace.simulate(one, "fifo", Drifting(), debug=True, **SMALL)


# --- properties: random valid decisions pass; one broken rule is always caught -------------------
@st.composite
def decisions(draw):
    """(contract, is_active, order, allocation by id, previous key, previous arrays)."""
    J = draw(st.integers(1, 30))
    G = draw(st.integers(1, 48))
    demand = np.array(draw(st.lists(st.integers(1, 4), min_size=J, max_size=J)))
    active = np.array(draw(st.lists(st.booleans(), min_size=J, max_size=J)))
    act = np.flatnonzero(active)
    order = np.array(draw(st.permutations(act.tolist())), np.int64)[
        : draw(st.integers(0, act.size))
    ]
    perm = draw(st.permutations(range(G)))
    alloc, used = {}, 0
    for j in order.tolist():
        if draw(st.booleans()) and used + demand[j] <= G:
            alloc[f"j{j}"] = tuple(sorted(perm[used : used + demand[j]]))
            used += demand[j]
    keep = [j for j in alloc if draw(st.booleans())]  # jobs that held these GPUs already
    key = {int(j[1:]): alloc[j] for j in keep}
    arrays = {k: np.asarray(g, np.int64) for k, g in key.items()}
    ids = [f"j{k}" for k in range(J)]
    ck = Contract(ids, demand, G, Fifo(), LowestIndex(), False, 10, 0.0)
    return ck, active, order, alloc, key, arrays


@settings(max_examples=150, deadline=None)
@given(case=decisions())
def test_random_valid_decisions_pass_the_checks(case):
    ck, active, order, alloc, key, arrays = case
    assert np.array_equal(ck.order(order, active), order)
    new_key, new, record = ck.placement(Decision(dict(alloc), ()))
    assert record == alloc
    assert new_key == {int(j[1:]): g for j, g in alloc.items()}
    assert list(new_key) == [int(j[1:]) for j in alloc]  # decision order kept
    # the holdings: the same sorted tuples, in a dict of their own (the driver deletes from it)
    assert new == new_key and new is not new_key and list(new) == list(new_key)
    elastic = {j: np.asarray(g[: 1 + len(g) // 2], np.int64) for j, g in new_key.items()}
    ck.allocates = True
    got, got_key, got_rec = ck.allocation(elastic, active)
    assert {j: g.tolist() for j, g in got.items()} == {j: g.tolist() for j, g in elastic.items()}
    assert got_rec == {f"j{j}": g.tolist() for j, g in elastic.items()}


MUTATIONS = ["dup", "range", "size", "unsorted", "float", "string", "inactive", "unknown"]


@settings(max_examples=200, deadline=None)
@given(case=decisions(), how=st.sampled_from(MUTATIONS), data=st.data())
def test_one_broken_rule_is_always_caught(case, how, data):
    ck, active, order, alloc, key, arrays = case
    ck.order(order, active)
    jobs = list(alloc)
    if how == "inactive":
        outside = [j for j in range(len(active)) if j not in set(order.tolist())]
        if not outside:
            return
        alloc = {**alloc, f"j{data.draw(st.sampled_from(outside))}": (0,)}
    elif how == "unknown":
        alloc = {**alloc, "nobody": (0,)}
    elif not jobs:
        return
    else:
        j = data.draw(st.sampled_from(jobs))
        g = list(alloc[j])
        if how == "dup":
            others = [k for k in jobs if k != j]
            if others:
                g[0] = alloc[data.draw(st.sampled_from(others))][-1]
            else:
                g.append(g[0])
        elif how == "range":
            g[data.draw(st.integers(0, len(g) - 1))] = data.draw(
                st.sampled_from([-1, ck.G, ck.G + 7, 2**40, 2**70])
            )
        elif how == "size":
            g = g[:-1] if data.draw(st.booleans()) else [*g, ck.G - 1]
        elif how == "unsorted":
            if len(g) < 2:
                return
            g = g[::-1]
        elif how == "float":
            g[0] = float(g[0]) + 0.5
        else:
            g[0] = f"m0/{g[0]}"
        alloc = {**alloc, j: tuple(g)}
    with pytest.raises(ExtensionError, match="placement policy 'lowest-index'"):
        ck.placement(Decision(alloc, ()))
