"""What the compact PF's tightening (``compact_sym``) and machine aggregation (``compact_agg``) read
of a :class:`~fairplace.formulations.compact.CompactProgram`, as a Protocol: those modules build
parts of the program's rows and decode its points, and ``compact.py`` imports them, so they name
this view instead of importing ``compact.py`` back (no import circle)."""

from __future__ import annotations

from typing import Any, Protocol


class CompactView(Protocol):
    """The program's apps, active apps, free GPUs per machine and level (``capacity``, ``cap``),
    PM-score types, column layout, aggregation and each machine's rack."""

    @property
    def apps(self) -> tuple[Any, ...]: ...

    @property
    def active(self) -> tuple[int, ...]: ...

    @property
    def capacity(self) -> tuple[dict[int, int], dict[int, int]]: ...

    @property
    def types(self) -> tuple[tuple[float, ...], ...]: ...

    @property
    def cap(self) -> dict[tuple, int]: ...

    @property
    def layout(self) -> tuple[int, list[dict]]: ...

    @property
    def agg(self) -> Any: ...

    @property
    def _rack_of(self) -> dict[int, int]: ...

    def per_cell(self, s: int) -> bool: ...

    def feasible_cells(self, i: int) -> tuple[tuple[int, int, int], ...]: ...
