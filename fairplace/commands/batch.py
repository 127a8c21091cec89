"""``fairplace batch SUITE [--solvers a,b] [--workers N | --scheduler-address ADDR] [--time-limit S]
[--out FILE] [--resume]``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fairplace.commands import _args
from fairplace.commands._table import frame
from fairplace.core.errors import OptionError

HELP = "solve a suite (registered name or folder of JSON files) on Dask into a results table"


def add_arguments(p) -> None:
    p.add_argument("suite", metavar="SUITE", help="registered suite name or folder of *.json")
    p.add_argument(
        "--solvers", default="exact", help="comma-separated solver names (default exact)"
    )
    from fairplace.runs.params import BATCH_WORKERS, NO_WORKERS_TIMEOUT  # light: the specs

    where = p.add_mutually_exclusive_group()
    where.add_argument(
        BATCH_WORKERS.flag,
        type=_args.param(BATCH_WORKERS),
        default=None,  # None, not 2: argparse sees "--workers 2 --scheduler-address" as a clash
        metavar="N",
        help=BATCH_WORKERS.help() + "; a batch too small to repay a cluster's start-up (few "
        "tasks, little estimated work) is solved in this process, and the output says which ran "
        "and why",
    )
    where.add_argument(
        "--scheduler-address", default=None, metavar="ADDR", help="existing Dask scheduler"
    )
    _args.allow_insecure(p)
    from fairplace.solvers.options import TIME_LIMIT  # heavy: imported on use (help text)

    p.add_argument(
        TIME_LIMIT.flag,
        type=_args.param(TIME_LIMIT),
        default=None,
        metavar="S",
        help=TIME_LIMIT.help(),
    )
    p.add_argument(
        "--out",
        default=None,
        metavar="FILE",
        help="results .parquet (default batch-<suite>.parquet), .csv or .jsonl; "
        "the journal <FILE>.jsonl is written as results arrive",
    )
    p.add_argument("--resume", action="store_true", help="skip pairs already in the journal")
    p.add_argument("--overwrite", action="store_true", help="discard an existing journal")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: out, rows and the per-solver summary (records)",
    )
    p.add_argument(
        NO_WORKERS_TIMEOUT.flag,
        type=_args.param(NO_WORKERS_TIMEOUT),
        default=NO_WORKERS_TIMEOUT.default,
        metavar="S",
        help=NO_WORKERS_TIMEOUT.help(),
    )


def run(args) -> int:

    from fairplace.runs.batch import (  # heavy: imported on use (keeps --help light)
        journal_path,
        run_batch,
        summarize,
    )
    from fairplace.runs.params import BATCH_WORKERS

    solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    if not solvers:
        raise OptionError("--solvers", "give at least one solver name")
    out = args.out or f"batch-{Path(args.suite).name or 'suite'}.parquet"
    _args.out_file(out, (".parquet", ".csv", ".jsonl"))
    try:
        df = run_batch(
            args.suite,
            solvers=solvers,
            workers=BATCH_WORKERS.default if args.workers is None else args.workers,
            scheduler_address=_args.scheduler_address(args),
            time_limit=args.time_limit,
            out=out,
            resume=args.resume,
            overwrite=args.overwrite,
            progress=not args.no_progress,
            no_workers_timeout=args.no_workers_timeout,
        )
    except KeyboardInterrupt:
        sys.stderr.write(
            f"fairplace batch: interrupted; finished rows are in {journal_path(out)} "
            "(rerun with --resume)\n"
        )
        return 130
    how = df.attrs.get("batch", {})
    if args.json:
        summary = json.loads(summarize(df).to_json(orient="records"))
        print(json.dumps({"out": str(out), "rows": len(df), "summary": summary, "batch": how}))
        return 0
    print(frame(summarize(df)))
    print(f"{len(df)} rows -> {out}")
    if how.get("tasks"):
        print(
            f"solved {how['reason']}; start-up {how['startup_seconds']:.1f} s, "
            f"solving {how['solve_seconds']:.1f} s, close {how['close_seconds']:.1f} s"
        )
    return 0
