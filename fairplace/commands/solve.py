"""``fairplace solve FILE.json [--solver NAME] [--time-limit S] [--json]``."""

from __future__ import annotations

import argparse
import json
import sys

from fairplace.commands import _args
from fairplace.core.errors import OptionError

HELP = "solve one auction or placement instance"

#: exit code of a time-limited solve that found no feasible solution (no objective, no allocation)
EXIT_NO_SOLUTION = 3

EPILOG = f"""\
--time-limit S is the budget of the whole solve (auctions: listing agent-form apps' subset bids,
pruning, building the models, the PF solve, every leave-one-out payment solve and the rounding;
placements: PAL's warm start and the joint MILP), from the moment the solver is set up (loading the
file and one-time set-up such as imports are not counted, setup_seconds; seconds is all the rest);
each solve gets what is left, minus a margin of min(10% of S, 0.5 s) kept for the final steps.
When it runs out the status is time_limit: the best incumbent, its bound and gap when the bound can
be stated in the objective's units, and (auctions) the apps whose payments are inexact in
extra.payments_inexact. Without --solver (with --time-limit: also --solver exact or
highs), an agent-form auction with more than 1,000 subset bids is solved by the compact arbiter
(extra.route says which route ran).

exit status:
  0  a result (status optimal, heuristic, bound, infeasible, or time_limit with an incumbent)
  1  the solver failed (status error), or an internal error
  2  bad input (one line on stderr naming the field), or an option the solver does not take
     (e.g. --rounding for a heuristic, which returns no partial allocation); with --json the line
     is a JSON object {{"error": ..., "where": ...}} on stderr
  {EXIT_NO_SOLUTION}  time limit reached with no feasible solution (status time_limit, objective null)
  141  stdout closed (| head, >&-)
"""


#: the solver that reads agent-form apps only (a bid-table auction has nothing for it)
AGENT_ONLY = "compact"

#: library parameter -> the flag that sets it (an OptionError about a parameter names the flag;
#: the solver options' flags are their specs', ``solvers/solver_params.py``)
FLAGS = {"solver": "--solver", "rounding": "--rounding", "seed": "--seed"}


def add_arguments(p) -> None:

    p.epilog = EPILOG
    p.formatter_class = argparse.RawDescriptionHelpFormatter

    from fairplace.solvers.options import (  # heavy: imported on use (help text)
        ROUNDING,
        SEED,
        TIME_LIMIT,
    )
    from fairplace.solvers.registry import solver_table

    table = solver_table()
    # compact reads agent-form apps only: never offered for bid-table auctions
    bids = [n for n, kinds in table.items() if "auction" in kinds and n != AGENT_ONLY]
    places = [n for n, kinds in table.items() if "placement" in kinds]
    p.add_argument("file", help="instance JSON (kind: auction | placement)")
    p.add_argument(
        "--solver",
        default=None,
        metavar="NAME",  # validated by fairplace.solve ("unknown solver ...", exit 2)
        help=f"auctions: {', '.join(bids)}; agent-form auctions also {AGENT_ONLY}; placements: "
        f"{', '.join(places)} (default: exact; an agent-form auction with many subset bids: "
        f"{AGENT_ONLY})",
    )
    p.add_argument(
        TIME_LIMIT.flag,
        type=_args.param(TIME_LIMIT),
        default=None,
        metavar="S",
        help=f"{TIME_LIMIT.help()}; see below",
    )
    p.add_argument(ROUNDING.flag, default=None, help=ROUNDING.help())
    p.add_argument(SEED.flag, type=_args.param(SEED), default=None, help=SEED.help())
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args) -> int:
    import fairplace  # heavy: imported on use (keeps --help light)

    inst = fairplace.load(args.file)
    kw = {}
    if args.rounding is not None:
        if inst.kind != "auction":
            raise OptionError("--rounding", "only applies to auction instances")
        kw["rounding"] = args.rounding
    if args.seed is not None:
        kw["seed"] = args.seed
    try:
        sol = fairplace.solve(
            inst, solver=args.solver, time_limit=args.time_limit, validate=False, **kw
        )
    except OptionError as exc:  # library errors name parameters; the CLI names its flags
        if exc.path in FLAGS:
            raise type(exc)(FLAGS[exc.path], exc.problem) from None
        raise
    if args.json:
        print(json.dumps(sol.to_dict(), indent=1, default=str))
    else:
        print(repr(sol))
    return exit_code(sol, as_json=args.json)


def exit_code(sol, as_json: bool = False) -> int:
    """0 = a solution, 1 = solver error, EXIT_NO_SOLUTION = time limit without any solution (one
    line on stderr; a JSON object with ``--json``, as every error)."""

    if sol.status == "error":
        return 1
    if sol.status == "time_limit" and sol.objective is None:
        problem = f"time limit reached with no feasible solution (exit {EXIT_NO_SOLUTION})"
        line = (
            json.dumps({"error": problem, "where": None})
            if as_json
            else f"fairplace solve: {problem}"
        )
        print(line, file=sys.stderr)
        return EXIT_NO_SOLUTION
    return 0
