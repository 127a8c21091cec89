"""``fairplace plot RESULTS [--out DIR] [--kind KIND]``."""

from __future__ import annotations

import json
from pathlib import Path

from fairplace.commands import _args, file_backend
from fairplace.commands._args import out_dir
from fairplace.core.errors import DataError
from fairplace.core.params import Options, Param

HELP = "plot a results table (sweep, per-app/per-round frames, batch, strategy-proofness)"


def add_arguments(p) -> None:
    # heavy (pandas): imported on use; the kinds of analysis.auto.FIGURES (``--kind``'s spec)
    from fairplace.analysis.tables import SIGNATURES

    kind = Param(
        "kind",
        None,
        Options(dict.fromkeys(k for k, _ in SIGNATURES)),
        "table type (None: detected from its columns)",
        flag="--kind",
        nullable=True,
    )
    p.add_argument("results", help="results table (.parquet or .csv)")
    p.add_argument("--out", default="fairplace-plots", metavar="DIR", help="folder for the PNGs")
    p.add_argument(
        kind.flag, type=_args.param(kind), default=None, metavar="KIND", help=kind.help()
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: kind, the PNG files written and the figures skipped",
    )


def read_table(path: str | Path):
    import pandas as pd  # heavy: imported on use

    p = Path(path)
    if not p.exists():
        raise DataError(str(p), "no such results file")
    try:
        return pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)
    except Exception as exc:  # noqa: BLE001 - any read failure is bad input
        raise DataError(str(p), f"cannot read table: {exc}") from exc


def run(args) -> int:
    file_backend()
    # heavy (pandas, matplotlib, seaborn): imported on use, after the backend is chosen
    from fairplace.analysis.auto import figures_for
    from fairplace.analysis.report import png

    out_dir(args.out)
    df = read_table(args.results)
    kind, made, skipped = figures_for(df, args.kind)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for name, ax in made:
        (out / f"{name}.png").write_bytes(png(ax))  # png() closes the figure
        files.append(str(out / f"{name}.png"))
    if args.json:
        doc = {"kind": kind, "files": files, "skipped": dict(skipped)}
        print(json.dumps(doc))
        return 0 if made else 1
    print("\n".join(files))
    for name, why in skipped:
        print(f"skipped {name}: {why}")
    print(f"{kind} table: {len(made)} figures -> {out}")
    return 0 if made else 1
