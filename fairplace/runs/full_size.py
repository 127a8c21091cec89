"""Stored full-size results: the result rows of a paper's full-size reproduction (a sweep's summary
row per run, the non-sweep experiments' tables), kept in ``papers/<paper>/full-size.csv`` so that a quick (or tiny) reproduction can judge each claim next
to what the full size gave (``fairplace.analysis.claims.against_full``) without the hours the full
size takes.

The file's first line is a ``#`` comment that says where the rows come from (the command, the
journals, the date); then a CSV with an ``experiment`` column (the key of
``papers/<paper>/<experiment>.toml``), a ``frame`` column (the result frame the claims read:
``summary`` of a sweep, ``strategyproofness``, ``batch``) and the frames' columns. It is written by
:func:`store` (``python docs/themis_results.py OUT --store``) from a full reproduction's
journals, never edited by hand.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from fairplace.core.errors import DataError

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
