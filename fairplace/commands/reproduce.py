"""``fairplace reproduce [themis|pal|all] [--quick] [--out DIR]``."""

from __future__ import annotations

import json
import logging

from fairplace.commands import _args, file_backend
from fairplace.commands._table import table
from fairplace.papers import PAPERS

HELP = "reproduce the THEMIS and PAL papers' headline experiments into report.md + report.html"
log = logging.getLogger(__name__)


def add_arguments(p) -> None:
    p.add_argument(
        "paper",
        nargs="?",
        default="all",
        choices=(*PAPERS, "all"),
        help="which paper's experiments to run (default all)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="small seeds and grids (2-12 min on 2 cores, quiet to loaded: docs/run-times.md)",
    )
    p.add_argument("--tiny", action="store_true", help="smoke-test size (seconds; for tests)")
    p.add_argument("--out", default="fairplace-report", metavar="DIR", help="report folder")
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
        help="run simulation sweeps on an existing Dask scheduler (tls://, TLS files from the "
        "Dask configuration, docs/dask.md; tcp:// to loopback, or with --allow-insecure)",
    )
    _args.allow_insecure(p)
    p.add_argument(
        "--resume",
        action="store_true",
        help="keep the cells the simulation sweeps already journaled in OUT/data (a killed or "
        "split run; journals from other machines of the same experiment may be appended)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: headline, counts (paper claims and package checks apart, "
        "per paper and in total), report paths and the claims table (records)",
    )


def run(args) -> int:
    # heavy (pandas, matplotlib): imported on use
    from fairplace.analysis.report import claim_outcomes, count_line
    from fairplace.runs.reproduce import reproduce

    file_backend()
    _args.out_dir(args.out)
    size = "tiny" if args.tiny else "quick" if args.quick else "full"
    res = reproduce(
        args.paper,
        size=size,
        out=args.out,
        progress=not args.no_progress,
        workers=args.workers,
        scheduler_address=_args.scheduler_address(args),
        resume=args.resume,
        log=log.info,
    )
    t = res["table"]
    if args.json:
        doc = {
            "headline": res["headline"],
            "headlines": res["headlines"],
            "counts": res["counts"],
            "report": {
                "md": str(res["md"]),
                "html": str(res["html"]),
                "claims": str(res["claims"]),
            },
            "seconds": res["seconds"],
            "claims": json.loads(t.to_json(orient="records")),
        }
        print(json.dumps(doc))
        return 0
    # the size that can judge leads: the stored full-size outcome, then this run's
    reduced = "full_size" in t and size != "full"
    rows = []
    for (_, r), outcome in zip(t.iterrows(), claim_outcomes(t), strict=True):
        ours = f"{outcome} ({r['ours'] or '-'})" if r.get("ours") else outcome
        kind = "paper claim" if r.get("kind", "paper") == "paper" else "package check"
        kind = f"{str(r.get('study', '')).upper()} {kind}".strip()
        paper = r.get("paper_range") or r.get("paper", "")
        fo = r.get("full_outcome")
        fo = f"{fo} ({r.get('full_ours') or '-'})" if isinstance(fo, str) and fo else None
        full = [fo or "not judged at full size"] if reduced else []
        rows.append((kind, r["id"], *full, ours, paper))
    sizes = ["full size", size] if reduced else ["full size" if size == "full" else size]
    print(table(rows, ["kind", "claim", *sizes, "paper"]))
    for line in res["headlines"]:
        print(line)
    counts = res["counts"].get("total", {})
    if reduced and "this_run" in counts:
        print(f"this run alone ({size}): " + "; ".join(
            f"{k.upper()} {count_line(c['this_run'])}" for k, c in res["counts"].items()
            if k != "total" and "this_run" in c))  # fmt: skip
    print(f"report: {res['md']} and {res['html']} ({res['seconds']:.0f} s)")
    return 0
