"""``fairplace reproduce [themis|pal|all] [--quick] [--out DIR]``."""

from __future__ import annotations

import json
import sys

from fairplace.commands import _args, file_backend
from fairplace.papers import PAPERS

HELP = "reproduce the THEMIS and PAL papers' headline experiments into report.md + report.html"


def add_arguments(p) -> None:
    p.add_argument(
        "paper",
        nargs="?",
        default="all",
        choices=(*PAPERS, "all"),
        help="which paper's experiments to run (default all)",
    )
    p.add_argument(
        "--quick", action="store_true", help="small seeds and grids (<= 10 min on 2 cores)"
    )
    p.add_argument("--tiny", action="store_true", help="smoke-test size (seconds; for tests)")
    p.add_argument("--out", default="fairplace-report", metavar="DIR", help="report folder")
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="run simulation sweeps on N local Dask worker processes (default 1: sequential)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: headline, report paths and the claims table (records)",
    )


def run(args) -> int:
    # heavy (pandas, matplotlib): imported on use
    from fairplace.analysis.report import claim_outcomes
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
        log=lambda m: print(m, file=sys.stderr, flush=True),
    )
    t = res["table"]
    if args.json:
        doc = {
            "headline": res["headline"],
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
    outcomes = claim_outcomes(t)
    for (_, r), outcome in zip(t.iterrows(), outcomes, strict=True):
        spread = f" {r['spread']}" if r.get("spread") else ""
        paper = r.get("paper_range") or r.get("paper", "")
        print(f"{outcome:>18}  {r['id']}: ours {r['ours'] or '-'}{spread} | paper {paper}")
    print(res["headline"])
    print(f"report: {res['md']} and {res['html']} ({res['seconds']:.0f} s)")
    return 0
