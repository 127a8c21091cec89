"""What the compact PF's MILP encoding (``compact_milp``), tightening (``compact_sym``) and machine
aggregation (``compact_agg``) read of a :class:`~fairplace.formulations.compact.CompactProgram`, as
a Protocol: those modules build parts of the program's rows and decode its points, and
``compact.py`` imports them, so they name this view instead of importing ``compact.py`` back (no
import circle)."""

from __future__ import annotations

from typing import Any, Protocol


class CompactView(Protocol):
    """The program's apps, active apps, offered groups, free GPUs per machine and level
    (``capacity``, ``cap``), PM-score types, column layout, aggregation, each machine's rack and
    each app's level per type, the cells' gains and whether the program is ``reduced``."""

    @property
    def apps(self) -> tuple[Any, ...]: ...

    @property
    def active(self) -> tuple[int, ...]: ...

    @property
    def groups(self) -> tuple[Any, ...]: ...

    @property
    def reduced(self) -> bool: ...

    @property
    def offset(self) -> float: ...

    @property
    def _lev(self) -> dict[int, list[int]]: ...

    @property
    def capacity(self) -> tuple[dict[int, int], dict[int, int]]: ...

    @property
    def types(self) -> tuple[tuple[float, ...], ...]: ...

    @property
    def cap(self) -> dict[tuple, int]: ...

    @property
    def gpu_places(self) -> dict[int, tuple[int, int, int]]: ...

    @property
    def layout(self) -> tuple[int, list[dict]]: ...

    @property
    def agg(self) -> Any: ...

    @property
    def _rack_of(self) -> dict[int, int]: ...

    def per_cell(self, s: int) -> bool: ...

    def fits(self, i: int, s: int, place: int, cell: tuple[int, int, int]) -> bool: ...

    def cell_gain(self, i: int, cell: tuple[int, int, int]) -> float: ...

    def feasible_cells(self, i: int) -> tuple[tuple[int, int, int], ...]: ...
