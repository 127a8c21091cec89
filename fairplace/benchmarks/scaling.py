"""``fairplace bench --scaling``: how costs grow with size, as the log-log slope (growth exponent) of
seconds over size — 1 is linear, 2 quadratic. No ``CASES``: a mode of its own.

* PAL rounds: one round (median of a few) at 1,024 .. 16,384 GPUs (synthetic scores, Philly queue);
* simulation: Synergy-style FIFO + PAL at the same load per GPU, jobs and GPUs growing together (the
  driver's seconds, ``summary['wall_seconds']``); and apart (CPU seconds of the whole simulation):
  jobs growing on a fixed cluster (the exponent in jobs: 1 = linear in the events) and GPUs
  growing under a fixed number of jobs (the exponent in GPUs: the trace gets shorter as the
  cluster grows at the same load per GPU, so per-decision work that does not grow with the
  cluster shows as an exponent below 0);
* compact PA: the compact arbiter's full PA (``auction._timed_pa``) on growing clusters with one app
  per 16 GPUs (same contention: PA's cost follows contention more than size).
"""

from __future__ import annotations

import time

import numpy as np

from fairplace.core.registry import Entry, Registry
from fairplace.instances.generators import random_agent_auction
from fairplace.sim import simulate

from .auction import _timed_pa
from .placement import time_round
from .simulate import synergy_at


def exponent(sizes, seconds) -> float:
    """Least-squares slope of log(seconds) over log(size)."""
    x, y = np.log(np.asarray(sizes, float)), np.log(np.asarray(seconds, float))
    return float(np.polyfit(x, y, 1)[0])


def _pal(quick: bool) -> list[tuple[int, float]]:
    machines = (256, 1024, 4096) if quick else (256, 512, 1024, 2048, 4096)
    return [(4 * m, time_round("pal", m, "synthetic", 3)["seconds"]) for m in machines]


def _simulation(quick: bool) -> list[tuple[int, float]]:
    sizes = (
        ((500, 128), (1000, 256), (2000, 512))
        if quick
        else ((1000, 256), (2500, 640), (5000, 1280), (10_000, 2560))
    )
    out = []
    for jobs, gpus in sizes:  # the driver's own seconds (no imports, binning or metrics)
        res = simulate(
            trace=synergy_at(jobs, gpus),
            scheduler="fifo",
            placement="pal",
            gpus=gpus,
            progress=False,
        )
        out.append((jobs, res.summary["wall_seconds"]))
    return out


def _cpu_seconds(jobs: int, gpus: int) -> float:
    """CPU seconds of one FIFO + PAL simulation of :func:`synergy_at` (``jobs``, ``gpus``)."""
    c0 = time.process_time()
    simulate(
        trace=synergy_at(jobs, gpus), scheduler="fifo", placement="pal", gpus=gpus, progress=False
    )
    return time.process_time() - c0


def _in_jobs(quick: bool) -> list[tuple[int, float]]:
    jobs = (1000, 2000, 4000) if quick else (2500, 5000, 10_000, 20_000)
    gpus = 256 if quick else 1024
    return [(n, _cpu_seconds(n, gpus)) for n in jobs]


def _in_gpus(quick: bool) -> list[tuple[int, float]]:
    gpus = (128, 256, 512) if quick else (512, 1024, 2048, 4096)
    jobs = 2000 if quick else 10_000
    return [(g, _cpu_seconds(jobs, g)) for g in gpus]


def _compact_pa(quick: bool) -> list[tuple[int, float]]:
    machines = (16, 32, 64) if quick else (32, 64, 128, 256)
    return [  # one app per 16 GPUs: contention (which drives PA's cost) stays the same
        (4 * m, _timed_pa(random_agent_auction(apps=m // 4, machines=m, seed=0))["seconds"])
        for m in machines
    ]


#: the series: name (what grows, in what unit) -> ``points(quick) -> [(size, seconds)]``
SERIES = Registry(
    "scaling series",
    {
        "pal_round (GPUs)": Entry(_pal),
        "simulation (jobs, GPUs = jobs / 4)": Entry(_simulation),
        "simulation in jobs (jobs; 1,024 GPUs, --quick 256; CPU s)": Entry(_in_jobs),
        "simulation in GPUs (GPUs; 10,000 jobs, --quick 2,000; CPU s)": Entry(_in_gpus),
        "compact_pa (GPUs, one app per 16)": Entry(_compact_pa),
    },
    where="only",
)


def run_scaling(quick: bool, only: str | None = None) -> list[dict]:
    """One entry per series: sizes, seconds and the growth exponent (or the error that stopped it)."""
    out: list[dict[str, object]] = []
    for name, entry in SERIES.items():
        if only and only not in name:
            continue
        try:
            pts = entry.factory(quick)
        except Exception as exc:  # noqa: BLE001 - a failing series is an entry, never an abort
            out.append({"name": name, "error": f"{type(exc).__name__}: {exc}"})
            continue
        sizes, secs = zip(*pts, strict=True)
        out.append(
            {
                "name": name,
                "sizes": list(sizes),
                "seconds": list(secs),
                "exponent": exponent(sizes, secs),
            }
        )
    return out
