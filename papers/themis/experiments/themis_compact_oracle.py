"""The compact THEMIS arbiter against the full MILP, on auction rounds captured from THEMIS runs.

Two steps:

``capture``: runs ``fairplace.simulate(themis_workload(w, contention=c, seed=s, **WL), "themis",
"packed-sticky", **SIM)`` for every workload w, contention c and seed s given, and records the input
of every auction round (cluster, offered GPU indices, each bidder's rho table, options, rounding and
seed: exactly what ``fairplace/sim/themis/arbiter.py`` hands to ``auction_on_offer``) by wrapping that
function; nothing in ``fairplace/sim`` is changed. One JSON object per line (gzip if the name ends
in .gz). A round whose solve raises is recorded with ``"raised"`` and ends that simulation.

``compare``: for every captured round, the compact PA auction (the arbiter's route: LP, branch and
bound, reduced-cost fixing, full MILP fallbacks) against the *full MILP*: ``solve_compact_pf`` with
``lp_first=False`` (no LP, no branch and bound, no fixing: HiGHS' MILP, bound-checked against the
LP relaxation) on the per-machine program (``aggregate=False``: not the machine-kind aggregation)
for PF and for every PF_{-i}. An instance agrees when: the auction raises nothing and says
``optimal``; its PF allocation is feasible (GPUs offered, disjoint, each bundle's rho from its table
at the bundle's real size / spread / worst level no worse than the rho claimed); its PF value
(apps with unbounded rho(nothing) served, then sum -log rho) equals the full MILP's within TOL;
every payment c_i equals PF_{-i}(at the compact allocation) / PF_{-i}(full MILP) within TOL (the
numerator from the compact allocation, so that ties between PF optima cannot differ); apps without
a PF bundle pay c = 1; each final bundle lies in its PF bundle.

Commands (workload and simulation parameters are arguments: ``--wl KEY=JSON`` for
``themis_workload``, ``--sim KEY=JSON`` for ``simulate``; rerun them on new defaults). The recorded
sweep (2 workers on a shared, loaded 2-core VM), today's 30-app / 256-GPU
defaults passed explicitly as ``DEFAULTS`` = ``--wl n_apps=30 --wl base_gpus=256 --wl
apps_per_hour=3.0 --wl jobs_per_app=[2,4,8,16] --wl single_job_fraction=0.1 --wl phase_hours=1.0
--wl max_gpus_per_job=16 --wl jobs_range=[20,100] --sim gpus_per_machine=4``::

    # A: rounds 0-59 of 18 runs: 1,080 rounds, 0 disagreements, compare 275 s wall
    python papers/themis/experiments/themis_compact_oracle.py capture A.jsonl.gz --workloads 1,2 --contentions 1,2,4 \
        --seeds 211,212,213 --max-rounds 60 DEFAULTS
    # B: rounds 60, 63, ..., 297 of the same runs: 1,440 rounds, 0 disagreements, 1,199 s wall
    python papers/themis/experiments/themis_compact_oracle.py capture B.jsonl.gz --workloads 1,2 --contentions 1,2,4 \
        --seeds 211,212,213 --skip 60 --every 3 --max-rounds 300 DEFAULTS
    # C: every round of the 8-app / 32-GPU set-up of docs/themis-results.md: 5,281 rounds, 0
    #    disagreements, 57 s wall
    python papers/themis/experiments/themis_compact_oracle.py capture C.jsonl.gz --workloads 1,2 --contentions 1,2,4 \
        --seeds 101,102,103 --wl n_apps=8 --wl base_gpus=32 --wl apps_per_hour=0.5 --wl load=0.6 \
        --wl jobs_range=[10,40] --sim gpus_per_machine=4
    python papers/themis/experiments/themis_compact_oracle.py compare A.jsonl.gz --workers 2 --audit-lps

``capture`` prints one line per simulation (rounds kept of rounds run, seconds); ``compare`` prints
one line per disagreement, then ``instances N disagreements D wall S s`` with the compact and
full-MILP solve seconds, the count of each PF / leave-one-out route (``extra['pf_route']``,
``extra['loo_routes']``) and, with ``--audit-lps``, the statuses of the compact arbiter's live LP
reads (every "infeasible" re-checked on a fresh model; A + B + C: 42,410 optimal, 2,373
infeasible, all confirmed, no "Optimal" without a point: that was seen only in the crashed round,
round 73 of W2 x2 seed 213). It exits 1 on a disagreement. ``--out
FILE`` writes one JSON row per instance. ``tests/data/themis_rounds_sample.jsonl.gz`` holds 22
rounds of A picked to cover the routes, ``tests/data/themis_round_crash.jsonl.gz`` the round that
crashed the branch and bound (``tests/solvers/test_compact_oracle.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gzip
import inspect
import itertools
import json
import math
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

import numpy as np

#: agreement tolerance on PF values (log units) and on payments c_i
TOL = 1e-6


# --- the round instance as JSON ---------------------------------------------------------------------
def to_doc(cluster, offer, apps, ids, opts, rounding, seed, source=None) -> dict:
    """One auction round's compact input as a JSON-able dict (floats exact: repr round-trips;
    an infinite rho is null)."""
    from dataclasses import asdict

    gpus = [[g.id, g.machine, g.rack, dict(g.pm)] for g in cluster.gpus]
    out = []
    for a in apps:
        t = a.table
        rho = np.where(np.isinf(t.rho), np.nan, t.rho)
        out.append(
            {
                "levels": [float(v) for v in t.levels],
                "rho": [[[None if math.isnan(v) else float(v) for v in s] for s in n] for n in rho],
                "held": [t.held_count, t.held_spread, t.held_level],
                "cls": a.cls,
                "held_machine": a.held_machine,
                "held_rack": a.held_rack,
            }
        )
    return {
        "gpus": gpus,
        "offer": [int(g) for g in offer],
        "ids": list(ids),
        "apps": out,
        "options": asdict(opts),
        "rounding": rounding,
        "seed": int(seed),
        "source": source or {},
    }


def from_doc(doc: dict) -> dict:
    """The arguments of ``auction_on_offer`` (and the ids) from :func:`to_doc`'s dict."""
    from fairplace.core.domain import GPU, Cluster
    from fairplace.formulations.agents import RhoTable
    from fairplace.formulations.compact import CompactApp
    from fairplace.solvers.options import SolveOptions

    cluster = Cluster(tuple(GPU(i, m, r, pm) for i, m, r, pm in doc["gpus"]))
    apps = []
    for app_id, a in zip(doc["ids"], doc["apps"], strict=True):
        rho = np.array(a["rho"], dtype=float)  # None -> nan
        rho[np.isnan(rho)] = np.inf
        hc, hs, hl = a["held"]
        table = RhoTable(app_id, np.array(a["levels"], dtype=float), rho, hc, hs, hl)
        apps.append(CompactApp(table, a["cls"], a["held_machine"], a["held_rack"]))
    return {
        "cluster": cluster,
        "offer": np.array(doc["offer"], dtype=np.int64),
        "apps": tuple(apps),
        "ids": list(doc["ids"]),
        "opts": SolveOptions(**doc["options"]),
        "rounding": doc["rounding"],
        "seed": doc["seed"],
    }


def read_cases(path) -> list[dict]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def round_doc(solve, args, kw) -> dict:
    """:func:`to_doc` of one call ``solve(*args, **kw)`` of ``auction_on_offer`` (bidders named
    by their tables)."""
    b = inspect.signature(solve).bind(*args, **kw)
    b.apply_defaults()
    p = b.arguments
    apps, config = p["apps"], p["config"]
    ids = [a.table.app_id for a in apps]
    return to_doc(p["cluster"], p["offer"], apps, ids, p["opts"], config.rounding, config.seed)


# --- capture ------------------------------------------------------------------------------------------
class _Enough(Exception):
    """Ends a simulation once ``max_rounds`` rounds are captured."""


class _Recorder:
    """Stands in for ``auction_on_offer`` during one simulation: records the chosen rounds."""

    def __init__(self, solve, out, source: dict, max_rounds, skip: int, every: int):
        self.solve, self.out, self.source = solve, out, source
        self.max_rounds, self.skip, self.every = max_rounds, skip, every
        self.n = self.kept = 0

    def __call__(self, *args, **kw):
        keep = self.n >= self.skip and (self.n - self.skip) % self.every == 0
        doc = None
        try:
            if keep:
                doc = round_doc(self.solve, args, kw)
            return self.solve(*args, **kw)
        except Exception as e:
            doc = doc or round_doc(self.solve, args, kw)  # a round that raises is always kept
            doc["raised"] = repr(e)
            raise
        finally:
            if doc is not None:
                doc["source"] = {**self.source, "round": self.n}
                self.out.write(json.dumps(doc) + "\n")
                self.kept += 1
            self.n += 1
            if self.max_rounds is not None and self.n >= self.max_rounds:
                raise _Enough


def capture(
    out, workloads, contentions, seeds, wl: dict, sim: dict, max_rounds=None, skip=0, every=1
) -> int:
    """Simulate every (workload, contention, seed) and append its auction rounds ``skip``,
    ``skip + every``, ... to ``out`` (an open text file), ending each simulation after round
    ``max_rounds``; returns the number of rounds written."""
    import fairplace
    import fairplace.solvers.compact as compact
    from fairplace.instances.workloads import themis_workload

    solve = compact.auction_on_offer
    total = 0
    for w, c, s in itertools.product(workloads, contentions, seeds):
        source = {"workload": w, "contention": c, "seed": s, "wl": wl, "sim": sim}
        rec = _Recorder(solve, out, source, max_rounds, skip, every)
        compact.auction_on_offer = rec
        t0, how = time.perf_counter(), "finished"
        try:
            trace = themis_workload(w, contention=c, seed=s, **wl)
            fairplace.simulate(trace, "themis", "packed-sticky", progress=False, **sim)
        except _Enough:
            how = f"stopped at {max_rounds} rounds"
        except Exception as e:  # a crash: its round is recorded, on to the next simulation
            how = f"raised {e!r}"[:200]
        finally:
            compact.auction_on_offer = solve
        dt = time.perf_counter() - t0
        print(f"W{w} x{c} seed {s}: {rec.kept} of {rec.n} rounds, {dt:.1f} s, {how}", flush=True)
        total += rec.kept
    return total


# --- compare ------------------------------------------------------------------------------------------
def real_rho(cluster, app, gpus: tuple[int, ...]) -> float:
    """rho of app ``app`` given GPU indices ``gpus`` on top of what it holds, from its table at the
    union's real spread and worst level (held GPUs known by count, spread, level, machine, rack)."""
    from fairplace.core.domain import spread

    t = app.table
    idx = np.asarray(gpus, dtype=np.int64)
    s = spread(cluster.machine_index, cluster.rack_index, idx)
    if t.held_count:
        s = max(s, t.held_spread)
        ms, rs = set(cluster.machine_index[idx].tolist()), set(cluster.rack_index[idx].tolist())
        if app.held_machine >= 0 and ms != {app.held_machine}:
            s = max(s, 1)
        if app.held_rack >= 0 and rs != {app.held_rack}:
            s = 2
    v = max(t.level(float(cluster.pm_vector(app.cls)[idx].max())), t.held_level)
    return float(t.rho[idx.size, s, v])


@contextlib.contextmanager
def lp_audit(counts: Counter):
    """Count the statuses of the compact arbiter's live-model LP reads (``fairplace.solvers.backends.highs.
    read``: branch and bound, dives, leave-one-out chains) in ``counts``, and solve every LP said
    to be infeasible again on a fresh model (``lp_infeasible_unconfirmed`` when that one is not)."""
    import fairplace.solvers.backends.highs as live

    read, lock = live.read, threading.Lock()

    def audited(h, milp, seconds):
        res = read(h, milp, seconds)
        cold = None
        if res.status == "infeasible":
            fresh = live.new_highs()
            fresh.setOptionValue("output_flag", False)
            fresh.passModel(h.getLp())
            fresh.run()
            cold = fresh.modelStatusToString(fresh.getModelStatus())
        with lock:
            counts[f"lp_{res.status}"] += 1
            if cold is not None and cold != "Infeasible":
                counts["lp_infeasible_unconfirmed"] += 1
        return res

    live.read = audited
    try:
        yield counts
    finally:
        live.read = read


def compare(
    doc: dict,
    tol: float = TOL,
    audit: bool = False,
    enum_limit: int | None = None,
    route: str = "auto",
) -> dict:
    """One round: the compact auction against the full MILP (module docstring). A row with
    ``problems`` (empty when they agree), the seconds of both and the compact routes; ``audit``:
    also ``lps``, the :func:`lp_audit` counts of the compact auction; ``enum_limit`` 0: the LP /
    MILP route even where the enumeration (``solvers/compact/enumeration.py``) would settle the round;
    ``route``: ``auction_on_offer``'s (``compact``: no DP, ``solvers/compact/dp.py``)."""
    from fairplace.formulations import pa
    from fairplace.formulations.compact import CompactProgram
    from fairplace.solvers.compact import CompactAuctionOptions, auction_on_offer, solve_compact_pf

    a = from_doc(doc)
    cl, offer, apps, ids, opts = a["cluster"], a["offer"], a["apps"], a["ids"], a["opts"]
    row = {"source": doc.get("source", {}), "apps": len(apps), "offer": int(offer.size)}
    problems: list[str] = []
    t0, lps = time.perf_counter(), Counter()
    try:
        with lp_audit(lps) if audit else contextlib.nullcontext():
            config = CompactAuctionOptions(
                a["rounding"],
                a["seed"],
                route=route,
                **({} if enum_limit is None else {"enum_limit": enum_limit}),
            )
            sol = auction_on_offer(cl, offer, apps, opts, config).solution(cl, ids, "compact")
    except Exception as e:
        row.update(problems=[f"compact raised {e!r}"], compact_s=time.perf_counter() - t0)
        return row
    row["compact_s"] = time.perf_counter() - t0
    if audit:
        row["lps"] = dict(lps)
    row["pf_route"] = sol.extra.get("pf_route")
    row["loo_routes"] = sol.extra.get("loo_routes")
    if sol.status != "optimal":
        problems.append(f"compact status {sol.status!r}: {sol.message}")
    pos = {app_id: k for k, app_id in enumerate(ids)}
    prog = CompactProgram(cl, tuple(int(g) for g in offer), apps)
    choice = {}
    seen: set[int] = set()
    offered = set(offer.tolist())
    for app_id, gids in (sol.pf_allocation or {}).items():
        i, idx = pos[app_id], tuple(int(g) for g in cl.indices(gids))
        cell = tuple(sol.extra["cells"][app_id])
        choice[i] = (cell, idx)
        if not set(idx) <= offered or seen & set(idx) or len(set(idx)) != len(idx):
            problems.append(f"{app_id}: PF bundle not offered or not disjoint")
        seen |= set(idx)
        if cell[0] != len(idx):
            problems.append(f"{app_id}: {len(idx)} GPUs for a cell of {cell[0]}")
        claimed = float(apps[i].table.rho[cell])
        if real_rho(cl, apps[i], idx) > claimed * (1 + 1e-12):
            problems.append(f"{app_id}: its bundle's rho exceeds the claimed {claimed!r}")
        if app_id in sol.allocation and not set(sol.allocation[app_id]) <= set(gids):
            problems.append(f"{app_id}: final bundle outside its PF bundle")
    val = prog.value(choice)
    t1 = time.perf_counter()
    res, ch, full = solve_compact_pf(cl, offer, apps, opts, lp_first=False, aggregate=False)
    if ch is None or res.status != "optimal":
        problems.append(f"full MILP PF: {res.status} ({res.message})")
    else:
        ref = full.value(ch)
        row["pf"], row["pf_full"] = val.log_sum, ref.log_sum
        if val.n_unbounded_served != ref.n_unbounded_served or not _close(
            val.log_sum, ref.log_sum, tol
        ):
            problems.append(f"PF value {val} != full MILP {ref}")
    for i in range(len(apps)):
        c = (sol.payments or {}).get(ids[i])
        if i not in choice:
            if c != 1.0:
                problems.append(f"{ids[i]}: no PF bundle but c = {c!r}")
            continue
        rest = {j: v for j, v in choice.items() if j != i}
        r, chi, p = solve_compact_pf(
            cl, offer, apps, opts, frozenset({i}), rest, lp_first=False, aggregate=False
        )
        if chi is None or r.status != "optimal":
            problems.append(f"{ids[i]}: full MILP PF_-i {r.status} ({r.message})")
            continue
        with_i = CompactProgram(cl, prog.offer, apps, frozenset({i})).value(rest)
        ref_c = pa.payment(with_i, p.value(chi))
        if c is None or not _close(c, ref_c, tol):
            problems.append(f"{ids[i]}: c = {c!r}, full MILP {ref_c!r}")
    row["full_s"] = time.perf_counter() - t1
    row["problems"] = problems
    return row


def _close(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def _compare_line(line: str, audit: bool = False) -> dict:
    return compare(json.loads(line), audit=audit)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    cap = sub.add_parser("capture")
    cap.add_argument("out")
    cap.add_argument("--workloads", default="1,2")
    cap.add_argument("--contentions", default="1,2,4")
    cap.add_argument("--seeds", default="101")
    cap.add_argument("--wl", action="append", default=[], help="themis_workload KEY=JSON")
    cap.add_argument("--sim", action="append", default=[], help="simulate KEY=JSON")
    cap.add_argument("--max-rounds", type=int, default=None, help="per simulation")
    cap.add_argument("--skip", type=int, default=0, help="rounds not recorded first")
    cap.add_argument("--every", type=int, default=1, help="record every k-th round")
    cmp = sub.add_parser("compare")
    cmp.add_argument("cases")
    cmp.add_argument("--workers", type=int, default=1)
    cmp.add_argument("--limit", type=int, default=None)
    cmp.add_argument("--out", default=None)
    cmp.add_argument("--audit-lps", action="store_true", help="count live LP statuses (lp_audit)")
    args = ap.parse_args(argv)
    if args.cmd == "capture":
        ints = [
            [int(v) for v in x.split(",")] for x in (args.workloads, args.contentions, args.seeds)
        ]
        wl, sim = (dict(_kv(v) for v in vs) for vs in (args.wl, args.sim))
        opener = gzip.open if args.out.endswith(".gz") else open
        t0 = time.perf_counter()
        with opener(args.out, "at") as out:
            n = capture(out, *ints, wl, sim, args.max_rounds, args.skip, args.every)
        print(f"captured {n} rounds in {time.perf_counter() - t0:.1f} s -> {args.out}")
        return 0
    opener = gzip.open if args.cases.endswith(".gz") else open
    with opener(args.cases, "rt") as f:
        lines = [ln for ln in f if ln.strip()][: args.limit]
    t0 = time.perf_counter()
    bad, routes, pf_routes, lps, secs = 0, Counter(), Counter(), Counter(), [0.0, 0.0]
    sink = open(args.out, "w") if args.out else None
    run = functools.partial(_compare_line, audit=args.audit_lps)
    with ProcessPoolExecutor(args.workers) if args.workers > 1 else _Serial() as ex:
        for k, row in enumerate(ex.map(run, lines, chunksize=4)):
            if row["problems"]:
                bad += 1
                print(f"#{k} {row['source']}: {'; '.join(row['problems'])}", flush=True)
            routes.update(row.get("loo_routes") or {})
            pf_routes[row.get("pf_route")] += 1
            lps.update(row.get("lps") or {})
            secs[0] += row.get("compact_s", 0.0)
            secs[1] += row.get("full_s", 0.0)
            if sink:
                sink.write(json.dumps(row) + "\n")
    if sink:
        sink.close()
    wall = time.perf_counter() - t0
    print(
        f"instances {len(lines)} disagreements {bad} wall {wall:.1f} s "
        f"(compact {secs[0]:.1f} s, full MILP {secs[1]:.1f} s; workers {args.workers})"
    )
    print(f"pf routes {dict(pf_routes)}; leave-one-out routes {dict(routes)}")
    if args.audit_lps:
        print(f"live LP reads {dict(lps)}")
    return 1 if bad else 0


def _kv(text: str):
    key, _, value = text.partition("=")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


class _Serial:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def map(self, fn, items, chunksize=1):
        return map(fn, items)


if __name__ == "__main__":
    sys.exit(main())
