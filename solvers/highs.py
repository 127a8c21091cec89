"""HiGHS through highspy: the low-level functions of the ``highs`` back end
(``fairplace.solvers.backends.highs``), importable here as before. New code reaches HiGHS through
``fairplace.solvers.backends.get_backend("highs")``."""

from __future__ import annotations

from .backends.highs import (
    INCONSISTENT,
    HighsBackend,
    build,
    new_highs,
    read,
    silence_banner,
    solve,
)

__all__ = [
    "INCONSISTENT",
    "HighsBackend",
    "build",
    "new_highs",
    "read",
    "silence_banner",
    "solve",
]
