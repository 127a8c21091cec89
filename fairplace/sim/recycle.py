"""The PAL artifact's recycled jobs in a simulation: after the trace, copies of its jobs keep arriving
(:func:`fairplace.instances.traces.recycled_jobs`) until every trace job has finished.

The stream is endless in the artifact; here it is cut where it cannot matter: a job arriving after
the last trace job has finished changes nothing that is reported. The simulation is run with ``n``
copies (``n`` = the trace's jobs), and again with twice as many while the last copy arrives before
the last trace job finishes; the copies are a prefix-stable sequence, so the cut is exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pandas as pd

from fairplace.instances.traces import recycled_jobs

from .accounting import Timeline
from .workload import Workload


def run_recycled(
    frame: pd.DataFrame,
    jobs_per_hour: float,
    seed: int,
    workload_of: Callable[[pd.DataFrame], Workload],
    run: Callable[[Workload, int], Timeline],
) -> tuple[Workload, Timeline, int]:
    """Simulate ``frame`` followed by its recycled copies; ``workload_of`` turns a trace frame into a
    :class:`Workload`, ``run(workload, attempt)`` simulates it. Returns the trace's jobs as a
    workload of their own, their timeline, and how many recycled jobs got GPUs before the end."""
    n = len(frame)
    extra, attempt = n, 0
    while True:
        full = pd.concat([frame, recycled_jobs(frame, extra, jobs_per_hour, seed)])
        full = full.reset_index(drop=True)
        full.attrs = dict(frame.attrs)
        w = replace(workload_of(full), tracked=np.arange(len(full)) < n)
        tr = run(w, attempt)
        if w.submit[-1] > np.nanmax(tr.finish[:n]):
            break
        extra, attempt = 2 * extra, attempt + 1
    keep = np.arange(n)
    sub, apps = w.take(keep)
    ran = int(np.count_nonzero(~np.isnan(tr.start[n:])))
    return sub, tr.take(keep, apps), ran
