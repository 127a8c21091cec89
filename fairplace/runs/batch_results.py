"""The journal (one JSON line per finished result, fsync'd; used by batch and sweep) and the batch
results table built from it: reference optima, gaps, and a per-solver summary. Pure I/O and pandas;
the Dask driver is :mod:`fairplace.runs.batch`, the sweep driver :mod:`fairplace.runs.sweep`."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from filelock import FileLock, Timeout

from fairplace.core.errors import OptionError, naming

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


#: the string fields every row of a batch journal has (a sweep journal's rows have ``cell_id``)
BATCH_KEYS = ("instance", "solver")
#: fields that are a number or null wherever a journal row has them (the results table computes
#: with them); a row with anything else there is damaged
NUMBER_KEYS = (
    "objective bound optimum gap seconds wall_seconds unserved_unbounded placed "
    "optimum_unserved_unbounded optimum_placed"
).split()


def _not_a_number(row: dict) -> str | None:
    for key in NUMBER_KEYS:
        v = row.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            return key
    return None


def scan_journal(
    path: str | Path, keys: tuple[str, ...] = BATCH_KEYS
) -> tuple[list[dict], list[str]]:
    """(rows, problems) of a journal. A row is a JSON object with a string value for each of ``keys``
    and a number or null in each :data:`NUMBER_KEYS` field it has; any other line (not UTF-8, not
    JSON, not an object, a key missing, ``"objective": "abc"``) is skipped and described in
    ``problems`` (``"line 3: not a JSON object"``); a batch re-solves its pair on ``--resume``. An unterminated last line (a crash mid-write) is
    dropped silently: it is the expected trace of a crash, not damage."""
    p = Path(path)
    if not p.exists():
        return [], []
    rows, problems = [], []
    lines = p.read_bytes().split(b"\n")[:-1]  # the piece after the last newline is unfinished
    for k, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            problems.append(f"line {k}: not UTF-8")
            continue
        except (json.JSONDecodeError, RecursionError):
            problems.append(f"line {k}: not JSON")
            continue
        if not isinstance(row, dict):
            problems.append(f"line {k}: not a JSON object")
        elif not all(isinstance(row.get(key), str) for key in keys):
            problems.append(f"line {k}: no {' and '.join(repr(key) for key in keys)} names")
        elif (bad := _not_a_number(row)) is not None:
            problems.append(f"line {k}: {bad!r} is not a number ({str(row[bad])[:24]!r})")
        else:
            rows.append(row)
    return rows, problems


def read_journal(path: str | Path, keys: tuple[str, ...] = BATCH_KEYS) -> list[dict]:
    """The rows of a journal (see :func:`scan_journal`; bad lines are skipped)."""
    return scan_journal(path, keys)[0]


class JournalLock:
    """An exclusive lock on an output file (a batch journal, a sweep's results CSV): ``<file>.lock``,
    taken with the ``filelock`` package (an ``flock`` on POSIX, which the OS drops when its owner
    dies, so the lock of a dead process is taken over), and ``<file>.lock.owner`` naming the owner
    (pid, host, start time). A live owner makes a second run fail at once with
    :class:`OptionError` naming it. Both files are removed when the lock is released."""

    def __init__(self, target: str | Path, flag: str = "--out"):
        target = Path(target)
        self.path = target.with_name(target.name + ".lock")
        self.owner_path = target.with_name(target.name + ".lock.owner")
        self.target, self.flag, self._lock = target, flag, None

    def owner(self) -> str:
        try:
            info = json.loads(self.owner_path.read_text())
            return f"pid {info['pid']} on {info['host']}, since {info['started']}"
        except (OSError, ValueError, KeyError, TypeError):
            return "owner unknown"

    def __enter__(self) -> JournalLock:

        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.path, timeout=0, thread_local=False)
        try:
            lock.acquire()
        except Timeout:
            raise OptionError(
                self.flag,
                f"{self.target} is in use by another fairplace run ({self.owner()}); "
                f"wait for it or choose another {self.flag}",
            ) from None
        self._lock = lock
        info = {"pid": os.getpid(), "host": socket.gethostname()}
        info["started"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        tmp = self.owner_path.with_name(self.owner_path.name + f".{os.getpid()}")
        tmp.write_text(json.dumps(info))
        os.replace(tmp, self.owner_path)
        return self

    def __exit__(self, *exc) -> None:
        if self._lock is not None:
            # still holding the lock: nobody else owns these files (contenders never wait)
            self.owner_path.unlink(missing_ok=True)
            self.path.unlink(missing_ok=True)
            self._lock.release()
            self._lock = None


def repair_journal(path: str | Path) -> None:
    """Cut a torn last line (a crash mid-write) so appends start on a fresh line."""
    path = Path(path)
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


def append_rows(f, rows: Sequence[dict]) -> None:
    """Append ``rows`` as JSON lines to the open journal ``f`` and fsync once (durable on return)."""
    with naming(getattr(f, "name", "the journal")):
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
    with naming(out):
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
