"""The journal (one JSON line per finished result, fsync'd; used by batch and sweep) and the batch
results table built from it: reference optima, gaps, and a per-solver summary. Pure I/O and pandas;
the Dask driver is :mod:`fairplace.runs.batch`, the sweep driver :mod:`fairplace.runs.sweep`."""

from __future__ import annotations

import hashlib
import json
import logging
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

#: the solvers whose optimal objective is an instance's reference optimum (:func:`add_gaps`; the
#: exact solver names with their back ends are ``fairplace.solvers.registry.EXACT_SOLVERS``)
REFERENCE_SOLVERS = ("exact", "highs")
log = logging.getLogger(__name__)


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


#: the field of a journal row that holds the checksum of the row's other fields
CHECKSUM_KEY = "row_sha256"


def row_checksum(row: dict) -> str:
    """The first 16 hex digits of SHA-256 over the row (less :data:`CHECKSUM_KEY`) as canonical
    JSON (sorted keys, no spaces): what a row read back must match."""
    body = {k: v for k, v in row.items() if k != CHECKSUM_KEY}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def journal_line(row: dict) -> str:
    """One journal line: the row as JSON read back (``default=str`` for what JSON lacks) with its
    :func:`row_checksum` under :data:`CHECKSUM_KEY`."""
    plain = json.loads(json.dumps({k: v for k, v in row.items() if k != CHECKSUM_KEY}, default=str))
    return json.dumps(plain | {CHECKSUM_KEY: row_checksum(plain)}) + "\n"


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
    dropped silently: it is the expected trace of a crash, not damage. A row whose checksum
    (:data:`CHECKSUM_KEY`) does not match its content (edited, or damaged in place) is skipped as
    damaged (a resume runs it again); rows with no checksum, written before journals had one,
    are read as before. Rows are returned without the checksum field."""
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
        stamp = row.pop(CHECKSUM_KEY, None) if isinstance(row, dict) else None
        if not isinstance(row, dict):
            problems.append(f"line {k}: not a JSON object")
        elif stamp is not None and stamp != row_checksum(row):
            problems.append(f"line {k}: checksum mismatch (the row changed after it was written)")
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
    :class:`OptionError` naming it. Both files are removed when the lock is released, and when
    found left by a dead process (an owner on this host whose pid is gone: a kill -9): removed
    with a log line, even where its lock is still held (by a child it left, or a file system
    whose locks outlive their process), then taken."""

    def __init__(self, target: str | Path, flag: str = "--out"):
        target = Path(target)
        self.path = target.with_name(target.name + ".lock")
        self.owner_path = target.with_name(target.name + ".lock.owner")
        self.target, self.flag = target, flag
        self._lock: FileLock | None = None

    def owner(self) -> str:
        try:
            info = json.loads(self.owner_path.read_text())
            return f"pid {info['pid']} on {info['host']}, since {info['started']}"
        except (OSError, ValueError, KeyError, TypeError):
            return "owner unknown"

    def dead_owner(self) -> int | None:
        """The pid of the owner file's process when it ran on this host and is gone, else None."""
        try:
            info = json.loads(self.owner_path.read_text())
            pid, host = int(info["pid"]), info["host"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if host != socket.gethostname() or pid == os.getpid() or pid <= 0:
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except OSError:  # alive, another user's
            return None
        return None

    def _acquire(self) -> FileLock:
        lock = FileLock(self.path, timeout=0, thread_local=False)
        lock.acquire()
        return lock

    def _held_here(self, lock: FileLock) -> bool:
        """The lock taken is on the file now at :attr:`path` (not on one unlinked meanwhile)."""
        fd = getattr(getattr(lock, "_context", None), "lock_file_fd", None)
        try:
            return fd is None or os.fstat(fd).st_ino == os.stat(self.path).st_ino
        except OSError:
            return False

    def _busy(self) -> OptionError:
        return OptionError(
            self.flag,
            f"{self.target} is in use by another fairplace run ({self.owner()}); "
            f"wait for it or choose another {self.flag}",
        )

    def __enter__(self) -> JournalLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            lock = self._acquire()
            stale = None
        except Timeout:
            stale = self.dead_owner()
            if stale is None:
                raise self._busy() from None
        if stale is not None:
            # held, yet its owner is gone (a child it left holds it, or a file system whose locks
            # outlive their process): the lock file goes, and a new one is taken
            log.info("removed the stale lock of pid %d (not running) on %s", stale, self.target)
            self.path.unlink(missing_ok=True)
            try:
                lock = self._acquire()
            except Timeout:
                raise self._busy() from None
            if not self._held_here(lock):  # another run cleared it too, and took the new one
                lock.release()
                raise self._busy()
        elif (dead := self.dead_owner()) is not None:  # the OS dropped a killed run's lock
            log.info("took over the stale lock of pid %d (not running) on %s", dead, self.target)
        self._lock = lock
        info = {"pid": os.getpid(), "host": socket.gethostname()}
        info["started"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        tmp = self.owner_path.with_name(self.owner_path.name + f".{os.getpid()}")
        with naming(tmp):  # a full disk names the lock's owner file
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
        with naming(path), open(path, "r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


def append_rows(f, rows: Sequence[dict]) -> None:
    """Append ``rows`` as checksummed JSON lines (:func:`journal_line`) to the journal ``f`` (open
    for appending) and fsync once (durable on return). The bytes go to the file descriptor, not
    through ``f``'s buffer: a failed write (a full disk, a file too large) raises here naming the
    journal, and leaves nothing buffered for ``f``'s close to fail on again with no file named
    (a torn last line is cut on resume: :func:`repair_journal`)."""
    data = memoryview("".join(journal_line(row) for row in rows).encode())
    with naming(getattr(f, "name", "the journal")):
        f.flush()
        while data:
            data = data[os.write(f.fileno(), data) :]
        os.fsync(f.fileno())


def append_row(f, row: dict) -> None:
    append_rows(f, [row])


# --- the results table ----------------------------------------------------------------------------
def add_gaps(df: pd.DataFrame) -> pd.DataFrame:
    """Fill ``optimum`` (stored, else the exact row's optimal objective) and ``gap`` per row."""
    df = df.copy()
    if df.empty:
        return df
    exact = df[df["solver"].isin(REFERENCE_SOLVERS) & (df["status"] == "optimal")]
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
