"""``fairplace bench [--quick] [--json] [--scaling]``: run every case of
:data:`~fairplace.benchmarks.registry.BENCH_REGISTRY` (``--only``: those a name selects), or
(``--scaling``) the growth exponents of ``benchmarks/scaling.py``.

Each finished case is one result object (name, module, target_seconds, seconds, ok, quick, sizes
and the case's own numbers, or ``error`` / ``skipped``); ``--json`` prints it at once as one JSON
line (JSON Lines: a run stopped half-way keeps every finished case), else a table follows at the
end. Progress: a rich bar on stderr (on a terminal) and one log line per case (``--quiet`` hides
them). Exit status (:data:`EPILOG`): 1 when a case that ran missed its target or failed (``ok``
false), else 0, so a script can tell."""

from __future__ import annotations

import json
import logging
from typing import Any

from fairplace.benchmarks import QUICK, Case, as_case
from fairplace.commands import _args
from fairplace.commands._table import table
from fairplace.core.errors import UnknownName
from fairplace.core.keys import suggestion
from fairplace.core.limits import MAX_TIME
from fairplace.core.params import Interval, Param
from fairplace.core.progress import progress_bar

HELP = "run the benchmarks, each next to its target"
#: the exit-status rule, shown by ``fairplace bench --help``
EPILOG = (
    "exit status: 1 when any case that ran missed its target or failed (its 'ok' is false), "
    "0 otherwise (cases with no target and cases --quick skips never fail the run)"
)
log = logging.getLogger(__name__)


#: ``--timeout``: each case in a spawned process, stopped after this many seconds
TIMEOUT = Param(
    "timeout",
    None,
    Interval(0.0, MAX_TIME, closed="right"),
    "run each case in its own process and stop it after S seconds (an error entry; None: in "
    "this process, no limit)",
    flag="--timeout",
    nullable=True,
)


def add_arguments(p) -> None:
    p.epilog = EPILOG
    p.add_argument(QUICK.flag, action="store_true", help=QUICK.doc)
    p.add_argument(
        "--json", action="store_true", help="print one JSON line per case as it finishes"
    )
    p.add_argument(
        "--only",
        default=None,
        metavar="TEXT",
        help="the case named TEXT, else the cases whose name contains TEXT",
    )
    p.add_argument("--list", action="store_true", help="list the cases and their targets")
    p.add_argument(
        "--scaling",
        action="store_true",
        help="print the growth exponent (log-log slope) of PAL rounds, simulation and compact PA",
    )
    p.add_argument(
        TIMEOUT.flag,
        type=_args.param(TIMEOUT),
        default=TIMEOUT.default,
        metavar="S",
        help=TIMEOUT.help(),
    )


def collect() -> list[tuple[str, str, Case]]:
    """(module, case name, :class:`Case`) of every bench case, in the registry's order."""
    from fairplace.benchmarks.registry import BENCH_REGISTRY  # imports every case's module

    return [(e.capabilities["module"], name, as_case(e)) for name, e in BENCH_REGISTRY.items()]


def select(cases: list[tuple[str, str, Case]], only: str) -> list[tuple[str, str, Case]]:
    """The case named ``only`` alone, else every case whose name contains it; none is an
    :class:`UnknownName` naming ``--only`` and the nearest names."""
    exact = [c for c in cases if c[1] == only]
    picked = exact or [c for c in cases if only in c[1]]
    if not picked:
        names = [c[1] for c in cases]
        near = suggestion(only, names)
        hint = f"did you mean {near!r}?" if near else "see fairplace bench --list"
        raise UnknownName("--only", f"no bench case named or containing {only!r}; {hint}")
    return picked


def _entry(
    module: str, name: str, case: Case | float | None, res: dict | None, error: str | None = None
) -> dict:
    case = case if isinstance(case, Case) else Case(lambda q: {}, case)
    entry: dict[str, Any] = {"name": name, "module": module, "target_seconds": case.target}
    if error is not None or res is None:  # exactly one of the two is given
        return entry | {"seconds": None, "ok": False, "sizes": case.sizes, "error": error}
    res = dict(res)
    seconds = res.pop("seconds", None)
    ok = None if case.target is None or seconds is None else bool(seconds <= case.target)
    entry |= {"seconds": seconds, "ok": ok, "sizes": res.pop("sizes", {})} | res
    ran = {k: entry["sizes"].get(k) for k in case.sizes}
    if ran != case.sizes:  # a result never claims a size it did not run
        entry |= {"ok": False, "error": f"ran sizes {ran}, its name states {case.sizes}"}
    return entry


def run_case(module: str, name: str, run, target, quick: bool) -> dict:
    """One result object: name, seconds, target_seconds, ok, module, sizes (+ the case's numbers,
    or ``error``). ``target``: the :class:`Case` (or its target seconds)."""
    try:
        res = dict(run(quick))
    except Exception as exc:  # noqa: BLE001 - a failing case is an entry, never an abort
        return _entry(module, name, target, None, f"{type(exc).__name__}: {exc}")
    return _entry(module, name, target, res)


def _child(module: str, name: str, quick: bool, conn) -> None:
    """Run one case in a fresh process (``--timeout``) and send back (result, error)."""
    try:
        from fairplace.benchmarks.registry import BENCH_REGISTRY

        case = as_case(BENCH_REGISTRY.get(name))
        conn.send((dict(case.run(quick)), None))
    except Exception as exc:  # noqa: BLE001
        conn.send((None, f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def run_case_isolated(module: str, name: str, target, quick: bool, timeout: float) -> dict:
    """Like :func:`run_case`, in a spawned process that is killed after ``timeout`` seconds."""
    import multiprocessing as mp  # heavy: imported on use (--timeout only)

    ctx = mp.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(module, name, quick, send))
    proc.start()
    send.close()
    if recv.poll(timeout):
        try:
            res, error = recv.recv()
        except EOFError:
            proc.join()
            res, error = None, f"the case's process died (exit code {proc.exitcode})"
    else:
        res, error = None, f"TimeoutError: stopped after {timeout:g} s"
        proc.kill()
    proc.join()
    return _entry(module, name, target, res, error)


def skipped(module: str, name: str, case: Case) -> dict:
    """The entry of a case ``--quick`` does not run."""
    return _entry(module, name, case, {"seconds": None, "sizes": case.sizes}) | {
        "skipped": f"full mode only: {case.full_only}"
    }


def _scaling(args) -> int:
    from fairplace.benchmarks.scaling import run_scaling  # heavy (pandas): imported on use

    results = run_scaling(args.quick, args.only)
    if args.json:
        for r in results:
            print(json.dumps(r), flush=True)
        return 0
    rows = []
    for r in results:
        if "error" in r:
            rows.append((r["name"], None, f"error: {r['error']}"))
            continue
        pts = ", ".join(f"{n}: {s:.3g} s" for n, s in zip(r["sizes"], r["seconds"], strict=True))
        rows.append((r["name"], r["exponent"], pts))
    print(table(rows, ["series", "exponent", "sizes: seconds"]))
    return 0


def _status(r: dict) -> str:
    if "error" in r:
        return "ERR"
    if "skipped" in r:
        return "skipped"
    return {True: "yes", False: "NO", None: "-"}[r["ok"]]


def _sizes_text(sizes: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in sizes.items())


def exit_status(results: list[dict]) -> int:
    """1 when any result's ``ok`` is false (a missed target or an error), else 0."""
    return 1 if any(r.get("ok") is False for r in results) else 0


def run(args) -> int:
    if args.scaling:
        return _scaling(args)
    cases = collect()
    if args.only:
        cases = select(cases, args.only)
    if args.list:
        rows = [
            (name, case.target, _sizes_text(case.sizes), case.full_only or "", module)
            for module, name, case in cases
        ]
        print(table(rows, ["name", "target (s)", "sizes", "skipped by --quick", "module"]))
        return 0
    results = []
    with progress_bar(len(cases), "bench", not getattr(args, "quiet", False)) as bar:
        for module, name, case in cases:
            if args.quick and case.full_only:
                r = skipped(module, name, case)
                log.info("bench: %s skipped (%s)", name, r["skipped"])
            else:
                log.info("bench: %s ...", name)
                if args.timeout is not None:
                    r = run_case_isolated(module, name, case, args.quick, args.timeout)
                else:
                    r = run_case(module, name, case.run, case, args.quick)
                secs = "-" if r["seconds"] is None else f"{r['seconds']:.4g}"
                log.info("bench: %s: %s s%s", name, secs, " (error)" if "error" in r else "")
            r["quick"] = bool(args.quick)
            if args.json:
                print(json.dumps(r, default=str), flush=True)  # one line per finished case
            results.append(r)
            bar.advance()
    if args.json:
        return exit_status(results)
    rows = [
        (r["name"], r["seconds"], r["target_seconds"], _status(r), _sizes_text(r["sizes"]))
        for r in results
    ]
    print(table(rows, ["name", "seconds", "target", "ok", "sizes"]))
    for r in results:
        if "error" in r:
            print(f"{r['name']}: error: {r['error']}")
    return exit_status(results)
