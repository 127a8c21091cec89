"""Round-driver benchmarks: whole simulations, wall-clock seconds on this machine.

* ``simulate_sia_philly_160``: Sia-Philly workload-1 (160 jobs), 64 GPUs (16 x 4), Longhorn, FIFO + PAL;
* ``simulate_synergy_1000``: Synergy-style 1,000 jobs at 8 jobs/hour, 256 GPUs, FIFO + PAL;
* ``simulate_themis_w2_256`` / ``simulate_themis_w2_256_x4``: THEMIS Workload 2 at the paper's scale
  (the 256-GPU workload) on 256 GPUs and, at contention x4, on 64 GPUs, with the THEMIS scheduler,
  then LAS on the same workload: ``themis_las_ratio`` = THEMIS' CPU seconds / LAS';
* ``simulate_synergy_10000_1024`` / ``simulate_synergy_100000_4096`` /
  ``simulate_synergy_1000000_16384``: Synergy-style traces at the same load per GPU (8 jobs/hour
  per 256 GPUs), FIFO + PAL (the scale goals: 20 s and 300 s of CPU); they report their peak
  memory (``max_rss_mb`` of the process: run one with ``--timeout`` for a process of its own) and
  CPU seconds; the 1,000,000-job case is full mode only (minutes, ~2 GB).

Each case is one simulation: ``--quick`` runs the short ones unchanged and skips the long ones
(THEMIS W2, 10k and 100k jobs), saying so.
"""

from __future__ import annotations

import sys
import time

from fairplace.instances.models import MODELS
from fairplace.instances.traces import synergy_trace
from fairplace.instances.workloads import themis_workload
from fairplace.sim import simulate

from . import Case, cases


def _timed(**kw) -> dict:

    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate(progress=False, **kw)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    s = res.summary
    return {
        "seconds": seconds,
        # CPU seconds of this process (less sensitive than wall time to other work on the machine)
        # and wall milliseconds per scheduling decision (a run's time is its decisions times this)
        "cpu_seconds": cpu,
        "ms_per_decision": 1000.0 * seconds / max(int(s["decisions"]), 1),
        "sizes": {"jobs": s["jobs"], "gpus": s["gpus"]},
        "jobs": s["jobs"],
        "decisions": s["decisions"],
        "avg_jct": s["avg_jct"],
        "max_rho": s["max_rho"],
        **{k: s[k] for k in ("auctions", "mean_bidders", "mean_offered_fraction") if k in s},
    }


def sia_philly(quick: bool) -> dict:
    return _timed(trace="workload-1", scheduler="fifo", placement="pal", gpus=64)


def synergy(quick: bool) -> dict:

    t_iter = {n: m.iter_seconds for n, m in MODELS.items()}
    trace = synergy_trace(1000, 8.0, t_iter, max_gpus=256, seed=0)
    return _timed(trace=trace, scheduler="fifo", placement="pal", gpus=256)


def synergy_at(jobs: int, gpus: int, seed: int = 0):
    """Synergy-style trace of ``jobs`` jobs at 8 jobs/hour per 256 GPUs (the 1,000-job case's load)."""

    t_iter = {n: m.iter_seconds for n, m in MODELS.items()}
    return synergy_trace(jobs, 8.0 * gpus / 256, t_iter, max_gpus=gpus, seed=seed)


def _max_rss_mb() -> float | None:
    """Peak resident memory of this process in MB (``ru_maxrss``: KiB on Linux, bytes on macOS);
    None where the ``resource`` module does not exist (Windows)."""
    try:
        import resource  # POSIX only: imported on use, so the module imports on Windows
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def synergy_10k(quick: bool) -> dict:
    out = _timed(trace=synergy_at(10_000, 1024), scheduler="fifo", placement="pal", gpus=1024)
    return out | {"size": 10_000, "gpus": 1024, "max_rss_mb": _max_rss_mb()}


def synergy_case(jobs: int, gpus: int):
    """FIFO + PAL on :func:`synergy_at` (``jobs``, ``gpus``), with the process's peak memory."""

    def run(quick: bool) -> dict:
        out = _timed(trace=synergy_at(jobs, gpus), scheduler="fifo", placement="pal", gpus=gpus)
        return out | {"size": jobs, "gpus": gpus, "max_rss_mb": _max_rss_mb()}

    return run


synergy_100k = synergy_case(100_000, 4096)


def themis_w2(contention: int):
    """THEMIS Workload 2 at the paper's scale (85 apps over two weeks, the 256-GPU workload) on
    256 / ``contention`` homogeneous GPUs, THEMIS with f = 0.8 and 10-minute leases."""

    def run(quick: bool) -> dict:

        trace = themis_workload(2, contention=contention, seed=0)
        out = _timed(trace=trace, scheduler="themis", placement="packed-sticky")
        out["sizes"] = {**out["sizes"], "workload": 2, "base_gpus": 256, "contention": contention}
        # LAS on the same workload in the same process: the ratio the speed targets are set in
        las = _timed(trace=trace, scheduler="las", placement="packed-sticky")
        out["las_cpu_seconds"] = las["cpu_seconds"]
        out["themis_las_ratio"] = out["cpu_seconds"] / max(las["cpu_seconds"], 1e-9)
        return out

    return run


CASES = cases(
    __name__,
    {
        "simulate_sia_philly_160": Case(sia_philly, 5.0, {"jobs": 160, "gpus": 64}),
        "simulate_synergy_1000": Case(synergy, 60.0, {"jobs": 1000, "gpus": 256}),
        # the speed goals (one process on a quiet 2-core machine): 30 s at x1, 90 s at x4
        "simulate_themis_w2_256": Case(
            themis_w2(1),
            30.0,
            {"workload": 2, "base_gpus": 256, "contention": 1},
            full_only="minutes on 2 cores",
        ),
        "simulate_themis_w2_256_x4": Case(
            themis_w2(4),
            90.0,
            {"workload": 2, "base_gpus": 256, "contention": 4},
            full_only="minutes on 2 cores",
        ),
        "simulate_synergy_10000_1024": Case(
            synergy_10k, 10.0, {"jobs": 10_000, "gpus": 1024}, full_only="~30 s on 2 cores"
        ),
        # the scale goals (one process on a quiet 2-core machine): 20 s and 300 s of CPU
        "simulate_synergy_100000_4096": Case(
            synergy_100k, 20.0, {"jobs": 100_000, "gpus": 4096}, full_only="~1 min on 2 cores"
        ),
        "simulate_synergy_1000000_16384": Case(
            synergy_case(1_000_000, 16384),
            300.0,
            {"jobs": 1_000_000, "gpus": 16384},
            full_only="~10 min and ~2 GB on 2 cores",
        ),
    },
)
