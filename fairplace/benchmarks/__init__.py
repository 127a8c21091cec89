"""Benchmarks for ``fairplace bench``: one module per area, each exposing ``CASES``.

``CASES`` maps a benchmark name to a :class:`Case` (or a plain ``(run, target_seconds)`` pair):
``run(quick: bool) -> dict`` returns at least ``{"seconds": float, "sizes": {...}}``, the sizes it
actually ran, read off the instance it built. A name states sizes (``auction_pa_compact_1024x256``:
1,024 GPUs, 256 apps); the case declares them (``Case.sizes``) and ``fairplace bench`` reports a run
that ran other sizes as an error, so a result never claims a size it did not run. ``--quick`` keeps
every size and runs fewer repetitions (or seeds, or offers, as each case says in its result); a case
too long for that is skipped with its reason (``Case.full_only``). Speed targets live here, never in
tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    """One benchmark: ``run(quick) -> dict``, its target seconds (None: no target), the sizes its
    name states, and why ``--quick`` skips it (None: it runs, at the same sizes)."""

    run: Callable[[bool], dict]
    target: float | None = None
    sizes: dict = field(default_factory=dict)
    full_only: str | None = None


def as_case(entry) -> Case:
    """A :class:`Case` from a ``CASES`` value (a Case or a ``(run, target)`` pair)."""
    return entry if isinstance(entry, Case) else Case(*entry)
