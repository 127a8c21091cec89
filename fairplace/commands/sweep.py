"""``fairplace sweep SPEC.toml [--out FILE] [--workers N | --scheduler-address ADDR] [--resume]``."""

from __future__ import annotations

import json

from fairplace.commands import _args

HELP = "run a grid of schedulers x placements x traces x parameters x seeds through the simulator"


def add_arguments(p) -> None:
    p.add_argument("spec", help="sweep spec (TOML; see fairplace.runs.sweep)")
    p.add_argument(
        "--out",
        default=None,
        metavar="FILE",
        help="results table (.parquet and .csv siblings); default <spec name>-results.parquet",
    )
    from fairplace.runs.params import WORKERS  # light: the spec

    where = p.add_mutually_exclusive_group()
    where.add_argument(
        WORKERS.flag,
        type=_args.param(WORKERS),
        default=WORKERS.default,
        metavar="N",
        help=WORKERS.help(),
    )
    where.add_argument(
        "--scheduler-address",
        default=None,
        metavar="ADDR",
        help="run the cells on an existing Dask scheduler (tls://, TLS files from the Dask "
        "configuration, docs/dask.md; tcp:// to loopback, or with --allow-insecure)",
    )
    _args.allow_insecure(p)
    p.add_argument(
        "--resume", action="store_true", help="skip cells already in the journal <out>.jsonl"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument(
        "--validate-only", action="store_true", help="check the spec and print the grid size"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (name and cells; with a run also rows, failed and paths)",
    )


def run(args) -> int:
    from fairplace.runs.sweep import (  # heavy: imported on use (keeps --help light)
        load_spec,
        results_paths,
        run_sweep,
    )

    spec = load_spec(args.spec)
    if args.validate_only:  # load_spec checked every cell's options against their specs
        if args.json:
            print(json.dumps({"name": spec.name, "cells": len(spec)}))
        else:
            print(f"{spec.name}: {len(spec)} cells")
        return 0
    out = _args.out_file(args.out or f"{spec.name}-results.parquet", (".parquet", ".csv"))
    df = run_sweep(
        spec,
        out,
        resume=args.resume,
        workers=args.workers,
        progress=not args.no_progress,
        scheduler_address=_args.scheduler_address(args),
    )
    paths = results_paths(out)
    n_err = int((df["status"] != "ok").sum()) if "status" in df else 0
    if args.json:
        doc = {"name": spec.name, "cells": len(spec), "rows": len(df), "failed": n_err}
        doc["paths"] = {k: str(paths[k]) for k in ("parquet", "csv", "jsonl")}
        print(json.dumps(doc))
    else:
        print(f"{len(df)} rows ({n_err} failed) -> {paths['parquet']} and {paths['csv']}")
    return 0 if n_err == 0 else 1
