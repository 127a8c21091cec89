"""One module per ``fairplace`` sub-command (``HELP``, ``add_arguments``, ``run``)."""

from __future__ import annotations


def file_backend() -> None:
    """Select matplotlib's non-interactive Agg backend: commands only write figures to files.

    Called by the commands that draw (never at import, so notebooks keep their inline backend)."""
    import matplotlib  # heavy: imported on use

    matplotlib.use("Agg")
