"""``fairplace solve FILE.json [--solver NAME] [--time-limit S] [--json]``."""

from __future__ import annotations

import json

from fairplace.commands import _args

HELP = "solve one auction or placement instance"


def add_arguments(p) -> None:
    from fairplace.solvers.registry import solver_table

    names = list(solver_table())
    p.add_argument("file", help="instance JSON (kind: auction | placement)")
    p.add_argument(
        "--solver",
        default="exact",
        metavar="NAME",  # validated by fairplace.solve ("unknown solver ...", exit 2)
        help=f"exact back ends, heuristics and placement policies: {', '.join(names)} "
        "(default exact)",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="S",
        help="seconds; returns the best incumbent",
    )
    p.add_argument(
        "--rounding", default=None, help="auctions: floor (default) | lottery | fractional"
    )
    p.add_argument(
        "--seed", type=_args.seed, default=None, help="seed for randomised rules and policies"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args) -> int:
    import fairplace

    inst = fairplace.load(args.file)
    kw = {}
    if args.rounding is not None:
        if inst.kind != "auction":
            from fairplace.errors import OptionError

            raise OptionError("--rounding", "only applies to auction instances")
        kw["rounding"] = args.rounding
    if args.seed is not None:
        kw["seed"] = args.seed
    sol = fairplace.solve(inst, solver=args.solver, time_limit=args.time_limit, **kw)
    if args.json:
        print(json.dumps(sol.to_dict(), indent=1, default=str))
    else:
        print(repr(sol))
    return 0 if sol.status not in ("error",) else 1
