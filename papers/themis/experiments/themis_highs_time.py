"""How much of a THEMIS simulation is HiGHS' own time: a floor under the speed targets.

Wraps the methods of ``highspy.Highs`` that the solvers call (``run``, building and passing models,
bounds, costs, reading results) with wall-clock timers, runs one W2 THEMIS simulation at the
paper's scale (``fairplace bench``'s ``simulate_themis_w2_256`` case at x1, ``_x4`` at x4) and
prints the calls and seconds per method. A measurement, not a benchmark: the timers cost a few
percent. docs/themis-results.md (Speed) has the numbers::

    python papers/themis/experiments/themis_highs_time.py --contention 4
"""

from __future__ import annotations

import argparse
import collections
import functools
import time

import highspy.highs as hh

from fairplace.instances.workloads import themis_workload
from fairplace.sim import simulate

METHODS = (
    "__init__",
    "passModel",
    "run",
    "clearSolver",
    "changeColsBounds",
    "changeColsCost",
    "setBasis",
    "getBasis",
    "getSolution",
    "getInfo",
    "getModelStatus",
    "setOptionValue",
)


def timed(seconds: collections.Counter, calls: collections.Counter) -> None:
    """Replace each of ``METHODS`` on ``highspy.Highs`` by a timed wrapper (for this process)."""
    for name in METHODS:
        method = getattr(hh.Highs, name)

        @functools.wraps(method)
        def wrapper(self, *args, _m=method, _n=name, **kwargs):
            t = time.perf_counter()
            try:
                return _m(self, *args, **kwargs)
            finally:
                seconds[_n] += time.perf_counter() - t
                calls[_n] += 1

        setattr(hh.Highs, name, wrapper)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", type=int, default=2, choices=(1, 2))
    ap.add_argument("--contention", type=int, default=1, choices=(1, 2, 4))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    seconds: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()
    timed(seconds, calls)
    wl = themis_workload(args.workload, contention=args.contention, seed=args.seed)
    t = time.perf_counter()
    r = simulate(wl, "themis", "packed-sticky", progress=False)
    wall = time.perf_counter() - t
    n = int(r.summary["decisions"])
    print(
        f"W{args.workload} x{args.contention} seed {args.seed}: {wall:.1f} s wall, {n} decisions,"
    )
    print(f"{int(r.summary['auctions'])} auctions, max rho {r.summary['max_rho']!r}")
    for name, s in seconds.most_common():
        print(
            f"  {name:18s} {calls[name]:9d} calls {s:8.1f} s {1e3 * s / calls[name]:7.3f} ms/call"
        )
    total = sum(seconds.values())
    print(f"  HiGHS methods: {total:.1f} s, {100 * total / wall:.1f}% of the run")
    print(
        f"  per decision: HiGHS {1e3 * total / n:.3f} ms, the rest {1e3 * (wall - total) / n:.3f} ms"
    )


if __name__ == "__main__":
    main()
