"""Fixed, seeded placement rounds and simulations whose results must not change when the placement engine
or the simulator is made faster. ``python tests/speedup_cases.py`` rewrites the reference file
``tests/data/speedup_reference.json.gz`` from the current code; run it only on code known to be right.

Each case's output is stored in full, not hashed: picks as GPU indices per job id; for simulations the
summary (without wall time), every job's JCT and every recorded decision. :func:`assert_matches`
compares integers, strings and ids exactly and floats to a relative tolerance of :data:`RTOL`:
floating-point sums differ in their last bits between CPUs (SIMD widths, summation order), so a
reference that hashed floats passed only on the machine that recorded it.
"""

from __future__ import annotations

import functools
import gzip
import json
import math
from pathlib import Path

import numpy as np

REFERENCE = Path(__file__).parent / "data" / "speedup_reference.json.gz"
#: relative tolerance for floats (times, JCTs, means); integers and ids compare exactly
RTOL = 1e-9

#: (policy, options) pairs checked on every placement instance
POLICIES = [
    ("pal", {}),
    ("pal", {"ties": "artifact"}),
    ("pal", {"backfill": True}),
    ("pm-first", {}),
    ("pm-first", {"backfill": True}),
    ("packed-sticky", {}),
    ("packed-non-sticky", {"backfill": True}),
    ("random-sticky", {}),
    ("random-non-sticky", {"backfill": True}),
    ("pal", {"migrate": "if-better", "backfill": True}),
]
#: (machines, profile, load) placement instances
INSTANCES = [
    (8, "frontera", 1.5),
    (64, "longhorn", 1.5),
    (64, "longhorn", 0.7),
    (256, "synthetic", 1.5),
]
#: (trace, gpus, scheduler, policy, options) simulations
SIMULATIONS = [
    ("workload-1", 64, "fifo", "pal", {}),
    ("workload-1", 64, "fifo", "pm-first", {}),
    ("workload-1", 64, "las", "pal", {}),
    ("workload-1", 64, "srtf", "packed-non-sticky", {}),
    ("workload-1", 64, "fifo", "random-non-sticky", {}),
    ("workload-1", 64, "las", "packed-sticky", {}),
    ("workload-2", 64, "fifo", "pal", {"ties": "artifact"}),
    ("workload-3", 64, "fifo", "pal", {"migrate": "if-better"}),
    ("synergy-300", 64, "fifo", "pal", {}),
    ("synergy-300", 64, "fifo", "pal", {"backfill": True}),
    ("synergy-300", 64, "las", "pm-first", {"backfill": True}),
    ("synergy-300", 64, "fifo", "random-sticky", {}),
]


def load_reference() -> dict:
    with gzip.open(REFERENCE, "rt") as f:
        return json.load(f)


def mismatches(got, want, where: str = "") -> list[str]:
    """Where ``got`` differs from ``want``: exact for ints, strings, bools and None, ``RTOL``-relative
    for floats (ints and floats are not interchangeable: a count that became a float is a change)."""
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            keys = set(got) ^ set(want) if isinstance(got, dict) else "not a dict"
            return [f"{where}: keys differ ({keys})"]
        return [m for k in sorted(want) for m in mismatches(got[k], want[k], f"{where}.{k}")]
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return [
                f"{where}: length {len(got) if isinstance(got, list) else got!r} != {len(want)}"
            ]
        return [
            m
            for i, (g, w) in enumerate(zip(got, want, strict=True))
            for m in mismatches(g, w, f"{where}[{i}]")
        ]
    if isinstance(want, float) and isinstance(got, float):
        same = math.isclose(got, want, rel_tol=RTOL, abs_tol=1e-12) or (got == want)
        return [] if same else [f"{where}: {got!r} != {want!r} (rtol {RTOL})"]
    if type(got) is not type(want) or got != want:
        return [f"{where}: {got!r} != {want!r}"]
    return []


def assert_matches(got, want, where: str) -> None:
    bad = mismatches(got, want, where)
    assert not bad, f"{len(bad)} differences, first: " + "; ".join(bad[:5])


def _running(state, queue, seed):
    """A seeded prior allocation: the first half of the queue placed by packed-sticky, then a random
    third of it finished (so running jobs sit on a fragmented cluster)."""
    from fairplace.solvers.placement.policies import ClusterState, make_policy

    half = queue[: len(queue) // 2]
    d = make_policy("packed-sticky", backfill=True).place(state, half)
    rng = np.random.default_rng(seed)
    keep = [j for j in d.allocation if rng.random() > 1 / 3]
    return ClusterState(state.cluster, state.scores, {j: d.allocation[j] for j in keep}, round=3)


@functools.lru_cache(maxsize=4)
def _instance(machines, profile, load):
    from fairplace.benchmarks.placement import _state, philly_queue

    state = _state(machines, profile, seed=1)
    return state, philly_queue(len(state.cluster), seed=2, load=load)


def placement_case(machines, profile, load, policy, options, with_running):
    from fairplace.solvers.placement.policies import make_policy

    state, queue = _instance(machines, profile, load)
    if with_running:
        state = _running(state, queue, 3)
        queue = queue[::-1][: len(queue) // 2] + queue[: len(queue) // 2]
    pol = make_policy(policy, seed=5, **options)
    d = pol.place(state, queue)
    # JSON round trip: job ids as strings, GPU indices as plain ints, as stored in the reference
    return json.loads(
        json.dumps(
            {
                "placed": len(d.allocation),
                "allocation": {str(j): [int(g) for g in gs] for j, gs in d.allocation.items()},
                "preempted": [str(j) for j in d.preempted],
            }
        )
    )


def _trace(name):
    if name == "synergy-300":
        from fairplace.instances.models import MODELS
        from fairplace.instances.traces import synergy_trace

        t_iter = {n: m.iter_seconds for n, m in MODELS.items()}
        return synergy_trace(300, 30.0, t_iter, max_gpus=64, seed=4)
    return name


def _metric_only(key: str) -> bool:
    # draw_*: descriptors of the sampled cluster (not placement results), recorded since;
    # restart*: paid restarts, recorded since (the rounds' preemptions and migrations hold them)
    return "rho" in key or key == "offered_load" or key.startswith(("draw_", "restart"))


def simulation_case(trace, gpus, scheduler, policy, options):
    from fairplace.sim import simulate

    res = simulate(
        trace=_trace(trace),
        scheduler=scheduler,
        placement=policy,
        gpus=gpus,
        profile="longhorn",  # per-GPU medians: the default when the references were recorded
        seed=1,
        progress=False,
        placement_options=options,
    )
    # placement / scheduling results only: not the wall clock, and not the fairness metrics whose
    # definitions (T_id variants, offered load) are the metrics' business, not the simulator's
    summ = {k: v for k, v in res.summary.items() if k != "wall_seconds" and not _metric_only(k)}
    jct = res.jobs["jct"].tolist()
    rounds = res.rounds.drop(
        columns=[c for c in res.rounds.columns if c in ("wall", "place_seconds")]
    ).to_dict("list")
    return json.loads(json.dumps({"summary": summ, "jct": jct, "rounds": rounds}))


def placement_key(machines, profile, load, policy, options, with_running):
    opts = ",".join(f"{k}={v}" for k, v in sorted(options.items()))
    run = "+running" if with_running else ""
    return f"{policy}[{opts}]@{machines}x4-{profile}-{load}{run}"


def simulation_key(trace, gpus, scheduler, policy, options):
    opts = ",".join(f"{k}={v}" for k, v in sorted(options.items()))
    return f"{trace}@{gpus}:{scheduler}/{policy}[{opts}]"


def placement_params():
    return [
        (m, p, load, pol, opts, run)
        for m, p, load in INSTANCES
        for pol, opts in POLICIES
        for run in (False, True)
    ]


def main() -> None:
    ref = {"placement": {}, "simulation": {}}
    for args in placement_params():
        ref["placement"][placement_key(*args)] = placement_case(*args)
    for args in SIMULATIONS:
        ref["simulation"][simulation_key(*args)] = simulation_case(*args)
        print(simulation_key(*args), ref["simulation"][simulation_key(*args)]["summary"]["avg_jct"])
    REFERENCE.parent.mkdir(exist_ok=True)
    # mtime=0: the same references give the same bytes (no spurious diffs when re-recorded)
    with gzip.GzipFile(REFERENCE, "wb", mtime=0) as f:
        f.write((json.dumps(ref, indent=0, sort_keys=True) + "\n").encode())


if __name__ == "__main__":
    main()
