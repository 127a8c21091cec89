"""``fairplace reproduce [themis|pal|all] [--quick] [--out DIR]``."""

from __future__ import annotations

import sys

HELP = "reproduce the THEMIS and PAL papers' headline experiments into report.md + report.html"


def add_arguments(p) -> None:
    p.add_argument("paper", nargs="?", default="all", choices=("themis", "pal", "all"))
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


def run(args) -> int:
    from fairplace.reproduce import reproduce

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
    for _, r in t.iterrows():
        print(
            f"{r['outcome']:>18}  {r['id']}: ours {r['ours'] or '-'} {r['spread']}"
            f" | paper {r['paper_range']}"
        )
    print(f"report: {res['md']} and {res['html']} ({res['seconds']:.0f} s)")
    return 0
