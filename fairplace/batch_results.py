"""The journal (one JSON line per finished result, fsync'd; used by batch and sweep) and the batch
results table built from it: reference optima, gaps, and a per-solver summary. Pure I/O and pandas;
the Dask driver is :mod:`fairplace.batch`, the sweep driver :mod:`fairplace.sweep`."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

#: leading columns of the results table (instance features follow ``kind``).
COLUMNS = tuple(
    "instance kind apps jobs gpus machines racks bids_per_app contention locality_penalty generator "
    "seed solver status objective bound optimum gap seconds wall_seconds unserved_unbounded placed "
    "message".split()
)

EXACT_SOLVERS = ("exact", "highs")


# --- the journal ----------------------------------------------------------------------------------
def journal_path(out: str | Path) -> Path:
    out = Path(out)
    return out if out.suffix == ".jsonl" else out.with_name(out.name + ".jsonl")


def read_journal(path: str | Path) -> list[dict]:
    """Rows of a journal; an unterminated last line (a crash mid-write) or an unparsable line is
    ignored."""
    p = Path(path)
    if not p.exists():
        return []
    rows = []
    lines = p.read_text().split("\n")[:-1]  # the piece after the last newline is unfinished
    for line in lines:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def repair_journal(path: str | Path) -> None:
    """Cut a torn last line (a crash mid-write) so appends start on a fresh line."""
    path = Path(path)
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


def append_rows(f, rows: Sequence[dict]) -> None:
    """Append ``rows`` as JSON lines to the open journal ``f`` and fsync once (durable on return)."""
    f.write("".join(json.dumps(row, default=str) + "\n" for row in rows))
    f.flush()
    os.fsync(f.fileno())


def append_row(f, row: dict) -> None:
    append_rows(f, [row])


# --- the results table ----------------------------------------------------------------------------
def add_gaps(df: pd.DataFrame) -> pd.DataFrame:
    """Fill ``optimum`` (stored, else the exact row's optimal objective) and ``gap`` per row."""
    df = df.copy()
    if df.empty:
        return df
    exact = df[df["solver"].isin(EXACT_SOLVERS) & (df["status"] == "optimal")]
    ref = exact.groupby("instance")["objective"].first()
    stored = pd.to_numeric(df["optimum"], errors="coerce") if "optimum" in df else None
    opt = df["instance"].map(ref).astype(float)
    if stored is not None:
        opt = stored.where(stored.notna(), opt)
    df["optimum"] = opt
    obj = pd.to_numeric(df["objective"], errors="coerce")
    worse = (opt - obj).where(df["kind"] == "auction", obj - opt)
    df["gap"] = (worse / opt.abs().clip(lower=1.0)).where(~_worse_primary(df, exact))
    return df


def _worse_primary(df: pd.DataFrame, exact: pd.DataFrame) -> pd.Series:
    """Rows that serve fewer unbounded apps / place fewer jobs than the reference optimum: their
    objectives are not comparable (the optimum is lexicographic), so their gap is left empty."""
    out = pd.Series(False, index=df.index)
    for mine, stored, better in (
        ("unserved_unbounded", "optimum_unserved_unbounded", -1),
        ("placed", "optimum_placed", 1),
    ):
        if mine not in df:
            continue
        ref = df["instance"].map(exact.groupby("instance")[mine].first()).astype(float)
        if stored in df:
            st = pd.to_numeric(df[stored], errors="coerce")
            ref = st.where(st.notna(), ref)
        val = pd.to_numeric(df[mine], errors="coerce")
        out |= (better * (val - ref) < 0).fillna(False)
    return out


def to_frame(rows: Sequence[dict]) -> pd.DataFrame:
    """The results table: one row per (instance, solver) (last journal entry wins), known columns first."""
    df = pd.DataFrame(list(rows))
    for c in COLUMNS:
        if c not in df:
            df[c] = None
    df = df.drop_duplicates(["instance", "solver"], keep="last")
    df = add_gaps(df)
    extra = [c for c in df.columns if c not in COLUMNS]
    return df[list(COLUMNS) + extra].sort_values(["instance", "solver"]).reset_index(drop=True)


def write_table(df: pd.DataFrame, out: str | Path) -> Path:
    out = Path(out)
    if out.suffix == ".parquet":
        df.astype({"seed": "object", "generator": "object"}).to_parquet(out, index=False)
    elif out.suffix == ".csv":
        df.to_csv(out, index=False)
    return out


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Rows per solver x status: mean seconds, mean / max gap, rows without a gap (no reference
    optimum, or worse on the lexicographic first part)."""
    if df.empty:
        return df
    return (
        df.groupby(["solver", "status"], dropna=False)
        .agg(
            rows=("instance", "size"),
            mean_seconds=("seconds", "mean"),
            mean_gap=("gap", lambda g: pd.to_numeric(g, errors="coerce").mean()),
            max_gap=("gap", lambda g: pd.to_numeric(g, errors="coerce").max()),
            no_gap=("gap", lambda g: int(pd.to_numeric(g, errors="coerce").isna().sum())),
        )
        .reset_index()
    )
