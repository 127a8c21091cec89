"""``fairplace plot RESULTS [--out DIR] [--kind KIND]``."""

from __future__ import annotations

from pathlib import Path

HELP = "plot a results table (sweep, per-app/per-round frames, batch, strategy-proofness)"


def add_arguments(p) -> None:
    p.add_argument("results", help="results table (.parquet or .csv)")
    p.add_argument("--out", default="fairplace-plots", metavar="DIR", help="folder for the PNGs")
    p.add_argument("--kind", default=None, help="table type (default: detected from its columns)")


def read_table(path: str | Path):
    import pandas as pd

    from fairplace.errors import DataError

    p = Path(path)
    if not p.exists():
        raise DataError(str(p), "no such results file")
    try:
        return pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)
    except Exception as exc:  # noqa: BLE001 - any read failure is bad input
        raise DataError(str(p), f"cannot read table: {exc}") from exc


def run(args) -> int:
    from fairplace.analysis.auto import FIGURES, figures_for
    from fairplace.analysis.report import png
    from fairplace.errors import OptionError

    if args.kind is not None and args.kind not in FIGURES:
        raise OptionError("--kind", f"unknown table kind; known: {', '.join(FIGURES)}")
    from fairplace.commands._args import out_dir

    out_dir(args.out)
    df = read_table(args.results)
    kind, made, skipped = figures_for(df, args.kind)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, fig in made:
        (out / f"{name}.png").write_bytes(png(fig))
        print(out / f"{name}.png")
    for name, why in skipped:
        print(f"skipped {name}: {why}")
    print(f"{kind} table: {len(made)} figures -> {out}")
    return 0 if made else 1
