"""Plain-text tables of the CLI (tabulate): one function, so every command's tables look alike."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tabulate import tabulate


def table(rows: Iterable[Sequence] | Iterable[dict], headers: Sequence[str] | str = "keys") -> str:
    """``rows`` (sequences with ``headers``, or dicts: ``headers="keys"``) as a plain table;
    None shows as ``-``, floats with 4 significant digits."""
    return tabulate(list(rows), headers=headers, tablefmt="simple", floatfmt=".4g", missingval="-")


def frame(df) -> str:
    """A DataFrame as a plain table (no index; missing values as ``-``)."""
    cells = df.astype(object).where(df.notna(), None)
    return table(cells.itertuples(index=False, name=None), [str(c) for c in df.columns])
