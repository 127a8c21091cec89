"""Workload traces: the Sia-Philly CSV format, the bundled PAL traces and a Synergy-style generator.

A trace is a :class:`pandas.DataFrame` with one row per job and the columns of the Sia-Philly CSVs
(``job_id, num_gpus, submit_time, duration, model``; ``duration`` is a number of iterations). Optional
columns understood by the simulator: ``app_id`` (jobs of one app), ``phase`` (successive-halving phase:
phase p of an app is released when every job of phase p-1 of that app has finished), ``t_iter``
(seconds per iteration with the job's GPUs on a median GPU), ``cls`` (PM-score class), ``locality``
(L across machines) and ``locality_rack`` (L across racks; defaults to ``locality``).

Bundled traces (``workload-1`` .. ``workload-8``) are copies of the PAL artifact's Sia-Philly traces
(hal-uw/blox-pal, MIT licence, see ``data/README.md``), read through :mod:`importlib.resources`.
"""

from __future__ import annotations

import math
import random
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from fairplace.core.errors import TraceError
from fairplace.core.keys import first_unknown, unknown_key
from fairplace.core.limits import (
    MAX_COUNT,
    MAX_GPUS,
    MAX_RATIO,
    MAX_TIME,
    TRACE_ROWS,
    check_csv_rows,
)
from fairplace.core.params import Options, Param, checked

from .trace_params import GPUS, JOBS, RATE, SEED, arg

COLUMNS = ("job_id", "num_gpus", "submit_time", "duration", "model")
#: the optional columns (module docstring); a CSV header with any other column is an error
OPTIONAL_COLUMNS = ("app_id", "phase", "t_iter", "cls", "locality", "locality_rack")
#: upper bounds of the numeric columns (``fairplace.core.limits``): a typo is an error, not an overflow.
_UPPER = {"num_gpus": MAX_GPUS, "submit_time": MAX_TIME, "duration": MAX_TIME, "t_iter": MAX_TIME}
_UPPER |= {"locality": MAX_RATIO, "locality_rack": MAX_RATIO, "phase": MAX_COUNT}
#: Bundled Sia-Philly traces (160 jobs each, 64-GPU cluster = 16 x 4).
SIA_PHILLY = tuple(f"workload-{k}" for k in range(1, 9))


def _data(*parts: str):
    return resources.files("fairplace.instances").joinpath("data", *parts)


def load_trace(source: str | Path | pd.DataFrame) -> pd.DataFrame:
    """A bundled trace name, a CSV path or a DataFrame -> a validated trace frame (see module doc)."""
    if isinstance(source, pd.DataFrame):
        return validate_trace(source, name=source.attrs.get("name", "<frame>"))
    name = str(source)
    if name in SIA_PHILLY:
        with _data("traces", "sia-philly", f"{name}.csv").open("r") as fh:
            return validate_trace(pd.read_csv(fh), name=name)
    path = Path(name)
    if path.suffix.lower() != ".csv" and not path.exists():
        raise TraceError(
            "trace", f"unknown trace {name!r}: use {', '.join(SIA_PHILLY)} or a .csv file"
        )
    if not path.is_file():
        raise TraceError(name, "file not found")
    check_csv_rows(path, name, TraceError)  # bytes and rows, before pandas parses it
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise TraceError(name, f"not a readable CSV ({type(exc).__name__}: {exc})") from None
    bad = first_unknown(map(str, frame.columns), COLUMNS + OPTIONAL_COLUMNS)
    if bad is not None:  # a misspelled column would be ignored otherwise
        raise TraceError(
            f"{name}: column {bad!r}", unknown_key(bad, COLUMNS + OPTIONAL_COLUMNS, "column")
        )
    return validate_trace(frame, name=name)


def _bad_row(frame: pd.DataFrame, mask: np.ndarray, name: str, col: str, problem: str):
    k = int(np.flatnonzero(mask)[0])
    value = frame[col].iloc[k]
    value = value.item() if isinstance(value, np.generic) else value  # 0.5, not np.float64(0.5)
    raise TraceError(f"{name}: row {k + 1} column {col!r}", f"{problem}, got {value!r}")


def validate_trace(frame: pd.DataFrame, name: str = "<trace>") -> pd.DataFrame:
    """Check columns and values; return a clean copy (job_id/app_id as str, sorted by submit time).

    Row numbers in errors count data rows from 1 (the header is row 0)."""
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise TraceError(f"{name}: column {missing[0]!r}", "missing")
    if len(frame) == 0:
        raise TraceError(name, "no jobs")
    TRACE_ROWS.check(len(frame), name, TraceError)
    out = frame.copy()
    for col in ("num_gpus", "submit_time", "duration") + tuple(
        c for c in ("t_iter", "locality", "locality_rack", "phase") if c in out.columns
    ):
        num = pd.to_numeric(out[col], errors="coerce")
        bad = num.isna().to_numpy() | ~np.isfinite(num.to_numpy(dtype=float, na_value=np.nan))
        if bad.any():
            _bad_row(frame, bad, name, col, "must be a finite number")
        out[col] = num.astype(float)
    for col, hi in _UPPER.items():  # before any int cast: 1e300 GPUs is an error, not a wrap
        if col in out.columns and (out[col].to_numpy() > hi).any():
            _bad_row(frame, out[col].to_numpy() > hi, name, col, f"must be <= {hi:g}")
    g = out["num_gpus"].to_numpy()
    if ((g < 1) | (g != np.round(g))).any():
        _bad_row(
            frame, (g < 1) | (g != np.round(g)), name, "num_gpus", "must be a positive integer"
        )
    out["num_gpus"] = g.astype(np.int64)
    if (out["submit_time"].to_numpy() < 0).any():
        _bad_row(frame, out["submit_time"].to_numpy() < 0, name, "submit_time", "must be >= 0")
    if (out["duration"].to_numpy() <= 0).any():
        _bad_row(frame, out["duration"].to_numpy() <= 0, name, "duration", "must be > 0")
    if "t_iter" in out.columns and (out["t_iter"].to_numpy() <= 0).any():
        _bad_row(frame, out["t_iter"].to_numpy() <= 0, name, "t_iter", "must be > 0")
    for col in ("locality", "locality_rack"):  # L = 1 within a machine; spreading never speeds up
        if col in out.columns and (out[col].to_numpy() < 1).any():
            _bad_row(frame, out[col].to_numpy() < 1, name, col, "must be >= 1")
    if "phase" in out.columns:
        p = out["phase"].to_numpy()
        if ((p < 0) | (p != np.round(p))).any():
            _bad_row(frame, (p < 0) | (p != np.round(p)), name, "phase", "must be an integer >= 0")
        out["phase"] = p.astype(np.int64)
    models = out["model"]
    bad = models.isna().to_numpy() | (models.astype(str).str.strip() == "").to_numpy()
    if bad.any():
        _bad_row(frame, bad, name, "model", "must be a model name")
    out["model"] = models.astype(str)
    out["job_id"] = out["job_id"].astype(str)
    dup = out["job_id"].duplicated().to_numpy()
    if dup.any():
        _bad_row(frame, dup, name, "job_id", "duplicate job id")
    if "app_id" in out.columns:
        out["app_id"] = out["app_id"].astype(str)
    out = out.sort_values("submit_time", kind="stable").reset_index(drop=True)
    out.attrs = {**frame.attrs, "name": name}
    return out


#: The PAL artifact's recycled-job stream: ``simulator_sia.py`` replays a trace at ``--jobs-per-hour``
#: 2.0 (its load list ``np.arange(2.0, 4.0, 2.0)``) after ``random.seed(1)``.
ARTIFACT_RECYCLE_RATE = 2.0
ARTIFACT_RECYCLE_SEED = 1
#: id prefix of recycled jobs: ``r160`` is the artifact's job 160
RECYCLED_PREFIX = "r"


def recycled_jobs(
    frame: pd.DataFrame, count: int, jobs_per_hour: float, seed: int = ARTIFACT_RECYCLE_SEED
) -> pd.DataFrame:
    """The PAL artifact's recycled jobs after a replayed trace (its ``workload/workload.py``, replay
    mode): job n + k (n = the trace's jobs, k = 0 .. ``count`` - 1) is a copy of trace job k mod n
    (every column: GPUs, iterations, model, ...) arriving a Poisson gap after the job before it,
    ceil(3600 * -ln(1 - U) / ``jobs_per_hour``) seconds with U drawn by Python's ``random`` seeded
    with ``seed`` (the artifact reseeds with 1 before each run); the first gap counts from the last
    trace job's arrival. Ids ``r<n + k>``; an ``app_id`` column gets the job's own id, ``phase`` 0.

    ``frame`` is a validated trace (:func:`validate_trace`: sorted by submit time, which is the
    artifact's file order for the bundled traces). Returns only the copies."""
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
        raise TraceError("count", f"must be an integer >= 0, got {count!r}")
    if not (isinstance(jobs_per_hour, (int, float)) and 0 < jobs_per_hour < math.inf):
        raise TraceError("jobs_per_hour", f"must be finite and > 0, got {jobs_per_hour!r}")
    n = len(frame)
    if n == 0:
        raise TraceError("trace", "no jobs to recycle")
    rng = random.Random(seed)
    last = float(frame["submit_time"].max())
    arrival = np.empty(count)
    for k in range(count):
        hours = -math.log(1.0 - rng.random()) / jobs_per_hour
        last = last + math.ceil(hours * 60 * 60)
        arrival[k] = last
    out = frame.iloc[np.arange(count) % n].reset_index(drop=True).copy()
    ids = [f"{RECYCLED_PREFIX}{n + k}" for k in range(count)]
    taken = set(frame["job_id"].astype(str))
    if "app_id" in frame.columns:
        taken |= set(frame["app_id"].astype(str))
    clash = next((i for i in ids if i in taken), None)
    if clash is not None:
        raise TraceError("job_id", f"the trace already has a job or app {clash!r} (a recycled id)")
    out["job_id"] = ids
    out["submit_time"] = arrival
    if "app_id" in out.columns:
        out["app_id"] = ids
    if "phase" in out.columns:
        out["phase"] = 0
    out.attrs = dict(frame.attrs)
    return out


def philly_gpu_demand() -> pd.DataFrame:
    """GPU-demand histogram of 82,247 Philly jobs (``num_gpus, jobs, fraction``)."""
    with _data("traces", "philly-gpu-demand.csv").open("r") as fh:
        return pd.read_csv(fh)


def philly_duration_quantiles() -> pd.DataFrame:
    """Duration quantiles (seconds) of the same Philly jobs (``quantile, duration_s``)."""
    with _data("traces", "philly-duration-quantiles.csv").open("r") as fh:
        return pd.read_csv(fh)


#: duration models of :func:`synergy_trace` (:func:`synergy_seconds`)
SYNERGY_DURATIONS = ("philly", "gavel")
#: :func:`synergy_trace`'s arguments as specs (``trace_params``)
SYNERGY_PARAMS: tuple[Param, ...] = (
    arg("n_jobs", 1000, JOBS, "jobs"),
    arg("jobs_per_hour", 8.0, RATE, "Poisson arrival rate"),
    arg("max_gpus", None, GPUS, "most GPUs of a job (None: the cluster's gpus)", nullable=True),
    arg("durations", "philly", Options(SYNERGY_DURATIONS), "the job-duration model"),
)
#: the PAL artifact's Synergy durations (Gavel's mixture): P(long branch), and the log10 ranges of
#: minutes of the short and the long branch
GAVEL_LONG, GAVEL_SHORT_LOG10, GAVEL_LONG_LOG10 = 0.2, (1.5, 3.0), (3.0, 4.0)


def gavel_mean_seconds() -> float:
    """Mean of the ``gavel`` durations: 60 (p_l (10^4 - 10^3) / ln 10 + (1 - p_l) (10^3 - 10^1.5) /
    (1.5 ln 10)) = 60,362 s (E[10^U(a, b)] = (10^b - 10^a) / ((b - a) ln 10))."""

    def mean(lo: float, hi: float) -> float:
        return (10**hi - 10**lo) / ((hi - lo) * math.log(10))

    p = GAVEL_LONG
    return 60.0 * (p * mean(*GAVEL_LONG_LOG10) + (1 - p) * mean(*GAVEL_SHORT_LOG10))


def synergy_seconds(u: np.ndarray, durations: str = "philly") -> np.ndarray:
    """Job durations (seconds) from uniforms ``u`` in [0, 1) by the inverse CDF of:

    * ``philly``: the Philly duration quantiles, log-linear between them, clipped to [q05/2, q99];
    * ``gavel``: the PAL artifact's Synergy durations (blox-pal ``get_gavel_like_iter``, Gavel's
      mixture): 60 * 10^U(3, 4) s with probability 0.2, else 60 * 10^U(1.5, 3) s. The two branches
      meet at 10^3 min, so log10(seconds / 60) is piecewise uniform: 1.5 + 1.5 u / 0.8 for
      u < 0.8, 3 + (u - 0.8) / 0.2 above (mean :func:`gavel_mean_seconds`).
    """
    if durations == "gavel":
        lo, mid, hi = GAVEL_SHORT_LOG10[0], GAVEL_SHORT_LOG10[1], GAVEL_LONG_LOG10[1]
        return 60.0 * 10.0 ** np.interp(u, [0.0, 1.0 - GAVEL_LONG, 1.0], [lo, mid, hi])
    q = philly_duration_quantiles()
    qs = np.concatenate([[0.0], q["quantile"].to_numpy(), [1.0]])
    ds = q["duration_s"].to_numpy(dtype=float)
    logd = np.log(np.concatenate([[ds[0] / 2], ds, [ds[-1]]]))
    return np.exp(np.interp(u, qs, logd))


@checked((*SYNERGY_PARAMS, SEED), TraceError)
def synergy_trace(
    n_jobs: int = 1000,
    jobs_per_hour: float = 8.0,
    t_iter: dict[str, float] | None = None,
    max_gpus: int | None = None,
    seed: int = 0,
    durations: str = "philly",
) -> pd.DataFrame:
    """Synergy-style workload: Poisson arrivals at ``jobs_per_hour``, GPU demand drawn from the Philly
    histogram (restricted to ``<= max_gpus`` and renormalised), duration (seconds) drawn by
    :func:`synergy_seconds` (``durations``: ``"philly"`` or ``"gavel"``), model uniform over
    ``t_iter`` (model -> seconds per iteration); ``duration`` = seconds / t_iter. Both duration
    models take one uniform per job, so one seed gives the same arrivals, GPUs and models."""
    if not t_iter:
        raise TraceError("t_iter", "needs at least one model -> seconds per iteration")
    rng = np.random.default_rng(seed)
    hist = philly_gpu_demand()
    if max_gpus is not None:
        hist = hist[hist["num_gpus"] <= max_gpus]
    p = hist["fraction"].to_numpy(dtype=float)
    gpus = rng.choice(hist["num_gpus"].to_numpy(), size=n_jobs, p=p / p.sum())
    seconds = synergy_seconds(rng.random(n_jobs), durations)
    gaps = rng.exponential(3600.0 / jobs_per_hour, size=n_jobs)
    submit = np.round(np.cumsum(gaps) - gaps[0], 3)
    names = sorted(t_iter)
    model = rng.choice(np.array(names, dtype=object), size=n_jobs)
    per_iter = np.array([t_iter[m] for m in model], dtype=float)
    frame = pd.DataFrame(
        {
            "job_id": np.arange(n_jobs).astype(str),
            "num_gpus": gpus.astype(np.int64),
            "submit_time": submit,
            "duration": np.maximum(1.0, np.round(seconds / per_iter)),
            "model": model.astype(str),
        }
    )
    tag = "" if durations == "philly" else f"-{durations}"
    frame.attrs["name"] = f"synergy-{n_jobs}-{jobs_per_hour:g}ph-s{seed}{tag}"
    return frame
