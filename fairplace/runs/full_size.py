"""Stored full-size results: one summary row per run of a paper's full-size reproduction, kept in
``papers/<paper>/full-size.csv`` so that a quick (or tiny) reproduction can judge each claim next
to what the full size gave (``fairplace.analysis.claims.against_full``) without the hours the full
size takes.

The file's first line is a ``#`` comment that says where the rows come from (the command, the
journals, the date); then a CSV with an ``experiment`` column (the key of
``papers/<paper>/<experiment>.toml``) and the sweep's summary columns. It is written by
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


def store(frames: dict[str, pd.DataFrame], path: str | Path, source: str) -> Path:
    """Write ``{experiment: summary rows}`` to ``path`` under the provenance line ``source``."""
    parts = [df.assign(experiment=k) for k, df in frames.items() if len(df)]
    if not parts:
        raise DataError("frames", "no rows to store")
    df = pd.concat(parts, ignore_index=True)
    df = df[["experiment", *(c for c in df.columns if c != "experiment"
                            and not c.startswith(DROP_PREFIXES))]]  # fmt: skip
    path = Path(path)
    path.write_text(f"# {' '.join(source.split())}\n" + df.to_csv(index=False, float_format="%.10g"))
    return path


def load(path: str | Path) -> tuple[dict[str, dict[str, pd.DataFrame]], str] | None:
    """({experiment: {"summary": rows}}, provenance line) of a stored file (each experiment without
    the columns it has no value in: another experiment's parameters); None when absent."""
    path = Path(str(path))
    if not path.is_file():
        return None
    text = path.read_text()
    head, _, body = text.partition("\n")
    if not head.startswith("#") or "experiment" not in body.partition("\n")[0].split(","):
        raise DataError(str(path), "expected a '#' provenance line, then a CSV with 'experiment'")
    df = pd.read_csv(io.StringIO(body))
    frames = {
        str(k): {
            "summary": g.drop(columns="experiment").dropna(axis=1, how="all").reset_index(drop=True)
        }
        for k, g in df.groupby("experiment", sort=False)
    }
    return frames, head.lstrip("# ").strip()
