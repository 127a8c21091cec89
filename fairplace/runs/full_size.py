"""Stored full-size results: the result rows of a paper's full-size reproduction (a sweep's summary
row per run, the non-sweep experiments' tables), kept in ``papers/<paper>/full-size.csv`` so that a quick (or tiny) reproduction can judge each claim next
to what the full size gave (``fairplace.analysis.claims.against_full``) without the hours the full
size takes.

The file's first line is a ``#`` comment that says where the rows come from (the command, the
journals, the date); then a CSV with an ``experiment`` column (the key of
``papers/<paper>/<experiment>.toml``), a ``frame`` column (the result frame the claims read:
``summary`` of a sweep, ``strategyproofness``, ``batch``) and the frames' columns. It is written by
:func:`store` (``python papers/themis/experiments/themis_results.py OUT --store``) from a full reproduction's
journals, never edited by hand.

The rows it comes from are stored beside it, in ``papers/<paper>/results/`` (:func:`store_results`,
:func:`load_results`): zstd Parquet per experiment (the claims' frame and the per-app rows) and a
``meta.json`` naming the commit and date that made them and how many cells of the full grid each
experiment holds; ``python papers/themis/experiments/themis_results.py OUT --store`` writes both from a reproduction's
journals, and ``--stored`` rebuilds docs/themis-results.md from them without re-running.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd

from fairplace.core.errors import DataError, naming

FILE = "full-size.csv"
#: summary columns left out of the stored rows (per-draw PAL columns, free text, ids)
DROP_PREFIXES = ("draw_", "message", "cell_id")


def store(frames: dict[str, dict[str, pd.DataFrame]], path: str | Path, source: str) -> Path:
    """Write ``{experiment: {frame: rows}}`` to ``path`` under the provenance line ``source``."""
    parts = [df.assign(experiment=k, frame=f) for k, fr in frames.items() for f, df in fr.items()
             if len(df)]  # fmt: skip
    if not parts:
        raise DataError("frames", "no rows to store")
    df = pd.concat(parts, ignore_index=True)
    keys = ["experiment", "frame"]
    df = df[[*keys, *(c for c in df.columns if c not in keys and not c.startswith(DROP_PREFIXES))]]
    path = Path(path)
    path.write_text(
        f"# {' '.join(source.split())}\n" + df.to_csv(index=False, float_format="%.10g")
    )
    return path


def load(path: str | Path) -> tuple[dict[str, dict[str, pd.DataFrame]], str] | None:
    """({experiment: {frame: rows}}, provenance line) of a stored file (each frame without the
    columns it has no value in: other frames' columns); None when absent."""
    path = Path(str(path))
    if not path.is_file():
        return None
    head, _, body = path.read_text().partition("\n")
    columns = body.partition("\n")[0].split(",")
    if not head.startswith("#") or columns[:2] != ["experiment", "frame"]:
        raise DataError(
            str(path), "expected a '#' provenance line, then a CSV with 'experiment' and 'frame'"
        )
    df = pd.read_csv(io.StringIO(body), low_memory=False)
    frames: dict[str, dict[str, pd.DataFrame]] = {}
    for (k, f), g in df.groupby(["experiment", "frame"], sort=False):
        rows = g.drop(columns=["experiment", "frame"]).dropna(axis=1, how="all")
        frames.setdefault(str(k), {})[str(f)] = rows.reset_index(drop=True)
    return frames, head.lstrip("# ").strip()


#: where a paper's stored full-size results live: ``papers/<paper>/results/`` (zstd Parquet, one
#: ``<experiment>.parquet`` per experiment with its claims' frame, ``<experiment>-apps.parquet``
#: with its per-app rows, and ``meta.json``: per experiment the frames' files, the commit that made
#: the rows, the date, and how many cells of the full grid it holds)
RESULTS = "results"
META = "meta.json"
#: per-app columns kept (with the cell keys): what the docs, the report's figures and the claims read
APP_COLUMNS = ("app_id", "jobs", "gpu_time", "migrations", "restarts", "restart_gpu_time",
               "placement_score", "rho_solo", "rho_themis", "rho_gavel")  # fmt: skip
#: summary columns left out of the stored rows: also the journal's bookkeeping
SUMMARY_DROP = (*DROP_PREFIXES, "fixed_key", "status")


def trim(frame: str, df: pd.DataFrame, keys: tuple[str, ...]) -> pd.DataFrame:
    """The columns of ``df`` (result frame ``frame``) kept in the stored results: for ``apps`` the
    cell ``keys`` and :data:`APP_COLUMNS`; for the others all but :data:`SUMMARY_DROP`."""
    if frame == "apps":
        cols = [c for c in df if c in keys or c in APP_COLUMNS]
    else:
        cols = [c for c in df if not c.startswith(SUMMARY_DROP)]
    return df[cols].reset_index(drop=True)


def store_results(
    frames: dict[str, dict[str, pd.DataFrame]], folder: str | Path, meta: dict[str, dict]
) -> list[Path]:
    """Write ``{experiment: {frame: rows}}`` to ``folder`` as zstd Parquet (the first frame of an
    experiment as ``<experiment>.parquet``, each other as ``<experiment>-<frame>.parquet``) and
    merge ``meta`` (``{experiment: provenance}``) into ``meta.json``; experiments not in
    ``frames`` keep their files and entries. Returns the files written."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    old = _read_meta(folder)
    written = []
    for key, fr in frames.items():
        if not any(len(df) for df in fr.values()):
            raise DataError(f"frames.{key}", "no rows to store")
        for f in old.get(key, {}).get("frames", {}).values():  # the experiment's previous files
            (folder / f).unlink(missing_ok=True)
        files = {}
        for i, (name, df) in enumerate(fr.items()):
            files[name] = f"{key}.parquet" if i == 0 else f"{key}-{name}.parquet"
            df.to_parquet(folder / files[name], index=False, compression="zstd")
            written.append(folder / files[name])
        old[key] = {
            **meta.get(key, {}),
            "frames": files,
            "rows": {n: len(df) for n, df in fr.items()},
        }
    path = folder / META
    path.write_text(json.dumps(dict(sorted(old.items())), indent=2, default=str) + "\n")
    return [*written, path]


def load_results(folder: str | Path) -> tuple[dict[str, dict[str, pd.DataFrame]], dict] | None:
    """({experiment: {frame: rows}}, ``meta.json``) of stored results; None when absent."""
    folder = Path(str(folder))
    if not (folder / META).is_file():
        return None
    meta = _read_meta(folder)
    frames: dict[str, dict[str, pd.DataFrame]] = {}
    for key, m in meta.items():
        frames[key] = {}
        for f, name in m["frames"].items():
            with naming(folder / name):
                frames[key][f] = pd.read_parquet(folder / name)
    return frames, meta


def _read_meta(folder: Path) -> dict:
    path = folder / META
    if not path.is_file():
        return {}
    try:
        with naming(path):
            meta = json.loads(path.read_text())
    except ValueError as exc:
        raise DataError(str(path), f"not JSON: {exc}") from None
    bad = [k for k, m in meta.items() if not isinstance(m, dict) or "frames" not in m]
    if bad:
        raise DataError(str(path), f"experiment(s) {', '.join(bad)} name no 'frames'")
    return meta
