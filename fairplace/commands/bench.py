"""``fairplace bench [--quick] [--json] [--scaling]``: run every ``CASES`` entry of
``fairplace.benchmarks.*``, or (``--scaling``) the growth exponents of ``benchmarks/scaling.py``."""

from __future__ import annotations

import json
import pkgutil
import sys
from importlib import import_module

import fairplace.benchmarks as pkg

HELP = "run the benchmarks, each next to its target"


def add_arguments(p) -> None:
    p.add_argument("--quick", action="store_true", help="fewer repetitions (same sizes)")
    p.add_argument("--json", action="store_true", help="print a JSON list of results")
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
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help="run each case in its own process and stop it after S seconds (an error entry)",
    )


def collect() -> list[tuple[str, str, object, float | None]]:
    """(module, case name, run, target_seconds) of every benchmark module; a module that fails to
    import yields one case whose run raises the import error."""
    out = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        try:
            mod = import_module(f"{pkg.__name__}.{info.name}")
        except Exception as exc:  # noqa: BLE001 - report it as a failed case

            def broken(quick, exc=exc):
                raise exc

            out.append((info.name, f"{info.name} (import)", broken, None))
            continue
        for name, (run, target) in getattr(mod, "CASES", {}).items():
            out.append((info.name, name, run, target))
    return out


def _entry(module: str, name: str, target, res: dict | None, error: str | None = None) -> dict:
    entry = {"name": name, "module": module, "target_seconds": target}
    if error is not None:
        return entry | {"seconds": None, "ok": False, "error": error}
    res = dict(res)
    seconds = res.pop("seconds", None)
    ok = None if target is None or seconds is None else bool(seconds <= target)
    return entry | {"seconds": seconds, "ok": ok} | res


def run_case(module: str, name: str, run, target, quick: bool) -> dict:
    """One result object: name, seconds, target_seconds, ok, module (+ extras, or ``error``)."""
    try:
        res = dict(run(quick))
    except Exception as exc:  # noqa: BLE001 - a failing case is an entry, never an abort
        return _entry(module, name, target, None, f"{type(exc).__name__}: {exc}")
    return _entry(module, name, target, res)


def _child(module: str, name: str, quick: bool, conn) -> None:
    """Run one case in a fresh process (``--timeout``) and send back (result, error)."""
    try:
        run, _ = import_module(f"fairplace.benchmarks.{module}").CASES[name]
        conn.send((dict(run(quick)), None))
    except Exception as exc:  # noqa: BLE001
        conn.send((None, f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def run_case_isolated(module: str, name: str, target, quick: bool, timeout: float) -> dict:
    """Like :func:`run_case`, in a spawned process that is killed after ``timeout`` seconds."""
    import multiprocessing as mp  # imported on use (--timeout): keeps `fairplace --help` light

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


def _fmt(v, spec=".4g") -> str:
    return "-" if v is None else format(v, spec)


def _scaling(args) -> int:
    from fairplace.benchmarks.scaling import run_scaling  # heavy (pandas): imported on use

    results = run_scaling(args.quick, args.only)
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    for r in results:
        if "error" in r:
            print(f"{r['name']:<38} error: {r['error']}")
            continue
        pts = ", ".join(f"{n}: {s:.3g} s" for n, s in zip(r["sizes"], r["seconds"], strict=True))
        print(f"{r['name']:<38} exponent {r['exponent']:.2f}  ({pts})")
    return 0


def run(args) -> int:
    if args.scaling:
        return _scaling(args)
    cases = collect()
    if args.only:  # a case's full name selects that case alone, else every name containing it
        exact = [c for c in cases if c[1] == args.only]
        cases = exact or [c for c in cases if args.only in c[1]]
    if args.list:
        for module, name, _, target in cases:
            print(f"{name:<34} {_fmt(target):>8}  ({module})")
        return 0
    results = []
    for module, name, fn, target in cases:
        sys.stderr.write(f"bench: {name} ...\n")
        sys.stderr.flush()
        if args.timeout is not None and not name.endswith("(import)"):
            r = run_case_isolated(module, name, target, args.quick, args.timeout)
        else:
            r = run_case(module, name, fn, target, args.quick)
        sys.stderr.write(
            f"bench: {name}: {_fmt(r['seconds'])} s{' (error)' if 'error' in r else ''}\n"
        )
        results.append(r)
    if args.json:
        print(json.dumps(results, indent=1, default=str))
        return 0
    print(f"{'name':<34} {'seconds':>10} {'target':>8} {'ok':>5}")
    for r in results:
        ok = "ERR" if "error" in r else {True: "yes", False: "NO", None: "-"}[r["ok"]]
        print(f"{r['name']:<34} {_fmt(r['seconds']):>10} {_fmt(r['target_seconds']):>8} {ok:>5}")
        if "error" in r:
            print(f"  error: {r['error']}")
    return 0
