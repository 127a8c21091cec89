"""Round driver: exact event times, restart costs, raw-score runtime, invariants, determinism."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairplace.instances.generators import grid_cluster
from fairplace.sim import Driver, DriverConfig, simulate, workload_from_trace
from fairplace.sim import metrics as M
from fairplace.sim.schedulers import make_scheduler
from fairplace.solvers.placement.policies import ClusterState, make_policy


@dataclass(frozen=True)
class _State:
    cluster: object
    scores: dict
    allocation: dict
    round: int = 0


@dataclass(frozen=True)
class _Decision:
    allocation: dict
    preempted: tuple


class FirstFit:
    """Tiny stand-in policy: serve the queue prefix that fits, lowest-index free GPUs, sticky."""

    name, sticky = "first-fit", True

    def place(self, state, queue):
        free = np.ones(len(state.cluster), bool)
        cap, chosen = len(state.cluster), []
        for j in queue:
            if j.gpus > cap:
                break
            chosen.append(j)
            cap -= j.gpus
        ids = {j.id for j in chosen}
        out = {k: tuple(g) for k, g in state.allocation.items() if k in ids}
        for g in out.values():
            free[list(g)] = False
        for j in chosen:
            if j.id not in out:
                idx = np.flatnonzero(free)[: j.gpus]
                out[j.id] = tuple(int(x) for x in idx)
                free[idx] = False
        return _Decision(out, tuple(k for k in state.allocation if k not in out))


def frame(rows) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["job_id", "num_gpus", "submit_time", "duration", "t_iter"])
    df["model"] = "m"
    df["cls"] = "A"
    df["job_id"] = df["job_id"].astype(str)
    return df


def run(rows, pm=(1.0, 1.0, 1.0, 1.0), machines=2, gpm=2, sched="fifo", cfg=DriverConfig(), **kw):
    cl = grid_cluster(machines, gpm, pm={"A": np.asarray(pm, float)})
    w = workload_from_trace(frame(rows), locality_penalty=1.7)
    scores = {"A": cl.pm_vector("A")}
    s = make_scheduler(sched, **kw)
    tr = Driver(w, cl, scores, s, FirstFit(), _State, cfg).run()
    return w, tr, cl


def test_single_job_runs_at_raw_slowdown_and_finishes_at_exact_time():
    # 2 GPUs on machine 0 (scores 1.0, 1.5): S = L(within)=1 x max V = 1.5
    w, tr, _ = run([(0, 2, 37.0, 100, 2.0)], pm=(1.0, 1.5, 1.0, 1.0))
    assert tr.start[0] == 37.0
    assert tr.finish[0] == pytest.approx(37.0 + 100 * 2.0 * 1.5)
    assert tr.score_time[0] / tr.run[0] == pytest.approx(1 / 1.5)


def test_spread_job_pays_locality_penalty():
    w, tr, _ = run([(0, 3, 0.0, 100, 1.0)], pm=(1.0, 1.0, 1.2, 1.0))
    assert tr.finish[0] == pytest.approx(100 * 1.0 * 1.7 * 1.2)


def test_arrival_mid_round_waits_but_jct_counts_from_arrival():
    cfg = DriverConfig(round_length=300.0)
    w, tr, _ = run([(0, 4, 0.0, 50, 1.0), (1, 4, 100.0, 10, 1.0)], machines=1, gpm=4, cfg=cfg)
    assert tr.finish[0] == pytest.approx(50.0)  # completion stamped inside the round
    assert tr.start[1] == pytest.approx(300.0)  # next decision on the grid
    assert tr.finish[1] - tr.release[1] == pytest.approx(300.0 + 10 - 100.0)


@pytest.mark.parametrize("ck,rs", [(10.0, 35.0), (0.0, 0.0)])
def test_preempted_job_pays_checkpoint_and_restart_on_resume(ck, rs):
    cfg = DriverConfig(round_length=300.0, checkpoint=ck, restart=rs)
    rows = [(0, 1, 0.0, 1000, 1.0), (1, 1, 10.0, 50, 1.0)]
    w, tr, _ = run(rows, machines=1, gpm=1, pm=(1.0,), sched="las", cfg=cfg, threshold=100.0)
    assert tr.finish[1] == pytest.approx(350.0)  # B preempts A at 300 (LAS), runs 50 s
    assert tr.preemptions[0] == 1
    assert tr.finish[0] == pytest.approx(600.0 + ck + rs + 700.0)  # A resumes at the next round
    assert tr.overhead[0] == ck + rs


def test_successive_halving_phase_released_when_previous_phase_finishes():
    df = frame([(0, 1, 0.0, 100, 1.0), (1, 1, 0.0, 200, 1.0), (2, 2, 0.0, 50, 1.0)])
    df["app_id"] = "a"
    df["phase"] = [0, 0, 1]
    cl = grid_cluster(1, 2, pm={"A": np.ones(2)})
    w = workload_from_trace(df)
    tr = Driver(w, cl, {"A": np.ones(2)}, make_scheduler("fifo"), FirstFit(), _State).run()
    assert tr.release[2] == pytest.approx(200.0)
    assert tr.start[2] == pytest.approx(300.0)
    assert tr.finish[2] == pytest.approx(350.0)


def test_quiet_rounds_are_skipped_without_changing_results():
    rows = [(k, 1 + k % 3, 500.0 * k, 2000 + 300 * k, 1.0) for k in range(8)]
    cl = grid_cluster(2, 2, pm={"A": np.array([1.0, 1.1, 0.9, 1.3])})
    w = workload_from_trace(frame(rows))
    out = []
    for skip in (True, False):
        tr = Driver(
            w,
            cl,
            {"A": cl.pm_vector("A")},
            make_scheduler("las", threshold=1500.0),
            FirstFit(),
            _State,
            DriverConfig(skip_quiet=skip, debug=True),
        ).run()
        out.append(tr)
    np.testing.assert_allclose(out[0].finish, out[1].finish)
    assert len(out[0].rounds["t"]) < len(out[1].rounds["t"])
    assert sum(out[0].rounds["span"]) >= len(out[1].rounds["t"]) - 1


SCHEDULERS = ("fifo", "las", "srtf", "drf", "gandiva", "srpt-oracle", "optimus", "slaq")
POLICIES = (
    "pal",
    "pm-first",
    "packed-sticky",
    "packed-non-sticky",
    "random-sticky",
    "random-non-sticky",
)


@st.composite
def workloads(draw):
    n = draw(st.integers(1, 12))
    rows = []
    for k in range(n):
        rows.append(
            (
                k,
                draw(st.sampled_from([1, 1, 2, 3, 4, 8])),
                draw(st.floats(0, 3000, allow_nan=False)),
                draw(st.integers(1, 3000)),
                draw(st.sampled_from([0.1, 0.5, 1.0])),
            )
        )
    df = frame(rows)
    df["app_id"] = [f"a{k % 3}" for k in range(n)]
    return df


@settings(max_examples=25, deadline=None)
@given(
    df=workloads(),
    sched=st.sampled_from(SCHEDULERS),
    pol=st.sampled_from(POLICIES),
    seed=st.integers(0, 3),
)
def test_invariants_hold_for_every_scheduler_and_policy(df, sched, pol, seed):
    rng = np.random.default_rng(seed)
    cl = grid_cluster(2, 4, pm={"A": rng.uniform(0.9, 2.0, 8)})
    w = workload_from_trace(df)
    res = [
        Driver(
            w,
            cl,
            {"A": cl.pm_vector("A")},
            make_scheduler(sched, seed=seed),
            make_policy(pol, seed=seed),
            ClusterState,
            DriverConfig(debug=True, round_length=120.0),
        ).run()
        for _ in range(2)
    ]
    tr = res[0]
    np.testing.assert_array_equal(tr.finish, res[1].finish)  # same seed, same result
    np.testing.assert_allclose(tr.done_iters, w.iters)  # all work done, exactly once
    assert np.all(tr.start >= tr.release - 1e-9) and np.all(tr.finish > tr.start)
    t = np.asarray(tr.rounds["t"])
    assert np.all(np.diff(t) > 0)  # time never goes back
    assert max(tr.rounds["busy"]) <= len(cl)
    for a in tr.rounds["allocation"]:
        gpus = [g for v in json.loads(a).values() for g in v]
        assert len(gpus) == len(set(gpus))  # no GPU held twice
    jobs = M.job_frame(w, tr, len(cl))
    np.testing.assert_allclose(jobs["waiting"] + jobs["run_time"], jobs["jct"])
    assert tr.busy_gpu_seconds == pytest.approx(float((jobs["gpu_time"]).sum()))


def test_simulate_end_to_end_records_frames_and_summary(tmp_path):
    res = simulate("workload-4", "fifo", "pal", seed=1, debug=True, progress=False)
    s = res.summary
    for k in ("avg_jct", "p99_jct", "median_jct", "geomean_jct", "makespan", "utilization"):
        assert s[k] > 0
    assert 0 < s["utilization"] <= 1
    assert s["max_rho"] >= s["median_rho"] > 0
    assert 0 < s["jain_rho"] <= 1
    assert len(res.jobs) == 160 and res.jobs["finish"].notna().all()
    assert (res.jobs["jct"] >= res.jobs["run_time"] - 1e-6).all()
    assert set(M.T_ID_VARIANTS) <= {c[4:] for c in res.jobs.columns if c.startswith("rho_")}
    again = simulate("workload-4", "fifo", "pal", seed=1, progress=False)
    pd.testing.assert_frame_equal(res.jobs, again.jobs)
    out = res.save(tmp_path / "r")
    back = type(res).load(out)
    pd.testing.assert_frame_equal(back.jobs, res.jobs)
    assert json.loads((out / "summary.json").read_text())["summary"]["avg_jct"] == s["avg_jct"]
    axes = res.plot()
    assert len(axes) == 3 and len(axes[0].figure.axes) == 3


def test_jain_and_active_step():
    assert M.jain(np.array([2.0, 2.0, 2.0])) == pytest.approx(1.0)
    assert M.jain(np.array([1.0, 0.0])) == pytest.approx(0.5)
    t, c = M.active_step(np.array([0.0, 5.0]), np.array([10.0, 7.0]))
    assert t.tolist() == [0.0, 5.0, 7.0, 10.0] and c.tolist() == [1, 2, 1, 0]


def test_allocating_schedulers_see_holdings_as_fresh_lists():
    """The holdings handed to ``allocate`` (``HeldGPUs``): job -> list of GPU indices, read only,
    a new list per read, so a scheduler that changes one cannot change what the driver holds."""
    from fairplace.sim.running import HeldGPUs

    alloc = {3: np.array([5, 1], np.int64), 7: np.array([2], np.int64)}
    held = HeldGPUs(alloc)
    assert dict(held) == {3: [5, 1], 7: [2]} and held.copy() == {3: [5, 1], 7: [2]}
    assert held.get(9, ()) == () and held.get(9) is None and held.get(7) == [2]
    assert 3 in held and 9 not in held and len(held) == 2
    fresh = held.get(3)
    fresh.append(99)
    assert held.get(3) == [5, 1]
    held[3].append(99)
    assert held[3] == [5, 1] and alloc[3].tolist() == [5, 1]
    with pytest.raises(TypeError):
        held[3] = [0]  # type: ignore[index]


_gpu_lists = st.lists(st.integers(0, 300), max_size=5)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.one_of(st.sampled_from([f"a{k}/j{k}" for k in range(6)]), st.integers(0, 5)),
            _gpu_lists,
            max_size=6,
        ),
        min_size=1,
        max_size=6,
    ),
    st.data(),
)
def test_recorded_allocation_json_is_json_dumps_of_each_record(records, data):
    """The rounds table's JSON, encoded job by job with items kept between decisions, is the text
    ``json.dumps`` gives for every record: keys in their order (ids or ints), jobs whose GPUs
    change or stay from record to record, the same record object again, NumPy ints."""
    from fairplace.sim.run_state import RunState

    s = RunState.__new__(RunState)  # only the JSON bookkeeping is exercised
    s.last_rec, s.json_vals, s.json_texts, s.json_keys = (None, "{}"), {}, {}, {}
    s.json_gpus, s.json_heads = {}, {}
    for rec in records:
        if data.draw(st.booleans()):
            rec = {k: [np.int64(g) for g in v] for k, v in reversed(list(rec.items()))}
        if data.draw(st.booleans()):  # a placement policy's: tuples (sorted or not)
            rec = {k: tuple(v) for k, v in rec.items()}
        for _ in range(data.draw(st.integers(1, 2))):  # twice: the same object again
            assert s.allocation_json(rec) == json.dumps(rec, separators=(",", ":"), default=int)


@pytest.mark.parametrize(
    "texts",
    [['{"a":[1,2]}', "{}", '{"a":[1,2]}'], ['{"é":[0]}', '{"b":[3]}'], ["{}"], []],
)
def test_round_frame_is_the_frame_of_the_rounds(texts):
    """The rounds table (its allocation column over the log's buffer) is ``pd.DataFrame`` of the
    recorded rounds as lists: the same values and dtypes, with or without rounds, ASCII or not;
    the log reads back as the texts appended."""
    from fairplace.sim.accounting import TextLog, Timeline

    tr = Timeline.empty(np.zeros(2), 1)
    for k, text in enumerate(texts):
        for col, vals in tr.rounds.items():
            vals.append(text if col == "allocation" else k)
    log = tr.rounds["allocation"]
    assert isinstance(log, TextLog) and list(log) == texts and len(log) == len(texts)
    assert log[-1:] == texts[-1:] and all(log[k] == t for k, t in enumerate(texts))
    ref = pd.DataFrame({k: list(v) for k, v in tr.rounds.items()})
    pd.testing.assert_frame_equal(M.round_frame(tr), ref)
